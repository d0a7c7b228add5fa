"""One editor session: open documents and notebooks, when each is analysed, which diagnostics
reach the client (pushed or pulled, never an older version over a newer one), and the requests
that read the cached results (code actions, hover, code lenses, debug info), and verify runs
(the user's code, only on request, in a worker thread) whose diagnostics join the analysis's,
as do the findings of the newest `inplace-lsp run` report in the workspace folders.

It knows LSP types but not pygls: `server.py` hands it texts and a `Client` to talk through.
Every method runs on the event loop thread except the scheduler's callback, which finds the
code lenses of the new version and posts back to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

import attrs
from lsprotocol import types

from inplace_lsp import report
from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.findings import Finding, Span
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.analysis.workspace import Workspace
from inplace_lsp.config import Settings, too_large
from inplace_lsp.lsp import actions, convert, hover, verification
from inplace_lsp.lsp.diagnostics import View, build_view
from inplace_lsp.lsp.run_findings import RunFindings, file_key
from inplace_lsp.lsp.scheduler import Scheduler, Snapshot, new_analysis
from inplace_lsp.lsp.settings import Effective, SettingsStore, debug_info
from inplace_lsp.lsp.verification import LensTarget
from inplace_lsp.notebook import Cell, Layout, notebook_program
from inplace_lsp.verify import runner
from inplace_lsp.verify.parsed import Parsed

logger = logging.getLogger(__name__)

# A change within BURST_GAP_S of the one before is part of a burst; its analysis waits
# BURST_WAIT_S for the next change (a held key repeats every ~30 ms; people type slower).
BURST_GAP_S = 0.03
BURST_WAIT_S = 0.05

# The reports of `inplace-lsp run` (inplace_lsp.report): what the client is asked to watch,
# the files and their folder (a watcher may miss a file in a new folder).
REPORT_GLOBS = (f"**/{report.DIRECTORY}/last-run*.json", f"**/{report.DIRECTORY}")
POLL_S = 2.0  # how often the files are looked at when the client cannot watch them
# ... and when it watches them: a client's watcher may miss the folder (eglot watches only
# folders that held project files when the server registered, and .inplace-lsp is ignored).
WATCHED_POLL_S = 10.0
# After the folder itself appears: when to look again for a report its watcher missed.
RECHECK_S = (0.5, 2.0)

Cells = Sequence[tuple[str, int | None, str]]  # (cell uri, cell version, text), in order


class Client(Protocol):
    """What the session needs from the connection to the editor."""

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Runs `callback` on the event loop thread (callable from any thread)."""

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        """textDocument/publishDiagnostics"""

    def refresh_diagnostics(self) -> None:
        """workspace/diagnostic/refresh"""

    def show(self, message: str, kind: types.MessageType) -> None:
        """window/showMessage"""

    def refresh_code_lenses(self) -> None:
        """workspace/codeLens/refresh"""


def _get(obj: object, path: str) -> Any:
    for name in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, name, None)
    return obj


@dataclass(frozen=True)
class Features:
    """What the client supports, read once from its capabilities."""

    encoding: str = convert.UTF16
    pull: bool = False  # textDocument/diagnostic: the client pulls, the server does not push
    refresh: bool = False  # workspace/diagnostic/refresh
    lazy_edits: bool = False  # codeAction/resolve fills in `edit`
    document_changes: bool = False
    markdown: bool = False
    configuration: bool = False  # workspace/configuration
    watch_files: bool = False  # dynamic registration of didChangeWatchedFiles
    register_configuration: bool = False  # dynamic registration of didChangeConfiguration
    work_done_progress: bool = False  # window/workDoneProgress/create
    code_lens: bool = False  # textDocument/codeLens
    code_lens_refresh: bool = False  # workspace/codeLens/refresh

    @property
    def verify_pushed(self) -> bool:
        """Verify results (and run findings) go out as published diagnostics of their own: the
        client pulls but cannot be told to pull again (Neovim 0.11), so a pulled result would
        only show after the next edit, which drops it. Clients keep pushed and pulled
        diagnostics apart."""
        return self.pull and not self.refresh

    @classmethod
    def of(cls, caps: types.ClientCapabilities, encoding: str) -> Features:
        resolvable = _get(caps, "text_document.code_action.resolve_support.properties") or []
        formats = _get(caps, "text_document.hover.content_format") or []
        return cls(
            encoding=encoding,
            pull=_get(caps, "text_document.diagnostic") is not None,
            refresh=bool(_get(caps, "workspace.diagnostics.refresh_support")),
            lazy_edits="edit" in resolvable,
            document_changes=bool(_get(caps, "workspace.workspace_edit.document_changes")),
            markdown=types.MarkupKind.Markdown in formats or "markdown" in formats,
            configuration=bool(_get(caps, "workspace.configuration")),
            watch_files=bool(_get(caps, "workspace.did_change_watched_files.dynamic_registration")),
            register_configuration=bool(
                _get(caps, "workspace.did_change_configuration.dynamic_registration")
            ),
            work_done_progress=bool(_get(caps, "window.work_done_progress")),
            code_lens=_get(caps, "text_document.code_lens") is not None,
            code_lens_refresh=bool(_get(caps, "workspace.code_lens.refresh_support")),
        )


@dataclass
class _Document:
    key: str  # the file's URI, or the notebook's
    path: str | None
    layout: Layout  # of the editor's buffer (the newest version received)
    text: str = ""  # the buffer's program (a notebook: its code cells joined)
    submitted: int | None = None  # the version last handed to the scheduler
    published: set[str] = field(default_factory=set)  # URIs holding pushed diagnostics
    changed_at: float = 0.0  # monotonic time of the last change
    # Its settings, and the settings generation they were resolved in (see Session._settings)
    resolved: tuple[int, Settings] | None = None


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


def uri_to_path(uri: str) -> str | None:
    """The file-system path of a file: URI (notebook cells and untitled buffers have none)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /C:/x on Windows
        path = path[1:]
    return path


def untitled_path(uri: str, root: Path | None) -> str:
    """Where an untitled buffer's code pretends to live when verify runs it (in the workspace,
    so that its imports of workspace modules resolve); no file is written."""
    name = re.sub(r"\W", "_", unquote(urlparse(uri).path or uri)).strip("_") or "buffer"
    return str((root or Path(tempfile.gettempdir())) / f"_inplace_lsp_untitled_{name}.py")


class Session:
    def __init__(
        self,
        client: Client,
        features: Features,
        *,
        root: str | None = None,
        folders: Sequence[str] = (),
        scheduler: Scheduler | None = None,
    ) -> None:
        self.client = client
        self.features = features
        self.settings = SettingsStore()
        self.workspace = Workspace(root) if root is not None else Workspace()
        self.scheduler = scheduler or Scheduler(self._analysed)
        self.scheduler.workspace = self.workspace
        self.scheduler.analysis_factory = self._new_analysis  # (under each document's settings)
        self._documents: dict[str, _Document] = {}
        self._cell_owner: dict[str, str] = {}  # cell URI -> notebook URI
        self._views: dict[str, View] = {}
        self._published_version: dict[str, int | None] = {}
        self._other_lines: dict[str, list[str] | None] = {}
        # document key -> verified target -> its diagnostics (each target keeps its own)
        self._verified: dict[str, dict[str, _Verified]] = {}
        self._verify_generation = 0  # bumped when verify diagnostics change (pull result ids)
        self._verify_runs: set[threading.Event] = set()  # cancel events of runs in flight
        # The code lenses of the newest snapshot (written by the scheduler's worker threads).
        self._lenses: dict[str, tuple[Snapshot, tuple[LensTarget, ...]]] = {}
        # uri -> (version, size in bytes, limit) of a document above max_file_bytes
        self._too_large: dict[str, tuple[int | None, int, int]] = {}
        # The newest `inplace-lsp run` report, read from the workspace folders' .inplace-lsp/;
        # without folders (an editor in single-file mode), from the open files' project roots.
        self.workspace_folders = list(folders) or ([root] if root is not None else [])
        self._run = RunFindings()
        self._run_files: report.Signature | None = None  # the report files last read
        self._run_keys: dict[str, str] = {}  # open file URI -> its run_findings.file_key
        self._run_pushed: set[str] = set()  # URIs holding run diagnostics pushed apart
        self._run_generation = 0  # bumped when run diagnostics change (pull result ids)

    # ------------------------------------------------------------------ documents

    def open_document(self, uri: str, version: int | None, text: str) -> None:
        path = uri_to_path(uri)
        layout = Layout.single(uri, version)
        text = self._sized(uri, path, version, text)
        self._documents[uri] = _Document(uri, path, layout, text, version)
        self._published_version.pop(uri, None)  # a reopened document counts from 1 again
        self._report_project_problems(path)
        if path is not None:
            self._run_opened(uri, version, file_key(path), text)
            if not self.workspace_folders:
                self.poll_run_reports()  # a report of this file's project, not looked at yet
        self.scheduler.open(uri, path, version, text, attachment=layout)

    def change_document(
        self,
        uri: str,
        version: int | None,
        text: str,
        *,
        saved: bool,
        changes: Sequence[object] | None = None,
        lines: Sequence[str] | None = None,
    ) -> None:
        """A change (saved=False) or a save: analysed when the `run` setting says so.
        `changes` (the didChange's content changes) and `lines` (the new text's lines) spare
        the run findings a comparison of the whole text."""
        document = self._documents.get(uri)
        if document is not None:
            if not saved:  # first: the analysis of the new version may be published at once
                self._follow_run(uri, version, text, changes, lines)
                self._follow_verified(uri, version, text)
            self._submit(document, version, text, Layout.single(uri, version), saved=saved)

    def _sized(self, key: str, path: str | None, version: int | None, text: str) -> str:
        """The text to analyse: a document above max_file_bytes (a 20 MB one took 150 s and
        4 GB), a file or a notebook's program, is analysed as an empty text, so it has no
        findings, lenses or fixes, and one diagnostic says why (in a notebook's first cell);
        below the limit again, it is analysed as usual."""
        limit = self._settings(key, path).max_file_bytes
        # UTF-8 takes at most 4 bytes per character (a lone surrogate 3, with surrogatepass).
        size = len(text) if len(text) * 4 <= limit else len(text.encode("utf-8", "surrogatepass"))
        if size <= limit:
            self._too_large.pop(key, None)
            return text
        self._too_large[key] = (version, size, limit)
        return ""

    def _size_diagnostics(self, view: View, uri: str) -> list[types.Diagnostic]:
        """The "too large" note of the analysed version, in the file or the first cell."""
        oversized = self._too_large.get(view.snapshot.key)
        if oversized is None or oversized[0] != view.version or view.layout.cells[0].uri != uri:
            return []
        _, size, limit = oversized
        return [
            types.Diagnostic(
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                message=f"{too_large(size, limit, 'maxFileBytes')}: inplace-lsp skips it",
                severity=types.DiagnosticSeverity.Information,
                source=convert.SOURCE,
            )
        ]

    def _submit(
        self, document: _Document, version: int | None, text: str, layout: Layout, *, saved: bool
    ) -> None:
        settings = self._settings(document.key, document.path)
        text = self._sized(document.key, document.path, version, text)
        document.layout, document.text = layout, text
        if saved != (settings.run == "onSave"):
            return  # onSave: changes wait for the save; onType: the save changed nothing
        before, document.submitted = document.submitted, version
        if version is not None and before is not None and version < before:
            # The editor's version went backwards (a client bug or a reset): its text is
            # still the buffer, which the scheduler, keeping the highest version, would
            # drop. The document starts again from it.
            logger.warning("%s: version %s after %s", document.key, version, before)
            for cell in layout.cells:
                self._published_version.pop(cell.uri, None)
            self.scheduler.open(document.key, document.path, version, text, attachment=layout)
            return
        debounce_s = 0.0 if saved else settings.debounce_ms / 1000
        if not saved:
            now = time.monotonic()
            if now - document.changed_at < BURST_GAP_S:
                # Changes closer together than any typist's (a paste replayed as keystrokes,
                # a tool's edits): wait for the burst to end, so it costs one analysis of its
                # last version, not thousands of analyses and publishes.
                debounce_s = max(debounce_s, BURST_WAIT_S)
            document.changed_at = now
        self.scheduler.submit(document.key, version, text, debounce_s=debounce_s, attachment=layout)

    def close_document(self, uri: str) -> None:
        document = self._documents.pop(uri, None)
        self.scheduler.close(uri)
        self._too_large.pop(uri, None)
        self._views.pop(uri, None)
        self._lenses.pop(uri, None)
        verified = self._verified.pop(uri, None)
        if verified is not None:
            self._verify_generation += 1
            if self.features.verify_pushed:
                for shown in sorted({u for entry in verified.values() for u in entry.by_version}):
                    self.client.publish(shown, None, [])
        if document is not None and not self.features.pull:
            for published in document.published:
                self.client.publish(published, None, [])
        if document is not None:
            for published in document.published | {uri}:
                self._published_version.pop(published, None)
        key = self._run_keys.pop(uri, None)
        if key is not None:  # its run findings again as on disk, pushed as for closed files
            self._run_changed(self._run.closed(key).keys)

    # ------------------------------------------------------------------ notebooks

    def open_notebook(self, uri: str, version: int | None, cells: Cells) -> None:
        text, layout = notebook_program(cells)
        self._cell_owner.update((cell.uri, uri) for cell in layout.cells)
        path = uri_to_path(uri)
        text = self._sized(uri, path, version, text)
        self._documents[uri] = _Document(uri, path, layout, text, version)
        self._report_project_problems(path)
        self.scheduler.open(uri, path, version, text, attachment=layout)

    def change_notebook(
        self, uri: str, version: int | None, cells: Cells, *, saved: bool = False
    ) -> None:
        """Cells edited, added, removed or moved (saved=False), or the notebook saved."""
        document = self._documents.get(uri)
        if document is None:
            return
        text, layout = notebook_program(cells)
        kept = {cell.uri for cell in layout.cells}
        for cell in document.layout.cells:
            if cell.uri not in kept:
                self._cell_owner.pop(cell.uri, None)
        self._cell_owner.update((cell.uri, uri) for cell in layout.cells)
        if not saved:
            self._follow_verified_cells(uri, layout)
        self._submit(document, version, text, layout, saved=saved)

    def close_notebook(self, uri: str) -> None:
        document = self._documents.get(uri)
        if document is not None:
            for cell in document.layout.cells:
                self._cell_owner.pop(cell.uri, None)
        self.close_document(uri)

    def key_of(self, uri: str) -> str | None:
        """The analysed document a URI belongs to: itself, or the notebook of a cell."""
        if uri in self._documents:
            return uri
        return self._cell_owner.get(uri)

    # ------------------------------------------------------------------ results

    def current_view(self, key: str) -> View | None:
        """`view(key)` when it is of the text in the editor's buffer, else None: an edit
        computed from another text would land on the wrong characters."""
        view = self.view(key)
        document = self._documents.get(key)
        if view is None or document is None:
            return None
        snapshot = view.snapshot
        if snapshot.attachment != document.layout or snapshot.text != document.text:
            return None
        return view

    async def settled(self, uri: str) -> None:
        """Waits for the analysis of the newest version handed to the scheduler."""
        key = self.key_of(uri)
        if key is not None:
            await asyncio.wrap_future(self.scheduler.latest(key))

    def view(self, key: str) -> View | None:
        """The newest analysed version of a document, settings applied (cached)."""
        snapshot = self.scheduler.snapshot(key)
        document = self._documents.get(key)
        if snapshot is None or document is None:
            return None
        cached = self._views.get(key)
        if (
            cached is not None
            and cached.snapshot is snapshot
            and cached.settings_generation == self.settings.generation
        ):
            return cached
        layout = snapshot.attachment
        if not isinstance(layout, Layout):
            layout = Layout.single(key, snapshot.version)
        generation = self.settings.generation
        view = build_view(
            snapshot,
            layout,
            self._settings(key, document.path),
            generation,
            self.features.encoding,
            self._lines_of_file,
        )
        self._views[key] = view
        return view

    def _new_analysis(self, path: str | None, workspace: Workspace | None) -> DocumentAnalysis:
        """A document's analysis, under the function time limit its settings give."""
        limit = self.settings.for_path(path).settings.function_time_limit_s
        return new_analysis(path, workspace, limit)

    def _analysed(self, snapshot: Snapshot) -> None:
        """The scheduler's callback, in a worker thread: also finds the new version's code
        lenses here, off the event loop, for clients that show them."""
        if self.features.code_lens:
            lenses = _lens_targets(snapshot)
            self.client.call_soon(lambda: self._publish(snapshot, lenses, lensed=True))
        else:
            self.client.call_soon(lambda: self._publish(snapshot))

    def _publish(
        self,
        snapshot: Snapshot,
        lenses: tuple[LensTarget, ...] | None = None,
        *,
        lensed: bool = False,
    ) -> None:
        if self.scheduler.snapshot(snapshot.key) is not snapshot:
            return  # closed, reopened or overtaken meanwhile: a newer result follows
        if lensed:
            self._store_lenses(snapshot, lenses)
        if self.features.pull:
            if snapshot.refined and self.features.refresh:
                # The version's diagnostics changed once the files it imports were read.
                self.client.refresh_diagnostics()
            elif self._settings(snapshot.key, self._path(snapshot.key)).run == "onSave":
                self.client.refresh_diagnostics()  # the client pulls on changes, not saves
            return
        self._push(snapshot.key)

    def _settings(self, key: str, path: str | None) -> Settings:
        """An open document's settings, resolved once per settings generation (a keystroke
        asks for them several times); another path's, resolved now."""
        generation = self.settings.generation
        document = self._documents.get(key)
        resolved = document.resolved if document is not None else None
        if resolved is not None and resolved[0] == generation:
            return resolved[1]
        settings = self.settings.for_path(path).settings
        if document is not None and document.path == path:
            document.resolved = (generation, settings)
        return settings

    def _path(self, key: str) -> str | None:
        document = self._documents.get(key)
        return document.path if document is not None else None

    def _push(self, key: str) -> None:
        document = self._documents.get(key)
        view = self.view(key)
        if document is None or view is None:
            return
        uris: set[str] = set()
        for cell in view.layout.cells:
            last = self._published_version.get(cell.uri)
            if cell.version is not None and last is not None and cell.version < last:
                continue  # never an older version's diagnostics over a newer one's
            found = view.diagnostics_for(cell.uri)
            found += self._verify_diagnostics(cell.uri, cell.version)
            found += self._size_diagnostics(view, cell.uri)
            found += self._run_diagnostics(cell.uri)
            self.client.publish(cell.uri, cell.version, found)
            self._published_version[cell.uri] = cell.version
            uris.add(cell.uri)
        for gone in document.published - uris - {c.uri for c in view.layout.cells}:
            self.client.publish(gone, None, [])  # a cell deleted from the notebook
        document.published = uris | (document.published & {c.uri for c in view.layout.cells})

    async def pull(
        self, uri: str, previous_result_id: str | None
    ) -> types.DocumentDiagnosticReport:
        """textDocument/diagnostic: the diagnostics of the newest submitted version."""
        key = self.key_of(uri)
        if key is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        await asyncio.wrap_future(self.scheduler.latest(key))
        view = self.view(key)
        if view is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        result_id = f"{view.result_id}:{self._verify_generation}:{self._run_generation}"
        if previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        cell = view.layout.cell(uri)
        verified = []
        if cell is not None and not self.features.verify_pushed:
            verified = self._verify_diagnostics(uri, cell.version)
            verified += self._run_diagnostics(uri)
        sized = self._size_diagnostics(view, uri)
        return types.RelatedFullDocumentDiagnosticReport(
            items=view.diagnostics_for(uri) + verified + sized, result_id=result_id
        )

    def _lines_of_file(self, path: str) -> list[str] | None:
        """Lines of another file a related location points into (columns count in them)."""
        known = self.workspace.files().get(path)
        if known is not None:
            return known
        if path not in self._other_lines:
            try:
                self._other_lines[path] = split_lines(Path(path).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                self._other_lines[path] = None
        return self._other_lines[path]

    # ------------------------------------------------------------------ requests on the cache

    def _lines(self, view: View, uri: str) -> Sequence[str]:
        cell = view.layout.cell(uri)
        return view.lines_of(cell) if cell is not None else view.snapshot.lines

    def code_actions(
        self, uri: str, where: types.Range, only: Sequence[str] | None
    ) -> list[types.CodeAction]:
        key = self.key_of(uri)
        view = self.current_view(key) if key is not None else None
        if key is None or view is None:
            return []  # nothing analysed, or not the buffer's text (onSave before the save)
        span = convert.to_span(self._lines(view, uri), where, self.features.encoding)
        found = actions.code_actions(view, uri, span, only, self._client_edits())
        snapshot = view.snapshot
        if actions.wanted(verification.ACTION_KIND, only):
            targets, _ = _in_document(snapshot, uri, _lens_targets(snapshot) or ())
            verify = verification.code_action(uri, targets, where.start.line)
            if verify is not None:
                found.append(verify)
        return found

    def resolve_code_action(self, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        key = self.key_of(uri) if isinstance(uri, str) else None
        view = self.current_view(key) if key is not None else None
        if view is None:
            return action  # no edit: the buffer is not the text analysed
        # Against the newest analysed version: a finding that moved or went away since the
        # action was offered gets no edit (actions.find_item matches by code and range).
        return actions.resolve(view, action, self._client_edits())

    # ------------------------------------------------------------------ code lenses and verify

    def _store_lenses(self, snapshot: Snapshot, lenses: tuple[LensTarget, ...] | None) -> None:
        """Caches a version's lenses (None: it does not parse; the previous ones stay) and
        asks the client to fetch them again when they moved."""
        before = self._lenses.get(snapshot.key)
        if lenses is None:
            lenses = before[1] if before is not None else ()
        self._lenses[snapshot.key] = (snapshot, lenses)
        if before is not None and before[1] != lenses and self.features.code_lens_refresh:
            self.client.refresh_code_lenses()

    async def code_lenses(self, uri: str) -> list[types.CodeLens]:
        """A "Verify forward/backward" lens above each nn.Module subclass and each top-level
        function that calls backward(), in the newest analysed version of a file."""
        key = self.key_of(uri)
        if key is None:
            return []
        await asyncio.wrap_future(self.scheduler.latest(key))
        snapshot = self.scheduler.snapshot(key)
        if snapshot is None:
            return []
        cached = self._lenses.get(key)
        if cached is None or cached[0] is not snapshot:  # its callback has not run yet
            self._store_lenses(snapshot, await asyncio.to_thread(_lens_targets, snapshot))
            cached = self._lenses[key]
        targets, lines = _in_document(snapshot, uri, cached[1])
        encoding = self.features.encoding
        return [verification.code_lens(uri, t, lines, encoding) for t in targets]

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
        path = uri_to_path(uri)
        cell: tuple[Layout, Cell] | None = None
        owner = self._cell_owner.get(uri)
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
                path = untitled_path(uri, self.workspace.root)  # not written: runs the buffer
            if path is None or path.endswith(".ipynb"):
                return self._not_run("verify runs Python files, notebooks and untitled buffers")
            lines = split_lines(text)
            line = convert.to_point(lines, where, self.features.encoding)[0] if where else None
            parsed, findings = Parsed(text), await self._findings_of(uri, text)
        settings = self.settings.for_path(path).settings
        root = str(self.workspace.root) if self.workspace.root is not None else None
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
        self.client.show(summary, kind)
        if cell is None:
            self._verified_result(uri, version, path, split_lines(text), line, result, parsed)
        elif owner is not None:
            self._verified_notebook(owner, cell[0], path, text, line, result, parsed)
        return result

    async def _findings_of(self, uri: str, text: str) -> tuple[Finding, ...] | None:
        """The analysis's findings of `text` when it is the newest analysed version of the
        document `uri` (None: not analysed, so the runner analyses it)."""
        key = self.key_of(uri)
        if key is None:
            return None
        await asyncio.wrap_future(self.scheduler.latest(key))
        snapshot = self.scheduler.snapshot(key)
        return snapshot.findings if snapshot is not None and snapshot.text == text else None

    def _verified_notebook(
        self,
        notebook: str,
        layout: Layout,
        path: str,
        program: str,
        line: int | None,
        result: dict[str, Any],
        parsed: Parsed | None = None,
    ) -> None:
        """_verified_result for a notebook: the diagnostics land in the cells they point into,
        while the notebook is still as verified (`parsed`: the program, parsed)."""
        if result.get("status") not in ("ok", *verification.FAILED):
            return
        document = self._documents.get(notebook)
        if document is None or document.layout != layout:
            return  # a cell changed while it ran: the result is stale
        name = str(result.get("target") or "")
        here = "inplace-lsp-notebook:program"
        found = verification.diagnostics(
            result, path, here, split_lines(program), self.features.encoding, line
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
        self.client.show(f"inplace-lsp: {result['message']}", types.MessageType.Warning)
        return result

    async def _notebook_program(
        self, notebook: str, uri: str, where: types.Position | None
    ) -> tuple[str, Parsed, int | None, tuple[Layout, Cell]] | None:
        """(path, text parsed, program line, (layout, cell)) to verify a notebook cell's
        target: the program of the newest analysed version, reduced to its definitions, under
        a virtual path beside the notebook (its imports of local modules resolve)."""
        await asyncio.wrap_future(self.scheduler.latest(notebook))
        snapshot = self.scheduler.snapshot(notebook)
        layout = snapshot.attachment if snapshot is not None else None
        cell = layout.cell(uri) if isinstance(layout, Layout) else None
        if snapshot is None or not isinstance(layout, Layout) or cell is None:
            return None
        line = cell.first_line + where.line if where is not None else None
        real = uri_to_path(notebook)
        if real is None:
            path = untitled_path(notebook, self.workspace.root)
        else:
            stem = re.sub(r"\W", "_", Path(real).stem)
            path = str(Path(real).with_name(f"_inplace_lsp_notebook_{stem}.py"))
        program = verification.definitions(Parsed(snapshot.text))
        return path, program, line, (layout, cell)

    def _verified_result(
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
        if result.get("status") not in ("ok", *verification.FAILED):
            return
        document = self._documents.get(uri)
        if document is None or document.layout.is_notebook:
            return
        if document.layout.cells[0].version != version:
            return  # the text changed while it ran: the result is stale
        lenses = self._lenses.get(uri)
        target_line = next(
            (t.line for t in (lenses[1] if lenses else ()) if t.name == result.get("target")),
            line,
        )
        found = verification.diagnostics(
            result, path, uri, lines, self.features.encoding, target_line
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
        self._verify_generation += 1
        document = self._documents.get(key)
        if self.features.verify_pushed:
            for uri in sorted(uris):
                cell = document.layout.cell(uri) if document is not None else None
                version = cell.version if cell is not None else None
                self.client.publish(uri, version, self._pushed_apart(uri, version))
        elif self.features.pull:
            if self.features.refresh and not edited:
                self.client.refresh_diagnostics()
        elif self.scheduler.snapshot(key) is not None:
            self._push(key)  # now, not after the analysis (which may wait for a save)

    def _follow_verified(self, uri: str, version: int | None, text: str) -> None:
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
        if self.features.verify_pushed and (dropped or moved):
            self._verify_generation += 1
            self.client.publish(uri, version, self._pushed_apart(uri, version))
        elif dropped:
            self._verified_changed(uri, {uri}, edited=True)
        # Moved only: a pushing client gets them with the new version's analysis.

    def _follow_verified_cells(self, notebook: str, layout: Layout) -> None:
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

    def _verify_diagnostics(self, uri: str, version: int | None) -> list[types.Diagnostic]:
        """Every verified target's diagnostics in document `uri` at `version`."""
        key = self.key_of(uri) or uri
        found: list[types.Diagnostic] = []
        for entry in self._verified.get(key, {}).values():
            found += entry.diagnostics(uri, version)
        return found

    def _pushed_apart(self, uri: str, version: int | None) -> list[types.Diagnostic]:
        """What a client that pulls the analysis gets pushed (`Features.verify_pushed`): the
        verify results and the run findings, in one list (a publish replaces the last)."""
        ran = self._run_diagnostics(uri)
        if ran:
            self._run_pushed.add(uri)  # cleared when the file closes, if none are left then
        return self._verify_diagnostics(uri, version) + ran

    # ------------------------------------------------------------------ run reports

    @property
    def report_folders(self) -> list[str]:
        """Where `inplace-lsp run` reports are looked for (in `.inplace-lsp/`): the workspace
        folders, else the project root of each open file (see report.project_root)."""
        if self.workspace_folders:
            return self.workspace_folders
        folders = {
            os.path.dirname(os.path.abspath(d.path)) for d in self._documents.values() if d.path
        }
        return sorted({report.project_root(folder) for folder in folders})

    @property
    def run_poll_s(self) -> float:
        """How often the report files are looked at: often when the client watches no files
        for the server (or has no folders to watch them in), seldom when its watcher should
        have told already."""
        if self.features.watch_files and self.workspace_folders:
            return WATCHED_POLL_S
        return POLL_S

    def load_run_reports(self) -> None:
        """Reads the newest run's report (at start, and when a report file changed); its
        findings replace the last run's. A report being written keeps what is shown."""
        folders = self.report_folders
        self._run_files = report.signature(folders)
        try:
            run = report.newest_run(folders, self._run_files)
            if run is not None:  # None: the newest file is not readable (yet)
                self._run_changed(self._run.replace(run))
        except Exception:  # a report must never take the server down
            logger.exception("reading the run reports failed")

    def poll_run_reports(self) -> None:
        """Every `run_poll_s`: reads the reports again when a file's mtime or size changed (a
        directory listing per folder otherwise)."""
        if report.signature(self.report_folders) != self._run_files:
            self.load_run_reports()

    def _run_diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The run findings in an open file."""
        key = self._run_keys.get(uri)
        if key is None:
            return []
        return self._run.diagnostics(key, self.features.encoding)

    def _run_changed(self, keys: set[str] | frozenset[str]) -> None:
        """The client hears that the run diagnostics of these files changed: a file that is
        not open gets them pushed on their own; an open one as its analysis's go (pushed
        with them, a refresh to pull, or pushed apart)."""
        if not keys:
            return
        self._run_generation += 1
        refresh = False
        for key in sorted(keys):
            uri = self._run.uri(key)
            document = self._documents.get(uri)
            if document is None or self._run_keys.get(uri) != key:
                found = self._run.diagnostics(key, self.features.encoding)
                if found or uri in self._run_pushed:
                    self.client.publish(uri, None, found)
                (self._run_pushed.add if found else self._run_pushed.discard)(uri)
            elif self.features.verify_pushed:
                version = document.layout.cells[0].version
                self.client.publish(uri, version, self._pushed_apart(uri, version))
            elif self.features.pull:
                refresh = True
            elif self.scheduler.snapshot(uri) is not None:
                self._push(uri)
        if refresh and self.features.refresh:
            self.client.refresh_diagnostics()

    def _run_opened(self, uri: str, version: int | None, key: str, text: str) -> None:
        """A file opened: its run findings follow the buffer from now on, and go out with
        its analysis (a client that pulls has the copy pushed while it was closed removed)."""
        self._run_keys[uri] = key
        before = self._run.uri(key)  # the path's URI, which the editor may spell otherwise
        changed = self._run.opened(key, uri, text)
        for pushed in sorted({before, uri} & self._run_pushed):
            if pushed == uri and self.features.verify_pushed:
                continue  # still pushed apart, now from the buffer's lines
            self._run_pushed.discard(pushed)
            if pushed != uri or self.features.pull:  # a push of the analysis replaces it
                self.client.publish(pushed, None, [])
        if key in changed.keys and self.features.verify_pushed:
            self.client.publish(uri, version, self._pushed_apart(uri, version))
        self._run_changed(changed.keys - {key})  # related lines in other files moved

    def _follow_run(
        self,
        uri: str,
        version: int | None,
        text: str,
        changes: Sequence[object] | None,
        lines: Sequence[str] | None,
    ) -> None:
        """A file changed: its run findings move with their lines, and go when a line changed.
        Moved only, a pushing client gets them with the new version's analysis, and a
        pulling one pulls after the edit anyway."""
        key = self._run_keys.get(uri)
        if key is None:
            return
        changed = self._run.edited(key, text, lines, changes)
        if not changed.keys:
            return
        self._run_generation += 1
        if key in changed.keys:
            if self.features.verify_pushed:
                self.client.publish(uri, version, self._pushed_apart(uri, version))
            elif key in changed.dropped and not self.features.pull:
                if self.scheduler.snapshot(uri) is not None:
                    self._push(uri)  # now, not after the analysis (which may wait for a save)
        self._run_changed(changed.keys - {key})

    def _client_edits(self) -> actions.ClientEdits:
        return actions.ClientEdits(self.features.lazy_edits, self.features.document_changes)

    def hover(self, uri: str, where: types.Position) -> types.Hover | None:
        key = self.key_of(uri)
        # Only of the buffer's text: with run = "onSave" and unsaved edits, the findings are of
        # the saved text, whose lines and columns the cursor's no longer are.
        view = self.current_view(key) if key is not None else None
        if view is None:
            return None
        line, col = convert.to_point(self._lines(view, uri), where, self.features.encoding)
        return hover.hover(view, uri, line, col, self.features.markdown)

    # ------------------------------------------------------------------ settings and files

    def set_editor_settings(self, raw: object) -> None:
        """New editor settings (initialization options, a pull or a push); problems are shown
        and the offending settings keep their defaults."""
        for problem in self.settings.set_editor(raw):
            self.client.show(f"inplace-lsp: {problem}", types.MessageType.Warning)
        self.settings_changed()

    def settings_changed(self) -> None:
        """Diagnostics under the new settings: re-filtered, not re-analysed."""
        self._views.clear()
        if self.features.pull:
            if self.features.refresh and self._documents:
                self.client.refresh_diagnostics()
            return
        for key in list(self._documents):
            if self.scheduler.snapshot(key) is not None:
                self._push(key)

    def files_changed(self, uris: Sequence[str]) -> None:
        """workspace/didChangeWatchedFiles: a pyproject.toml reloads the settings; a Python
        file that an open document imports from gets those documents re-analysed."""
        paths = [p for p in (uri_to_path(u) for u in uris) if p is not None]
        if any(report.is_report(p) or Path(p).name == report.DIRECTORY for p in paths):
            self.load_run_reports()
        if any(Path(p).name == report.DIRECTORY for p in paths):
            # A new .inplace-lsp folder: a watcher may report the folder and miss the report
            # written into it at once (VS Code's does), so look again shortly.
            with contextlib.suppress(RuntimeError):  # no event loop (a direct call in a test)
                loop = asyncio.get_running_loop()
                for delay in RECHECK_S:
                    loop.call_later(delay, self.poll_run_reports)
        if any(Path(p).name == "pyproject.toml" for p in paths):
            self.settings.pyproject_changed()
            for document in self._documents.values():
                self._report_project_problems(document.path)
            self.settings_changed()
        generation = self.workspace.generation
        for path in paths:
            if path.endswith(".py"):
                self._other_lines.pop(path, None)
                self.workspace.file_changed(path)
                self._run_changed(self._run.disk_changed(file_key(path)).keys)
        if self.workspace.generation != generation:
            for key in list(self._documents):
                self.scheduler.reanalyse(key)

    def _report_project_problems(self, path: str | None) -> None:
        for problem in self.settings.new_problems(path):
            self.client.show(f"inplace-lsp: {problem}", types.MessageType.Warning)

    def effective_settings(self, uri: str | None) -> Effective:
        key = self.key_of(uri) if uri else None
        path = self._path(key) if key else (uri_to_path(uri) if uri else None)
        if path is None and uri is None and self.workspace.root is not None:
            path = str(self.workspace.root / "__inplace_lsp__.py")
        return self.settings.for_path(path)

    def debug_info(self, uri: str | None) -> dict[str, Any]:
        info = debug_info(
            self.effective_settings(uri),
            document=uri,
            position_encoding=self.features.encoding,
            pull_diagnostics=self.features.pull,
            open_documents=len(self._documents),
            analyses_run=self.scheduler.analyses,
        )
        run = self._run.run
        info["runReport"] = {"files": list(run.files), "runId": run.run_id}
        return info

    def shutdown(self) -> None:
        """Stops the analyses, cancels verify runs in flight, stops the warm verify workers."""
        self.scheduler.shutdown()
        for cancel in list(self._verify_runs):
            cancel.set()
        runner.shutdown_workers()


def _lens_targets(snapshot: Snapshot) -> tuple[LensTarget, ...] | None:
    """The verify targets of an analysed file or notebook (lines of the program: the joined
    cells); None if it does not parse."""
    if snapshot.targets is None:
        return None
    return verification.from_result(snapshot.targets)


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


def _in_document(
    snapshot: Snapshot, uri: str, targets: Sequence[LensTarget]
) -> tuple[list[LensTarget], Sequence[str]]:
    """The targets that start in the document `uri` (a file, or one cell of a notebook), in
    its own lines, and those lines."""
    layout = snapshot.attachment
    if not isinstance(layout, Layout) or not layout.is_notebook:
        return list(targets), snapshot.lines
    cell = layout.cell(uri)
    if cell is None:
        return [], []
    shift = cell.first_line - 1
    inside = [
        replace(t, line=t.line - shift, end_line=min(t.end_line, shift + cell.line_count) - shift)
        for t in targets
        if cell.holds(t.line)
    ]
    return inside, layout.lines_of(cell, snapshot.lines)


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
