"""Entry points of the analysis: one document's text in, findings out.

`DocumentAnalysis` keeps the parse of each top-level block and the findings of each function
and method, with what its analysis read of the document (units.py), so an edit inside one
function re-parses its block and analyses again only the functions whose analysis ran it.
`analyze()` is the one-shot form.
"""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import logging
import re
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from inplace_lsp.analysis import model as model_mod
from inplace_lsp.analysis.blocks import Block, ParseCache, Splitter, digest
from inplace_lsp.analysis.candidates import is_candidate
from inplace_lsp.analysis.evaluator import (
    FUNCTION_TIME_LIMIT_S,
    MAX_CALL_DEPTH,
    Interpreter,
    TimeLimit,
)
from inplace_lsp.analysis.findings import Finding, Severity, Span
from inplace_lsp.analysis.frameworks import stub_model
from inplace_lsp.analysis.knowledge import Knowledge, load
from inplace_lsp.analysis.lines import lines_with_ends, split_lines
from inplace_lsp.analysis.model import ClassInfo
from inplace_lsp.analysis.rules import RULES
from inplace_lsp.analysis.rules.base import DocContext, Rule
from inplace_lsp.analysis.rules.ipl006_anomaly_left_on import AnomalyLeftOn
from inplace_lsp.analysis.summaries import Summary, SummaryCache
from inplace_lsp.analysis.units import BlockUnits, Cell, Table, Unit, block_units
from inplace_lsp.analysis.units import places as unit_places
from inplace_lsp.analysis.workspace import Workspace

logger = logging.getLogger(__name__)

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFORMATION: 2, Severity.HINT: 3}


@dataclass(frozen=True)
class SyntaxProblem:
    line: int
    col: int
    message: str


@dataclass(frozen=True)
class Note:
    """Code the analysis gave up on (nested too deep for Python's stack): its findings are
    not reported, and the user is told so, at the function's (or statement's) line."""

    line: int
    col: int
    message: str
    subject: str  # what was given up on ("function `Net.forward`"): said once per subject


@dataclass(frozen=True)
class DocumentResult:
    findings: list[Finding]
    syntax_errors: list[SyntaxProblem]
    blocks_analysed: int  # how many blocks were interpreted (not served from the cache)
    # What `verify` can run: ("module" | "function", name, 1-based line of class / def), for
    # nn.Module subclasses and top-level functions that call backward().
    targets: tuple[tuple[str, str, int, int], ...] = ()
    notes: tuple[Note, ...] = ()
    functions_analysed: int = 0  # how many entry points (and scripts) were interpreted


# A block's findings, each with the entry point that found it ("Net.forward", "main"; "" for
# module-level code), its notes, and which entry points followed which functions of the file.
_Analysed = tuple[
    list[tuple[str, Finding]], tuple[Note, ...], tuple[tuple[str, frozenset[str]], ...]
]


# Where the code an analysis ran sat: (unit, first line, last line) of the block or of each
# function and method it ran (units.Unit), in the document at the time.
_Layout = tuple[tuple[Hashable, int, int], ...]


@dataclass
class _Stored:
    """Findings kept between updates: valid while each cell read has its value (deps), and
    moved with the units they lie in (layout; None: where they lie is unclear)."""

    result: _Analysed
    deps: dict[Cell, object]
    layout: _Layout | None
    verified: int  # the last update that found it valid (see _cached)
    # An entry point's: the summaries its own run applied (where each is kept) and the cells
    # it read itself, outside them (see DocumentAnalysis._cut_off). Weakly: the findings of
    # texts kept for an undo must not keep summaries the cache let go (a large class's
    # `__init__` each; measured: +86 MB over 400 edits of transformers' trainer.py).
    tops: tuple[tuple[Hashable, weakref.ref[Summary]], ...] = ()
    direct: frozenset[Cell] = frozenset()


_NO_CODE_YET = frozenset("#\n\r \t\f")  # what a line that holds no code can start with
_NO_RESULT = DocumentResult([], [], 0)  # an update that did not finish (see _same_as_last)
_OLD_RESULTS = 32  # findings of texts the document no longer has, kept for an undo


class CollectorPause:
    """The cyclic garbage collector held off while any update runs (the server runs
    several in threads: the first to end must not turn it on under the others), on again
    when the last lets go, if it was on before the first took it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = 0
        self._was_on = True

    def hold(self) -> None:
        with self._lock:
            if self._held == 0:
                self._was_on = gc.isenabled()
                gc.disable()
            self._held += 1

    def release(self) -> None:
        with self._lock:
            self._held -= 1
            if self._held == 0 and self._was_on:
                gc.enable()


COLLECTOR = CollectorPause()


class DocumentAnalysis:
    """The analysis state of one open document."""

    def __init__(
        self,
        knowledge: Knowledge | None = None,
        parse_cache: ParseCache | None = None,
        *,
        path: str | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        self.path = path
        self.workspace = workspace
        self.knowledge = knowledge or load()
        self.parse_cache = parse_cache or ParseCache()
        self.splitter = Splitter(self.parse_cache)
        self._fragments: dict[tuple[str, int, int], model_mod.Fragment] = {}
        # The last update's fragments by place (start, imports) with their classes' shapes
        # (see _model).
        self._places: dict[tuple[int, int], tuple[model_mod.Fragment, dict[str, int]]] = {}
        self._imports: dict[str, list[tuple[str, str]]] = {}
        # The findings of each entry point (keyed by its name, its own text and what every
        # analysis rests on), of each block's module-level checks and of the script.
        self._rules: list[Rule] = [rule() for rule in RULES]
        self._results: OrderedDict[Hashable, _Stored] = OrderedDict()
        # The recorder of what an analysis reads of the document's definitions (Recorded).
        self._box: list[set[Cell] | None] = [None]
        self._units: dict[str, BlockUnits] = {}  # by block meaning
        # Which entry points of a block text are worth interpreting, the shapes of its classes
        # then, and the last update that used it (see _entries).
        self._wanted: dict[Hashable, tuple[tuple[int, ...], tuple[object, ...], int]] = {}
        self._anomaly = next(rule for rule in self._rules if isinstance(rule, AnomalyLeftOn))
        self._ran = 0  # the entry points this update interpreted
        self._most_used = 0  # the most stored findings an update used
        # This document's revision (one per update), the last update's units, and what
        # changed since (see _cached).
        self._revision = 0
        self._last_table: Table | None = None
        # The last update's result, with what it followed from (see _same_as_last).
        self._last: tuple[Hashable, _Layout, DocumentResult] | None = None
        self._changes: frozenset[Cell] | None = None
        # The changed cells an early cutoff failed on in this update (see _cut_off).
        self._no_cutoff: set[Cell] = set()
        self._unmoved = False
        self._alone = False  # whether the last update was from the file alone
        # The other files the kept findings rest on, with the version each had then.
        self._other_files: dict[str, object] = {}
        # A caller that reports DocumentResult.notes itself (the CLI) turns this off; the
        # language server has them logged, once per function (each keystroke in a function
        # analyses it again).
        self.log_notes = True
        # A caller that analyses one text only (the CLI) turns this off: what each analysis
        # read is then not recorded, and nothing found is kept for a next update.
        self.incremental = True
        # The longest one function's analysis may take (seconds; None: no limit): one that
        # takes longer is said not analysed, and the rest of the file is.
        self.time_limit_s: float | None = FUNCTION_TIME_LIMIT_S
        self._logged: set[str] = set()
        self._candidates: frozenset[str] = frozenset()
        self._candidate_functions: frozenset[str] = frozenset()
        self._texts: dict[str, _TextFacts] = {}
        # A block's text key -> the key of the text whose findings it has: its own, or that of
        # the text it was before an edit that changed only comments (see comment_only).
        self._meaning: dict[str, str] = {}
        self._placed: dict[tuple[int, int], Block] = {}  # the last update's blocks by place
        self._training: dict[str, frozenset[str]] = {}  # block text -> functions calling backward
        self._summaries = SummaryCache()
        # ClassInfo.init_said by the text of `__init__`, its place from the `class` line and
        # the imports: a keystroke in another method of the class need not dump `__init__`'s
        # nodes again (a quarter of such a keystroke's analysis).
        self._init_said: dict[Hashable, int] = {}

    @property
    def fresh(self) -> bool:
        """Nothing analysed yet."""
        return self._revision == 0

    def update(self, text: str, *, alone: bool = False) -> DocumentResult:
        """Analyse a new version of the document's text. `alone`: from this file alone, as
        if no import named another file of the workspace (a document's first diagnostics,
        before the files it imports are read); the findings of functions that name nothing
        imported are kept for the next update with them."""
        # The cyclic garbage collector would traverse every parse tree kept alive here again
        # and again while the interpreter allocates; nothing made during an update is
        # garbage before it ends, so collection waits until then.
        COLLECTOR.hold()
        try:
            if self.workspace is None or alone:
                return self._update(text, alone)
            self._check_other_files(self.workspace)
            with self.workspace.recording() as reads:
                result = self._update(text, alone)
            for path, version in reads.items():
                self._other_files.setdefault(path, version)
            return result
        finally:
            COLLECTOR.release()

    def _check_other_files(self, workspace: Workspace) -> None:
        """What was found rests on the other files the analyses read, as they were then
        (only those: an edit of a file this one does not import changes nothing here). When
        one of them changed, nothing found is kept."""
        if any(workspace.version(p) != v for p, v in self._other_files.items()):
            self._results.clear()
            self._summaries.clear()
            self._wanted.clear()
            self._last = None
            self._other_files = {}

    def _update(self, text: str, alone: bool) -> DocumentResult:
        blocks = self.splitter.split(text)
        parsed = [b for b in blocks if b.tree is not None]
        # The file's definitions: the blocks that parse, and for one that does not, what it
        # was when it last did (Block.stands_for). Only those that parse are analysed.
        defining = [d for b in blocks for d in ((b,) if b.tree is not None else b.stands_for)]
        texts = {b.key: self._text_facts(b) for b in defining}
        self._meaning = self._meanings(defining, texts)
        self._forget_other_texts(texts)
        training = "backward" in text or ".step(" in text
        same = self._same_as_last(blocks, parsed, alone, training)
        if same is not None:
            return same
        model = self._model(defining, alone)
        model.mentions_training = training
        ctx = DocContext(text, model, self.workspace.files() if self.workspace else None)
        defs: dict[str, Block] = {}
        for block in defining:
            for name in texts[block.key].defines:
                defs[name] = block
        self._candidates = _candidate_defs(defs, texts, frozenset(model.functions))
        self._candidate_functions = self._candidates & model.functions.keys()
        imports_key = _digest(
            repr(sorted(model.imports.items()))
            + repr(sorted(model.kernels))  # registered as kernels elsewhere: grad mode off
        )
        findings: list[tuple[str, Finding]] = []
        notes: list[Note] = []
        follows: list[tuple[str, frozenset[str]]] = []
        analysed = self._ran = 0
        table = Table(((b, self._block_units(b)) for b in defining), model)
        self._revision += 1
        last, self._last_table = self._last_table, table
        # From the file alone, or with the files it imports: which file a name resolves to
        # ("x" cells) changed for all of them at once.
        moded, self._alone = self._alone != alone, alone
        self._changes = None if moded else table.changes(last)
        self._no_cutoff = set()
        self._unmoved = last is not None and table.positions == last.positions
        # What every entry point's findings rest on besides the definitions it read.
        common = hash((imports_key, model.mentions_training))
        # The summaries of the functions the entry points call: those that still hold, the
        # others made again when called (from the file alone or with the files it imports:
        # a summary whose run looked a name up in another file rests on its "x" cell).
        self._summaries.begin(
            table if self.incremental else None,
            common,
            self._changes,
            not self._unmoved,
        )
        used_keys: set[Hashable] = set()
        for block in parsed:
            facts = texts[block.key]
            if not (facts.candidate or not self._candidates.isdisjoint(facts.names)):
                continue
            found, ran = self._block_findings(block, model, ctx, table, common, used_keys)
            analysed += ran > 0
            self._ran += ran
            findings.extend(found[0])
            notes.extend(found[1])
            follows.extend(found[2])
        script_findings, script_notes, script_follows = self._analyse_script(
            parsed, model, ctx, texts, table, common, used_keys
        )
        findings.extend(script_findings)
        notes.extend(script_notes)
        follows.extend(script_follows)
        said = _one_note_each(notes)
        self._log(said)
        self._forget_old_results(used_keys)
        errors = [
            SyntaxProblem(
                block.error_line or block.start_line,
                max((block.error.offset or 1) - 1, 0) if block.error else 0,
                block.error.msg if block.error else "syntax error",
            )
            for block in blocks
            if block.tree is None
        ]
        shadowed = _followed_from_call_sites(follows)
        kept = [finding for entry, finding in findings if entry not in shadowed]
        if any(entry and f.severity is Severity.ERROR for entry, f in findings):
            reach = _script_reach(parsed, texts)
            if reach is not None:
                unrun = reach[0]
                idle = _methods_not_run(reach[1], model)
                kept = [
                    _not_run(f, top)
                    if (top := entry.split(".", 1)[0]) in unrun
                    else _not_run(f, entry)
                    if entry in idle
                    else f
                    for entry, f in findings
                    if entry not in shadowed
                ]
        result = DocumentResult(
            _dedupe(kept),
            errors,
            analysed,
            self._verify_targets(parsed, model),
            said,
            self._ran,
        )
        if self._last is not None:
            self._last = (*self._last[:2], result)
        return result

    def _same_as_last(
        self, blocks: list[Block], parsed: list[Block], alone: bool, training: bool
    ) -> DocumentResult | None:
        """The last update's result when the document means what it meant then: the same
        blocks in the same order, each with the same meaning and as many lines (a keystroke
        in a comment, a line added or removed between blocks), and the same mode. Then the
        model, the tables and every entry point would come out as they did, so none of it is
        built again; findings and targets move with their blocks."""
        if not self.incremental or len(parsed) != len(blocks):
            self._last = None  # a block that does not parse: its error is news
            return None
        layout: _Layout = tuple(self._code_place(b) for b in parsed)
        shape = (alone, training, tuple((key, end - start) for key, start, end in layout))
        last, self._last = self._last, (shape, layout, _NO_RESULT)
        if last is None or last[0] != shape or last[2] is _NO_RESULT:
            return None
        _, before, result = last
        if before != layout:
            moved = self._moved_result(result, before, layout)
            if moved is None:
                return None
            result = moved
        self._last = (shape, layout, result)  # the revision stays: nothing was found valid again
        return replace(result, blocks_analysed=0, functions_analysed=0)

    def _code_place(self, block: Block) -> tuple[Hashable, int, int]:
        """Where the block's code is: (its meaning, first line, last line). The first block
        of the file also holds the blank and comment lines above its statement (a license
        header): an edit there changes its text, not its code, which only moves."""
        start, end = block.start_line, block.start_line + block.line_count - 1
        if block.text[:1] not in _NO_CODE_YET:
            return self._meaning[block.key], start, end
        lines = lines_with_ends(block.text)
        lead = 0
        while lead < len(lines) - 1 and lines[lead].lstrip(" \t\f")[:1] in ("", "#", "\n", "\r"):
            lead += 1
        if lead == 0:
            return self._meaning[block.key], start, end
        return ("code", digest("".join(lines[lead:]))), start + lead, end

    @staticmethod
    def _moved_result(
        result: DocumentResult, before: _Layout, layout: _Layout
    ) -> DocumentResult | None:
        """The result of blocks that moved, moved with them (see _moved); None when that
        cannot be said."""
        moved = _moved((([("", f) for f in result.findings], result.notes, ()), before), layout)
        line = _line_map(before, layout)
        if moved is None or line is None:
            return None
        try:
            targets = tuple((kind, name, line(a), line(b)) for kind, name, a, b in result.targets)
        except _Unmoved:
            return None
        return replace(result, findings=[f for _, f in moved[0]], notes=moved[1], targets=targets)

    def _meanings(self, blocks: list[Block], texts: dict[str, _TextFacts]) -> dict[str, str]:
        """Each block's meaning key: a text known before keeps its own; a new text that
        differs from the block at the same place in the last update only inside comments
        (a keystroke in a comment) has that block's, so nothing is analysed again for it."""
        known, placed = self._meaning, self._placed
        meaning: dict[str, str] = {}
        for block in blocks:
            if block.key in meaning:
                continue
            found = known.get(block.key)
            if found is None:
                found = block.key
                before = placed.get((block.start_line, block.line_count))
                facts = self._texts.get(before.key) if before is not None else None
                now = texts[block.key]
                if (
                    before is not None
                    and before.key in known
                    and facts is not None
                    and (facts.candidate, facts.defines, facts.script)
                    == (now.candidate, now.defines, now.script)
                    and comment_only(before, block)
                ):
                    found = known[before.key]
            meaning[block.key] = found
        self._placed = {(b.start_line, b.line_count): b for b in blocks}
        return meaning

    def _verify_targets(
        self, blocks: list[Block], model: model_mod.ModuleModel
    ) -> tuple[tuple[str, str, int, int], ...]:
        if len(self._training) > 2 * len(blocks):
            keys = {b.key for b in blocks}
            self._training = {k: v for k, v in self._training.items() if k in keys}
        return _verify_targets(blocks, model, self._training)

    def _log(self, notes: tuple[Note, ...]) -> None:
        if not self.log_notes:
            return
        for note in notes:
            if note.subject not in self._logged:
                self._logged.add(note.subject)
                logger.warning("%s:%d: %s", self.path or "<document>", note.line, note.message)

    def _analyse_script(
        self,
        blocks: list[Block],
        model: model_mod.ModuleModel,
        ctx: DocContext,
        texts: dict[str, _TextFacts],
        table: Table,
        common: int,
        used_keys: set[Hashable],
    ) -> _Analysed:
        """The module-level statements of the whole document, interpreted as one program (a
        training script's loop uses names bound statements earlier)."""
        loose = [b for b in blocks if texts[b.key].script]
        if not any(
            texts[b.key].candidate or not self._candidate_functions.isdisjoint(texts[b.key].names)
            for b in loose
        ) and not _drives_a_class(
            frozenset().union(*(texts[b.key].calls for b in loose)), self._candidates, model
        ):
            return [], (), ()
        meanings = tuple(self._meaning[b.key] for b in loose)
        places: _Layout = tuple(
            (meaning, b.start_line, b.start_line + b.line_count - 1)
            for meaning, b in zip(meanings, loose, strict=True)
        )
        cache_key = ("<script>", meanings, common)
        used_keys.add(cache_key)
        cached = self._cached(self._results.get(cache_key), table, places)
        if cached is None:
            pieces = [(b.tree.body, b.start) for b in loose if b.tree is not None]
            cells: set[Cell] = set()
            self._box[0] = cells if self.incremental else None
            interp = Interpreter(model, self.knowledge, self._summaries, self._box)
            interp.time_limit = self.time_limit_s
            try:
                facts = interp.run_module_code(pieces)
                found = [("", f) for rule in self._rules for f in rule.check(facts, ctx)]
                cached = (found, _unfollowed(interp), (("", frozenset(interp.followed)),))
            except RecursionError:
                line = interp.too_deep_line or loose[0].start_line
                what = "the module-level code"
                cached = ([], (Note(line, 0, _too_deep(what, line), what),), ())
            finally:
                self._box[0] = None
            cells |= interp.top_cells
            self._results[cache_key] = self._stored(cached, cells, table, places=places)
            self._ran += 1
        self._results.move_to_end(cache_key)
        return cached

    def _forget_old_results(self, used: set[Hashable]) -> None:
        """Keep the findings this update used (the most recently used entries) and as many
        before them as an update of this document has used, and a few more: a keystroke
        that breaks a class's syntax for a moment uses none of its methods' findings, and
        the next one brings them all back. A big class's findings are hundreds of objects,
        and each keystroke in a method is a new entry."""
        self._most_used = max(self._most_used, len(used))
        while len(self._results) > len(used) + self._most_used + _OLD_RESULTS:
            self._results.popitem(last=False)

    def _block_units(self, block: Block) -> BlockUnits:
        """The block's units, kept by its meaning: a text that differs only in comments has
        the units (and so the values) of the text whose meaning it has."""
        meaning = self._meaning[block.key]
        found = self._units.get(meaning)
        if found is None:
            found = self._units[meaning] = block_units(block)
        return found

    def _block_findings(
        self,
        block: Block,
        model: model_mod.ModuleModel,
        ctx: DocContext,
        table: Table,
        common: int,
        used_keys: set[Hashable],
    ) -> tuple[_Analysed, int]:
        """The findings of a block: each entry point's from the cache while every definition
        its analysis read is unchanged (moved with the units they lie in), the others found
        again. Also how many were (the module-level checks count as one)."""
        assert block.tree is not None
        findings: list[tuple[str, Finding]] = []
        notes: list[Note] = []
        follows: list[tuple[str, frozenset[str]]] = []
        ran = 0
        meaning = self._meaning[block.key]
        if "anomaly" in block.text:
            key: Hashable = ("anomaly", meaning, common)  # (what `torch` names: the imports)
            place = ((meaning, block.start_line, block.start_line + block.line_count - 1),)
            result = self._reused(self._results.get(key), place)
            if result is None:
                checked = self._anomaly.check_tree(block.tree, block.start, ctx)
                result = ([("", f) for f in checked], (), ())
                self._results[key] = _Stored(result, {}, place, self._revision)
                ran += 1
            self._results.move_to_end(key)
            used_keys.add(key)
            findings.extend(result[0])
        units = self._block_units(block)
        for fn, owner, class_name in self._entries(block, model, table, common):
            entry = f"{owner.name}.{fn.name}" if owner is not None else fn.name
            if class_name:
                own: Unit = (class_name, fn.name, units.classes[class_name].methods[fn.name][0])
            else:
                own = ("", fn.name, units.functions[fn.name][0])
            key = (entry, own, common)
            stored = self._results.get(key)
            result = self._cached(stored, table)
            if result is None and stored is not None:
                result = self._cut_off(stored, model, table, own)
            if result is None:
                fresh = self._analyse_entry(fn, owner, entry, own, block, model, ctx, table)
                self._results[key] = fresh
                result = fresh.result
                ran += 1
            self._results.move_to_end(key)
            used_keys.add(key)
            findings.extend(result[0])
            notes.extend(result[1])
            follows.extend(result[2])
        return (findings, tuple(notes), tuple(follows)), ran

    def _cached(
        self, stored: _Stored | None, table: Table, places: _Layout = ()
    ) -> _Analysed | None:
        """Stored findings, while every cell their analysis read has its value, where their
        units are now (`places`: the blocks their layout starts with, where they are now)."""
        if stored is None or stored.layout is None:
            return None
        if stored.verified == self._revision - 1 and self._changes is not None:
            # Valid at the last update: only a cell changed since then can undo it.
            if any(cell in stored.deps for cell in self._changes):
                return None
            if self._unmoved and stored.layout[: len(places)] == places:
                stored.verified = self._revision
                return stored.result
        elif not all(table.value(cell) == value for cell, value in stored.deps.items()):
            return None
        stored.verified = self._revision
        units = table.layout(cast(Unit, unit) for unit, _, _ in stored.layout[len(places) :])
        return self._reused(stored, None if units is None else places + units)

    def _cut_off(
        self, stored: _Stored, model: model_mod.ModuleModel, table: Table, own: Unit
    ) -> _Analysed | None:
        """An entry point's stored findings when what changed since reaches them only through
        the functions its summaries called, and each of those says the same as before for
        the arguments it was given (Interpreter.still_holds, salsa's early cutoff one level
        up: the entry point is not run again, nor its `self` built again), every unit where
        it was. None when that cannot be said (then it runs again)."""
        edited = self.splitter.edited
        if (
            not stored.tops
            or stored.layout is None
            or edited is None
            or stored.verified != self._revision - 1
        ):
            return None  # (what changed since it was valid is known for one update only)
        changed = [cell for cell, value in stored.deps.items() if table.value(cell) != value]
        if not changed or not stored.direct.isdisjoint(changed):
            return None
        if not self._no_cutoff.isdisjoint(changed):
            # (a function changed so that it says something else for one caller: most likely
            # for the others too, and each failed check runs it again for nothing)
            return None
        if _touches(stored.result, *edited):
            return None  # (a finding names a line that changed: it may quote it)
        kept = self._summaries.by_function
        tops: list[tuple[Hashable, Summary]] = []
        for slot, ref in stored.tops:
            top = ref()
            if top is None or all(s is not top for s in kept.get(slot, ())):
                return None  # (it no longer holds: SummaryCache.begin dropped it)
            tops.append((slot, top))
        self._box[0] = set()
        interp = Interpreter(model, self.knowledge, self._summaries, self._box)
        interp.time_limit = self.time_limit_s
        try:
            for slot, top in tops:
                if top.suspect and not interp.still_holds(top):
                    self._no_cutoff.update(changed)
                    self._summaries.drop(slot, top)
                    return None
        except (RecursionError, TimeLimit):
            return None
        finally:
            self._box[0] = None
        cells = set(stored.direct).union(*(top.cells for _, top in tops))
        cells.update(*(top.inherited for _, top in tops))
        units = table.layout(table.units_of(cells, own))
        if units is None or unit_places(units) != unit_places(stored.layout):
            return None  # (a unit it ran moved: its findings would move too)
        for _, top in tops:
            top.used = self._summaries.revision
        stored.deps = {cell: table.value(cell) for cell in cells}
        stored.layout = units
        stored.verified = self._revision
        return stored.result

    @staticmethod
    def _reused(stored: _Stored | None, now: _Layout | None) -> _Analysed | None:
        """Stored findings where their units are now, or None when that cannot be said."""
        if stored is None or stored.layout is None or now is None:
            return None
        if stored.layout == now:
            return stored.result
        moved = _moved((stored.result, stored.layout), now)
        if moved is not None:
            stored.result, stored.layout = moved, now
        return moved

    def _entries(
        self, block: Block, model: model_mod.ModuleModel, table: Table, common: int
    ) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ClassInfo | None, str]]:
        """The block's functions and methods worth interpreting (see _wanted_entries), with
        the class each belongs to ("" for a function) and its ClassInfo (None where another
        class of the same name replaced it). Which ones is kept by the block's meaning and
        what decides it: the functions that can write in place, its classes' shapes and the
        imports that resolve their names."""
        assert block.tree is not None
        entries: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ClassInfo | None, str]] = []
        for stmt in block.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                entries.append((stmt, None, ""))
            elif isinstance(stmt, ast.ClassDef):
                info = model.classes.get(stmt.name)
                owner = info if info is not None and info.node is stmt else None
                entries.extend(
                    (sub, owner, stmt.name)
                    for sub in stmt.body
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef))
                )
        key = (self._meaning[block.key], self._candidates, common, model.resolver is None)
        kept = self._wanted.get(key)
        wanted: tuple[int, ...] | None
        if kept is not None and kept[2] == self._revision - 1 and self._changes is not None:
            wanted, shapes = kept[0], kept[1]  # no class's shape changed since
        else:
            shapes = tuple(table.value(("c", name)) for _, _, name in entries if name)
            wanted = kept[0] if kept is not None and kept[1] == shapes else None
        if wanted is None:
            block_lines = split_lines(block.text)
            segments = {id(fn): _def_text(block, block_lines, fn) for fn, _, _ in entries}
            ids = self._wanted_entries(entries, segments, model)
            wanted = tuple(i for i, (fn, _, _) in enumerate(entries) if id(fn) in ids)
            if len(self._wanted) > 4 * len(self._units) + 64:
                self._wanted.clear()
        self._wanted[key] = (wanted, shapes, self._revision)
        return [entries[i] for i in wanted]

    def _analyse_entry(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        owner: ClassInfo | None,
        entry: str,
        own: Unit,
        block: Block,
        model: model_mod.ModuleModel,
        ctx: DocContext,
        table: Table,
    ) -> _Stored:
        """Interprets one entry point, recording which definitions it read."""
        cells: set[Cell] = set()
        if owner is not None:
            cells.add(("c", owner.name))
        self._box[0] = cells if self.incremental else None
        interp = Interpreter(model, self.knowledge, self._summaries, self._box)
        interp.time_limit = self.time_limit_s
        tops: tuple[tuple[Hashable, weakref.ref[Summary]], ...] = ()
        try:
            facts = interp.run_function(fn, block.start, owner)
            found = [(entry, f) for rule in self._rules for f in rule.check(facts, ctx)]
            notes = _unfollowed(interp)
            result: _Analysed = (found, notes, ((entry, frozenset(interp.followed)),))
            if self.incremental:
                tops = tuple((slot, weakref.ref(top)) for slot, top in interp.tops)
        except (RecursionError, TimeLimit) as exc:
            # Said, never a silent loss: the findings of a half-interpreted function could be
            # wrong either way, so none are reported for it.
            line = fn.lineno + block.start - 1
            what = f"function `{entry}`"
            if isinstance(exc, TimeLimit):
                message = (
                    f"{what} is not analysed: its analysis took longer than {_limit(exc.limit)} "
                    "(setting function_time_limit_s); the rest of the file is analysed"
                )
            else:
                message = _too_deep(what, interp.too_deep_line or line)
            result = ([], (Note(line, fn.col_offset, message, what),), ())
        finally:
            self._box[0] = None
        stored = self._stored(result, cells | interp.top_cells, table, own)
        stored.tops, stored.direct = tops, frozenset(cells)
        return stored

    def _stored(
        self,
        result: _Analysed,
        cells: set[Cell],
        table: Table,
        own: Unit | None = None,
        places: _Layout = (),
    ) -> _Stored:
        """What an analysis found, with the value of each cell it read and where its units
        are (`places`: blocks its layout starts with); a one-shot analysis keeps nothing to
        reuse."""
        if not self.incremental:
            return _Stored(result, {}, None, self._revision)  # never reused
        units = table.layout(table.units_of(cells, own))
        layout = None if units is None else places + units
        return _Stored(result, {cell: table.value(cell) for cell in cells}, layout, self._revision)

    def _text_facts(self, block: Block) -> _TextFacts:
        facts = self._texts.get(block.key)
        if facts is None:
            assert block.tree is not None
            defines = frozenset(
                stmt.name
                for stmt in block.tree.body
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            )
            script = any(
                not isinstance(
                    stmt,
                    (
                        ast.FunctionDef,
                        ast.AsyncFunctionDef,
                        ast.ClassDef,
                        ast.Import,
                        ast.ImportFrom,
                    ),
                )
                for stmt in block.tree.body
            )
            # (from the text of those statements: every name before a `(`, a few more than
            # the calls, keywords and words in strings; walking a model zoo's registry of
            # configs node by node cost each keystroke in it milliseconds)
            lines = split_lines(block.text)
            first = block.tree_line0
            calls = frozenset(
                name
                for stmt in block.tree.body
                if not isinstance(stmt, _NOT_RUN)
                for name in _names_called(
                    "\n".join(lines[stmt.lineno - first : (stmt.end_lineno or 0) - first + 1])
                )
            )
            facts = _TextFacts(
                is_candidate(block.text),
                frozenset(IDENT.findall(block.text)),
                defines,
                script,
                calls,
            )
            self._texts[block.key] = facts
        return facts

    def _forget_other_texts(self, texts: dict[str, _TextFacts]) -> None:
        """Keep what is known per block text only for the blocks the document has now: each
        keystroke in a large class makes a new text, and its names (thousands, for
        transformers' Trainer) would otherwise pile up version after version."""
        self._texts = texts
        if len(self._units) > len(texts):
            meanings = set(self._meaning.values())
            self._units = {k: v for k, v in self._units.items() if k in meanings}
        if len(self._imports) > len(texts):
            self._imports = {k: v for k, v in self._imports.items() if k in texts}

    def _model(self, blocks: list[Block], alone: bool = False) -> model_mod.ModuleModel:
        model = model_mod.ModuleModel(stubs=stub_model)
        model.classes = model_mod.Recorded("c", self._box)
        model.functions = model_mod.Recorded("f", self._box)
        if self.workspace is not None and self.path is not None:
            # Local classes may derive from, or build, classes of other files (each name is
            # resolved once per update).
            resolve = functools.cache(self.workspace.resolver_for(self.path))
            box = self._box

            def resolver(qualname: str) -> model_mod.ModuleModel | None:
                cells = box[0]
                if cells is not None:  # what an analysis took from another file
                    cells.add(("x", qualname))
                return None if alone else resolve(qualname)

            model.resolver = resolver
        for block in blocks:
            if "import" in block.text:
                aliases = self._imports.get(block.key)
                if aliases is None:
                    assert block.tree is not None
                    aliases = list(model_mod.collect_imports(block.tree))
                    self._imports[block.key] = aliases
                for alias, qual in aliases:
                    model.imports.setdefault(alias, qual)
        imports_key = hash(tuple(sorted(model.imports.items())))
        live: dict[tuple[str, int, int], model_mod.Fragment] = {}
        places: dict[tuple[int, int], tuple[model_mod.Fragment, dict[str, int]]] = {}
        for block in blocks:
            key = (block.key, block.start, imports_key)
            shapes = {name: c.shape for name, c in self._block_units(block).classes.items()}
            frag = self._fragments.get(key)
            if frag is None:
                assert block.tree is not None
                # (what __init__ gives a class is compared only across updates)
                said = (
                    functools.partial(self._said, block, imports_key) if self.incremental else None
                )
                frag = model_mod.fragment(block.tree, block.start, model, self._box, said)
                # A block parsed again at the same place, its classes' shapes unchanged (a
                # keystroke in a method body): each class keeps its ClassInfo, with the new
                # nodes, so what holds objects of it (kept summaries) still matches.
                # (a line added or removed in a method leaves the class where it was)
                before = self._places.get((block.start_line, imports_key))
                if before is not None:
                    model_mod.keep_classes(frag, before[0], shapes, before[1])
            live[key] = frag
            places[(block.start_line, imports_key)] = (frag, shapes)
            model_mod.add_fragment(model, frag)
        self._fragments, self._places = live, places
        model_mod.finalize(model)
        return model

    def _said(self, block: Block, imports_key: int, info: ClassInfo) -> int:
        """model.init_digest of a class of `block`, kept by what it rests on (see _init_said)."""
        init = dict.get(info.methods, "__init__")
        lines = split_lines(block.text)
        if init is None:
            return model_mod.init_digest(info, lines, block.tree_line0)
        key = (
            _def_text(block, lines, init),
            init.lineno - info.node.lineno,
            init.col_offset,
            imports_key,
        )
        said = self._init_said.get(key)
        if said is None:
            if len(self._init_said) > 4 * len(self._units) + 64:
                self._init_said.clear()
            said = self._init_said[key] = model_mod.init_digest(info, lines, block.tree_line0)
        return said

    def _wanted_entries(
        self,
        entries: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ClassInfo | None, str]],
        segments: dict[int, str],
        model: model_mod.ModuleModel,
    ) -> set[int]:
        """The functions worth interpreting: those whose own text can write in place, and those
        that call them (a method of the class, a submodule attribute whose class or
        constructor writes in place, a local function)."""
        wanted: set[int] = set()
        by_class: dict[str, dict[str, int]] = {}
        for fn, owner, _ in entries:
            segment = segments[id(fn)]
            if is_candidate(segment, in_init=fn.name == "__init__") or self._calls_candidate(
                segment
            ):
                wanted.add(id(fn))
            if owner is not None:
                by_class.setdefault(owner.name, {})[fn.name] = id(fn)
        for class_name, methods in by_class.items():
            info = model.classes.get(class_name)
            if info is None:
                continue
            hot = {attr for attr, sub in info.submodules.items() if self._writes_in_place(sub)}
            init = methods.get("__init__")
            if init is not None and ".inplace" in segments[init]:
                # `m.inplace = True` in a loop over `self.modules()`: any submodule may write.
                hot = set(info.submodules)
            # `self.helper(...)`, `cls.helper(...)` and `Gev._gev(...)` (a staticmethod).
            member = re.compile(rf"\b(?:self|cls|{re.escape(class_name)})\.(\w+)")
            changed = True
            while changed:
                changed = False
                hot_methods = {name for name, fid in methods.items() if fid in wanted}
                for name, fid in methods.items():
                    if fid in wanted or name == "__init__":  # __init__ builds, it calls nothing
                        continue
                    attrs = set(member.findall(segments[fid]))
                    if attrs & hot or attrs & hot_methods:
                        wanted.add(fid)
                        changed = True
        return wanted

    def _writes_in_place(self, sub: model_mod.Submodule) -> bool:
        """A submodule whose construction or class can write in place: a torch.nn module built
        with `inplace=` (a factory's `act_layer(inplace=True)` is an unknown module: the
        interpreter cannot see it write), or a local class that writes in place."""
        keyword = sub.keyword("inplace")
        given = keyword.value if keyword is not None else None
        info = self.knowledge.module(sub.qualname) if sub.qualname else None
        position = info.inplace_position if info is not None else None
        if given is None and position is not None and len(sub.call.args) > position:
            given = sub.call.args[position]  # nn.ReLU(True)
        if (
            given is not None
            and (sub.qualname or "").startswith("torch.nn.")
            and not (isinstance(given, ast.Constant) and given.value is False)
        ):
            return True
        if sub.qualname in self._candidates:
            return True
        return any(self._writes_in_place(child) for child in sub.children)

    def _calls_candidate(self, segment: str) -> bool:
        """Whether code calls a local function that can write in place (constructing a class
        runs none of its methods, so class names do not count)."""
        if not any(name in segment for name in self._candidate_functions):
            return False  # substring tests first: most code names none of them
        return not self._candidate_functions.isdisjoint(IDENT.findall(segment))


@dataclass(frozen=True)
class _TextFacts:
    """What a block's text says cheaply: can it produce findings, which names it mentions."""

    candidate: bool
    names: frozenset[str]
    defines: frozenset[str]
    script: bool  # holds module-level statements (not only definitions and imports)
    # What its module-level statements call, by name (`Trainer(...)`, `t.train_step(...)`).
    calls: frozenset[str] = frozenset()


def _names_called(text: str) -> set[str]:
    """The words right before a `(` (`Trainer(`, `t.train_step (`): the names a statement
    calls, with the keywords and words in strings that stand there too."""
    names: set[str] = set()
    at = text.find("(")
    while at != -1:
        end = at
        while end > 0 and text[end - 1] in " \t\n\\":
            end -= 1
        start = end
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        if start < end and not text[start].isdigit():
            names.add(text[start:end])
        at = text.find("(", at + 1)
    return names


def _candidate_defs(
    defs: dict[str, Block], texts: dict[str, _TextFacts], functions: frozenset[str]
) -> frozenset[str]:
    """Top-level names whose code can produce findings, directly or through the functions
    they call. Merely naming a class does not count: building a model runs no forward (the
    hundreds of `@register_model` factories of a model zoo stay cold)."""
    candidates = {name for name, block in defs.items() if texts[block.key].candidate}
    mentions = {
        name: texts[block.key].names & functions
        for name, block in defs.items()
        if name in functions
    }
    changed = True
    while changed:
        changed = False
        for name, used in mentions.items():
            if name not in candidates and not used.isdisjoint(candidates):
                candidates.add(name)
                changed = True
    return frozenset(candidates)


_LINE_REFERENCE = re.compile(r"\bline (\d+)")


def _touches(result: _Analysed, first: int, last: int) -> bool:
    """Whether a finding or note names a line from `first` to `last`: where it lies, its
    related places and fix, the lines its message and history name."""
    if last < first:
        return False  # (lines only deleted: the units that held them moved)
    lines: set[int] = set()
    for _, f in result[0]:
        for s in (f.span, *(r.span for r in f.related if r.path is None)):
            lines.update(range(s.line, s.end_line + 1))
        if f.fix is not None:
            lines.update(range(f.fix.target.line, f.fix.target.end_line + 1))
        for text in (f.message, *f.history):
            lines.update(int(m.group(1)) for m in _LINE_REFERENCE.finditer(text))
    for note in result[1]:
        lines.add(note.line)
        lines.update(int(m.group(1)) for m in _LINE_REFERENCE.finditer(note.message))
    return any(first <= line <= last for line in lines)


def _line_map(before: _Layout, layout: _Layout) -> Callable[[int], int] | None:
    """Where each line of the units in `before` is in `layout` (the same units, maybe at
    other lines); the map raises _Unmoved for a line no unit holds. None when that cannot be
    said: a unit is gone, new, or there twice."""
    now: dict[Hashable, int | None] = {}
    for key, start, _ in layout:
        now[key] = None if key in now else start  # a text twice: which one moved is unclear
    if {key for key, _, _ in before} != set(now):
        return None
    shifts: list[tuple[int, int, int]] = []
    for key, start, end in before:
        new = now[key]
        if new is None:
            return None
        shifts.append((start, end, new - start))

    def line(number: int) -> int:
        for start, end, delta in shifts:
            if start <= number <= end:
                return number + delta
        raise _Unmoved

    return line


def _moved(stored: tuple[_Analysed, _Layout], layout: _Layout) -> _Analysed | None:
    """Findings of blocks that moved (the same texts, at other lines), moved with them: each
    line, in spans and in messages ("saved ... (line 12)"), by how far the block holding it
    moved. None when that cannot be said: a block it ran is gone or there twice, a line lies
    outside them, or a message names a line of another file."""
    (found, notes, follows), before = stored
    mapped = _line_map(before, layout)
    if mapped is None:
        return None
    line = mapped

    def span(s: Span) -> Span:
        return Span(line(s.line), s.col, line(s.end_line), s.end_col)

    def text(message: str) -> str:
        return _LINE_REFERENCE.sub(lambda m: f"line {line(int(m.group(1)))}", message)

    try:
        moved_findings = []
        for entry, f in found:
            if any(r.path is not None for r in f.related) and (
                _LINE_REFERENCE.search(f.message) or f.history
            ):
                return None  # a line number in the message may be another file's
            moved_findings.append(
                (
                    entry,
                    replace(
                        f,
                        span=span(f.span),
                        message=text(f.message),
                        related=tuple(
                            r if r.path is not None else replace(r, span=span(r.span))
                            for r in f.related
                        ),
                        fix=None if f.fix is None else replace(f.fix, target=span(f.fix.target)),
                        history=tuple(text(h) for h in f.history),
                    ),
                )
            )
        moved_notes = tuple(replace(n, line=line(n.line), message=text(n.message)) for n in notes)
    except _Unmoved:
        return None
    return moved_findings, moved_notes, follows


class _Unmoved(Exception):
    """A line of stored findings that no block of the layout holds."""


_STRINGS = (ast.Constant, ast.JoinedStr)
_BEFORE_COMMENT = frozenset(" \t,)]}:")  # what may stand between a line's code and its `#`
_COMMENT_LINES = 8  # an edit changing more lines than this is not checked for comment-only


def comment_only(old: Block, new: Block) -> bool:
    """Whether two texts of a block differ only inside comments: the same lines, and each
    line that differs does so after a `#` that starts a comment in both (after the line's
    code, not within a string). Then every finding of one is a finding of the other."""
    if old.tree is None or new.tree is None:
        return False
    before, after = split_lines(old.text), split_lines(new.text)
    if len(before) != len(after):
        return False
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    if not changed or len(changed) > _COMMENT_LINES:
        return False
    for index in changed:
        a, b = before[index], after[index]
        first = next(i for i, (x, y) in enumerate(zip(a + "\0", b + "\1", strict=False)) if x != y)
        if not (_may_be_comment(a, first) and _may_be_comment(b, first)):
            return False  # code changed (most keystrokes): no tree walk needed to say so
        for line, block in ((a, old), (b, new)):
            assert block.tree is not None
            start = _comment_start(line, block.tree, index + block.tree_line0)
            if start is None or start > first:
                return False
    return True


def _may_be_comment(line: str, column: int) -> bool:
    """Whether the line from `column` on can lie in a comment (or the spaces before one):
    a `#` before it, or only spaces up to a `#` or the end."""
    rest = line[column:].lstrip()
    return "#" in line[:column] or not rest or rest.startswith("#")


def _comment_start(line: str, tree: ast.Module, lineno: int) -> int | None:
    """The column (code points) from which the line holds only a comment (and the spaces
    before it), or None when that is not sure (a line of a multi-line string; code after
    `else:`, which no node covers)."""
    end = 0
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        first = getattr(node, "lineno", None)
        if first is not None:
            last = getattr(node, "end_lineno", first) or first
            if not first <= lineno <= last:
                continue
            if isinstance(node, _STRINGS) and first != last:
                return None  # the line is (part of) a string
            if last == lineno:
                byte_end = getattr(node, "end_col_offset", 0) or 0
                end = max(end, len(line.encode("utf-8")[:byte_end].decode("utf-8", "replace")))
        todo.extend(ast.iter_child_nodes(node))
    rest = line[end:]
    if not rest.strip() or rest.lstrip().startswith("#"):
        return end  # spaces, then a comment or nothing
    for column in range(end, len(line)):  # `f(a,  # note`: the comma stays code
        char = line[column]
        if char == "#":
            return column
        if char not in _BEFORE_COMMENT:
            return None
    return None


def _def_text(block: Block, lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The text of a def of `block` (`lines`: the block's text, split)."""
    first = max(fn.lineno - block.tree_line0, 0)
    return "\n".join(lines[first : (fn.end_lineno or fn.lineno) - block.tree_line0 + 1])


def _unfollowed(interp: Interpreter) -> tuple[Note, ...]:
    """The functions an analysis did not follow where they are called (a call chain too
    deep, or a run longer than the time limit), each said on its `def`: what they do there is
    unknown, never silently."""
    return tuple(
        Note(
            line,
            col,
            f"`{name}` is called more than {MAX_CALL_DEPTH} calls deep here: what it does "
            "there is not analysed"
            if limit is None
            else f"`{name}` is not analysed where it is called: its analysis took longer than "
            f"{_limit(limit)} (setting function_time_limit_s)",
            f"calls of `{name}`",
        )
        for (line, col), (name, limit) in sorted(interp.unsummarized.items())
    )


def _one_note_each(notes: list[Note]) -> tuple[Note, ...]:
    """One note per place, in line order: each entry point that calls a function it could
    not follow says so, and a function said not analysed as an entry point is not said again
    for its calls."""
    kept: dict[tuple[int, int], Note] = {}
    for note in notes:
        there = kept.get((note.line, note.col))
        if there is None or (
            note.subject.startswith("function ") and not there.subject.startswith("function ")
        ):
            kept[note.line, note.col] = note
    return tuple(kept[place] for place in sorted(kept))


def _limit(seconds: float) -> str:
    return f"{seconds:g} s"


def _too_deep(what: str, line: int) -> str:
    return (
        f"{what} is too deep to analyse (an expression or call chain nested too deep, "
        f"line {line}): its in-place problems are not reported"
    )


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _verify_targets(
    blocks: list[Block], model: model_mod.ModuleModel, training: dict[str, frozenset[str]]
) -> tuple[tuple[str, str, int, int], ...]:
    """(kind, name, first line, last line) of each verify target, lines 1-based.
    `training`: the functions of each block text that call backward (filled here)."""
    targets: list[tuple[str, str, int, int]] = []
    for block in blocks:
        assert block.tree is not None
        for stmt in block.tree.body:
            line = block.start - 1 + stmt.lineno
            end = block.start - 1 + (stmt.end_lineno or stmt.lineno)
            if isinstance(stmt, ast.ClassDef):
                info = model.classes.get(stmt.name)
                if info is not None and model_mod.looks_like_module(info):
                    targets.append(("module", stmt.name, line, end))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calling = training.get(block.key)
                if calling is None:
                    calling = _training_functions(block, training)
                if stmt.name in calling:
                    targets.append(("function", stmt.name, line, end))
    return tuple(targets)


def _training_functions(block: Block, training: dict[str, frozenset[str]]) -> frozenset[str]:
    """The top-level functions of the block that call backward (a text's, kept by key)."""
    assert block.tree is not None
    found = frozenset(
        stmt.name
        for stmt in block.tree.body
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        and ("backward(" in block.text or "grad(" in block.text)  # cheap test first
        and model_mod.calls_backward(stmt)
    )
    training[block.key] = found
    return found


def _drives_a_class(
    names: frozenset[str], candidates: frozenset[str], model: model_mod.ModuleModel
) -> bool:
    """Whether module-level code that calls these builds an object of a class of the file
    that can write in place and runs it: calls one of its methods by name (`t.train_step()`,
    `agent.update()`) or a backward() (a model called, then its loss backwarded). Merely
    naming one runs none of its methods (a model zoo's registry and `__all__` stay cold)."""
    built = [cls for name in names & candidates if (cls := model.classes.get(name)) is not None]
    if not built:
        return False
    if "backward" in names:
        return True
    methods = {m for cls in model.classes.values() for m in cls.methods if not m.startswith("__")}
    called = names & methods  # (most of a script's names are no method of the file)
    # (its own method or a base class's: `t.train_step()` of a subclass)
    return any(model.find_method(cls, n) is not None for cls in built for n in called)


# Module-level lookups of a name held in a string: any definition may run.
_DYNAMIC = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__", "import_module"})


_NOT_RUN = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _script_reach(
    blocks: list[Block], texts: dict[str, _TextFacts]
) -> tuple[frozenset[str], list[Block]] | None:
    """The top-level functions and classes that a training script (module-level code that
    calls backward()) never reaches, by any name its reachable code mentions (a superset of
    what it calls: identifiers in strings and comments count too). A decorated definition
    may be registered and run by name; where the reachable code looks names up dynamically
    (`globals()`, `eval`), every definition may run. Also the blocks it may run; None
    where there is no such script or any definition may run."""
    defs: dict[str, Block] = {}
    live: set[str] = set()
    for block in blocks:
        if block.tree is None:
            return None  # (what the broken text mentions is not known)
        facts = texts[block.key]
        for name in facts.defines:
            defs[name] = block
        if facts.script and not all(
            isinstance(stmt, _NOT_RUN) or _is_docstring(stmt) for stmt in block.tree.body
        ):
            live |= facts.names
    if not live:
        return None
    for name, block in defs.items():
        if any(
            getattr(stmt, "decorator_list", None)
            for stmt in block.tree.body  # type: ignore[union-attr]
        ):
            live.add(name)
    todo = [name for name in defs if name in live]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        mentioned = texts[defs[name].key].names
        live |= mentioned
        todo.extend(n for n in mentioned if n in defs and n not in seen)
    if "backward" not in live or not live.isdisjoint(_DYNAMIC):
        return None
    run = [b for b in blocks if texts[b.key].script or not texts[b.key].defines.isdisjoint(seen)]
    return frozenset(name for name in defs if name not in seen), run


# Methods that torch or Python call without naming them in the code: nn.Module's forward and
# the hooks of its own that a subclass overrides, autograd.Function's, the dunders.
_IMPLICIT_METHODS = frozenset(
    "forward backward setup_context jvp vjp train eval extra_repr reset_parameters"
    " _init_weights init_weights _apply _load_from_state_dict _save_to_state_dict".split()
)
# Reachable code that looks attributes up by a computed name: any method may run.
_DYNAMIC_ATTRS = frozenset({"getattr", "methodcaller", "attrgetter", "__getattribute__"})
_PLAIN_BASES = frozenset({*model_mod.MODULE_BASES, "nn.Module", "Module", "object"})


def _methods_not_run(run: list[Block], model: model_mod.ModuleModel) -> frozenset[str]:
    """`Class.method` entry points of classes the training script runs whose method nothing
    it may run names (`Net.reinit`, written and never called): the script never runs them.
    Only for classes whose bases are nn.Module or classes of the file: a library's base
    class (Lightning's, transformers') calls its subclass's methods by their names."""
    said: Counter[str] = Counter()
    defined: Counter[str] = Counter()
    for block in run:
        said.update(IDENT.findall(block.text))
        assert block.tree is not None
        defined.update(
            node.name
            for node in ast.walk(block.tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
    if not _DYNAMIC_ATTRS.isdisjoint(said):
        return frozenset()
    idle: set[str] = set()
    for block in run:
        assert block.tree is not None
        for stmt in block.tree.body:
            info = model.classes.get(stmt.name) if isinstance(stmt, ast.ClassDef) else None
            if info is None or not _plain_class(info, model):
                continue
            for name, fn in info.methods.items():
                if (
                    name in _IMPLICIT_METHODS
                    or (name.startswith("__") and name.endswith("__"))
                    or said[name] > defined[name]
                    or not all(_grad_mode_only(d) for d in fn.decorator_list)
                ):
                    continue
                idle.add(f"{info.name}.{name}")
    return frozenset(idle)


def _plain_class(info: model_mod.ClassInfo, model: model_mod.ModuleModel, depth: int = 0) -> bool:
    """Whether a class's bases are nn.Module, object or classes of the file like it."""
    for base in info.bases:
        if base in _PLAIN_BASES:
            continue
        local = model.classes.get(base)
        if local is None or local is info or depth > 8:
            return False
        if not _plain_class(local, model, depth + 1):
            return False
    return True


def _grad_mode_only(decorator: ast.expr) -> bool:
    """`@torch.no_grad()`, `@staticmethod`: decorators that register nothing to call it."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("no_grad", "enable_grad", "inference_mode", "staticmethod", "classmethod")


def _not_run(finding: Finding, top: str) -> Finding:
    """An Error in a definition the file's training script never runs: where it runs, the
    write breaks backward, but this program does not run it."""
    if finding.severity is not Severity.ERROR:
        return finding
    note = f" (This file's training script never runs `{top}`: an error where it runs.)"
    return replace(finding, severity=Severity.WARNING, message=finding.message + note)


def _followed_from_call_sites(follows: list[tuple[str, frozenset[str]]]) -> set[str]:
    """The entry points whose own findings give way to a call site's: those followed, to
    their end, from an entry point that nothing follows (`main()` builds the model and calls
    it: its facts, such as inputs that do not require grad, win over the assumption that
    `forward`'s inputs require grad). A cycle that nothing outside follows keeps its own."""
    edges: dict[str, set[str]] = {}
    for entry, followed in follows:
        edges.setdefault(entry, set()).update(followed - {entry})
    targets = set().union(*edges.values()) if edges else set()
    reached: set[str] = set()
    todo = [entry for entry in edges if entry not in targets]
    while todo:
        for callee in edges.get(todo.pop(), ()):
            if callee not in reached:
                reached.add(callee)
                todo.append(callee)
    return reached


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (code, range): the most severe; of equally severe ones (a write
    reached from several calls, each naming its own saver) the one whose saver comes last,
    whichever call was analysed first (an edit reuses some calls' summaries): backward()
    visits the latest save first, so that is the one torch, `run` and verify name. The
    related locations of the duplicates are merged into it: its own first, then the others'
    (in that order of rank), each once."""
    groups: dict[tuple[str, int, int, int, int], list[Finding]] = {}
    for f in findings:
        key = (f.code, f.span.line, f.span.col, f.span.end_line, f.span.end_col)
        groups.setdefault(key, []).append(f)
    best: dict[tuple[str, int, int, int, int], Finding] = {}
    for key, group in groups.items():
        group.sort(key=_rank, reverse=True)  # the latest saver first ...
        group.sort(key=lambda f: _SEVERITY_RANK[f.severity])  # ... of the most severe
        first = group[0]
        related = tuple(dict.fromkeys(r for f in group for r in f.related))
        best[key] = first if related == first.related else replace(first, related=related)
    # An Error on a line makes a Warning of another code at the same range redundant.
    errors = {(f.span.line, f.span.col) for f in best.values() if f.severity is Severity.ERROR}
    result = [
        f
        for f in best.values()
        if f.severity is Severity.ERROR
        or (f.span.line, f.span.col) not in errors
        or f.code in ("IPL004", "IPL006")
    ]
    # "Checked: safe" about one write of a line where another write fails (two in-place
    # layers of one `nn.Sequential(...)` line) reads as a verdict on the line: no Hint there.
    failing = {f.span.line for f in result if f.severity in (Severity.ERROR, Severity.WARNING)}
    if failing:
        result = [
            f for f in result if f.severity is not Severity.HINT or f.span.line not in failing
        ]
    return sorted(_one_safety_per_edit(result), key=lambda f: (f.span.line, f.span.col, f.code))


def _rank(f: Finding) -> tuple[object, ...]:
    related = tuple((r.path or "", r.span.line, r.span.col, r.message) for r in f.related)
    return (related, f.message)


def _one_safety_per_edit(findings: list[Finding]) -> list[Finding]:
    """Two findings whose fixes rewrite the same place make the same edit (one
    `inplace=True` flagged from two calls of the module): when one of them says it would
    change what the program computes, neither is safe."""
    unsafe = {(f.fix.kind, f.fix.target) for f in findings if f.fix is not None and not f.fix.safe}
    if not unsafe:
        return findings
    return [
        replace(f, fix=replace(f.fix, safe=False))
        if f.fix is not None and f.fix.safe and (f.fix.kind, f.fix.target) in unsafe
        else f
        for f in findings
    ]


_DEFAULT_WORKSPACE: Workspace | None = None


def load_knowledge() -> Knowledge:
    """The autograd knowledge table (loaded once per process)."""
    return load()


def default_workspace() -> Workspace:
    """One workspace per process for one-shot analyses (the CLI): imported files are modelled
    once however many files import them. Imports are found on the file system (the package
    tree, the current directory, `src/`); the editor's workspace also asks jedi."""
    global _DEFAULT_WORKSPACE
    if _DEFAULT_WORKSPACE is None:
        _DEFAULT_WORKSPACE = Workspace(Path.cwd(), use_jedi=False)
    return _DEFAULT_WORKSPACE


def analyze(text: str, path: str | None = None) -> list[Finding]:
    """All findings of one Python source text, before settings and noqa are applied."""
    return analyze_document(text, path).findings


def analyze_document(
    text: str, path: str | None = None, *, time_limit_s: float | None = FUNCTION_TIME_LIMIT_S
) -> DocumentResult:
    """Findings and syntax errors of one source text; `path` lets it read the files it
    imports from; a function whose analysis takes longer than `time_limit_s` is a note."""
    if path is None:
        analysis = DocumentAnalysis()
    else:
        workspace = default_workspace()
        analysis = DocumentAnalysis(
            parse_cache=workspace.parse_cache, path=path, workspace=workspace
        )
    analysis.log_notes = False  # the caller has them in the result
    analysis.incremental = False
    analysis.time_limit_s = time_limit_s
    return analysis.update(text)
