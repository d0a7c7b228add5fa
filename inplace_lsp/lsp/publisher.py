"""What the session's features (verify runs, run findings, code lenses) know of the session:
the client they talk to, what it supports, the open documents and how their diagnostics go out
(`Publisher`). `session.Session` is the one publisher; the features take it through this
interface and never import the session, which holds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lsprotocol import types

from inplace_lsp.analysis.workspace import Workspace
from inplace_lsp.config import Settings
from inplace_lsp.lsp import convert
from inplace_lsp.lsp.scheduler import Scheduler
from inplace_lsp.lsp.settings import SettingsStore
from inplace_lsp.notebook import Layout

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
class Document:
    """An open file or notebook, as the session holds it."""

    key: str  # the file's URI, or the notebook's
    path: str | None
    layout: Layout  # of the editor's buffer (the newest version received)
    text: str = ""  # the buffer's program (a notebook: its code cells joined)
    submitted: int | None = None  # the version last handed to the scheduler
    published: set[str] = field(default_factory=set)  # URIs holding pushed diagnostics
    changed_at: float = 0.0  # monotonic time of the last change
    # Its settings, and the settings generation they were resolved in (see Session._settings)
    resolved: tuple[int, Settings] | None = None


class Publisher(Protocol):
    """The session as its features see it."""

    client: Client
    features: Features
    scheduler: Scheduler
    settings: SettingsStore
    workspace: Workspace

    def key_of(self, uri: str) -> str | None:
        """The analysed document a URI belongs to: itself, or the notebook of a cell."""

    def document(self, key: str) -> Document | None:
        """The open document (a file's or a notebook's URI)."""

    def documents(self) -> Iterable[Document]:
        """Every open document."""

    def notebook_of(self, uri: str) -> str | None:
        """The notebook a cell URI belongs to (None: not an open notebook's cell)."""

    def push(self, key: str) -> None:
        """Publishes the document's diagnostics now: the analysis's with the features'."""

    def push_apart(self, uri: str, version: int | None) -> None:
        """Publishes what a client that pulls the analysis gets pushed (`Features.
        verify_pushed`): the verify results and the run findings, in one list."""
