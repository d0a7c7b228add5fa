"""The document as units of analysis: each top-level function and each method on its own, and
each class's shape (its text without its methods' bodies, and what its `__init__` gives it:
its attributes, as model.ClassInfo.init_said says them; a keystroke in `__init__` that gives
the same leaves the shape, and changes only the method).

An entry point's analysis records which definitions it looked up (model.Recorded): the cells
`("f", name)` (a function), `("c", name)` (a class's shape, with those of its local bases, whose
attributes it inherits; for a summary also `("ci", name)`, which objects describe them) and
`(("m", class), name)` (a method), each possibly absent, or a whole
table (model.ALL); and `("x", qualified name)`, a name it looked for in another file (which
file, if any; what is in those files is keyed by their versions, engine._check_other_files).
Its findings hold while every cell it read has the value it had: an edit in a
method invalidates the analyses that ran that method, not those of its class's other methods
nor those of code that only names the class. Findings move with the units they lie in (a line
added above a method moves what was found in it).
"""

from __future__ import annotations

import ast
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from itertools import takewhile

from inplace_lsp.analysis.blocks import Block, first_line
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.analysis.model import ALL, ClassInfo, ModuleModel

Cell = tuple[object, str]
Unit = tuple[str, str, int]  # (class or "", function name, its text's hash)
Span = tuple[int, int]  # a unit's first and last line, as offsets from its block's first line
_Functions = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class ClassUnits:
    # hash of the class's text without its methods' bodies (what __init__ gives the class is
    # ClassInfo.init_said: both are its shape, Table._chain)
    shape: int
    methods: dict[str, tuple[int, Span]]  # name -> (hash of its text, where)


@dataclass(frozen=True)
class BlockUnits:
    """The units of one block text (kept by the block's meaning)."""

    functions: dict[str, tuple[int, Span]]
    classes: dict[str, ClassUnits]


def block_units(block: Block) -> BlockUnits:
    assert block.tree is not None
    lines = split_lines(block.text)
    base = block.tree_line0

    def where(node: ast.stmt) -> Span:
        return first_line(node) - base, (node.end_lineno or node.lineno) - base

    def text_hash(span: Span) -> int:
        return hash("\n".join(lines[span[0] : span[1] + 1]))

    functions: dict[str, tuple[int, Span]] = {}
    classes: dict[str, ClassUnits] = {}
    for stmt in block.tree.body:
        if isinstance(stmt, _Functions):
            span = where(stmt)
            functions[stmt.name] = (text_hash(span), span)
        elif isinstance(stmt, ast.ClassDef):
            methods: dict[str, tuple[int, Span]] = {}
            cut: set[int] = set()
            for sub in stmt.body:
                if not isinstance(sub, _Functions):
                    continue
                span = where(sub)
                methods[sub.name] = (text_hash(span), span)
                body_first = first_line(sub.body[0])
                if body_first > sub.lineno:
                    cut.update(range(body_first - base, span[1] + 1))
            first, last = where(stmt)
            shape = hash(
                "\n".join(
                    line for i, line in enumerate(lines[first : last + 1], first) if i not in cut
                )
            )
            classes[stmt.name] = ClassUnits(shape, methods)
    return BlockUnits(functions, classes)


class Table:
    """The units of one version of the document: the value of each cell an analysis may have
    read, and where each unit is."""

    def __init__(self, blocks: Iterable[tuple[Block, BlockUnits]], model: ModuleModel) -> None:
        self._model = model
        self.functions: dict[str, int] = {}
        self.classes: dict[str, ClassUnits] = {}
        self.positions: dict[Unit, list[tuple[int, int]]] = {}
        for block, units in blocks:  # a later definition replaces an earlier one, as in Python
            start = block.start_line
            for name, (value, span) in units.functions.items():
                self.functions[name] = value
                self._place(("", name, value), start, span)
            for class_name, info in units.classes.items():
                self.classes[class_name] = info
                for name, (value, span) in info.methods.items():
                    self._place((class_name, name, value), start, span)
        self._values: dict[Cell, object] = {}

    def changes(self, before: Table | None) -> frozenset[Cell] | None:
        """The cells whose values differ from those in `before` (the last update's table), or
        None when that is not cheap to say: a class's shape changed (which classes inherit
        it is another walk), or there is no last table."""
        if before is None:
            return None
        changed: set[Cell] = set()
        for name in self.functions.keys() | before.functions.keys():
            if self.functions.get(name) != before.functions.get(name):
                changed.add(("f", name))
                changed.add(("f", ALL))
        for name in self.classes.keys() | before.classes.keys():
            new, old = self.classes.get(name), before.classes.get(name)
            if self.value(("ci", name)) != before.value(("ci", name)):
                changed.add(("ci", name))
                changed.add(("ci", ALL))
            if new is None or old is None or self._said(name) != before._said(name):
                return None
            if new is old:
                continue
            if new.shape != old.shape:
                return None
            for method in new.methods.keys() | old.methods.keys():
                if new.methods.get(method, (None,))[0] != old.methods.get(method, (None,))[0]:
                    changed.add((("m", name), method))
                    changed.add((("m", name), ALL))
        return frozenset(changed)

    def _place(self, unit: Unit, start: int, span: Span) -> None:
        self.positions.setdefault(unit, []).append((start + span[0], start + span[1]))

    def value(self, cell: Cell) -> object:
        found = self._values.get(cell, self)
        if found is self:
            found = self._values[cell] = self._value(cell)
        return found

    def _value(self, cell: Cell) -> object:
        tag, name = cell
        if tag == "x":  # a name resolved in another file: which file (None: not found)
            resolver = self._model.resolver
            other = resolver(name) if resolver is not None else None
            return other.path if other is not None else None
        if tag == "f":
            if name == ALL:
                return hash(tuple(self.functions.items()))
            return self.functions.get(name)
        if tag == "c":
            if name == ALL:
                return hash(tuple((n, self._chain(n)) for n in self.classes))
            return self._chain(name)
        if tag == "ci":
            return self._identity(name)
        assert isinstance(tag, tuple)  # ("m", class)
        info = self.classes.get(tag[1])
        if info is None:
            return None
        if name == ALL:
            return hash(tuple((n, v) for n, (v, _) in info.methods.items()))
        found = info.methods.get(name)
        return found[0] if found is not None else None

    def _identity(self, name: str) -> tuple[object, ...]:
        """Which ClassInfo objects a class and its bases are (all classes: ALL): a summary
        holds objects of the classes its run read, and their methods are those of their
        ClassInfo; a class parsed again is another one unless model.keep_classes kept it."""
        names = self.classes if name == ALL else (name,)
        return tuple(tuple(id(info) for info in self._lineage(n)) for n in names)

    def _said(self, name: str) -> int | None:
        """What the class's `__init__` gives it (ClassInfo.init_said), in this table's model."""
        info = dict.get(self._model.classes, name)
        return info.init_said if info is not None else None

    def _lineage(self, name: str) -> list[ClassInfo]:
        """The class of this file named `name` (none: []) and its bases, nearest first."""
        model = self._model
        info = dict.get(model.classes, name)
        found: list[ClassInfo] = []
        while info is not None and all(info is not known for known in found):
            found.append(info)
            info = model.base_of(info)
        return found

    def _chain(self, name: str) -> tuple[object, ...] | None:
        """A class's shape and its bases' (finalize() gave it their attributes); a base in
        another file by name (the versions of the files read key those, see
        engine._check_other_files)."""
        lineage = self._lineage(name)
        if not lineage:
            return None
        return tuple(
            (self.classes[info.name].shape, info.init_said)
            if info.owner is self._model and info.name in self.classes
            else f"{info.name} elsewhere"
            for info in lineage
        )

    def units_of(self, cells: Iterable[Cell], own: Unit | None = None) -> list[Unit]:
        """The units whose lines the findings of an analysis that read `cells` may name: the
        functions and methods it ran, and the `__init__` of each class whose shape it read."""
        found = {own} if own is not None else set()
        for tag, name in cells:
            if tag == "f":
                names = self.functions if name == ALL else (name,)
                found.update(("", n, self.functions[n]) for n in names if n in self.functions)
            elif tag == "c":
                classes = self.classes if name == ALL else self._local_chain(name)
                for class_name in classes:
                    init = self.classes[class_name].methods.get("__init__")
                    if init is not None:
                        found.add((class_name, "__init__", init[0]))
            elif isinstance(tag, tuple):  # ("m", class); "x" cells name no unit here
                info = self.classes.get(tag[1])
                if info is None:
                    continue
                methods = info.methods if name == ALL else (name,)
                found.update((tag[1], n, info.methods[n][0]) for n in methods if n in info.methods)
        return sorted(found)

    def _local_chain(self, name: str) -> list[str]:
        """The names of the class and of its bases up to the first defined elsewhere."""
        local = takewhile(lambda info: info.owner is self._model, self._lineage(name))
        return [info.name for info in local if info.name in self.classes]

    def layout(self, units: Iterable[Unit]) -> tuple[tuple[Hashable, int, int], ...] | None:
        """Where the units are now, or None when one is absent or there twice."""
        placed = []
        for unit in units:
            spans = self.positions.get(unit)
            if spans is None or len(spans) != 1:
                return None
            placed.append((unit, *spans[0]))
        return tuple(placed)


def places(layout: tuple[tuple[Hashable, int, int], ...]) -> tuple[Hashable, ...]:
    """Where each unit of a layout (Table.layout) is, by its class and name (not its text):
    a function whose text changed in place is where it was."""
    return tuple((unit[:2], first, last) for unit, first, last in layout)  # type: ignore[index]
