"""The language server: wires LSP messages to the session (the only module importing pygls).

Each handler fetches what the message names, calls one session method and returns or sends
the result. `InplaceProtocol` adds what pygls does not do: the position encoding follows
LSP 3.17's "the server picks from the client's list" with UTF-8 preferred; a request whose
params do not match its method's schema gets an InvalidParams error response, and a request
after `shutdown` an InvalidRequest one (pygls would drop both, leaving the client waiting);
invalid JSON gets ParseError, a message that is no JSON-RPC 2.0 message InvalidRequest where
it has an id (a log line otherwise), a request before `initialize` ServerNotInitialized, a
second `initialize` InvalidRequest. The transport is ours too (`framing`): pygls's reader went
deaf after one malformed frame.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import re
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, BinaryIO
from urllib.parse import unquote

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import (
    FeatureNotificationError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from inplace_lsp import __version__
from inplace_lsp.analysis.engine import COLLECTOR, DocumentAnalysis
from inplace_lsp.analysis.lines import lines_with_ends, read_python
from inplace_lsp.config import MAX_FILE_BYTES
from inplace_lsp.lsp import actions, convert, verification
from inplace_lsp.lsp.framing import FrameReader, Skipped
from inplace_lsp.lsp.session import REPORT_GLOBS, Cells, Features, Session, uri_to_path
from inplace_lsp.lsp.settings import SECTION, format_debug_info
from inplace_lsp.verify import runner

logger = logging.getLogger(__name__)

NAME = "inplace-lsp"
DEBUG_INFO_COMMAND = "inplace-lsp.showDebugInfo"
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook"
        )
    ],
    save=True,
)
WATCHED = ("**/pyproject.toml", "**/*.py", *REPORT_GLOBS)
SYNC_KIND = types.TextDocumentSyncKind.Incremental
SAID_ONCE_LIMIT = 4096  # documents whose malformed notifications were logged, kept at most


class _NoDeserializeTraceback(logging.Filter):
    """pygls logs a traceback for every message whose params do not fit their type; the
    protocol below answers or logs each one itself (a fuzzed editor's 3,000 bad ranges wrote
    1,447 tracebacks to stderr)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


logging.getLogger("pygls.protocol.json_rpc").addFilter(_NoDeserializeTraceback())


def _why(exc: BaseException) -> str:
    """What does not fit in a message, where (`... @ $.params.range.start`), in one line."""
    if isinstance(exc, cattrs.errors.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc, path="$"))
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class ServerDocument(TextDocument):
    """pygls's text document with lines broken as LSP breaks them (pygls splits with
    str.splitlines, which also breaks at a form feed or U+2028: later edits would land on
    the wrong line), kept with the text they were split from, so an edit splits none; an
    incremental change rebuilds only the lines its range touches (pygls rewrote the whole
    text line by line on each keystroke)."""

    _kept: tuple[str, tuple[str, ...]] | None = None  # (source, its lines with their ends)

    @property
    def lines(self) -> tuple[str, ...]:
        kept = self._kept
        source = self.source  # read from disk when the client sent no text
        if kept is not None and kept[0] is source:
            return kept[1]
        lines = tuple(lines_with_ends(source))
        self._kept = (source, lines)
        return lines

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        lines = self.lines
        place = self.position_codec.range_from_client_units(lines, change.range)
        first, last = place.start.line, place.end.line
        if first >= len(lines):  # at the very end of the document
            self._source = self.source + change.text
            return
        last = min(last, len(lines) - 1)
        head = lines[first][: place.start.character]
        tail = lines[last][place.end.character :] if place.end.line <= last else ""
        joined = head + change.text + tail
        middle = lines_with_ends(joined)
        after = lines[last + 1 :]
        if (middle and middle[-1].endswith("\r") and after and after[0].startswith("\n")) or (
            first > 0 and lines[first - 1].endswith("\r") and joined.startswith("\n")
        ):
            # A \r and a \n that now meet are one line break: split the whole text again.
            self._source = "".join((*lines[:first], *middle, *after))
            return
        new = (*lines[:first], *middle, *after)
        source = "".join(new)
        self._source = source
        self._kept = (source, new)


class ServerWorkspace(Workspace):
    """pygls's workspace with the server's documents and its faster position codec."""

    def __init__(
        self,
        root_uri: str | None,
        sync_kind: types.TextDocumentSyncKind,
        workspace_folders: Sequence[types.WorkspaceFolder],
        position_encoding: types.PositionEncodingKind | str | None,
    ) -> None:
        super().__init__(root_uri, sync_kind, workspace_folders, position_encoding)
        self._sync = sync_kind
        self._codec = _FastCodec(encoding=position_encoding)

    @property
    def position_codec(self) -> PositionCodec:
        return self._codec

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return ServerDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync,
            position_codec=self._codec,
        )


@attrs.define
class _MalformedRequest:
    """A request whose params did not fit its method: answered with an error, not dropped."""

    id: int | str
    method: str
    error: str
    jsonrpc: str = "2.0"


def _usable_id(value: object) -> bool:
    """An id LSP allows: an integer or a string (bool is no integer in JSON)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]')


def _top_level_id(body: bytes) -> int | str | None:
    """The id of a JSON object too deep for json.loads, found by a flat scan of its tokens
    (strings and brackets): the value of the key "id" at the top level, if it is an id."""
    depth = 0
    for match in _JSON_TOKEN.finditer(body):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and token == b'"id"':
            rest = body[match.end() :].lstrip()
            if not rest.startswith(b":"):
                continue  # a value "id", not the key
            try:
                value, _ = json.JSONDecoder().raw_decode(
                    rest[1:1024].decode("utf-8", "replace").lstrip()
                )
            except (ValueError, RecursionError):
                return None
            return value if _usable_id(value) else None
    return None


def _invalid(data: object) -> tuple[str, object] | None:
    """Why `data` is no JSON-RPC 2.0 message, and the id to answer that to (None: nobody
    waits for an answer, or the id itself is the problem); None when it is a message."""
    if not isinstance(data, dict):
        return f"a {type(data).__name__} is no JSON-RPC message", None
    request_id = data.get("id")
    is_call = "method" in data
    if is_call and "id" in data and not _usable_id(request_id):
        return f"the id {json.dumps(request_id)[:40]} is neither an integer nor a string", None
    answer_to = request_id if is_call and _usable_id(request_id) else None
    if data.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"', answer_to
    if is_call and not isinstance(data["method"], str):
        return "the method is not a string", answer_to
    if not is_call and not ("result" in data or "error" in data):
        return "neither a request, a notification nor a response", None
    if not is_call and request_id is not None and not _usable_id(request_id):
        return "a response whose id is neither an integer nor a string", None
    return None


class InplaceProtocol(LanguageServerProtocol):
    _initialized = False  # an initialize request was accepted
    _said: set[tuple[str, str]] | None = None  # (method, document) already logged as malformed

    def receive(self, body: bytes) -> None:
        """One message body from the client: parsed, checked, handled. A body that is no
        message gets the spec's error where a client waits for an answer, a log line
        otherwise; never a popup."""
        try:
            data = json.loads(body)
        except ValueError as exc:  # also UnicodeDecodeError
            logger.warning("a message that is no JSON: %s", exc)
            self._send_error(None, JsonRpcParseError.CODE, f"parse error: {exc}")
            return
        except RecursionError:  # JSON, nested deeper than the parser goes: answer its id
            logger.warning("a message nested too deep to read (%d bytes)", len(body))
            message = "parse error: the message is nested too deep to read"
            self._send_error(_top_level_id(body), JsonRpcParseError.CODE, message)
            return
        if isinstance(data, list):  # LSP has no batches
            logger.warning("a batch of %d messages: LSP has no batches", len(data))
            for item in data:
                if isinstance(item, dict) and "method" in item and _usable_id(item.get("id")):
                    self._send_error(
                        item["id"], JsonRpcInvalidRequest.CODE, "batches are not supported"
                    )
            return
        problem = _invalid(data)
        if problem is not None:
            why, answer_to = problem
            logger.warning("invalid message: %s", why)
            calls = isinstance(data, dict) and "method" in data and "id" in data
            if answer_to is not None or (calls and not _usable_id(data.get("id"))):
                self._send_error(answer_to, JsonRpcInvalidRequest.CODE, f"invalid request: {why}")
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:  # a notification or response that does not fit its type
            self._ignored(data, exc.__cause__ or exc)
            return
        self.handle_message(message)

    def _ignored(self, data: dict[str, Any], why: BaseException) -> None:
        """Logs a notification that does not fit its type once per method and document (an
        editor that sends bad ranges sends them on every keystroke)."""
        method = str(data.get("method", "a response"))
        params = data.get("params")
        document = params.get("textDocument") if isinstance(params, dict) else None
        uri = document.get("uri") if isinstance(document, dict) else None
        said = self._said if self._said is not None else set()
        key = (method, str(uri))
        if key in said:
            return
        if len(said) >= SAID_ONCE_LIMIT:
            said.clear()
        said.add(key)
        self._said = said
        where = f" of {uri}" if uri is not None else ""
        logger.warning("ignored %s%s: %s (said once)", method, where, _why(why))

    def _send_error(self, request_id: object, code: int, message: str) -> None:
        self._send_data(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        )

    def is_open(self, uri: str) -> bool:
        return unquote(uri) in self.workspace.text_documents

    def _did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        """A keystroke: the text synced through the workspace, then the server's handler (a
        plain function), called here (handle_message routes every didChange to it). pygls's
        dispatch of a notification (a generator run through futures with a uuid per step, and
        a check of the message against each runtime protocol in turn) cost more than the text
        sync and the handler together."""
        uri = params.text_document.uri
        if not self.is_open(uri):
            logger.warning("didChange of %s ignored: it is not open", uri)
            return
        try:
            for change in params.content_changes:
                self.workspace.update_text_document(params.text_document, change)
            handler = self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)
            if handler is not None:
                handler(params)
        except Exception as exc:  # as pygls reports a notification handler's failure
            logger.exception("textDocument/didChange failed")
            self._server._report_server_error(exc, FeatureNotificationError)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(
        self, params: types.DidChangeNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        uri = params.notebook_document.uri
        if unquote(uri) not in self.workspace.notebook_documents:
            logger.warning("didChange of the notebook %s ignored: it is not open", uri)
            return
        yield from super().lsp_notebook_document__did_change(params)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        caps = params.capabilities
        general = caps.general or types.GeneralClientCapabilities()
        chosen = convert.choose_encoding(general.position_encodings)
        # pygls takes the client's first supported encoding; offer it only ours.
        params.capabilities = attrs.evolve(
            caps, general=attrs.evolve(general, position_encodings=[chosen])
        )
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        self.client_capabilities = caps
        # The server's workspace in place of pygls's (no document is open before the answer).
        made = self.workspace
        self._workspace = ServerWorkspace(
            made.root_uri, SYNC_KIND, list(made.folders.values()), made.position_encoding
        )
        return result

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = exc.__cause__ or exc
                return _MalformedRequest(data["id"], str(data["method"]), _why(cause))
            raise

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        request_id = getattr(message, "id", None)
        is_request = method is not None and request_id is not None
        if not self._initialized and method not in (None, types.INITIALIZE, types.EXIT):
            if is_request:
                self._send_error(
                    request_id,
                    JsonRpcServerNotInitialized.CODE,
                    f"{method}: the server is not initialized",
                )
            return  # a notification before initialize is dropped (LSP 3.17)
        if method == types.INITIALIZE and is_request:
            if self._initialized:
                self._send_error(
                    request_id,
                    JsonRpcInvalidRequest.CODE,
                    "initialize: the server is already initialized",
                )
                return
            self._initialized = not isinstance(message, _MalformedRequest)
        if self._shutdown and method not in (None, types.EXIT) and request_id is not None:
            self._send_response(
                request_id,
                error=types.ResponseError(
                    code=JsonRpcInvalidRequest.CODE,
                    message=f"{method}: the server is shutting down",
                ),
            )
            return
        if isinstance(message, _MalformedRequest):
            self._send_response(
                message.id,
                error=types.ResponseError(
                    code=JsonRpcInvalidParams.CODE,
                    message=f"invalid params for {message.method}: {message.error}",
                ),
            )
            return
        if (
            method == types.TEXT_DOCUMENT_DID_CHANGE
            and isinstance(message, types.DidChangeTextDocumentNotification)
            and not self._shutdown
        ):
            self._did_change(message.params)
            return
        super().handle_message(message)


class InplaceLanguageServer(LanguageServer):
    """Holds the session once `initialize` has said what the client can do."""

    def __init__(self) -> None:
        super().__init__(
            NAME,
            __version__,
            text_document_sync_kind=SYNC_KIND,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=InplaceProtocol,
        )
        self._session: Session | None = None
        self.init_options: object = None
        self._poller: asyncio.Task[None] | None = None  # polls the run reports

    @property
    def session(self) -> Session:
        if self._session is None:
            raise JsonRpcException("the server is not initialized")
        return self._session

    def start(self, session: Session) -> None:
        self._session = session

    def poll_run_reports(self) -> None:
        """Looks at the run report files every few seconds in the event loop (a directory
        listing per folder; no thread): what the client's file watcher, if any, missed."""

        async def poll() -> None:
            while True:
                await asyncio.sleep(self.session.run_poll_s)
                try:
                    self.session.poll_run_reports()
                except Exception:  # a bug here must not end the polling
                    logger.exception("polling the run reports failed")

        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(poll())

    def stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    def is_open(self, uri: str) -> bool:
        return unquote(uri) in self.workspace.text_documents

    def text_of(self, uri: str) -> tuple[int | None, str]:
        """The version and text of the document `uri`: the editor's buffer when it is open,
        else the file a file: URI names (a regular file within the analysis's size limit).
        ValueError for any other URI that is not open (pygls would read `untitled:Untitled-1`
        as the file Untitled-1 in the server's folder, `http://h/x.py` as /x.py); OSError,
        UnicodeDecodeError or SyntaxError when the file cannot be read as Python."""
        if self.is_open(uri):
            document = self.workspace.get_text_document(uri)
            return document.version, document.source
        path = uri_to_path(uri)
        if path is None:
            raise ValueError(
                f"verify: {uri} is not open in the editor and is no file: URI; nothing was run"
            )
        return None, read_python(path, MAX_FILE_BYTES)

    def cells_of(self, notebook_uri: str) -> tuple[int | None, Cells]:
        """The notebook's version and its Python code cells, in order."""
        notebook = self.workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None:
            return None, []
        cells: list[tuple[str, int | None, str]] = []
        for cell in notebook.cells:
            if cell.kind != types.NotebookCellKind.Code:
                continue
            document = self.workspace.get_text_document(cell.document)
            if document.language_id not in (None, "python"):
                continue
            cells.append((cell.document, document.version, document.source))
        return notebook.version, cells


class _PyglsClient:
    """The session's view of the connection."""

    def __init__(self, server: InplaceLanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop

    def call_soon(self, callback: Callable[[], None]) -> None:
        try:
            self.loop.call_soon_threadsafe(callback)
        except RuntimeError:  # the loop closed: the server is exiting
            pass

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def refresh_diagnostics(self) -> None:
        self.server.workspace_diagnostic_refresh(None)

    def show(self, message: str, kind: types.MessageType) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def refresh_code_lenses(self) -> None:
        self.server.workspace_code_lens_refresh(None)


class _WorkDone:
    """The progress of one verify run (`verification.Progress`): server-initiated
    window/workDoneProgress where the client has it; the client's cancel sets `cancel`."""

    def __init__(
        self, server: InplaceLanguageServer, loop: asyncio.AbstractEventLoop, enabled: bool
    ) -> None:
        self.server = server
        self.loop = loop
        self.enabled = enabled
        self.cancel = threading.Event()
        self.token: str | None = None

    async def begin(self, title: str) -> None:
        if not self.enabled:
            return
        token = f"inplace-lsp-verify-{uuid.uuid4()}"
        progress = self.server.work_done_progress
        try:
            await progress.create_async(token)
        except Exception:  # the client refused the token: run without a progress bar
            logger.info("window/workDoneProgress/create failed", exc_info=True)
            return
        cancelled = progress.tokens.get(token)
        if cancelled is not None:  # pygls cancels this future on the client's cancel
            cancelled.add_done_callback(lambda _: self.cancel.set())
        self.token = token
        progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))

    def report(self, message: str) -> None:
        def send() -> None:
            if self.token is not None:
                self.server.work_done_progress.report(
                    self.token, types.WorkDoneProgressReport(message=message)
                )

        if self.token is not None:
            try:
                self.loop.call_soon_threadsafe(send)
            except RuntimeError:  # the loop closed: the server is exiting
                pass

    def end(self, message: str) -> None:
        token, self.token = self.token, None
        if token is not None:
            progress = self.server.work_done_progress
            progress.end(token, types.WorkDoneProgressEnd(message=message))
            progress.tokens.pop(token, None)


def _folders(params: types.InitializeParams) -> list[str]:
    """The workspace folders' paths (the root's when the client names no folders)."""
    folders = [uri_to_path(f.uri) for f in params.workspace_folders or []]
    found = [folder for folder in folders if folder]
    if not found:
        root = _root(params)
        found = [root] if root else []
    return found


def _root(params: types.InitializeParams) -> str | None:
    for uri in [params.root_uri, *(f.uri for f in params.workspace_folders or [])]:
        path = uri_to_path(uri) if uri else None
        if path:
            return path
    return params.root_path or None


WARM_UP_SOURCE = """import torch
import torch.nn as nn


class Warm(nn.Module):
    def forward(self, x):
        h = torch.sigmoid(x)
        h += 1
        return h
"""


def _warm_up() -> None:
    """Loads what the first analysis and the first code action would otherwise load while
    the user waits: the autograd table, every rule, the fixes (libcst). No collection runs
    meanwhile: a full one holds the GIL some 40 ms in this thread, and a hover or keystroke
    the event loop's thread serves then waits for it."""
    COLLECTOR.hold()
    try:
        DocumentAnalysis().update(WARM_UP_SOURCE)
        import inplace_lsp.fixes  # noqa: F401  (libcst: the first code action's edits)
    finally:
        COLLECTOR.release()


def _freeze_what_the_server_is_made_of() -> None:
    """Moves the ~60,000 objects of pygls, lsprotocol, cattrs and the analysis's modules and
    tables out of the garbage collector's sight: they live as long as the process, and every
    full collection (a pause between an analysis and its diagnostics) walked them again.
    Once, while `initialize` is answered, before any document can be open: a frozen object
    is never collected, and when the warm-up thread froze everything alive, the analysis of a
    document opened at once was frozen with it; its classes' ClassInfos, kept from update to
    update, each pinned the module model of the update it was dropped in: +3-4 MB per 1,000
    keystrokes in a 4,128-line file (benchmarks/edit_memory.py --day). libcst, imported by the
    warm-up later, stays in sight (16,000 objects)."""
    gc.collect()
    gc.freeze()


class _FastCodec(PositionCodec):
    """pygls's position codec with LSP's reading of a position and without its per-character
    Python loop on ASCII lines (a burst of 3,000 changes typed into one line spent 20 of its
    24 s converting their positions). A column past a line's end means the line's end, before
    its line break, in every encoding (pygls took `length - 1` with the break counted: an
    insert at column 4 of `"abc\\n"` landed on the next line, one past the end of a CRLF
    line split the `\\r\\n`); a column inside a character (half a surrogate pair, a UTF-8
    continuation byte) means that character; a line past the last means the document's end.
    The client's Position is not changed (pygls wrote the clamped column back into it)."""

    def client_num_units(self, string: str) -> int:
        return convert.units(string, self.encoding or convert.UTF16)

    def position_from_client_units(
        self, lines: Sequence[str], position: types.Position
    ) -> ServerTextPosition:
        if not lines:
            return ServerTextPosition(0, 0)
        if position.line >= len(lines):
            return ServerTextPosition(len(lines) - 1, len(lines[-1]))
        line = max(position.line, 0)
        text = lines[line]
        content = text.rstrip("\r\n")  # one line holds at most one break
        column = convert.from_units(content, position.character, self.encoding or convert.UTF16)
        return ServerTextPosition(line=line, character=column)


def build_server() -> InplaceLanguageServer:
    server = InplaceLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: InplaceLanguageServer, params: types.InitializeParams) -> None:
        general = params.capabilities.general
        encoding = convert.choose_encoding(general.position_encodings if general else None)
        features = Features.of(params.capabilities, encoding)
        client = _PyglsClient(ls, asyncio.get_running_loop())
        ls.start(Session(client, features, root=_root(params), folders=_folders(params)))
        ls.init_options = params.initialization_options
        _freeze_what_the_server_is_made_of()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: InplaceLanguageServer, params: types.InitializedParams) -> None:
        session = ls.session
        threading.Thread(target=_warm_up, name="inplace-lsp-warm-up", daemon=True).start()
        if ls.init_options is not None:
            session.set_editor_settings(ls.init_options)
        registrations = []
        if session.features.watch_files:
            watchers = [types.FileSystemWatcher(glob_pattern=glob) for glob in WATCHED]
            registrations.append(
                types.Registration(
                    id="inplace-lsp-watched-files",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers),
                )
            )
        if session.features.register_configuration:
            registrations.append(
                types.Registration(
                    id="inplace-lsp-configuration",
                    method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                    register_options=types.DidChangeConfigurationRegistrationOptions(
                        section=SECTION
                    ),
                )
            )
        if registrations:
            ls.client_register_capability(types.RegistrationParams(registrations))
        session.load_run_reports()
        ls.poll_run_reports()
        if session.features.configuration:
            await _pull_configuration(ls)

    async def _pull_configuration(ls: InplaceLanguageServer, pushed: object = None) -> None:
        """The editor's settings through workspace/configuration; what the client pushed
        when it has nothing under our section."""
        try:
            values = await ls.workspace_configuration_async(
                types.ConfigurationParams([types.ConfigurationItem(section=SECTION)])
            )
        except Exception:
            logger.exception("workspace/configuration failed")
            values = None
        value = values[0] if values else None
        if value is not None or pushed is not None:
            ls.session.set_editor_settings(value if value is not None else pushed)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: InplaceLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        ls.session.open_document(document.uri, document.version, document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: InplaceLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        ls.session.change_document(
            uri,
            document.version,
            document.source,
            saved=False,
            changes=params.content_changes,
            lines=document.lines,
        )

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: InplaceLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        if not ls.is_open(params.text_document.uri):
            logger.warning("didSave of %s ignored: it is not open", params.text_document.uri)
            return
        version, text = ls.text_of(params.text_document.uri)
        ls.session.change_document(params.text_document.uri, version, text, saved=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: InplaceLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.session.close_document(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(
        ls: InplaceLanguageServer, params: types.DidOpenNotebookDocumentParams
    ) -> None:
        uri = params.notebook_document.uri
        ls.session.open_notebook(uri, *ls.cells_of(uri))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(
        ls: InplaceLanguageServer, params: types.DidChangeNotebookDocumentParams
    ) -> None:
        uri = params.notebook_document.uri
        ls.session.change_notebook(uri, *ls.cells_of(uri))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(
        ls: InplaceLanguageServer, params: types.DidSaveNotebookDocumentParams
    ) -> None:
        uri = params.notebook_document.uri
        ls.session.change_notebook(uri, *ls.cells_of(uri), saved=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(
        ls: InplaceLanguageServer, params: types.DidCloseNotebookDocumentParams
    ) -> None:
        ls.session.close_notebook(params.notebook_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=NAME, inter_file_dependencies=True, workspace_diagnostics=False
        ),
    )
    async def diagnostic(
        ls: InplaceLanguageServer, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        return await ls.session.pull(params.text_document.uri, params.previous_result_id)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[*actions.KINDS, verification.ACTION_KIND], resolve_provider=True
        ),
    )
    async def code_action(
        ls: InplaceLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        # The analysis of the newest change first: actions are only offered for the text
        # in the buffer.
        await ls.session.settled(params.text_document.uri)
        kinds = params.context.only
        only = [str(getattr(kind, "value", kind)) for kind in kinds] if kinds else None
        return ls.session.code_actions(params.text_document.uri, params.range, only)

    @server.feature(types.CODE_ACTION_RESOLVE)
    def code_action_resolve(
        ls: InplaceLanguageServer, action: types.CodeAction
    ) -> types.CodeAction:
        return ls.session.resolve_code_action(action)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: InplaceLanguageServer, params: types.HoverParams) -> types.Hover | None:
        # As for code actions: a hover describes the text in the buffer, not an older one.
        await ls.session.settled(params.text_document.uri)
        return ls.session.hover(params.text_document.uri, params.position)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: InplaceLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        if ls.session.features.configuration:
            await _pull_configuration(ls, params.settings)
        else:
            ls.session.set_editor_settings(params.settings)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(
        ls: InplaceLanguageServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        ls.session.files_changed([change.uri for change in params.changes])

    @server.command(DEBUG_INFO_COMMAND)
    async def show_debug_info(ls: InplaceLanguageServer, *arguments: Any) -> dict[str, Any]:
        uri = arguments[0] if arguments and isinstance(arguments[0], str) else None
        await ls.session.runs.settled()  # the run report being read, if any, is in the info
        info = ls.session.debug_info(uri)
        ls.window_log_message(
            types.LogMessageParams(type=types.MessageType.Info, message=format_debug_info(info))
        )
        return info

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(
        ls: InplaceLanguageServer, params: types.CodeLensParams
    ) -> list[types.CodeLens]:
        return await ls.session.code_lenses(params.text_document.uri)

    @server.command(verification.COMMAND)
    async def verify(ls: InplaceLanguageServer, *arguments: Any) -> dict[str, Any]:
        try:
            uri, where = verification.parse_arguments(arguments)
            version, text = ls.text_of(uri)  # the buffer, saved or not
        except (ValueError, OSError, SyntaxError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        loop = asyncio.get_running_loop()
        progress = _WorkDone(ls, loop, ls.session.features.work_done_progress)
        return await ls.session.verify(uri, version, text, where, progress)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: InplaceLanguageServer, params: None) -> None:
        ls.stop_polling()
        if ls._session is not None:
            ls._session.shutdown()

    @server.feature(types.EXIT)
    def exit_(ls: InplaceLanguageServer, params: None) -> None:
        runner.shutdown_workers()  # also after an exit without shutdown

    return server


CHUNK = 1 << 16  # bytes read at a time


async def _pump(read: Callable[[], Awaitable[bytes]], protocol: InplaceProtocol) -> int:
    """Hands the client's messages to `protocol` until the input ends or the client says exit;
    the exit code (LSP: 0 after shutdown, 1 without)."""
    frames = FrameReader()
    while data := await read():
        for event in frames.feed(data):
            if isinstance(event, Skipped):
                logger.warning(
                    "skipped %d bytes that were no readable message (%s)", event.size, event.why
                )
                continue
            try:
                protocol.receive(event)
            except SystemExit as exc:  # pygls's exit handler
                return exc.code if isinstance(exc.code, int) else 0
            except Exception:  # a bug here must not end the server
                logger.exception("handling a message failed")
    return 0


def _stdin_reader(stream: BinaryIO) -> Callable[[], Awaitable[bytes]]:
    """Reads stdin from the file descriptor, in the event loop when it can wait for one (a
    pipe or a socket on POSIX): a keystroke's message is handled without waking a thread
    first. Elsewhere (Windows, a regular file) in a daemon thread, one chunk ahead."""
    loop = asyncio.get_running_loop()
    fd = stream.fileno()

    async def read() -> bytes:
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, readable)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        try:  # readable: returns what is there (or b"" at the end) without blocking
            return os.read(fd, CHUNK)
        except OSError:
            return b""

    try:
        loop.add_reader(fd, lambda: None)
        loop.remove_reader(fd)
    except (NotImplementedError, OSError, ValueError):  # no readiness for this descriptor
        return _threaded_reader(fd, loop)
    return read


def _threaded_reader(fd: int, loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[bytes]]:
    """Reads in a daemon thread (an exit does not wait for the client to close stdin), from
    the file descriptor: a thread blocked in a buffered read holds its lock, which the
    interpreter's exit then waits for and aborts."""
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=1)

    def run() -> None:
        data = b"x"
        while data:
            try:
                data = os.read(fd, CHUNK)
            except OSError:
                data = b""
            try:
                asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
            except BaseException:  # the loop is gone: the server is exiting
                return

    threading.Thread(target=run, name="inplace-lsp-stdin", daemon=True).start()
    return chunks.get


def _serve_stdio(server: InplaceLanguageServer) -> int:
    protocol = server.protocol
    assert isinstance(protocol, InplaceProtocol)
    protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def main() -> int:
        return await _pump(_stdin_reader(sys.stdin.buffer), protocol)

    try:
        return asyncio.run(main())
    except BrokenPipeError:
        logger.error("the connection to the client is lost")
        return 1
    finally:
        server.shutdown()


def _serve_tcp(server: InplaceLanguageServer, host: str, port: int) -> int:
    protocol = server.protocol
    assert isinstance(protocol, InplaceProtocol)
    code = 0

    async def main() -> None:
        done = asyncio.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal code
            protocol.set_writer(writer)  # type: ignore[arg-type]
            try:
                code = await _pump(lambda: reader.read(CHUNK), protocol)
            finally:
                done.set()

        listening = await asyncio.start_server(connection, host, port)
        logger.info("serving on %s", ", ".join(str(s.getsockname()) for s in listening.sockets))
        async with listening:
            await done.wait()

    try:
        asyncio.run(main())
    finally:
        server.shutdown()
    return code


class _AnsweredCancel(logging.Filter):
    """Drops pygls's warning for a `$/cancelRequest` whose request was already answered: the
    LSP spec has servers ignore it, and it is routine (VS Code cancels requests at start-up),
    but stderr reaches the editor's log as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Cancel notification for unknown message id")


def serve(tcp: tuple[str, int] | None = None) -> int:
    """Runs the server on stdio, or on a TCP port (one client), until the client says exit
    or goes; the exit code."""
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_AnsweredCancel())
    server = build_server()
    if tcp is None:
        return _serve_stdio(server)
    return _serve_tcp(server, *tcp)
