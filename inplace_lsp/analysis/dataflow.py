"""Abstract interpretation of one function body: tensor values, version groups, and the events
that decide autograd errors (save, mutate, backward, optimizer step).

Every tensor-valued name holds a Value. Views, `.detach()`, `.data` and in-place results share
their source's version groups. An op that saves a tensor for backward adds a Save to the
tensor's group; a later in-place write on that group makes the save stale. A stale save is an
error when a backward() runs through it, or (in a function that leaves backward to its caller)
when the graph holding it escapes through a return value or an attribute.

Calls to local functions, methods and nn.Module classes are interpreted inline with the
caller's values (depth-limited), so a save in forward() and a write in a helper method are
seen together. Branches are analysed separately and joined; loop bodies run twice.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from inplace_lsp.analysis.candidates import is_candidate
from inplace_lsp.analysis.knowledge import (
    SCALAR,
    TENSOR_GRAD,
    TENSOR_NO_GRAD,
    Knowledge,
    OpInfo,
)
from inplace_lsp.analysis.knowledge import load as load_knowledge
from inplace_lsp.analysis.model import (
    ClassInfo,
    ModuleModel,
    Submodule,
    Undecidable,
    constant_range,
    evaluate,
)
from inplace_lsp.analysis.model import submodule as submodule_of

MAX_INLINE_DEPTH = 4
# The work one inlined call may do, its own callees included, before the calls it makes are
# treated as unknown (branchy helpers calling helpers would otherwise cost exponential time).
# Each call gets its own allowance and the entry point has none, so whether a call is followed
# depends only on the called code, never on how much unrelated code ran before it.
CALL_BUDGET = 1500

Loc = tuple[int, int, int, int]  # absolute 1-based line, utf-8 col, end line, end col
InferenceSite = tuple[Loc, str | None]  # a torch.inference_mode() block: where, in which file
# A branch's condition: format, its node, its document line (None: in another file).
Label = tuple[str, ast.AST | None, int | None]

# Strict mode (the test suite sets INPLACE_LSP_STRICT=1): a syntax node without a handler
# raises UnhandledNode instead of being skipped, so unknown syntax cannot hide silently.
STRICT = os.environ.get("INPLACE_LSP_STRICT") == "1"
# The torch facts below come from data/autograd.json (scripts/gen_autograd_table.py probes
# them); the analysis and the fixes read them by these names.
_FACTS = load_knowledge().tensor
ACTIVATIONS = _FACTS.activations
SCALAR_METHODS = _FACTS.python_methods
SCALAR_ATTRS = _FACTS.python_attrs
TENSOR_ATTR_VIEWS = frozenset(_FACTS.view_attrs)
# `.to()`, `.float()`, `.contiguous()`: the tensor itself when nothing has to change.
ALIAS_METHODS = frozenset(
    name.removeprefix("Tensor.") for name, c in _FACTS.conversions.items() if c.itself
)
_LAYOUT_METHODS = frozenset(
    name.removeprefix("Tensor.") for name, c in _FACTS.conversions.items() if c.unless == "layout"
)
_DTYPE_METHODS = {
    name.removeprefix("Tensor."): c.dtype for name, c in _FACTS.conversions.items() if c.dtype
}
_DTYPE_NAMES = _FACTS.floating_dtypes
NO_GRAD_CONTEXTS = frozenset(n for n, k in _FACTS.grad_modes.items() if k in ("off", "inference"))
INFERENCE_CONTEXTS = frozenset(n for n, k in _FACTS.grad_modes.items() if k == "inference")
ENABLE_GRAD_CONTEXTS = frozenset(n for n, k in _FACTS.grad_modes.items() if k == "on")
SET_GRAD_CONTEXTS = frozenset(n for n, k in _FACTS.grad_modes.items() if k == "argument")
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

# At most this many arguments are named in "fails if `a` or `b` requires grad".
_NAMED_ARGUMENTS = 3
# `func = a if c else b`: a call of `func` runs each of up to this many functions.
_CALLEE_CHOICES = 4

_ACTIVATION_KEYS = frozenset(a.replace("_", "") for a in ACTIVATIONS)


def _spelled(func: ast.expr, qual: str) -> str:
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


_ids = itertools.count(1)


def new_id() -> int:
    return next(_ids)


@dataclass(eq=False)
class ModuleRef:
    """An nn.Module instance: a local class, a torch.nn class, or unknown."""

    qualname: str | None
    cls: ClassInfo | None
    params_group: int
    submodule: Submodule | None = None  # where it was constructed (`self.act = nn.ReLU(...)`)
    site_start: int = 1  # block start line of the constructor call
    parent: ModuleRef | None = None
    training_flag: bool | None = None  # None: as its parent (model.eval() reaches every child)
    conditional: bool = False  # `self.act = A() if flag else B()`: which one runs is not known
    site_path: str | None = None  # the file of the constructor call (None: this document)
    consts: dict[str, object] = field(default_factory=dict)  # constant constructor arguments
    attrs: dict[str, Value] = field(default_factory=dict)
    children: list[ModuleRef] | None = None
    # register_forward_pre_hook / register_forward_hook: ("pre" | "post", the hook function)
    hooks: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=list)
    frozen: bool | None = None  # requires_grad_(False) on it (None: as its parent)

    @property
    def params_frozen(self) -> bool:
        return self._inherited("frozen", False)

    @property
    def training(self) -> bool:
        return self._inherited("training_flag", True)

    def _inherited(self, flag: str, default: bool) -> bool:
        """A flag set on the module or, where it is None, on the nearest parent that has it
        (`model.eval()` and `model.requires_grad_(False)` reach every submodule)."""
        ref: ModuleRef | None = self
        while ref is not None:
            value: bool | None = getattr(ref, flag)
            if value is not None:
                return value
            ref = ref.parent
        return default


@dataclass(eq=False)
class Value:
    # "tensor" | "scalar" | "module" | "optimizer" | "params" | "container" | "symbol" | "unknown"
    kind: str
    groups: frozenset[int] = frozenset()
    tensor: bool | None = None
    grad: bool | None = None
    grad_assumed: bool = False  # grad is an assumption (forward input), not proven
    leaf: bool = False
    graph: frozenset[int] = frozenset()
    detached: str = ""  # "detach" (shares the version counter) or "data" (hides writes from it)
    partial: bool = False  # a slice of a tensor, not the whole of it
    joined: bool = False
    origin: str = ""
    module: ModuleRef | None = None
    steps: frozenset[int] = frozenset()  # optimizer: parameter groups it updates
    items: tuple[Value, ...] | None = None
    qualname: str | None = None  # symbol: dotted name
    name: str | None = None  # the variable it was last bound to (for messages)
    const: object = None  # scalar: its value, when has_const
    producer: str = ""  # the known op or module that made it ("": unknown, e.g. an argument)
    has_const: bool = False
    grad_from: str = ""  # grad unknown: the argument whose requires-grad it rests on
    dtype: str = ""  # "float32", "float64", ... ("": unknown)
    contiguous: bool | None = None  # the memory layout, where known (transpose: False)
    # Made by an op under torch.inference_mode(): where that block or decorator is (its
    # location and file; None: not an inference tensor). Views keep it; a view of a normal
    # tensor made there is normal.
    inference: InferenceSite | None = None
    # How torch created this view, where that forbids writing into it with grad on: "multi"
    # (an output of split / chunk / unbind), "no_grad" (made under no_grad from a tensor
    # that requires grad) or "leaf" (a view of a leaf that requires grad); "" otherwise.
    view_kind: str = ""
    # One parameter of a module (`self.fc.bias`): the module's parameters share one version
    # group, and a save of another of them (`param:weight`) is not this tensor ("": any).
    param: str = ""
    # Joined because an op may return the tensor itself or a copy: the condition under which
    # it is the same memory, for messages ("" when the doubt is the path taken).
    maybe: str = ""
    # Stands for the tuple of views split / chunk / tensor_split return: unpacking or indexing
    # it gives those views (not torch's unbind of one tensor).
    pieces: bool = False

    @property
    def tensorish(self) -> bool:
        return self.kind in ("tensor", "unknown") and self.tensor is not False


def replace(value: Value, **changes: object) -> Value:
    """A shallow copy of a Value with some fields changed (dataclasses.replace is slow)."""
    clone = object.__new__(Value)
    clone.__dict__.update(value.__dict__)
    clone.__dict__.update(changes)
    return clone


def scalar() -> Value:
    return Value("scalar", tensor=False, grad=False)


def unknown() -> Value:
    """An object the analysis knows nothing about (a fresh object each time: Values are mutable)."""
    return Value("unknown", frozenset({new_id()}), tensor=None, grad=None)


@dataclass(eq=False)
class Ctx:
    """A branch context; a save in an ancestor context happens on every path to its children."""

    parent: Ctx | None = None
    # The condition under which this context runs, for messages ("`if mask is None:` (line
    # 12) is true"), as (format, node, where) rendered by _label only when a message needs it
    # (ast.unparse on every branch run would cost the analysis a tenth of its time); None for
    # the root and for contexts that need no saying.
    label: Label | None = None

    def descends_from(self, other: Ctx) -> bool:
        node: Ctx | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


@dataclass(eq=False)
class Save:
    id: int
    group: int
    op: str
    slot: str  # "output", "input", "arg1", "param:weight"
    grad_fn: str | None
    loc: Loc
    ctx: Ctx
    possible: bool
    what: str  # the tensor's name in the user's code, when known
    path: str | None = None  # file of the saving op (None: the document analysed)
    grad_from: str = ""  # saved only if this argument requires grad (it is not known)
    on_some_paths: bool = False  # possible for another reason than an unknown argument
    param: str = ""  # the module parameter saved (`weight`), where known ("": any of them)


@dataclass(eq=False)
class Mutation:
    id: int
    # "augassign" | "method" | "setitem" | "out" | "inplace_kwarg" | "inplace_module" | "step"
    kind: str
    op: str  # what the user wrote: "+=", "add_", "x[...] = ", "inplace=True", "optimizer.step()"
    loc: Loc
    ctx: Ctx
    value: Value
    possible: bool
    target: str | None  # the name written to
    stmt_loc: Loc  # the enclosing statement, which a fix rewrites
    fix: str | None  # recipe kind
    call_site: Loc | None = None  # inplace modules: where the module was called
    activation: bool = False
    path: str | None = None  # file of loc (None: the document analysed)
    call_site_path: str | None = None
    # The statement throws the written tensor away (`F.relu(h, inplace=True)` on its own
    # line): the write is how the program passes the result on, so `h` is meant to change.
    discarded: bool = False
    # Names other than the one written (or, for an in-place activation whose result is used,
    # that one too) read after the write: they see the new values.
    aliases_read: list[str] = field(default_factory=list)


@dataclass(eq=False)
class Conflict:
    """A write to a tensor after an op saved it, reached by backward (or escaping to it)."""

    mutation: Mutation
    save: Save
    definite: bool
    via: str  # "backward" | "escape"
    backward_loc: Loc | None = None
    # Not definite: the unknown argument it rests on ("" when none is named) and whether it
    # also depends on the path taken.
    grad_from: str = ""
    on_some_paths: bool = True
    # The branches on which the save happened and the write's path need not have taken, as
    # the conditions they run under (outermost first): the failure needs all of them.
    branches: tuple[str, ...] = ()


@dataclass(eq=False)
class Refusal:
    """An in-place write that torch refuses at once, whatever was saved: into an inference
    tensor outside inference mode, `out=` with an argument that requires grad, into an
    output of split / chunk / unbind, into a view made under no_grad (each with grad on)."""

    mutation: Mutation
    reason: str  # "inference" | "out" | "multi_view" | "no_grad_view"
    definite: bool
    grad_from: str = ""  # not definite: the argument whose requires-grad decides
    made_in: InferenceSite | None = None  # "inference": the block that made the tensor


@dataclass(eq=False)
class LeafWrite:
    mutation: Mutation
    definite: bool


@dataclass(eq=False)
class Accumulation:
    name: str
    loc: Loc
    stmt_loc: Loc
    value_text: str


@dataclass(eq=False)
class AliasRead:
    """A name read after an in-place write changed its tensor through another name."""

    mutation: Mutation
    read_name: str
    read_loc: Loc


@dataclass
class Facts:
    """Everything rules need, for one analysis entry point (function or module-level code)."""

    conflicts: list[Conflict] = field(default_factory=list)
    leaf_writes: list[LeafWrite] = field(default_factory=list)
    accumulations: list[Accumulation] = field(default_factory=list)
    alias_reads: list[AliasRead] = field(default_factory=list)
    detached_writes: list[Mutation] = field(default_factory=list)
    activation_reads: list[AliasRead] = field(default_factory=list)
    # In-place writes checked and found safe: nothing had saved the tensor (Hint findings).
    safe_writes: list[Mutation] = field(default_factory=list)
    # Every `inplace=True` write (module or function), to tell whether turning one keyword off
    # keeps what every call through it computes.
    inplace_flags: list[Mutation] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)

    def extend(self, other: Facts) -> None:
        self.conflicts += other.conflicts
        self.leaf_writes += other.leaf_writes
        self.accumulations += other.accumulations
        self.alias_reads += other.alias_reads
        self.detached_writes += other.detached_writes
        self.activation_reads += other.activation_reads
        self.safe_writes += other.safe_writes
        self.inplace_flags += other.inplace_flags
        self.refusals += other.refusals


@dataclass
class Heap:
    """Per-path autograd state: live saves per version group, stale saves, freed saves."""

    live: dict[int, tuple[int, ...]] = field(default_factory=dict)
    stale: dict[int, Mutation] = field(default_factory=dict)
    freed: set[int] = field(default_factory=set)
    pending_alias: dict[int, list[tuple[Mutation, frozenset[str]]]] = field(default_factory=dict)
    # Parameter groups known to hold no gradient: zero_grad() set them to None and no
    # backward() ran since. optimizer.step() skips a parameter without one.
    no_grads: frozenset[int] = frozenset()

    def copy(self) -> Heap:
        return Heap(
            dict(self.live),
            dict(self.stale),
            set(self.freed),
            {k: list(v) for k, v in self.pending_alias.items()},
            self.no_grads,
        )

    def join(self, other: Heap) -> None:
        for group, saves in other.live.items():
            mine = self.live.get(group, ())
            if saves is mine:  # both copied from the heap before the branch: unchanged
                continue
            self.live[group] = mine + tuple(s for s in saves if s not in mine)
        for sid, mutation in other.stale.items():
            self.stale.setdefault(sid, mutation)
        self.freed &= other.freed
        self.no_grads &= other.no_grads
        for group, pend in other.pending_alias.items():
            mine_p = self.pending_alias.setdefault(group, [])
            if pend != mine_p:
                mine_p.extend(p for p in pend if p not in mine_p)


@dataclass
class Frame:
    """One function activation: its variables and where its code sits in the document."""

    env: dict[str, Value]
    start: int  # block start line (1-based) of the code running in this frame
    grad_enabled: bool
    ctx: Ctx
    returns: list[Value] = field(default_factory=list)
    loop_depth: int = 0
    loop_names: list[set[str]] = field(default_factory=list)
    loop_has_backward: list[bool] = field(default_factory=list)
    stmt: ast.stmt | None = None
    path: str | None = None  # the file the code comes from (None: the document analysed)
    # Reachability: the path being run ended (`return`, `raise`, `break`, `continue`); the
    # statements after it in its block never run, and its state flows where the jump goes.
    dead: str = ""  # "" (live) or the statement that ended the path
    exits: list[Heap] = field(default_factory=list)  # the heaps at each `return`
    breaks: list[list[_State]] = field(default_factory=list)  # per enclosing loop
    continues: list[list[_State]] = field(default_factory=list)


_State = tuple[dict[str, "Value"], Heap]  # a path's variables and autograd state


def join_values(a: Value, b: Value) -> Value:
    if a is b:
        return a
    if a.kind == b.kind == "scalar":
        return a
    if a.kind == b.kind == "symbol" and (a.qualname or a.items) and (b.qualname or b.items):
        # `func = _multi_tensor_adam if foreach else _single_tensor_adam`: one of them.
        choices = {v.qualname: v for v in (*(a.items or (a,)), *(b.items or (b,)))}
        if len(choices) == 1:
            return a
        if len(choices) <= _CALLEE_CHOICES:
            return Value("symbol", tensor=False, grad=False, items=tuple(choices.values()))
    kind = a.kind if a.kind == b.kind else ("tensor" if "tensor" in (a.kind, b.kind) else "unknown")
    tensor = a.tensor if a.tensor == b.tensor else None
    if a.grad is True or b.grad is True:
        grad: bool | None = True
    elif a.grad is False and b.grad is False:
        grad = False
    else:
        grad = None
    return Value(
        kind,
        groups=a.groups | b.groups,
        tensor=tensor,
        grad=grad,
        grad_assumed=a.grad_assumed or b.grad_assumed,
        leaf=a.leaf and b.leaf,
        graph=a.graph | b.graph,
        detached=a.detached if a.detached == b.detached else "",
        joined=True,
        origin=a.origin or b.origin,
        producer=a.producer if a.producer == b.producer else "",
        module=a.module if a.module is b.module else (a.module or b.module),
        steps=a.steps | b.steps,
        name=a.name,
        # One of the two: the arguments either rests on, as far as they are named.
        grad_from=_grad_from([v for v in (a, b) if v.grad_from]) if grad is None else "",
    )


class Interpreter:
    """Runs one entry point abstractly and collects Facts."""

    def __init__(self, model: ModuleModel, knowledge: Knowledge) -> None:
        self.model = model
        self.kb = knowledge
        self.saves: dict[int, Save] = {}
        self.facts = Facts()
        self.heap = Heap()
        self.escaped: set[int] = set()
        self.call_stack: list[ast.AST] = []
        self.group_names: dict[int, set[str]] = {}
        self.uncertain = 0  # > 0 while running code that may not run (a conditional submodule)
        self.work = 0
        self.work_limit = float("inf")  # of the innermost inlined call (CALL_BUDGET)
        # The functions of this document followed to their end from here (no call inside
        # cut short by a limit): a visible call site, whose facts win over assumptions.
        self.followed: set[str] = set()
        # The tensors each running autograd.Function forward passed to ctx.save_for_backward.
        self._function_saves: list[list[Value]] = []
        self.cut = 0  # calls not followed because of a limit
        # Inside torch.inference_mode(): where the block or decorator is (None: outside).
        self.inference_at: InferenceSite | None = None
        self.too_deep_line: int | None = None  # the statement Python's stack could not take

    # ------------------------------------------------------------------ entry points

    def run_function(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        owner: ClassInfo | None,
    ) -> Facts:
        frame = Frame({}, start, grad_enabled=not self._decorated_no_grad(fn), ctx=Ctx())
        self.inference_at = self._decorated_inference(fn, start)
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(
            args.defaults
        )
        is_method = owner is not None and not any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
            for d in fn.decorator_list
        )
        # The one stated assumption (DESIGN.md): the inputs of an nn.Module's `forward`
        # require grad. Another method's arguments are unknown, as a plain function's are:
        # what rests on them is a Warning that names them.
        in_module = owner is not None and owner.is_module and fn.name == "forward"
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            if i == 0 and is_method and owner is not None:
                if owner.is_module:
                    ref = ModuleRef(owner.name, owner, new_id(), site_start=start)
                    ref.consts = _bind_consts(owner, [], {})
                    frame.env[arg.arg] = Value("module", tensor=False, grad=False, module=ref)
                else:
                    frame.env[arg.arg] = Value("unknown", tensor=False, grad=None)
                continue
            frame.env[arg.arg] = self._param_value(arg, default, assumed=in_module)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            frame.env[arg.arg] = self._param_value(arg, default, assumed=in_module)
        if args.vararg:
            frame.env[args.vararg.arg] = Value("container", tensor=False, grad=None)
        if args.kwarg:
            frame.env[args.kwarg.arg] = Value("container", tensor=False, grad=None)
        self.exec_body(fn.body, frame)
        self.heap = self._exit_heap(frame)
        self._finish(frame.returns)
        return self.facts

    def run_module_code(self, pieces: list[tuple[list[ast.stmt], int]]) -> Facts:
        """Module-level statements, in document order, as one program: (statements, start)."""
        frame = Frame({}, 1, grad_enabled=True, ctx=Ctx())
        for body, start in pieces:
            frame.start = start
            self.exec_body(body, frame)
        self._finish([])
        return self.facts

    def _exit_heap(self, frame: Frame) -> Heap:
        """The autograd state when the function returns: joined over its `return`s and its
        end, where reachable (a function that always raises keeps the state it had)."""
        heaps = [*frame.exits, *([] if frame.dead else [self.heap])]
        if not heaps:
            return self.heap
        heap = heaps[0]
        for other in heaps[1:]:
            if other is not heap:
                heap.join(other)
        return heap

    def _finish(self, returns: list[Value]) -> None:
        """Stale saves whose graph leaves the function reach the caller's backward."""
        escaped = set(self.escaped)
        for value in returns:
            escaped |= self._graph_of(value)
        for sid, mutation in self.heap.stale.items():
            if sid in escaped and sid not in self.heap.freed:
                self._conflict(mutation, self.saves[sid], "escape", None)

    def _graph_of(self, value: Value) -> set[int]:
        graph = set(value.graph)
        for item in value.items or ():
            graph |= self._graph_of(item)
        return graph

    def _param_value(self, arg: ast.arg, default: ast.expr | None, assumed: bool) -> Value:
        annotation = _annotation_text(arg.annotation)
        scalar_annotation = annotation.split("[")[0] in (
            "int",
            "float",
            "bool",
            "str",
            "Optional",
            "tuple",
            "list",
            "dict",
        )
        tensor_annotation = _TENSOR_ANNOTATION.search(annotation) is not None
        if tensor_annotation:
            scalar_annotation = False
            if _INTEGER_TENSOR.search(annotation) and not _FLOAT_TENSOR.search(annotation):
                # torch.LongTensor (token ids), BoolTensor (masks): integer and bool tensors
                # cannot require grad, so nothing saves them and writes to them are harmless.
                return Value(
                    "tensor",
                    groups=frozenset({new_id()}),
                    tensor=True,
                    grad=False,
                    name=arg.arg,
                )
        elif "Module" in annotation or "Sequential" in annotation:
            return Value(
                "module",
                tensor=False,
                grad=False,
                module=ModuleRef(None, None, new_id()),
                name=arg.arg,
            )
        if (isinstance(default, ast.Constant) and default.value is not None) or scalar_annotation:
            return Value("scalar", tensor=False, grad=False, name=arg.arg)
        if _outer_type(annotation) in _CONTAINER_TYPES:
            assumed = False  # `tuple[Tensor, float]`: the assumption is about tensor inputs
        # In an nn.Module method, an argument without a default is taken for a tensor; in a
        # plain function it is unknown until it is used like one.
        tensor = True if tensor_annotation or (default is None and assumed) else None
        return Value(
            "tensor" if tensor else "unknown",
            groups=frozenset({new_id()}),
            tensor=tensor,
            grad=True if assumed else None,
            grad_assumed=True,
            name=arg.arg,
            grad_from="" if assumed else arg.arg,
            origin=f"argument `{arg.arg}`",
        )

    def _decorated_no_grad(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether the function runs with grad mode off: under a no_grad decorator, or as an
        operator's kernel (`@torch.library.custom_op(...)`, or registered by one), which
        runs below autograd."""
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            qual = self.model.qualify(target)
            if qual in NO_GRAD_CONTEXTS and not _mode_off(dec):
                return True
            if qual in _FACTS.kernels and isinstance(dec, ast.Call):
                return True
        return self.model.functions.get(fn.name) is fn and fn.name in self.model.kernels

    def _decorated_inference(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, start: int
    ) -> InferenceSite | None:
        """An `@torch.inference_mode()` decorator's site (None: none, or mode=False)."""
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if self.model.qualify(target) in INFERENCE_CONTEXTS and not _mode_off(dec):
                return self._loc_in(dec, start), self.model.path
        return None

    # ------------------------------------------------------------------ locations

    def loc(self, node: ast.AST, frame: Frame) -> Loc:
        off = frame.start - 1
        line: int = getattr(node, "lineno", 1)
        end_line: int = getattr(node, "end_lineno", None) or line
        col: int = getattr(node, "col_offset", 0)
        end_col: int = getattr(node, "end_col_offset", None) or col
        return (line + off, col, end_line + off, end_col)

    # ------------------------------------------------------------------ statements

    def exec_body(self, body: list[ast.stmt], frame: Frame) -> None:
        for stmt in body:
            if frame.dead:
                return  # unreachable: after a return, raise, break or continue
            frame.stmt = stmt
            try:
                self.exec_stmt(stmt, frame)
            except RecursionError:
                # Too deep for Python's stack: the caller says so for the whole function.
                # Only an assignment here: a call could overflow again.
                if self.too_deep_line is None:
                    self.too_deep_line = getattr(stmt, "lineno", 1) + frame.start - 1
                raise

    def exec_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        method = _STMT_HANDLERS.get(type(stmt))
        if method is not None:
            method(self, stmt, frame)
        else:
            if STRICT:
                raise UnhandledNode(stmt)
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.eval(child, frame)

    def stmt_Assert(self, stmt: ast.Assert, frame: Frame) -> None:
        self.eval(stmt.test, frame)  # the message is built only when the assertion fails

    def stmt_Expr(self, stmt: ast.Expr, frame: Frame) -> None:
        self.eval(stmt.value, frame)

    def stmt_Assign(self, stmt: ast.Assign, frame: Frame) -> None:
        value = self.eval(stmt.value, frame)
        for target in stmt.targets:
            self.assign(target, value, frame, stmt)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, frame: Frame) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, frame), frame, stmt)

    def stmt_AugAssign(self, stmt: ast.AugAssign, frame: Frame) -> None:
        rhs = self.eval(stmt.value, frame)
        target = stmt.target
        symbol = AUG_SYMBOL.get(type(stmt.op), "?")
        opname = BIN_OPS.get(type(stmt.op), "add")
        if isinstance(target, ast.Name):
            current = frame.env.get(target.id)
            if (
                current is None
                or not current.tensorish
                or (
                    current.tensor is None
                    and not rhs.tensorish
                    and current.kind == "unknown"
                    and not current.groups
                )
            ):
                # A Python number (or unknown object): `+=` rebinds, nothing is written in place.
                result = self.binop(opname, current or unknown(), rhs, stmt, frame)
                if (
                    frame.loop_depth
                    and rhs.grad is not False
                    and rhs.tensorish
                    and any(target.id in names for names in frame.loop_names)
                ):
                    self._note_accumulation(target.id, stmt, frame)
                frame.env[target.id] = replace(result, name=target.id)
                return
            if (
                frame.loop_depth
                and rhs.grad is not False
                and not rhs.detached
                and any(target.id in names for names in frame.loop_names)
            ):
                self._note_accumulation(target.id, stmt, frame)
            self.inplace_binop(current, rhs, opname, symbol, stmt, frame, target.id)
            return
        base = self.eval(
            target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else target, frame
        )
        if isinstance(target, ast.Attribute):
            current = self.attribute(base, target.attr, target, frame)
            if current.tensorish and current.kind == "tensor":
                self.inplace_binop(current, rhs, opname, symbol, stmt, frame, ast.unparse(target))
            return
        position = _const_index(target.slice) if isinstance(target, ast.Subscript) else None
        if base.kind == "container" and base.items and position is not None:
            # `outs[-1] += 0.1`: the list's element itself is written.
            try:
                element = base.items[position]
            except IndexError:
                return
            if element.tensorish and element.kind == "tensor":
                # No quick fix: cloning would rebind the list's name, not its element.
                self.inplace_binop(
                    element, rhs, opname, symbol, stmt, frame, ast.unparse(target), fixable=False
                )
            return
        if isinstance(target, ast.Subscript) and base.tensorish:
            self.eval(target.slice, frame)
            # `x[idx] += v` writes into x whatever idx is (index_put_ for tensor indices).
            view = base if base.kind == "tensor" else replace(base, kind="tensor")
            self.inplace_binop(
                view, rhs, opname, symbol, stmt, frame, _root_name(target) or ast.unparse(target)
            )

    def _note_accumulation(self, name: str, stmt: ast.AugAssign, frame: Frame) -> None:
        if frame.loop_has_backward and frame.loop_has_backward[-1]:
            self.facts.accumulations.append(
                Accumulation(
                    name, self.loc(stmt, frame), self.loc(stmt, frame), ast.unparse(stmt.value)
                )
            )

    def inplace_binop(
        self,
        current: Value,
        rhs: Value,
        opname: str,
        symbol: str,
        stmt: ast.AugAssign,
        frame: Frame,
        target: str,
        *,
        fixable: bool = True,
    ) -> None:
        op = self.kb.op(f"Tensor.__i{opname}__")
        fix = (
            None
            if not fixable
            else "augassign"
            if isinstance(stmt.target, ast.Name)
            else ("clone-setitem" if isinstance(stmt.target, ast.Subscript) else None)
        )
        self.mutate(
            current,
            kind="augassign",
            op=f"{symbol}=",
            node=stmt,
            stmt=stmt,
            frame=frame,
            target=target,
            fix=fix,
            inputs=[rhs],
        )
        if op is not None:
            self.record_saves(op, [current, rhs], current, stmt, frame)

    def stmt_If(self, stmt: ast.If, frame: Frame) -> None:
        test = self.eval(stmt.test, frame)
        if test.has_const:  # `if self.use_gate:` with the constructor's flag known
            self.exec_body(stmt.body if test.const else stmt.orelse, frame)
            return
        where = self._where(stmt, frame)
        labels: list[Label | None] = [
            ("`if {}:`{} is true", stmt.test, where),
            ("`if {}:`{} is false", stmt.test, where),
        ]
        self.branch([stmt.body, stmt.orelse], frame, labels)

    def branch(
        self,
        bodies: list[list[ast.stmt]],
        frame: Frame,
        labels: list[Label | None] | None = None,
    ) -> None:
        """Runs each body from the same state and joins the paths that reach the end; a
        path that ended (`return`, `raise`, `break`, `continue`) is not joined. When one body
        alone goes on, the code after the branch runs in its context: what that body saved is
        saved on every path that reaches it."""
        base_env, base_heap, base_ctx = frame.env, self.heap, frame.ctx
        results: list[_State] = []
        ctxs: list[Ctx] = []
        ended: set[str] = set()
        for i, body in enumerate(bodies):
            if not body:  # `if` without `else`: that path changes nothing, and is only read
                results.append((base_env, base_heap))
                ctxs.append(base_ctx)
                continue
            frame.env = dict(base_env)
            self.heap = base_heap.copy()
            frame.ctx = Ctx(base_ctx, labels[i] if labels and i < len(labels) else None)
            self.exec_body(body, frame)
            if frame.dead:
                ended.add(frame.dead)
                frame.dead = ""
                continue
            results.append((frame.env, self.heap))
            ctxs.append(frame.ctx)
        if not results:  # every body ended the path
            frame.env, self.heap, frame.ctx = base_env, base_heap, base_ctx
            frame.dead = ended.pop() if len(ended) == 1 else "mixed"
            return
        frame.ctx = ctxs[0] if len(ctxs) == 1 else base_ctx
        frame.env, self.heap = _join_states(results)

    def stmt_For(self, stmt: ast.For | ast.AsyncFor, frame: Frame) -> None:
        iterable = self.eval(stmt.iter, frame)
        children = iterable.module.children if iterable.module is not None else None
        if (
            children
            and len(children) <= _UNROLLED_LAYERS
            and iterable.module is not None
            and iterable.module.qualname in ("torch.nn.ModuleList", "torch.nn.Sequential")
        ):
            # `for layer in self.layers: h = layer(h)`: each layer in its order, once, as
            # torch runs them (two `nn.ELU(inplace=True)` in a row: the second writes the
            # output the first saved).
            layers = [Value("module", tensor=False, grad=False, module=c) for c in children]
            heads: list[Callable[[], object]] = [
                functools.partial(self.assign, stmt.target, layer, frame, stmt) for layer in layers
            ]
            self.loop(stmt, frame, heads)
            return
        numbers = _small_range(stmt.iter)
        steps: list[object] | None = None if numbers is None else list(numbers)
        if (
            steps is None
            and iterable.has_const
            and isinstance(iterable.const, (list, tuple))
            and len(iterable.const) <= _UNROLLED_LAYERS
        ):
            steps = list(iterable.const)  # `for name in self.order` with a constant list
        if steps is not None and isinstance(stmt.target, ast.Name):
            # `for step in range(3)`: each pass with its number, so `if step == 0: break`
            # is decided as Python decides it.
            numbered: list[Callable[[], object]] = [
                functools.partial(self.assign, stmt.target, _constant(i), frame, stmt)
                for i in steps
            ]
            self.loop(stmt, frame, numbered)
            return
        element = self.element_of(iterable, stmt.iter, frame)
        self.loop(stmt, frame, lambda: self.assign(stmt.target, element, frame, stmt))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, stmt: ast.While, frame: Frame) -> None:
        self.loop(stmt, frame, lambda: self.eval(stmt.test, frame))

    def loop(
        self,
        stmt: ast.For | ast.AsyncFor | ast.While,
        frame: Frame,
        head: Callable[[], object] | list[Callable[[], object]],
    ) -> None:
        """Two passes of the body (a value saved in one iteration and written in the next is
        seen), or one per element when `head` is a list (the layers of a ModuleList);
        `continue` goes on to the next pass, `break` past the `else` clause."""
        heads = head if isinstance(head, list) else [head, head]
        endless = isinstance(stmt, ast.While) and _always_true(stmt.test)
        before: _State = (dict(frame.env), self.heap.copy())  # no pass at all
        base_ctx = frame.ctx
        frame.loop_depth += 1
        frame.loop_names.append(set(frame.env))
        frame.loop_has_backward.append(_has_backward(stmt, self.model.mentions_training))
        frame.breaks.append([])
        completed = True
        for each in heads:
            each()
            frame.continues.append([])
            self.exec_body(stmt.body, frame)
            going_on = frame.continues.pop() + ([] if frame.dead else [(frame.env, self.heap)])
            frame.ctx, frame.dead = base_ctx, ""
            if not going_on:  # every path through the body returned, raised or broke out
                completed = False
                break
            frame.env, self.heap = _join_states(going_on)
        breaks = frame.breaks.pop()
        frame.loop_names.pop()
        frame.loop_has_backward.pop()
        frame.loop_depth -= 1
        exits: list[_State] = []
        if not endless:  # the condition ends it (or the iterable is empty): `else` runs
            if not completed:
                frame.env, self.heap = before
            self.exec_body(stmt.orelse, frame)
            if not frame.dead:
                exits.append((frame.env, self.heap))
            frame.dead = ""
        exits += breaks
        if exits:
            frame.env, self.heap = _join_states(exits)
        else:
            frame.dead = "loop"  # `while True` without a break

    def stmt_With(self, stmt: ast.With | ast.AsyncWith, frame: Frame) -> None:
        saved = frame.grad_enabled
        saved_inference = self.inference_at
        for item in stmt.items:
            expr = item.context_expr
            func = expr.func if isinstance(expr, ast.Call) else expr
            qual = self.model.qualify(func)
            if qual in NO_GRAD_CONTEXTS:
                if _mode_off(expr):
                    continue
                frame.grad_enabled = False
                if qual in INFERENCE_CONTEXTS and self.inference_at is None:
                    self.inference_at = (self.loc(expr, frame), frame.path)
            elif qual in ENABLE_GRAD_CONTEXTS:
                frame.grad_enabled = True
            elif qual in SET_GRAD_CONTEXTS and isinstance(expr, ast.Call) and expr.args:
                arg = expr.args[0]
                if isinstance(arg, ast.Constant):
                    frame.grad_enabled = bool(arg.value)
            else:
                value = self.eval(expr, frame)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, value, frame, stmt)
        self.exec_body(stmt.body, frame)
        frame.grad_enabled = saved
        self.inference_at = saved_inference

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, stmt: ast.Try, frame: Frame) -> None:
        self.exec_body(stmt.body, frame)
        if stmt.handlers and frame.dead:
            # Every path of the body ended, but any call in it may have raised: a handler
            # may run (from the body's state, as below).
            frame.dead = ""
            handlers: list[Label | None] = [*self._handler_labels(stmt, frame)]
            self.branch([h.body for h in stmt.handlers], frame, handlers)
        elif stmt.handlers:
            labels: list[Label | None] = [None, *self._handler_labels(stmt, frame)]
            self.branch([[], *[h.body for h in stmt.handlers]], frame, labels)
            self.exec_body(stmt.orelse, frame)
        else:
            self.exec_body(stmt.orelse, frame)
        if stmt.finalbody:  # runs on every path, also one that returned or raised
            ended, frame.dead = frame.dead, ""
            self.exec_body(stmt.finalbody, frame)
            frame.dead = frame.dead or ended

    stmt_TryStar = stmt_Try

    def _where(self, node: ast.AST, frame: Frame) -> int | None:
        """The document line of a statement of the document analysed; None in another file
        (formatted only when a message needs it, see _branches)."""
        return self.loc(node, frame)[0] if frame.path is None else None

    def _handler_labels(self, stmt: ast.Try | ast.TryStar, frame: Frame) -> list[Label]:
        return [
            ("`except {}:`{} runs" if h.type is not None else "`except{}:`{} runs", h.type,
             self._where(h, frame))
            for h in stmt.handlers
        ]  # fmt: skip

    def stmt_Return(self, stmt: ast.Return, frame: Frame) -> None:
        if stmt.value is not None:
            frame.returns.append(self.eval(stmt.value, frame))
        frame.exits.append(self.heap)
        frame.dead = "return"

    def stmt_Raise(self, stmt: ast.Raise, frame: Frame) -> None:
        for child in (stmt.exc, stmt.cause):
            if child is not None:
                self.eval(child, frame)
        frame.dead = "raise"

    def stmt_Break(self, stmt: ast.Break, frame: Frame) -> None:
        if frame.breaks:
            frame.breaks[-1].append((frame.env, self.heap))
            frame.dead = "break"

    def stmt_Continue(self, stmt: ast.Continue, frame: Frame) -> None:
        if frame.continues:
            frame.continues[-1].append((frame.env, self.heap))
            frame.dead = "continue"

    def stmt_FunctionDef(self, stmt: ast.stmt, frame: Frame) -> None:
        frame.env[getattr(stmt, "name", "_")] = unknown()

    stmt_AsyncFunctionDef = stmt_FunctionDef
    stmt_ClassDef = stmt_FunctionDef

    def stmt_Import(self, stmt: ast.stmt, frame: Frame) -> None:
        return

    stmt_ImportFrom = stmt_Import
    stmt_Global = stmt_Import
    stmt_Nonlocal = stmt_Import
    stmt_Pass = stmt_Import

    def stmt_Delete(self, stmt: ast.Delete, frame: Frame) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                frame.env.pop(target.id, None)

    def stmt_Match(self, stmt: ast.Match, frame: Frame) -> None:
        self.eval(stmt.subject, frame)
        bodies = [case.body for case in stmt.cases]
        last = stmt.cases[-1] if stmt.cases else None
        irrefutable = (
            last is not None
            and last.guard is None
            and isinstance(last.pattern, ast.MatchAs)
            and last.pattern.pattern is None
        )
        labels: list[Label | None] = [
            ("`case {}:`{} matches", case.pattern, self._where(case.pattern, frame))
            for case in stmt.cases
        ]
        self.branch(bodies if irrefutable else [*bodies, []], frame, labels)  # []: none matched

    # ------------------------------------------------------------------ assignment

    def assign(self, target: ast.expr, value: Value, frame: Frame, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            if (value.kind == "tensor" or value.kind == "unknown") and not value.partial:
                for group in sorted(value.groups):
                    self.group_names.setdefault(group, set()).add(target.id)
                    pending = self.heap.pending_alias.get(group)
                    if pending:
                        self.heap.pending_alias[group] = [(m, o - {target.id}) for m, o in pending]
            frame.env[target.id] = (
                replace(value, name=target.id) if value.name != target.id else value
            )
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = self.unpack(value, len(target.elts), frame)
            for elt, item in zip(target.elts, elements, strict=False):
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, item, frame, stmt)
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, frame)
            if target.attr == "requires_grad" and base.tensorish:
                # `w.requires_grad = False` before `w.copy_(...)`: the write is allowed.
                _toggle_grad(base, value.const if value.has_const else None)
                return
            self.escaped |= self._graph_of(value)
            if base.module is not None:
                base.module.attrs[target.attr] = value
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value, frame)
            self.eval(target.slice, frame)
            if base.tensorish and base.kind == "tensor" and not _string_key(target.slice):
                self.mutate(
                    base,
                    kind="setitem",
                    op=f"{ast.unparse(target)} = ...",
                    node=target,
                    stmt=stmt,
                    frame=frame,
                    target=_root_name(target),
                    fix="clone-setitem",
                    inputs=[value],
                )
                op = self.kb.op("Tensor.__setitem__")
                if op is not None:
                    self.record_saves(op, [base, value], base, target, frame)
            else:
                self.escaped |= self._graph_of(value)
        elif STRICT:
            raise UnhandledNode(target)

    def unpack(self, value: Value, count: int, frame: Frame) -> list[Value]:
        if value.items is not None:
            return list(value.items)
        if value.kind == "tensor":
            # Unpacking a tensor (or the result of chunk/split/unbind) yields views of it.
            return [self._unbound(value, frame, name=None) for _ in range(count)]
        return [
            Value(
                value.kind if value.kind != "container" else "unknown",
                frozenset({new_id()}),
                None,
                value.grad,
                graph=value.graph,
            )
            for _ in range(count)
        ]

    # ------------------------------------------------------------------ expressions

    def eval(self, node: ast.expr, frame: Frame) -> Value:
        method = _EXPR_HANDLERS.get(type(node))
        if method is not None:
            result: Value = method(self, node, frame)
            return result
        if STRICT:
            raise UnhandledNode(node)
        self.work += 1
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, frame)
        return unknown()

    def expr_Constant(self, node: ast.Constant, frame: Frame) -> Value:
        # Scalars are never mutated by the interpreter (only tensor-like values are), so
        # one Value per constant node is shared.
        value: Value | None = getattr(node, "_ipl_value", None)
        if value is None:
            value = Value("scalar", tensor=False, grad=False, const=node.value, has_const=True)
            node._ipl_value = value  # type: ignore[attr-defined]
        return value

    def expr_JoinedStr(self, node: ast.JoinedStr, frame: Frame) -> Value:
        for part in node.values:
            self.eval(part, frame)
        return scalar()

    def expr_FormattedValue(self, node: ast.FormattedValue, frame: Frame) -> Value:
        self.eval(node.value, frame)  # `f"{h.shape}"`: read, never written
        return scalar()

    def expr_NamedExpr(self, node: ast.NamedExpr, frame: Frame) -> Value:
        value = self.eval(node.value, frame)
        self.assign(node.target, value, frame, frame.stmt or ast.Expr(node))
        return frame.env.get(node.target.id, value)

    def expr_Slice(self, node: ast.Slice, frame: Frame) -> Value:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.eval(part, frame)
        return scalar()

    def expr_Name(self, node: ast.Name, frame: Frame) -> Value:
        value = frame.env.get(node.id)
        if value is not None:
            self._check_alias_read(value, node.id, node, frame)
            return value
        if (
            node.id in self.model.imports
            or node.id in self.model.classes
            or node.id in self.model.functions
        ):
            return Value(
                "symbol",
                tensor=False,
                grad=False,
                qualname=self.model.imports.get(node.id, node.id),
            )
        if node.id in ("True", "False", "None"):
            return scalar()
        return unknown()

    def _check_alias_read(self, value: Value, name: str, node: ast.Name, frame: Frame) -> None:
        if not self.heap.pending_alias:
            return
        for group in sorted(value.groups):
            pending = self.heap.pending_alias.get(group)
            if not pending:
                continue
            keep = []
            for mutation, others in pending:
                if name in others:
                    read = AliasRead(mutation, name, self.loc(node, frame))
                    mutation.aliases_read.append(name)
                    if mutation.activation:
                        self.facts.activation_reads.append(read)
                    elif not mutation.value.detached:  # a detached alias is IPL005's
                        self.facts.alias_reads.append(read)
                else:
                    keep.append((mutation, others))
            self.heap.pending_alias[group] = keep

    def expr_Attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value  # type: ignore[assignment]
        if isinstance(root, ast.Name) and root.id not in frame.env:
            qual = self.model.qualify(node)
            if qual is not None:
                return Value("symbol", tensor=False, grad=False, qualname=qual)
        base = self.eval(node.value, frame)
        return self.attribute(base, node.attr, node, frame)

    def attribute(self, base: Value, attr: str, node: ast.AST, frame: Frame) -> Value:
        if base.kind == "symbol" and base.qualname:
            return Value("symbol", tensor=False, grad=False, qualname=f"{base.qualname}.{attr}")
        if base.module is not None:
            return self.module_attr(base.module, attr)
        if base.tensorish:
            if attr == "data":
                return replace(
                    base,
                    kind="tensor",
                    tensor=True,
                    grad=False,
                    leaf=False,
                    detached="data",
                    graph=frozenset(),
                )
            if attr in TENSOR_ATTR_VIEWS:
                return self._view(
                    base, frame, contiguous=_layout(_FACTS.view_attrs[attr], base.contiguous)
                )
            if attr == "grad":
                return Value("tensor", frozenset({new_id()}), True, False, origin=".grad")
            if attr in SCALAR_ATTRS:
                return scalar()
        # An attribute of something not known (`self.betas` of a plain class): what rests on
        # whether it requires grad names it.
        return Value("unknown", frozenset({new_id()}), None, None, grad_from=_dotted(node))

    def module_attr(self, ref: ModuleRef, attr: str) -> Value:
        if attr in ref.attrs:
            return ref.attrs[attr]
        value: Value
        cls = ref.cls
        if cls is not None and attr in cls.submodules:
            sub, conditional = _choose(
                cls.submodule_options.get(attr) or [cls.submodules[attr]], ref.consts
            )
            owner = cls.owner or self.model
            value = self.module_value(
                sub.qualname, sub, new_id(), owner.start_of(cls.node), ref, owner
            )
            if value.module is not None and conditional:
                value.module.conditional = True
        elif cls is not None and attr in cls.parameters:
            frozen = _frozen_parameter(cls.parameters[attr]) or ref.params_frozen
            value = Value(
                "tensor",
                frozenset({ref.params_group}),
                True,
                not frozen,
                leaf=True,
                origin=f"parameter self.{attr}",
                name=f"self.{attr}",
                param=attr,
            )
        elif cls is not None and attr in cls.plain_attrs:
            value = _plain_value(cls, attr, ref.consts)
        elif cls is not None and attr in cls.buffers:
            value = Value(
                "tensor", frozenset({new_id()}), True, False, origin=f"buffer self.{attr}"
            )
        elif (
            ref.qualname is not None
            and ref.qualname.startswith("torch.nn.")
            and attr in ("weight", "bias", "in_proj_weight", "in_proj_bias")
        ):
            value = Value(
                "tensor",
                frozenset({ref.params_group}),
                True,
                not ref.params_frozen,
                leaf=True,
                origin=f"parameter .{attr}",
                param=attr,
            )
        elif (
            ref.qualname is not None
            and ref.qualname.startswith("torch.nn.")
            and attr in ("running_mean", "running_var")
        ):
            value = Value("tensor", frozenset({new_id()}), True, False)
        else:
            value = Value("unknown", frozenset({new_id()}), None, None, origin=f"attribute {attr}")
        ref.attrs[attr] = value
        return value

    def module_value(
        self,
        qualname: str | None,
        sub: Submodule | None,
        params_group: int,
        site_start: int,
        parent: ModuleRef | None = None,
        site_model: ModuleModel | None = None,
    ) -> Value:
        site_model = site_model or self.model
        cls = site_model.lookup_class(qualname) if qualname else None
        if cls is not None and not cls.is_module:
            cls = None
        ref = ModuleRef(
            qualname, cls, params_group, submodule=sub, site_start=site_start, parent=parent
        )
        ref.site_path = site_model.path
        ref.conditional = bool(parent is not None and parent.conditional)
        if cls is not None:
            ref.consts = _init_consts(cls, sub.call if sub is not None else None, parent)
        if (
            sub is not None
            and sub.children
            and qualname in ("torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict")
        ):
            ref.children = [
                self.module_value(child.qualname, child, new_id(), site_start, ref).module  # type: ignore[misc]
                for child in sub.children
            ]
        return Value("module", tensor=False, grad=False, module=ref)

    def expr_Subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        base = self.eval(node.value, frame)
        return self.subscript(base, node, frame)

    def subscript(self, base: Value, node: ast.Subscript, frame: Frame) -> Value:
        index = self.eval(node.slice, frame)
        if base.kind == "scalar":
            return scalar()  # `x.shape[-1]`, `sizes[0]`: a number, never a tensor
        position = _const_index(node.slice)
        if base.items is not None and position is not None:
            try:
                return base.items[position]
            except IndexError:
                return unknown()
        if base.module is not None:
            key = index.const if index.has_const else position
            return _element_module(base.module, key)
        if base.tensorish and base.kind == "tensor" and _string_key(node.slice):
            # `outputs["pair"]`: a mapping taken for a tensor; its items are not views of it.
            return Value("unknown", frozenset({new_id()}), None, base.grad, graph=base.graph)
        if base.tensorish and base.kind == "tensor":
            advanced = (
                index.tensorish and index.kind == "tensor" or isinstance(node.slice, ast.List)
            )
            if advanced:
                return Value(
                    "tensor",
                    frozenset({new_id()}),
                    True,
                    base.grad,
                    base.grad_assumed,
                    graph=base.graph,
                    origin="indexing",
                )
            return self._view(
                base,
                frame,
                partial=True,
                pieces=False,  # `h.chunk(2)[0]`: one piece
                contiguous=base.contiguous if _leading_index(node.slice) else None,
            )
        if base.kind == "container":
            return Value("unknown", frozenset({new_id()}), None, base.grad, graph=base.graph)
        return Value("unknown", frozenset({new_id()}), None, None)

    def expr_Tuple(self, node: ast.Tuple | ast.List | ast.Set, frame: Frame) -> Value:
        items = tuple(
            self.eval(e.value if isinstance(e, ast.Starred) else e, frame) for e in node.elts
        )
        grads = [i.grad for i in items if i.tensorish]
        graph: frozenset[int] = (
            frozenset().union(*(i.graph for i in items)) if items else frozenset()
        )
        return Value(
            "container", tensor=False, grad=True if any(grads) else None, items=items, graph=graph
        )

    expr_List = expr_Tuple

    def expr_Dict(self, node: ast.Dict, frame: Frame) -> Value:
        values = [self.eval(v, frame) for v in node.values]
        for k in node.keys:
            if k is not None:
                self.eval(k, frame)
        graph: frozenset[int] = (
            frozenset().union(*(v.graph for v in values)) if values else frozenset()
        )
        return Value("container", tensor=False, grad=None, graph=graph)

    def expr_IfExp(self, node: ast.IfExp, frame: Frame) -> Value:
        test = self.eval(node.test, frame)
        if test.has_const:
            return self.eval(node.body if test.const else node.orelse, frame)
        return join_values(self.eval(node.body, frame), self.eval(node.orelse, frame))

    def expr_BinOp(self, node: ast.BinOp, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binop(BIN_OPS.get(type(node.op), "add"), left, right, node, frame)

    def binop(self, opname: str, left: Value, right: Value, node: ast.AST, frame: Frame) -> Value:
        if left.kind == right.kind == "params" and opname == "add":
            # `list(body.parameters()) + list(critic.parameters())`: both models' parameters.
            return Value("params", left.groups | right.groups, tensor=False, grad=True)
        if left.kind != "tensor" and right.kind != "tensor":
            if left.kind == "scalar" and right.kind == "scalar":
                return scalar()
            grad = True if (left.grad or right.grad) else None
            return Value(
                "unknown",
                frozenset({new_id()}),
                None,
                grad,
                graph=left.graph | right.graph,
                grad_from=_grad_from([left, right]) if grad is None else "",
            )
        if left.kind == "tensor":
            op = self.kb.op(f"Tensor.__{opname}__")
            return self.apply_op(
                op, f"`{opname}`", [left, right], node, frame, describe=_OP_TEXT.get(opname, opname)
            )
        op = self.kb.op(f"Tensor.__r{opname}__")
        return self.apply_op(
            op, f"`{opname}`", [right, left], node, frame, describe=_OP_TEXT.get(opname, opname)
        )

    def expr_UnaryOp(self, node: ast.UnaryOp, frame: Frame) -> Value:
        operand = self.eval(node.operand, frame)
        if operand.tensorish and isinstance(node.op, ast.USub):
            return self.apply_op(
                self.kb.op("Tensor.__neg__"), "neg", [operand], node, frame, describe="-"
            )
        if operand.tensorish:
            return self.derived([operand])
        if operand.has_const and isinstance(node.op, ast.Not):
            return _constant(not operand.const)
        return scalar()

    def expr_Compare(self, node: ast.Compare, frame: Frame) -> Value:
        values = [self.eval(node.left, frame), *(self.eval(c, frame) for c in node.comparators)]
        if any(v.kind == "tensor" for v in values):
            return Value("tensor", frozenset({new_id()}), True, False)
        if len(values) == 2 and all(v.has_const for v in values):
            left, right = values[0].const, values[1].const
            try:
                return _constant(
                    evaluate(
                        ast.Compare(ast.Name("a"), node.ops, [ast.Name("b")]),
                        {"a": left, "b": right},
                    )
                )
            except Undecidable:
                pass
        return scalar()

    def expr_BoolOp(self, node: ast.BoolOp, frame: Frame) -> Value:
        values = [self.eval(v, frame) for v in node.values]
        # Python's rule: the first operand that decides (falsy for `and`, truthy for `or`).
        for v in values:
            if not v.has_const:
                break
            if bool(v.const) != isinstance(node.op, ast.And):
                return v
        else:
            return values[-1]
        result = values[0]
        for v in values[1:]:
            result = join_values(result, v)
        return result

    def expr_Lambda(self, node: ast.Lambda, frame: Frame) -> Value:
        return unknown()

    def expr_ListComp(
        self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, frame: Frame
    ) -> Value:
        inner = dict(frame.env)
        for gen in node.generators:
            it = self.eval(gen.iter, frame)
            element = self.element_of(it, gen.iter, frame)
            saved_env = frame.env
            frame.env = inner
            self.assign(gen.target, element, frame, frame.stmt or ast.Pass())
            frame.env = saved_env
        saved_env = frame.env
        frame.env = inner
        if isinstance(node, ast.DictComp):
            self.eval(node.key, frame)
            shown = node.value
        else:
            shown = node.elt
        first = self.eval(shown, frame)
        elt = join_values(first, self.eval(shown, frame))  # a second iteration, as for loops
        frame.env = saved_env
        return Value(
            "container",
            tensor=False,
            grad=elt.grad,
            graph=frozenset(self._graph_of(first) | self._graph_of(elt)),
            items=None,
        )

    expr_GeneratorExp = expr_ListComp
    expr_SetComp = expr_ListComp
    expr_DictComp = expr_ListComp

    def expr_Set(self, node: ast.Set, frame: Frame) -> Value:
        return replace(self.expr_Tuple(node, frame), items=None)  # unordered: no positions

    def expr_Starred(self, node: ast.Starred, frame: Frame) -> Value:
        self.eval(node.value, frame)
        return Value("container", tensor=False, grad=None)

    def expr_Yield(self, node: ast.Yield | ast.YieldFrom, frame: Frame) -> Value:
        if node.value is not None:
            self.eval(node.value, frame)
        return unknown()  # what the consumer sends back in

    expr_YieldFrom = expr_Yield

    def expr_Await(self, node: ast.Await, frame: Frame) -> Value:
        return self.eval(node.value, frame)

    def element_of(self, iterable: Value, node: ast.expr, frame: Frame) -> Value:
        if iterable.kind == "zip" and iterable.items is not None:
            items = tuple(self.element_of(item, node, frame) for item in iterable.items)
            if iterable.origin == "enumerate":
                items = (scalar(), *items)
            return Value("container", tensor=False, grad=None, items=items)
        if iterable.kind == "params":
            grad = iterable.grad is not False  # parameters() of a frozen module: no grad
            return Value("tensor", iterable.groups, True, grad, leaf=True, origin="parameter")
        if iterable.items:
            result = iterable.items[0]
            for item in iterable.items[1:]:
                result = join_values(result, item)
            return result
        if iterable.module is not None:
            return _element_module(iterable.module)
        if iterable.kind == "tensor":
            return self._unbound(iterable, frame)
        if iterable.kind == "container":
            return Value(
                "unknown", frozenset({new_id()}), None, iterable.grad, graph=iterable.graph
            )
        # Data loaders, ranges, zip(...): data, not parameters.
        return Value("unknown", frozenset({new_id()}), None, False)

    # ------------------------------------------------------------------ calls

    def expr_Call(self, node: ast.Call, frame: Frame) -> Value:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self._receiver(func, frame)
            if receiver is not None and receiver.kind != "symbol":
                return self.method_call(receiver, func.attr, node, frame)
        callee = self.eval(func, frame)
        args = [self.eval(a.value if isinstance(a, ast.Starred) else a, frame) for a in node.args]
        kwargs = {kw.arg: self.eval(kw.value, frame) for kw in node.keywords if kw.arg}
        for kw in node.keywords:
            if kw.arg is None:
                self.eval(kw.value, frame)
        if callee.module is not None:
            return self.module_call(callee.module, args, node, frame)
        if callee.kind == "symbol" and callee.qualname:
            return self.symbol_call(callee.qualname, args, kwargs, node, frame)
        if callee.kind == "symbol" and callee.items:
            return self._call_one_of(callee.items, args, kwargs, node, frame)
        if callee.kind == "optimizer":
            return unknown()
        if isinstance(func, ast.Name) and func.id not in frame.env and not kwargs:
            builtin = _builtin_call(func.id, args)
            if builtin is not None:
                return builtin
        return self.unknown_call(args, kwargs)

    def _call_one_of(
        self,
        choices: tuple[Value, ...],
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        """A call of one of several functions (`func(...)` after `func = a if c else b`):
        each from the same state, as the bodies of an `if` run, and the paths joined."""
        base_heap, base_ctx = self.heap, frame.ctx
        results: list[Value] = []
        heaps: list[Heap] = []
        for choice in choices:
            self.heap = base_heap.copy()
            frame.ctx = Ctx(
                base_ctx, ("`{}` is `" + (choice.qualname or "") + "`{}", node.func, None)
            )
            results.append(self.symbol_call(choice.qualname or "", args, kwargs, node, frame))
            heaps.append(self.heap)
        frame.ctx = base_ctx
        self.heap = heaps[0]
        for heap in heaps[1:]:
            self.heap.join(heap)
        result = results[0]
        for other in results[1:]:
            result = join_values(result, other)
        return result

    def _receiver(self, func: ast.Attribute, frame: Frame) -> Value | None:
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if (
            isinstance(root, ast.Name)
            and root.id not in frame.env
            and self.model.qualify(func.value) is not None
        ):
            return None  # torch.nn.functional.relu(...): a qualified function, not a method
        return self.eval(func.value, frame)

    def unknown_call(self, args: list[Value], kwargs: dict[str, Value]) -> Value:
        values = [*args, *kwargs.values()]
        grad: bool | None = (
            True if any(v.grad for v in values if v.tensorish or v.kind == "container") else None
        )
        graph: frozenset[int] = (
            frozenset().union(*(v.graph for v in values)) if values else frozenset()
        )
        return Value("unknown", frozenset({new_id()}), None, grad, graph=graph)

    @staticmethod
    def _view(base: Value, frame: Frame, **changes: object) -> Value:
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

    def _unbound(self, value: Value, frame: Frame, **changes: object) -> Value:
        """One of the tensors `a, b = h` or `for row in h` gives: torch unbinds `h`, so with
        grad on they are views of a multi-output node. Only for a tensor a known op or module
        made (`producer`): an unknown function's result may be a tuple of its own."""
        view = self._view(value, frame, pieces=False, **changes)
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
            grad_from=_grad_from(inputs) if grad is None else "",
            dtype=dtypes.pop() if len(dtypes) == 1 else "",
            contiguous=True,
        )

    def method_call(self, receiver: Value, name: str, node: ast.Call, frame: Frame) -> Value:
        args = [self.eval(a.value if isinstance(a, ast.Starred) else a, frame) for a in node.args]
        kwargs = {kw.arg: self.eval(kw.value, frame) for kw in node.keywords if kw.arg}
        if receiver.module is not None:
            return self.module_method(receiver, name, args, kwargs, node, frame)
        if receiver.kind == "optimizer":
            if name == "zero_grad" and _set_to_none(node):
                self.heap.no_grads |= receiver.steps
            if name == "step" and not (receiver.steps and receiver.steps <= self.heap.no_grads):
                self.mutate(
                    Value("tensor", receiver.steps, True, True, origin=receiver.origin),
                    kind="step",
                    op=f"{ast.unparse(node.func)}()",
                    node=node,
                    stmt=frame.stmt or node,
                    frame=frame,
                    target=None,
                    fix=None,
                    inputs=[],
                    grad_mode=False,
                )
            return unknown()
        if receiver.kind == "params":
            return receiver
        if receiver.kind == "fnctx":
            if name == "save_for_backward" and self._function_saves:
                self._function_saves[-1].extend(t for a in args for t in _tensors_in(a))
            return unknown()
        if receiver.kind == "container":
            if name in ("append", "extend", "insert", "add", "update", "setdefault"):
                for a in args:
                    self.escaped |= self._graph_of(a)
                    # The list holds it: `torch.stack(outs)` reaches its graph, so the
                    # backward through the stack frees what it saved.
                    receiver.graph = receiver.graph | frozenset(self._graph_of(a))
                if name == "append" and receiver.items is not None and args:
                    held = (*receiver.items, args[0])
                    receiver.items = held if len(held) <= _HELD_ITEMS else None
            return unknown()
        if not receiver.tensorish:
            return self.unknown_call([receiver, *args], kwargs)
        if name == "backward":
            self.backward(receiver, node, frame, _retain(node))
            return scalar()
        if name in SCALAR_METHODS and not (name in ALIAS_METHODS and (node.args or node.keywords)):
            return scalar()  # `x.size()`, `x.type()` (but `x.type(torch.float64)` converts)
        if name == "detach":
            return replace(
                receiver,
                kind="tensor",
                tensor=True,
                grad=False,
                grad_assumed=False,
                leaf=False,
                detached="detach",
                graph=frozenset(),
                origin=".detach()",
            )
        if name == "clone":
            return self._copy_of(receiver, name, frame, producer="")
        if name == "requires_grad_":
            _toggle_grad(receiver, _requires_grad_flag(node))
            return receiver
        if name in _LAYOUT_METHODS or name in ALIAS_METHODS:
            copied = self._copy_or_alias(receiver, name, node, frame)
            if copied is not None:
                return copied
        if name in ALIAS_METHODS:
            if name != "contiguous" and (_target_dtype(name, node) is None or not receiver.dtype):
                return replace(receiver, leaf=False)  # `.to(device)`: the tensor or a copy
            return replace(receiver)  # nothing to change: torch returns the tensor itself
        made = _FACTS.factories.get(f"Tensor.{name}")
        if made is not None:  # `x.new_zeros(shape)`: fresh, of x's dtype
            created = _created(node, f"Tensor.{name}", receiver.dtype)
            return replace(created, inference=self.inference_at)
        if receiver.kind == "unknown" and name in _BUILTIN_METHODS:
            # `name.split(".")`, `seen.add(k)`: as likely a str, list or set as a tensor.
            return self.unknown_call([receiver, *args], kwargs)
        op = self.kb.op(f"Tensor.{name}")
        return self.apply_op(op, name, [receiver, *args], node, frame, kwargs=kwargs, method=True)

    def _copy_or_alias(
        self, receiver: Value, name: str, node: ast.Call, frame: Frame
    ) -> Value | None:
        """`.to(dtype)`, `.double()`, `.contiguous()`, `.reshape()`: torch returns the tensor
        itself (or a view) when nothing has to change, a copy otherwise. A copy when the dtype
        or the layout is known to differ; an alias that only may be one when it is unknown;
        None for the usual handling (same dtype, contiguous input)."""
        if name in _LAYOUT_METHODS:
            if receiver.contiguous is False:
                return self._copy_of(receiver, name, frame)
            if receiver.contiguous is None and (receiver.partial or name == "contiguous"):
                # A part of a tensor (`h[:, :4]`), or strides not known: a view or a copy.
                part = "of this slice " if receiver.partial else ""
                maybe = f"`.{name}()` {part}returns a view (it copies a non-contiguous tensor)"
                return replace(receiver, leaf=False, joined=True, maybe=maybe)
            return None
        target = _target_dtype(name, node)
        if target is None:
            return None  # `.to(device)`, `.type_as(other)`: unknown here, the usual handling
        if receiver.dtype and receiver.dtype != target:
            return replace(self._copy_of(receiver, name, frame), dtype=target)
        if not receiver.dtype:
            maybe = f"the tensor is already {target} (`.{name}()` then returns it, not a copy)"
            return replace(receiver, leaf=False, joined=True, dtype=target, maybe=maybe)
        return None

    def _copy_of(
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
            inference=self.inference_at,
        )

    def module_method(
        self,
        receiver: Value,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        ref = receiver.module
        assert ref is not None
        if name in ("parameters", "named_parameters"):
            return Value("params", self.param_groups(ref), tensor=False, grad=not ref.params_frozen)
        if name == "zero_grad" and _set_to_none(node):
            self.heap.no_grads |= self.param_groups(ref)
            return receiver
        if name == "requires_grad_":
            ref.frozen = _requires_grad_flag(node) is False
            self._refreeze(ref)
            return receiver
        if name in ("train", "eval"):
            training = name == "train"
            if (
                name == "train"
                and args
                and args[0].kind == "scalar"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                training = bool(node.args[0].value)
            ref.training_flag = training
            return receiver
        if name in (
            "to",
            "cuda",
            "cpu",
            "float",
            "double",
            "half",
            "requires_grad_",
            "apply",
            "zero_grad",
            "share_memory",
        ):
            return receiver
        if name == "forward":
            return self.module_call(ref, args, node, frame)
        if name in ("register_forward_hook", "register_forward_pre_hook") and node.args:
            # A hook of this file runs at every call of the module (`output.clamp_(...)` in a
            # hook on nn.Sigmoid writes the output Sigmoid saved).
            hook = self.model.functions.get(self.model.qualify(node.args[0]) or "")
            if hook is not None:
                ref.hooks.append(("pre" if name.endswith("pre_hook") else "post", hook))
            return unknown()
        if ref.cls is not None:
            found = self.model.find_method(ref.cls, name)
            if found is not None:
                owner = found[0].owner or self.model
                return self.inline(
                    found[1],
                    owner.start_of(found[1]),
                    [receiver, *args],
                    kwargs,
                    node,
                    frame,
                    owner,
                )
        attr = self.module_attr(ref, name)
        if attr.module is not None:
            return self.module_call(attr.module, args, node, frame)
        return self.unknown_call(args, kwargs)

    def symbol_call(
        self, qual: str, args: list[Value], kwargs: dict[str, Value], node: ast.Call, frame: Frame
    ) -> Value:
        if not qual.startswith("torch."):
            local_fn = self.model.functions.get(qual)
            if local_fn is not None:
                return self.inline(
                    local_fn, self.model.start_of(local_fn), args, kwargs, node, frame
                )
            owner_name, _, method_name = qual.rpartition(".")
            owner_cls = self.model.lookup_class(owner_name) if owner_name else None
            if (
                owner_cls is not None
                and method_name == "apply"
                and any(b in _AUTOGRAD_FUNCTIONS for b in owner_cls.bases)
            ):
                return self.function_apply(owner_cls, args, kwargs, node, frame)
            if owner_cls is not None:
                found = self.model.find_method(owner_cls, method_name)
                if found is not None and _static(found[1]):
                    # `Gev._gev(...)`: a staticmethod called through its class.
                    where = found[0].owner or self.model
                    return self.inline(
                        found[1], where.start_of(found[1]), args, kwargs, node, frame, where
                    )
            cls = self.model.lookup_class(qual)
            if cls is not None:
                if cls.is_module:
                    ref = ModuleRef(qual, cls, new_id(), site_start=frame.start)
                    ref.consts = _bind_consts(cls, args, kwargs)
                    return Value("module", tensor=False, grad=False, module=ref)
                return unknown()
            if qual == "copy.deepcopy" and args and args[0].module is not None:
                # An EMA / teacher copy: the same modules, with parameters of their own.
                return Value("module", tensor=False, grad=False, module=_twin(args[0].module))
            # A function of another file: only tensor code that can write in place is worth
            # interpreting (model factories and config helpers are not).
            if any(v.kind == "tensor" for v in (*args, *kwargs.values())):
                function = self.model.lookup_function(qual)
                if function is not None and _writes_in_place(*function):
                    owner, fn = function
                    return self.inline(fn, owner.start_of(fn), args, kwargs, node, frame, owner)
            return self.unknown_call(args, kwargs)
        if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            data = args[0] if args else None  # its dtype and layout are the parameter's
            return Value(
                "tensor",
                frozenset({new_id()}),
                True,
                _parameter_grad(node),
                leaf=True,
                origin="nn.Parameter",
                dtype=data.dtype if data is not None else "",
                contiguous=data.contiguous if data is not None else None,
            )
        factory = _FACTS.factories.get(qual)
        if factory is not None:
            if (
                factory.result == "alias_of_tensor"
                and args
                and args[0].kind == "tensor"
                and not node.keywords
            ):
                return args[0]  # `torch.as_tensor(t)`: t itself
            return replace(_created(node, qual, factory.dtype), inference=self.inference_at)
        if qual.startswith("torch.optim.") and qual.count(".") == 2 and args:
            fused = any(
                kw.arg == "fused" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                for kw in node.keywords
            )
            return Value(
                "optimizer",
                tensor=False,
                grad=False,
                steps=self._param_groups(args[0]),
                origin="fused" if fused else "",
            )
        if qual in ("torch.autograd.backward", "torch.autograd.grad"):
            if args:
                self.backward(args[0], node, frame, _retain(node))
            return unknown()
        if qual.startswith("torch.nn.") and qual.count(".") == 2 and qual[9:10].isupper():
            sub = submodule_of(self.model, "", node) or Submodule("", node, qual)
            return self.module_value(qual, sub, new_id(), frame.start)
        op = self.kb.op(qual)
        if op is not None or qual.startswith("torch."):
            return self.apply_op(
                op, qual, args, node, frame, kwargs=kwargs, describe=_spelled(node.func, qual)
            )
        return self.unknown_call(args, kwargs)

    def function_apply(
        self,
        cls: ClassInfo,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        """`Square.apply(h)` of a torch.autograd.Function of this file: its forward runs
        without grad on (ctx, *args); what it passes to `ctx.save_for_backward` is saved for
        the node that the output gets when an input requires grad."""
        found = self.model.find_method(cls, "forward")
        if found is None:
            return self.unknown_call(args, kwargs)
        owner, forward = found
        ctx = Value("fnctx", tensor=False, grad=False)
        self._function_saves.append([])
        saved_grad = frame.grad_enabled
        frame.grad_enabled = False
        try:
            where = owner.owner or self.model
            result = self.inline(
                forward, where.start_of(forward), [ctx, *args], kwargs, node, frame, where
            )
        finally:
            frame.grad_enabled = saved_grad
            saved = self._function_saves.pop()
        inputs = [t for a in args for t in _tensors_in(a)]
        grads = [t.grad for t in inputs]
        if not frame.grad_enabled or all(g is False for g in grads):
            return result
        possible = any(g is None for g in grads)
        label = f"{cls.name}.apply"
        new = {
            self._save(
                group, label, "input", f"{cls.name}Backward", node, frame, possible, t.name or ""
            )
            for t in saved
            for group in sorted(t.groups)
        }
        graph = frozenset(new).union(*(t.graph for t in inputs))
        for output in _tensors_in(result) or [result]:
            output.grad = True if any(grads) else None
            output.graph = output.graph | graph
        return result

    def _refreeze(self, ref: ModuleRef, depth: int = 0) -> None:
        """The parameters already looked at follow a module's new requires_grad flag."""
        frozen = ref.params_frozen
        for value in ref.attrs.values():
            if value.kind == "tensor" and value.leaf and value.groups == {ref.params_group}:
                value.grad = not frozen
            elif value.module is not None and depth < 8:
                self._refreeze(value.module, depth + 1)
        for child in ref.children or ():
            if depth < 8:
                self._refreeze(child, depth + 1)

    def _param_groups(self, value: Value) -> frozenset[int]:
        if value.kind == "params" or value.leaf:
            return value.groups
        if value.items:
            groups: frozenset[int] = frozenset()
            for item in value.items:
                groups |= self._param_groups(item)
            return groups
        return value.groups

    # ------------------------------------------------------------------ modules

    def param_groups(self, ref: ModuleRef, depth: int = 0) -> frozenset[int]:
        """The version groups of every parameter of a module and its submodules."""
        groups = {ref.params_group}
        if depth > 8:
            return frozenset(groups)
        for child in ref.children or ():
            groups |= self.param_groups(child, depth + 1)
        if ref.cls is not None:
            for name in ref.cls.submodules:
                attr = self.module_attr(ref, name)
                if attr.module is not None:
                    groups |= self.param_groups(attr.module, depth + 1)
        return frozenset(groups)

    def module_call(self, ref: ModuleRef, args: list[Value], node: ast.Call, frame: Frame) -> Value:
        if ref.conditional:
            self.uncertain += 1
            try:
                return self._hooked_call(ref, args, node, frame)
            finally:
                self.uncertain -= 1
        return self._hooked_call(ref, args, node, frame)

    def _hooked_call(
        self, ref: ModuleRef, args: list[Value], node: ast.Call, frame: Frame
    ) -> Value:
        """The call with its hooks, as nn.Module.__call__ runs them: each pre-hook on
        (module, inputs), which may return new inputs; then forward; then each forward hook on
        (module, inputs, output), which may return a new output."""
        if not ref.hooks:
            return self._module_call(ref, args, node, frame)
        module = Value("module", tensor=False, grad=False, module=ref)
        for kind, hook in ref.hooks:
            if kind == "pre":
                inputs = Value("container", tensor=False, grad=None, items=tuple(args))
                given = self._run_hook(hook, [module, inputs], node, frame)
                if given.kind != "scalar":
                    args = list(given.items) if given.items is not None else [given]
        output = self._module_call(ref, args, node, frame)
        for kind, hook in ref.hooks:
            if kind == "post":
                inputs = Value("container", tensor=False, grad=None, items=tuple(args))
                given = self._run_hook(hook, [module, inputs, output], node, frame)
                if given.kind != "scalar":
                    output = given
        return output

    def _run_hook(
        self,
        hook: ast.FunctionDef | ast.AsyncFunctionDef,
        args: list[Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        return self.inline(hook, self.model.start_of(hook), args, {}, node, frame)

    def _module_call(
        self, ref: ModuleRef, args: list[Value], node: ast.Call, frame: Frame
    ) -> Value:
        x = args[0] if args else unknown()
        if ref.cls is not None:
            found = self.model.find_method(ref.cls, "forward")
            if found is not None:
                this = Value("module", tensor=False, grad=False, module=ref)
                owner = found[0].owner or self.model
                return self.inline(
                    found[1], owner.start_of(found[1]), [this, *args], {}, node, frame, owner
                )
            return self.unknown_call(args, {})
        if ref.children is not None and ref.qualname == "torch.nn.Sequential":
            for child in ref.children:
                x = self.module_call(child, [x], node, frame)
            return x
        info = self.kb.module(ref.qualname) if ref.qualname else None
        if info is None:
            result = self.unknown_call(args, {})
            if result.grad is None and frame.grad_enabled:
                result.grad = True  # unknown modules usually hold parameters
            return result
        inplace = info.inplace_default
        keyword: ast.AST | None = None  # the `inplace=` keyword, or `True` in `nn.ReLU(True)`
        if ref.submodule is not None:
            keyword = ref.submodule.keyword("inplace")
            given = keyword.value if isinstance(keyword, ast.keyword) else None
            position = info.inplace_position
            if keyword is None and position is not None and len(ref.submodule.call.args) > position:
                keyword = given = ref.submodule.call.args[position]
            if given is not None:
                inplace = isinstance(given, ast.Constant) and given.value is True
        if info.eval_alias and not ref.training:
            return x
        if info.view:
            return self._view(x, frame)
        if inplace and x.tensorish:
            uncertain = ref.conditional or (
                "Dropout" in info.name and not _positive_p(ref.submodule, _owner(ref))
            )
            if uncertain:
                self.uncertain += 1
            kw_loc = None
            if keyword is not None:
                kw_loc = self._loc_in(keyword, ref.site_start)
            short = ref.qualname.rsplit(".", 1)[-1] if ref.qualname else "module"
            self._inplace_flag_mutation(
                x, "inplace_module", f"nn.{short}(inplace=True)", node, frame, kw_loc,
                ref.site_path, is_activation(short),
            )  # fmt: skip
            if uncertain:
                self.uncertain -= 1
            out = x
        else:
            out = Value("tensor", frozenset({new_id()}), True, None, x.grad_assumed, graph=x.graph)
            out.producer = "nn." + (ref.qualname or "module").rsplit(".", 1)[-1]
            out.dtype, out.contiguous = x.dtype, True  # a torch.nn layer keeps its input's dtype
            out.inference = self.inference_at
        input_grad = x.grad is not False
        # Parameters that require grad (not after `module.requires_grad_(False)`).
        params = bool(info.params) and not ref.params_frozen
        any_grad = frame.grad_enabled and (input_grad or params)
        out.grad = (True if (x.grad or params) else x.grad) if frame.grad_enabled else False
        if any_grad:
            short = ref.qualname.rsplit(".", 1)[-1] if ref.qualname else "module"
            slots = info.saves.get(
                ("input_grad" if input_grad else "input_nograd") + (";inplace" if inplace else "")
            )
            if slots is None:
                slots = info.saved_slots(input_grad)
            new = set()
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
                        self._save(
                            group,
                            f"nn.{short}",
                            slot,
                            info.grad_fn,
                            node,
                            frame,
                            possible=x.grad is None and slot != "input",
                            what=target_value.name or "",
                        )
                    )
            out.graph = out.graph | frozenset(new)
        if isinstance(info.outputs, list):
            return _shaped(info.outputs, out)
        return out

    def _loc_in(self, node: ast.AST, start: int) -> Loc:
        off = start - 1
        return (
            node.lineno + off,  # type: ignore[attr-defined]
            node.col_offset,  # type: ignore[attr-defined]
            (node.end_lineno or node.lineno) + off,  # type: ignore[attr-defined]
            node.end_col_offset or node.col_offset,  # type: ignore[attr-defined]
        )

    def inline(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST,
        frame: Frame,
        model: ModuleModel | None = None,
    ) -> Value:
        if model is not None and model is not self.model:
            outer = self.model
            self.model = model
            try:
                return self.inline(fn, start, args, kwargs, node, frame)
            finally:
                self.model = outer
        if fn in self.call_stack:
            return self.unknown_call(args, kwargs)
        if len(self.call_stack) >= MAX_INLINE_DEPTH or self.work > self.work_limit:
            self.cut += 1
            return self.unknown_call(args, kwargs)
        cut_before = self.cut
        outer_limit, self.work_limit = self.work_limit, self.work + CALL_BUDGET
        self.work += len(fn.body)
        callee = Frame(
            {},
            start,
            frame.grad_enabled and not self._decorated_no_grad(fn),
            frame.ctx,
            path=self.model.path,
        )
        params = [*fn.args.posonlyargs, *fn.args.args]
        defaults: list[ast.expr | None] = [None] * (len(params) - len(fn.args.defaults)) + list(
            fn.args.defaults
        )
        for i, (param, default) in enumerate(zip(params, defaults, strict=True)):
            if i < len(args):
                callee.env[param.arg] = args[i]
            elif param.arg in kwargs:
                callee.env[param.arg] = kwargs[param.arg]
            elif default is not None:
                # Not passed: the default's value (`chunk_size=None` decides `if chunk_size:`).
                callee.env[param.arg] = (
                    _constant(default.value) if isinstance(default, ast.Constant) else unknown()
                )
            else:
                callee.env[param.arg] = unknown()
        for param, kw_default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
            given = kwargs.get(param.arg)
            if given is None:
                given = (
                    _constant(kw_default.value)
                    if isinstance(kw_default, ast.Constant)
                    else unknown()
                )
            callee.env[param.arg] = given
        if fn.args.vararg:
            callee.env[fn.args.vararg.arg] = Value(
                "container", tensor=False, grad=None, items=tuple(args[len(params) :])
            )
        if fn.args.kwarg:
            callee.env[fn.args.kwarg.arg] = Value("container", tensor=False, grad=None)
        self.call_stack.append(fn)
        outer_inference = self.inference_at
        self.inference_at = outer_inference or self._decorated_inference(fn, start)
        try:
            self.exec_body(fn.body, callee)
        finally:
            self.call_stack.pop()
            self.work_limit = outer_limit
            self.inference_at = outer_inference
        key = self.model.def_key(fn) if self.model.path is None else ""
        if key and self.cut == cut_before:
            self.followed.add(key)
        self.heap = self._exit_heap(callee)
        if not callee.returns:
            return scalar()
        result = callee.returns[0]
        for other in callee.returns[1:]:
            result = join_values(result, other)
        if result.joined and not result.maybe and len(callee.returns) > 1:
            # `return image` on one path, a new tensor on another: say which argument.
            passed = [
                (name, value)
                for name, value in callee.env.items()
                if value.tensorish and value.groups and value in args
            ]
            itself = [
                name
                for name, value in passed
                if any(r.groups and r.groups <= value.groups for r in callee.returns)
            ]
            if len(itself) == 1:
                result = replace(
                    result, maybe=f"`{fn.name}()` returns its argument `{itself[0]}` (not a copy)"
                )
        return result

    # ------------------------------------------------------------------ ops

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
        tensor_args = [t for a in args for t in _tensors_in(a)]
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
                return self.unknown_call(args, kwargs)
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
                self.mutate(
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
            result = self._view(
                receiver,
                frame,
                kind="tensor" if receiver.kind == "unknown" or op.tuple_output else receiver.kind,
                contiguous=_layout(op.layout, receiver.contiguous),
            )
            multi = op.multi_output_view and receiver.kind == "tensor"  # not `text.split()`
            if multi and frame.grad_enabled and receiver.grad is not False:
                result.view_kind = "multi"  # chunk, split, unbind: views of a multi-output node
            result.pieces = op.tuple_output
            return result
        else:
            result = (
                self.derived(tensor_args)
                if tensor_args
                else Value("tensor", frozenset({new_id()}), True, False)
            )
            result.producer = label
            result.inference = self.inference_at
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
            and (a.tensorish or any(i.grad is None for i in _tensors_in(a) if i is not a))
        ]  # `(x.shape[-1],)`, a tuple of numbers, is no unknown
        possible = bool(unknown_grad)
        grad_from = _grad_from(unknown_grad)
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
            targets = _tensors_in(target)
            if not targets:
                continue
            for group in sorted(frozenset().union(*(t.groups for t in targets))):
                new.add(
                    self._save(
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
                    )
                )
        for output in outputs:
            if output.grad is not False:  # an integer output (max's indices) has no graph
                output.graph = output.graph | frozenset(new)
        if result is not outputs[0]:
            result.graph = result.graph | frozenset(new)

    def _tuple_result(
        self, op: OpInfo, args: list[Value], dim_keyword: bool, result: Value, label: str
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
                inference=self.inference_at,
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
                grads = [i.grad for i in _tensors_in(a)]
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

    def _save(
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
    ) -> int:
        sid = new_id()
        self.saves[sid] = Save(
            sid,
            group,
            op,
            slot,
            grad_fn,
            self.loc(node, frame),
            frame.ctx,
            possible or self.uncertain > 0,
            what,
            frame.path,
            grad_from,
            joined or self.uncertain > 0 or not grad_from,
            param or (slot[6:] if slot.startswith("param:") else ""),
        )
        self.heap.live[group] = (*self.heap.live.get(group, ()), sid)
        return sid

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
        self.mutate(
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
        self, receiver: Value, name: str, node: ast.AST, frame: Frame, flag: ast.AST | None
    ) -> None:
        loc = self.loc(flag, frame) if flag is not None else None
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
    ) -> None:
        """A write by `inplace=True` (module or function): the finding goes on the keyword."""
        self.mutate(
            value,
            kind=kind,
            op=op,
            node=node,
            stmt=frame.stmt or node,
            frame=frame,
            target=value.name,
            fix="inplace-false",
            inputs=[],
            loc_override=loc,
            loc_path=loc_path,
            activation=activation,
        )

    # ------------------------------------------------------------------ events

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
    ) -> Mutation:
        grad_on = frame.grad_enabled if grad_mode is None else grad_mode
        loc = loc_override or self.loc(node, frame)
        discarded = isinstance(stmt, ast.Expr) and stmt.value is node
        mutation = Mutation(
            new_id(),
            kind,
            op,
            loc,
            frame.ctx,
            value,
            value.joined or self.uncertain > 0,
            target,
            self.loc(stmt, frame),
            fix,
            call_site=self.loc(node, frame) if loc_override else None,
            activation=activation,
            path=loc_path if loc_override else frame.path,
            call_site_path=frame.path,
            discarded=discarded,
        )
        if kind in ("inplace_module", "inplace_kwarg"):
            self.facts.inplace_flags.append(mutation)
        refusal = self._refusal(mutation, grad_on, inputs) if kind != "step" else None
        if refusal is not None:
            self.facts.refusals.append(refusal)
            if refusal.definite:
                return mutation  # torch raises here: nothing after the write runs
        leafish = value.leaf or value.view_kind == "leaf"  # a leaf, or a view of one
        if leafish and value.grad and grad_on and kind != "step":
            self.facts.leaf_writes.append(LeafWrite(mutation, definite=not value.joined))
            return mutation
        if value.detached == "data":
            # `.data` hides the write from the version counter: no error, but the saved tensor
            # changes under autograd's feet and the gradients come out silently wrong.
            for group in sorted(value.groups):
                for sid in self.heap.live.get(group, ()):
                    if sid not in self.heap.freed:
                        self._conflict(mutation, self.saves[sid], "data", None)
            return mutation
        if value.detached:
            self.facts.detached_writes.append(mutation)
        # A write through a detached alias is tracked too: whether the tensor it aliases is
        # read again decides whether cloning the alias keeps what the program computes.
        track_alias = value.grad is True or bool(value.detached)
        staled = False
        for group in sorted(value.groups):
            kept: tuple[int, ...] = ()
            for sid in self.heap.live.get(group, ()):
                saved = self.saves[sid].param
                if value.param and saved and saved != value.param:
                    kept += (sid,)  # another parameter of the module: not written
                elif sid not in self.heap.freed:
                    self.heap.stale.setdefault(sid, mutation)
                    staled = True
            self.heap.live[group] = kept
            names = self.group_names.get(group, set())
            # The written name reads the new values on purpose, except after an in-place
            # activation whose result goes elsewhere (`y = F.relu(h, inplace=True)`).
            keeps = activation and not discarded
            others = frozenset(names if keeps else names - {target or ""})
            if others and track_alias:
                pend = self.heap.pending_alias.setdefault(group, [])
                pend.append((mutation, others))
        if (
            not staled
            and grad_on
            and value.grad is True
            and value.producer
            and not value.joined
            and not value.detached
            and self.uncertain == 0
            and kind in ("augassign", "method", "setitem", "inplace_module", "inplace_kwarg")
        ):
            self.facts.safe_writes.append(mutation)
        if grad_on and (value.grad or any(i.grad for i in inputs)):
            extra: frozenset[int] = (
                frozenset().union(*(i.graph for i in inputs)) if inputs else frozenset()
            )
            value.graph = value.graph | extra
            if value.grad is False and any(i.grad for i in inputs):
                value.grad = True
        return mutation

    def _refusal(self, mutation: Mutation, grad_on: bool, inputs: list[Value]) -> Refusal | None:
        """Whether torch refuses this write at once (the Refusal kinds), and how sure."""
        value = mutation.value
        sure = not mutation.possible
        if value.inference is not None and self.inference_at is None:
            return Refusal(mutation, "inference", sure, made_in=value.inference)
        if not grad_on:
            return None
        if mutation.kind == "out":
            operands = [v for v in (value, *inputs) if v.kind == "tensor"]  # known tensors
            if any(v.grad is True for v in operands):
                # Whatever `out` aliases (a maybe-copy too), torch refuses the call itself.
                return Refusal(mutation, "out", self.uncertain == 0)
            unknown = [v for v in operands if v.grad is None]
            if unknown and _grad_from(unknown):
                return Refusal(mutation, "out", False, _grad_from(unknown))
            return None
        if (
            value.view_kind in ("multi", "no_grad")
            and not value.detached
            and value.grad is not False
        ):
            reason = "multi_view" if value.view_kind == "multi" else "no_grad_view"
            if value.grad is True:
                return Refusal(mutation, reason, sure)
            if value.grad_from:  # it raises only if this argument requires grad: say which
                return Refusal(mutation, reason, False, value.grad_from)
        return None

    def backward(self, value: Value, node: ast.AST, frame: Frame, retain: bool) -> None:
        value.grad = True  # backward() on it: it requires grad
        self.heap.no_grads = frozenset()
        loc = self.loc(node, frame)
        for sid in sorted(self._graph_of(value)):  # in the order the ops ran: deterministic
            mutation = self.heap.stale.get(sid)
            if mutation is not None and sid not in self.heap.freed:
                self._conflict(mutation, self.saves[sid], "backward", loc)
            if not retain:
                self.heap.freed.add(sid)

    def _conflict(self, mutation: Mutation, save: Save, via: str, backward_loc: Loc | None) -> None:
        every_path = not mutation.possible and mutation.ctx.descends_from(save.ctx)
        definite = not save.possible and every_path
        on_some_paths = not every_path or (save.possible and save.on_some_paths)
        self.facts.conflicts.append(
            Conflict(
                mutation,
                save,
                definite,
                via,
                backward_loc,
                "" if definite else save.grad_from,
                on_some_paths,
                () if every_path else _branches(save.ctx, mutation.ctx),
            )
        )


class UnhandledNode(Exception):
    """Strict mode: the interpreter met a syntax node it has no handler for."""

    def __init__(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", "?")
        super().__init__(f"no handler for ast.{type(node).__name__} (line {line})")


def _branches(saved_in: Ctx, written_in: Ctx) -> tuple[str, ...]:
    """The conditions of the contexts the save ran in that the write's context is not within
    (outermost first): the save happened only on the paths that took them."""
    labels: list[str] = []
    node: Ctx | None = saved_in
    while node is not None and not written_in.descends_from(node):
        if node.label is not None:
            form, condition, line = node.label
            code = _short(condition) if condition is not None else ""
            labels.append(form.format(code, f" (line {line})" if line is not None else ""))
        node = node.parent
    return tuple(reversed(labels))


def _dotted(node: ast.AST) -> str:
    """`self.betas` for an attribute of a name (up to three deep), "" for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < 3:
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return ""
    return ".".join([node.id, *reversed(parts)])


def _short(node: ast.AST, limit: int = 40) -> str:
    """The source of a condition for a message, cut short when long."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join_states(states: list[_State]) -> _State:
    """The state where paths meet: each variable joined over the paths that bound it, and
    the autograd state joined (the first path's objects are reused)."""
    env, heap = states[0]
    for other_env, other_heap in states[1:]:
        merged: dict[str, Value] = {}
        # In the order the names were bound (a set's order would depend on the hash seed,
        # and so would which name a message gives).
        for name in [*env, *(name for name in other_env if name not in env)]:
            a, b = env.get(name), other_env.get(name)
            merged[name] = join_values(a, b) if a is not None and b is not None else (a or b)  # type: ignore[assignment]
        env = merged
        if other_heap is not heap:
            heap.join(other_heap)
    return env, heap


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


_OP_TEXT = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "matmul": "@",
    "pow": "**",
    "floordiv": "//",
    "mod": "%",
}


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


def _writes_in_place(owner: ModuleModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function of another file can write in place (memoized on the node). Helpers
    of other files that cannot, or that get no tensor, are treated as unknown calls:
    interpreting every utility and model factory of a library costs more than it finds."""
    cached: bool | None = getattr(fn, "_ipl_writes", None)
    if cached is None:
        start = owner.start_of(fn) - 1
        text = "\n".join(owner.lines[fn.lineno - 1 + start : (fn.end_lineno or fn.lineno) + start])
        cached = is_candidate(text)
        fn._ipl_writes = cached  # type: ignore[union-attr]
    return cached


# `torch.LongTensor` (token ids), `BoolTensor` (masks): annotations that name an integer or
# bool tensor type; `FloatTensor` or a plain `Tensor`, a floating one.
_INTEGER_TENSOR = re.compile(
    r"\b(?:"
    + "|".join(n for n, d in _FACTS.tensor_types.items() if d not in _DTYPE_NAMES.values())
    + r")\b"
)
_FLOAT_TENSOR = re.compile(
    r"\b(?:"
    + "|".join(n for n, d in _FACTS.tensor_types.items() if d in _DTYPE_NAMES.values())
    + r"|Tensor)\b"
)


# Builtins whose result is a plain Python value whatever they are given.
_PYTHON_VALUES = frozenset(
    "len int float bool str repr isinstance issubclass hasattr callable id hash print".split()
)
_AUTOGRAD_FUNCTIONS = _FACTS.autograd_function
_HELD_ITEMS = 64  # the elements a list built by append() keeps track of
_UNROLLED_LAYERS = 32  # a ModuleList iterated in a loop is followed layer by layer up to this
_UNROLLED_STEPS = 4  # `for i in range(n)` with n this small runs each pass with its number
_CONTAINER_TYPES = frozenset(
    "tuple Tuple list List dict Dict Sequence Mapping Iterable typing.Tuple typing.List".split()
)


def _outer_type(annotation: str) -> str:
    """`Optional[tuple[Tensor, float]]` and `tuple[...] | None` -> "tuple"."""
    for prefix in ("Optional[", "typing.Optional["):
        annotation = annotation.removeprefix(prefix)
    return annotation.split("[")[0].split("|")[0].split(",")[0]


def _small_range(node: ast.expr) -> list[int] | None:
    """The numbers of `range(...)` with constant arguments, when there are a few."""
    numbers = constant_range(node)
    return list(numbers) if numbers is not None and 1 <= len(numbers) <= _UNROLLED_STEPS else None


def _set_to_none(node: ast.Call) -> bool:
    """`zero_grad()` sets gradients to None (torch 2's default) unless `set_to_none=False`."""
    flag = next((k.value for k in node.keywords if k.arg == "set_to_none"), None)
    return not (isinstance(flag, ast.Constant) and flag.value is False)


def _const_index(node: ast.expr) -> int | None:
    """`xs[2]` / `xs[-1]`: the constant position, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _const_index(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _builtin_call(name: str, args: list[Value]) -> Value | None:
    """A call of a Python builtin (the name is bound nowhere in the code): `len(x)` and
    `int(t.max())` are Python values; iterating `zip(a, b)` / `enumerate(a)` gives tuples
    of the iterables' elements. None: the usual handling."""
    if name in _PYTHON_VALUES:
        return scalar()
    if name in ("list", "tuple") and len(args) == 1 and args[0].kind == "params":
        return args[0]  # `list(model.parameters())`: the same parameters
    if name == "zip":
        return Value("zip", tensor=False, grad=None, items=tuple(args))
    if name == "enumerate" and args:
        return Value("zip", tensor=False, grad=None, items=(args[0],), origin="enumerate")
    return None


def _constant(value: object) -> Value:
    return Value("scalar", tensor=False, grad=False, const=value, has_const=True)


def _plain_value(cls: ClassInfo, attr: str, consts: dict[str, object]) -> Value:
    """`self.use_gate = use_gate` set once in __init__, unguarded: its value when the
    constructor's arguments are known; a Python value of unknown value otherwise."""
    assigned = cls.plain_values.get(attr, [])
    if len(assigned) == 1 and not assigned[0][1]:
        try:
            return _constant(evaluate(assigned[0][0], consts))
        except Undecidable:
            pass
    return scalar()


def _static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _frozen_parameter(created: ast.AST) -> bool:
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


def _grad_from(values: list[Value]) -> str:
    """The arguments an unknown requires-grad rests on ("a" or "a, w": it requires grad if
    any of them does), or "" when an unknown of them is not an argument (or too many are)."""
    unknown = [v.grad_from for v in values if v.grad is None]
    if not unknown or not all(unknown):
        return ""
    names = sorted({name for names in unknown for name in names.split(", ")})
    return ", ".join(names) if len(names) <= _NAMED_ARGUMENTS else ""


def _toggle_grad(value: Value, flag: object) -> None:
    """`requires_grad_(flag)` / `.requires_grad = flag` on a tensor: only a leaf's flag can
    change (torch raises for another's), so True makes a leaf; an unknown flag is unknown."""
    if flag is True or flag is False:
        value.grad, value.grad_assumed = flag, False
        if flag and not value.graph:
            value.leaf = True
    else:
        value.grad = None


def _parameter_grad(node: ast.Call) -> bool:
    """`nn.Parameter(data, requires_grad=False)` (or positional) makes one that does not."""
    flag = node.args[1] if len(node.args) > 1 else None
    flag = next((k.value for k in node.keywords if k.arg == "requires_grad"), flag)
    return not (isinstance(flag, ast.Constant) and flag.value is False)


def _requires_grad_flag(node: ast.Call) -> bool | None:
    """The flag of `t.requires_grad_(flag)` / `module.requires_grad_(requires_grad=flag)`:
    True when none is given, None when it is not a constant."""
    flag = node.args[0] if node.args else None
    flag = flag or next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
    if flag is None:
        return True
    return flag.value if isinstance(flag, ast.Constant) and isinstance(flag.value, bool) else None


def _annotation_text(node: ast.expr | None) -> str:
    """The names in an annotation, joined (`Optional[torch.Tensor]` -> "Optional[torch.Tensor"),
    enough to tell tensors, modules and scalars apart without ast.unparse."""
    if node is None:
        return ""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_annotation_text(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return f"{_annotation_text(node.value)}[{_annotation_text(node.slice)}"
    if isinstance(node, ast.Tuple):
        return ",".join(_annotation_text(e) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return f"{_annotation_text(node.left)}|{_annotation_text(node.right)}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _leading_index(index: ast.expr) -> bool:
    """Whether basic indexing with `index` keeps a contiguous tensor contiguous: it indexes or
    slices (step 1) the first dimension only, the rest whole (`h[0]`, `h[1:3]`, `h[None]`,
    `h[2, :]`); `h[:, :4]` or `h[::2]` may not."""
    parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    while parts and isinstance(parts[0], ast.Constant) and parts[0].value is None:
        parts.pop(0)
    if not parts:
        return True
    first, rest = parts[0], parts[1:]
    if isinstance(first, ast.Slice) and first.step is not None:
        return False
    if isinstance(first, ast.Constant) and first.value is Ellipsis:
        return not rest  # `h[...]` is all of it; `h[..., :4]` may not be
    whole_rest = all(
        _whole(p) or (isinstance(p, ast.Constant) and p.value is Ellipsis) for p in rest
    )
    return whole_rest and not isinstance(first, (ast.Starred, ast.Tuple, ast.List))


def _whole(part: ast.expr) -> bool:
    """`:` (a whole dimension) or `None` (a new one)."""
    if isinstance(part, ast.Constant) and part.value is None:
        return True
    return (
        isinstance(part, ast.Slice)
        and part.lower is None
        and part.upper is None
        and part.step is None
    )


def _mode_off(node: ast.expr) -> bool:
    """`torch.inference_mode(False)` / `(mode=False)`: the context changes nothing."""
    if not isinstance(node, ast.Call):
        return False
    given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "mode")]
    return any(isinstance(a, ast.Constant) and a.value is False for a in given)


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


def _twin(ref: ModuleRef, parent: ModuleRef | None = None, depth: int = 0) -> ModuleRef:
    """`copy.deepcopy(module)`: the same modules, each with parameters of its own (a Sequential's
    children too); the copy's hooks and attributes set after construction are not followed."""
    twin = dataclasses.replace(
        ref, params_group=new_id(), attrs={}, hooks=[], children=None, parent=parent
    )
    if ref.children is not None and depth < 8:
        twin.children = [_twin(child, twin, depth + 1) for child in ref.children]
    return twin


def _element_module(container: ModuleRef, key: object = None) -> Value:
    """An element of a ModuleList / Sequential / ModuleDict: the child at a known index or
    key (`self.stages["l1"]`, `self.blocks[-1]`), else its first child when known, else a
    module the analysis knows nothing about."""
    children = container.children or []
    if isinstance(key, str):
        named = [c for c in children if c.submodule is not None and c.submodule.name == key]
        if named:
            return Value("module", tensor=False, grad=False, module=named[0])
    elif isinstance(key, int) and -len(children) <= key < len(children):
        return Value("module", tensor=False, grad=False, module=children[key])
    if children:
        return Value("module", tensor=False, grad=False, module=children[0])
    return Value(
        "module", tensor=False, grad=False, module=ModuleRef(None, None, container.params_group)
    )


def _tensors_in(value: Value) -> list[Value]:
    """The tensors of an argument: itself, or the items of a list/tuple (torch.cat([a, b]))."""
    if value.kind == "container" and value.items:
        return [t for item in value.items for t in _tensors_in(item)]
    if value.kind == "container" and (value.graph or value.grad):
        return [Value("tensor", frozenset(), True, value.grad, graph=value.graph)]
    return [value] if value.tensorish else []


def _positive_p(sub: Submodule | None, owner: ModuleRef | None) -> bool:
    """Dropout(p) with p > 0 known: it really writes (p == 0 returns the input untouched)."""
    if sub is None:
        return False
    arg = (
        sub.call.args[0]
        if sub.call.args
        else next((k.value for k in sub.call.keywords if k.arg == "p"), None)
    )
    if arg is None:
        return True  # the default p is 0.5
    try:
        p = evaluate(arg, owner.consts if owner is not None else {})
    except Undecidable:
        return False
    return isinstance(p, (int, float)) and p > 0


def _owner(ref: ModuleRef | None) -> ModuleRef | None:
    """The nearest enclosing instance of a local class (whose __init__ built this module)."""
    while ref is not None and ref.cls is None:
        ref = ref.parent
    return ref


def _bind_consts(cls: ClassInfo, args: list[Value], kwargs: dict[str, Value]) -> dict[str, object]:
    """Constructor arguments known as constants, by __init__ parameter name, defaults included."""
    consts: dict[str, object] = {}
    for name, default in cls.init_defaults.items():
        if isinstance(default, ast.Constant):
            consts[name] = default.value
    for name, value in zip(cls.init_params, args, strict=False):
        if value.kind == "scalar" and value.has_const:
            consts[name] = value.const
        else:
            consts.pop(name, None)
    for name, value in kwargs.items():
        if value.kind == "scalar" and value.has_const:
            consts[name] = value.const
        else:
            consts.pop(name, None)
    return consts


def _init_consts(
    cls: ClassInfo, call: ast.Call | None, parent: ModuleRef | None
) -> dict[str, object]:
    """Constants of a submodule's constructor call in its owner's __init__."""
    owner = _owner(parent)
    outer = owner.consts if owner is not None else {}
    consts: dict[str, object] = {}
    for name, default in cls.init_defaults.items():
        if isinstance(default, ast.Constant):
            consts[name] = default.value
    if call is None:
        return consts
    pairs = list(zip(cls.init_params, call.args, strict=False))
    pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg]
    for name, expr in pairs:
        try:
            consts[name] = evaluate(expr, outer)
        except Undecidable:
            consts.pop(name, None)
    return consts


def _choose(options: list[Submodule], consts: dict[str, object]) -> tuple[Submodule, bool]:
    """The constructor that runs for these constants; conditional when it cannot be told."""
    if len(options) == 1:
        return options[0], False
    for option in options:
        try:
            if all(bool(evaluate(test, consts)) == polarity for test, polarity in option.guards):
                return option, False
        except Undecidable:
            return option, True
    return options[0], True


def _created(node: ast.Call, origin: str, default_dtype: str = "") -> Value:
    """A new tensor outside every graph (`torch.zeros(...)`, `x.new_empty(...)`): a leaf that
    requires grad only when the call says `requires_grad=True`; contiguous, and of the dtype
    the call names, or else the factory's (`torch.randn` makes float32)."""
    grad = _requires_grad_kw(node)
    dtype = next((_dtype_name(k.value) for k in node.keywords if k.arg == "dtype"), None)
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
_TENSOR_ANNOTATION = re.compile(r"Tensor\b")
# Method names of Python's own str, bytes, list, dict, set and tuple (`split`, `sort`, `add`).
_BUILTIN_METHODS = frozenset(
    name for kind in (str, bytes, list, dict, set, tuple) for name in dir(kind) if name[0] != "_"
)


def _layout(kind: str | None, base: bool | None) -> bool | None:
    """Whether a view is contiguous, from the table's layout of the view op and its base's:
    a transpose is not (its base taken for contiguous when not known, as tensors mostly
    are); of a transposed tensor, it may be again (`h.t().T`)."""
    if kind == "broadcasts" or (kind == "permutes" and base is not False):
        return False
    return base if kind == "keeps" else None


def _dtype_name(node: ast.expr) -> str | None:
    """`torch.float64` -> "float64"; None when not a floating dtype spelled out."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "torch":
            return _DTYPE_NAMES.get(node.attr)
    return None


def _target_dtype(name: str, node: ast.Call) -> str | None:
    """The floating dtype `.double()` / `.to(torch.float64)` / `.type(torch.float64)` asks
    for; None when the call names none (a device) or one this analysis does not follow."""
    if name in _DTYPE_METHODS:
        return _DTYPE_METHODS[name]
    if name in ("to", "type"):
        given = [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]
        for arg in given:
            found = _dtype_name(arg)
            if found is not None:
                return found
    return None


def _string_key(node: ast.expr) -> bool:
    """`d["key"]` / `d[f"layer{i}"]`: a tensor is never indexed by a string."""
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _requires_grad_kw(node: ast.Call) -> bool:
    return any(
        kw.arg == "requires_grad" and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )


def _retain(node: ast.Call) -> bool:
    return any(
        kw.arg in ("retain_graph", "create_graph")
        and not (isinstance(kw.value, ast.Constant) and not kw.value.value)
        for kw in node.keywords
    )


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _has_backward(loop: ast.stmt, mentions_training: bool = True) -> bool:
    """Whether a loop body calls backward() or step() (memoized on the node: trees are cached)."""
    cached: bool | None = getattr(loop, "_ipl_has_backward", None)
    if cached is None and not mentions_training:
        return False
    if cached is None:
        cached = any(
            isinstance(node, ast.Attribute) and node.attr in ("backward", "step")
            for stmt in getattr(loop, "body", ())
            for node in ast.walk(stmt)
        )
        loop._ipl_has_backward = cached  # type: ignore[attr-defined]
    return cached


def iter_entry_points(
    model: ModuleModel, tree: ast.Module
) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ClassInfo | None, list[ast.stmt]]]:
    """(function, owning class, statements): each function and method of a block."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt, None, stmt.body
        elif isinstance(stmt, ast.ClassDef):
            owner = model.classes.get(stmt.name)
            for sub in stmt.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield sub, owner if owner is not None and owner.node is stmt else None, sub.body


_STMT_HANDLERS = {
    getattr(ast, name[5:]): method
    for name, method in vars(Interpreter).items()
    if name.startswith("stmt_") and hasattr(ast, name[5:])
}
_EXPR_HANDLERS = {
    getattr(ast, name[5:]): method
    for name, method in vars(Interpreter).items()
    if name.startswith("expr_") and hasattr(ast, name[5:])
}
