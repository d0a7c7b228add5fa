"""The abstract domain of the analysis: values (tensors, modules, optimizers, Python values),
version groups and graphs, branch contexts, the events that decide autograd errors (save,
mutation, conflict, refusal, leaf write, accumulation, alias read), the per-path autograd state
(Heap) and a function activation (Frame); how values and states join where paths meet.

Pure data: no AST walking, no torch knowledge.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar, cast

from inplace_lsp.analysis.model import ClassInfo, ModuleModel, Submodule

Loc = tuple[int, int, int, int]  # absolute 1-based line, utf-8 col, end line, end col


InferenceSite = tuple[Loc, str | None]  # a torch.inference_mode() block: where, in which file


# A branch's condition: format, its node, its document line (None: in another file).
Label = tuple[str, ast.AST | None, int | None]


# At most this many arguments are named in "fails if `a` or `b` requires grad".
_NAMED_ARGUMENTS = 3


# `func = a if c else b`: a call of `func` runs each of up to this many functions.
_CALLEE_CHOICES = 4


_ids = itertools.count(1)


def new_id() -> int:
    return next(_ids)


@dataclass(frozen=True, slots=True)
class Function:
    """A function of the code as a value (a def nested in a function, a hook passed around):
    its node, the first line of the block holding it, and the file's model."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    start: int
    model: ModuleModel
    # A method read off an object (`self.calc_loss_a`, held in `self.calc_loss`): the object
    # a call passes as its first argument.
    bound: ModuleRef | None = None


@dataclass(frozen=True, slots=True)
class Hook:
    kind: str  # "pre" (register_forward_pre_hook) or "post" (register_forward_hook)
    function: Function


# A module flag set one way on some paths and the other way on others, where they meet.
EITHER = "either"


NO_NAMES: frozenset[str] = frozenset()  # (one object: `frozenset()` makes a new one)


@dataclass(eq=False, slots=True)
class ModuleRef:
    """An object: an nn.Module instance (a local class, a torch.nn class, or unknown), or an
    object of another class of the code (a Trainer holding models and optimizers)."""

    qualname: str | None
    cls: ClassInfo | None
    params_group: int
    submodule: Submodule | None = None  # where it was constructed (`self.act = nn.ReLU(...)`)
    site_start: int = 1  # block start line of the constructor call
    # The constructor call as parsed when the module was built (its lines numbered from
    # site_start): a class kept through an edit (model.keep_classes) gets new nodes.
    call: ast.Call | None = None
    parent: ModuleRef | None = None
    # None: as its parent (model.eval() reaches every child); EITHER: train() on some paths
    # that met, eval() on others.
    training_flag: bool | str | None = None
    conditional: bool = False  # `self.act = A() if flag else B()`: which one runs is not known
    site_path: str | None = None  # the file of the constructor call (None: this document)
    consts: dict[str, object] = field(default_factory=dict)  # constant constructor arguments
    # A torch.nn layer built by code the analysis ran (`d = nn.Dropout3d(self.p, inplace=flag)`
    # in a helper method): its arguments whose values were known there, by keyword, or by
    # position as "#0", "#1", ...
    layer_args: dict[str, object] = field(default_factory=dict)
    # A ModuleList / Sequential of a comprehension whose count is not known: its children
    # stand for any number of them, at no position one can name (`enumerate` gives no index).
    uncounted: bool = False
    # `consts` and their facts in a summary's key (summaries._consts_facts)
    consts_said: tuple[dict[str, object], Hashable] | None = field(
        default=None, repr=False, compare=False
    )
    attrs: dict[str, Value] = field(default_factory=dict)
    # The attributes the code set (not read from the class). This and `hooks` are
    # immutable: the copies of a module share them until one changes.
    assigned: frozenset[str] = NO_NAMES
    kind: str = ""  # "namespace": an object that only holds what it was given
    children: list[ModuleRef] | None = None
    # The names its `_modules` gives `children` (a Sequential's positions, an OrderedDict's
    # keys), where the analysis built them from known arguments; None where not known.
    child_names: tuple[str | None, ...] | None = None
    # register_forward_pre_hook / register_forward_hook: ("pre" | "post", the hook function)
    hooks: tuple[Hook, ...] = ()
    # requires_grad_(False) on it (None: as its parent; EITHER: frozen on some paths only)
    frozen: bool | str | None = None
    wrapped: bool = False  # given to nn.DataParallel / DDP, whose `.module` it is
    # register_full_backward_hook on it: its outputs are views torch refuses to write into
    backward_hooked: bool = False
    # An object a summary made, applied outside any summary's run: its attributes are the
    # summary's object's, copied into this world when first needed (`attributes`): the
    # copying function and what it copies.
    lazy: tuple[Callable[[Value], Value], dict[str, Value]] | None = field(
        default=None, repr=False, compare=False
    )

    def attributes(self) -> dict[str, Value]:
        """Its attributes (`attrs`), copied first where they are still the summary's."""
        lazy = self.lazy
        if lazy is not None:
            self.lazy = None
            copy, source = lazy
            for name, value in source.items():
                if name not in self.attrs:  # (what was set since stays)
                    self.attrs[name] = copy(value)
        return self.attrs

    @property
    def is_module(self) -> bool:
        """An nn.Module (a local subclass, a torch.nn class, or a module the analysis cannot
        read), not an object of another class (a Trainer)."""
        return (self.cls is None and self.kind != "namespace") or (
            self.cls is not None and self.cls.is_module
        )

    @property
    def params_frozen(self) -> bool:
        """Whether its parameters do not require grad on every path."""
        return self._inherited("frozen", False) is True

    @property
    def params_grad(self) -> bool | None:
        """Whether its parameters require grad (None: frozen on some paths only)."""
        return None if self._inherited("frozen", False) == EITHER else not self.params_frozen

    @property
    def training(self) -> bool | None:
        """Whether it is in training mode (None: in training mode on some paths only)."""
        flag = self._inherited("training_flag", True)
        return None if flag == EITHER else bool(flag)

    def _inherited(self, flag: str, default: bool) -> bool | str:
        """A flag set on the module or, where it is None, on the nearest parent that has it
        (`model.eval()` and `model.requires_grad_(False)` reach every submodule)."""
        for ref in self.ancestry():
            value: bool | str | None = getattr(ref, flag)
            if value is not None:
                return value
        return default

    def ancestry(self) -> Iterator[ModuleRef]:
        """The module, its parent, and theirs up to the root."""
        ref: ModuleRef | None = self
        while ref is not None:
            yield ref
            ref = ref.parent

    def adopt(self, child: ModuleRef) -> None:
        """`child` becomes a submodule of this one (`model.eval()` reaches it), unless it has a
        parent already or is this module or one of its parents (`self.encoder.owner = self`
        makes no cycle of parents)."""
        if child.parent is None and all(ref is not child for ref in self.ancestry()):
            child.parent = self


@dataclass(eq=False, slots=True)
class Value:
    # "tensor" | "scalar" | "module" | "optimizer" | "params" | "container" | "symbol" | "unknown"
    kind: str
    groups: frozenset[int] = frozenset()
    tensor: bool | None = None
    grad: bool | None = None
    grad_assumed: bool = False  # grad is an assumption (forward input), not proven
    leaf: bool = False
    graph: frozenset[int] = frozenset()
    # "detach" (shares the version counter), "data" (hides writes from it) or "fresh" (a
    # detach of a tensor just made, `t.clone().detach()`: nothing else reads what it writes)
    detached: str = ""
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
    # that requires grad), "leaf" (a view of a leaf that requires grad) or "hooked" (the
    # output of a module with a full backward hook); "" otherwise.
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
    # A dict with constant keys (`{"params": G.parameters(), "lr": 1e-4}`, `{"loss": loss}`):
    # its keys, in the order of `items`, its values.
    keys: tuple[object, ...] | None = None
    # A forward input taken for a tensor by the stated assumption alone (no annotation says
    # so): a write into `x[i]` may be into a list of tensors.
    kind_assumed: bool = False
    # Joined where the paths of a branch met: the groups it holds on one of those paths only,
    # with that path's context (`if self.norm: x = self.norm(x)`: the conv's output only
    # where the norm did not run, so a write into x never meets what the norm saved of it).
    arms: tuple[tuple[frozenset[int], Ctx], ...] = ()
    # A function of the code (`def hook(module, inputs, output): ...` inside a method).
    function: Function | None = None
    # A container whose items are not known one by one (a comprehension's result): any of
    # its elements (what `xs[i]` and `for x in xs` give).
    element: Value | None = None
    # A symbol with arguments bound by `functools.partial(nn.ReLU, inplace=True)`: that call,
    # and its arguments after the first, which a call of it passes first.
    bound: tuple[ast.Call, tuple[Value, ...], dict[str, Value]] | None = None

    @property
    def tensorish(self) -> bool:
        return self.kind in ("tensor", "unknown") and self.tensor is not False


Copied = TypeVar("Copied", "Value", "ModuleRef", "Save", "Mutation", "Function", "Conflict")


def replace(value: Copied, **changes: object) -> Copied:
    """A shallow copy of a Value (or a module, a save, a write, a function) with some fields
    changed: dataclasses.replace is slow, and none of these has a __post_init__."""
    kind = type(value)
    copy = _COPIERS.get(kind) or _copier(kind)
    clone = cast(Copied, copy(value))
    for name, new in changes.items():
        object.__setattr__(clone, name, new)  # (a frozen one's too: it is not shared yet)
    return clone


# The analysis's objects are slotted dataclasses: no __dict__ each (15 % fewer objects for
# the garbage collector to walk after an update, -11 % peak memory, on transformers'
# models), so they are copied slot by slot, by a function made once per class (0.9 us a
# Value; the old copy of its __dict__ took 1.4, a call of its __init__ 1.8).
_COPIERS: dict[type, Callable[[object], object]] = {}


def _copier(kind: type) -> Callable[[object], object]:
    """The copier of a slotted dataclass: a function that makes a new object of it and sets
    each field (through object.__setattr__ for a frozen one)."""
    names = [f.name for f in dataclasses.fields(kind)]
    if kind.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        body = "".join(f"    store(clone, {name!r}, value.{name})\n" for name in names)
    else:
        body = "".join(f"    clone.{name} = value.{name}\n" for name in names)
    source = f"def copy(value):\n    clone = new(kind)\n{body}    return clone\n"
    namespace: dict[str, object] = {
        "new": object.__new__,
        "kind": kind,
        "store": object.__setattr__,
    }
    exec(source, namespace)  # (as dataclasses makes __init__)
    copy = cast(Callable[[object], object], namespace["copy"])
    _COPIERS[kind] = copy
    return copy


def scalar() -> Value:
    return Value("scalar", tensor=False, grad=False)


def python_value() -> Value:
    """A Python value that is not a tensor (a number, a string, a NumPy array, an argparse
    namespace): its attributes, items and methods' results are Python values too."""
    return Value("scalar", tensor=False, grad=False)


def unknown() -> Value:
    """An object the analysis knows nothing about (a fresh object each time: Values are mutable)."""
    return Value("unknown", frozenset({new_id()}), tensor=None, grad=None)


# The origin of a list or set display whose items are not its elements one by one (`[*xs,
# y]` holds xs's elements, `{a, b}` may hold one).
UNSIZED = "unsized display"


def constant(value: object) -> Value:
    return Value("scalar", tensor=False, grad=False, const=value, has_const=True)


@dataclass(eq=False, slots=True)
class Ctx:
    """A branch context; a save in an ancestor context happens on every path to its children."""

    parent: Ctx | None = None
    # The condition under which this context runs, for messages ("`if mask is None:` (line
    # 12) is true"), as (format, node, where) rendered by _label only when a message needs it
    # (ast.unparse on every branch run would cost the analysis a tenth of its time); None for
    # the root and for contexts that need no saying.
    label: Label | None = None
    # One run of a branch (an `if`'s bodies, the callees of `f = a if c else b`): its id and
    # which of its paths this is. Two contexts on different paths of the same run never
    # both happen in one run of the code (0: no branch).
    split: int = 0
    arm: int = 0
    arms: int = 0  # how many paths the branch has (an `if` without `else`: 2, one empty)

    def descends_from(self, other: Ctx) -> bool:
        node: Ctx | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


def exclusive(one: Ctx, other: Ctx) -> bool:
    """Whether two contexts lie on different paths of one run of a branch (a save in the
    `return` branch of `if x.requires_grad:` and a write after it): no run meets both."""
    arms: dict[int, int] = {}
    node: Ctx | None = one
    while node is not None:
        if node.split:
            arms[node.split] = node.arm
        node = node.parent
    node = other
    while node is not None:
        if node.split and arms.get(node.split, node.arm) != node.arm:
            return True
        node = node.parent
    return False


@dataclass(eq=False, slots=True)
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
    # Made inside a call: the outermost call site (in the function analysed) that ran it, the
    # line to recompute after a step, and its file (None: the document analysed).
    called_at: Loc | None = None
    called_at_path: str | None = None
    # Made by a call the analysis does not follow (`self.act(x)` of a class it cannot read):
    # saved only if that callee keeps the tensor for backward, which is what a finding on it
    # says it rests on.
    unknown: bool = False
    # Of a tensor that may be the one written or a copy of it (`x[:, 0].reshape(...)`): what
    # decides it, as a message says it ("" otherwise).
    maybe: str = ""
    # The parameter groups whose gradients the op's backward computes (a layer's own, where
    # they require grad; a parameter given to a functional op), saved or not.
    reach: frozenset[int] = frozenset()


@dataclass(eq=False, slots=True)
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


@dataclass(eq=False, slots=True)
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
    # Escaping from a function nothing visible backpropagates: the function it leaves, whose
    # caller the failure needs to run backward() through it ("" otherwise).
    escapes_from: str = ""
    # Escaping from a module's forward (a backward follows by assumption) out of its
    # inference branch (`if not self.training:`): that condition, as a message says it; the
    # failure needs a backward() through the module in eval mode ("" otherwise).
    eval_branch: str = ""
    # Where the backward() that meets it runs (None: a caller's, by escape).
    backward_ctx: Ctx | None = None


@dataclass(eq=False, slots=True)
class Refusal:
    """An in-place write that torch refuses at once, whatever was saved: into an inference
    tensor outside inference mode, `out=` with an argument that requires grad, into an
    output of split / chunk / unbind, into a view made under no_grad (each with grad on)."""

    mutation: Mutation
    reason: str  # "inference" | "out" | "multi_view" | "no_grad_view" | "hooked_view"
    definite: bool
    grad_from: str = ""  # not definite: the argument whose requires-grad decides
    made_in: InferenceSite | None = None  # "inference": the block that made the tensor
    # Not definite: met only from the second pass of a loop whose number of passes is not
    # known (`if acc is None: acc = part` then `acc += part` on the next pass).
    repeated: bool = False
    # Not definite: whether what is written into the view requires grad is not known, and
    # rests on no argument (a tensor of an object the analysis cannot read).
    unknown_grad: bool = False


@dataclass(eq=False, slots=True)
class LeafWrite:
    mutation: Mutation
    definite: bool
    # Not known to require grad (a parameter frozen on some paths only): what decides it.
    unless: str = ""
    # Not known to be a leaf: an attribute of an object the analysis cannot read, named as
    # a layer's parameter (`pipe.text_encoder.embeddings.token_embedding.weight`).
    maybe_parameter: str = ""
    # Written where grad mode is on in some runs only: the context that decides it
    # (`torch.set_grad_enabled(phase == "train")` (line 12)).
    grad_mode: str = ""


@dataclass(eq=False, slots=True)
class Retention:
    """A backward() through saves an earlier backward() freed (torch: "Trying to backward
    through the graph a second time"): `use` is the op that built on the freed graph (an RNN
    fed the hidden state the last batch's backward went through), `freed_by` that backward."""

    use: Loc
    use_path: str | None
    freed_by: Loc | None  # None: in a function this run followed
    backward: Loc
    definite: bool


@dataclass(eq=False, slots=True)
class Accumulation:
    """`total += value` in a loop, on a name bound before it: across iterations."""

    name: str
    loc: Loc
    stmt_loc: Loc
    value_text: str
    value: Value  # what is added (its grad as known when the analysis ends)
    trains: bool  # the loop calls backward() or step()
    # The same loop also rebinds the name to a value without a graph (`running_loss = 0`
    # after each optimizer step): the total spans a window of iterations, not the loop.
    reset: bool = False


@dataclass(eq=False, slots=True)
class AliasRead:
    """A name read after an in-place write changed its tensor through another name."""

    mutation: Mutation
    read_name: str
    read_loc: Loc


def write_place(mutation: Mutation) -> tuple[str | None, Loc]:
    """Where a write is, whatever run of it: its file and place."""
    return mutation.path, mutation.loc


@dataclass(slots=True)
class Facts:
    """Everything rules need, for one analysis entry point (function or module-level code)."""

    conflicts: list[Conflict] = field(default_factory=list)
    leaf_writes: list[LeafWrite] = field(default_factory=list)
    accumulations: list[Accumulation] = field(default_factory=list)
    retentions: list[Retention] = field(default_factory=list)
    alias_reads: list[AliasRead] = field(default_factory=list)
    detached_writes: list[Mutation] = field(default_factory=list)
    activation_reads: list[AliasRead] = field(default_factory=list)
    # In-place writes checked and found safe: nothing had saved the tensor (Hint findings).
    safe_writes: list[Mutation] = field(default_factory=list)
    # Where a write into a tensor that may require grad ran and was not found safe (another
    # call of the function, another pass of the loop): no Hint there, whatever the other
    # runs of the line found (a Hint is a proof for every run of its line).
    unproven_writes: set[tuple[str | None, Loc]] = field(default_factory=set)
    # Classes (ids of their ClassInfo) an object of which was given to a call the analysis
    # does not follow (`self.body.add_module(name, Block(...))`): where and how often that
    # object's layers run is not known, so no `inplace=True` in them is checked safe.
    escaped_classes: set[int] = field(default_factory=set)
    # Every `inplace=True` write (module or function), to tell whether turning one keyword off
    # keeps what every call through it computes.
    inplace_flags: list[Mutation] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    # The names a backward() call's receiver or argument reads (`(total / n).backward()`).
    backwarded: set[str] = field(default_factory=set)
    # A forward hook or pre-hook was registered on a module (`output.requires_grad_(True)` in
    # transformers' enable_input_require_grads): what a module's output is may rest on a hook
    # a summary made before it was registered did not run, so no write is checked safe.
    hooked: bool = False

    def extend(self, other: Facts) -> None:
        self.conflicts += other.conflicts
        self.leaf_writes += other.leaf_writes
        self.accumulations += other.accumulations
        # A function's own backward() calls, freeing what its own ops saved, are a proof in
        # any caller where they are definite; where the use rests on a later pass of a loop
        # or a call's op (a recursive helper whose result is not known), they stay unsaid.
        self.retentions += [kept for kept in other.retentions if kept.definite]
        self.alias_reads += other.alias_reads
        self.detached_writes += other.detached_writes
        self.activation_reads += other.activation_reads
        self.safe_writes += other.safe_writes
        self.unproven_writes |= other.unproven_writes
        self.escaped_classes |= other.escaped_classes
        self.inplace_flags += other.inplace_flags
        self.refusals += other.refusals
        self.backwarded |= other.backwarded
        self.hooked = self.hooked or other.hooked


@dataclass(slots=True)
class Heap:
    """Per-path autograd state: live saves per version group, stale saves, freed saves."""

    live: dict[int, tuple[int, ...]] = field(default_factory=dict)
    stale: dict[int, Mutation] = field(default_factory=dict)
    freed: set[int] = field(default_factory=set)
    pending_alias: dict[int, list[tuple[Mutation, frozenset[str]]]] = field(default_factory=dict)
    # Parameter groups known to hold no gradient: zero_grad() set them to None and no
    # backward() ran since. optimizer.step() skips a parameter without one.
    no_grads: frozenset[int] = frozenset()
    # Saves written through `.data` (no version bump): wrong gradients if a backward() then
    # runs through them, nothing otherwise.
    silent: dict[int, Mutation] = field(default_factory=dict)
    # Version groups given to a call the analysis does not follow: that callee may have
    # saved them, so no write into them is "checked: safe".
    unknown_reads: frozenset[int] = frozenset()
    # Whether any parameter may hold a gradient: False in a script until its first
    # backward() (or a call the analysis does not follow), when no parameter has one and
    # optimizer.step() skips them all.
    graded: bool = True
    # Freed saves some op built on since (sid: where, and whether only a loop's later pass
    # did), and the backward() that freed each.
    carried: dict[int, tuple[Loc, str | None, bool]] = field(default_factory=dict)
    freed_by: dict[int, Loc] = field(default_factory=dict)
    # Whether a call the analysis does not follow was given a module or a tensor: a graph
    # built since may reach parameters no save of it names.
    unfollowed: bool = False

    def copy(self) -> Heap:
        return Heap(
            dict(self.live),
            dict(self.stale),
            set(self.freed),
            {k: list(v) for k, v in self.pending_alias.items()},
            self.no_grads,
            dict(self.silent),
            self.unknown_reads,
            self.graded,
            dict(self.carried),
            dict(self.freed_by),
            self.unfollowed,
        )

    def join(self, other: Heap) -> None:
        for group, saves in other.live.items():
            mine = self.live.get(group, ())
            if saves is mine:  # both copied from the heap before the branch: unchanged
                continue
            self.live[group] = mine + tuple(s for s in saves if s not in mine)
        for sid, mutation in other.stale.items():
            self.stale.setdefault(sid, mutation)
        for sid, mutation in other.silent.items():
            self.silent.setdefault(sid, mutation)
        self.unknown_reads |= other.unknown_reads
        self.freed &= other.freed
        self.no_grads &= other.no_grads
        self.graded = self.graded or other.graded
        self.unfollowed = self.unfollowed or other.unfollowed
        for sid, use in other.carried.items():
            self.carried.setdefault(sid, use)
        for sid, loc in other.freed_by.items():
            self.freed_by.setdefault(sid, loc)
        for group, pend in other.pending_alias.items():
            mine_p = self.pending_alias.setdefault(group, [])
            if pend != mine_p:
                mine_p.extend(p for p in pend if p not in mine_p)


@dataclass(slots=True)
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
    # Per enclosing loop: the names bound before it that its body rebinds to a value that
    # carries no graph (an accumulator's reset), and the accumulations noted in its body.
    loop_resets: list[set[str]] = field(default_factory=list)
    loop_accumulations: list[list[Accumulation]] = field(default_factory=list)
    stmt: ast.stmt | None = None
    path: str | None = None  # the file the code comes from (None: the document analysed)
    # Reachability: the path being run ended (`return`, `raise`, `break`, `continue`); the
    # statements after it in its block never run, and its state flows where the jump goes.
    dead: str = ""  # "" (live) or the statement that ended the path
    exits: list[Heap] = field(default_factory=list)  # the heaps at each `return`
    breaks: list[list[State]] = field(default_factory=list)  # per enclosing loop
    continues: list[list[State]] = field(default_factory=list)


State = tuple[dict[str, "Value"], Heap]  # a path's variables and autograd state


# A context manager held in a name that turns grad mode off (`ctx = torch.no_grad()`), and
# one that does on some paths only (joined with another: `nullcontext()`).
GRAD_OFF_HELD, GRAD_OFF_SOME = "grad mode off", "grad mode off on some paths"


def join_values(a: Value, b: Value) -> Value:
    if a is b:
        return a
    if a.origin != b.origin and {a.origin, b.origin} & {GRAD_OFF_HELD, GRAD_OFF_SOME}:
        return Value("scalar", tensor=False, grad=False, origin=GRAD_OFF_SOME)
    if a.kind == b.kind == "scalar":
        if a.has_const and not (b.has_const and _same_constant(a.const, b.const)):
            return Value("scalar", tensor=False, grad=False)  # one of two numbers: not known
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
        # Both views torch made the same way (two outputs of one split): either way, that.
        view_kind=a.view_kind if a.view_kind == b.view_kind else "",
        joined=True,
        origin=a.origin or b.origin,
        producer=a.producer if a.producer == b.producer else "",
        module=a.module if a.module is b.module else (a.module or b.module),
        steps=a.steps | b.steps,
        name=a.name,
        # One of the two: the arguments either rests on, as far as they are named.
        grad_from=grad_sources([v for v in (a, b) if v.grad_from]) if grad is None else "",
    )


def _same_constant(a: object, b: object) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - an odd constant's __eq__: not the same
        return False


def join_states(states: list[State], ctxs: list[Ctx] | None = None) -> State:
    """The state where paths meet: each variable joined over the paths that bound it, and
    the autograd state joined (the first path's objects are reused). With the paths'
    contexts (`ctxs`, the paths of one branch), a tensor variable that holds different
    tensors on them knows which it holds on which path (Value.arms)."""
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
    if ctxs is not None and len(ctxs) == len(states) > 1:
        for name, value in env.items():
            if not value.joined or not value.tensorish:
                continue
            each = [state_env.get(name) for state_env, _ in states]
            if any(v is None for v in each):
                continue
            held = [v.groups for v in each if v is not None]
            arms = []
            for i, groups in enumerate(held):
                others = frozenset().union(*(g for j, g in enumerate(held) if j != i))
                if groups - others:
                    arms.append((groups - others, ctxs[i]))
            if arms:
                env[name] = replace(value, arms=tuple(arms))
    return env, heap


def grad_sources(values: list[Value]) -> str:
    """The arguments an unknown requires-grad rests on ("a" or "a, w": it requires grad if
    any of them does), or "" when an unknown of them is not an argument (or too many are)."""
    unknown = [v.grad_from for v in values if v.grad is None]
    if not unknown or not all(unknown):
        return ""
    names = sorted({name for names in unknown for name in names.split(", ")})
    return ", ".join(names) if len(names) <= _NAMED_ARGUMENTS else ""


def tensors_in(value: Value) -> list[Value]:
    """The tensors of an argument: itself, or the items of a list/tuple (torch.cat([a, b]))."""
    if value.kind == "container" and value.items:
        return [t for item in value.items for t in tensors_in(item)]
    if value.kind == "container" and (value.graph or value.grad):
        return [Value("tensor", frozenset(), True, value.grad, graph=value.graph)]
    return [value] if value.tensorish else []


def parameters_in(args: list[Value]) -> frozenset[int]:
    """The groups of the leaves among an op's operands that may require grad (a module's
    parameter given to `F.linear`): what the op's backward computes a gradient for."""
    return frozenset().union(
        *(t.groups for a in args for t in tensors_in(a) if t.leaf and t.grad is not False)
    )


def branch_conditions(saved_in: Ctx, written_in: Ctx) -> tuple[str, ...]:
    """The conditions of the contexts the save ran in that the write's context is not within
    (outermost first): the save happened only on the paths that took them."""
    labels: list[str] = []
    for node in beyond(saved_in, written_in):
        if node.label is not None:
            form, condition, line = node.label
            code = short_source(condition) if condition is not None else ""
            labels.append(form.format(code, f" (line {line})" if line is not None else ""))
    return tuple(reversed(labels))


def beyond(saved_in: Ctx, written_in: Ctx) -> list[Ctx]:
    """The contexts the save ran in that the write's context is not within (innermost
    first): the paths the save needed and the write did not."""
    found: list[Ctx] = []
    node: Ctx | None = saved_in
    while node is not None and not written_in.descends_from(node):
        found.append(node)
        node = node.parent
    return found


def cover_branches(conflicts: list[Conflict]) -> None:
    """A write that breaks the backward() through a save made on each path of a branch
    (`if opt.ragan: fake = D(x, y)` / `else: fake = D(x)`, the step after both) breaks it on
    every path: where the conflicts of one write and one backward() rest only on which path of
    one branch their saves ran, and together cover its paths, each is definite."""
    arms: dict[tuple[int, object, str, int], dict[int, int]] = {}
    paths: dict[tuple[int, object, str, int], int] = {}
    for at, conflict in enumerate(conflicts):
        mutation, save = conflict.mutation, conflict.save
        if (
            conflict.definite
            or mutation.possible
            or save.possible
            or save.unknown
            or conflict.grad_from
            or conflict.escapes_from
            or conflict.eval_branch
        ):
            continue
        extra = beyond(save.ctx, mutation.ctx)
        if len(extra) != 1 or not extra[0].split or extra[0].arms < 2:
            continue
        # (A backward() under a condition of its own fails whenever it runs after the write:
        # on each path of the branch a save it needs was made. Unless that condition may
        # exclude the write's.)
        if conflict.backward_ctx is not None and correlated(mutation.ctx, conflict.backward_ctx):
            continue
        key = (mutation.id, conflict.backward_loc, conflict.via, extra[0].split)
        arms.setdefault(key, {})[extra[0].arm] = at
        paths[key] = extra[0].arms
    for branch, found in arms.items():
        if len(found) == paths[branch]:
            for at in found.values():
                conflicts[at] = replace(
                    conflicts[at], definite=True, on_some_paths=False, branches=()
                )


def correlated(written_in: Ctx, used_in: Ctx) -> tuple[str, ...]:
    """The conditions the backward() runs under (those the write's context is not within)
    that may contradict a condition of the write, as a message says them: `if a and b:`
    around the step and `if c and not b:` around the backward() never both hold (unless `b`
    changed between them: nothing is proven either way)."""
    own = [
        literal
        for node in beyond(written_in, used_in)
        if node.label is not None
        for literal in _literals(node.label)
    ]
    if not own:
        return ()
    found: list[str] = []
    for node in beyond(used_in, written_in):
        if node.label is not None and any(
            _contradict(one, other) for one in _literals(node.label) for other in own
        ):
            form, condition, line = node.label
            code = short_source(condition) if condition is not None else ""
            found.append(form.format(code, f" (line {line})" if line else ""))
    return tuple(reversed(found))


# A fact a branch's condition states: ("truth", expression, holds) for `x` / `not x`;
# ("equals", expression, constant, holds) for `mode == "rec"` / `mode != "rec"`.
Literal = tuple[object, ...]


def _literals(label: Label) -> list[Literal]:
    """What taking a branch states, as a conjunction of literals (`if a and not b:` true: `a`
    and not `b`; false: nothing known of each alone, unless it is an `or`)."""
    form, condition, _ = label
    if condition is None or not form.startswith("`if "):
        return []
    found: list[Literal] = []
    _conjuncts(condition, form.endswith("is true"), found)
    return found


def _conjuncts(node: ast.AST, holds: bool, found: list[Literal]) -> None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _conjuncts(node.operand, not holds, found)
    elif isinstance(node, ast.BoolOp):
        # `a and b` holds: each holds; `a or b` fails: each fails; otherwise nothing alone.
        if isinstance(node.op, ast.And) == holds:
            for operand in node.values:
                _conjuncts(operand, holds, found)
    elif (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.comparators[0], ast.Constant)
        and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
    ):
        value = node.comparators[0].value
        holds = holds == isinstance(node.ops[0], (ast.Eq, ast.Is))
        subject = ast.unparse(node.left)
        if isinstance(value, bool):
            found.append(("truth", subject, holds == value))
        else:
            found.append(("equals", subject, repr(value), holds))
    else:
        found.append(("truth", ast.unparse(node), holds))


def _contradict(one: Literal, other: Literal) -> bool:
    """Whether two literals never hold together: `x` and `not x`; `m == 1` and `m == 2`;
    `m == 1` and `m != 1`."""
    if one[0] != other[0] or one[1] != other[1]:
        return False
    if one[0] == "truth":
        return one[2] != other[2]
    if one[2] == other[2]:
        return one[3] != other[3]
    return bool(one[3] and other[3])


# The parameters torch.nn layers hold: `weight`, `bias`, an RNN's `weight_hh_l0` /
# `bias_ih_l1_reverse`, MultiheadAttention's `in_proj_weight` / `bias_k`.
_LAYER_PARAMETER = re.compile(
    r"(weight|bias)(_(ih|hh|hr)_l\d+(_reverse)?)?|in_proj_(weight|bias)|[qkv]_proj_weight|bias_[kv]"
)


def is_parameter_name(attr: str) -> bool:
    """Whether a torch.nn layer names a parameter so (`weight`, `bias_hh_l0`, ...)."""
    return _LAYER_PARAMETER.fullmatch(attr) is not None


def eval_branch(ctx: Ctx) -> str:
    """The branch on a module's training flag that the context runs on in eval mode only
    (`if not self.training:` true, `if self.training:` false), as a message says it; ""
    when none."""
    node: Ctx | None = ctx
    while node is not None:
        form, condition, line = node.label if node.label is not None else ("", None, None)
        if condition is not None:
            negated = isinstance(condition, ast.UnaryOp) and isinstance(condition.op, ast.Not)
            inner = condition.operand if isinstance(condition, ast.UnaryOp) else condition
            if (
                isinstance(inner, ast.Attribute)
                and inner.attr == "training"
                and form.endswith("is true" if negated else "is false")
            ):
                return form.format(short_source(condition), f" (line {line})" if line else "")
        node = node.parent
    return ""


def implied(saved_in: Ctx, written_in: Ctx, used_in: Ctx) -> bool:
    """Whether every condition the save needed (those the write's context is not within)
    also holds where the save is used: the same test, taken the same way, around it."""
    held = {_condition(node.label) for node in _chain(used_in) if node.label is not None}
    needed = False
    for node in beyond(saved_in, written_in):
        if node.label is not None:
            if node.label[1] is None or _condition(node.label) not in held:
                return False
            needed = True
    return needed


def _chain(ctx: Ctx) -> list[Ctx]:
    found: list[Ctx] = []
    node: Ctx | None = ctx
    while node is not None:
        found.append(node)
        node = node.parent
    return found


def _condition(label: Label) -> tuple[str, str]:
    form, condition, _ = label
    return form, ast.unparse(condition) if condition is not None else ""


def short_source(node: ast.AST, limit: int = 40) -> str:
    """The source of a condition for a message, cut short when long."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def owning_instance(ref: ModuleRef | None) -> ModuleRef | None:
    """The nearest enclosing instance of a local class (whose __init__ built this module)."""
    while ref is not None and ref.cls is None:
        ref = ref.parent
    return ref


def location(node: ast.AST, start: int) -> Loc:
    """Where a node is in the document: its lines from a block starting at line `start`."""
    off = start - 1
    line: int = getattr(node, "lineno", 1)
    end_line: int = getattr(node, "end_lineno", None) or line
    col: int = getattr(node, "col_offset", 0)
    end_col: int = getattr(node, "end_col_offset", None) or col
    return (line + off, col, end_line + off, end_col)


def unknown_call(args: list[Value], kwargs: dict[str, Value]) -> Value:
    """The result of a call the analysis does not follow: it requires grad if an argument
    does, and its graph holds the arguments' graphs."""
    values = [*args, *kwargs.values()]
    grad: bool | None = (
        True if any(v.grad for v in values if v.tensorish or v.kind == "container") else None
    )
    graph: frozenset[int] = frozenset().union(*(_held_graph(v) for v in values))
    return Value("unknown", frozenset({new_id()}), None, grad, graph=graph)


def _held_graph(value: Value, depth: int = 0) -> frozenset[int]:
    """The graphs a value reaches, through the items it holds (a dict of a forward's
    outputs given to `compute_losses(outputs)` of another file)."""
    graph = value.graph
    if value.items is not None and depth < 3:
        graph = graph.union(*(_held_graph(item, depth + 1) for item in value.items))
    return graph
