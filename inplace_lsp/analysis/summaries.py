"""Per-function summaries: a function analysed once per distinct set of argument facts, its
effects kept like a torch op's entry in the knowledge table and applied at each call site.

A summary is made by running the function on symbolic copies of its arguments (`Inputs`):
each argument's version groups, graph, module (with the attributes the function reads) get
stand-ins with a path from the arguments (`("arg", 0), ("module",), ("attr", "fc"),
("params",)`). What the run does to those stand-ins is recorded in order (`Event`s: a save on
an argument's tensor, a write into it, a backward() through its graph, an optimizer step, an
attribute set on `self`); what it does to tensors it makes itself stays inside it (its own
saves, writes and conflicts, its heap at the exit). The facts of the arguments it depended on
(their kinds, grad, dtype, constants, the attributes it read) are its key: a call whose
arguments have the same facts gets the same summary without running the function again.

Applying a summary (`Application`) maps each stand-in back to the caller's object by its path,
replays the events on the caller's heap (so a save in the function and a write in the caller,
or the reverse, meet), moves the function's own tensors and saves into the caller with fresh
ids, and grafts the function's branch contexts under the caller's.
"""

from __future__ import annotations

import ast
import dataclasses
import weakref
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from inplace_lsp.analysis.domain import (
    NO_NAMES,
    Ctx,
    Facts,
    Heap,
    InferenceSite,
    Loc,
    ModuleRef,
    Mutation,
    Save,
    Value,
    new_id,
    replace,
    unknown,
)
from inplace_lsp.analysis.model import ClassInfo, ModuleModel, Submodule
from inplace_lsp.analysis.units import Cell, Table, Unit, places


@dataclass(frozen=True, slots=True)
class Resolver:
    """How a path is taken in a caller's world: a step `("attr", name)` on a module by the
    evaluator's module_attr (which builds a submodule's value from the class when first
    read), a root `("global", name)` by the module-level variable the caller sees."""

    attr: Callable[[ModuleRef, str], Value]
    global_value: Callable[[str], Value | None]
    frozen: Callable[[ModuleRef], bool]


# The last step of a read's path that stands for whether the module there is frozen (its
# parameters do not require grad), not for a part of it.
FROZEN = ("frozen",)


Path = tuple[Hashable, ...]  # ("arg", 0) or ("kw", "x"), then steps ("item", 1), ("attr", "fc")
Slot = tuple[Hashable, "Cell | None"]  # where a function's summaries are, the cell of its text
_DEPTH = 4  # how deep argument facts are compared (items of items, attributes of attributes)
_ITEMS = 16  # and how many items of a container
_UNUSED = 2  # a summary of another file's function this many updates did not use is dropped
_KEPT = 4  # and of a document function's, those beyond the 4 its last updates used
_KEPT_SLOW = 64  # functions marked too slow to analyse kept per document


@dataclass(frozen=True, slots=True)
class SaveEvent:
    save: Save  # a save, in the function, of a tensor of an argument (its group is a stand-in)


@dataclass(frozen=True, slots=True)
class WriteEvent:
    mutation: Mutation  # a write, in the function, into an argument's tensor
    groups: frozenset[int]  # the stand-in groups it writes
    track_alias: bool  # other names of the caller reading it afterwards see the new values
    safe_candidate: bool  # a Hint ("checked: safe") if the caller had nothing saved there


@dataclass(frozen=True, slots=True)
class BackwardEvent:
    graphs: frozenset[int]  # stand-in graphs (of arguments) it runs through
    own: frozenset[int]  # saves of the function on argument tensors it runs through
    retain: bool
    loc: Loc
    path: str | None  # the file of `loc` (None: the document)


@dataclass(frozen=True, slots=True)
class CarryEvent:
    """An op of the function builds on an argument's graph (an RNN fed `self.hidden`): where
    that graph holds saves a backward() freed, this op is where the next backward() will go
    through them again."""

    graphs: frozenset[int]  # stand-in graphs, each the first time an op of the run used it
    loc: Loc
    path: str | None  # the file of `loc` (None: the document)
    inexact: bool  # a call the op is in, or a pass of a loop that may not run


@dataclass(frozen=True, slots=True)
class NoGradsEvent:
    groups: frozenset[int]  # parameter groups zero_grad() left without a gradient


@dataclass(frozen=True, slots=True)
class FreezeEvent:
    groups: frozenset[int]  # parameter groups set to requires_grad=False one by one


@dataclass(frozen=True, slots=True)
class UnknownReadEvent:
    groups: frozenset[int]  # stand-in groups given to a call the analysis does not follow


@dataclass(frozen=True, slots=True)
class StepEvent:
    write: WriteEvent  # optimizer.step(): skipped where every parameter has no gradient
    steps: frozenset[int]


@dataclass(frozen=True, slots=True)
class ValueEvent:
    """A change of an argument object itself: an attribute set (`self.h = h`), an item
    appended, a flag set (`model.eval()`, `requires_grad_`), a graph or grad joined in."""

    path: Path
    # "attr" | "append" | "item" | "training_flag" | "frozen" | "graph" | "grad" | "toggle"
    what: str
    name: str = ""
    value: Value | None = None
    flag: object = None
    graph: frozenset[int] = frozenset()


Event = (
    SaveEvent
    | WriteEvent
    | BackwardEvent
    | CarryEvent
    | NoGradsEvent
    | FreezeEvent
    | StepEvent
    | UnknownReadEvent
    | ValueEvent
)


@dataclass(slots=True, weakref_slot=True)  # (engine._Stored refers to it weakly)
class Summary:
    fn: ast.FunctionDef | ast.AsyncFunctionDef
    key: Hashable  # the facts of its arguments, of the state it ran in
    reads: tuple[tuple[Path, Hashable], ...]  # and of what it read through them
    events: list[Event]
    result: Value | None  # what it returns (None: it returns nothing)
    facts: Facts  # what it found in itself
    exit: Heap  # its heap when it returns (its own tensors' saves, writes, frees)
    escaped: frozenset[int]
    followed: frozenset[str]
    cut: int  # calls inside it not followed (a limit)
    inputs: Inputs
    root: Ctx  # the context it ran in: a call site's context takes its place
    cells: frozenset[Cell]  # what its run read of the document's definitions (units.Cell)
    saves: dict[int, Save]  # the saves its run made (and those of the summaries it applied)
    # The def nodes its run made into values (and the runs of the summaries it applied): an
    # argument's function is in its key (value_facts), these are not.
    functions_made: frozenset[int]
    # Functions its run did not follow: (line, column) of the def -> the function's name and
    # why (None: a call chain too deep; a number: its run took longer than that many seconds).
    unfollowed: dict[tuple[int, int], tuple[str, float | None]] = field(default_factory=dict)
    # Kept across updates (SummaryCache.begin): the value of each cell its run read, the
    # place of each unit whose lines its findings may name, and the last update it held in.
    deps: dict[Cell, object] = field(default_factory=dict)
    units: tuple[Unit, ...] = ()
    layout: tuple[tuple[Hashable, int, int], ...] | None = None
    verified: int = 0
    used: int = 0  # the last update that found or made it
    # The cells its deps hold through the functions it called (their own and what their
    # runs read), and those of them changed since it was made: it holds if each changed
    # callee's summary for the same arguments says the same (Interpreter.still_holds).
    inherited: frozenset[Cell] = frozenset()
    suspect: frozenset[Cell] = frozenset()
    name: str = ""  # "Net.forward"
    key_hash: int = field(init=False, default=0)  # hash(key), compared before key
    said: Hashable = field(init=False, default=None, repr=False)  # its fingerprint, once said

    def __post_init__(self) -> None:
        self.key_hash = hash(self.key)


@dataclass(slots=True)
class Call:
    """A call of one of the document's functions in a summary's run (Inputs.calls): what a
    later update needs to get the callee's summary for the same arguments again, and the one
    the run applied, to tell whether they say the same."""

    name: str  # the callee: "helper", "Block.forward"
    fn: ast.FunctionDef | ast.AsyncFunctionDef  # its node in the update the run was in
    args: list[Value]
    kwargs: dict[str, Value]
    key: Hashable
    grad_enabled: bool
    inference: InferenceSite | None
    uncertain: int
    library_calls: int
    stack: tuple[ast.AST, ...]
    summary: Summary
    cells: frozenset[Cell]  # the callee's own cell and what its run read


_UNREAD = object()


def _hashable(value: object) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value  # type: ignore[return-value]


class Inputs:
    """The stand-ins of a function's arguments, and the facts of the real ones it depends on.

    `symbolize` makes the stand-in of a real value (the first call's): the same facts, its own
    ids. What the run reads later through a stand-in module (`self.fc`) is made then, from the
    real one, and its facts join the key (`read`)."""

    def __init__(self) -> None:
        self.groups: dict[int, Path] = {}  # stand-in group -> its path
        self.graphs: dict[int, Path] = {}  # stand-in graph id -> the path of its value
        self.values: dict[int, Path] = {}  # id(stand-in value) -> path
        self.refs: dict[int, Path] = {}  # id(stand-in module) -> path
        self.real: dict[int, object] = {}  # id(stand-in) -> the real object (while running)
        self.keep: list[object] = []  # the stand-ins (their ids must stay unique)
        self._made: dict[int, object] = {}  # id(real object) -> its stand-in
        self._group_of: dict[int, int] = {}  # real group -> stand-in group
        # lazily read paths and their facts (the first read of each: a dict keeps their order)
        self.reads: dict[Path, Hashable] = {}
        self._globals: dict[str, Value | None] = {}  # module-level variables read
        self.calls: list[Call] = []  # the document's functions the run called
        self.carried: set[int] = set()  # stand-in graphs an op of the run built on
        self.root: Ctx | None = None  # the context the function's body starts in

    # making stand-ins ------------------------------------------------------------
    def symbolize(self, real: Value, path: Path, name: str | None = None) -> Value:
        made = self._made.get(id(real))
        if made is not None:
            assert isinstance(made, Value)
            return made
        sym = replace(real)
        self._made[id(real)] = sym
        self.keep.append(sym)
        path = intern(path)
        self.values[id(sym)] = path
        self.real[id(sym)] = real
        sym.groups = self._groups(real.groups, path, "group")
        sym.steps = self._groups(real.steps, path, "steps")
        if real.graph:
            placeholder = new_id()
            self.graphs[placeholder] = path
            sym.graph = frozenset({placeholder})
        if real.items is not None:
            sym.items = tuple(
                self.symbolize(item, (*path, ("item", i))) for i, item in enumerate(real.items)
            )
        if real.element is not None:
            sym.element = self.symbolize(real.element, (*path, ("element",)))
        if real.module is not None:
            sym.module = self.symbolize_ref(real.module, (*path, ("module",)))
        if real.function is not None and real.function.bound is not None:
            bound = self.symbolize_ref(real.function.bound, (*path, ("bound",)))
            sym.function = replace(real.function, bound=bound)
        if name is not None:
            sym.name = name
        return sym

    def _groups(self, groups: frozenset[int], path: Path, facet: str) -> frozenset[int]:
        made = []
        for k, group in enumerate(sorted(groups)):
            sym = self._group_of.get(group)
            if sym is None:
                sym = self._group_of[group] = new_id()
                self.groups[sym] = intern((*path, (facet, k)))
            made.append(sym)
        return frozenset(made)

    def symbolize_ref(self, ref: ModuleRef, path: Path) -> ModuleRef:
        made = self._made.get(id(ref))
        if made is not None:
            assert isinstance(made, ModuleRef)
            return made
        sym = replace(ref, attrs={}, assigned=NO_NAMES, lazy=None)
        self._made[id(ref)] = sym
        self.keep.append(sym)
        path = intern(path)
        self.refs[id(sym)] = path
        self.real[id(sym)] = ref
        sym.params_group = next(iter(self._groups(frozenset({ref.params_group}), path, "params")))
        if ref.parent is not None:
            sym.parent = self.symbolize_ref(ref.parent, (*path, ("parent",)))
        if ref.children is not None:
            sym.children = [
                self.symbolize_ref(child, (*path, ("child", i)))
                for i, child in enumerate(ref.children)
            ]
        return sym

    def global_value(self, name: str, real: Value | None) -> Value | None:
        """A module-level variable the function reads (`model` in a script's `train()`): its
        stand-in, and its facts (or its absence) a fact the summary depends on."""
        if name in self._globals:
            return self._globals[name]
        path: Path = intern((("global", name),))
        self.reads.setdefault(path, intern(value_facts(real)) if real is not None else None)
        sym = self.symbolize(real, path) if real is not None else None
        self._globals[name] = sym
        return sym

    def done(self) -> None:
        """The run is over: the real objects are the caller's to keep, not the summary's."""
        self.real.clear()
        self._made.clear()
        self._group_of.clear()

    def read(self, path: Path, real: Value) -> None:
        if path not in self.reads:
            self.reads[intern(path)] = intern(value_facts(real))

    # what a group or graph of the run stands for ------------------------------------
    def external(self, groups: Iterable[int]) -> frozenset[int]:
        return frozenset(g for g in groups if g in self.groups)


# The facts and paths summaries keep (their reads), one object for equal ones: a whole-file
# analysis reads the same attribute of the same kind of object in many runs, and each tuple
# kept is one more object for the garbage collector to walk after every update. Two
# generations of at most _INTERNED_MAX each: what the newer holds, and what was asked for
# since the older became the older, stays; the rest goes when the newer is full. Facts name
# the AST nodes and classes of one parse (their ids), so an edited function's facts never
# come back: one table kept up to 100,000 of them (~6 kB each), +15 MB per 1,000 keystrokes.
_INTERNED: dict[Hashable, Hashable] = {}
_INTERNED_OLDER: dict[Hashable, Hashable] = {}
_INTERNED_MAX = 4096
_EMPTY: frozenset[int] = frozenset()

Interned = TypeVar("Interned", bound=Hashable)


def intern(facts: Interned) -> Interned:
    """The kept object equal to `facts` (itself, the first time)."""
    global _INTERNED, _INTERNED_OLDER
    found = _INTERNED.get(facts)
    if found is not None:
        return found  # type: ignore[return-value]
    if len(_INTERNED) >= _INTERNED_MAX:
        _INTERNED_OLDER, _INTERNED = _INTERNED, {}  # (only an economy: equal stay equal)
    found = _INTERNED[facts] = _INTERNED_OLDER.get(facts, facts)
    return found  # type: ignore[return-value]


def value_facts(
    value: Value,
    depth: int = 0,
    groups: dict[int, int] | None = None,
    modules: dict[tuple[int, int], Hashable] | None = None,
) -> Hashable:
    """What a value is, as far as a function's analysis can tell it apart: its kind, grad,
    dtype, layout, constant, where it came from, its items and its module (not its ids, but
    which of the arguments share a version group)."""
    if groups is None:
        groups = {}
    shared = tuple(groups.setdefault(g, len(groups)) for g in sorted(value.groups))
    items: Hashable = None
    if value.items is not None:
        items = (
            len(value.items),
            tuple(value_facts(i, depth + 1, groups, modules) for i in value.items[:_ITEMS])
            if depth < _DEPTH
            else (),
        )
    const = _hashable(value.const) if value.has_const else None
    return (
        value.kind,
        shared,
        value.tensor,
        value.grad,
        value.grad_assumed,
        value.kind_assumed,
        value.leaf,
        value.detached,
        value.partial,
        value.joined,
        value.producer,
        value.has_const,
        const,
        value.dtype,
        value.contiguous,
        value.inference,
        value.view_kind,
        value.param,
        value.maybe,
        value.pieces,
        bool(value.graph),
        value.grad_from,
        value.origin,
        value.qualname,
        id(value.function.node) if value.function is not None else None,
        module_facts(value.function.bound, depth, modules)
        if value.function is not None and value.function.bound is not None
        else None,
        _hashable(value.keys),
        value_facts(value.element, depth + 1, groups, modules)
        if value.element is not None and depth < _DEPTH
        else None,
        value.name if depth else None,
        items,
        module_facts(value.module, depth, modules) if value.module is not None else None,
    )


def module_facts(
    ref: ModuleRef, depth: int = 0, memo: dict[tuple[int, int], Hashable] | None = None
) -> Hashable:
    """What a module is, as far as a function's analysis can tell it apart (`memo`: those
    already said in one key, a module and its parents being in many values)."""
    if memo is not None:
        known = memo.get((id(ref), depth))
        if known is not None:
            return known
    facts = (
        id(ref.cls),
        ref.qualname,
        id(ref.submodule),
        # where its constructor call is (a block's lines are numbered from its start when it
        # is parsed alone, from the file's when with the whole text: site_start says which)
        ref.site_start + ref.call.lineno if ref.call is not None else None,
        ref.site_path,
        ref.training,
        ref.params_frozen,
        ref.conditional,
        ref.uncounted,
        _consts_facts(ref),
        tuple(sorted((k, _hashable(v)) for k, v in ref.layer_args.items())),
        tuple((hook.kind, id(hook.function.node)) for hook in ref.hooks),
        len(ref.children) if ref.children is not None else None,
        ref.child_names,
        module_facts(ref.parent, depth + 1, memo)
        if ref.parent is not None and depth < _DEPTH
        else None,
    )
    if memo is not None:
        memo[(id(ref), depth)] = facts
    return facts


def _consts_facts(ref: ModuleRef) -> Hashable:
    """A module's constant constructor arguments as a key (said once per dict: the builders
    of `consts` fill a new dict, its copies share it)."""
    said = ref.consts_said
    if said is None or said[0] is not ref.consts:
        said = ref.consts_said = (
            ref.consts,
            tuple(sorted((k, _hashable(v)) for k, v in ref.consts.items())),
        )
    return said[1]


def arguments_key(args: list[Value], kwargs: dict[str, Value]) -> tuple[Hashable, ...]:
    groups: dict[int, int] = {}
    modules: dict[tuple[int, int], Hashable] = {}
    return (
        tuple(value_facts(a, 0, groups, modules) for a in args),
        tuple(sorted((k, value_facts(v, 0, groups, modules)) for k, v in kwargs.items())),
    )


@dataclass(slots=True)
class SummaryCache:
    """The summaries of a document's analyses, shared by its entry points and kept from one
    update to the next (as an entry point's findings are, engine._cached): a summary holds
    while every definition its run read is unchanged and the units its findings may name have
    not moved. `runs` counts how often each function was run to make one in this update."""

    # Where each function's summaries are kept (see slot).
    by_function: dict[Hashable, list[Summary]] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)  # "Net.forward" -> times interpreted
    # and how many of its summaries held although a callee had changed (early cutoff)
    kept: dict[str, int] = field(default_factory=dict)
    # The document's model by a name that outlives one update's ModuleModel object: what
    # every summary of the document rests on besides the definitions it read (its imports).
    document: Hashable = None
    table: Table | None = None  # this update's units (None: one analysis, nothing kept)
    revision: int = 0
    # Summaries made while checking a suspect one (Interpreter.still_holds), from the
    # arguments its run gave a callee as they were then: what the callee reads lazily of them
    # (an object's attributes) is not all there, so they serve only such checks, which
    # compare them with the summaries they stand for, and go at the next update.
    checking: int = 0
    provisional: dict[Hashable, list[Summary]] = field(default_factory=dict)
    # The functions whose run took longer than the time limit (by their text, see slow_key),
    # with that limit: not run again while their text is the same (their callers take them
    # as unknown; as entry points they are said not analysed).
    too_slow: dict[Hashable, float] = field(default_factory=dict)
    # What the document's analyses derive once from a syntax node, while the node lives: a
    # constant's Value (one shared by every use: scalars are never mutated), a lambda's def
    # (its summaries are kept by it), whether another file's function can write in place and
    # whether a loop calls backward() (its def or loop: the keys never meet).
    # Kept here, not on the nodes: other documents' analyses, in other threads, share the
    # trees of the files they import.
    constants: weakref.WeakKeyDictionary[ast.Constant, Value] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    lambdas: weakref.WeakKeyDictionary[ast.Lambda, ast.FunctionDef] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    flags: weakref.WeakKeyDictionary[ast.AST, bool] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    def begin(
        self, table: Table | None, document: Hashable, changes: frozenset[Cell] | None, moved: bool
    ) -> None:
        """A new update of the document: the summaries that no longer hold are dropped.
        `changes`: the cells whose values differ from the last update's (None: not known);
        `moved`: whether any unit is somewhere else now. Of a document function's, those
        beyond the _KEPT its last updates used go too (a key may hold objects no later update
        has); of another file's, one the last updates did not use (edits of the document
        re-run the functions that use it: an edit elsewhere does not)."""
        self.revision += 1
        self.runs, self.kept = {}, {}
        self.provisional.clear()
        if table is None or document != self.document:
            self.by_function.clear()
            self.too_slow.clear()
        elif len(self.too_slow) > _KEPT_SLOW:
            self.too_slow.clear()  # (texts the document may no longer have: timed again)
        self.table, self.document = table, document
        if table is None:
            return
        for slot, summaries in list(self.by_function.items()):
            if isinstance(slot, tuple):  # a document function's: other edits did not use it
                kept = [s for s in summaries if self._holds(s, table, changes, moved)]
                kept = sorted(kept, key=lambda s: -s.used)[:_KEPT]
            else:
                kept = [
                    s
                    for s in summaries
                    if s.used >= self.revision - _UNUSED and self._holds(s, table, changes, moved)
                ]
            if kept:
                self.by_function[slot] = kept
            else:
                del self.by_function[slot]

    def slot(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> Slot:
        """Where a function's summaries are kept, and the cell of its text: a function or
        method the document defines by its name, text and line (a block parsed again gives
        it a new node; its summaries hold while it is the same), any other by its node."""
        name = model.def_key(fn) if model.path is None else ""
        if not name:
            return id(fn), None
        owner, _, method = name.rpartition(".")
        own: Cell = (("m", owner), method) if owner else ("f", name)
        if self.table is None:
            return id(fn), own
        return ("def", name, self.table.value(own), fn.lineno + model.start_of(fn) - 1), own

    @staticmethod
    def slow_key(slot: Slot) -> Hashable:
        """What a function's time-limit mark is kept by: a document function's name and text
        (not its line: one that moved is as slow), another's node."""
        key = slot[0]
        return key[:3] if isinstance(key, tuple) else key

    def _holds(
        self, summary: Summary, table: Table, changes: frozenset[Cell] | None, moved: bool
    ) -> bool:
        """Whether a summary may be used in this update: every cell its run read unchanged,
        or those changed only through the functions it called (then it is suspect until
        checked), and its units where they were."""
        if summary.layout is None:
            return False
        if summary.verified == self.revision - 1 and changes is not None:
            changed = [cell for cell in changes if cell in summary.deps]
        else:
            changed = [cell for cell, value in summary.deps.items() if table.value(cell) != value]
        if changed:
            if not summary.inherited.issuperset(changed):
                return False
            summary.suspect = summary.suspect.union(changed)
        if moved and table.layout(summary.units) != summary.layout:
            if not summary.suspect:
                return False
            # a changed callee's unit has a new text hash, in the same place
            units = tuple(table.units_of(summary.deps))
            layout = table.layout(units)
            if layout is None or places(layout) != places(summary.layout):
                return False
            summary.units, summary.layout = units, layout
        summary.verified = self.revision
        return True

    def confirm(
        self,
        summary: Summary,
        read: frozenset[Cell] = frozenset(),
        names: Iterable[tuple[Path, Hashable]] = (),
    ) -> None:
        """A suspect summary found to hold: its deps are this update's values, and it rests
        on what its changed callees' runs now `read` too (through them), and on the
        module-level `names` they read (a caller's run reads those its callees read)."""
        names = tuple(names)
        if names:
            known = {path for path, _ in summary.reads}
            summary.reads += tuple(r for r in names if r[0] not in known)
        table = self.table
        if table is not None:
            read = _with_class_infos(read)
            for cell in summary.suspect | read:
                summary.deps[cell] = table.value(cell)
            summary.inherited |= read
        summary.suspect = frozenset()
        self.kept[summary.name] = self.kept.get(summary.name, 0) + 1

    def drop(self, slot: Hashable, summary: Summary) -> None:
        """A suspect summary found not to hold."""
        for store in (self.by_function, self.provisional):
            kept = [s for s in store.get(slot, ()) if s is not summary]
            if kept:
                store[slot] = kept
            else:
                store.pop(slot, None)

    def clear(self) -> None:
        """What the summaries read of other files changed."""
        self.by_function.clear()

    def key(
        self, model: ModuleModel, state: Hashable, args: list[Value], kwargs: dict[str, Value]
    ) -> Hashable:
        """What a summary of a function of this file, run in this state, rests on."""
        return (self.model_key(model), state, arguments_key(args, kwargs))

    def find(
        self,
        slot: Hashable,
        key: Hashable,
        args: list[Value],
        kwargs: dict[str, Value],
        resolve: Resolver,
    ) -> Summary | None:
        candidates = self.by_function.get(slot, [])
        if self.checking:
            candidates = [*candidates, *self.provisional.get(slot, ())]
        wanted = hash(key)
        # (what the caller has at each path, said once for all the candidates)
        facts: dict[Path, Hashable] = {}
        modules: dict[tuple[int, int], Hashable] = {}
        for summary in candidates:
            if summary.key_hash != wanted or summary.key != key:
                continue
            for path, then in summary.reads:
                now = facts.get(path, _UNREAD)
                if now is _UNREAD:
                    now = facts[path] = _facts_at(path, args, kwargs, resolve, modules)
                if now != then:
                    break
            else:
                summary.used = self.revision
                return summary
        return None

    def model_key(self, model: ModuleModel) -> Hashable:
        """The file whose function a summary is of: the document by its imports, another
        file by its model (the workspace keeps one per version of the file)."""
        return self.document if model.path is None else id(model)

    def add(self, summary: Summary, name: str, slot: Slot, recorded: bool) -> None:
        """A summary made in this update, kept (see slot) for the next ones where what its
        run read was `recorded` (summary.cells). `slot[1]` is the cell of its function's text
        (None: another file's function, whose version keys everything,
        engine._check_other_files, or a nested one)."""
        where, own = slot
        store = self.provisional if self.checking else self.by_function
        store.setdefault(where, []).append(summary)
        self.runs[name] = self.runs.get(name, 0) + 1
        summary.name = name
        summary.verified = summary.used = self.revision
        table = self.table
        if table is None or not recorded:
            return
        cells = set(_with_class_infos(summary.cells))
        if own is not None:
            cells.add(own)
        summary.deps = {cell: table.value(cell) for cell in cells}
        summary.units = tuple(table.units_of(cells))
        summary.layout = table.layout(summary.units)
        summary.inherited = frozenset().union(*(call.cells for call in summary.inputs.calls))


def _with_class_infos(cells: frozenset[Cell]) -> frozenset[Cell]:
    """The cells, and the ClassInfo cell of each class whose shape they hold: the objects
    of a class a run made or read hold that class's ClassInfo."""
    return cells.union(("ci", name) for tag, name in cells if tag == "c")


def resolve_path(
    path: Path, args: list[Value], kwargs: dict[str, Value], resolver: Resolver
) -> object:
    """The caller's object at a path (a Value, a ModuleRef, a group id or a graph), or None
    when the caller's values have no such part."""
    root = path[0]
    current: object
    if root[0] == "arg":  # type: ignore[index]
        index = root[1]  # type: ignore[index]
        current = args[index] if index < len(args) else None  # type: ignore[operator]
    elif root[0] == "global":  # type: ignore[index]
        current = resolver.global_value(root[1])  # type: ignore[index]
    else:
        current = kwargs.get(root[1])  # type: ignore[index,arg-type]
    for step in path[1:]:
        if current is None:
            return None
        kind = step[0]  # type: ignore[index]
        if kind == "item":
            items = current.items if isinstance(current, Value) else None
            index = step[1]  # type: ignore[index]
            current = items[index] if items is not None and index < len(items) else None
        elif kind == "module":
            current = current.module if isinstance(current, Value) else None
        elif kind == "bound":
            function = current.function if isinstance(current, Value) else None
            current = function.bound if function is not None else None
        elif kind == "element":
            current = current.element if isinstance(current, Value) else None
        elif kind == "attr":
            current = (
                resolver.attr(current, step[1])  # type: ignore[index]
                if isinstance(current, ModuleRef)
                else None
            )
        elif kind == "parent":
            current = current.parent if isinstance(current, ModuleRef) else None
        elif kind == "child":
            children = current.children if isinstance(current, ModuleRef) else None
            index = step[1]  # type: ignore[index]
            current = children[index] if children is not None and index < len(children) else None
        elif kind in ("group", "steps"):
            if not isinstance(current, Value):
                return None
            groups = sorted(current.groups if kind == "group" else current.steps)
            index = step[1]  # type: ignore[index]
            return groups[index] if index < len(groups) else None
        elif kind == "params":
            return current.params_group if isinstance(current, ModuleRef) else None
    return current


def _facts_at(
    path: Path,
    args: list[Value],
    kwargs: dict[str, Value],
    resolver: Resolver,
    modules: dict[tuple[int, int], Hashable] | None = None,
) -> Hashable:
    if path[-1] == FROZEN:
        ref = resolve_path(path[:-1], args, kwargs, resolver)
        return resolver.frozen(ref) if isinstance(ref, ModuleRef) else None
    found = resolve_path(path, args, kwargs, resolver)
    return value_facts(found, 0, None, modules) if isinstance(found, Value) else None


class Application:
    """One call site's use of a summary: the caller's objects for the stand-ins, fresh ids for
    what the function made, and its branch contexts under the caller's."""

    def __init__(
        self,
        summary: Summary,
        args: list[Value],
        kwargs: dict[str, Value],
        caller_ctx: Ctx,
        root_ctx: Ctx,
        resolver: Resolver,
        saves: dict[int, Save],
        lazy: bool = False,
        call_site: tuple[Loc, str | None] | None = None,
    ) -> None:
        self.summary = summary
        self.call_site = call_site  # where the caller calls it (the saves' called_at)
        # Outside any summary's run, the attributes of the objects it made are copied when
        # first read (ModuleRef.attributes): an object's whole tree is seldom used. What the
        # caller's objects are at the summary's paths is taken now, as a copy made now would.
        self.lazy = lazy
        self._taken = False  # (see _take)
        self.args = args
        self.kwargs = kwargs
        self.caller_ctx = caller_ctx
        self.root_ctx = root_ctx
        self.resolver = resolver
        self.saves = saves
        self._resolved: dict[Path, object] = {}
        self._groups: dict[int, frozenset[int]] = {}
        self._sids: dict[int, frozenset[int]] = {}
        self._values: dict[int, Value] = {}
        self._refs: dict[int, ModuleRef] = {}
        self._ctxs: dict[int, Ctx] = {}
        self._splits: dict[int, int] = {}
        self._mutations: dict[int, Mutation] = {}
        self.own_groups: dict[int, int] = {}  # a group the function made -> its new id
        self.own_sids: dict[int, int] = {}  # a save of the function -> its new id

    def resolve(self, path: Path) -> object:
        if path not in self._resolved:
            self._resolved[path] = resolve_path(path, self.args, self.kwargs, self.resolver)
        return self._resolved[path]

    def _take(self) -> None:
        """What the caller has at each of the summary's paths (its objects, their version
        groups and graphs), taken once, before the first lazy copy: a copy made later must
        see them as a copy made now would."""
        if self._taken:
            return
        self._taken = True
        inputs = self.summary.inputs
        for path in (*inputs.values.values(), *inputs.refs.values()):
            self.resolve(path)
        self.groups(inputs.groups)
        self.graph(inputs.graphs)

    # ids ----------------------------------------------------------------------------
    def groups(self, groups: Iterable[int]) -> frozenset[int]:
        found: frozenset[int] | None = None  # (one group's set is shared, not copied)
        inputs = self.summary.inputs
        for group in groups:
            mapped = self._groups.get(group)
            if mapped is None:
                path = inputs.groups.get(group)
                if path is not None:
                    real = self.resolve(path)
                    mapped = frozenset({real}) if isinstance(real, int) else frozenset()
                else:
                    self.own_groups[group] = new_id()
                    mapped = frozenset({self.own_groups[group]})
                self._groups[group] = mapped
            found = mapped if found is None else found | mapped
        return _EMPTY if found is None else found

    def graph(self, sids: Iterable[int]) -> frozenset[int]:
        found: frozenset[int] | None = None
        inputs = self.summary.inputs
        for sid in sids:
            mapped = self._sids.get(sid)
            if mapped is None:
                path = inputs.graphs.get(sid)
                if path is not None:
                    real = self.resolve(path)
                    mapped = real.graph if isinstance(real, Value) else frozenset()
                elif sid in self.summary.saves:
                    mapped = frozenset({self.save(self.summary.saves[sid]).id})
                else:
                    mapped = frozenset()
                self._sids[sid] = mapped
            found = mapped if found is None else found | mapped
        return _EMPTY if found is None else found

    def save(self, save: Save) -> Save:
        """The caller's copy of a save the function made (registered, not yet live)."""
        known = self.own_sids.get(save.id)
        if known is not None:
            return self.saves[known]
        (group,) = self.groups([save.group]) or (save.group,)
        reach = self.groups(save.reach) if save.reach else save.reach
        copy = replace(save, id=new_id(), group=group, ctx=self.ctx(save.ctx), reach=reach)
        if self.call_site is not None:
            copy.called_at, copy.called_at_path = self.call_site
        self.saves[copy.id] = copy
        self.own_sids[save.id] = copy.id
        self._sids[save.id] = frozenset({copy.id})
        return copy

    def ctx(self, ctx: Ctx) -> Ctx:
        if ctx is self.root_ctx:
            return self.caller_ctx
        known = self._ctxs.get(id(ctx))
        if known is None:
            parent = self.ctx(ctx.parent) if ctx.parent is not None else self.caller_ctx
            # (a branch of this call is another run of it than the same branch of another
            # call: its own split id)
            split = self._splits.setdefault(ctx.split, new_id()) if ctx.split else 0
            known = self._ctxs[id(ctx)] = Ctx(parent, ctx.label, split, ctx.arm, ctx.arms)
        return known

    def mutation(self, mutation: Mutation) -> Mutation:
        known = self._mutations.get(mutation.id)
        if known is None:
            known = replace(
                mutation, ctx=self.ctx(mutation.ctx), aliases_read=mutation.aliases_read
            )
            self._mutations[mutation.id] = known
        return known

    # values ------------------------------------------------------------------------
    def value(self, value: Value) -> Value:
        """The caller's value for one of the function's (an argument's own object, or a copy
        with the caller's ids)."""
        path = self.summary.inputs.values.get(id(value))
        if path is not None:
            real = self.resolve(path)
            return real if isinstance(real, Value) else unknown()
        known = self._values.get(id(value))
        if known is not None:
            return known
        copy = replace(value)
        self._values[id(value)] = copy
        copy.groups = self.groups(value.groups)
        copy.steps = self.groups(value.steps)
        copy.graph = self.graph(value.graph)
        if value.items is not None:
            copy.items = tuple(self.value(item) for item in value.items)
        if value.element is not None:
            copy.element = self.value(value.element)
        if value.module is not None:
            copy.module = self.ref(value.module)
        if value.function is not None and value.function.bound is not None:
            copy.function = replace(value.function, bound=self.ref(value.function.bound))
        return copy

    def ref(self, ref: ModuleRef) -> ModuleRef:
        path = self.summary.inputs.refs.get(id(ref))
        if path is not None:
            real = self.resolve(path)
            return real if isinstance(real, ModuleRef) else ref
        known = self._refs.get(id(ref))
        if known is not None:
            return known
        copy = replace(ref, attrs={})
        self._refs[id(ref)] = copy
        (copy.params_group,) = self.groups([ref.params_group])
        if ref.parent is not None:
            copy.parent = self.ref(ref.parent)
        if ref.children is not None:
            copy.children = [self.ref(child) for child in ref.children]
        if self.lazy:
            self._take()
            copy.lazy = (self.value, ref.attributes())
        else:
            copy.attrs = {name: self.value(v) for name, v in ref.attributes().items()}
        return copy


# Fields whose ints are ids from new_id (version groups, saves, mutations): two runs of the
# same code number them differently, so a fingerprint names them in the order it meets them.
_ID_FIELDS = frozenset(
    {
        "id",
        "group",
        "groups",
        "steps",
        "graph",
        "graphs",
        "own",
        "params_group",
        "live",
        "stale",
        "freed",
        "pending_alias",
        "no_grads",
        "silent",
        "split",
        "unknown_reads",
        "reach",
    }
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# Fields no caller reads: what a module's constants said, and where the callee's own freed
# saves were freed and built on (a retention is found within the run that frees them).
_UNSAID = frozenset({"consts_said", "carried", "freed_by"})
_fields: dict[type, tuple[str, ...]] = {}


class _Canon:
    """A summary as plain data with its ids and objects numbered in the order met: two
    summaries that say the same (the callee's events, result, findings and heap, of code that
    differs only where it does not change them) give equal fingerprints."""

    def __init__(self, summary: Summary) -> None:
        self.names: dict[int, Hashable] = {}
        self.memo: dict[int, Hashable] = {id(summary.root): "root"}
        self.count = 0  # objects met
        inputs = summary.inputs
        for group, path in (*inputs.groups.items(), *inputs.graphs.items()):
            self.names[group] = ("in", path)
        for made in inputs.keep:
            path = inputs.values.get(id(made)) or inputs.refs.get(id(made)) or ()
            self.memo[id(made)] = ("in", path)

    def ident(self, raw: int) -> Hashable:
        name = self.names.get(raw)
        if name is None:
            name = self.names[raw] = len(self.names)
        return name

    def ids(self, value: object) -> Hashable:
        if isinstance(value, int) and not isinstance(value, bool):
            return self.ident(value)
        if isinstance(value, (set, frozenset)):
            return frozenset(self.ids(v) for v in sorted(value))
        if isinstance(value, dict):
            return tuple((self.ids(k), self.ids(v)) for k, v in value.items())
        if isinstance(value, (tuple, list)):
            return tuple(self.ids(v) for v in value)
        return self.walk(value)

    def walk(self, value: object) -> Hashable:
        if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
            return value
        if isinstance(value, (tuple, list)):
            return tuple(self.walk(v) for v in value)
        if isinstance(value, dict):
            return ("dict", tuple((self.walk(k), self.walk(v)) for k, v in value.items()))
        if isinstance(value, (set, frozenset)):
            return frozenset(self.walk(v) for v in value)
        if isinstance(value, _FUNCTIONS):
            return ("def", id(value))  # a def parsed again is another function
        if isinstance(value, ast.AST):
            return ("ast", ast.dump(value, include_attributes=True))
        if isinstance(value, ModuleModel):
            return ("model", value.path)
        if isinstance(value, (ClassInfo, Submodule)) or not dataclasses.is_dataclass(value):
            return ("object", id(value))  # the same object, or not the same
        known = self.memo.get(id(value))
        if known is not None:
            return ("ref", known)
        self.count += 1
        number = self.memo[id(value)] = self.count
        names = _fields.get(type(value))
        if names is None:
            names = _fields[type(value)] = tuple(
                f.name for f in dataclasses.fields(value) if f.name not in _UNSAID
            )
        return (type(value).__name__, number, tuple(self.field(value, name) for name in names))

    def field(self, value: object, name: str) -> Hashable:
        if name in _ID_FIELDS:
            return self.ids(getattr(value, name))
        if isinstance(value, ModuleRef) and name in ("submodule", "site_start", "call"):
            # where its constructor call is (as module_facts says it): a block parsed again
            # has new nodes
            sub, call = value.submodule, value.call
            if sub is None or call is None or name != "submodule":
                return None
            return (sub.name, sub.qualname, value.site_start + call.lineno, ast.dump(call))
        return self.walk(getattr(value, name))


def snapshot(args: list[Value], kwargs: dict[str, Value]) -> tuple[list[Value], dict[str, Value]]:
    """A call's arguments as they are at the call (Call), for its callee to run on again in a
    later update: the caller goes on to change them (`self.inplanes = ...` set by the callee
    itself). Their modules keep the attributes they have now."""
    copies: dict[int, Value] = {}
    refs: dict[int, ModuleRef] = {}

    def copy(value: Value) -> Value:
        made = copies.get(id(value))
        if made is None:
            made = copies[id(value)] = replace(value)
            module = value.module
            if module is not None:
                ref = refs.get(id(module))
                if ref is None:
                    ref = refs[id(module)] = replace(module, attrs=dict(module.attributes()))
                made.module = ref
        return made

    return [copy(a) for a in args], {k: copy(v) for k, v in kwargs.items()}


def _is_global(read: tuple[Path, Hashable]) -> bool:
    first = read[0][0]
    return isinstance(first, tuple) and first[0] == "global"


def fingerprint(summary: Summary) -> Hashable:
    """What a summary says, without its ids (see _Canon); not what its run read of the
    document (Interpreter.still_holds checks that the caller depends on it), nor which
    module-level names it read (the caller's run read them too: it takes them, global_reads).
    Worked out the first time it is asked for: what a summary says does not change."""
    if summary.said is None:
        canon = _Canon(summary)
        summary.said = (
            summary.key,
            tuple(read for read in summary.reads if not _is_global(read)),
            canon.walk(summary.events),
            canon.walk(summary.result),
            canon.walk(summary.facts),
            canon.walk(summary.exit),
            canon.ids(summary.escaped),
            canon.ids(summary.saves),
            summary.followed,
            summary.cut,
            tuple(sorted(summary.unfollowed.items())),
        )
    return summary.said


def global_reads(summary: Summary) -> tuple[tuple[Path, Hashable], ...]:
    """The module-level names a summary's run read, and what each was."""
    return tuple(read for read in summary.reads if _is_global(read))
