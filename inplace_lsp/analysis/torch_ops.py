"""Torch-op semantics, from the knowledge table (data/autograd.json): what an op or a torch.nn
layer returns (a view, an alias, a fresh tensor, a tuple), what it saves for backward under
which signature, which calls write in place (`inplace=True`, `out=`, `x.add_()`), and the
facts about dtypes, layouts, grad modes and factories the evaluator asks about.
"""

from __future__ import annotations

import ast
import re
from typing import Protocol

from inplace_lsp.analysis.domain import (
    UNSIZED,
    Frame,
    InferenceSite,
    Loc,
    ModuleRef,
    Mutation,
    Value,
    constant,
    grad_sources,
    location,
    new_id,
    owning_instance,
    parameters_in,
    replace,
    scalar,
    tensors_in,
    unknown,
)
from inplace_lsp.analysis.knowledge import SCALAR, TENSOR_GRAD, TENSOR_NO_GRAD, Knowledge, OpInfo
from inplace_lsp.analysis.knowledge import load as load_knowledge
from inplace_lsp.analysis.model import (
    ModuleModel,
    Undecidable,
    call_argument,
    call_keyword,
    evaluate,
)

# The torch facts below come from data/autograd.json (scripts/gen_autograd_table.py probes
# them); the analysis and the fixes read them by these names.
FACTS = load_knowledge().tensor


ACTIVATIONS = FACTS.activations


SCALAR_METHODS = FACTS.python_methods


SCALAR_ATTRS = FACTS.python_attrs


TENSOR_ATTR_VIEWS = frozenset(FACTS.view_attrs)


# `.to()`, `.float()`, `.contiguous()`: the tensor itself when nothing has to change.
ALIAS_METHODS = frozenset(
    name.removeprefix("Tensor.") for name, c in FACTS.conversions.items() if c.itself
)


LAYOUT_METHODS = frozenset(
    name.removeprefix("Tensor.") for name, c in FACTS.conversions.items() if c.unless == "layout"
)


_DTYPE_METHODS = {
    name.removeprefix("Tensor."): c.dtype for name, c in FACTS.conversions.items() if c.dtype
}


_DTYPE_NAMES = FACTS.floating_dtypes


NO_GRAD_CONTEXTS = frozenset(n for n, k in FACTS.grad_modes.items() if k in ("off", "inference"))


INFERENCE_CONTEXTS = frozenset(n for n, k in FACTS.grad_modes.items() if k == "inference")


ENABLE_GRAD_CONTEXTS = frozenset(n for n, k in FACTS.grad_modes.items() if k == "on")


SET_GRAD_CONTEXTS = frozenset(n for n, k in FACTS.grad_modes.items() if k == "argument")


BIN_OPS: dict[type[ast.operator], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.BitXor: "xor",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
}


AUG_SYMBOL: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}


_ACTIVATION_KEYS = frozenset(a.replace("_", "") for a in ACTIVATIONS)


def spelled_call(func: ast.expr, qual: str) -> str:
    """A called function as the user's code spells it (`F.softmax()`, not the qualified
    `torch.nn.functional.softmax()`), for messages."""
    node = func
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name):
        return f"{qual}()"
    spelled = ast.unparse(func)
    if spelled.rsplit(".", 1)[-1] != qual.rsplit(".", 1)[-1]:
        return f"{spelled} ({qual})"  # an alias: `sm = softmax` says nothing alone
    return f"{spelled}()"


def is_activation(name: str) -> bool:
    """relu, ReLU6, leaky_relu, LeakyReLU, SiLU, Hardtanh ...: an activation function."""
    return name.lower().replace("_", "").rstrip("0123456789") in _ACTIVATION_KEYS


OP_TEXT = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "matmul": "@",
    "pow": "**",
    "floordiv": "//",
    "mod": "%",
}


class OpEvents(Protocol):
    """What torch-op semantics need of the rest of the analysis: the knowledge table and the
    file's model, the grad-mode state, and the autograd events an op makes (its saves, its
    writes, the graphs it builds on) recorded on the current path (events.Events)."""

    kb: Knowledge
    model: ModuleModel
    inference_at: InferenceSite | None
    uncertain: int

    def loc(self, node: ast.AST, frame: Frame) -> Loc: ...

    def record_save(
        self,
        group: int,
        op: str,
        slot: str,
        grad_fn: str | None,
        node: ast.AST,
        frame: Frame,
        possible: bool,
        what: str,
        grad_from: str = "",
        joined: bool = False,
        param: str = "",
        unknown: bool = False,
        maybe: str = "",
        reach: frozenset[int] = frozenset(),
    ) -> int: ...

    def mutate(
        self,
        value: Value,
        *,
        kind: str,
        op: str,
        node: ast.AST,
        stmt: ast.AST,
        frame: Frame,
        target: str | None,
        fix: str | None,
        inputs: list[Value],
        grad_mode: bool | None = None,
        loc_override: Loc | None = None,
        loc_path: str | None = None,
        activation: bool = False,
        provable: bool = True,
    ) -> Mutation: ...

    def carry(
        self, graph: frozenset[int], node: ast.AST, frame: Frame, inexact: bool = False
    ) -> None: ...

    def unknown_call(
        self, args: list[Value], kwargs: dict[str, Value], builtin: bool = False
    ) -> Value: ...

    def maybe_saves(
        self, result: Value, node: ast.AST, frame: Frame, layer: ModuleRef | None = None
    ) -> None: ...

    def read_by_unknown(self, groups: frozenset[int]) -> None: ...

    def sees_every_run(self, ref: ModuleRef) -> bool: ...

    def frozen(self, ref: ModuleRef) -> bool: ...


class TorchOps:
    """The evaluator's torch calls: ops and torch.nn layers applied to abstract values. What
    they do to the autograd state goes through `events` (OpEvents), the one part they see."""

    def __init__(self, events: OpEvents) -> None:
        self.events = events

    def _method_mutation(
        self,
        receiver: Value,
        name: str,
        node: ast.AST,
        frame: Frame,
        activation: bool,
        inputs: list[Value] | None = None,
    ) -> None:
        stmt = frame.stmt or node
        fix = None
        if (
            isinstance(stmt, (ast.Expr, ast.Assign, ast.Return))
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            fix = "method-out-of-place"
        self.events.mutate(
            receiver,
            kind="method",
            op=f".{name}()",
            node=node,
            stmt=stmt,
            frame=frame,
            target=receiver.name,
            fix=fix,
            inputs=inputs or [],
            activation=activation,
        )

    def _kwarg_mutation(
        self,
        receiver: Value,
        name: str,
        node: ast.AST,
        frame: Frame,
        flag: ast.AST | None,
    ) -> None:
        loc = self.events.loc(flag, frame) if flag is not None else None
        short = name.rsplit(".", 1)[-1].rstrip("()")
        self._inplace_flag_mutation(
            receiver, "inplace_kwarg", f"{short}(..., inplace=True)", node, frame, loc, None,
            is_activation(short),
        )  # fmt: skip

    def _inplace_flag_mutation(
        self,
        value: Value,
        kind: str,
        op: str,
        node: ast.AST,
        frame: Frame,
        loc: Loc | None,
        loc_path: str | None,
        activation: bool,
        fixable: bool = True,
        provable: bool = True,
    ) -> None:
        """A write by `inplace=True` (module or function): the finding goes on the keyword.
        `provable`: whether this run can show the keyword safe (see Events.sees_every_run)."""
        self.events.mutate(
            value,
            kind=kind,
            op=op,
            node=node,
            stmt=frame.stmt or node,
            frame=frame,
            target=value.name,
            # (not where a later `m.inplace = True` would undo the keyword)
            fix="inplace-false" if fixable else None,
            inputs=[],
            loc_override=loc,
            loc_path=loc_path,
            activation=activation,
            provable=provable,
        )

    @staticmethod
    def view(base: Value, frame: Frame, **changes: object) -> Value:
        """A view of `base` made here: its memory and version counter, not a leaf itself. Its
        view kind says what torch refuses to write into: a view of a leaf that requires grad
        ("leaf"), one made under no_grad of a tensor that may require grad ("no_grad"), or
        what `base` already was."""
        kind = base.view_kind
        if not kind and not base.detached and base.grad is not False:
            if not frame.grad_enabled:
                kind = "no_grad"
            elif base.leaf and base.grad:
                kind = "leaf"
        return replace(base, leaf=False, view_kind=kind, **changes)

    def unbound(self, value: Value, frame: Frame, **changes: object) -> Value:
        """One of the tensors `a, b = h` or `for row in h` gives: torch unbinds `h`, so with
        grad on they are views of a multi-output node. Only for a tensor a known op or module
        made (`producer`): an unknown function's result may be a tuple of its own."""
        view = self.view(value, frame, pieces=False, **changes)
        one_tensor = value.producer and not value.pieces and not value.joined
        if one_tensor and frame.grad_enabled and value.grad is not False:
            view.view_kind = "multi"
        return view

    def derived(self, inputs: list[Value]) -> Value:
        grads = [v.grad for v in inputs if v.tensorish]
        grad = True if any(grads) else (False if grads and all(g is False for g in grads) else None)
        graph: frozenset[int] = (
            frozenset().union(*(v.graph for v in inputs)) if inputs else frozenset()
        )
        dtypes = {v.dtype for v in inputs}
        return Value(
            "tensor",
            frozenset({new_id()}),
            True,
            grad,
            any(v.grad_assumed for v in inputs),
            graph=graph,
            grad_from=grad_sources(inputs) if grad is None else "",
            dtype=dtypes.pop() if len(dtypes) == 1 else "",
            contiguous=True,
        )

    def copy_or_alias(
        self, receiver: Value, name: str, node: ast.Call, frame: Frame
    ) -> Value | None:
        """`.to(dtype)`, `.double()`, `.contiguous()`, `.reshape()`: torch returns the tensor
        itself (or a view) when nothing has to change, a copy otherwise. A copy when the dtype
        or the layout is known to differ; an alias that only may be one when it is unknown;
        None for the usual handling (same dtype, contiguous input)."""
        if name in LAYOUT_METHODS:
            if receiver.contiguous is False and name == "contiguous":
                return self.copy_of(receiver, name, frame)
            if receiver.contiguous is False:
                # `.reshape()` of a slice or a permuted tensor is a view where its strides
                # allow (`x[:, 0].reshape(b, n, c)`), a copy otherwise: not known here.
                maybe = f"`.{name}()` returns a view (it copies where the strides do not allow one)"
                return replace(receiver, leaf=False, joined=True, maybe=maybe, contiguous=None)
            if receiver.contiguous is None and (receiver.partial or name == "contiguous"):
                # A part of a tensor (`h[:, :4]`), or strides not known: a view or a copy.
                part = "of this slice " if receiver.partial else ""
                maybe = f"`.{name}()` {part}returns a view (it copies a non-contiguous tensor)"
                return replace(receiver, leaf=False, joined=True, maybe=maybe)
            return None
        target = target_dtype(name, node, self.events.model)
        if target is None:
            return None  # `.to(device)`, `.type_as(other)`: unknown here, the usual handling
        if receiver.dtype and receiver.dtype != target:
            return replace(self.copy_of(receiver, name, frame), dtype=target)
        if not receiver.dtype:
            maybe = f"the tensor is already {target} (`.{name}()` then returns it, not a copy)"
            return replace(receiver, leaf=False, joined=True, dtype=target, maybe=maybe)
        return None

    def rearranged(self, receiver: Value, node: ast.Call, frame: Frame) -> Value | None:
        """`einops.rearrange(x, "b c h w -> b (h w) c")`: torch's reshape and permute of x,
        so a view of it where the strides allow, a copy otherwise. A view for sure where the
        pattern merges no axes (splits and reorderings always are), or merges only axes that
        sit next to each other in order in a tensor known to be contiguous; a view or a copy
        (a Warning names it) otherwise. None where the pattern is not a string this reads."""
        layout = _rearrangement(node)
        if layout is None or not receiver.tensorish:
            return None
        before, after = layout
        merges = [group for group in after if len(group) > 1]
        order = [axis for group in after for axis in group]
        if not merges:
            kept = receiver.contiguous if order == before else False
            return self.view(receiver, frame, contiguous=kept, producer="rearrange()")
        if receiver.contiguous is True and all(_adjacent(group, before) for group in merges):
            in_order = order == before
            return self.view(receiver, frame, contiguous=in_order or None, producer="rearrange()")
        maybe = "`rearrange()` returns a view (it copies where the strides do not allow one)"
        view = self.view(receiver, frame, producer="rearrange()")
        return replace(view, joined=True, maybe=maybe, contiguous=None)

    def copy_of(
        self, receiver: Value, name: str, frame: Frame, producer: str | None = None
    ) -> Value:
        """A fresh copy of `receiver` made by `.name()` (its own memory, the same grad)."""
        grad = receiver.grad if frame.grad_enabled else False
        return Value(
            "tensor",
            frozenset({new_id()}),
            True,
            grad,
            receiver.grad_assumed,
            graph=receiver.graph,
            origin=f".{name}()",
            producer=f".{name}()" if producer is None else producer,
            grad_from=receiver.grad_from if grad is None else "",
            dtype=receiver.dtype,
            contiguous=True,
            inference=self.events.inference_at,
        )

    def layer_call(
        self,
        ref: ModuleRef,
        args: list[Value],
        node: ast.Call,
        frame: Frame,
        set_inplace: bool | None = None,
    ) -> Value:
        """A call of a torch.nn layer (or of a module the analysis cannot read);
        `set_inplace`: its `inplace` attribute as the code set it after construction."""
        x = args[0] if args else unknown()
        info = self.events.kb.module(ref.qualname) if ref.qualname else None
        if info is None:
            result = self.events.unknown_call(args, {})
            if result.grad is None and frame.grad_enabled:
                result.grad = True  # unknown modules usually hold parameters
            self.events.maybe_saves(result, node, frame, layer=ref)
            return result
        inplace = info.inplace_default
        keyword: ast.AST | None = None  # the `inplace=` keyword, or `True` in `nn.ReLU(True)`
        call = ref.call  # (numbered as ref.site_start says)
        if call is not None:
            keyword = call_keyword(call, "inplace")
            given = keyword.value if isinstance(keyword, ast.keyword) else None
            position = info.inplace_position
            if keyword is None and position is not None and len(call.args) > position:
                keyword = given = call.args[position]
            if given is not None:
                inplace = isinstance(given, ast.Constant) and given.value is True
                if not isinstance(given, ast.Constant):
                    # `nn.ReLU(inplace=inplace)` in a helper whose `inplace` was known
                    spot = "inplace" if isinstance(keyword, ast.keyword) else f"#{position}"
                    inplace = ref.layer_args.get(spot) is True
        if set_inplace is not None and info.inplace_position is not None:
            # `m.inplace = True` set after construction (a loop over `self.modules()`): the
            # finding goes on the module's constructor, as the detector names it.
            inplace = set_inplace
            if inplace and call is not None and keyword is None:
                keyword = call
        if info.eval_alias and ref.training is False:
            return x
        if info.view:
            return self.view(x, frame)
        if "Dropout" in info.name and _dropout_p(ref) == 0:
            return x  # Dropout(p=0) gives its input back, untouched (the same tensor)
        if inplace and x.tensorish:
            uncertain = ref.conditional or ("Dropout" in info.name and _dropout_p(ref) is None)
            if uncertain:
                self.events.uncertain += 1
            kw_loc = None
            if keyword is not None:
                kw_loc = location(keyword, ref.site_start)
            short = ref.qualname.rsplit(".", 1)[-1] if ref.qualname else "module"
            self._inplace_flag_mutation(
                x, "inplace_module", f"nn.{short}(inplace=True)", node, frame, kw_loc,
                ref.site_path, is_activation(short), fixable=set_inplace is None,
                provable=self.events.sees_every_run(ref),
            )  # fmt: skip
            if uncertain:
                self.events.uncertain -= 1
            out = x
        else:
            # Its graph reaches every input's (an LSTM's `(h0, c0)` carried from the last
            # batch brings that batch's graph along).
            graph = frozenset().union(*(t.graph for a in args for t in tensors_in(a)))
            if frame.grad_enabled:
                self.events.carry(graph, node, frame)  # (an LSTM fed the last batch's state)
            out = Value("tensor", frozenset({new_id()}), True, None, x.grad_assumed, graph=graph)
            out.producer = "nn." + (ref.qualname or "module").rsplit(".", 1)[-1]
            out.dtype, out.contiguous = x.dtype, True  # a torch.nn layer keeps its input's dtype
            out.inference = self.events.inference_at
        input_grad = x.grad is not False
        # Parameters that require grad (not after `module.requires_grad_(False)`).
        params = (
            bool(info.params)
            and not self.events.frozen(ref)
            # (`emb.weight.requires_grad_(False)`: each of its parameters turned off)
            and not all(p in ref.attrs and ref.attrs[p].grad is False for p in info.params)
        )
        any_grad = frame.grad_enabled and (input_grad or params)
        out.grad = (True if (x.grad or params) else x.grad) if frame.grad_enabled else False
        if any_grad:
            short = ref.qualname.rsplit(".", 1)[-1] if ref.qualname else "module"
            # A frozen layer keeps only what its input's gradient needs (nn.Linear: its weight).
            mode = "input_frozen" if info.params and not params else "input_grad"
            slots = info.saves.get(
                (mode if input_grad else "input_nograd") + (";inplace" if inplace else "")
            )
            if slots is None:
                slots = info.saved_slots(input_grad)
            # Of an input whose grad is not known: what the layer saves either way (an LSTM
            # keeps its output for its weights' gradients whatever the input); with no
            # parameter that requires grad, nothing (no node unless the input requires grad).
            sure = slots
            if x.grad is None:
                sure = slots & info.saved_slots(False) if params else frozenset()
            new = set()
            reach = frozenset({ref.params_group}) if params else frozenset()
            for slot in sorted(slots):  # a frozenset of str: its order follows the hash seed
                target_value: Value | None = None
                if slot == "input":
                    target_value = x
                elif slot == "output":
                    target_value = out
                elif slot.startswith("param:"):
                    target_value = Value("tensor", frozenset({ref.params_group}), True, True)
                if target_value is None:
                    continue
                for group in sorted(target_value.groups):
                    new.add(
                        self.events.record_save(
                            group,
                            f"nn.{short}",
                            slot,
                            _layer_grad_fn(info.grad_fn, ref),
                            node,
                            frame,
                            # (of what may be the written tensor or a copy of it: the
                            # input is possibly that one; the weights and output are not)
                            possible=slot not in sure or (slot == "input" and bool(x.maybe)),
                            what=target_value.name or "",
                            maybe=x.maybe if slot == "input" else "",
                            reach=reach,
                        )
                    )
            out.graph = out.graph | frozenset(new)
        if isinstance(info.outputs, list):
            return _shaped(info.outputs, out)
        return out

    def apply_op(
        self,
        op: OpInfo | None,
        name: str,
        args: list[Value],
        node: ast.AST,
        frame: Frame,
        *,
        kwargs: dict[str, Value] | None = None,
        method: bool = False,
        describe: str | None = None,
    ) -> Value:
        kwargs = kwargs or {}
        call = node if isinstance(node, ast.Call) else None
        flag = _inplace_flag(call, None if op is None or method else op.inplace_position)
        inplace_kw = flag is not None
        out_kw = call is not None and any(kw.arg == "out" for kw in call.keywords)
        tensor_args = [t for a in args for t in tensors_in(a)]
        label = describe or (f".{name}()" if method else f"{name}()")
        if op is None:
            if method and name.endswith("_") and not name.endswith("__") and args:
                self._method_mutation(
                    args[0], name, node, frame, activation=is_activation(name[:-1])
                )
                return args[0]
            if inplace_kw and args and args[0].tensorish:
                self._kwarg_mutation(args[0], name, node, frame, flag)
                return args[0]
            if not tensor_args or (method and args[0].kind != "tensor"):
                # No torch op of that name, on something not known to be a tensor (a
                # TensorDict's `.get()`, a config's `.replace()`): nothing is known of it.
                return self.events.unknown_call(args, kwargs)
            # An op of no known kind: it may keep its tensors for backward.
            self.events.read_by_unknown(frozenset().union(*(t.groups for t in tensor_args)))
            return self.derived(tensor_args)
        receiver = args[0] if args else unknown()
        result: Value
        if op.inplace and receiver.tensorish:
            short = name.rsplit(".", 1)[-1]
            self._method_mutation(
                receiver,
                short,
                node,
                frame,
                activation=is_activation(short.rstrip("_")),
                inputs=tensor_args[1:],
            )
            result = receiver
        elif inplace_kw and receiver.tensorish:
            self._kwarg_mutation(receiver, name, node, frame, flag)
            result = receiver
        elif out_kw:
            out_value = kwargs.get("out", unknown())
            if out_value.tensorish:
                self.events.mutate(
                    out_value,
                    kind="out",
                    op=f"{name}(..., out=...)",
                    node=node,
                    stmt=frame.stmt or node,
                    frame=frame,
                    target=out_value.name,
                    fix="method-out-of-place",
                    inputs=tensor_args,
                )
                result = out_value
            else:
                result = self.derived(tensor_args)
        elif op.view and receiver.tensorish:
            short = name.rsplit(".", 1)[-1]
            result = self.view(
                receiver,
                frame,
                kind="tensor" if receiver.kind == "unknown" or op.tuple_output else receiver.kind,
                contiguous=view_layout(op.layout, receiver.contiguous),
            )
            multi = op.multi_output_view and receiver.kind == "tensor"  # not `text.split()`
            if multi and frame.grad_enabled:
                # chunk, split, unbind: views of a multi-output node (of a tensor that needs no
                # grad too: writing one that requires grad into them is refused)
                result.view_kind = "multi"
            result.pieces = op.tuple_output
            return result
        else:
            result = (
                self.derived(tensor_args)
                if tensor_args
                else Value("tensor", frozenset({new_id()}), True, False)
            )
            result.producer = label
            result.inference = self.events.inference_at
        dim_keyword = call is not None and any(kw.arg == "dim" for kw in call.keywords)
        if result is not receiver:
            result = self._tuple_result(op, args, dim_keyword, result, label)
        if not op.differentiable and result is not receiver:
            # An integer or bool result (`ids.long()`, `x != x`): it never requires grad.
            result.grad, result.graph, result.grad_from = False, frozenset(), ""
            return result
        if not frame.grad_enabled:
            if result is not receiver:
                result.grad = False
                result.graph = frozenset()
            return result
        if result is not receiver:
            self.events.carry(result.graph, node, frame)
        self.record_saves(
            op, args, result, node, frame, label=label, inplace=inplace_kw, dim_keyword=dim_keyword
        )
        return result

    def record_saves(
        self,
        op: OpInfo,
        args: list[Value],
        result: Value,
        node: ast.AST,
        frame: Frame,
        *,
        label: str | None = None,
        inplace: bool = False,
        dim_keyword: bool = False,
    ) -> None:
        if not frame.grad_enabled:
            return
        signature = self._signature(args, dim_keyword, op)
        unknown_grad = [
            a
            for a in args
            if a.grad is None
            and (a.tensorish or any(i.grad is None for i in tensors_in(a) if i is not a))
        ]  # `(x.shape[-1],)`, a tuple of numbers, is no unknown
        possible = bool(unknown_grad)
        grad_from = grad_sources(unknown_grad)
        if all(s != TENSOR_GRAD for s in signature):
            return  # nothing requires grad: no graph, nothing saved
        operands = args
        if SCALAR in signature and not _listed(op, signature, inplace):
            # `e.gather(1, index)`: the table lists the tensor operands only (a dim between
            # them is structural), so "arg1" is the index, not the 1.
            operands = [a for a, kind in zip(args, signature, strict=False) if kind != SCALAR]
            signature = [kind for kind in signature if kind != SCALAR]
        slots = _lookup(op, signature, inplace)
        if not slots:
            return
        outputs = result.items if result.kind == "container" and result.items else (result,)
        new: set[int] = set()
        reach = parameters_in(args)
        for slot in sorted(slots):  # a frozenset of str: its order follows the hash seed
            if slot.startswith("output"):
                index = int(slot[6:]) if slot[6:].isdigit() else 0
                if index >= len(outputs):
                    continue
                target = outputs[index]
            elif slot.startswith("arg") and slot[3:].isdigit() and int(slot[3:]) < len(operands):
                target = operands[int(slot[3:])]
            else:
                continue
            targets = tensors_in(target)
            if not targets:
                continue
            for group in sorted(frozenset().union(*(t.groups for t in targets))):
                new.add(
                    self.events.record_save(
                        group,
                        label or op.name,
                        slot,
                        op.grad_fn,
                        node,
                        frame,
                        possible or target.joined,
                        target.name or "",
                        grad_from,
                        target.joined,
                        target.param,
                        maybe=target.maybe,
                        reach=reach,
                    )
                )
        for output in outputs:
            if output.grad is not False:  # an integer output (max's indices) has no graph
                output.graph = output.graph | frozenset(new)
        if result is not outputs[0]:
            result.graph = result.graph | frozenset(new)

    def _tuple_result(
        self,
        op: OpInfo,
        args: list[Value],
        dim_keyword: bool,
        result: Value,
        label: str,
    ) -> Value:
        """(values, indices) for ops such as x.max(dim) or x.topk(k), which save the indices."""
        slots = _lookup(op, self._signature(args, dim_keyword, op), False)
        count = 1 + max(
            (int(s[6:]) for s in slots if s.startswith("output") and s[6:].isdigit()), default=0
        )
        if count == 1:
            return result
        extra = tuple(
            Value(
                "tensor",
                frozenset({new_id()}),
                True,
                False,
                producer=label,
                inference=self.events.inference_at,
            )
            for _ in range(count - 1)
        )
        return Value(
            "container", tensor=False, grad=result.grad, items=(result, *extra), producer=label
        )

    @staticmethod
    def _signature(args: list[Value], dim_keyword: bool, op: OpInfo | None = None) -> list[str]:
        """The call signature the knowledge table is keyed by: T1 / T0 / S per operand; a
        `dim=` keyword counts as the scalar operand it stands for (x.max(dim=0))."""
        signature: list[str] = []
        for a in args:
            if a.kind == "container" and a.items:
                grads = [i.grad for i in tensors_in(a)]
                signature.append(
                    TENSOR_GRAD
                    if any(grads)
                    else (TENSOR_NO_GRAD if grads and all(g is False for g in grads) else SCALAR)
                )
            elif a.tensorish and (
                a.kind == "tensor" or a.tensor is True or a.grad is not None or a.groups
            ):
                signature.append(TENSOR_NO_GRAD if a.grad is False else TENSOR_GRAD)
            else:
                signature.append(SCALAR)
        if dim_keyword and op is not None:
            widened = ",".join([*signature, SCALAR])
            if any(sig.split(";")[0] == widened for sig in op.saves):
                signature.append(SCALAR)
        return signature


def _inplace_flag(call: ast.Call | None, position: int | None) -> ast.AST | None:
    """The `inplace=True` keyword of a call, or the `True` passed where `inplace` goes
    positionally (`F.leaky_relu(x, 0.2, True)`); None when the call does not write in place."""
    if call is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == "inplace":
            value = keyword.value
            return keyword if isinstance(value, ast.Constant) and value.value is True else None
    if position is not None and len(call.args) > position:
        arg = call.args[position]
        if isinstance(arg, ast.Constant) and arg.value is True:
            return arg
    return None


def _listed(op: OpInfo, signature: list[str], inplace: bool) -> bool:
    """Whether the table has this signature or a prefix of it."""
    suffix = ";inplace" if inplace else ""
    return any(",".join(signature[:k]) + suffix in op.saves for k in range(len(signature), 0, -1))


def _lookup(op: OpInfo, signature: list[str], inplace: bool) -> frozenset[str]:
    suffix = ";inplace" if inplace else ""
    for k in range(len(signature), 0, -1):
        slots = op.saves.get(",".join(signature[:k]) + suffix)
        if slots is not None:
            return slots
    # Unknown arity: the union of what any probe with the same first operand saved.
    first = signature[0] if signature else TENSOR_GRAD
    found: set[str] = set()
    for sig, slots in op.saves.items():
        if (
            sig.split(",")[0].split(";")[0] == first
            and sig.endswith(suffix)
            and (suffix or ";" not in sig)
        ):
            found |= slots
    return frozenset(found)


# `torch.LongTensor` (token ids), `BoolTensor` (masks): annotations that name an integer or
# bool tensor type; `FloatTensor` or a plain `Tensor`, a floating one.
INTEGER_TENSOR = re.compile(
    r"\b(?:"
    + "|".join(n for n, d in FACTS.tensor_types.items() if d not in _DTYPE_NAMES.values())
    + r")\b"
)


FLOAT_TENSOR = re.compile(
    r"\b(?:"
    + "|".join(n for n, d in FACTS.tensor_types.items() if d in _DTYPE_NAMES.values())
    + r"|Tensor)\b"
)


AUTOGRAD_FUNCTIONS = FACTS.autograd_function


def _shaped(shape: list[object], first: Value) -> Value:
    """A module's tuple result (nn.LSTM's `output, (h_n, c_n)`) as containers: `first`, the
    output its saves were recorded on, in the first tensor's place; fresh tensors of the same
    graph and grad elsewhere; unknown values where it returns something else."""
    placed = False

    def build(part: object) -> Value:
        nonlocal placed
        if isinstance(part, list):
            items = tuple(build(p) for p in part)
            return Value("container", tensor=False, grad=first.grad, items=items, graph=first.graph)
        if part != "T":
            return unknown()
        if not placed:
            placed = True
            return first
        return Value(
            "tensor",
            frozenset({new_id()}),
            True,
            first.grad,
            graph=first.graph,
            producer=first.producer,
        )

    return build(shape)


def _dropout_p(ref: ModuleRef) -> float | None:
    """A Dropout's p, where it is known (p == 0: it returns its input untouched)."""
    given = ref.layer_args.get("p", ref.layer_args.get("#0"))
    if isinstance(given, (int, float)):
        return float(given)  # (as the code that built it computed p)
    sub, owner = ref.submodule, owning_instance(ref)
    if sub is None:
        return None
    arg = call_argument(sub.call, "p", 0)
    if arg is None:
        return 0.5  # the default
    try:
        p = evaluate(arg, owner.consts if owner is not None else {})
    except Undecidable:
        return None
    return float(p) if isinstance(p, (int, float)) else None


def created_tensor(
    node: ast.Call, origin: str, model: ModuleModel, default_dtype: str = ""
) -> Value:
    """A new tensor outside every graph (`torch.zeros(...)`, `x.new_empty(...)`): a leaf that
    requires grad only when the call says `requires_grad=True`; contiguous, and of the dtype
    the call names, or else the factory's (`torch.randn` makes float32)."""
    grad = _requires_grad_kw(node)
    dtype = next((_dtype_name(k.value, model) for k in node.keywords if k.arg == "dtype"), None)
    if dtype is None:
        dtype = default_dtype
    return Value(
        "tensor",
        frozenset({new_id()}),
        True,
        grad,
        leaf=grad,
        origin=origin,
        producer=origin,
        dtype=dtype or "",
        contiguous=True,
    )


# `Tensor`, `torch.FloatTensor`, `Optional[Tensor]`; not `TensorDictBase` or `TensorSpec`.
TENSOR_ANNOTATION = re.compile(r"Tensor\b")


# Method names of Python's own str, bytes, list, dict, set and tuple (`split`, `sort`, `add`).
BUILTIN_METHODS = frozenset(
    name for kind in (str, bytes, list, dict, set, tuple) for name in dir(kind) if name[0] != "_"
)


# Builtins whose result is a plain Python value whatever they are given.
_PYTHON_VALUES = frozenset(
    "len int float bool str repr isinstance issubclass hasattr callable id hash print".split()
)


_CONTAINERS = frozenset("list tuple dict set frozenset sorted reversed map filter".split())


def builtin_call(name: str, args: list[Value]) -> Value | None:
    """A call of a Python builtin (the name is bound nowhere in the code): `len(x)` and
    `int(t.max())` are Python values; iterating `zip(a, b)` / `enumerate(a)` gives tuples
    of the iterables' elements. None: the usual handling."""
    if name == "len" and len(args) == 1 and args[0].kind == "container":
        listed = args[0].items
        if listed is not None and args[0].origin != UNSIZED:
            return constant(len(listed))  # `len(layers)` of a list the code wrote out
    held_modules = args[0].module if name == "len" and len(args) == 1 else None
    if held_modules is not None and held_modules.children is not None:
        if not (held_modules.uncounted or held_modules.conditional):
            return constant(len(held_modules.children))  # `len(self.layers)` of a ModuleList
    if name == "len" and len(args) == 1 and isinstance(args[0].const, (str, bytes, tuple)):
        return constant(len(args[0].const))  # `len(norm) == 0` of a known name
    if name in _PYTHON_VALUES:
        return scalar()
    if name in ("list", "tuple") and len(args) == 1 and args[0].kind == "params":
        return args[0]  # `list(model.parameters())`: the same parameters
    if name in _CONTAINERS:
        # `list(outs)`, `sorted(xs)`, `dict(...)`: a Python container (never a tensor), with
        # the items it was made from where they are known.
        held = args[0] if len(args) == 1 else None
        same = held is not None and name in ("list", "tuple", "sorted", "reversed")
        items = held.items if same and held is not None and name != "sorted" else None
        if not args and name in ("list", "tuple"):
            items = ()  # `conv_tower = list()`, filled by append() after
        element = held.element if same and held is not None else None
        graph = frozenset().union(*(a.graph for a in args)) if args else frozenset()
        grad = True if any(a.grad for a in args) else None
        return Value(
            "container", tensor=False, grad=grad, items=items, graph=graph, element=element
        )
    if name == "range":
        # Python ints, whatever its bounds (`range(1, order + 1)` of an unknown `order`);
        # the range itself where they are known (`range(self.start_level, self.end_level + 1)`
        # of levels the constructor was given).
        bounds = [a.const for a in args if a.has_const and type(a.const) is int]
        numbers: range | None = None
        if 1 <= len(bounds) == len(args) <= 3 and (len(bounds) < 3 or bounds[2] != 0):
            numbers = range(*bounds)
        return Value(
            "container",
            tensor=False,
            grad=False,
            element=scalar(),
            const=numbers,
            has_const=numbers is not None,
        )
    if name == "zip":
        return Value("zip", tensor=False, grad=None, items=tuple(args))
    if name == "enumerate" and args:
        return Value("zip", tensor=False, grad=None, items=(args[0],), origin="enumerate")
    return None


_AXIS = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+")


def _rearrangement(node: ast.Call) -> tuple[list[str], list[list[str]]] | None:
    """An einops pattern's input axes, in memory order (a group on the left splits an axis
    into its parts), and its output's axes grouped as they are merged; None where the call
    gives no pattern string, or one that adds or drops an axis."""
    if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant):
        return None
    pattern = node.args[1].value
    if not isinstance(pattern, str) or pattern.count("->") != 1:
        return None
    sides = []
    for side in pattern.split("->"):
        groups: list[list[str]] = []
        depth = 0
        for token in _AXIS.findall(side):
            if token == "(":
                depth += 1
                groups.append([])
            elif token == ")":
                depth -= 1
                if depth < 0:
                    return None
            elif token.isdigit():  # an axis of length 1 (`()` too): no memory of its own
                if depth == 0:
                    groups.append([])
            elif depth:
                groups[-1].append(token)
            else:
                groups.append([token])
        if depth:
            return None
        sides.append(groups)
    before = [axis for group in sides[0] for axis in group]
    after = sides[1]
    if sorted(before) != sorted(axis for group in after for axis in group):
        return None
    return before, after


def _adjacent(group: list[str], order: list[str]) -> bool:
    """Whether these axes follow each other, in this order, in `order`."""
    start = order.index(group[0])
    return order[start : start + len(group)] == group


def view_layout(kind: str | None, base: bool | None) -> bool | None:
    """Whether a view is contiguous, from the table's layout of the view op and its base's:
    a transpose is not (its base taken for contiguous when not known, as tensors mostly
    are); of a transposed tensor, it may be again (`h.t().T`)."""
    if kind == "broadcasts" or (kind == "permutes" and base is not False):
        return False
    return base if kind == "keeps" else None


def _layer_grad_fn(grad_fn: str | None, ref: ModuleRef) -> str | None:
    """The node that saves for a layer: `nn.Linear(..., bias=False)` multiplies without adding
    (torch runs `MmBackward0`, not `AddmmBackward0`)."""
    if grad_fn != "AddmmBackward0":
        return grad_fn
    given = ref.layer_args.get("bias", ref.layer_args.get("#2"))
    if given is None and ref.call is not None:
        spelled = call_argument(ref.call, "bias", 2)
        if isinstance(spelled, ast.Constant):
            given = spelled.value
    return "MmBackward0" if given is False else grad_fn


def _dtype_name(node: ast.expr, model: ModuleModel) -> str | None:
    """`torch.float64` -> "float64", however the file imported torch (`th.float64` after
    `import torch as th`, `float64` after `from torch import float64`); None when not a
    floating dtype spelled out."""
    module, _, attr = (model.qualify(node) or "").rpartition(".")
    return _DTYPE_NAMES.get(attr) if module == "torch" else None


def target_dtype(name: str, node: ast.Call, model: ModuleModel) -> str | None:
    """The floating dtype `.double()` / `.to(torch.float64)` / `.type(torch.float64)` asks
    for; None when the call names none (a device) or one this analysis does not follow."""
    if name in _DTYPE_METHODS:
        return _DTYPE_METHODS[name]
    if name in ("to", "type"):
        given = [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]
        for arg in given:
            found = _dtype_name(arg, model)
            if found is not None:
                return found
    return None


def _requires_grad_kw(node: ast.Call) -> bool:
    return any(
        kw.arg == "requires_grad" and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )


def retains_graph(kwargs: dict[str, Value]) -> bool:
    """`backward(retain_graph=...)` / `create_graph=`: retained unless known to be false."""
    return any(
        name in kwargs and not (kwargs[name].has_const and not kwargs[name].const)
        for name in ("retain_graph", "create_graph")
    )


def sets_to_none(node: ast.Call) -> bool:
    """`zero_grad()` sets gradients to None (torch 2's default) unless `set_to_none=False`."""
    flag = next((k.value for k in node.keywords if k.arg == "set_to_none"), None)
    return not (isinstance(flag, ast.Constant) and flag.value is False)


def parameter_grad(node: ast.Call) -> bool:
    """`nn.Parameter(data, requires_grad=False)` (or positional) makes one that does not."""
    flag = node.args[1] if len(node.args) > 1 else None
    flag = next((k.value for k in node.keywords if k.arg == "requires_grad"), flag)
    return not (isinstance(flag, ast.Constant) and flag.value is False)


def requires_grad_flag(node: ast.Call) -> bool | None:
    """The flag of `t.requires_grad_(flag)` / `module.requires_grad_(requires_grad=flag)`:
    True when none is given, None when it is not a constant."""
    flag = node.args[0] if node.args else None
    flag = flag or next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
    if flag is None:
        return True
    return flag.value if isinstance(flag, ast.Constant) and isinstance(flag.value, bool) else None


def frozen_parameter(created: ast.AST) -> bool:
    """`nn.Parameter(t, requires_grad=False)` (or `False` passed second): no grad, so writes
    into it are allowed and nothing saves it for a gradient."""
    if not isinstance(created, ast.Call):
        return False
    flag = next((k.value for k in created.keywords if k.arg == "requires_grad"), None)
    if (
        flag is None
        and len(created.args) > 1
        and isinstance(created.func, ast.Attribute | ast.Name)
    ):
        name = created.func.attr if isinstance(created.func, ast.Attribute) else created.func.id
        flag = created.args[1] if name == "Parameter" else None
    return isinstance(flag, ast.Constant) and flag.value is False


def mode_off(node: ast.expr) -> bool:
    """`torch.inference_mode(False)` / `(mode=False)`: the context changes nothing."""
    if not isinstance(node, ast.Call):
        return False
    given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "mode")]
    return any(isinstance(a, ast.Constant) and a.value is False for a in given)
