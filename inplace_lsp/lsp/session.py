"""One editor session: open documents and notebooks, when each is analysed, which diagnostics
reach the client (pushed or pulled, never an older version over a newer one), and the requests
that read the cached results (code actions, hover, debug info).

It knows LSP types but not pygls: `server.py` hands it texts and a `Client` to talk through.
Every method runs on the event loop thread except the scheduler's callback, which only posts
back to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from lsprotocol import types

from inplace_lsp.analysis.workspace import Workspace
from inplace_lsp.lsp import actions, convert, hover
from inplace_lsp.lsp.diagnostics import View, build_view
from inplace_lsp.lsp.layout import Layout, notebook_program
from inplace_lsp.lsp.scheduler import Scheduler, Snapshot
from inplace_lsp.lsp.settings import Effective, SettingsStore, debug_info

logger = logging.getLogger(__name__)

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
        )


@dataclass
class _Document:
    key: str  # the file's URI, or the notebook's
    path: str | None
    layout: Layout  # of the newest submitted version
    published: set[str] = field(default_factory=set)  # URIs holding pushed diagnostics


def uri_to_path(uri: str) -> str | None:
    """The file-system path of a file: URI (notebook cells and untitled buffers have none)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /C:/x on Windows
        path = path[1:]
    return path


class Session:
    def __init__(
        self,
        client: Client,
        features: Features,
        *,
        root: str | None = None,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.client = client
        self.features = features
        self.settings = SettingsStore()
        self.workspace = Workspace(root) if root is not None else Workspace()
        self.scheduler = scheduler or Scheduler(self._analysed, workspace=self.workspace)
        self.scheduler.workspace = self.workspace
        self._documents: dict[str, _Document] = {}
        self._cell_owner: dict[str, str] = {}  # cell URI -> notebook URI
        self._views: dict[str, View] = {}
        self._published_version: dict[str, int | None] = {}
        self._other_lines: dict[str, list[str] | None] = {}

    # ------------------------------------------------------------------ documents

    def open_document(self, uri: str, version: int | None, text: str) -> None:
        path = uri_to_path(uri)
        layout = Layout.single(uri, version)
        self._documents[uri] = _Document(uri, path, layout)
        self._published_version.pop(uri, None)  # a reopened document counts from 1 again
        self._report_project_problems(path)
        self.scheduler.open(uri, path, version, text, attachment=layout)

    def change_document(self, uri: str, version: int | None, text: str, *, saved: bool) -> None:
        """A change (saved=False) or a save: analysed when the `run` setting says so."""
        document = self._documents.get(uri)
        if document is not None:
            self._submit(document, version, text, Layout.single(uri, version), saved=saved)

    def _submit(
        self, document: _Document, version: int | None, text: str, layout: Layout, *, saved: bool
    ) -> None:
        document.layout = layout
        settings = self.settings.for_path(document.path).settings
        if saved != (settings.run == "onSave"):
            return  # onSave: changes wait for the save; onType: the save changed nothing
        self.scheduler.submit(
            document.key,
            version,
            text,
            debounce_s=0.0 if saved else settings.debounce_ms / 1000,
            attachment=layout,
        )

    def close_document(self, uri: str) -> None:
        document = self._documents.pop(uri, None)
        self.scheduler.close(uri)
        self._views.pop(uri, None)
        if document is not None and not self.features.pull:
            for published in document.published:
                self.client.publish(published, None, [])
        if document is not None:
            for published in document.published | {uri}:
                self._published_version.pop(published, None)

    # ------------------------------------------------------------------ notebooks

    def open_notebook(self, uri: str, version: int | None, cells: Cells) -> None:
        text, layout = notebook_program(cells)
        self._cell_owner.update((cell.uri, uri) for cell in layout.cells)
        path = uri_to_path(uri)
        self._documents[uri] = _Document(uri, path, layout)
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
            self.settings.for_path(document.path).settings,
            generation,
            self.features.encoding,
            self._lines_of_file,
        )
        self._views[key] = view
        return view

    def _analysed(self, snapshot: Snapshot) -> None:
        """The scheduler's callback, in a worker thread."""
        self.client.call_soon(lambda: self._publish(snapshot))

    def _publish(self, snapshot: Snapshot) -> None:
        if self.scheduler.snapshot(snapshot.key) is not snapshot:
            return  # closed, reopened or overtaken meanwhile: a newer result follows
        if self.features.pull:
            if self.settings.for_path(self._path(snapshot.key)).settings.run == "onSave":
                self.client.refresh_diagnostics()  # the client pulls on changes, not saves
            return
        self._push(snapshot.key)

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
            self.client.publish(cell.uri, cell.version, view.diagnostics_for(cell.uri))
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
        result_id = view.result_id
        if previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=view.diagnostics_for(uri), result_id=result_id
        )

    def _lines_of_file(self, path: str) -> list[str] | None:
        """Lines of another file a related location points into (columns count in them)."""
        known = self.workspace.files().get(path)
        if known is not None:
            return known
        if path not in self._other_lines:
            try:
                self._other_lines[path] = convert.split_lines(
                    Path(path).read_text(encoding="utf-8")
                )
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
        view = self.view(key) if key is not None else None
        if view is None:
            return []
        span = convert.to_span(self._lines(view, uri), where, self.features.encoding)
        return actions.code_actions(view, uri, span, only, self._client_edits())

    def resolve_code_action(self, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        key = self.key_of(uri) if isinstance(uri, str) else None
        view = self.view(key) if key is not None else None
        if view is None:
            return action
        # Against the newest analysed version: a finding that moved or went away since the
        # action was offered gets no edit (actions.find_item matches by code and range).
        return actions.resolve(view, action, self._client_edits())

    def _client_edits(self) -> actions.ClientEdits:
        return actions.ClientEdits(self.features.lazy_edits, self.features.document_changes)

    def hover(self, uri: str, where: types.Position) -> types.Hover | None:
        key = self.key_of(uri)
        view = self.view(key) if key is not None else None
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
        return debug_info(
            self.effective_settings(uri),
            document=uri,
            position_encoding=self.features.encoding,
            pull_diagnostics=self.features.pull,
            open_documents=len(self._documents),
            analyses_run=self.scheduler.analyses,
        )

    def shutdown(self) -> None:
        self.scheduler.shutdown()
