"""Verify in a session: runs of the user's code (only on request, in a worker thread), and the
diagnostics of their outcomes, which join the analysis's and are kept through edits for as long
as the text each outcome depends on is unchanged (moved with it in a file)."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import attrs
from lsprotocol import types

from inplace_lsp.analysis.findings import Finding, Span
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.config import Settings
from inplace_lsp.lsp import convert, verification
from inplace_lsp.lsp.lenses import Lenses
from inplace_lsp.lsp.uris import untitled_path, uri_to_path
from inplace_lsp.notebook import Cell, Layout
from inplace_lsp.verify import runner
from inplace_lsp.verify.parsed import Parsed

if TYPE_CHECKING:
    from inplace_lsp.lsp.publisher import Publisher

logger = logging.getLogger(__name__)


@dataclass
class _Verified:
    """The diagnostics of the last verify of one target, kept until the text its outcome
    depends on changes: in a file, the lines from the target's and the result's first line to
    their last (found again after edits elsewhere, and moved with them); in a notebook, the
    cells those lines are in, at the versions verified."""

    # document (the file, or a cell) -> version -> its diagnostics in that version's lines;
    # the version before an edit keeps its own, for a push of the analysis made before it
    by_version: dict[str, dict[int | None, list[types.Diagnostic]]]
    block: tuple[str, ...] = ()  # a file: the lines the outcome depends on
    first_line: int = 1  # a file: where `block` starts in the newest version, 1-based
    cells: dict[str, int | None] = field(default_factory=dict)  # a notebook: uri -> version

    def diagnostics(self, uri: str, version: int | None) -> list[types.Diagnostic]:
        return self.by_version.get(uri, {}).get(version, [])


class Verifying:
    """The verify runs of a session and their diagnostics; every method runs on the event
    loop thread."""

    def __init__(self, session: Publisher, lenses: Lenses) -> None:
        self._session = session
        self._lenses = lenses  # the lens a result names is found among its document's
        # document key -> verified target -> its diagnostics (each target keeps its own)
        self._verified: dict[str, dict[str, _Verified]] = {}
        self.generation = 0  # bumped when verify diagnostics change (pull result ids)
        self._verify_runs: set[threading.Event] = set()  # cancel events of runs in flight

    async def verify(
        self,
        uri: str,
        version: int | None,
        text: str,
        where: types.Position | None,
        progress: verification.Progress,
    ) -> dict[str, Any]:
        """Runs the user's code (only ever on this explicit request): the target enclosing
        `where` (None: the file's main target) in `text`, the editor's buffer at `version`,
        in a worker thread. Shows the outcome in one line, publishes a failure as a
        diagnostic next to the analysis's, returns the result object. The text is parsed
        once, and the runner takes the findings of the version analysed (no analysis again)."""
        session = self._session
        path = uri_to_path(uri)
        cell: tuple[Layout, Cell] | None = None
        owner = session.notebook_of(uri)
        if owner is not None:  # a notebook cell: the notebook's definitions, as one program
            prepared = await self._notebook_program(owner, uri, where)
            if prepared is None:
                return self._not_run("the notebook is not open")
            # The runner analyses the program it runs: the notebook's analysis (its cells'
            # findings) is of all its code, whose calls can hide findings of the target.
            path, parsed, line, cell = prepared
            text, findings = parsed.text, None
        else:
            if path is None and urlparse(uri).scheme == "untitled":
                path = untitled_path(uri, session.workspace.root)  # not written: runs the buffer
            if path is None or path.endswith(".ipynb"):
                return self._not_run("verify runs Python files, notebooks and untitled buffers")
            lines = split_lines(text)
            line = convert.to_point(lines, where, session.features.encoding)[0] if where else None
            parsed, findings = Parsed(text), await self._findings_of(uri, text)
        settings = session.settings.for_path(path).settings
        root = str(session.workspace.root) if session.workspace.root is not None else None
        cancel = progress.cancel
        self._verify_runs.add(cancel)
        try:
            await progress.begin(verification.TITLE)
            result = await asyncio.to_thread(
                _run_verify, path, text, line, settings, cancel, root, progress.report,
                findings, parsed,
            )  # fmt: skip
        except BaseException:  # the request was cancelled, or the server shuts down
            cancel.set()
            progress.end("verify stopped")
            raise
        finally:
            self._verify_runs.discard(cancel)
        summary, kind = verification.message(result, path)
        if cell is not None:
            # "line 3 of code cell 2": a message in a window is in no cell
            summary = cell[0].renumber(summary, None)
            if "NameError" in str(result.get("exception") or result.get("message") or ""):
                summary += f" ({verification.NOTEBOOK_NOTE})"
        progress.end(summary)
        session.client.show(summary, kind)
        if cell is None:
            self.verified_result(uri, version, path, split_lines(text), line, result, parsed)
        elif owner is not None:
            self.verified_notebook(owner, cell[0], path, text, line, result, parsed)
        return result

    async def _findings_of(self, uri: str, text: str) -> tuple[Finding, ...] | None:
        """The analysis's findings of `text` when it is the newest analysed version of the
        document `uri` (None: not analysed, so the runner analyses it)."""
        session = self._session
        key = session.key_of(uri)
        if key is None:
            return None
        await asyncio.wrap_future(session.scheduler.latest(key))
        snapshot = session.scheduler.snapshot(key)
        return snapshot.findings if snapshot is not None and snapshot.text == text else None

    def verified_notebook(
        self,
        notebook: str,
        layout: Layout,
        path: str,
        program: str,
        line: int | None,
        result: dict[str, Any],
        parsed: Parsed | None = None,
    ) -> None:
        """verified_result for a notebook: the diagnostics land in the cells they point into,
        while the notebook is still as verified (`parsed`: the program, parsed)."""
        if result.get("status") not in ("ok", *runner.FAILED):
            return
        document = self._session.document(notebook)
        if document is None or document.layout != layout:
            return  # a cell changed while it ran: the result is stale
        name = str(result.get("target") or "")
        here = "inplace-lsp-notebook:program"
        found = verification.diagnostics(
            result, path, here, split_lines(program), self._session.features.encoding, line
        )
        placed: dict[str, list[types.Diagnostic]] = {}
        lines = split_lines(program)
        span = verification.target_span(lines, name, parsed)
        depends = [*_lines_named(found, here), *(span or ())]
        cells = {c.uri: c.version for c in layout.cells if any(c.holds(n) for n in depends)}
        for diagnostic in found:
            moved = _to_cell(layout, diagnostic.range)
            if moved is None:
                continue
            related = []
            for info in diagnostic.related_information or []:
                if info.location.uri != here:  # another file
                    related.append(info)
                    continue
                where = _to_cell(layout, info.location.range)
                if where is not None:
                    location = types.Location(where[0].uri, where[1])
                    message = layout.renumber(info.message, where[0])
                    related.append(types.DiagnosticRelatedInformation(location, message))
            cell, where_range = moved
            placed.setdefault(cell.uri, []).append(
                attrs.evolve(
                    diagnostic,
                    range=where_range,
                    message=layout.renumber(diagnostic.message, cell),
                    related_information=related or None,
                )
            )
        versions = {cell.uri: cell.version for cell in layout.cells}
        entry = None
        if placed:
            by_version = {uri: {versions[uri]: shown} for uri, shown in placed.items()}
            entry = _Verified(by_version, cells={**cells, **{u: versions[u] for u in placed}})
        self._replace_verified(notebook, name, entry)

    def _not_run(self, why: str) -> dict[str, Any]:
        result = verification.not_run(why)
        self._session.client.show(f"inplace-lsp: {result['message']}", types.MessageType.Warning)
        return result

    async def _notebook_program(
        self, notebook: str, uri: str, where: types.Position | None
    ) -> tuple[str, Parsed, int | None, tuple[Layout, Cell]] | None:
        """(path, text parsed, program line, (layout, cell)) to verify a notebook cell's
        target: the program of the newest analysed version, reduced to its definitions, under
        a virtual path beside the notebook (its imports of local modules resolve)."""
        scheduler = self._session.scheduler
        await asyncio.wrap_future(scheduler.latest(notebook))
        snapshot = scheduler.snapshot(notebook)
        layout = snapshot.attachment if snapshot is not None else None
        cell = layout.cell(uri) if isinstance(layout, Layout) else None
        if snapshot is None or not isinstance(layout, Layout) or cell is None:
            return None
        line = cell.first_line + where.line if where is not None else None
        real = uri_to_path(notebook)
        if real is None:
            path = untitled_path(notebook, self._session.workspace.root)
        else:
            path = verification.notebook_program_path(real)
        program = verification.definitions(Parsed(snapshot.text))
        return path, program, line, (layout, cell)

    def verified_result(
        self,
        uri: str,
        version: int | None,
        path: str,
        lines: Sequence[str],
        line: int | None,
        result: dict[str, Any],
        parsed: Parsed | None = None,
    ) -> None:
        """A run that says ok or names a line replaces the document's verify diagnostics;
        a timeout, an error or a cancel leaves them; so does a text changed meanwhile
        (`parsed`: the text of `lines`, parsed)."""
        if result.get("status") not in ("ok", *runner.FAILED):
            return
        document = self._session.document(uri)
        if document is None or document.layout.is_notebook:
            return
        if document.layout.cells[0].version != version:
            return  # the text changed while it ran: the result is stale
        target_line = next(
            (t.line for t in self._lenses.targets(uri) if t.name == result.get("target")),
            line,
        )
        found = verification.diagnostics(
            result, path, uri, lines, self._session.features.encoding, target_line
        )
        name = str(result.get("target") or "")
        entry = None
        if found:
            span = verification.target_span(lines, name, parsed)
            depends = [*_lines_named(found, uri), *(span or ())]
            first, last = min(depends), max(depends)
            block = tuple(lines[first - 1 : last])
            entry = _Verified({uri: {version: found}}, block=block, first_line=first)
        self._replace_verified(uri, name, entry)

    def _replace_verified(self, key: str, target: str, entry: _Verified | None) -> None:
        """The verify diagnostics of one target of the document `key` (a file or a notebook)
        become `entry`'s (None: it has none); the other targets keep theirs. The client hears
        of the documents whose diagnostics changed."""
        targets = self._verified.setdefault(key, {})
        before = targets.pop(target, None)
        if entry is not None:
            targets[target] = entry
        if not targets:
            del self._verified[key]
        touched = {u for e in (before, entry) if e is not None for u in e.by_version}
        if touched:
            self._verified_changed(key, touched)

    def _verified_changed(self, key: str, uris: set[str], *, edited: bool = False) -> None:
        """The client hears that the verify diagnostics of `uris` (documents of `key`) changed:
        pushed on their own, a refresh to pull, or the document pushed again. After an edit of
        the file itself (`edited`) a pulling client pulls it anyway."""
        session = self._session
        self.generation += 1
        document = session.document(key)
        if session.features.verify_pushed:
            for uri in sorted(uris):
                cell = document.layout.cell(uri) if document is not None else None
                version = cell.version if cell is not None else None
                session.push_apart(uri, version)
        elif session.features.pull:
            if session.features.refresh and not edited:
                session.client.refresh_diagnostics()
        elif session.scheduler.snapshot(key) is not None:
            session.push(key)  # now, not after the analysis (which may wait for a save)

    def follow_verified(self, uri: str, version: int | None, text: str) -> None:
        """A file changed: each target's verify diagnostics move with their lines when those
        lines are still there unchanged, and go when they changed."""
        targets = self._verified.get(uri)
        if not targets:
            return
        lines = split_lines(text)
        dropped = moved = False
        for target, entry in list(targets.items()):
            start = _find_block(lines, entry.block, entry.first_line)
            if start is None:
                del targets[target]
                dropped = True
                continue
            shift = start - entry.first_line
            moved = moved or shift != 0
            entry.first_line = start
            versions = entry.by_version.get(uri) or {None: []}
            last_version, last = list(versions.items())[-1]
            shifted = [_shifted(d, uri, shift, start, len(entry.block)) for d in last]
            # The version before keeps its diagnostics: a push of its analysis may follow.
            entry.by_version[uri] = {last_version: last, version: shifted}
        if not targets:
            del self._verified[uri]
        if self._session.features.verify_pushed and (dropped or moved):
            self.generation += 1
            self._session.push_apart(uri, version)
        elif dropped:
            self._verified_changed(uri, {uri}, edited=True)
        # Moved only: a pushing client gets them with the new version's analysis.

    def follow_verified_cells(self, notebook: str, layout: Layout) -> None:
        """A notebook changed: a target's verify diagnostics go when a cell they depend on
        changed (or went); in cells the edit left alone they stay where they are."""
        targets = self._verified.get(notebook)
        if not targets:
            return
        now = {cell.uri: cell.version for cell in layout.cells}
        touched: set[str] = set()
        for target, entry in list(targets.items()):
            if any(uri not in now or now[uri] != v for uri, v in entry.cells.items()):
                del targets[target]
                touched |= set(entry.by_version)
        if not targets:
            del self._verified[notebook]
        if touched:
            self._verified_changed(notebook, touched)

    def diagnostics(self, uri: str, version: int | None) -> list[types.Diagnostic]:
        """Every verified target's diagnostics in document `uri` at `version`."""
        key = self._session.key_of(uri) or uri
        found: list[types.Diagnostic] = []
        for entry in self._verified.get(key, {}).values():
            found += entry.diagnostics(uri, version)
        return found

    def closed(self, key: str) -> None:
        """A document closed: its verify diagnostics go (a pushing client is told apart)."""
        verified = self._verified.pop(key, None)
        if verified is not None:
            self.generation += 1
            if self._session.features.verify_pushed:
                for shown in sorted({u for entry in verified.values() for u in entry.by_version}):
                    self._session.client.publish(shown, None, [])

    def shutdown(self) -> None:
        """Cancels the verify runs in flight, stops the warm verify workers."""
        for cancel in list(self._verify_runs):
            cancel.set()
        runner.shutdown_workers()


def _lines_named(found: Sequence[types.Diagnostic], uri: str) -> list[int]:
    """The 1-based lines of `uri` that diagnostics sit on or point at (related information)."""
    lines: list[int] = []
    for diagnostic in found:
        lines += [diagnostic.range.start.line + 1, diagnostic.range.end.line + 1]
        for info in diagnostic.related_information or []:
            if info.location.uri == uri:
                where = info.location.range
                lines += [where.start.line + 1, where.end.line + 1]
    return lines


def _find_block(lines: Sequence[str], block: Sequence[str], near: int) -> int | None:
    """The 1-based line where `block` occurs in `lines`, the occurrence nearest `near`."""
    if not block:
        return near
    size, head = len(block), block[0]
    starts = [
        index + 1
        for index in range(len(lines) - size + 1)
        if lines[index] == head and list(lines[index : index + size]) == list(block)
    ]
    return min(starts, key=lambda start: abs(start - near)) if starts else None


_LINE_NUMBER = re.compile(r"\bline (\d+)\b")


def _shifted(
    diagnostic: types.Diagnostic, uri: str, shift: int, first: int, size: int
) -> types.Diagnostic:
    """`diagnostic` with its lines in `uri` (and the "line N" of its message that name lines
    of the block, now at `first`) moved by `shift`."""
    if shift == 0:
        return diagnostic

    def moved(where: types.Range) -> types.Range:
        return types.Range(
            types.Position(where.start.line + shift, where.start.character),
            types.Position(where.end.line + shift, where.end.character),
        )

    def renumber(match: re.Match[str]) -> str:
        line = int(match.group(1))
        inside = first - shift <= line < first - shift + size
        return f"line {line + shift}" if inside else match.group(0)

    related = [
        attrs.evolve(info, location=types.Location(uri, moved(info.location.range)))
        if info.location.uri == uri
        else info
        for info in diagnostic.related_information or []
    ]
    return attrs.evolve(
        diagnostic,
        range=moved(diagnostic.range),
        message=_LINE_NUMBER.sub(renumber, diagnostic.message),
        related_information=related or None,
    )


def _to_cell(layout: Layout, where: types.Range) -> tuple[Cell, types.Range] | None:
    """A range of the notebook's program (its joined cells) in the cell that holds it."""
    start, end = where.start, where.end
    placed = layout.to_cell(Span(start.line + 1, start.character, end.line + 1, end.character))
    if placed is None:
        return None
    cell, span = placed
    return cell, types.Range(
        types.Position(span.line - 1, span.col), types.Position(span.end_line - 1, span.end_col)
    )


def _run_verify(
    path: str,
    text: str,
    line: int | None,
    settings: Settings,
    cancel: threading.Event,
    root: str | None,
    progress: Callable[[str], None],
    findings: tuple[Finding, ...] | None = None,
    parsed: Parsed | None = None,
) -> dict[str, Any]:
    """runner.run_verify in a worker thread; a bug in it becomes an error result."""
    try:
        return runner.run_verify(
            path, text, line, settings, cancel, root=root, progress=progress,
            findings=findings, parsed=parsed,
        )  # fmt: skip
    except Exception as exc:
        logger.exception("verify failed")
        return verification.not_run(f"verify failed: {type(exc).__name__}: {exc}")
