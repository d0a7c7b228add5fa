"""The report of a run under the runtime detector (`inplace-lsp run`, `inplace_lsp.detect()`,
the pytest plugin): its format, where it goes, writing it, and reading the newest run back.

`inplace-lsp run SCRIPT` writes `<root>/.inplace-lsp/last-run.json` (under torchrun one
`last-run-rank<N>.json` per rank, all with the run's `run_id`). Only the newest run counts:
the newest file by mtime names the run, and every file of that run is read; files of older
runs are stale. A file that cannot be read (missing, empty, half written, not JSON, not
format 1) is logged in one line and never stops the reader (the language server).

The standard library only: the detector imports this in the user's process. The server's
side (watching and polling the files, findings as diagnostics) is in `inplace_lsp.lsp`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeGuard

from inplace_lsp import files

logger = logging.getLogger(__name__)

TOOL = "inplace-lsp run"
FORMAT = 1
DIRECTORY = ".inplace-lsp"
NAME = "last-run.json"  # in DIRECTORY of the project root; torchrun: last-run-rank<N>.json
_NAME = re.compile(r"last-run(?:-rank\d+)?\.json")
# What makes a folder a project root for `inplace-lsp run`, which writes its report there.
ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", DIRECTORY)

MAX_BYTES = 32 << 20  # a report larger than this is not read (a run writes a few kB)
# What one run may show (each report of it, and its reports together); a run with more is
# read up to these and says so once (a run finds a few sites, each with a count; 100,000
# committed findings held up the server 9-20 s and went out in one 17 MB message). A
# finding's texts are cut at MAX_TEXT characters.
MAX_FINDINGS = 1000
MAX_FILE_FINDINGS = 200
MAX_EXAMINED = 10 * MAX_FINDINGS  # findings looked at for those: the rest are parsed only
MAX_SHOWN_BYTES = 4 << 20  # of diagnostics, about (a message the server writes stays < 5 MB)
MAX_RELATED = 16
MAX_TEXT = 4000
# The findings are parsed one at a time, pausing every PIECE of them (json.loads of a 12 MB
# report held the GIL 330 ms in the reading thread, and the server's event loop waited).
PIECE = 200
PAUSE_S = 0.0005
# (path, mtime in ns, size) of each report file present: a change in it means "read again".
Signature = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class Cell:
    """The notebook cell whose code a line was in, as the kernel knew it (`%inplace_detect`)."""

    id: str | None  # what the front end called the cell: VS Code, its URI; JupyterLab, its id
    notebook: str | None  # the notebook's path, absolute and normalised, when the kernel knew it
    text: str  # the cell's code when it ran (the place's line is a line of it)


@dataclass(frozen=True)
class Place:
    """A line of the user's code as it was when the run happened."""

    path: str  # absolute, normalised (a notebook cell's: the kernel's name for its code)
    line: int  # 1-based
    source: str  # the line's text, stripped
    cell: Cell | None = None  # the notebook cell the line is in


@dataclass(frozen=True)
class Finding:
    """One finding of a run, as the report gives it."""

    severity: str  # "error" | "warning"
    kind: str  # "inplace-error", "leaf-error", "silent-write", "unused-write", "graph-retention"
    message: str
    mutation: Place | None
    saved_by: Place | None
    saved_op: str | None  # the backward node that saved the tensor (SigmoidBackward0)
    call_site: Place | None  # the call of an inplace=True module
    related: tuple[tuple[Place, str], ...] = ()  # (where, what happened there)
    count: int = 1

    @property
    def at(self) -> Place | None:
        """Where the diagnostic goes: the write, else the op that saved the tensor (else the
        call, else the first related line: a graph kept alive has no write)."""
        first = self.related[0][0] if self.related else None
        return self.mutation or self.saved_by or self.call_site or first


@dataclass(frozen=True)
class Report:
    path: str
    mtime_ns: int
    run_id: str
    rank: int | None
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class Run:
    """The newest run: its files and their findings (no files: no run, nothing to show)."""

    run_id: str | None
    files: tuple[str, ...]
    findings: tuple[Finding, ...]


def project_root(start: str, fallback: str | None = None) -> str:
    """Where a run of a script in folder `start` leaves its report: the nearest folder at or
    above it with a root marker (`.inplace-lsp` itself is one), else `fallback` (`inplace-lsp
    run` gives the working directory), else `start`. The server asks again on every poll: a
    report folder that appears nearer than the last one found wins."""
    folder = start
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
            return folder
        above = os.path.dirname(folder)
        if above == folder:
            return start if fallback is None else fallback
        folder = above


def write(path: Path, data: Mapping[str, Any]) -> None:
    """Writes a report atomically: to a temporary name in the same folder, then renamed (a
    reader never sees half of it). Raises OSError."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    os.replace(temporary, path)


def is_report(path: str) -> bool:
    """Whether `path` names a report file (a watched-file event for it means "read again")."""
    parent, name = os.path.split(path)
    return os.path.basename(parent) == DIRECTORY and _NAME.fullmatch(name) is not None


def signature(folders: Sequence[str]) -> Signature:
    """The report files of the workspace folders with their mtime and size: one directory
    listing per folder (a poll every few seconds costs next to nothing)."""
    found: list[tuple[str, int, int]] = []
    for folder in folders:
        directory = os.path.join(folder, DIRECTORY)
        try:
            entries = list(os.scandir(directory))
        except OSError:  # no directory (no run yet), or unreadable
            continue
        for entry in entries:
            if not _NAME.fullmatch(entry.name):
                continue
            try:
                stat = entry.stat()
            except OSError:  # removed meanwhile
                continue
            found.append((entry.path, stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


def newest_run(folders: Sequence[str], files: Signature | None = None) -> Run | None:
    """The newest run's findings in the workspace folders. None when the newest file cannot be
    read: a run writing it now, or a broken file; what is shown stays (a half-written report
    must not wipe the findings until it is complete)."""
    present = signature(folders) if files is None else files
    if not present:
        return Run(None, (), ())
    reports: list[Report] = []
    newest = max(present, key=lambda f: (f[1], f[0]))
    for path, mtime_ns, _ in present:
        report = read(path, mtime_ns)
        if report is not None:
            reports.append(report)
        elif path == newest[0] and os.path.exists(path):
            return None
    if not reports:
        return Run(None, (), ())
    latest = max(reports, key=lambda r: (r.mtime_ns, r.path))
    of_run = sorted(
        (r for r in reports if r.run_id == latest.run_id),
        key=lambda r: (-1 if r.rank is None else r.rank, r.path),
    )
    caps = Caps()
    merged = _across_ranks([finding for report in of_run for finding in report.findings])
    findings = tuple(finding for finding in merged if caps.admit(finding))
    if caps.left_out and len(of_run) > 1:
        logger.warning(
            "run %s: %d more findings of its %d reports not shown (%s)",
            latest.run_id,
            caps.left_out,
            len(of_run),
            _CAPS,
        )
    return Run(latest.run_id, tuple(r.path for r in of_run), findings)


_RANK = re.compile(r"\[rank (\d+)\] ")


def _across_ranks(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """One finding for what several ranks of a job found alike (the same lines, the same
    message after its "[rank N] "), its message starting "[ranks 0-7] "; counts add up."""
    groups: dict[tuple[Finding, bool], tuple[list[int], int]] = {}
    for finding in findings:
        match = _RANK.match(finding.message)
        message = finding.message[match.end() :] if match else finding.message
        key = (replace(finding, message=message, count=1), match is not None)
        ranks, count = groups.get(key, ([], 0))
        if match:
            ranks.append(int(match.group(1)))
        groups[key] = (ranks, count + finding.count)
    merged = []
    for (finding, ranked), (ranks, count) in groups.items():
        message = finding.message
        if ranked:
            seen = sorted(set(ranks))
            label = f"rank {seen[0]}" if len(seen) == 1 else f"ranks {_spans(seen)}"
            message = f"[{label}] {message}"
        merged.append(replace(finding, message=message, count=count))
    return tuple(merged)


def _spans(numbers: Sequence[int]) -> str:
    """ "0-3, 5" for [0, 1, 2, 3, 5]."""
    parts: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(parts)


def read(path: str, mtime_ns: int = 0) -> Report | None:
    """One report file, or None (logged) when it is not a readable format-1 report."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(path)))  # the project's folder
    try:
        data = files.read_regular(path, MAX_BYTES, root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("run report %s: not read: %s", path, exc)
        return None
    if not data.strip():
        logger.info("run report %s: empty (being written?)", path)
        return None
    kept = _Kept(root)
    try:
        raw = _parse(data.decode(json.detect_encoding(data), "surrogatepass"), kept.add)
    except ValueError as exc:  # also UnicodeDecodeError
        logger.warning("run report %s: not JSON (being written?): %s", path, exc)
        return None
    except RecursionError:
        logger.warning("run report %s: nested too deeply to be a report", path)
        return None
    if raw is None or raw.get("tool") != TOOL:
        logger.warning("run report %s: not a report of %s", path, TOOL)
        return None
    if raw.get("format") != FORMAT:
        logger.warning(
            "run report %s: format %r, this server reads format %d", path, raw.get("format"), FORMAT
        )
        return None
    if raw.get("findings") is not STREAMED:
        logger.warning("run report %s: no list of findings", path)
        return None
    if kept.malformed:
        logger.warning(
            "run report %s: skipped %d findings (malformed, or naming no line in %s)",
            path,
            kept.malformed,
            root,
        )
    if kept.left_out:
        logger.warning("run report %s: %d more findings not shown (%s)", path, kept.left_out, _CAPS)
    rank = raw.get("rank")
    run_id = raw.get("run_id")
    return Report(
        path=path,
        mtime_ns=mtime_ns,
        run_id=_text(run_id) if isinstance(run_id, (str, int)) and run_id else "",
        rank=rank if _is_int(rank) else None,
        findings=tuple(kept.findings),
    )


class Caps:
    """What a run shows, counted as its findings are admitted: MAX_FINDINGS findings, at most
    MAX_FILE_FINDINGS in one file, MAX_SHOWN_BYTES of diagnostics (about: `_weight`) in all,
    so that a publish of one file's is bounded too; `left_out` counts the rest."""

    def __init__(self) -> None:
        self.count = 0
        self.bytes = 0
        self.per_file: dict[str, int] = {}
        self.left_out = 0

    def admit(self, finding: Finding) -> bool:
        at = finding.at
        assert at is not None  # the reader keeps only findings that name a line
        weight = _weight(finding)
        in_file = self.per_file.get(at.path, 0)
        if (
            self.count >= MAX_FINDINGS
            or in_file >= MAX_FILE_FINDINGS
            or self.bytes + weight > MAX_SHOWN_BYTES
        ):
            self.left_out += 1
            return False
        self.count += 1
        self.bytes += weight
        self.per_file[at.path] = in_file + 1
        return True


def _weight(finding: Finding) -> int:
    """About the bytes of the diagnostic a finding becomes: its texts as JSON, its places'
    URIs (a path's bytes percent-encoded at worst) and ranges."""
    texts = [
        finding.message,
        finding.kind,
        finding.saved_op or "",
        *(m for _, m in finding.related),
    ]
    places = [finding.at, finding.saved_by, finding.call_site, *(p for p, _ in finding.related)]
    paths = sum(3 * len(p.path.encode("utf-8", "surrogateescape")) for p in places if p)
    return len(json.dumps(texts)) + paths + 200 * len(places)


class _Kept:
    """The findings of one report as they are parsed: the well-formed ones within its Caps,
    of the first MAX_EXAMINED, and how many were malformed or left out."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.findings: list[Finding] = []
        self.caps = Caps()
        self.examined = 0
        self.malformed = 0
        self._inside: dict[str, bool] = {}  # path -> in the project (realpath once a path)

    @property
    def left_out(self) -> int:
        return self.caps.left_out

    def inside(self, path: str) -> bool:
        found = self._inside.get(path)
        if found is None:
            found = self._inside[path] = files.inside(path, self.root)
        return found

    def add(self, raw: object) -> None:
        if self.examined >= MAX_EXAMINED or self.caps.count >= MAX_FINDINGS:
            self.caps.left_out += 1
            return
        self.examined += 1
        finding = _finding(raw, self.inside)
        if finding is None:
            self.malformed += 1
        elif self.caps.admit(finding):
            self.findings.append(finding)


_BLANK = re.compile(r"[ \t\n\r]*")
_CAPS = f"a run shows at most {MAX_FINDINGS} findings, {MAX_FILE_FINDINGS} in a file"
STREAMED = object()  # the "findings" member that _parse gave away item by item
_DECODER = json.JSONDecoder()


def _parse(text: str, finding: Callable[[object], object]) -> dict[str, Any] | None:
    """A report's top-level object as json.loads reads it, but for its "findings" list: each
    of its items is parsed on its own and given to `finding`, and the member's value is
    STREAMED (the C parser takes one finding at a time, with a pause every PIECE).
    None when the JSON is no object (not read further: it is no report). Raises ValueError
    where json.loads would, RecursionError for an item nested too deep."""
    at = _BLANK.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", at):
        if text.startswith("[", at) or not text.strip():
            return None
        _DECODER.raw_decode(text, at)  # a scalar or invalid JSON: say which
        return None
    members: dict[str, Any] = {}
    at = _skip(text, at + 1)
    if text.startswith("}", at):
        return _ended(text, at, members)
    while True:
        if not text.startswith('"', at):
            raise json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, at
            )
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not text.startswith(":", at):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
        at = _skip(text, at + 1)
        if key == "findings" and text.startswith("[", at):
            at = _items(text, at, finding)
            members[key] = STREAMED
        else:
            members[key], at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif text.startswith("}", at):
            return _ended(text, at, members)
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)


def _skip(text: str, at: int) -> int:
    return _BLANK.match(text, at).end()  # type: ignore[union-attr]


def _ended(text: str, at: int, members: dict[str, Any]) -> dict[str, Any]:
    """The members of an object whose `}` is at `at`, when nothing but blanks follows."""
    end = _skip(text, at + 1)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return members


def _items(text: str, at: int, item: Callable[[object], object]) -> int:
    """Parses the JSON list at `at` an item at a time, giving each to `item`; where it ends."""
    at = _skip(text, at + 1)
    if text.startswith("]", at):
        return at + 1
    count = 0
    while True:
        value, at = _DECODER.raw_decode(text, at)
        item(value)
        count += 1
        if not count % PIECE:
            time.sleep(PAUSE_S)  # the GIL is free meanwhile
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif text.startswith("]", at):
            return at + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object) -> str:
    """A text of a finding, cut at MAX_TEXT characters."""
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _place(raw: object, inside: Callable[[str], bool]) -> Place | None:
    """A place of a finding; None when malformed, or a file not `inside` the project (a
    notebook cell's code is the kernel's, anywhere: the report holds its text)."""
    if not isinstance(raw, Mapping):
        return None
    path, line, source = raw.get("path"), raw.get("line"), raw.get("source")
    if not isinstance(path, str) or not os.path.isabs(path) or not isinstance(source, str):
        return None
    if not _is_int(line) or line < 1 or "\0" in path:
        return None
    cell = _cell(raw)
    if cell is None and not inside(path):
        return None
    return Place(os.path.normcase(os.path.normpath(path)), line, source.strip(), cell)


def _cell(raw: Mapping[str, Any]) -> Cell | None:
    cell = raw.get("cell")
    if not isinstance(cell, Mapping) or not isinstance(cell.get("text"), str):
        return None
    cell_id, notebook = cell.get("id"), cell.get("notebook")
    if not isinstance(notebook, str) or not os.path.isabs(notebook):
        notebook = None
    return Cell(
        cell_id if isinstance(cell_id, str) and cell_id else None,
        None if notebook is None else os.path.normcase(os.path.normpath(notebook)),
        cell["text"],
    )


_PLACES = ("mutation", "saved_by", "call_site")


def _finding(raw: Any, inside: Callable[[str], bool]) -> Finding | None:
    """A finding of the report, or None when it names no line, has no message, or a member
    it has is not of its kind (`"related": 7`)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("message"), str):
        return None
    saved, listed, kind = raw.get("saved_by"), raw.get("related", []), raw.get("kind")
    if not isinstance(listed, list) or not isinstance(kind, (str, type(None))):
        return None
    if any(not isinstance(raw.get(name), (Mapping, type(None))) for name in _PLACES):
        return None
    related = []
    for item in listed[:MAX_RELATED]:
        place = _place(item, inside)
        if place is not None:
            related.append((place, _text(item.get("message") or "")))
    op = saved.get("op") if isinstance(saved, Mapping) else None
    count = raw.get("count")
    if not _is_int(count) or count < 1:
        count = 1
    finding = Finding(
        severity="error" if raw.get("severity") == "error" else "warning",
        kind=(kind or "run")[:80],
        message=_text(raw["message"]),
        mutation=_place(raw.get("mutation"), inside),
        saved_by=_place(saved, inside),
        saved_op=_text(op)[:200] if isinstance(op, str) and op else None,
        call_site=_place(raw.get("call_site"), inside),
        related=tuple(related),
        count=count,
    )
    return finding if finding.at is not None else None
