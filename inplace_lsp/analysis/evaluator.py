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
import builtins
import functools
import math
import operator
import os
import re
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from inplace_lsp.analysis.binder import (
    CONTAINER_TYPES,
    UNROLLED_LAYERS,
    always_true,
    annotation_text,
    const_index,
    dotted,
    has_backward,
    is_static,
    leading_index,
    names_in,
    outer_type,
    root_name,
    small_range,
    string_key,
    writes_in_place,
)
from inplace_lsp.analysis.domain import (
    EITHER,
    GRAD_OFF_HELD,
    GRAD_OFF_SOME,
    UNSIZED,
    Accumulation,
    AliasRead,
    Ctx,
    Facts,
    Frame,
    Function,
    Heap,
    Hook,
    InferenceSite,
    Label,
    ModuleRef,
    Save,
    State,
    Value,
    constant,
    cover_branches,
    grad_sources,
    is_parameter_name,
    join_states,
    join_values,
    location,
    new_id,
    parameters_in,
    python_value,
    replace,
    scalar,
    short_source,
    tensors_in,
    unknown,
)
from inplace_lsp.analysis.events import HELD_ITEMS, REFUSED, Events, refreeze
from inplace_lsp.analysis.frameworks import (
    backpropagated_hook,
    hook_annotations,
    hook_call,
    python_values,
)
from inplace_lsp.analysis.knowledge import (
    Knowledge,
)
from inplace_lsp.analysis.model import (
    ClassInfo,
    ModuleModel,
    Submodule,
    Undecidable,
    evaluate,
    spelled_template,
)
from inplace_lsp.analysis.model import submodule as submodule_of
from inplace_lsp.analysis.objects import (
    INPLACE_LAYERS,
    Objects,
    element_module,
    guards_hold,
    twin_module,
)
from inplace_lsp.analysis.summaries import (
    Application,
    BackwardEvent,
    Call,
    CarryEvent,
    Event,
    FreezeEvent,
    Inputs,
    NoGradsEvent,
    Resolver,
    SaveEvent,
    Slot,
    StepEvent,
    Summary,
    SummaryCache,
    UnknownReadEvent,
    ValueEvent,
    WriteEvent,
    fingerprint,
    global_reads,
    snapshot,
)
from inplace_lsp.analysis.torch_ops import (
    ALIAS_METHODS,
    AUG_SYMBOL,
    AUTOGRAD_FUNCTIONS,
    BIN_OPS,
    BUILTIN_METHODS,
    ENABLE_GRAD_CONTEXTS,
    FACTS,
    FLOAT_TENSOR,
    INFERENCE_CONTEXTS,
    INTEGER_TENSOR,
    LAYOUT_METHODS,
    NO_GRAD_CONTEXTS,
    OP_TEXT,
    SCALAR_ATTRS,
    SCALAR_METHODS,
    SET_GRAD_CONTEXTS,
    TENSOR_ANNOTATION,
    TENSOR_ATTR_VIEWS,
    TorchOps,
    builtin_call,
    created_tensor,
    mode_off,
    parameter_grad,
    requires_grad_flag,
    retains_graph,
    sets_to_none,
    spelled_call,
    target_dtype,
    view_layout,
)
from inplace_lsp.analysis.units import Cell

_CONTAINER_MODULES = ("torch.nn.Sequential", "torch.nn.ModuleList")
_TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter"})
_NEVER_NONE = frozenset({"module", "object", "optimizer", "params", "container"})
GRAD_FN = "<grad_fn>"  # what `t.grad_fn` is where t is known to have one
BUILTINS = frozenset(dir(builtins))
# Calls that give back their module argument, or a wrapper that runs it and shares its
# parameters (the analysis follows the module itself).
_RETURNS_ITS_MODULE = frozenset(
    [
        *(
            f"torch.nn.utils.{where}{name}"
            for where in ("", "parametrizations.")
            for name in ("spectral_norm", "weight_norm")
        ),
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.compile",
    ]
)
# A call this many calls deep below the entry point is not followed (and said so): each
# function is summarised once per argument facts, so depth costs little, but a chain of
# wrappers this long is not worth following.
MAX_CALL_DEPTH = 16
# Functions of other files (a library's base classes: transformers' PreTrainedModel) are
# followed this many calls deep; below that, a call of another file's function is unknown, as
# a function of a package outside the workspace is (checking attention backends and
# initialisation hooks inside post_init() tells nothing about the file being analysed).
LIBRARY_DEPTH = 2
# A function whose run takes longer than this many seconds of its thread's CPU time (not wall
# time: a busy machine does not make it fire) is not analysed, and said so; the rest of its
# file is (a generated 20,000-line function took a minute). The slowest of the 17,760 entry
# points of the known-good corpora, diffusers' Kandinsky6SRVAE.forward, takes 0.84 s.
FUNCTION_TIME_LIMIT_S = 1.5


class TimeLimit(Exception):  # noqa: N818 - a limit reached, not an error of the code
    """A function's run took longer than the time limit (Interpreter.time_limit)."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, limit: float) -> None:
        super().__init__(fn.name)
        self.fn = fn
        self.limit = limit


# Strict mode (the test suite sets INPLACE_LSP_STRICT=1): a syntax node without a handler
# raises UnhandledNode instead of being skipped, so unknown syntax cannot hide silently.
STRICT = os.environ.get("INPLACE_LSP_STRICT") == "1"


class Interpreter(Events):
    """Runs one entry point abstractly and collects Facts."""

    def __init__(
        self,
        model: ModuleModel,
        knowledge: Knowledge,
        summaries: SummaryCache | None = None,
        recorder: list[set[Cell] | None] | None = None,
    ) -> None:
        self.model = model
        self.kb = knowledge
        # The parts, which take the interpreter through narrow interfaces (OpEvents,
        # ObjectHost). They hold it and it holds them: a reference cycle, freed by the
        # collector together with the heap's module trees, which are cycles anyway
        # (measured: no change in time or peak memory on 60 transformers models).
        self.ops = TorchOps(self)
        self.objects = Objects(self)
        # How a summary's paths are taken here (held like the parts: the same cycle).
        self.resolver = Resolver(self.objects.module_attr, self.global_value, self.frozen)
        self.saves: dict[int, Save] = {}
        self.facts = Facts()
        self.functions_made: set[int] = set()
        self.heap = Heap()
        self.escaped: set[int] = set()
        self.call_stack: list[ast.AST] = []
        self.group_names: dict[int, set[str]] = {}
        self.uncertain = 0  # > 0 while running code that may not run (a conditional submodule)
        # The `with torch.set_grad_enabled(flag):` of unknown flag being run, innermost last.
        self.grad_modes: list[str] = []
        # `model.Generator = Generator` at module level, on a class or module the code names:
        # what reading that attribute gives from then on.
        self.symbol_attrs: dict[str, Value] = {}
        self.later_pass = 0  # > 0 in a second pass of a loop of unknown length (Events)
        self.flag_log: list[list[tuple[ModuleRef, str, bool | str | None]]] = []
        # Per branch body being run: the parameters whose `requires_grad` it set, with the
        # flag each had before (put back for the next body, joined where the paths meet).
        self.grad_log: list[list[tuple[Value, bool | None]]] = []
        self.work = 0
        # The summaries of the functions called (shared by the entry points of a document),
        # those applied here, and the summaries being made (innermost last).
        self.summaries = summaries if summaries is not None else SummaryCache()
        # What the analysis reads of the document's definitions (model.Recorded's box): a
        # summary made here or reused here counts what its run read.
        self.recorder: list[set[Cell] | None] = recorder if recorder is not None else [None]
        # The summaries applied by the entry point's own run, outside any summary (the
        # `__init__` that built `self`, the entry function's), where they are kept, and what
        # their runs read: the recorder has only what the entry's run read itself (an
        # entry's findings hold while that is unchanged and those summaries hold,
        # engine.DocumentAnalysis._cut_off).
        self.tops: list[tuple[Hashable, Summary]] = []
        self.top_cells: set[Cell] = set()
        # The module-level variables (while module-level code runs, the functions it calls
        # read them), and how summaries take paths in the current world.
        self.module_frame: Frame | None = None
        self._applied: set[int] = set()
        self.inputs: Inputs | None = None
        self.events: list[Event] = []
        self.runs: list[Inputs] = []
        self.frozen_groups: set[int] = set()
        self.group_owners: dict[int, ModuleRef] = {}
        # Functions not followed where they are called: (line, column) of the def -> its name
        # and why (Summary.unfollowed).
        self.unsummarized: dict[tuple[int, int], tuple[str, float | None]] = {}
        # The functions of this document followed to their end from here (no call inside
        # cut short by a limit): a visible call site, whose facts win over assumptions.
        self.followed: set[str] = set()
        # The tensors each running autograd.Function forward passed to ctx.save_for_backward.
        self._function_saves: list[list[Value]] = []
        self.cut = 0  # calls not followed because of a limit
        # Inside torch.inference_mode(): where the block or decorator is (None: outside).
        self.inference_at: InferenceSite | None = None
        self.too_deep_line: int | None = None  # the statement Python's stack could not take
        self.library_calls = 0  # functions of other files on the call stack
        self._checking: set[int] = set()  # suspect summaries being checked (still_holds)
        # The longest a function's run may take, in seconds of this thread's CPU time (None:
        # no limit), and a clock per running summary, innermost last: [function, started,
        # deadline]. A callee that ran out of time gives its callers back the time it took.
        self.time_limit: float | None = None
        self._clocks: list[list[Any]] = []
        self.entry: ast.AST | None = None  # the entry point run_function runs
        self.entry_object: ModuleRef | None = None

    # ------------------------------------------------------------------ entry points

    def run_function(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        owner: ClassInfo | None,
    ) -> Facts:
        """One function or method as an entry point: called with what is known of its
        arguments when nothing calls it (its summary, made here or by another entry point
        with the same facts, applied to a caller that then lets its graph escape)."""
        # transformers' PreTrainedModel runs a model's `_init_weights` under torch.no_grad()
        # (`_initialize_weights`): its in-place initialisation records nothing.
        grad_on = not (fn.name == "_init_weights" and self._pretrained_model(owner))
        frame = Frame({}, start, grad_enabled=grad_on, ctx=Ctx())
        args, kwargs = self._entry_arguments(fn, start, owner)
        self.entry = fn
        self.entry_object = args[0].module if owner is not None and args else None
        result = self.inline(fn, start, args, kwargs, fn, frame)
        # The one stated assumption (DESIGN.md): a backward follows an nn.Module's forward
        # (and a hook whose result a framework backpropagates); other code is judged on what
        # it does.
        assumed = owner is not None and (
            owner.is_forward(fn.name) or backpropagated_hook(self.model, owner, fn.name)
        )
        self._finish([result], "" if assumed else f"`{self.model.def_key(fn) or fn.name}`")
        cover_branches(self.facts.conflicts)
        return self.facts

    def _pretrained_model(self, owner: ClassInfo | None) -> bool:
        """Whether the class derives from transformers' PreTrainedModel (through the bases the
        code and the workspace define, or by name where a base is not read)."""
        seen: set[int] = set()
        cls = owner
        while cls is not None and id(cls) not in seen:
            seen.add(id(cls))
            if any(base.rsplit(".", 1)[-1] == "PreTrainedModel" for base in cls.bases):
                return True
            cls = (cls.owner or self.model).base_of(cls)
        return False

    def _entry_arguments(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, start: int, owner: ClassInfo | None
    ) -> tuple[list[Value], dict[str, Value]]:
        """What an entry point's parameters are: `self` a new instance of its class; the
        inputs of an nn.Module's `forward` tensors that require grad (the one stated
        assumption, DESIGN.md); another method's or a function's, unknown (what rests on them
        is a Warning that names them), unless a default or an annotation says more."""
        arguments = fn.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: list[ast.expr | None] = [None] * (
            len(positional) - len(arguments.defaults)
        ) + list(arguments.defaults)
        is_method = owner is not None and not any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
            for d in fn.decorator_list
        )
        in_module = owner is not None and owner.is_forward(fn.name)
        # A hook the framework calls (a Trainer's compute_loss): what it does not pass keeps
        # its default (`return_outputs=False`).
        # and a parameter the override leaves unannotated is what the framework's own
        # method says it is (`model: torch.nn.Module`).
        called = hook_call(self.model, owner, fn.name) if owner is not None else None
        annotations = hook_annotations(self.model, owner, fn.name) if owner is not None else {}
        frame = Frame({}, start, grad_enabled=True, ctx=Ctx())

        def value(index: int, arg: ast.arg, default: ast.expr | None) -> Value:
            if called is not None and default is not None:
                by_position, by_name = called
                if index >= by_position and arg.arg not in by_name:
                    return self._default_value(default, frame)
            if arg.annotation is None and arg.arg in annotations:
                arg = ast.arg(arg.arg, annotations[arg.arg])
            return self._param_value(arg, default, assumed=in_module)

        args: list[Value] = []
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            if i == 0 and is_method and owner is not None and fn.name == "__init__":
                # `__init__` itself runs on the new object as Python makes it: bare (built
                # first, it would run twice, the second time on what the first had built).
                args.append(self.objects.bare_object(owner, owner.name, [], {}, frame))
                continue
            if i == 0 and is_method and owner is not None:
                # An object of the class as its __init__ leaves it (its models, optimizers
                # and tensors), from arguments the analysis does not know.
                make = self.objects.construct_module if owner.is_module else self.objects.instance
                args.append(make(owner, owner.name, [], {}, fn, frame))
                continue
            args.append(value(i - is_method, arg, default))
        kwargs = {
            arg.arg: value(len(positional), arg, default)
            for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        }
        for rest in (arguments.vararg, arguments.kwarg):
            if rest is not None:  # `*args`, `**kwargs`: what they hold is not known
                kwargs[rest.arg] = Value("container", tensor=False, grad=None)
        return args, kwargs

    def run_module_code(self, pieces: list[tuple[list[ast.stmt], int]]) -> Facts:
        """Module-level statements, in document order, as one program: (statements, start).
        Their variables are the globals the functions they call read."""
        frame = self.module_frame = Frame({}, 1, grad_enabled=True, ctx=Ctx())
        self.entry_object = None
        self.heap.graded = False  # a script starts with no gradient on any parameter
        for body, start in pieces:
            frame.start = start
            self.exec_body(body, frame)
        # Nothing runs after a script ends: what its graphs hold is no finding of its own.
        cover_branches(self.facts.conflicts)
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

    def _param_value(self, arg: ast.arg, default: ast.expr | None, assumed: bool) -> Value:
        annotation = annotation_text(arg.annotation)
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
        tensor_annotation = TENSOR_ANNOTATION.search(annotation) is not None
        if tensor_annotation:
            scalar_annotation = False
            if INTEGER_TENSOR.search(annotation) and not FLOAT_TENSOR.search(annotation):
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
        if outer_type(annotation) in CONTAINER_TYPES:
            # `features: list[Tensor]`: a container whose items may be tensors (of unknown
            # grad: the assumption is about tensor inputs); `features[0] = ...` rebinds an item.
            item = Value(
                "tensor" if tensor_annotation else "unknown",
                groups=frozenset({new_id()}),
                tensor=True if tensor_annotation else None,
                grad_assumed=True,
                name=arg.arg,
                grad_from=arg.arg,
                origin=f"argument `{arg.arg}`",
            )
            return Value("container", tensor=False, grad=None, name=arg.arg, element=item)
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
            kind_assumed=bool(tensor) and not tensor_annotation,
        )

    def _decorated_no_grad(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether the function runs with grad mode off: under a no_grad decorator, or as an
        operator's kernel (`@torch.library.custom_op(...)`, or registered by one), which
        runs below autograd."""
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            qual = self.model.qualify(target)
            if qual in NO_GRAD_CONTEXTS and not mode_off(dec):
                return True
            if qual in FACTS.kernels and isinstance(dec, ast.Call):
                return True
        return self.model.functions.get(fn.name) is fn and fn.name in self.model.kernels

    def _decorated_inference(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, start: int
    ) -> InferenceSite | None:
        """An `@torch.inference_mode()` decorator's site (None: none, or mode=False)."""
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if self.model.qualify(target) in INFERENCE_CONTEXTS and not mode_off(dec):
                return location(dec, start), self.model.path
        return None

    # ------------------------------------------------------------------ locations

    # ------------------------------------------------------------------ statements

    def exec_body(self, body: list[ast.stmt], frame: Frame) -> None:
        for stmt in body:
            if frame.dead:
                return  # unreachable: after a return, raise, break or continue
            frame.stmt = stmt
            if self._clocks and time.thread_time() > self._clocks[-1][2]:
                raise TimeLimit(self._clocks[-1][0], self.time_limit or 0.0)
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
        call = stmt.value
        if (
            isinstance(call, ast.Call)
            and call.args
            and isinstance(call.args[0], ast.Constant)
            and self.model.qualify(call.func) in SET_GRAD_CONTEXTS
        ):
            # `torch.set_grad_enabled(False)` called alone sets grad mode for what follows
            # (as a `with` item, only for its body).
            frame.grad_enabled = bool(call.args[0].value)
            return
        self.eval(stmt.value, frame)

    def stmt_Assign(self, stmt: ast.Assign, frame: Frame) -> None:
        value = self.eval(stmt.value, frame)
        for target in stmt.targets:
            if isinstance(target, ast.Attribute) and target.attr in ("grad", "_grad"):
                self.heap.graded = True  # (`shared_param._grad = param.grad`: A3C)
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
                self._note_accumulation(target.id, stmt, frame, rhs)
                frame.env[target.id] = replace(result, name=target.id)
                return
            self._note_accumulation(target.id, stmt, frame, rhs)
            self.inplace_binop(current, rhs, opname, symbol, stmt, frame, target.id)
            return
        base = self.eval(
            target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else target, frame
        )
        if isinstance(target, ast.Attribute):
            current = self.attribute(base, target.attr, target, frame)
            if current.tensorish and current.kind == "tensor":
                self.inplace_binop(current, rhs, opname, symbol, stmt, frame, ast.unparse(target))
            elif base.module is not None:
                # `self.mem_cntr += 1`: the attribute is rebound; how often this runs is not
                # known, so neither is the number (but `self.training |= self.export` gives the
                # same however often it runs: `|` and `&` are idempotent).
                result = self.binop(opname, current, rhs, stmt, frame)
                if result.kind == "scalar" and not (opname in ("or", "and") and result.has_const):
                    result = scalar()
                self.set_attr(base.module, target.attr, result)
            return
        position = const_index(target.slice) if isinstance(target, ast.Subscript) else None
        if (
            isinstance(target, ast.Subscript)
            and base.keys is not None
            and base.items is not None
            and isinstance(target.slice, ast.Constant)
            and target.slice.value in base.keys
        ):
            # `outputs["out"] += 1` on a dict a forward returned: the tensor it holds
            element = base.items[base.keys.index(target.slice.value)]
            if element.tensorish and element.kind == "tensor":
                self.inplace_binop(
                    element, rhs, opname, symbol, stmt, frame, ast.unparse(target), fixable=False
                )
            return
        if base.kind == "container" and (base.items or base.element) and base.keys is None:
            # `outs[-1] += 0.1`, `laterals[i - 1] += up`: the list's element itself is written.
            if position is None:
                element = self.element_of(base, target, frame)
            else:
                try:
                    element = base.items[position] if base.items else base.element  # type: ignore[assignment]
                except IndexError:
                    return
            if element is None:
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
                view, rhs, opname, symbol, stmt, frame, root_name(target) or ast.unparse(target)
            )

    def _note_accumulation(self, name: str, stmt: ast.AugAssign, frame: Frame, rhs: Value) -> None:
        """`total += value` inside a loop, on a name bound before the loop (IPL004 decides
        whether it keeps graphs alive)."""
        if frame.loop_depth and any(name in names for names in frame.loop_names):
            loc = self.loc(stmt, frame)
            trains = bool(frame.loop_has_backward and frame.loop_has_backward[-1])
            text = ast.unparse(stmt.value)
            acc = Accumulation(name, loc, loc, text, rhs, trains)
            self.facts.accumulations.append(acc)
            # The innermost loop the name was bound before: the iterations it spans.
            level = max(i for i, names in enumerate(frame.loop_names) if name in names)
            frame.loop_accumulations[level].append(acc)

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
            self.ops.record_saves(op, [current, rhs], current, stmt, frame)

    def stmt_If(self, stmt: ast.If, frame: Frame) -> None:
        test = self.eval(stmt.test, frame)
        truth = self._truth(test, stmt.test, frame)
        if truth is not None:  # `if self.use_gate:` with the constructor's flag known
            self.exec_body(stmt.body if truth else stmt.orelse, frame)
            return
        where = self._where(stmt, frame)
        labels: list[Label | None] = [
            ("`if {}:`{} is true", stmt.test, where),
            ("`if {}:`{} is false", stmt.test, where),
        ]
        self.branch([stmt.body, stmt.orelse], frame, labels, _grad_guard(stmt.test, frame))

    def branch(
        self,
        bodies: list[list[ast.stmt]],
        frame: Frame,
        labels: list[Label | None] | None = None,
        refined: list[dict[str, Value]] | None = None,
    ) -> None:
        """Runs each body from the same state and joins the paths that reach the end; a
        path that ended (`return`, `raise`, `break`, `continue`) is not joined. When one body
        alone goes on, the code after the branch runs in its context: what that body saved is
        saved on every path that reaches it."""
        base_env, base_heap, base_ctx = frame.env, self.heap, frame.ctx
        results: list[State] = []
        ctxs: list[Ctx] = []
        ended: set[str] = set()
        flags: list[dict[tuple[int, str], tuple[ModuleRef, str, bool | str | None]]] = []
        # Parameters frozen one at a time: frozen after the branch only where every path
        # that goes on froze them (`if freeze: for p in m.parameters(): ...`).
        base_frozen = frozenset(self.frozen_groups)
        frozen: list[frozenset[int]] = []
        split = new_id()
        grads: list[dict[int, tuple[Value, bool | None]]] = []
        # A check that raises (`if len(Si) != N: raise ValueError(...)`): every path that goes
        # on, and so every backward() after it, took the other body, which runs in the
        # context of the code around it (what it does is not "on some paths").
        raising = [_raises(body) for body in bodies]
        checked = len(bodies) > 1 and raising.count(False) == 1
        for i, body in enumerate(bodies):
            known = refined[i] if refined else {}  # what the condition says on this path
            label = labels[i] if labels and i < len(labels) else None
            own = base_ctx if checked and not raising[i] else None
            if not body:  # `if` without `else`: that path changes nothing, and is only read
                results.append(({**base_env, **known} if known else base_env, base_heap))
                # (its own path of the branch, for the code after it where the other
                # path ended: `if x.requires_grad: return ...`)
                ctxs.append(
                    own or Ctx(base_ctx, label, split, i, len(bodies))
                    if len(bodies) > 1
                    else base_ctx
                )
                flags.append({})
                grads.append({})
                frozen.append(base_frozen)
                continue
            frame.env = {**base_env, **known}
            self.frozen_groups = set(base_frozen)
            self.heap = base_heap.copy()
            frame.ctx = own or Ctx(base_ctx, label, split, i, len(bodies))
            self.flag_log.append([])
            self.grad_log.append([])
            try:
                self.exec_body(body, frame)
            finally:
                changed = self._undo_flags(self.flag_log.pop())
                toggled = _undo_grads(self.grad_log.pop())
            if frame.dead not in ("raise", REFUSED):  # its flags reach the caller or loop
                flags.append(changed)
                grads.append(toggled)
                frozen.append(frozenset(self.frozen_groups))
            if frame.dead:
                ended.add(frame.dead)
                frame.dead = ""
                continue
            results.append((frame.env, self.heap))
            ctxs.append(frame.ctx)
        self._join_flags(flags)
        self._join_grads(grads)
        self.frozen_groups = set(base_frozen)
        joined = frozenset.intersection(*frozen) if frozen else base_frozen
        if joined - base_frozen:
            self.freeze(joined - base_frozen)
        if not results:  # every body ended the path
            frame.env, self.heap, frame.ctx = base_env, base_heap, base_ctx
            frame.dead = ended.pop() if len(ended) == 1 else "mixed"
            return
        frame.ctx = ctxs[0] if len(ctxs) == 1 else base_ctx
        frame.env, self.heap = join_states(results, ctxs)

    @staticmethod
    def _undo_flags(
        log: list[tuple[ModuleRef, str, bool | str | None]],
    ) -> dict[tuple[int, str], tuple[ModuleRef, str, bool | str | None]]:
        """The train/eval and frozen flags a branch body left set, each put back as it was
        before the body ran (for the next body)."""
        changed = {(id(ref), flag): (ref, flag, getattr(ref, flag)) for ref, flag, _ in log}
        for ref, flag, before in reversed(log):
            setattr(ref, flag, before)
        return changed

    def _join_flags(
        self, bodies: list[dict[tuple[int, str], tuple[ModuleRef, str, bool | str | None]]]
    ) -> None:
        """Where branch paths meet, a module in training mode on some of them and in eval
        mode on others is in either (`if not self.training:` then runs both ways); one frozen
        on some of them only is frozen on some paths (its parameters may require grad)."""
        touched = {key: entry[:2] for changed in bodies for key, entry in changed.items()}
        for key, (ref, flag) in touched.items():
            before = getattr(ref, flag)
            modes: set[bool | None] = set()
            last: bool | str | None = before
            for changed in bodies:
                setattr(ref, flag, changed[key][2] if key in changed else before)
                modes.add(ref.training if flag == "training_flag" else ref.params_grad)
                if key in changed:
                    last = changed[key][2]
            setattr(ref, flag, before)
            self.set_module_flag(ref, flag, last if len(modes) == 1 else EITHER)
            if flag == "frozen":
                refreeze(ref)

    def _join_grads(self, bodies: list[dict[int, tuple[Value, bool | None]]]) -> None:
        """Where branch paths meet, a parameter frozen on some of them and not on others
        may or may not require grad (`if freeze: emb.weight.requires_grad = False`)."""
        touched = {key: value for changed in bodies for key, (value, _) in changed.items()}
        for key, value in touched.items():
            outcomes = {changed[key][1] if key in changed else value.grad for changed in bodies}
            if self.grad_log:
                self.grad_log[-1].append((value, value.grad))  # (an outer branch's too)
            value.grad = outcomes.pop() if len(outcomes) == 1 else None
            value.grad_assumed = False

    def stmt_For(self, stmt: ast.For | ast.AsyncFor, frame: Frame) -> None:
        iterable = self.eval(stmt.iter, frame)
        listed = iterable
        numbered_layers = iterable.kind == "zip" and iterable.origin == "enumerate"
        zipped = iterable.kind == "zip" and not numbered_layers and bool(iterable.items)
        if (numbered_layers or zipped) and iterable.items:
            # `for i, block in enumerate(self.blocks)`, `for layer, shape in zip(self.layers,
            # self.shapes)`
            listed = iterable.items[0]
        children = listed.module.children if listed.module is not None else None
        if (
            children
            and len(children) <= UNROLLED_LAYERS
            and listed.module is not None
            and self.objects.list_kind(listed.module)
        ):
            # `for layer in self.layers: h = layer(h)`: each layer in its order, once, as
            # torch runs them (two `nn.ELU(inplace=True)` in a row: the second writes the
            # output the first saved).
            layers = [Value("module", tensor=False, grad=False, module=c) for c in children]
            if zipped and iterable.items:
                # Each layer with the item of the other iterables at its position (or any
                # of their items, where they are not known one by one).
                others = [
                    o.items if o.items is not None and len(o.items) == len(layers) else None
                    for o in iterable.items[1:]
                ]
                anything = [self.element_of(o, stmt.iter, frame) for o in iterable.items[1:]]
                layers = [
                    Value(
                        "container",
                        tensor=False,
                        grad=False,
                        items=(
                            layer,
                            *(
                                held[i] if held is not None else any_item
                                for held, any_item in zip(others, anything, strict=True)
                            ),
                        ),
                    )
                    for i, layer in enumerate(layers)
                ]
            elif listed is not iterable:
                # (the numbers of the layers, where the list holds as many as it says)
                uncounted = listed.module.uncounted
                layers = [
                    Value(
                        "container",
                        tensor=False,
                        grad=False,
                        items=(scalar() if uncounted else constant(i), layer),
                    )
                    for i, layer in enumerate(layers)
                ]
            heads: list[Callable[[], object]] = [
                functools.partial(self.assign, stmt.target, layer, frame, stmt) for layer in layers
            ]
            self.loop(stmt, frame, heads)
            return
        entries = self._loop_entries(stmt.iter, iterable, frame)
        if entries is not None:
            # `for k in losses.keys(): losses[k] = losses[k].mean()` on a dict whose keys are
            # known: each key in turn, so `losses[k]` is that key's value.
            by_key: list[Callable[[], object]] = [
                functools.partial(self.assign, stmt.target, entry, frame, stmt) for entry in entries
            ]
            self.loop(stmt, frame, by_key)
            return
        numbers = small_range(stmt.iter)
        if numbers is None and isinstance(iterable.const, range):
            # `for i in range(self.start_level, self.end_level + 1)` with levels known from
            # the constructor call: a few passes, each with its number, as for constants.
            numbers = small_range(iterable.const)
        steps: list[object] | None = None if numbers is None else list(numbers)
        if (
            steps is None
            and iterable.has_const
            and isinstance(iterable.const, (list, tuple))
            and len(iterable.const) <= UNROLLED_LAYERS
        ):
            steps = list(iterable.const)  # `for name in self.order` with a constant list
        elif (
            steps is None
            and iterable.items is not None
            and iterable.keys is None
            and 0 < len(iterable.items) <= UNROLLED_LAYERS
            and all(item.has_const for item in iterable.items)
        ):
            steps = [item.const for item in iterable.items]  # a list of constants
        if (
            steps is None
            and iterable.kind == "container"
            and iterable.items
            # (in another file's code, a long one is any of its modules: that code is read
            # for what it does to the caller's objects, not module by module)
            and (self.model.path is None or len(iterable.items) <= UNROLLED_LAYERS)
            and all(
                item.module is not None or (item.items and item.items[-1].module is not None)
                for item in iterable.items
            )
        ):
            # `for m in self.modules():` each module in turn, so `isinstance(m, nn.ReLU)`
            # decides what the body does to it.
            each: list[Callable[[], object]] = [
                functools.partial(self.assign, stmt.target, item, frame, stmt)
                for item in iterable.items
            ]
            self.loop(stmt, frame, each)
            return
        if steps is not None and isinstance(stmt.target, ast.Name):
            # `for step in range(3)`: each pass with its number, so `if step == 0: break`
            # is decided as Python decides it.
            numbered: list[Callable[[], object]] = [
                functools.partial(self.assign, stmt.target, constant(i), frame, stmt) for i in steps
            ]
            self.loop(stmt, frame, numbered)
            return
        element = self.element_of(iterable, stmt.iter, frame)
        self.loop(stmt, frame, lambda: self.assign(stmt.target, element, frame, stmt))

    stmt_AsyncFor = stmt_For

    def _dict_method(
        self, receiver: Value, name: str, args: list[Value], kwargs: dict[str, Value]
    ) -> Value | None:
        """`losses.values()` (and keys(), items()): what the dict holds, its graph with it;
        `cfg.copy()`, `cfg.get("type", d)`, `cfg.setdefault("inplace", True)` and
        `cfg.pop("type")` on a dict whose keys are known (mmcv's `act_cfg` read into
        `getattr(nn, cfg.pop("type"))(**cfg)`); None for any other call."""
        keys, items = receiver.keys, receiver.items
        if name in ("keys", "values", "items") and not args and not kwargs:
            entries = _dict_entries(receiver, name)
            return Value(
                "container",
                tensor=False,
                grad=receiver.grad,
                graph=receiver.graph,
                items=tuple(entries) if entries is not None else None,
                element=receiver.element if name == "values" else None,
            )
        if keys is None or items is None or kwargs:
            return None
        if name == "copy" and not args:
            return _dict_value(list(items), list(keys), receiver.graph)
        if name not in ("get", "setdefault", "pop") or not 1 <= len(args) <= 2:
            return None
        if name != "get" and self._stand_in(receiver) is not None:
            return None  # (a change to a caller's dict: not followed key by key)
        key = args[0].const if args[0].has_const else None
        if not isinstance(key, str):
            return None
        default = args[1] if len(args) == 2 else constant(None)
        if key not in keys:
            if name == "setdefault":
                self.set_key(receiver, key, default, frozenset(self._graph_of(default)))
            return default if len(args) == 2 or name != "pop" else None
        found = items[keys.index(key)]
        if name == "pop":
            at = keys.index(key)
            receiver.keys = (*keys[:at], *keys[at + 1 :])
            receiver.items = (*items[:at], *items[at + 1 :])
        return found

    def _loop_entries(self, node: ast.expr, iterable: Value, frame: Frame) -> list[Value] | None:
        """What a loop over a dict with known keys binds, entry by entry (`for k in d`,
        `d.keys()`, `d.values()`, `d.items()`); None for any other loop."""
        view = ""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("keys", "values", "items")
            and not node.args
            and not node.keywords
        ):
            view, iterable = node.func.attr, self.eval(node.func.value, frame)
        entries = _dict_entries(iterable, view)
        return entries if entries and len(entries) <= UNROLLED_LAYERS else None

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
        endless = isinstance(stmt, ast.While) and always_true(stmt.test)
        before: State = (dict(frame.env), self.heap.copy())  # no pass at all
        base_ctx = frame.ctx
        frame.loop_depth += 1
        frame.loop_names.append(set(frame.env))
        frame.loop_has_backward.append(
            self.model.mentions_training and self._flag(stmt, lambda: has_backward(stmt))
        )
        frame.loop_resets.append(set())
        frame.loop_accumulations.append([])
        frame.breaks.append([])
        completed = True
        refused = False
        for i, each in enumerate(heads):
            each()
            frame.continues.append([])
            # The second of two passes stands for any later one: what only it meets rests
            # on the loop running again (not so for one pass per known element).
            later = i > 0 and not isinstance(head, list)
            self.later_pass += later
            try:
                self.exec_body(stmt.body, frame)
            finally:
                self.later_pass -= later
            going_on = frame.continues.pop() + ([] if frame.dead else [(frame.env, self.heap)])
            ended = frame.dead
            frame.ctx, frame.dead = base_ctx, ""
            if not going_on:  # every path through the body returned, raised or broke out
                completed = False
                # torch refused a write on every path of this pass: the loop runs its body
                # (as everywhere here), so only a `break` before it leaves the loop.
                refused = ended == REFUSED
                break
            frame.env, self.heap = join_states(going_on)
            if not isinstance(head, list):
                # The number of passes is not known: a number the body changes (a step
                # counter) is any number from the second pass on.
                frame.env = _widened(frame.env, before[0])
        breaks = frame.breaks.pop()
        frame.loop_names.pop()
        frame.loop_has_backward.pop()
        resets = frame.loop_resets.pop()
        for acc in frame.loop_accumulations.pop():
            # `running_loss = 0` in the same loop (after each optimizer step): the graphs it
            # holds are those of one window of iterations, which backward() has freed of
            # their saved tensors; they do not grow with the loop.
            acc.reset = acc.reset or acc.name in resets
        frame.loop_depth -= 1
        exits: list[State] = []
        if not endless and not refused:  # the condition ends it (or the iterable is empty)
            if not completed:
                frame.env, self.heap = before
            self.exec_body(stmt.orelse, frame)
            if not frame.dead:
                exits.append((frame.env, self.heap))
            frame.dead = ""
        exits += breaks
        if exits:
            frame.env, self.heap = join_states(exits)
        elif refused:
            frame.dead = REFUSED
        else:
            frame.dead = "loop"  # `while True` without a break

    def stmt_With(self, stmt: ast.With | ast.AsyncWith, frame: Frame) -> None:
        saved = frame.grad_enabled
        saved_inference = self.inference_at
        unknown_mode = 0
        for item in stmt.items:
            expr = item.context_expr
            func = expr.func if isinstance(expr, ast.Call) else expr
            qual = self.model.qualify(func)
            held = self._held_context(expr, frame) if qual is None else None
            if held == "off":
                frame.grad_enabled = False  # `ctx = torch.no_grad()` ... `with ctx:`
            elif held == "either" and frame.grad_enabled:
                # `with torch.no_grad() if frozen else nullcontext():` grad mode is on in
                # some runs only, as with `torch.set_grad_enabled(flag)` of unknown flag.
                unknown_mode += 1
                line = self.loc(expr, frame)[0]
                self.grad_modes.append(f"`{short_source(expr)}` (line {line})")
            elif qual in NO_GRAD_CONTEXTS:
                if mode_off(expr):
                    continue
                frame.grad_enabled = False
                if qual in INFERENCE_CONTEXTS and self.inference_at is None:
                    self.inference_at = (self.loc(expr, frame), frame.path)
            elif qual in ENABLE_GRAD_CONTEXTS:
                frame.grad_enabled = True
            elif qual in SET_GRAD_CONTEXTS and isinstance(expr, ast.Call) and expr.args:
                mode = self.eval(expr.args[0], frame)
                if mode.has_const:
                    frame.grad_enabled = bool(mode.const)
                elif frame.grad_enabled:
                    # `with torch.set_grad_enabled(phase == "train"):` grad mode is on in
                    # some runs only: what the body saves, and its writes, rest on it.
                    unknown_mode += 1
                    line = self.loc(expr, frame)[0]
                    self.grad_modes.append(f"`{ast.unparse(expr)}` (line {line})")
            else:
                value = self.eval(expr, frame)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, value, frame, stmt)
        self.uncertain += unknown_mode
        try:
            self.exec_body(stmt.body, frame)
        finally:
            self.uncertain -= unknown_mode
            del self.grad_modes[len(self.grad_modes) - unknown_mode :]
        frame.grad_enabled = saved
        self.inference_at = saved_inference

    stmt_AsyncWith = stmt_With

    def _held_context(self, expr: ast.expr, frame: Frame) -> str | None:
        """What a context manager not spelled as a call of a grad mode does to it: "off"
        (a name bound to `torch.no_grad()`), "either" (`torch.no_grad() if c else
        nullcontext()`, or such a name), None (nothing the analysis knows of)."""
        if isinstance(expr, ast.IfExp):
            arms = {self._grad_off(expr.body, frame), self._grad_off(expr.orelse, frame)}
            return "off" if arms == {True} else "either" if True in arms else None
        if isinstance(expr, ast.Name) and expr.id in frame.env:
            held = frame.env[expr.id].origin
            return "off" if held == GRAD_OFF_HELD else "either" if held == GRAD_OFF_SOME else None
        return None

    def _grad_off(self, expr: ast.expr, frame: Frame) -> bool:
        """Whether a context expression turns grad mode off (`torch.no_grad()`)."""
        if isinstance(expr, ast.Name) and expr.id in frame.env:
            return frame.env[expr.id].origin == GRAD_OFF_HELD
        func = expr.func if isinstance(expr, ast.Call) else expr
        return self.model.qualify(func) in NO_GRAD_CONTEXTS and not mode_off(expr)

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
        (formatted only when a message needs it, see branch_conditions)."""
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

    def stmt_FunctionDef(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, frame: Frame) -> None:
        """A def inside a function: a function value (a hook it registers, a closure it
        calls). What it reads of the function around it is not known to it."""
        function = self.function_value(stmt, frame.start, self.model)
        frame.env[stmt.name] = Value("function", tensor=False, grad=False, function=function)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, stmt: ast.ClassDef, frame: Frame) -> None:
        info = self.model.classes.get(stmt.name)
        if info is not None and info.node is stmt:
            # the class of the file (a symbol) from here on; a function's own class too
            frame.env.pop(stmt.name, None)
            return
        layer = self._layer_subclass(stmt, frame)
        frame.env[stmt.name] = layer if layer is not None else unknown()

    def _layer_subclass(self, stmt: ast.ClassDef, frame: Frame) -> Value | None:
        """A class a function makes at run time from the torch layer it is given, with no
        forward of its own (second.pytorch's `change_default_args(eps=1e-3)(nn.BatchNorm1d)`:
        `class DefaultArgLayer(layer_class)` whose `__init__` passes its arguments on with
        other defaults): that layer. Not for a layer that takes `inplace` (a default changed
        there would decide what it overwrites)."""
        if len(stmt.bases) != 1 or stmt.keywords:
            return None
        if any(
            isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef))
            and sub.name not in ("__init__", "extra_repr")
            for sub in stmt.body
        ):
            return None
        base = self.eval(stmt.bases[0], frame)
        qual = base.qualname if base.kind == "symbol" else None
        if qual is None or self.kb.module(qual) is None or qual in INPLACE_LAYERS:
            return None
        return base

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
            if frame.loop_depth and (value.grad is False or value.detached):
                # A name bound before a loop, rebound in its body to a value without a graph:
                # whatever it accumulated is let go (IPL004).
                for names, resets in zip(frame.loop_names, frame.loop_resets, strict=True):
                    if target.id in names:
                        resets.add(target.id)
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
                flag = value.const if value.has_const else None
                if self.grad_log and base.param:
                    # A module's parameter, on one path of a branch (`if freeze:`): it outlives
                    # the branch, whose other path may leave it as it was (branch joins them).
                    self.grad_log[-1].append((base, base.grad))
                self.set_grad(base, flag if isinstance(flag, bool) else None, toggled=True)
                return
            self.escaped |= self._graph_of(value)
            if base.kind == "symbol" and base.qualname and frame is self.module_frame:
                self.symbol_attrs[f"{base.qualname}.{target.attr}"] = value
            if base.module is not None and not self._own_setattr(base, target.attr, value, frame):
                self.set_attr(base.module, target.attr, value)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value, frame)
            index = self.eval(target.slice, frame)
            # `pipe.text_encoder....weight[i] = v`: a write into what its name says is a
            # parameter of an object not read (a Warning that says so)
            named_parameter = (
                base.kind == "unknown"
                and isinstance(target.value, ast.Attribute)
                and is_parameter_name(target.value.attr)
            )
            tensor = base.tensorish and base.kind == "tensor" and not string_key(target.slice)
            if tensor or named_parameter:
                if base.kind_assumed and isinstance(target.slice, (ast.Name, ast.Constant)):
                    # `x[i] = conv(x[i])` on a forward input: as likely a list of feature
                    # maps as a tensor; what rests on that says so.
                    base = replace(
                        base, joined=True, maybe=f"`{base.name}` is a tensor (not a list)"
                    )
                self.mutate(
                    base,
                    kind="setitem",
                    op=f"{ast.unparse(target)} = ...",
                    node=target,
                    stmt=stmt,
                    frame=frame,
                    target=root_name(target),
                    fix="clone-setitem" if tensor else None,
                    inputs=[value],
                )
                op = self.kb.op("Tensor.__setitem__")
                if op is not None and tensor:
                    self.ops.record_saves(op, [base, value], base, target, frame)
            else:
                graph = frozenset(self._graph_of(value))
                self.escaped |= graph
                key = index.const if index.has_const else None
                if base.kind == "container" and base.keys is not None and isinstance(key, str):
                    # `kwargs["dimensions"] = 2` on a dict of known keys (`losses[k] = ...`
                    # with `k` one of them, in a loop over its keys)
                    self.set_key(base, key, value, graph)
                elif base.kind == "container":
                    # `u[i] = actor(o)`: the list now holds it (`torch.cat(u)` reaches its graph).
                    # (at a position the code computes: `memory[i] = m` with `i` known)
                    position = key if type(key) is int else const_index(target.slice)
                    self.set_item(base, position, value, graph)
        elif STRICT:
            raise UnhandledNode(target)

    def _own_setattr(self, base: Value, attr: str, value: Value, frame: Frame) -> bool:
        """`obj.name = value` on an object whose class of the code defines `__setattr__`
        without handing the name on to the usual one (a `Bunch(dict)` storing it as an
        item): that method runs instead, and the object gets no such attribute. Whether it
        did."""
        ref = base.module
        if ref is None or ref.cls is None or ref.is_module:
            return False
        found = self.model.find_method(ref.cls, "__setattr__")
        if found is None or _delegates_setattr(found[1]):
            return False
        owner = found[0].owner or self.model
        method = found[1]
        node = frame.stmt or method
        self.inline(
            method, owner.start_of(method), [base, constant(attr), value], {}, node, frame, owner
        )
        return True

    def unpack(self, value: Value, count: int, frame: Frame) -> list[Value]:
        if value.items is not None:
            return list(value.items)
        if value.kind == "tensor":
            # Unpacking a tensor (or the result of chunk/split/unbind) yields views of it.
            return [self.ops.unbound(value, frame, name=None) for _ in range(count)]
        if value.module is not None and self.objects.list_kind(value.module):
            # `for attn, ff in self.layers:` over a ModuleList of ModuleLists: the children,
            # each at its position.
            return [element_module(value.module, i) for i in range(count)]
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
        value: Value | None = self.summaries.constants.get(node)
        if value is None:
            value = Value("scalar", tensor=False, grad=False, const=node.value, has_const=True)
            self.summaries.constants[node] = value
        return value

    def expr_JoinedStr(self, node: ast.JoinedStr, frame: Frame) -> Value:
        """`f"fc{i}"`: the string it spells where each part is a known number or string
        (`self.add_module(f"fc{i}", fc)` in a loop whose passes the analysis numbers)."""
        text: list[str] | None = []
        for part in node.values:
            value = self.eval(part, frame)
            if text is None:
                continue
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text.append(part.value)
            elif (
                isinstance(part, ast.FormattedValue)
                and part.conversion == -1
                and part.format_spec is None
                and value.has_const
                and type(value.const) in (int, str)
            ):
                text.append(str(value.const))
            else:
                text = None
        return constant("".join(text)) if text is not None else scalar()

    def expr_FormattedValue(self, node: ast.FormattedValue, frame: Frame) -> Value:
        value = self.eval(node.value, frame)  # `f"{h.shape}"`: read, never written
        return value if value.has_const else scalar()

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
        local = dict.get(self.model.functions, node.id)
        if local is not None and node.id not in self.model.imports:
            # A function of this file as a value (called, or passed as a hook).
            function = self.function_value(local, self.model.start_of(local), self.model)
            qual = node.id
            return Value("symbol", tensor=False, grad=False, qualname=qual, function=function)
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
        if frame is not self.module_frame and self.model.path is None and node.id not in BUILTINS:
            found = self.global_value(node.id)  # a module-level variable (a script's `model`)
            if found is not None:
                return found
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
                if name not in others:
                    keep.append((mutation, others))
                    continue
                mutation.aliases_read.append(name)
                written = mutation.value
                if written.partial and not written.maybe and not value.partial:
                    # The whole tensor a part of it was written into through a slice of it
                    # (`tile = out[..., i:j]; tile.copy_(...)`, then `out`): how a tensor is
                    # filled, its reader wants the new values. (Through what may be a copy,
                    # `.reshape()` of a slice, the writer may have meant one: said.)
                    continue
                read = AliasRead(mutation, name, self.loc(node, frame))
                if mutation.activation:
                    self.facts.activation_reads.append(read)
                elif not written.detached:  # a detached alias is IPL005's
                    self.facts.alias_reads.append(read)
            self.heap.pending_alias[group] = keep

    def expr_Attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value  # type: ignore[assignment]
        if isinstance(root, ast.Name) and root.id not in frame.env:
            qual = self.model.qualify(node)
            if qual is not None:
                held = self.symbol_attrs.get(qual) or self._class_attribute(qual)
                if held is not None:
                    return held
                if qual in _MATH_CONSTANTS:
                    return constant(getattr(math, qual[5:]))  # `2 * math.pi`: a float
                return Value("symbol", tensor=False, grad=False, qualname=qual)
        base = self.eval(node.value, frame)
        return self.attribute(base, node.attr, node, frame)

    def _class_attribute(self, qual: str) -> Value | None:
        """`Flow.table` where the body of a class of the code binds `table = {...}`: what
        that binds, where it is a constant, a name (`Conv2d = Conv2d` in a namespace class),
        a lambda or a literal of those; None otherwise."""
        owner_name, _, attr = qual.rpartition(".")
        cls = self.model.lookup_class(owner_name) if owner_name else None
        if cls is None or attr in cls.methods:
            return None
        for stmt in cls.node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target, value = stmt.target, stmt.value
            else:
                continue
            if not (isinstance(target, ast.Name) and target.id == attr):
                continue
            if not _plain_class_value(value):
                return None
            model = cls.owner or self.model
            frame = Frame({}, model.start_of(cls.node), True, Ctx(), path=model.path)
            outer, self.model = self.model, model
            try:
                return self.eval(value, frame)
            finally:
                self.model = outer
        return None

    def attribute(self, base: Value, attr: str, node: ast.AST, frame: Frame) -> Value:
        if base.kind == "symbol" and base.qualname:
            spelled = f"{base.qualname}.{attr}"
            assigned = self.symbol_attrs.get(spelled)
            if assigned is not None:
                return assigned
            return Value("symbol", tensor=False, grad=False, qualname=spelled)
        if base.module is not None:
            return self.objects.module_attr(base.module, attr)
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
                return self.ops.view(
                    base, frame, contiguous=view_layout(FACTS.view_attrs[attr], base.contiguous)
                )
            if attr == "grad":
                return Value("tensor", frozenset({new_id()}), True, False, origin=".grad")
            if attr == "requires_grad" and base.kind == "tensor" and base.grad is not None:
                # `if x.requires_grad:` where it is known: the other branch does not run
                return constant(bool(base.grad))
            if attr == "grad_fn" and base.kind == "tensor" and not base.joined:
                # `if K.grad_fn is not None:`: None for a leaf or a tensor outside every
                # graph; a node for one an op made from what requires grad
                if base.grad is False or base.leaf:
                    return constant(None)
                if base.grad is True and not base.grad_assumed:
                    return constant(GRAD_FN)
            if attr in SCALAR_ATTRS:
                return scalar()
        if base.kind == "scalar":
            return python_value()  # `args.lr`, `np_array.shape`, `env.observation_space`
        # An attribute of something not known (`self.betas` of a plain class): what rests on
        # whether it requires grad names it.
        return Value("unknown", frozenset({new_id()}), None, None, grad_from=dotted(node))

    def expr_Subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        namespace = _namespace_of(node.value, frame)
        if namespace is not None:
            # `backbone.__dict__[params["arch"]]`, `vars(models)[name]`: a factory by name
            # is the attribute the key names, where the key is known.
            key = self.eval(node.slice, frame)
            if isinstance(key.const, str):
                found = self._getattr([self.eval(namespace, frame), key], None)
                if found is not None:
                    return found
            return unknown()
        base = self.eval(node.value, frame)
        return self.subscript(base, node, frame)

    def subscript(self, base: Value, node: ast.Subscript, frame: Frame) -> Value:
        index = self.eval(node.slice, frame)
        if base.kind == "scalar":
            return scalar()  # `x.shape[-1]`, `sizes[0]`: a number, never a tensor
        if base.keys is not None:
            # A dict: by its key (`outputs["loss"]`), else one of its values.
            if index.has_const and index.const in base.keys and base.items is not None:
                return base.items[base.keys.index(index.const)]
            return (
                self.element_of(replace(base, keys=None), node, frame) if base.items else unknown()
            )
        position = const_index(node.slice)
        if position is None and index.has_const and type(index.const) is int:
            position = index.const  # `outs[i]` with `i` known (`for i in range(3)`)
        if base.items is not None and position is not None:
            try:
                return base.items[position]
            except IndexError:
                return unknown()
        if (
            base.kind == "container"
            and (base.items or base.element)
            and not isinstance(node.slice, ast.Slice)
        ):
            # `self.q_nets[q_i]` in a loop: one of the items (a loop over all of them sees
            # each optimizer's parameters and each network's saves).
            return self.element_of(base, node, frame)
        if base.module is not None:
            key = index.const if index.has_const else position
            return element_module(base.module, key)
        if base.tensorish and base.kind == "tensor" and string_key(node.slice):
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
            return self.ops.view(
                base,
                frame,
                partial=True,
                pieces=False,  # `h.chunk(2)[0]`: one piece
                contiguous=base.contiguous if leading_index(node.slice) else None,
            )
        # An item of a container or of an unknown: whether it requires grad rests on what
        # the base's rests on (`cls_probs[i]` of an argument `cls_probs`), which says so.
        grad_from = base.grad_from if base.grad is None else ""
        if base.kind == "container":
            return Value(
                "unknown",
                frozenset({new_id()}),
                None,
                base.grad,
                graph=base.graph,
                grad_from=grad_from,
            )
        # (an item of what an unknown call returned, `losses["main"]` of `compute_losses(out)`,
        # may hold any graph its arguments reached)
        return Value(
            "unknown", frozenset({new_id()}), None, None, graph=base.graph, grad_from=grad_from
        )

    def expr_Tuple(self, node: ast.Tuple | ast.List | ast.Set, frame: Frame) -> Value:
        made = _list_value(
            tuple(self.eval(e.value if isinstance(e, ast.Starred) else e, frame) for e in node.elts)
        )
        if isinstance(node, ast.Set) or any(isinstance(e, ast.Starred) for e in node.elts):
            made.origin = UNSIZED  # (`len()` of it is not the number of its items)
        return made

    expr_List = expr_Tuple

    def expr_Dict(self, node: ast.Dict, frame: Frame) -> Value:
        values = [self.eval(v, frame) for v in node.values]
        for k in node.keys:
            if k is not None:
                self.eval(k, frame)
        graph: frozenset[int] = (
            frozenset().union(*(v.graph for v in values)) if values else frozenset()
        )
        constant_keys = all(isinstance(k, ast.Constant) for k in node.keys)
        keys: list[object] = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        return _dict_value(values, keys if constant_keys else None, graph)

    def expr_IfExp(self, node: ast.IfExp, frame: Frame) -> Value:
        test = self.eval(node.test, frame)
        truth = self._truth(test, node.test, frame)
        if truth is not None:
            return self.eval(node.body if truth else node.orelse, frame)
        return join_values(self.eval(node.body, frame), self.eval(node.orelse, frame))

    def expr_BinOp(self, node: ast.BinOp, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binop(BIN_OPS.get(type(node.op), "add"), left, right, node, frame)

    def binop(self, opname: str, left: Value, right: Value, node: ast.AST, frame: Frame) -> Value:
        if left.kind == right.kind == "params" and opname == "add":
            # `list(body.parameters()) + list(critic.parameters())`: both models' parameters.
            return Value("params", left.groups | right.groups, tensor=False, grad=True)
        if opname == "add" and "params" in (left.kind, right.kind):
            # `trainable = []; trainable += list(model.parameters())`, `[log_alpha] + ...`:
            # a list of parameters (of known items, each a parameter or a leaf).
            other = right if left.kind == "params" else left
            if other.kind == "container" and other.items is not None and other.keys is None:
                if all(item.leaf or item.kind == "params" for item in other.items):
                    groups = self.objects.stepped_groups(left) | self.objects.stepped_groups(right)
                    return Value("params", groups, tensor=False, grad=True)
        if left.kind != "tensor" and right.kind != "tensor":
            if left.kind == "scalar" and right.kind == "scalar":
                if (
                    opname in ("and", "or", "xor")
                    and type(left.const) is bool
                    and type(right.const) is bool
                ):
                    # `self.training |= self.export` of known flags: the flag it gives
                    a, b = left.const, right.const
                    folded = a & b if opname == "and" else a | b if opname == "or" else a ^ b
                    return constant(folded)
                folded_int = _int_arithmetic(opname, left, right)
                return scalar() if folded_int is None else constant(folded_int)
            kinds = {left.kind, right.kind}
            if "container" in kinds and kinds <= {"container", "scalar"}:
                # `clipfracs + [x]`, `[None] * n`: a list, whatever it holds.
                items = (
                    (*left.items, *right.items)
                    if opname == "add" and left.items is not None and right.items is not None
                    else _repeated(opname, left, right)
                )
                grad = True if (left.grad or right.grad) else None
                return Value(
                    "container",
                    tensor=False,
                    grad=grad,
                    items=items,
                    graph=left.graph | right.graph,
                )
            grad = True if (left.grad or right.grad) else None
            return Value(
                "unknown",
                frozenset({new_id()}),
                None,
                grad,
                graph=left.graph | right.graph,
                grad_from=grad_sources([left, right]) if grad is None else "",
            )
        if left.kind == "tensor":
            op = self.kb.op(f"Tensor.__{opname}__")
            return self.ops.apply_op(
                op, f"`{opname}`", [left, right], node, frame, describe=OP_TEXT.get(opname, opname)
            )
        op = self.kb.op(f"Tensor.__r{opname}__")
        return self.ops.apply_op(
            op, f"`{opname}`", [right, left], node, frame, describe=OP_TEXT.get(opname, opname)
        )

    def expr_UnaryOp(self, node: ast.UnaryOp, frame: Frame) -> Value:
        operand = self.eval(node.operand, frame)
        if operand.tensorish and isinstance(node.op, ast.USub):
            return self.ops.apply_op(
                self.kb.op("Tensor.__neg__"), "neg", [operand], node, frame, describe="-"
            )
        if operand.tensorish:
            return self.ops.derived([operand])
        if operand.has_const and isinstance(node.op, ast.Not):
            return constant(not operand.const)
        number = operand.const if operand.has_const else None
        if isinstance(number, (int, float)) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return constant(-number if isinstance(node.op, ast.USub) else number)  # `-1`
        return scalar()

    def expr_Compare(self, node: ast.Compare, frame: Frame) -> Value:
        values = [self.eval(node.left, frame), *(self.eval(c, frame) for c in node.comparators)]
        if (
            len(values) == 2
            and isinstance(node.ops[0], (ast.Is, ast.IsNot))
            and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value is None
        ):
            # `self.bn is not None`: a module, an object or a tensor the code made is not
            # None (a parameter's default None is a constant, decided as Python decides it).
            subject = values[0]
            made = subject.kind == "tensor" and not subject.origin.startswith("argument")
            if (subject.kind in _NEVER_NONE or made) and not subject.joined:
                # (a tensor an op made; an argument taken for one may still be None)
                return constant(isinstance(node.ops[0], ast.IsNot))
            if not values[0].has_const:
                return scalar()
        if any(v.kind == "tensor" for v in values):
            return Value("tensor", frozenset({new_id()}), True, False)
        same = self._same_storage(node, frame)
        if same is not None:
            return constant(same)
        if len(values) == 2 and all(v.has_const for v in values):
            left, right = values[0].const, values[1].const
            try:
                return constant(
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
        deciding = not isinstance(node.op, ast.And)  # (True decides `or`, False decides `and`)
        if all(_boolean(v) for v in node.values) and any(
            v.has_const and bool(v.const) == deciding for v in values
        ):
            # `K.grad_fn is not None or value.grad_fn is not None` with one side known true:
            # a bool whichever the other is
            return constant(deciding)
        result = values[0]
        for v in values[1:]:
            result = join_values(result, v)
        return result

    def expr_Lambda(self, node: ast.Lambda, frame: Frame) -> Value:
        """A lambda: a function value, as a def returning its expression (what it reads of
        the code around it is not known to it, as for a def inside a function)."""
        fn = self.summaries.lambdas.get(node)  # one per lambda: its summaries are kept by it
        if fn is None:
            body = ast.copy_location(ast.Return(node.body), node.body)
            fn = ast.copy_location(
                ast.FunctionDef(
                    name="<lambda>", args=node.args, body=[body], decorator_list=[], returns=None
                ),
                node,
            )
            self.summaries.lambdas[node] = fn
        function = self.function_value(fn, frame.start, self.model)
        return Value("function", tensor=False, grad=False, function=function)

    def expr_ListComp(
        self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, frame: Frame
    ) -> Value:
        first_iter = self.eval(node.generators[0].iter, frame)
        mapped = self._mapped(node, first_iter, frame)
        if mapped is not None:
            return mapped
        inner = dict(frame.env)
        for at, gen in enumerate(node.generators):
            it = first_iter if at == 0 else self.eval(gen.iter, frame)
            element = self.element_of(it, gen.iter, frame, gathered=True)
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
        # Each element comes from the same code: a write into one of them (`outs[i] += y`)
        # is a write into a tensor made as every element was.
        element = replace(elt, joined=first.joined) if elt is not first else elt
        return Value(
            "container",
            tensor=False,
            grad=elt.grad,
            graph=frozenset(self._graph_of(first) | self._graph_of(elt)),
            items=None,
            element=element if not isinstance(node, ast.DictComp) else None,
        )

    def _mapped(self, node: ast.expr, iterable: Value, frame: Frame) -> Value | None:
        """`[torch.mean(x) for x in losses]` over a list of known items (a few): the list of
        each item's result, in order (a loss list zipped with its names keeps its places)."""
        if not isinstance(node, (ast.ListComp, ast.GeneratorExp)) or len(node.generators) != 1:
            return None
        gen = node.generators[0]
        if gen.ifs or gen.is_async or not isinstance(gen.target, (ast.Name, ast.Tuple)):
            return None
        items = _iterated(iterable)
        if items is None or not 0 < len(items) <= _MAPPED_ITEMS:
            return None
        saved_env = frame.env
        results: list[Value] = []
        try:
            for item in items:
                frame.env = dict(saved_env)
                self.assign(gen.target, item, frame, frame.stmt or ast.Pass())
                results.append(self.eval(node.elt, frame))
        finally:
            frame.env = saved_env
        return _list_value(tuple(results))

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

    def element_of(
        self, iterable: Value, node: ast.expr, frame: Frame, gathered: bool = False
    ) -> Value:
        """An element of what a loop or a comprehension iterates (`gathered`: a comprehension,
        whose results are taken together, `sum(o.pow(2).mean() for o in outs)`)."""
        if iterable.keys is not None:
            return python_value()  # iterating a dict gives its keys
        element = iterable.element
        if element is not None:
            if (
                gathered
                and iterable.items is None
                and element.tensorish
                and not iterable.graph <= element.graph
            ):
                # (what was put in it since, `pathtd[i] = ...` in a callee, is in its graph
                # and in no element the analysis holds: the elements together carry it)
                return replace(element, graph=element.graph | iterable.graph)
            return element
        if iterable.kind == "zip" and iterable.items is not None:
            items = tuple(self.element_of(item, node, frame) for item in iterable.items)
            if iterable.origin == "enumerate":
                items = (scalar(), *items)
            return Value("container", tensor=False, grad=None, items=items)
        if iterable.kind == "params":
            # parameters() of a frozen module: no grad
            frozen = bool(iterable.groups) and iterable.groups <= self.frozen_groups
            grad = False if frozen else iterable.grad  # (None: frozen on some paths only)
            parameter = Value("tensor", iterable.groups, True, grad, leaf=True, origin="parameter")
            if iterable.origin == "named":
                return Value("container", tensor=False, grad=grad, items=(scalar(), parameter))
            return parameter
        if iterable.items:
            result = iterable.items[0]
            for item in iterable.items[1:]:
                result = join_values(result, item)
            return result
        if iterable.module is not None:
            return element_module(iterable.module)
        if iterable.kind == "tensor":
            return self.ops.unbound(iterable, frame)
        if iterable.kind == "container":
            return Value(
                "unknown", frozenset({new_id()}), None, iterable.grad, graph=iterable.graph
            )
        # Data loaders, ranges, zip(...): data, not parameters.
        return Value("unknown", frozenset({new_id()}), None, False)

    # ------------------------------------------------------------------ calls

    def expr_Call(self, node: ast.Call, frame: Frame) -> Value:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
            and "super" not in frame.env
        ):
            return self._super_call(func.attr, node, frame)
        if isinstance(func, ast.Attribute):
            mark = new_id() if func.attr == "detach" else 0
            receiver = self._receiver(func, frame)
            if receiver is not None and receiver.kind != "symbol":
                result = self.method_call(receiver, func.attr, node, frame)
                if (
                    mark
                    and result.detached == "detach"
                    and self._made_here(func.value, receiver, mark)
                ):
                    # `t.clone().detach()`: the only handle on a tensor just made; a write
                    # through it changes nothing another name reads.
                    result = replace(result, detached="fresh")
                return result
        callee = self.eval(func, frame)
        args, kwargs = self.arguments(node, frame)
        called = self._call_of(callee, args, kwargs, node, frame)
        if called is not None:
            return called
        if callee.kind == "optimizer":
            return unknown()
        if callee.kind == "scalar":
            return python_value()
        if isinstance(func, ast.Name) and func.id == "isinstance" and "isinstance" not in frame.env:
            if len(node.args) == 2 and not kwargs:
                decided = self._type_test(func.id, args[0], node.args[1], frame)
                if decided is not None:
                    return constant(decided)  # `isinstance(options, str)` of a known value
            return self._isinstance(args)
        if (
            isinstance(func, ast.Name)
            and func.id == "dict"
            and "dict" not in frame.env
            and not node.args
            and all(k.arg for k in node.keywords)
        ):
            # `dict(type="ReLU", inplace=True)`: a dict of those keys
            graph = frozenset().union(*(v.graph for v in kwargs.values()))
            return _dict_value(list(kwargs.values()), list(kwargs), graph)
        if (
            isinstance(func, ast.Name)
            and func.id == "dict"
            and "dict" not in frame.env
            and len(args) == 1
            and not kwargs
        ):
            zipped = _zipped_dict(args[0])
            if zipped is not None:
                return zipped
        if (
            isinstance(func, ast.Name)
            and func.id == "hasattr"
            and func.id not in frame.env
            and len(node.args) == 2
            and not kwargs
        ):
            decided = self._type_test(func.id, args[0], node.args[1], frame)
            if decided is not None:
                return constant(decided)
        if isinstance(func, ast.Name) and func.id == "getattr" and "getattr" not in frame.env:
            found = self._getattr(args, node)
            if found is not None:
                return found
        if (
            isinstance(func, ast.Name)
            and func.id == "eval"
            and "eval" not in frame.env
            and len(args) == 1
            and isinstance(args[0].const, str)
        ):
            # `eval("Encoder{}".format(kind))` of a known string: the expression it names.
            try:
                expression = ast.parse(args[0].const.strip(), mode="eval").body
            except SyntaxError:
                return unknown()
            if isinstance(expression, (ast.Name, ast.Attribute)):
                return self.eval(expression, frame)
            return unknown()
        if isinstance(func, ast.Name) and func.id not in frame.env and not kwargs:
            builtin = builtin_call(func.id, args)
            if builtin is not None:
                return builtin
        if isinstance(func, ast.Name) and func.id in BUILTINS and func.id not in frame.env:
            return self.unknown_call(args, kwargs, builtin=True)  # `print(x)`: nothing kept
        return self._not_followed(callee, args, kwargs, node, frame)

    def call_value(
        self,
        callee: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        called = self._call_of(callee, args, kwargs, node, frame)
        if called is not None:
            return called
        return self._not_followed(callee, args, kwargs, node, frame)

    def _not_followed(
        self,
        callee: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        """A call of a value the analysis cannot follow: it may keep its output
        (unknown_callee), unless it is None, or what calling None gave (`norm_layer(planes)`
        with the default `norm_layer=None` of an object built from defaults): no run calls
        None (TypeError)."""
        if (callee.has_const and callee.const is None) or callee.origin == _CALLED_NONE:
            return replace(self.unknown_call(args, kwargs), origin=_CALLED_NONE)
        return self.unknown_callee(args, kwargs, node, frame)

    def _call_of(
        self,
        callee: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value | None:
        """A call of a module, a function of the code or a known symbol (one of several,
        where the callee is one of them); None for any other callee."""
        if callee.module is not None:
            return self.objects.module_call(callee.module, args, node, frame, kwargs)
        if callee.function is not None:
            return self.call_function(callee.function, args, kwargs, node, frame)
        if callee.kind == "symbol" and callee.qualname and callee.bound is not None:
            # `norm_layer(dim)` of `partial(nn.LayerNorm, eps=1e-6)`: the class called with
            # the bound arguments first (the call as written, for what reads its keywords).
            bound, bound_args, bound_kwargs = callee.bound
            merged = ast.copy_location(
                ast.Call(
                    func=bound.args[0],
                    args=[*bound.args[1:], *node.args],
                    keywords=[*bound.keywords, *node.keywords],
                ),
                node,
            )
            return self.symbol_call(
                callee.qualname, [*bound_args, *args], {**bound_kwargs, **kwargs}, merged, frame
            )
        if callee.kind == "symbol" and callee.qualname:
            return self.symbol_call(callee.qualname, args, kwargs, node, frame)
        if callee.kind == "symbol" and callee.items:
            return self._call_one_of(callee.items, args, kwargs, node, frame)
        return None

    def call_function(
        self,
        function: Function,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        """A call of a function of the code held as a value; a method read off an object
        (`self.calc_loss = self.calc_loss_a`) gets the object as its first argument."""
        if function.bound is not None:
            kind = "module" if function.bound.is_module else "object"
            this = Value(kind, tensor=False, grad=False, module=function.bound)
            args = [this, *args]
        return self.inline(function.node, function.start, args, kwargs, node, frame, function.model)

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
        split = new_id()  # (one run calls one of them)
        for i, choice in enumerate(choices):
            self.heap = base_heap.copy()
            frame.ctx = Ctx(
                base_ctx,
                ("`{}` is `" + (choice.qualname or "") + "`{}", node.func, None),
                split,
                i,
                len(choices),
            )
            if choice.function is not None:
                results.append(self.call_function(choice.function, args, kwargs, node, frame))
            else:
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

    def _getattr(self, args: list[Value], node: ast.Call | None) -> Value | None:
        """`getattr(obj, "name")` of a module or an object is `obj.name`; so is
        `getattr(obj, "name", default)` where the object surely has it (an attribute its
        code set, a dataclass field), and `getattr(self.rnn, f"bias_hh_l{i}")` where every
        name the f-string can spell is a parameter of a torch.nn layer. None: not known."""
        if len(args) not in (2, 3):
            return None
        ref = args[0].module
        name = args[1].const
        spelled = node.args[1] if node is not None and len(node.args) > 1 else None
        if (
            ref is not None
            and len(args) == 2
            and spelled is not None
            and not isinstance(spelled, ast.Constant)
            and not (isinstance(name, str) and self._has_attr(ref, name))
        ):
            # A spelled name (`f"layer{i}"`), of the family `setattr` made in `__init__`
            # (even where the analysis knows `i`: it holds the family, not each attribute).
            found = (
                self.objects.layer_parameter(ref, spelled)
                if isinstance(spelled, ast.JoinedStr)
                else None
            )
            if found is None:
                found = self._spelled_submodule(ref, spelled)
            if found is not None or not isinstance(name, str):
                return found
        if not isinstance(name, str):
            return None
        if args[0].kind == "symbol" and args[0].qualname and len(args) == 2:
            # `getattr(nn, "Conv{}d".format(dims))`: the name it spells in that module
            return Value("symbol", tensor=False, grad=False, qualname=f"{args[0].qualname}.{name}")
        if ref is not None and (len(args) == 2 or self._has_attr(ref, name)):
            return self.objects.module_attr(ref, name)
        return None

    def _spelled_submodule(self, ref: ModuleRef, spelled: ast.expr) -> Value | None:
        """`getattr(self, f"layer{i}")` (or `"layer%d" % i`, `"layer{}".format(i)`): where
        every submodule whose name the pattern can spell is built by the same constructor
        (`self.layer0`, `self.layer1`: each an nn.Linear), one of them; None otherwise."""
        pattern = _spelling(spelled)
        cls = ref.cls
        if pattern is None or cls is None:
            return None
        names = [name for name in cls.submodules if pattern.fullmatch(name)]
        built_by = {cls.submodules[n].qualname for n in names}
        if len(built_by) != 1 or None in built_by:
            return None
        found = self.objects.module_attr(ref, names[0])
        return found if found.module is not None else None

    def _has_attr(self, ref: ModuleRef, name: str) -> bool:
        """Whether the code set this attribute on the object (on the caller's object, for
        the stand-in of an argument)."""
        if name in ref.assigned and name in ref.attributes():
            return True
        for inputs in reversed(self.runs):
            real = inputs.real.get(id(ref))
            if isinstance(real, ModuleRef):
                return self._has_attr(real, name)
        return False

    def _isinstance(self, args: list[Value]) -> Value:
        """`isinstance(m, nn.ReLU)` of a module, decided by its class (and its bases);
        `isinstance(x, torch.Tensor)` of a tensor or of a Python value."""
        if len(args) != 2:
            return scalar()
        wanted = args[1].items if args[1].items is not None else (args[1],)
        if not all(w.kind == "symbol" and w.qualname for w in wanted):
            return scalar()
        names = {w.qualname for w in wanted}
        if args[0].module is None:
            subject = args[0]
            tensor = bool(names & _TENSOR_TYPES)
            if subject.kind == "tensor" and not subject.joined and names <= _TENSOR_TYPES:
                return constant(True)
            if subject.kind == "scalar" and tensor and not subject.has_const:
                return constant(False)  # a Python value (a NumPy array, a list)
            return scalar()
        ref = args[0].module
        if ref.qualname in names or (ref.qualname is not None and ref.cls is None):
            return constant(ref.qualname in names)
        seen: set[int] = set()
        todo = [ref.cls] if ref.cls is not None else []
        while todo:
            cls = todo.pop()
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            owner = cls.owner or self.model
            for base in cls.bases:
                if base in names or base == "torch.nn.Module" and "torch.nn.Module" in names:
                    return constant(True)
                found = owner.lookup_class(base)
                if found is not None:
                    todo.append(found)
                elif base.startswith("torch.") or "." not in base:
                    continue
                else:
                    return scalar()  # a base the analysis cannot read
        return constant(False)

    def _super_call(self, name: str, node: ast.Call, frame: Frame) -> Value:
        """`super().forward(x)`, `super().__init__(...)`: the method of the base of the class
        whose method runs here, on the same object."""
        args, kwargs = self.arguments(node, frame)
        fn = self.call_stack[-1] if self.call_stack else None
        key = self.model.def_key(fn) if fn is not None else ""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or "." not in key:
            return self.unknown_call(args, kwargs)
        cls = dict.get(self.model.classes, key.split(".")[0])
        params = [*fn.args.posonlyargs, *fn.args.args]
        this = frame.env.get(params[0].arg) if params else None
        base = self.model.base_of(cls) if cls is not None else None
        found = self.model.find_method(base, name) if base is not None else None
        if found is None and this is not None and this.module is not None and name == "forward":
            layer = self.objects.torch_layer(this.module)
            if layer is not None and not kwargs:  # `super().forward(x)` of an nn.Conv2d
                return self.ops.layer_call(layer, args, node, frame)
        if found is None and this is not None and this.module is not None and name == "__init__":
            children = self._listed_children(this.module, args)
            if children is not None:
                # `class Block(nn.Sequential): ... super().__init__(ResidualAdd(...), ...)`
                # (or an OrderedDict of them): the layers it runs, in order.
                for child in children:
                    self.add_child(this.module, child)
                return constant(None)
        if found is None or this is None:
            return self.unknown_call(args, kwargs)
        owner = found[0].owner or self.model
        method = found[1]
        return self.inline(
            method, owner.start_of(method), [this, *args], kwargs, node, frame, owner
        )

    def _same_storage(self, node: ast.Compare, frame: Frame) -> bool | None:
        """`query.data_ptr() == key.data_ptr() == value.data_ptr()` (fairseq's self-attention
        test): true where each is the same tensor object, false where they are tensors of
        version groups apart (no view of one another); None otherwise."""
        receivers = [
            p.func.value
            for p in (node.left, *node.comparators)
            if isinstance(p, ast.Call)
            and isinstance(p.func, ast.Attribute)
            and p.func.attr == "data_ptr"
            and not p.args
            and not p.keywords
        ]
        if len(receivers) != len(node.ops) + 1 or not all(
            isinstance(op, ast.Eq) for op in node.ops
        ):
            return None
        tensors = [self.eval(receiver, frame) for receiver in receivers]
        if any(t.kind != "tensor" for t in tensors):
            return None
        if all(t is tensors[0] for t in tensors):
            return True  # (one object: whichever tensor it is on this path)
        if any(t.joined or t.origin.startswith("argument") for t in tensors):
            return None  # (a caller may pass one tensor for both)
        groups = [t.groups for t in tensors]
        if all(groups) and all(
            a.isdisjoint(b) for i, a in enumerate(groups) for b in groups[i + 1 :]
        ):
            return False
        return None

    def _truth(self, value: Value, test: ast.expr, frame: Frame) -> bool | None:
        """Whether a test is true, where that is known: a constant's truth (`if
        self.use_gate:` with the constructor's flag known);
        `if self.norm:` where `__init__` built a module there for this object's
        arguments (`if norm == "in": self.norm = nn.InstanceNorm2d(d)` / `elif norm == "none":
        self.norm = None`, with `norm` known): a layer, or an object of a class of the code
        that defines neither `__bool__` nor `__len__`, is true; None where that cannot be told
        (a ModuleList may be empty, another path may have left None)."""
        if value.has_const:
            return bool(value.const)
        ref = value.module
        if value.kind != "module" or ref is None or value.joined or ref.conditional:
            return None
        if not _built_for(test, frame):
            return None
        if ref.cls is None:
            known = ref.qualname is not None and ref.qualname.startswith("torch.nn.")
            containers = ("List", "Dict", "Sequential")
            if not known or any(kind in (ref.qualname or "") for kind in containers):
                return None
            return True
        if self.objects.list_kind(ref) or any(
            self.model.find_method(ref.cls, name) is not None for name in ("__bool__", "__len__")
        ):
            return None
        return True

    def _type_test(self, name: str, value: Value, spec: ast.expr, frame: Frame) -> bool | None:
        """`isinstance(options, str)` / `hasattr(options, "__iter__")` of a value whose Python
        type is known (a constant, a list, a tensor), against builtin types: what Python
        answers; None where it cannot be told."""
        if name == "hasattr":
            if not (isinstance(spec, ast.Constant) and isinstance(spec.value, str)):
                return None
            if value.has_const and type(value.const) in _PYTHON_CONSTANTS:
                return hasattr(value.const, spec.value)
            if value.kind == "container" and spec.value in _CONTAINER_PROTOCOL:
                return True
            return None
        specs = spec.elts if isinstance(spec, ast.Tuple) else [spec]
        types: list[type] = []
        for item in specs:
            if not (
                isinstance(item, ast.Name)
                and item.id in _BUILTIN_TYPES
                and item.id not in frame.env
                and item.id not in self.model.imports
                and item.id not in self.model.classes
            ):
                return None
            types.append(_BUILTIN_TYPES[item.id])
        if value.has_const and type(value.const) in _PYTHON_CONSTANTS:
            return isinstance(value.const, tuple(types))
        if set(types) <= _SCALAR_TYPES and (
            value.kind == "container" or (value.kind == "tensor" and value.tensorish)
        ):
            return False  # a list or a tensor is no str or number
        return None

    def _listed_children(self, ref: ModuleRef, args: list[Value]) -> list[ModuleRef] | None:
        """The modules `super().__init__(...)` gives an nn.Sequential or nn.ModuleList
        subclass (_held_by); None where they are not all known modules."""
        kind = self.objects.list_kind(ref)
        held = _held_by(kind, args) if kind is not None else None
        if not held or any(v.module is None and v.kind != "unknown" for v in held):
            return None
        return _child_refs(held, ref)

    def _made_here(self, expr: ast.expr, value: Value, mark: int) -> bool:
        """Whether `value`, what `expr` evaluated to, is a tensor that a torch op (a function
        of torch, a tensor method, an operator) made while evaluating it: its version groups
        are newer than `mark`, so no name, attribute, container or argument holds it (a
        function of the code or a module might keep what it returns; a torch op does not)."""
        if not (
            value.kind == "tensor"
            and value.groups
            and min(value.groups) > mark
            and not (value.leaf or value.detached or value.joined)
        ):
            return False
        if isinstance(expr, ast.BinOp | ast.UnaryOp):
            return True
        if not isinstance(expr, ast.Call):
            return False
        qual = self.model.qualify(expr.func)
        if qual is not None:
            return qual.startswith("torch.") and (
                self.kb.op(qual) is not None or qual in FACTS.factories
            )
        return isinstance(expr.func, ast.Attribute) and (
            self.kb.op(f"Tensor.{expr.func.attr}") is not None
        )

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

    def arguments(self, node: ast.Call, frame: Frame) -> tuple[list[Value], dict[str, Value]]:
        """A call's arguments: `*batch` spread into its items where they are known (else the
        container stands for them), keywords by name (`**kw` evaluated, its keys unknown)."""
        args: list[Value] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                spread = self.eval(arg.value, frame)
                if spread.items is not None:
                    args.extend(spread.items)
                elif spread.module is not None and spread.module.children is not None:
                    # `nn.Sequential(*block)` of a ModuleList: its modules, in order
                    args.extend(
                        Value("module", tensor=False, grad=False, module=child)
                        for child in spread.module.children
                    )
                else:
                    args.append(spread)
            else:
                args.append(self.eval(arg, frame))
        kwargs: dict[str, Value] = {}
        for kw in node.keywords:
            value = self.eval(kw.value, frame)
            if kw.arg:
                kwargs[kw.arg] = value
            elif value.keys is not None and value.items is not None:
                # `f(**kwargs)` of a dict whose keys are known: each by its name
                kwargs.update(
                    (key, item)
                    for key, item in zip(value.keys, value.items, strict=True)
                    if isinstance(key, str)
                )
        return args, kwargs

    def method_call(self, receiver: Value, name: str, node: ast.Call, frame: Frame) -> Value:
        args, kwargs = self.arguments(node, frame)
        if receiver.module is not None:
            return self.objects.module_method(receiver, name, args, kwargs, node, frame)
        if receiver.kind == "optimizer":
            if name == "zero_grad" and sets_to_none(node):
                self.clear_gradients(receiver.steps)
            if name == "step" and self._steps(receiver.steps):
                self.write_parameters(receiver.steps, "step", node, frame, receiver.origin)
            return unknown()
        if receiver.kind == "params":
            return receiver
        if receiver.kind == "fnctx":
            if name == "save_for_backward" and self._function_saves:
                self._function_saves[-1].extend(t for a in args for t in tensors_in(a))
            return unknown()
        if receiver.kind == "container":
            found = self._dict_method(receiver, name, args, kwargs)
            if found is not None:
                return found
            if name == "update" and receiver.keys is not None and not kwargs and len(args) == 1:
                # `kwargs.update(user_kwargs)`: the keys of both, where both are known
                self.update_keys(receiver, args[0], frozenset(self._graph_of(args[0])))
                return unknown()
            if name in ("append", "extend", "insert", "add", "update", "setdefault"):
                for a in args:
                    graph = frozenset(self._graph_of(a))
                    self.escaped |= graph
                    # The list holds it: `torch.stack(outs)` reaches its graph, so the
                    # backward through the stack frees what it saved.
                    if name == "extend" and a.items is not None and a.keys is None:
                        # `layers.extend([nn.Linear(...), act])`: each item, in order.
                        for item in a.items:
                            self.append_item(receiver, item, frozenset(self._graph_of(item)))
                        continue
                    self.append_item(receiver, a if name == "append" else None, graph)
            return unknown()
        if receiver.kind == "scalar":
            folded = _string_method(receiver, name, args, kwargs)
            if folded is not None:
                return folded  # `"Encoder{}".format(kind)`, `name.lower()` on known strings
            return python_value()  # `parser.parse_args()`, `env.step(action)`, `np_array.mean()`
        if not receiver.tensorish:
            return self.unknown_call([receiver, *args], kwargs)
        if name == "backward":
            self.facts.backwarded |= names_in(node.func)
            # (`backward(gradient, retain_graph, create_graph, inputs)`)
            towards = kwargs.get("inputs", args[3] if len(args) > 3 else None)
            self.backward(receiver, node, frame, retains_graph(kwargs), towards)
            return scalar()
        if name in SCALAR_METHODS and not (name in ALIAS_METHODS and (node.args or node.keywords)):
            return scalar()  # `x.size()`, `x.type()` (but `x.type(torch.float64)` converts)
        if name == "detach":
            return detached(receiver, ".detach()")
        if name == "clone":
            return self.ops.copy_of(receiver, name, frame, producer="")
        if name == "detach_":
            self.detach_in_place(receiver)  # `hidden.detach_()`: cut from its graph, kept
            return receiver
        if name == "requires_grad_":
            self.set_grad(receiver, requires_grad_flag(node), toggled=True)
            return receiver
        if name in LAYOUT_METHODS or name in ALIAS_METHODS:
            copied = self.ops.copy_or_alias(receiver, name, node, frame)
            if copied is not None:
                return copied
        if name in ALIAS_METHODS:
            if name != "contiguous" and (
                target_dtype(name, node, self.model) is None or not receiver.dtype
            ):
                return replace(receiver, leaf=False)  # `.to(device)`: the tensor or a copy
            return replace(receiver)  # nothing to change: torch returns the tensor itself
        made = FACTS.factories.get(f"Tensor.{name}")
        if made is not None:  # `x.new_zeros(shape)`: fresh, of x's dtype
            created = created_tensor(node, f"Tensor.{name}", self.model, receiver.dtype)
            return replace(created, inference=self.inference_at)
        if receiver.kind == "unknown" and name in BUILTIN_METHODS:
            # `name.split(".")`, `seen.add(k)`: as likely a str, list or set as a tensor.
            return self.unknown_call([receiver, *args], kwargs)
        op = self.kb.op(f"Tensor.{name}")
        return self.ops.apply_op(
            op, name, [receiver, *args], node, frame, kwargs=kwargs, method=True
        )

    def symbol_call(
        self, qual: str, args: list[Value], kwargs: dict[str, Value], node: ast.Call, frame: Frame
    ) -> Value:
        if qual == "torch.is_grad_enabled" and not args:
            # the mode this run is in (a summary is made per grad mode): `if
            # torch.is_grad_enabled(): ... else: x.mul_(2)` is judged in the mode it runs in
            return constant(frame.grad_enabled)
        if qual in _EAGER_FALSE and not args:
            return constant(None if qual == "torch._C._get_tracing_state" else False)
        if (
            qual == "functools.partial"
            and args
            and args[0].kind == "symbol"
            and args[0].qualname
            and args[0].bound is None
            and not any(isinstance(a, ast.Starred) for a in node.args)
            and all(k.arg for k in node.keywords)
        ):
            # `partial(nn.ReLU, inplace=True)`: the class, its arguments bound.
            return replace(args[0], bound=(node, tuple(args[1:]), kwargs))
        if qual in NO_GRAD_CONTEXTS and not mode_off(node):
            return replace(python_value(), origin=GRAD_OFF_HELD)  # `ctx = torch.no_grad()`
        if qual.startswith("math.") and qual.count(".") == 1:
            return scalar()  # `math.sqrt(d)`: a Python number (of a tensor, its item)
        if qual in _VARIABLE and len(args) == 1 and args[0].tensorish:
            # `Variable(t)` (torch < 0.4 code): t detached, sharing its version counter; with
            # requires_grad=True a leaf that requires grad.
            alias = detached(args[0], "Variable()")
            flag = kwargs.get("requires_grad")
            if flag is not None and flag.has_const and flag.const:
                alias.leaf, alias.grad, alias.detached = True, True, ""
            return alias
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
                and any(b in AUTOGRAD_FUNCTIONS for b in owner_cls.bases)
            ):
                return self.function_apply(owner_cls, args, kwargs, node, frame)
            if owner_cls is not None:
                found = self.model.find_method(owner_cls, method_name)
                if found is not None and is_static(found[1]):
                    # `Gev._gev(...)`: a staticmethod called through its class.
                    where = found[0].owner or self.model
                    return self.inline(
                        found[1], where.start_of(found[1]), args, kwargs, node, frame, where
                    )
                holder = owner_cls.owner or self.model
                bound = holder.class_function(owner_cls, method_name) if found is None else None
                if bound is not None:
                    # `utils.mask(lens, n)` of `class utils: mask = staticmethod(mask)`
                    return self.inline(
                        bound, holder.start_of(bound), args, kwargs, node, frame, holder
                    )
            cls = self.model.lookup_class(qual)
            if cls is not None:
                if cls.is_module:
                    return self.objects.construct_module(cls, qual, args, kwargs, node, frame)
                return self.objects.instance(cls, qual, args, kwargs, node, frame)
            if qual == "copy.deepcopy" and args and args[0].module is not None:
                # An EMA / teacher copy: the same modules, with parameters of their own.
                return Value("module", tensor=False, grad=False, module=twin_module(args[0].module))
            if qual == "types.SimpleNamespace":
                # A namespace of values (`networks = SimpleNamespace(E_content=E_content)`).
                ref = ModuleRef(qual, None, new_id(), site_start=frame.start, kind="namespace")
                for name, value in kwargs.items():
                    self.set_attr(ref, name, value)
                return Value("object", tensor=False, grad=False, module=ref)
            if qual == "collections.OrderedDict" and len(args) == 1 and not kwargs:
                ordered = _ordered_dict(args[0])
                if ordered is not None:
                    return ordered  # `OrderedDict({"embedding": ..., "encoder": ...})`
            if qual == "einops.rearrange" and args:
                arranged = self.ops.rearranged(args[0], node, frame)
                if arranged is not None:
                    return arranged
            if python_values(qual):
                return python_value()  # `np.mean(xs)`, `argparse.ArgumentParser()`, `gym.make()`
            if qual == "itertools.chain" and args and all(a.kind == "params" for a in args):
                # `chain(G.parameters(), D.parameters())`: both models' parameters.
                groups = frozenset().union(*(a.groups for a in args))
                return Value("params", groups, tensor=False, grad=True)
            if (
                qual == "itertools.chain"
                and args
                and not kwargs
                and not any(isinstance(a, ast.Starred) for a in node.args)
                and all(a.kind == "container" and a.items is not None for a in args)
                and not any(a.keys for a in args)
            ):
                # `chain(base.named_children(), extra.named_children())`: one after the other
                items = tuple(item for a in args for item in a.items or ())
                return Value("container", tensor=False, grad=False, items=items)
            # A function of another file: only tensor code that can write in place is worth
            # interpreting (model factories and config helpers are not).
            if any(v.kind == "tensor" for v in (*args, *kwargs.values())):
                function = self.model.lookup_function(qual)
                if function is not None and self._flag(
                    function[1], lambda: writes_in_place(*function)
                ):
                    owner, fn = function
                    return self.inline(fn, owner.start_of(fn), args, kwargs, node, frame, owner)
            return self.unknown_call(args, kwargs)
        if qual in _RETURNS_ITS_MODULE and args and args[0].module is not None:
            if "Parallel" in qual:
                args[0].module.wrapped = True  # `model.module` is the model itself
            return args[0]  # `nn.utils.spectral_norm(conv)`: the module, reparametrised
        if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            data = args[0] if args else None  # its dtype and layout are the parameter's
            return Value(
                "tensor",
                frozenset({new_id()}),
                True,
                parameter_grad(node),
                leaf=True,
                origin="nn.Parameter",
                dtype=data.dtype if data is not None else "",
                contiguous=data.contiguous if data is not None else None,
            )
        factory = FACTS.factories.get(qual)
        if factory is not None:
            if (
                factory.result == "alias_of_tensor"
                and args
                and args[0].kind == "tensor"
                and not node.keywords
            ):
                return args[0]  # `torch.as_tensor(t)`: t itself
            return replace(
                created_tensor(node, qual, self.model, factory.dtype),
                inference=self.inference_at,
            )
        params = args[0] if args else kwargs.get("params")
        if qual.startswith("torch.optim.") and qual.count(".") == 2 and params is not None:
            fused = any(
                kw.arg == "fused" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                for kw in node.keywords
            )
            return Value(
                "optimizer",
                tensor=False,
                grad=False,
                steps=self.objects.stepped_groups(params),
                origin="fused" if fused else "",
            )
        if qual in ("torch.autograd.backward", "torch.autograd.grad"):
            self.facts.backwarded |= names_in(node.args[0]) if node.args else set()
            if args:
                # autograd.grad(outputs, inputs) / autograd.backward(tensors, inputs=...)
                towards = kwargs.get("inputs")
                if towards is None and qual == "torch.autograd.grad" and len(args) > 1:
                    towards = args[1]
                self.backward(args[0], node, frame, retains_graph(kwargs), towards)
            return unknown()
        if qual.startswith("torch.nn.") and qual.count(".") == 2 and qual[9:10].isupper():
            sub = submodule_of(self.model, "", node) or Submodule("", node, qual)
            built = self.objects.module_value(qual, sub, new_id(), frame.start)
            made = built.module
            if made is not None and made.cls is None:
                made.layer_args = {
                    **{f"#{i}": a.const for i, a in enumerate(args) if a.has_const},
                    **{k: v.const for k, v in kwargs.items() if v.has_const},
                }
            held = _held_by(qual, args) if qual in _CONTAINER_MODULES else None
            # (one by one, or one element like all of them, of a comprehension of a count
            # not known: then the text's two stand for any number)
            exact = held is not None and (held is args or args[0].items is not None)
            if (
                made is not None
                and held
                and (
                    not made.children
                    or any(v.module and v.module.cls for v in held)
                    or (exact and len(made.children) != len(held))
                    or (exact and _better_known(made.children, held))
                )
            ):
                # `nn.Sequential(*layers)`, `nn.ModuleList(blocks)` with `layers` built by a
                # loop: the modules the list holds, in order; where it holds objects of
                # classes of the code, those objects, built from the arguments they were
                # given (`nn.Sequential(ResidualAdd(nn.LayerNorm(d)))`: its `self.fn`); and
                # modules its text does not construct in place (`nn.Sequential(conv, norm,
                # act, self.dropout())`: locals, what a helper method returned).
                children = _child_refs(
                    [v for v in held if v.module is not None or v.kind == "unknown"], made
                )
                if children:
                    made.children = children
                    made.uncounted = not exact
            if made is not None and held and exact and len(made.children or ()) == len(held):
                # The names `_modules` gives them: a dict's keys, else their positions.
                keys = args[0].keys if len(args) == 1 and args[0].module is None else None
                if keys is None:
                    made.child_names = tuple(str(i) for i in range(len(held)))
                elif len(keys) == len(held):
                    made.child_names = tuple(str(key) for key in keys)
            if (
                qual == "torch.nn.ParameterList"
                and args
                and args[0].items is not None
                and all(item.tensorish for item in args[0].items)
            ):
                # `nn.ParameterList([W_xh, W_hh])` holds those parameters themselves, in
                # order: unpacking it, indexing it or looping over it gives them back.
                return replace(built, items=args[0].items)
            return built
        op = self.kb.op(qual)
        if op is not None or qual.startswith("torch."):
            return self.ops.apply_op(
                op, qual, args, node, frame, kwargs=kwargs, describe=spelled_call(node.func, qual)
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
        inputs = [t for a in args for t in tensors_in(a)]
        grads = [t.grad for t in inputs]
        if not frame.grad_enabled or all(g is False for g in grads):
            return result
        possible = any(g is None for g in grads)
        label = f"{cls.name}.apply"
        reach = parameters_in(args)
        new = {
            self.record_save(
                group,
                label,
                "input",
                f"{cls.name}Backward",
                node,
                frame,
                possible,
                t.name or "",
                reach=reach,
            )
            for t in saved
            for group in sorted(t.groups)
        }
        graph = frozenset(new).union(*(t.graph for t in inputs))
        for output in tensors_in(result) or [result]:
            output.grad = True if any(grads) else None
            output.graph = output.graph | graph
        return result

    # ------------------------------------------------------------------ modules

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
        """A call of a function of the code: its summary for these arguments' facts (made
        now if there is none), applied here."""
        if model is not None and model is not self.model:
            outer = self.model
            self.model = model
            try:
                return self.inline(fn, start, args, kwargs, node, frame)
            finally:
                self.model = outer
        if self.heap.freed and frame.grad_enabled:
            # The callee may build on a graph a backward() freed; which of its ops does is
            # not said here (an RNN's forward fed the last batch's hidden state).
            given = [t for a in (*args, *kwargs.values()) for t in tensors_in(a)]
            self.carry(frozenset().union(*(t.graph for t in given)), node, frame, inexact=True)
        if fn in self.call_stack:
            return self.unknown_call(args, kwargs)  # recursion: what it does is not known
        if len(self.call_stack) >= MAX_CALL_DEPTH:
            self.cut += 1
            self._unfollowed(fn, start, None)
            return self.unknown_call(args, kwargs)
        library = self.model.path is not None
        if library and self.library_calls >= LIBRARY_DEPTH:
            return self.unknown_call(args, kwargs)
        if any(a.kind == "fnctx" for a in args):
            # An autograd.Function's forward: its ctx.save_for_backward feeds this call.
            return self._run_inline(fn, start, args, kwargs, frame)
        grad_enabled = frame.grad_enabled and not self._decorated_no_grad(fn)
        inference = self.inference_at or self._decorated_inference(fn, start)
        # (how deep in other files' code it runs decides which of its calls it follows)
        state = (grad_enabled, self.uncertain > 0, inference, self.library_calls)
        key = self.summaries.key(self.model, state, args, kwargs)
        slot = self.summaries.slot(fn, self.model)
        limit = self.summaries.too_slow.get(self.summaries.slow_key(slot))
        if limit is not None:
            if fn is self.entry:
                raise TimeLimit(fn, limit)  # the engine says it is not analysed
            return self._too_slow(fn, start, slot, limit, args, kwargs)
        summary = self._found(slot[0], key, args, kwargs)
        if summary is None:
            self.library_calls += library
            try:
                summary = self._summarize(
                    fn, start, args, kwargs, grad_enabled, inference, key, slot
                )
            except TimeLimit as exc:
                if exc.fn is not fn:
                    raise
                self.summaries.too_slow[self.summaries.slow_key(slot)] = exc.limit
                if fn is self.entry:
                    raise
                return self._too_slow(fn, start, slot, exc.limit, args, kwargs)
            finally:
                self.library_calls -= library
        if self.inputs is not None and slot[1] is not None and self.summaries.table is not None:
            # (kept for a later update's check: a one-shot analysis keeps no summary)
            at_call = snapshot(args, kwargs)
            self.inputs.calls.append(
                Call(
                    self.model.def_key(fn),
                    fn,
                    *at_call,
                    key,
                    grad_enabled,
                    inference,
                    self.uncertain,
                    self.library_calls,
                    tuple(self.call_stack),
                    summary,
                    summary.cells | {slot[1]},
                )
            )
        cells = self.recorder[0]
        if cells is not None and slot[1] is not None:
            # What the call does rests on the callee's text, however it was looked up (a
            # function as a value, a decorated one).
            (self.top_cells if self.inputs is None else cells).add(slot[1])
        if self.inputs is None:
            self.tops.append((slot[0], summary))
        return self._apply(summary, args, kwargs, node, frame)

    def _found(
        self, slot: Hashable, key: Hashable, args: list[Value], kwargs: dict[str, Value]
    ) -> Summary | None:
        """The kept summary for these arguments, if it still holds."""
        summary = self.summaries.find(slot, key, args, kwargs, self.resolver)
        if summary is not None and summary.suspect and not self.still_holds(summary):
            self.summaries.drop(slot, summary)
            return None
        return summary

    def still_holds(self, summary: Summary) -> bool:
        """A summary kept from an earlier update, some of whose callees changed since: it
        holds if each changed callee, given the arguments the summary's run gave it, has a
        summary that says the same as the one that run applied (salsa's early cutoff: the
        callee is analysed again, the caller not)."""
        if self.model.path is not None or id(summary) in self._checking:
            return False
        self._checking.add(id(summary))
        try:
            changed = [c for c in summary.inputs.calls if not c.cells.isdisjoint(summary.suspect)]
            if not summary.functions_made.isdisjoint(id(c.fn) for c in changed):
                return False  # it keeps the old function itself (`self.helper` as a value)
            agreed = []
            for call in changed:
                now = self._summary_again(call)
                if now is None:
                    return False
                if now is call.summary:
                    continue
                if fingerprint(now) != fingerprint(call.summary):
                    return False
                agreed.append((call, now))
        finally:
            self._checking.discard(id(summary))
        # (a callee that now reads other definitions, `probe` typed in it: the caller rests
        # on them from now on, through that callee)
        read = frozenset().union(*(now.cells for _, now in agreed))
        for call, now in agreed:
            call.fn, call.summary, call.cells = now.fn, now, call.cells | now.cells
        names = [r for _, now in agreed for r in global_reads(now)]
        self.summaries.confirm(summary, read, names)
        return True

    def _summary_again(self, call: Call) -> Summary | None:
        """The summary of a call's callee as it is now, for the call's arguments (kept, or
        made now as the call made it), or None when the callee or the facts are gone."""
        owner, _, method = call.name.rpartition(".")
        if owner:
            info = dict.get(self.model.classes, owner)
            fn = dict.get(info.methods, method) if info is not None else None
        else:
            fn = dict.get(self.model.functions, call.name)
        if fn is None:
            return None
        state = (call.grad_enabled, call.uncertain > 0, call.inference, call.library_calls)
        key = self.summaries.key(self.model, state, call.args, call.kwargs)
        if key != call.key:
            return None
        slot = self.summaries.slot(fn, self.model)
        # (one made for another check of this update serves: the entry points that call a
        # changed function check it for the same arguments)
        self.summaries.checking += 1
        try:
            found = self._found(slot[0], key, call.args, call.kwargs)
        finally:
            self.summaries.checking -= 1
        if found is not None:
            return found
        outer = (self.call_stack, self.uncertain, self.library_calls, self.runs)
        # what the check applies goes into a summary that serves only the check: the facts
        # of those summaries are still to be taken into this run's, its cuts not counted
        applied, cut = set(self._applied), self.cut
        self.call_stack, self.uncertain = list(call.stack), call.uncertain
        self.library_calls, self.runs = call.library_calls, []
        self.summaries.checking += 1
        try:
            return self._summarize(
                fn,
                self.model.start_of(fn),
                call.args,
                call.kwargs,
                call.grad_enabled,
                call.inference,
                key,
                slot,
            )
        except TimeLimit as exc:
            if exc.fn is not fn:
                raise
            return None  # (the call is made again, and timed out there, as a new one)
        finally:
            self.summaries.checking -= 1
            self._applied, self.cut = applied, cut
            self.call_stack, self.uncertain, self.library_calls, self.runs = outer

    def global_value(self, name: str) -> Value | None:
        """A module-level variable as a function sees it here: in a summary being made, its
        stand-in (each run's, from the run around it)."""
        # (the module frame's variables as they are now: a branch rebinds its env)
        value = self.module_frame.env.get(name) if self.module_frame is not None else None
        for inputs in self.runs:
            value = inputs.global_value(name, value)
        return value

    def _summarize(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        args: list[Value],
        kwargs: dict[str, Value],
        grad_enabled: bool,
        inference: InferenceSite | None,
        key: Hashable,
        slot: Slot,
    ) -> Summary:
        """Runs the function on stand-ins of its arguments, from a state of its own: what it
        does to them is recorded as events, what it makes stays in its heap."""
        inputs = Inputs()
        names = _parameter_names(fn, len(args))
        stand_ins = [
            inputs.symbolize(a, (("arg", i),), names[i] if i < len(names) else None)
            for i, a in enumerate(args)
        ]
        stand_in_kwargs = {k: inputs.symbolize(v, (("kw", k),), k) for k, v in kwargs.items()}
        outer = (self.heap, self.facts, self.escaped, self.group_names, self.followed, self.saves)
        outer_run = (self.inputs, self.events, self.inference_at, self.unsummarized)
        outer_functions, self.functions_made = self.functions_made, set()
        cut_before = self.cut
        self.heap, self.facts, self.escaped, self.group_names = Heap(), Facts(), set(), {}
        self.followed, self.saves = set(), {}
        self.inputs, self.events, self.inference_at = inputs, [], inference
        self.unsummarized = {}
        self.runs.append(inputs)
        later_pass, self.later_pass = self.later_pass, 0  # a summary holds for any call
        flag_log, self.flag_log = self.flag_log, []  # its flag changes come back as events
        grad_log, self.grad_log = self.grad_log, []
        outer_cells = self.recorder[0]
        cells: set[Cell] = set()
        self.recorder[0] = cells if outer_cells is not None else None
        root = inputs.root = Ctx()
        callee = Frame({}, start, grad_enabled, root, path=self.model.path)
        self._bind_arguments(fn, callee, stand_ins, stand_in_kwargs)
        self.call_stack.append(fn)
        clocks = len(self._clocks)
        if self.time_limit is not None:
            started = time.thread_time()
            self._clocks.append([fn, started, started + self.time_limit])
        try:
            self.exec_body(fn.body, callee)
            name = self.model.def_key(fn) if self.model.path is None else ""
            if name and self.cut == cut_before:
                self.followed.add(name)
            exit_heap = self._exit_heap(callee)
            result = self._returned(fn, callee, stand_ins)
            summary = Summary(
                fn,
                key,
                tuple(inputs.reads.items()),
                self.events,
                result,
                self.facts,
                exit_heap,
                frozenset(self.escaped),
                frozenset(self.followed),
                self.cut - cut_before,
                inputs,
                root,
                frozenset(cells),
                self.saves,
                frozenset(self.functions_made),
                self.unsummarized,
            )
        except TimeLimit as exc:
            if exc.fn is fn:  # the time it took is not its callers'
                spent = time.thread_time() - self._clocks[clocks][1]
                for clock in self._clocks[:clocks]:
                    clock[2] += spent
            raise
        finally:
            del self._clocks[clocks:]
            self.functions_made = outer_functions  # (the application adds them)
            self.later_pass, self.flag_log = later_pass, flag_log
            self.grad_log = grad_log
            self.call_stack.pop()
            self.runs.pop()
            self.recorder[0] = outer_cells
            self.heap, self.facts, self.escaped, self.group_names, self.followed, self.saves = outer
            self.inputs, self.events, self.inference_at, self.unsummarized = outer_run
        inputs.done()
        name = self.model.def_key(fn) or fn.name
        self.summaries.add(summary, name, slot, outer_cells is not None)
        return summary

    def _returned(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, callee: Frame, args: list[Value]
    ) -> Value | None:
        """What the function returns, joined over its `return`s (None: it returns nothing)."""
        if not callee.returns:
            return None
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

    def _apply(
        self,
        summary: Summary,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST,
        frame: Frame,
    ) -> Value:
        """A summary at a call site: its events on the caller's objects, in order; then what
        the function made (its tensors' saves, writes and frees) into the caller's heap."""
        cells = self.recorder[0]
        if cells is not None:
            (self.top_cells if self.inputs is None else cells).update(summary.cells)
        use = Application(
            summary,
            args,
            kwargs,
            frame.ctx,
            summary.root,
            self.resolver,
            self.saves,
            lazy=self.inputs is None,
            call_site=(location(node, frame.start), frame.path),
        )
        for event in summary.events:
            self._replay(event, use, node, frame)
        result = use.value(summary.result) if summary.result is not None else scalar()
        exit_heap = summary.exit
        for group, group_now in list(use.own_groups.items()):
            sids = exit_heap.live.get(group)
            if sids:
                held = tuple(use.save(summary.saves[sid]).id for sid in sids)
                self.heap.live[group_now] = (*self.heap.live.get(group_now, ()), *held)
            if group in exit_heap.unknown_reads:  # made and given to a call it did not follow
                self.read_by_unknown(frozenset({group_now}))
        for sid, mutation in exit_heap.stale.items():
            sid_now = use.own_sids.get(sid)
            if sid_now is not None:
                self.heap.stale.setdefault(sid_now, use.mutation(mutation))
        for sid, mutation in exit_heap.silent.items():
            sid_now = use.own_sids.get(sid)
            if sid_now is not None:
                self.heap.silent.setdefault(sid_now, use.mutation(mutation))
        for sid in exit_heap.freed:
            sid_now = use.own_sids.get(sid)
            if sid_now is not None:
                self.heap.freed.add(sid_now)
        self.escaped |= use.graph(summary.escaped)
        if id(summary) not in self._applied:
            self._applied.add(id(summary))
            self.facts.extend(summary.facts)
        self.followed |= summary.followed
        self.functions_made |= summary.functions_made
        self.cut += summary.cut
        for place, why in summary.unfollowed.items():
            self.unsummarized.setdefault(place, why)
        return result

    def _steps(self, steps: frozenset[int]) -> bool:
        """Whether optimizer.step() writes these parameters: not where none holds a gradient
        (zero_grad() set them to None, or no backward() ran yet), which it skips."""
        return self.heap.graded and not (steps and steps <= self.heap.no_grads)

    def _replay(self, event: Event, use: Application, node: ast.AST, frame: Frame) -> None:
        if isinstance(event, SaveEvent):
            save = use.save(event.save)
            self._add_save(save)
        elif isinstance(event, StepEvent):
            steps = use.groups(event.steps)
            if self._steps(steps):
                self.replay_write(event.write, use.mutation(event.write.mutation), steps)
        elif isinstance(event, WriteEvent):
            self.replay_write(event, use.mutation(event.mutation), use.groups(event.groups))
        elif isinstance(event, BackwardEvent):
            own = frozenset(use.save(use.summary.saves[sid]).id for sid in event.own)
            graph = use.graph(event.graphs) | own
            # A backward() in another file (a framework's `manual_backward`) runs here.
            here = event.path == frame.path
            loc = event.loc if here else self.loc(node, frame)
            self.run_backward(graph, event.retain, loc, frame.path, frame.ctx, checked=own)
        elif isinstance(event, CarryEvent):
            # The op in the function that builds on a graph a backward() may have freed: it
            # is where torch fails, rather than this call (an op in another file: the call).
            call = self.loc(node, frame)
            inexact = event.inexact or self.later_pass > 0
            if event.path == frame.path:
                self.carry_at(use.graph(event.graphs), event.loc, frame.path, inexact, call)
            else:
                self.carry_at(use.graph(event.graphs), call, frame.path, True)
        elif isinstance(event, NoGradsEvent):
            self.clear_gradients(use.groups(event.groups))
        elif isinstance(event, FreezeEvent):
            self.freeze(use.groups(event.groups))
        elif isinstance(event, UnknownReadEvent):
            self.read_by_unknown(use.groups(event.groups))
        else:
            self._replay_change(event, use)

    def _replay_change(self, event: ValueEvent, use: Application) -> None:
        target = use.resolve(event.path)
        if isinstance(target, ModuleRef):
            if event.what == "attr" and event.value is not None:
                self.set_attr(target, event.name, use.value(event.value))
            elif event.what == "child" and event.value is not None:
                child = use.value(event.value).module
                if child is not None:
                    self.add_child(target, child)
            elif event.what == "hook" and isinstance(event.flag, Hook):
                self.add_hook(target, event.flag)
            elif event.what in ("training_flag", "frozen", "backward_hooked"):
                self.set_module_flag(target, event.what, event.flag)  # type: ignore[arg-type]
                if event.what == "frozen":
                    refreeze(target)
        elif isinstance(target, Value):
            if event.what == "append":
                item = use.value(event.value) if event.value is not None else None
                self.append_item(target, item, use.graph(event.graph))
            elif event.what == "item" and event.value is not None:
                index = event.flag if isinstance(event.flag, int) else None
                self.set_item(target, index, use.value(event.value), use.graph(event.graph))
            elif event.what == "graph":
                self.join_graph(target, use.graph(event.graph))
            elif event.what == "detach":
                self.detach_in_place(target)
            elif event.what in ("grad", "toggle"):
                self.set_grad(target, event.flag, toggled=event.what == "toggle")  # type: ignore[arg-type]

    def _unfollowed(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, start: int, limit: float | None
    ) -> None:
        """A function not followed where it is called (a call chain too deep: `limit` None;
        its run longer than `limit` seconds): unknown there, and said so on its def."""
        if self.model.path is None:
            place = (fn.lineno + start - 1, fn.col_offset)
            self.unsummarized.setdefault(place, (self.model.def_key(fn) or fn.name, limit))

    def _flag(self, node: ast.AST, compute: Callable[[], bool]) -> bool:
        """A fact of a syntax node computed once per node (SummaryCache.flags): whether a
        loop calls backward() (binder.has_backward), whether another file's function can
        write in place (binder.writes_in_place)."""
        found = self.summaries.flags.get(node)
        if found is None:
            found = self.summaries.flags[node] = compute()
        return found

    def _too_slow(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        slot: Slot,
        limit: float,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """A call of a function whose run took longer than the time limit: unknown there,
        and said so on its def; the caller rests on its text (an edit times it again)."""
        self.cut += 1
        if slot[1] is not None and self.recorder[0] is not None:
            self.recorder[0].add(slot[1])
        self._unfollowed(fn, start, limit)
        return self.unknown_call(args, kwargs)

    def _run_inline(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        args: list[Value],
        kwargs: dict[str, Value],
        frame: Frame,
    ) -> Value:
        """The function's body run in the caller's state with the caller's values (an
        autograd.Function's forward, whose saves go to the call's own node)."""
        callee = Frame(
            {},
            start,
            frame.grad_enabled and not self._decorated_no_grad(fn),
            frame.ctx,
            path=self.model.path,
        )
        self._bind_arguments(fn, callee, args, kwargs)
        self.call_stack.append(fn)
        try:
            self.exec_body(fn.body, callee)
        finally:
            self.call_stack.pop()
        self.heap = self._exit_heap(callee)
        result = self._returned(fn, callee, args)
        return result if result is not None else scalar()

    # ------------------------------------------------------------------ ops

    # ------------------------------------------------------------------ events

    def _bind_arguments(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        callee: Frame,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> None:
        """The function's parameters bound to a call's arguments, defaults and `*args`."""
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
                callee.env[param.arg] = self._default_value(default, callee)
            else:
                # Not passed, no default (an entry point's object, built from arguments the
                # analysis does not have): a Python number or an integer tensor where its
                # annotation says so (`beta: float` never requires grad), else unknown.
                said = self._param_value(param, None, assumed=False) if param.annotation else None
                grad_free = said is not None and (
                    said.kind == "scalar" or (said.kind == "tensor" and said.grad is False)
                )
                callee.env[param.arg] = said if said is not None and grad_free else unknown()
        for param, kw_default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
            given = kwargs.get(param.arg)
            if given is None:
                given = (
                    self._default_value(kw_default, callee) if kw_default is not None else unknown()
                )
            callee.env[param.arg] = given
        # `*args` holds the rest of the arguments; an entry point passes what `*args` and
        # `**kwargs` hold by their names.
        if fn.args.vararg:
            callee.env[fn.args.vararg.arg] = kwargs.get(fn.args.vararg.arg) or Value(
                "container", tensor=False, grad=None, items=tuple(args[len(params) :])
            )
        if fn.args.kwarg:
            # (the keywords no parameter takes, by name: `super().__init__(**kwargs)` passes
            # them on)
            named = {p.arg for p in (*params, *fn.args.kwonlyargs)}
            rest = {k: v for k, v in kwargs.items() if k not in named}
            callee.env[fn.args.kwarg.arg] = kwargs.get(fn.args.kwarg.arg) or Value(
                "container",
                tensor=False,
                grad=None,
                items=tuple(rest.values()),
                keys=tuple(rest),
            )

    def _default_value(self, default: ast.expr, callee: Frame) -> Value:
        """A parameter's default (`optimizer_class=optim.Adam`, `eps=1e-6`, `dims=[64, 64]`),
        evaluated where the function is defined."""
        if isinstance(default, ast.Constant):
            return constant(default.value)
        frame = Frame({}, callee.start, True, Ctx(), path=callee.path)
        return self.eval(default, frame)


# What calling None gives (no run gets there: TypeError), and calling that.
_CALLED_NONE = "call of None"

_STRING_METHODS = frozenset(
    "lower upper capitalize title strip lstrip rstrip format replace startswith endswith".split()
)


def _string_method(
    receiver: Value, name: str, args: list[Value], kwargs: dict[str, Value]
) -> Value | None:
    """A string method on a known string with known arguments, computed (`"a{}".format(1)`)."""
    if not (receiver.has_const and isinstance(receiver.const, str) and name in _STRING_METHODS):
        return None
    if not all(a.has_const for a in (*args, *kwargs.values())):
        return None
    try:
        result = getattr(receiver.const, name)(
            *(a.const for a in args), **{k: v.const for k, v in kwargs.items()}
        )
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return constant(result)


def _built_for(node: ast.expr, frame: Frame) -> bool:
    """Whether `self.<attr>` is a module its class's `__init__` built for this object's
    constructor arguments on every path (an option whose tests they pass, and no other value
    assigned there that they do not rule out)."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return False
    owner = frame.env.get(node.value.id)
    ref = owner.module if owner is not None else None
    if ref is None or ref.cls is None:
        return False
    cls, attr, consts = ref.cls, node.attr, ref.consts
    options = cls.submodule_options.get(attr) or (
        [cls.submodules[attr]] if attr in cls.submodules else []
    )
    if not any(guards_hold(option.guards, consts, cls.owner) for option in options):
        return False
    return all(
        guards_hold(guards, consts, cls.owner) is False
        for _, guards in cls.plain_values.get(attr, [])
    )


def _boolean(node: ast.expr) -> bool:
    """Whether an expression gives a bool whatever its operands (a comparison, a `not`)."""
    return isinstance(node, ast.Compare) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    )


def _raises(body: list[ast.stmt]) -> bool:
    """Whether a branch body always ends in `raise` (and leaves no other way: no return,
    break, continue or yield inside it)."""
    if not body or not isinstance(body[-1], ast.Raise):
        return False
    exits = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Try)
    return not any(isinstance(n, exits) for s in body for n in ast.walk(s))


def _widened(env: dict[str, Value], before: dict[str, Value]) -> dict[str, Value]:
    """The variables a loop pass left, with the numbers it changed made unknown."""
    widened = dict(env)
    for name, value in env.items():
        old = before.get(name)
        if value.kind == "scalar" and value.has_const and (old is None or old is not value):
            widened[name] = replace(value, has_const=False, const=None)
    return widened


def _plain_class_value(node: ast.AST) -> bool:
    """Whether a class attribute's expression is one `_class_attribute` evaluates: a
    constant, a name, a lambda (its body runs only when called) or a literal of those."""
    if isinstance(node, (ast.Constant, ast.Name, ast.Lambda)):
        return True
    if isinstance(node, ast.Attribute):
        return _plain_class_value(node.value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_plain_class_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(
            k is not None and _plain_class_value(k) and _plain_class_value(v)
            for k, v in zip(node.keys, node.values, strict=True)
        )
    return False


_MAPPED_ITEMS = 8  # a comprehension over more known items is joined, not followed per item


def _iterated(iterable: Value) -> list[Value] | None:
    """What a loop over this value binds, one by one, where that is known: a list's items,
    the numbers of a known `range`, the tuples of `zip` / `enumerate` over known lists."""
    if iterable.kind == "container" and iterable.keys is None and iterable.origin != UNSIZED:
        if iterable.items is not None:
            return list(iterable.items)
        numbers = small_range(iterable.const) if isinstance(iterable.const, range) else None
        if numbers is not None:  # (a few, as a loop over them runs pass by pass)
            return [constant(i) for i in numbers]
        return None
    if iterable.kind != "zip" or not iterable.items:
        return None
    lists = [_iterated(it) for it in iterable.items]
    known = [held for held in lists if held is not None]
    if len(known) != len(lists):
        return None
    if iterable.origin == "enumerate":
        return [_list_value((constant(i), item)) for i, item in enumerate(known[0])]
    return [_list_value(group) for group in zip(*known, strict=False)]


def _list_value(items: tuple[Value, ...]) -> Value:
    """A list or tuple of these items, in order."""
    return Value(
        "container",
        tensor=False,
        grad=True if any(i.grad for i in items if i.tensorish) else None,
        items=items,
        graph=frozenset().union(*(i.graph for i in items)),
    )


def _zipped_dict(pairs: Value) -> Value | None:
    """`dict(zip(self.loss_names, losses))` where the names are known constants and the
    values known items: the dict of those keys (zip stops at the shorter)."""
    if pairs.kind != "zip" or pairs.origin or pairs.items is None or len(pairs.items) != 2:
        return None
    names, values = pairs.items
    if names.items is None or values.items is None or names.keys is not None:
        return None
    if not all(name.has_const for name in names.items):
        return None
    count = min(len(names.items), len(values.items))
    keys = [name.const for name in names.items[:count]]
    if len(set(map(repr, keys))) != count:
        return None  # a repeated key: the last value wins (not followed)
    entries = list(values.items[:count])
    return _dict_value(entries, keys, frozenset().union(*(v.graph for v in entries)))


def _dict_value(values: list[Value], keys: list[object] | None, graph: frozenset[int]) -> Value:
    """A dict of these values, by these keys where they are known constants."""
    return Value(
        "container",
        tensor=False,
        grad=True if any(v.grad for v in values if v.tensorish) else None,
        graph=graph,
        items=tuple(values) if keys is not None else None,
        keys=tuple(keys) if keys is not None else None,
    )


def _held_by(kind: str, args: list[Value]) -> Sequence[Value] | None:
    """What an nn.Sequential or nn.ModuleList is built from, in order: a Sequential's
    arguments, or the values of its one dict (`nn.Sequential(OrderedDict({"embed": ...}))`);
    a ModuleList's list, or for a comprehension (`[block(dim) for _ in range(depth)]`) one
    item like its items."""
    if not args:
        return None
    first = args[0]
    if kind == "torch.nn.Sequential" and not (
        len(args) == 1 and first.module is None and first.keys is not None
    ):
        return args
    if first.items is not None:
        return first.items
    return (first.element,) if first.element is not None else None


def _better_known(text: list[ModuleRef], held: Sequence[Value]) -> bool:
    """Whether the run knows a module the text's child in its place is not (`self.dropout()`
    of a method of the code, not a torch constructor)."""
    return any(
        not (child.qualname or "").startswith("torch.")
        and value.module is not None
        and (value.module.qualname is not None or value.module.cls is not None)
        for child, value in zip(text, held, strict=False)
    )


def _child_refs(held: Sequence[Value], container: ModuleRef) -> list[ModuleRef]:
    """The children these values make (one the analysis does not know, `getattr(nn,
    name)()` of an unknown name, stays in its place as a module nothing is known of)."""
    return [v.module or ModuleRef(None, None, container.params_group) for v in held]


def _ordered_dict(value: Value) -> Value | None:
    """`OrderedDict(d)` of a dict of known keys, or of a list of known `(key, value)`
    pairs: the same keys and values, in that order."""
    if value.keys is not None and value.items is not None:
        return value
    if value.kind != "container" or value.items is None:
        return None
    keys: list[object] = []
    items: list[Value] = []
    for pair in value.items:
        if pair.items is None or len(pair.items) != 2 or not pair.items[0].has_const:
            return None
        keys.append(pair.items[0].const)
        items.append(pair.items[1])
    return replace(value, keys=tuple(keys), items=tuple(items))


def _dict_entries(value: Value, view: str) -> list[Value] | None:
    """A dict's entries, where its keys are known: its keys (`view` "" or "keys"), its values
    ("values") or (key, value) pairs ("items"); None otherwise."""
    keys, items = value.keys, value.items
    if keys is None or items is None:
        return None
    if view == "values":
        return list(items)
    if view == "items":
        return [
            Value("container", tensor=False, grad=False, items=(constant(key), item))
            for key, item in zip(keys, items, strict=True)
        ]
    return [constant(key) for key in keys]


def _namespace_of(node: ast.expr, frame: Frame) -> ast.expr | None:
    """What `X.__dict__` and `vars(X)` are the attributes of: X (None for anything else)."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and "vars" not in frame.env
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def detached(value: Value, origin: str) -> Value:
    """`value.detach()`: the same storage and version counter, out of every graph."""
    return replace(
        value,
        kind="tensor",
        tensor=True,
        grad=False,
        grad_assumed=False,
        leaf=False,
        detached="detach",
        graph=frozenset(),
        origin=origin,
    )


_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Whether torch is tracing, scripting, compiling or exporting the code: never while it runs
# eagerly, the run whose backward() the analysis judges (`if torch.jit.is_tracing(): <the
# export path>` and `if not torch.jit.is_scripting(): <the eager path>` run one way only).
_EAGER_FALSE = frozenset(
    {
        "torch.jit.is_tracing",
        "torch.jit.is_scripting",
        "torch._C._is_tracing",
        "torch._C._get_tracing_state",
        "torch.onnx.is_in_onnx_export",
        "torch.compiler.is_compiling",
        "torch.compiler.is_dynamo_compiling",
        "torch.compiler.is_exporting",
        "torch._dynamo.is_compiling",
        "torch.fx._symbolic_trace.is_fx_tracing",
    }
)


def _spelling(node: ast.expr) -> re.Pattern[str] | None:
    """The names a string expression can spell, as a pattern: `f"layer{i}"`, `"layer%d" % i`
    and `"layer{}".format(i)` are `layer.+`; None for any other expression."""
    template = spelled_template(node)
    if template is None or not template.replace("{}", ""):
        return None
    return re.compile(".+".join(re.escape(part) for part in template.split("{}")))


def _delegates_setattr(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a `__setattr__` sets the attribute after all: it calls another
    `__setattr__` (`super().__setattr__(name, value)`, `object.__setattr__(...)`) or writes
    into `self.__dict__`."""
    for node in ast.walk(method):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__setattr__"
        ):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return True
    return False


def _parameter_names(fn: ast.FunctionDef | ast.AsyncFunctionDef, count: int) -> list[str]:
    return [p.arg for p in [*fn.args.posonlyargs, *fn.args.args]][:count]


class UnhandledNode(Exception):
    """Strict mode: the interpreter met a syntax node it has no handler for."""

    def __init__(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", "?")
        super().__init__(f"no handler for ast.{type(node).__name__} (line {line})")


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


def _repeated(opname: str, left: Value, right: Value) -> tuple[Value, ...] | None:
    """`[hidden_dim] * (num_layers - 1)` of a known count: its items that many times over."""
    held, count = (left, right) if left.kind == "container" else (right, left)
    if opname != "mul" or held.items is None or held.keys is not None or held.origin == UNSIZED:
        return None
    times = count.const if count.has_const and type(count.const) is int else None
    if times is None or len(held.items) * max(times, 0) > HELD_ITEMS:
        return None
    return held.items * max(times, 0)


def _int_arithmetic(opname: str, left: Value, right: Value) -> int | None:
    """`self.end_level + 1`, `depth // 2` of ints the code knows: the int Python computes
    (so a loop bound or an index built from the constructor's arguments stays known); None
    for anything else or a result too large to be a count."""
    a, b = left.const, right.const
    if not (left.has_const and right.has_const and type(a) is int and type(b) is int):
        return None
    if opname in ("floordiv", "mod") and b == 0:
        return None
    operations: dict[str, Callable[[int, int], int]] = {
        "add": operator.add,
        "sub": operator.sub,
        "mul": operator.mul,
        "floordiv": operator.floordiv,
        "mod": operator.mod,
    }
    operation = operations.get(opname)
    if operation is None or max(abs(a), abs(b)) > _SMALL_INT:
        return None
    return operation(a, b)


_SMALL_INT = 1 << 20
_BUILTIN_TYPES: dict[str, type] = {
    t.__name__: t for t in (str, int, float, bool, list, tuple, dict, set, bytes)
}
_SCALAR_TYPES: frozenset[type] = frozenset({str, int, float, bool, bytes})
_PYTHON_CONSTANTS = (str, int, float, bool, type(None))
_CONTAINER_PROTOCOL = frozenset({"__iter__", "__len__", "__getitem__", "__contains__"})
_MATH_CONSTANTS = frozenset({"math.pi", "math.e", "math.tau", "math.inf", "math.nan"})


def _grad_guard(test: ast.expr, frame: Frame) -> list[dict[str, Value]] | None:
    """`if x.requires_grad:` (or `not x.requires_grad`) on a tensor whether it requires grad
    is not known: on the path where it is true the name requires grad, on the other it does
    not (the in-place branch of a `requires_grad` guard runs only where nothing records)."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if not (
        isinstance(inner, ast.Attribute)
        and inner.attr == "requires_grad"
        and isinstance(inner.value, ast.Name)
    ):
        return None
    name = inner.value.id
    value = frame.env.get(name)
    if value is None or not value.tensorish:
        return None
    on = {name: replace(value, grad=True)}
    off = {name: replace(value, grad=False, grad_assumed=False, graph=frozenset())}
    return [off, on] if negated else [on, off]


def _undo_grads(log: list[tuple[Value, bool | None]]) -> dict[int, tuple[Value, bool | None]]:
    """The `requires_grad` flags a branch body set on parameters, each put back as it was
    before the body ran (for the next body); what the body left, by parameter."""
    changed = {id(value): (value, value.grad) for value, _ in log}
    for value, before in reversed(log):
        value.grad = before
    return changed
