"""One editor session: open documents and notebooks, when each is analysed, which diagnostics
reach the client (pushed or pulled, never an older version over a newer one), and the requests
that read the cached results (code actions, hover, code lenses, debug info), and verify runs
(the user's code, only on request, in a worker thread) whose diagnostics join the analysis's,
as do the findings of the newest `inplace-lsp run` report in the workspace folders.

`Session` holds the documents and what goes out for them, and is what `server.py` calls; each
feature is an object of its own that it holds, with the feature's state, in a module of its
own: `verifying.Verifying` (verify runs and their diagnostics), `run_diagnostics.RunDiagnostics`
(the run findings) and `lenses.Lenses` (code lenses). They see the session through
`publisher.Publisher` and do not import this module.

It knows LSP types but not pygls: `server.py` hands it texts and a `Client` to talk through.
Every method runs on the event loop thread except the scheduler's callback, which finds the
code lenses of the new version and posts back to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.lines import read_python, split_lines
from inplace_lsp.analysis.workspace import Workspace
from inplace_lsp.config import MAX_FILE_BYTES, Settings, too_large
from inplace_lsp.lsp import actions, convert, hover, verification
from inplace_lsp.lsp.diagnostics import View, build_view
from inplace_lsp.lsp.lenses import Lenses, in_document, lens_targets
from inplace_lsp.lsp.publisher import Cells, Client, Document, Features
from inplace_lsp.lsp.run_diagnostics import POLL_S, REPORT_GLOBS, WATCHED_POLL_S, RunDiagnostics
from inplace_lsp.lsp.scheduler import Scheduler, Snapshot, new_analysis
from inplace_lsp.lsp.settings import Effective, SettingsStore, debug_info
from inplace_lsp.lsp.uris import untitled_path, uri_to_path
from inplace_lsp.lsp.verification import LensTarget
from inplace_lsp.lsp.verifying import Verifying
from inplace_lsp.notebook import Layout, notebook_program

# What the server and the tests import from here (the report globs and poll intervals are
# defined in run_diagnostics.py, the URI helpers in uris.py).
__all__ = [
    "POLL_S",
    "REPORT_GLOBS",
    "WATCHED_POLL_S",
    "Cells",
    "Client",
    "Features",
    "Session",
    "untitled_path",
    "uri_to_path",
]

logger = logging.getLogger(__name__)

# A change within BURST_GAP_S of the one before is part of a burst; its analysis waits
# BURST_WAIT_S for the next change (a held key repeats every ~30 ms; people type slower).
BURST_GAP_S = 0.03
BURST_WAIT_S = 0.05


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
        self._documents: dict[str, Document] = {}
        self._cell_owner: dict[str, str] = {}  # cell URI -> notebook URI
        self._views: dict[str, View] = {}
        self._published_version: dict[str, int | None] = {}
        self._other_lines: dict[str, list[str] | None] = {}
        # uri -> (version, size in bytes, limit) of a document above max_file_bytes
        self._too_large: dict[str, tuple[int | None, int, int]] = {}
        # The features, each with its state: they reach the documents through the session,
        # as a publisher.Publisher (the interface they see of it).
        self.lenses = Lenses(self)
        self.verifying = Verifying(self, self.lenses)
        self.runs = RunDiagnostics(self, list(folders) or ([root] if root is not None else []))

    # ------------------------------------------------------------------ documents

    def open_document(self, uri: str, version: int | None, text: str) -> None:
        path = uri_to_path(uri)
        layout = Layout.single(uri, version)
        text = self._sized(uri, path, version, text)
        self._documents[uri] = Document(uri, path, layout, text, version)
        self._published_version.pop(uri, None)  # a reopened document counts from 1 again
        self._report_project_problems(path)
        if path is not None:
            self.runs.opened(uri, version, path, text)
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
                self.runs.follow(uri, version, text, changes, lines)
                self.verifying.follow_verified(uri, version, text)
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
        self, document: Document, version: int | None, text: str, layout: Layout, *, saved: bool
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
        self.lenses.closed(uri)
        self.verifying.closed(uri)
        if document is not None and not self.features.pull:
            for published in document.published:
                self.client.publish(published, None, [])
        if document is not None:
            for published in document.published | {uri}:
                self._published_version.pop(published, None)
        self.runs.closed(uri)

    # ------------------------------------------------------------------ notebooks

    def open_notebook(self, uri: str, version: int | None, cells: Cells) -> None:
        text, layout = notebook_program(cells)
        self._cell_owner.update((cell.uri, uri) for cell in layout.cells)
        path = uri_to_path(uri)
        text = self._sized(uri, path, version, text)
        self._documents[uri] = Document(uri, path, layout, text, version)
        self._report_project_problems(path)
        self.scheduler.open(uri, path, version, text, attachment=layout)
        self.runs.notebook(uri, path, cells)

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
            self.verifying.follow_verified_cells(uri, layout)
        self._submit(document, version, text, layout, saved=saved)
        if not saved:
            self.runs.notebook(uri, document.path, cells)

    def close_notebook(self, uri: str) -> None:
        self.runs.notebook_closed(uri)
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

    def document(self, key: str) -> Document | None:
        return self._documents.get(key)

    def documents(self) -> Iterable[Document]:
        return self._documents.values()

    def notebook_of(self, uri: str) -> str | None:
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
            lenses = lens_targets(snapshot)
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
            self.lenses.store(snapshot, lenses)
        if self.features.pull:
            if snapshot.refined and self.features.refresh:
                # The version's diagnostics changed once the files it imports were read.
                self.client.refresh_diagnostics()
            elif self._settings(snapshot.key, self._path(snapshot.key)).run == "onSave":
                self.client.refresh_diagnostics()  # the client pulls on changes, not saves
            return
        self.push(snapshot.key)

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

    def push(self, key: str) -> None:
        document = self._documents.get(key)
        view = self.view(key)
        if document is None or view is None:
            return
        uris: set[str] = set()
        for cell in view.layout.cells:
            last = self._published_version.get(cell.uri)
            if cell.version is not None and last is not None and cell.version < last:
                continue  # never an older version's diagnostics over a newer one's
            found = verification.folded(
                view.diagnostics_for(cell.uri), self.verifying.diagnostics(cell.uri, cell.version)
            )
            found += self._size_diagnostics(view, cell.uri)
            found += self.runs.diagnostics(cell.uri)
            self.client.publish(cell.uri, cell.version, found)
            self._published_version[cell.uri] = cell.version
            uris.add(cell.uri)
        for gone in document.published - uris - {c.uri for c in view.layout.cells}:
            self.client.publish(gone, None, [])  # a cell deleted from the notebook
        document.published = uris | (document.published & {c.uri for c in view.layout.cells})

    def push_apart(self, uri: str, version: int | None) -> None:
        """Publishes what a client that pulls the analysis gets pushed (`Features.
        verify_pushed`): the verify results and the run findings, in one list (a publish
        replaces the last)."""
        ran = self.runs.pushed_apart(uri)
        self.client.publish(uri, version, self.verifying.diagnostics(uri, version) + ran)

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
        result_id = f"{view.result_id}:{self.verifying.generation}:{self.runs.generation}"
        if previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        cell = view.layout.cell(uri)
        found = view.diagnostics_for(uri)
        if cell is not None and not self.features.verify_pushed:
            found = verification.folded(found, self.verifying.diagnostics(uri, cell.version))
            found += self.runs.diagnostics(uri)
        found += self._size_diagnostics(view, uri)
        return types.RelatedFullDocumentDiagnosticReport(items=found, result_id=result_id)

    def _lines_of_file(self, path: str) -> list[str] | None:
        """Lines of another file a related location points into (columns count in them)."""
        known = self.workspace.files().get(path)
        if known is not None:
            return known
        if path not in self._other_lines:
            try:
                self._other_lines[path] = split_lines(read_python(path, MAX_FILE_BYTES))
            except (OSError, UnicodeDecodeError, SyntaxError):
                self._other_lines[path] = None
        return self._other_lines[path]

    # ------------------------------------------------------------------ requests on the cache

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
        cell = view.layout.cell(uri)
        ran = self.runs.diagnostics(uri)
        if cell is not None:
            ran += self.verifying.diagnostics(uri, cell.version)
        # on the lines asked about: the analysis's fix on such a line is offered for them too
        beside = [
            d
            for d in ran
            if d.range.start.line <= where.end.line and where.start.line <= d.range.end.line
        ]
        found = actions.code_actions(view, uri, span, only, self._client_edits(), beside)
        snapshot = view.snapshot
        if actions.wanted(verification.ACTION_KIND, only):
            targets, _ = in_document(snapshot, uri, lens_targets(snapshot) or ())
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

    async def code_lenses(self, uri: str) -> list[types.CodeLens]:
        """textDocument/codeLens (see Lenses.code_lenses)."""
        return await self.lenses.code_lenses(uri)

    async def verify(
        self,
        uri: str,
        version: int | None,
        text: str,
        where: types.Position | None,
        progress: verification.Progress,
    ) -> dict[str, Any]:
        """The verify command (see Verifying.verify)."""
        return await self.verifying.verify(uri, version, text, where, progress)

    # ------------------------------------------------------------------ run reports

    @property
    def run_poll_s(self) -> float:
        """How often the server polls the report files (see RunDiagnostics.poll_s)."""
        return self.runs.poll_s

    def load_run_reports(self) -> None:
        """Reads the newest run's report (see RunDiagnostics.load)."""
        self.runs.load()

    def poll_run_reports(self) -> None:
        """Reads the reports again if they changed (see RunDiagnostics.poll)."""
        self.runs.poll()

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
                self.push(key)

    def files_changed(self, uris: Sequence[str]) -> None:
        """workspace/didChangeWatchedFiles: a pyproject.toml reloads the settings; a Python
        file that an open document imports from gets those documents re-analysed; a report of
        `inplace-lsp run` is read (RunDiagnostics.files_changed)."""
        paths = [p for p in (uri_to_path(u) for u in uris) if p is not None]
        self.runs.files_changed(paths)
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
                self.runs.disk_changed(path)
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
        info["runReport"] = self.runs.info()
        info["memory"] = _memory()
        return info

    def shutdown(self) -> None:
        """Stops the analyses, cancels verify runs in flight, stops the warm verify workers."""
        self.scheduler.shutdown()
        self.verifying.shutdown()


def _memory() -> dict[str, Any]:
    """The server's memory, for the debug info: resident MB (Linux), the objects the garbage
    collector tracks and those frozen out of its sight at start (a number that must not grow:
    a frozen object is never collected)."""
    rss_mb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/self/statm", encoding="ascii") as statm:
            rss_mb = round(int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    return {
        "rssMb": rss_mb,
        "trackedObjects": len(gc.get_objects()),
        "frozenObjects": gc.get_freeze_count(),
    }
