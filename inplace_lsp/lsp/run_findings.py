"""The newest run's findings as diagnostics (source "inplace-lsp run"), each kept on its line
while that line holds the text it had in the run: moved along by edits elsewhere, dropped for
good when the line itself changes (until a new report).

Every line a finding names (the write, the op that saved, the call, related lines) is an
anchor in its file, checked against the editor's buffer while the file is open and against
the file on disk otherwise. An edit moves the anchors by the line ranges of its changes: the
lines before the first change stay, the lines after the last one move by the lines added, and
only the lines in between are compared (a keystroke compares one line). A change of the whole
text compares the lines that differ, with difflib when they are few and by looking for the
anchor's text near its old place when they are many.

No pygls here; the session calls this on open, change, close and a new report.
"""

from __future__ import annotations

import difflib
import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from inplace_lsp import files
from inplace_lsp.analysis.lines import decode_source, line_breaks, split_lines
from inplace_lsp.config import MAX_FILE_BYTES
from inplace_lsp.lsp import convert
from inplace_lsp.report import Cell, Finding, Place, Run

SOURCE = "inplace-lsp run"
DIFF_LIMIT = 4000  # lines of a changed region compared with difflib; beyond, a search near
NEAR = 200  # lines around its old place searched for an anchor's text
# A file named by a report that is larger is not read (no findings there): the analysis's own
# limit (a script that large is generated); its lines cost some 10 bytes of memory per byte.
MAX_BYTES = MAX_FILE_BYTES
# What the files one report names may take to read, together: past it, the rest are not read
# (a report naming 150 files of 16 MB blocked the server 36 s and kept 4.3 GB).
READ_BUDGET = 8 * MAX_BYTES

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}

ReadLines = Callable[[str], Sequence[str] | None]
# A thread that reads a report's files works in pieces of this many characters (or lines),
# sleeping PAUSE_S between two: one C call on a 2 MB file (splitting it into lines, summing or
# freeing them) holds the GIL 5-25 ms, and the event loop's thread waits for it.
PIECE = 1 << 16
PAUSE_S = 0.0005


@functools.lru_cache(maxsize=4096)
def file_key(path: str) -> str:
    """One name per file, however the editor and the run spell its path (links resolved)."""
    return os.path.normcase(os.path.realpath(path))


def read_lines(path: str, gentle: bool = False) -> list[str] | None:
    """A file's lines on disk (decoded as Python decodes source), None when it cannot be read
    or is not a regular file of at most MAX_BYTES (a FIFO or `/dev/stdin` is not opened for
    reading: it could block the server). `gentle`: split in pieces (a thread's reading)."""
    try:
        data = files.read_regular(path, MAX_BYTES)
    except OSError:
        return None
    try:
        text = decode_source(data)[0]
    except (UnicodeDecodeError, SyntaxError):  # still anchors the lines that are ASCII
        text = data.decode("utf-8", "surrogateescape")
    return _split_gently(text) if gentle else split_lines(text)


def _pause() -> None:
    time.sleep(PAUSE_S)  # the GIL is free meanwhile


def _split_gently(text: str) -> list[str]:
    """split_lines(text), a PIECE of text at a time, pausing between two."""
    lines: list[str] = []
    start = 0
    while True:
        cut = text.find("\n", start + PIECE) + 1  # just after a "\n": where a line ends
        if cut in (0, len(text)):
            lines += split_lines(text[start:])
            return lines
        piece = split_lines(text[start:cut])
        piece.pop()  # the empty line after the last break: the next piece's first line
        lines += piece
        start = cut
        _pause()


def read_gently(path: str) -> list[str] | None:
    """read_lines for a thread beside the event loop."""
    return read_lines(path, gentle=True)


def _size(lines: Sequence[str]) -> int:
    """The characters of `lines`, summed a PIECE of lines at a time, pausing between two."""
    total = 0
    for start in range(0, len(lines), PIECE):
        total += sum(map(len, lines[start : start + PIECE]))
        _pause()
    return total


@dataclass(frozen=True)
class Reread:
    """A file's lines read again from disk in a thread, and how many lines at its start and
    then at its end are the same as in `old`, the lines they were compared with."""

    old: Sequence[str]
    new: Sequence[str] | None  # None: the file cannot be read now
    prefix: int
    suffix: int


def reread(path: str, old: Sequence[str]) -> Reread:
    """`path`'s lines read again and compared with `old`, in pieces (a thread's work: for a
    2 MB file, reading and comparing took the event loop 115-160 ms)."""
    new = read_gently(path)
    prefix, suffix = _unchanged_ends(old, new if new is not None else [], gentle=True)
    return Reread(old, new, prefix, suffix)


def _unchanged_ends(
    old: Sequence[str], new: Sequence[str], prefix: int = 0, suffix: int = 0, gentle: bool = False
) -> tuple[int, int]:
    """(prefix, suffix), known unchanged, widened: the lines the same (`_same`) at the start
    of both, then at their ends short of the prefix. `gentle`: pausing every PIECE lines (a
    thread's work)."""
    old_count, new_count = _count(old), _count(new)
    limit = min(old_count, new_count)
    while prefix < limit - suffix and _same(old, prefix, new, prefix):
        prefix += 1
        if gentle and not prefix % PIECE:
            _pause()
    while suffix < limit - prefix and _same(
        old, old_count - 1 - suffix, new, new_count - 1 - suffix
    ):
        suffix += 1
        if gentle and not suffix % PIECE:
            _pause()
    return prefix, suffix


def let_go(files: dict[str, object]) -> None:
    """Drops a replaced run's files (or files read for a report that a newer one replaced)
    one at a time, pausing between two (in a thread: each file's lines are freed there,
    unless an open buffer still holds them; freeing a 2 MB file's lines takes 5 ms)."""
    while files:
        files.popitem()
        _pause()


def release(lines: list[str]) -> None:
    """Empties `lines` from the end, a PIECE at a time, pausing between two: freeing a large
    file's lines in a thread without holding the GIL for all of them at once."""
    while lines:
        del lines[-PIECE:]
        _pause()


def _count(lines: Sequence[str]) -> int:
    """The number of lines as LSP counts them, for lines with ends (pygls: no empty last line
    after a final line break) or without (`split_lines`)."""
    if not lines or lines[-1].endswith(("\n", "\r")):
        return len(lines) + 1
    return len(lines)


def changed_lines(changes: Sequence[object], count: int) -> tuple[int, int]:
    """(lines at the start, lines at the end) that a didChange's content changes, applied in
    order to a text of `count` lines, left as they were; (0, 0) for a change of the whole
    text."""
    prefix = suffix = count
    for change in changes:
        where = getattr(change, "range", None)
        if not isinstance(where, types.Range):
            return 0, 0
        last = max(count - 1, 0)
        start, end = min(where.start.line, last), min(where.end.line, last)
        prefix = min(prefix, start)
        suffix = min(suffix, last - end)
        count += line_breaks(str(getattr(change, "text", ""))) - (end - start)
    return max(prefix, 0), max(suffix, 0)


@dataclass(eq=False)
class _Anchor:
    owner: str  # the file whose diagnostic this anchor belongs to
    line: int  # 0-based, in the file's current lines
    source: str  # the stripped text the line must hold
    alive: bool = True


@dataclass(eq=False)
class _Shown:
    finding: Finding
    at: _Anchor
    related: list[tuple[str, _Anchor, str]]  # (file key, anchor, message)


@dataclass(eq=False)
class _File:
    key: str
    uri: str  # the URI the editor knows the file by (the path's until it opens)
    lines: Sequence[str]  # the buffer's while open, else the disk's
    anchors: list[_Anchor] = field(default_factory=list)
    shown: list[_Shown] = field(default_factory=list)  # findings shown in this file


@dataclass(eq=False)
class _Buffer:
    uri: str
    text: str
    given: Sequence[str] | None = None  # the editor's lines, when the server has them

    @property
    def lines(self) -> Sequence[str]:
        if self.given is None:
            self.given = split_lines(self.text)
        return self.given


@dataclass(frozen=True)
class Changed:
    """Files whose run diagnostics changed: moved, or some dropped."""

    moved: frozenset[str] = frozenset()
    dropped: frozenset[str] = frozenset()

    @property
    def keys(self) -> frozenset[str]:
        return self.moved | self.dropped

    def __or__(self, other: Changed) -> Changed:
        return Changed(self.moved | other.moved, self.dropped | other.dropped)


def prefetch(
    run: Run, read: ReadLines = read_lines, gentle: bool = False
) -> dict[str, Sequence[str] | None]:
    """The lines of every file the run's findings name (not notebook cells': the report holds
    their text), each read once, READ_BUDGET bytes in all: what `RunFindings.replace` reads,
    read beforehand, off the event loop (a thread may call this; it touches no state). A file
    where no line a finding names still holds the run's text is given as read with no lines
    (`()`: nothing to anchor there, nothing kept). `gentle`, for a thread beside the event
    loop: lines are measured, and an unmatched file's freed, in pieces."""
    found: dict[str, Sequence[str] | None] = {}
    budget = READ_BUDGET
    for path, named in _places(run).items():
        lines = None if budget <= 0 else read(path)
        if lines is not None:
            budget -= _size(lines) if gentle else sum(map(len, lines))
            count = _count(lines)
            if all(_near(lines, p.source, p.line - 1, 0, count) is None for p in named):
                if gentle and isinstance(lines, list):
                    release(lines)
                lines = ()
        found[path] = lines
    return found


def _places(run: Run) -> dict[str, list[Place]]:
    """The places in files (not notebook cells) the run's findings name, by path, in order."""
    places: dict[str, list[Place]] = {}
    for finding in run.findings:
        for place in (finding.at, *(where for where, _ in _related(finding))):
            if place is not None and place.cell is None:
                places.setdefault(place.path, []).append(place)
    return places


class RunFindings:
    """The findings of the newest run, tracked through edits, by file key (`file_key`)."""

    def __init__(self, read: ReadLines = read_lines) -> None:
        self._read = read
        self._files: dict[str, _File] = {}
        self._buffers: dict[str, _Buffer] = {}  # open documents, by key
        self._uris: dict[str, str] = {}  # key -> the URI its diagnostics were last shown under
        # A notebook cell's code, by the kernel's name for it: the cell as the run saw it. Its
        # findings show once the session binds the key to the open cell (`opened`).
        self.cells: dict[str, Cell] = {}
        self.run: Run = Run(None, (), ())

    # ---------------------------------------------------------------- what is shown

    def shown_in(self) -> set[str]:
        """The files with diagnostics."""
        return {key for key, file in self._files.items() if file.shown}

    def has(self, key: str) -> bool:
        file = self._files.get(key)
        return file is not None and bool(file.shown)

    def uri(self, key: str) -> str:
        """The URI the editor knows a file by: the open document's, else the one its
        diagnostics went out under (a report's path's), else the key's; "" for a notebook
        cell's code that no open cell holds."""
        file = self._files.get(key)
        if file is not None:
            return file.uri
        buffer = self._buffers.get(key)
        if buffer is not None:
            return buffer.uri
        if key in self.cells:
            return ""
        return self._uris.get(key) or Path(key).as_uri()

    def unbound_cells(self) -> dict[str, Cell]:
        """The notebook cells with findings that no open cell holds yet, by key."""
        return {key: cell for key, cell in self.cells.items() if key not in self._buffers}

    def diagnostics(self, key: str, encoding: str) -> list[types.Diagnostic]:
        file = self._files.get(key)
        if file is None:
            return []
        return [self._diagnostic(shown, file, encoding) for shown in file.shown]

    def _diagnostic(self, shown: _Shown, file: _File, encoding: str) -> types.Diagnostic:
        related = []
        for key, anchor, message in shown.related:
            there = self._files.get(key)
            if anchor.alive and there is not None:
                where = types.Location(
                    there.uri, convert.code_range(there.lines, anchor.line, encoding)
                )
                related.append(types.DiagnosticRelatedInformation(where, message))
        finding = shown.finding
        return types.Diagnostic(
            range=convert.code_range(file.lines, shown.at.line, encoding),
            message=convert.places_shown(finding.message, finding.at.path if finding.at else None),
            severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
            code=finding.kind,
            source=SOURCE,
            related_information=related or None,
        )

    # ---------------------------------------------------------------- a new report

    def replace(
        self,
        run: Run,
        read: Mapping[str, Sequence[str] | None] | None = None,
        drop: Callable[[dict[str, Any]], object] | None = None,
    ) -> set[str]:
        """The findings of a new run replace all others; the files whose diagnostics may have
        changed (those that had some and those that have some now). `read`: the named files'
        lines as `prefetch` reads them (None: read here); only the lines of files where a
        finding's line still holds the run's text are kept. `drop`: given the last run's
        files, to free them elsewhere (`let_go` in a thread)."""
        before = self.shown_in()
        self.run = run
        if drop is not None:
            drop(self._files)
        self._files = {}
        self.cells = {}
        disk = prefetch(run, self._read) if read is None else read
        from_disk: set[str] = set()  # files whose anchors were placed in the disk's lines
        for finding in run.findings:
            place = finding.at
            assert place is not None  # the report reader keeps only findings that name a line
            owner = file_key(place.path)
            at = self._anchor(owner, place, disk, from_disk)
            if at is None:
                continue
            related = []
            for where, message in _related(finding):
                key = file_key(where.path)
                anchor = self._anchor(owner, where, disk, from_disk)
                if anchor is not None:
                    related.append((key, anchor, message))
            self._files[owner].shown.append(_Shown(finding, at, related))
        for key in from_disk & set(self._buffers):  # open: the disk's lines to the buffer's
            self._follow(self._files[key], self._buffers[key].lines, 0, 0)
        return before | self.shown_in()

    def _anchor(
        self,
        owner: str,
        place: Place,
        disk: Mapping[str, Sequence[str] | None],
        from_disk: set[str],
    ) -> _Anchor | None:
        """An anchor at `place`'s line, where the line still holds the run's text (or, after
        lines added or removed since the run, the nearest line that does); None if none. A
        file's lines are kept (`_files`) only once a line of it is anchored."""
        key = file_key(place.path)
        file = self._files.get(key)
        lines: Sequence[str] | None
        if file is not None:
            lines = file.lines
        else:
            # The run ran the file on disk: its lines, mapped to the buffer's when it is open
            # (a notebook cell's code: the cell's text when it ran, which the report holds).
            buffer = self._buffers.get(key)
            on_disk = split_lines(place.cell.text) if place.cell else disk.get(place.path)
            lines = on_disk if on_disk is not None else buffer.lines if buffer else None
            if lines is None:
                return None
        line = _near(lines, place.source, place.line - 1, 0, _count(lines))
        if line is None:
            return None
        if file is None:
            if place.cell is not None:
                self.cells[key] = place.cell
            if on_disk is not None:
                from_disk.add(key)
            if buffer is not None:
                uri = buffer.uri
            else:
                uri = "" if place.cell is not None else Path(place.path).as_uri()
            file = self._files[key] = _File(key, uri, lines)
            self._uris[key] = uri
        anchor = _Anchor(owner, line, place.source)
        file.anchors.append(anchor)
        return anchor

    # ---------------------------------------------------------------- documents

    def opened(self, key: str, uri: str, text: str) -> Changed:
        """A document opened: its anchors move from the disk's lines to the buffer's."""
        buffer = self._buffers[key] = _Buffer(uri, text)
        file = self._files.get(key)
        if file is None:
            return Changed()
        file.uri = self._uris[key] = uri
        return self._follow(file, buffer.lines, 0, 0) | Changed(moved=frozenset({key}))

    def edited(
        self,
        key: str,
        text: str,
        lines: Sequence[str] | None = None,
        changes: Sequence[object] | None = None,
    ) -> Changed:
        """The buffer changed (`changes`: the didChange's content changes, to limit what is
        compared; `lines`: the new text's lines, when the caller has them)."""
        buffer = self._buffers.get(key)
        if buffer is None:
            return Changed()
        buffer.text, buffer.given = text, lines
        file = self._files.get(key)
        if file is None or not file.anchors:
            return Changed()
        prefix, suffix = changed_lines(changes, _count(file.lines)) if changes else (0, 0)
        return self._follow(file, buffer.lines, prefix, suffix)

    def closed(self, key: str, read_disk: bool = True) -> Changed:
        """A document closed: its anchors go back to the file on disk (unsaved edits gone;
        `read_disk` False: the caller has the disk read, see `disk_changed`); a notebook
        cell's to the text it had in the run, shown nowhere until a cell holds it again."""
        self._buffers.pop(key, None)
        cell = self.cells.get(key)
        if cell is not None:
            file = self._files.get(key)
            if file is None:
                return Changed()
            had = bool(file.shown)
            file.uri = self._uris[key] = ""
            self._follow(file, split_lines(cell.text), 0, 0)
            return Changed(moved=frozenset({key})) if had else Changed()
        shown = Changed(moved=frozenset({key})) if self.has(key) else Changed()
        return self.disk_changed(key) | shown if read_disk else shown

    def disk_changed(self, key: str, reread: Reread | None = None) -> Changed:
        """A file that is not open changed on disk. `reread`: its lines as a thread read them
        (`reread`), used as they are while the file's lines are still those it compared them
        with (None: read here)."""
        file = self._files.get(key)
        if file is None or key in self._buffers:
            return Changed()
        if reread is None:
            disk = self._read(key)
            return self._follow(file, disk if disk is not None else [], 0, 0)
        new = reread.new if reread.new is not None else []
        if reread.old is not file.lines:  # replaced meanwhile: compared here
            return self._follow(file, new, 0, 0)
        return self._follow(file, new, reread.prefix, reread.suffix)

    def lines_of(self, key: str) -> Sequence[str] | None:
        """The lines of a file that is not open and has anchors (what a re-read of it is
        compared with); None for any other."""
        file = self._files.get(key)
        if file is None or key in self._buffers or not file.anchors:
            return None
        return file.lines

    # ---------------------------------------------------------------- following edits

    def _follow(self, file: _File, new: Sequence[str], prefix: int, suffix: int) -> Changed:
        """Moves `file`'s anchors from its lines to `new`, of which the first `prefix` and
        the last `suffix` lines are known unchanged; drops those whose line changed."""
        old = file.lines
        file.lines = new
        if not file.anchors:
            return Changed()
        old_count, new_count = _count(old), _count(new)
        prefix = max(0, min(prefix, old_count, new_count))
        suffix = max(0, min(suffix, old_count - prefix, new_count - prefix))
        old_end, new_end = old_count - suffix, new_count - suffix
        if any(prefix <= a.line < old_end for a in file.anchors):
            prefix, suffix = _unchanged_ends(old, new, prefix, suffix)
            old_end, new_end = old_count - suffix, new_count - suffix
        delta = new_end - old_end
        matched: dict[int, int] | None = None
        moved: set[str] = set()
        dropped: set[str] = set()
        for anchor in file.anchors:
            line: int | None = anchor.line
            if anchor.line >= old_end:
                line = anchor.line + delta
            elif anchor.line >= prefix:  # in the changed lines
                if old_end - prefix + new_end - prefix <= DIFF_LIMIT:
                    if matched is None:
                        matched = _matched(old, new, prefix, old_end, new_end)
                    line = matched.get(anchor.line)
                else:
                    guess = min(anchor.line, new_end - 1)
                    line = _near(new, anchor.source, guess, prefix, new_end)
            if line is None or convert.line_at(new, line).strip() != anchor.source:
                anchor.alive = False
                dropped.add(anchor.owner)
            elif line != anchor.line:
                anchor.line = line
                moved.add(anchor.owner)
        if dropped:
            file.anchors = [a for a in file.anchors if a.alive]
            for owner in dropped:
                there = self._files.get(owner)
                if there is not None:
                    there.shown = [s for s in there.shown if s.at.alive]
        return Changed(frozenset(moved), frozenset(dropped))


def _related(finding: Finding) -> list[tuple[Place, str]]:
    """The lines a finding points at besides its own, with what happened there."""
    found: list[tuple[Place, str]] = []
    if finding.saved_by is not None and finding.saved_by is not finding.at:
        op = finding.saved_op or "an op"
        found.append((finding.saved_by, f"saved for backward by {op}"))
    if finding.call_site is not None and finding.call_site is not finding.at:
        found.append((finding.call_site, "called here"))
    for index, (place, message) in enumerate(finding.related):
        if not (index == 0 and place is finding.at):
            found.append((place, message))
    return found


def _same(old: Sequence[str], i: int, new: Sequence[str], j: int) -> bool:
    a, b = convert.line_at(old, i), convert.line_at(new, j)
    return a is b or a == b or a.strip() == b.strip()


def _matched(
    old: Sequence[str], new: Sequence[str], start: int, old_end: int, new_end: int
) -> dict[int, int]:
    """Old line -> new line, for the lines of the changed region that difflib pairs up."""
    before = [convert.line_at(old, i).strip() for i in range(start, old_end)]
    after = [convert.line_at(new, j).strip() for j in range(start, new_end)]
    pairs: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for i, j, size in matcher.get_matching_blocks():
        for k in range(size):
            pairs[start + i + k] = start + j + k
    return pairs


def _near(lines: Sequence[str], source: str, guess: int, low: int, high: int) -> int | None:
    """The line in [low, high) nearest `guess` (within NEAR) that holds `source`, stripped."""
    for distance in range(NEAR + 1):
        for line in (guess - distance, guess + distance) if distance else (guess,):
            if low <= line < high and convert.line_at(lines, line).strip() == source:
                return line
    return None
