"""The language server end to end: `python -m inplace_lsp serve` over stdio, driven by pytest-lsp
as two editors, each test run once per editor, each editor doing only what the real one does:

* VS Code 1.100.3 with vscode-languageclient 10.1.2 (what vscode-client/ ships), its
  capabilities as recorded from the code-server e2e: pulls diagnostics for files and notebook
  code cells, counts columns in UTF-16; a settings change restarts the server (the extension
  drops didChangeConfiguration), so it never sends one;
* Emacs 29.1's eglot (its recorded capabilities): takes pushed diagnostics, offers UTF-32
  and UTF-8 (the server picks UTF-8, so columns are bytes), resolves no code actions and asks
  for no code lenses. (Neovim 0.11 pulls diagnostics without refresh: tests/test_editor_nvim.py
  runs the real one; a Neovim profile with its pull taken out was no real editor.)

The flagged code sits after "é😀" on its line, so every column check tells the encodings
apart. Fix edits come from `inplace_lsp.fixes`; each test applies them as an editor would and
checks the re-analysed text.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

pytestmark = [pytest.mark.lsp, pytest.mark.asyncio(loop_scope="module")]

REPO = Path(__file__).resolve().parents[1]
CLIENTS = Path(__file__).resolve().parent / "clients"  # initialize requests of real editors
SERVER_ENV = dict(
    os.environ,
    PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
)
FIX_ALL = "source.fixAll.inplace-lsp"
DEBUG_INFO = "inplace-lsp.showDebugInfo"
TIMEOUT_S = 30.0

PREFIX = '        note = "é😀"; '
DOC = f"""import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = torch.sigmoid(x)
{PREFIX}h += 1
        return self.act(torch.tanh(h))
"""
FLAGGED_LINE = 11  # 0-based: `h += 1`
SIGMOID_LINE = 10
ACTIVATION_LINE = 7


# ---------------------------------------------------------------- editors


@dataclass(frozen=True)
class Profile:
    name: str
    capabilities: types.ClientCapabilities
    encoding: str  # what the server must pick
    pull: bool  # pulls textDocument/diagnostic for the files it has open
    pull_cells: bool = False  # ... and for notebook code cells
    sends_configuration: bool = True  # workspace/didChangeConfiguration on a settings change

    @property
    def resolves_edits(self) -> bool:
        """codeAction/resolve fills in the edit: the server leaves it out of the action."""
        properties = _get(self.capabilities.text_document, "code_action", "resolve_support")
        return "edit" in (properties.properties if properties else [])

    @property
    def shows_lenses(self) -> bool:
        """The editor asks for code lenses (eglot and Helix have none)."""
        return _get(self.capabilities.text_document, "code_lens") is not None

    def pulls(self, uri: str) -> bool:
        """Whether this editor pulls the diagnostics of `uri` (else it waits for a push)."""
        if uri in CELLS:  # a code cell; a markdown one is no Python document to it
            return self.pull_cells and CELLS[uri]
        return self.pull


def _get(obj: object, *names: str) -> Any:
    for name in names:
        obj = getattr(obj, name, None)
    return obj


# The notebook cells the tests opened: URI -> whether it is a Python code cell.
CELLS: dict[str, bool] = {}


def recorded(name: str) -> types.ClientCapabilities:
    """An editor's capabilities as it sent them in its initialize request."""
    data = json.loads((CLIENTS / name).read_text(encoding="utf-8"))
    return default_converter().structure(data["capabilities"], types.ClientCapabilities)


def vscode() -> Profile:
    """What tests/test_editor_vscode.py runs: the initialize request recorded from code-server
    4.100.3 with the extension's vscode-languageclient 10.1.2 (9.x did not pull for notebook
    cells, and VS Code showed none of their diagnostics)."""
    caps = recorded("vscode_1.100.3_languageclient_10.1.2.json")
    return Profile("vscode", caps, "utf-16", pull=True, pull_cells=True, sends_configuration=False)


def emacs() -> Profile:
    """Emacs 29.1's eglot as recorded (pytest-lsp's capture of its initialize request): takes
    pushed diagnostics only, offers UTF-32 then UTF-8 (the server picks UTF-8: columns are
    bytes), resolves no code actions, asks for no code lenses, registers file watchers, and
    sends its settings in didChangeConfiguration."""
    caps = client_capabilities("emacs")
    assert caps.general is not None and caps.general.position_encodings is not None
    assert list(caps.general.position_encodings) == ["utf-32", "utf-8", "utf-16"]
    assert caps.text_document is not None and caps.text_document.diagnostic is None
    return Profile("emacs", caps, "utf-8", pull=False)


PROFILES = {"vscode": vscode, "emacs": emacs}


class Editor(LanguageClient):
    """pytest-lsp's client, also recording every publishDiagnostics in order, and refusing
    to send what its editor never sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.registrations: list[types.Registration] = []
        self.profile: Profile = vscode()
        self.init_result: types.InitializeResult | None = None
        self.lens_refreshes = 0

    def text_document_diagnostic_async(self, params: types.DocumentDiagnosticParams) -> Any:
        uri = params.text_document.uri
        assert self.profile.pulls(uri), f"{self.profile.name} pulls no diagnostics for {uri}"
        return super().text_document_diagnostic_async(params)

    def workspace_did_change_configuration(
        self, params: types.DidChangeConfigurationParams
    ) -> None:
        assert self.profile.sends_configuration, f"{self.profile.name} sends no settings"
        super().workspace_did_change_configuration(params)

    def workspace_did_change_watched_files(self, params: types.DidChangeWatchedFilesParams) -> None:
        watching = types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        assert any(r.method == watching for r in self.registrations), (
            f"{self.profile.name} watches no files for the server"
        )
        super().workspace_did_change_watched_files(params)

    def text_document_code_lens_async(self, params: types.CodeLensParams) -> Any:
        assert self.profile.shows_lenses, f"{self.profile.name} asks for no code lenses"
        return super().text_document_code_lens_async(params)


def _record_publish(client: Editor, params: types.PublishDiagnosticsParams) -> None:
    client.published.append(params)
    client.diagnostics[params.uri] = params.diagnostics


def _register_capability(client: Editor, params: types.RegistrationParams) -> None:
    client.registrations += params.registrations


def _code_lens_refresh(client: Editor, params: None) -> None:
    """VS Code would re-request the lenses; the tests count the requests."""
    client.lens_refreshes += 1


def make_editor() -> Editor:
    client = Editor(converter_factory=default_converter)
    register_lsp_features(
        client,
        {
            **DEFAULT_CLIENT_FEATURES,
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _record_publish,
            types.CLIENT_REGISTER_CAPABILITY: _register_capability,
            types.WORKSPACE_CODE_LENS_REFRESH: _code_lens_refresh,
        },
    )
    return client


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workspace")


@pytest_lsp.fixture(
    config=ClientServerConfig(
        [sys.executable, "-m", "inplace_lsp", "serve"],
        client_factory=make_editor,
        server_env=SERVER_ENV,
    ),
    scope="module",
    params=sorted(PROFILES),
)
async def client(request: pytest.FixtureRequest, lsp_client: Editor, workspace: Path) -> Any:
    profile = PROFILES[request.param]()
    lsp_client.profile = profile
    lsp_client.init_result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=profile.capabilities,
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "workspace")],
            initialization_options={"strict": False, "bogusKey": 1},
        )
    )
    yield
    await lsp_client.shutdown_session()


# ---------------------------------------------------------------- helpers

_counter = 0


def new_uri(workspace: Path, stem: str = "model") -> str:
    global _counter
    _counter += 1
    return (workspace / f"{stem}_{_counter}.py").as_uri()


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def code_points(line: str, offset: int, encoding: str) -> int:
    seen = 0
    for index, char in enumerate(line):
        if seen >= offset:
            return index
        seen += units(char, encoding)
    return len(line)


def apply_edits(text: str, edits: Sequence[types.TextEdit], encoding: str) -> str:
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        start = sum(len(line) + 1 for line in lines[: position.line])
        return start + code_points(lines[position.line], position.character, encoding)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        start, end = offset(edit.range.start), offset(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


def edits_in(edit: types.WorkspaceEdit | None, uri: str) -> list[types.TextEdit]:
    assert edit is not None, "the action has no edit"
    found: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        if change.text_document.uri == uri:
            found += [e for e in change.edits if isinstance(e, types.TextEdit)]
    found += list((edit.changes or {}).get(uri, []))
    return found


def open_document(client: Editor, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
    )


def open_notebook(client: Editor, notebook: str, cells: Sequence[tuple[str, str]]) -> list[str]:
    """Opens a notebook of (language, text) cells, "markdown" ones as markup; the cell URIs."""
    uris = [f"{notebook}#cell{i}" for i in range(len(cells))]
    CELLS.update((uri, lang == "python") for uri, (lang, _) in zip(uris, cells, strict=True))
    code, markup = types.NotebookCellKind.Code, types.NotebookCellKind.Markup
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(kind=markup if lang == "markdown" else code, document=uri)
                    for uri, (lang, _) in zip(uris, cells, strict=True)
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri, lang, 1, text)
                for uri, (lang, text) in zip(uris, cells, strict=True)
            ],
        )
    )
    return uris


def replace_text(client: Editor, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def diagnostics(
    client: Editor, uri: str, version: int | None = None, *, after: int = 0
) -> list[types.Diagnostic]:
    """The diagnostics of `uri`: pulled where the editor pulls them, else the first push at
    `version` or later among those received after the `after`-th."""
    if client.profile.pulls(uri):
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri))
        )
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        return list(report.items)
    deadline = asyncio.get_running_loop().time() + TIMEOUT_S
    while True:
        for params in client.published[after:]:
            if params.uri == uri and (version is None or (params.version or 0) >= version):
                return list(params.diagnostics)
        assert asyncio.get_running_loop().time() < deadline, f"no diagnostics for {uri}"
        await asyncio.sleep(0.005)


async def wait_until(condition: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def codes(found: Sequence[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in found)


def only(found: Sequence[types.Diagnostic], code: str) -> types.Diagnostic:
    (diagnostic,) = [d for d in found if d.code == code]
    return diagnostic


async def resolved(client: Editor, action: types.CodeAction) -> types.CodeAction:
    if action.edit is None:
        action = await client.code_action_resolve_async(action)
    return action


async def actions_at(
    client: Editor,
    uri: str,
    where: types.Range,
    found: Sequence[types.Diagnostic],
    kinds: list[str] | None = None,
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            where,
            types.CodeActionContext(diagnostics=list(found), only=kinds),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def run_action(
    client: Editor, uri: str, text: str, action: types.CodeAction, version: int
) -> tuple[str, list[types.Diagnostic]]:
    """Resolves and applies the action as the editor would; the new text's diagnostics."""
    action = await resolved(client, action)
    fixed = apply_edits(text, edits_in(action.edit, uri), client.profile.encoding)
    replace_text(client, uri, version, fixed)
    return fixed, await diagnostics(client, uri, version)


# ---------------------------------------------------------------- tests


async def test_position_encoding_is_negotiated(
    client: Editor,
) -> None:
    assert client.init_result is not None
    capabilities = client.init_result.capabilities
    assert capabilities.position_encoding == client.profile.encoding
    assert capabilities.code_action_provider is not None
    # Shown (after `initialized`), then ignored.
    await wait_until(lambda: any("bogusKey" in m.message for m in client.messages))
    # Dynamic registration where the editor has it: VS Code both, eglot the file watchers.
    workspace_caps = client.profile.capabilities.workspace
    expected = []
    if _get(workspace_caps, "did_change_watched_files", "dynamic_registration"):
        expected.append(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    if _get(workspace_caps, "did_change_configuration", "dynamic_registration"):
        expected.append(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    assert (
        expected
        == {
            "vscode": [
                types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                types.WORKSPACE_DID_CHANGE_CONFIGURATION,
            ],
            "emacs": [types.WORKSPACE_DID_CHANGE_WATCHED_FILES],
        }[client.profile.name]
    )
    await wait_until(lambda: len(client.registrations) == len(expected))
    assert [r.method for r in client.registrations] == expected
    watched = client.registrations[0]
    assert isinstance(watched.register_options, dict)
    globs = [w["globPattern"] for w in watched.register_options["watchers"]]
    assert globs == [
        "**/pyproject.toml",
        "**/*.py",
        "**/.inplace-lsp/last-run*.json",
        "**/.inplace-lsp",
    ]


async def test_diagnostics_on_open_with_exact_columns(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    found = await diagnostics(client, uri, 1)
    assert codes(found) == ["IPL001", "IPL003"]
    encoding = client.profile.encoding
    flagged = only(found, "IPL001")
    start = units(PREFIX, encoding)
    assert flagged.range == types.Range(
        types.Position(FLAGGED_LINE, start), types.Position(FLAGGED_LINE, start + len("h += 1"))
    )
    assert flagged.severity == types.DiagnosticSeverity.Error
    assert flagged.source == "inplace-lsp"
    assert flagged.code_description is not None
    assert flagged.code_description.href.endswith("inplace_lsp/data/rules.md#ipl001")
    assert flagged.related_information is not None
    saved_by = flagged.related_information[0]
    assert saved_by.location.uri == uri
    assert saved_by.location.range.start.line == SIGMOID_LINE
    assert "saved by torch.sigmoid" in saved_by.message
    assert isinstance(flagged.data, dict)
    assert flagged.data["fix"]["safe"] is True
    activation = only(found, "IPL003")
    assert activation.range.start.line == ACTIVATION_LINE
    assert activation.related_information is not None
    assert "torch.tanh" in activation.related_information[0].message


async def test_incremental_change_then_close(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    assert "IPL001" in codes(await diagnostics(client, uri, 1))
    encoding = client.profile.encoding
    start = units(PREFIX, encoding)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        types.Position(FLAGGED_LINE, start),
                        types.Position(FLAGGED_LINE, start + len("h += 1")),
                    ),
                    text="h = h + 1",
                )
            ],
        )
    )
    assert codes(await diagnostics(client, uri, 2)) == ["IPL003"]
    count = len(client.published)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    if client.profile.pull:
        # The editor drops a closed document's pulled diagnostics itself and pulls no more;
        # the server pushes none. (A request after the close: the close has been handled.)
        assert (
            await client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0))
            )
            is None
        )
        assert not [p for p in client.published[count:] if p.uri == uri]
    else:
        assert await diagnostics(client, uri, after=count) == []


async def test_syntax_error_keeps_other_diagnostics(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    broken = DOC + "\ndef half_typed(:\n"
    open_document(client, uri, broken)
    assert codes(await diagnostics(client, uri, 1)) == ["IPL001", "IPL003"]


async def test_quick_fix_resolves_and_removes_the_finding(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    flagged = only(await diagnostics(client, uri, 1), "IPL001")
    offered = await actions_at(client, uri, flagged.range, [flagged])
    titles = [a.title for a in offered]
    assert "Rewrite out of place (IPL001)" in titles
    assert "Suppress with `# noqa: IPL001`" in titles
    fix = next(a for a in offered if a.is_preferred)
    assert fix.kind == types.CodeActionKind.QuickFix
    # The edit comes on codeAction/resolve where the editor resolves it (VS Code), else inline.
    assert (fix.edit is None) == client.profile.resolves_edits
    fixed, found = await run_action(client, uri, DOC, fix, 2)
    assert f"{PREFIX}h = h + 1\n" in fixed
    assert codes(found) == ["IPL003"]


async def test_fix_all_applies_every_safe_fix(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    found = await diagnostics(client, uri, 1)
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    offered = await actions_at(client, uri, whole, [], kinds=["source.fixAll"])
    assert [a.kind for a in offered] == [FIX_ALL]
    fixed, found = await run_action(client, uri, DOC, offered[0], 2)
    assert "inplace=False" in fixed and "h = h + 1" in fixed
    assert found == []


async def test_noqa_suppresses(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    flagged = only(await diagnostics(client, uri, 1), "IPL001")
    offered = await actions_at(client, uri, flagged.range, [flagged])
    noqa = next(a for a in offered if "noqa" in a.title)
    fixed, found = await run_action(client, uri, DOC, noqa, 2)
    assert "h += 1  # noqa: IPL001" in fixed
    assert codes(found) == ["IPL003"]


async def test_turn_off_inplace_activations(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    activation = only(await diagnostics(client, uri, 1), "IPL003")
    offered = await actions_at(client, uri, activation.range, [activation])
    turn_off = next(a for a in offered if a.title.startswith("Turn off in-place activations"))
    fixed, found = await run_action(client, uri, DOC, turn_off, 2)
    assert "nn.ReLU(inplace=False)" in fixed
    assert codes(found) == ["IPL001"]


async def test_code_action_away_from_findings_is_empty(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    await diagnostics(client, uri, 1)
    cursor = types.Range(types.Position(0, 3), types.Position(0, 3))
    assert await actions_at(client, uri, cursor, [], kinds=["quickfix"]) == []


async def test_hover_names_the_saving_op_and_the_history(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    flagged = only(await diagnostics(client, uri, 1), "IPL001")
    inside = types.Position(FLAGGED_LINE, flagged.range.start.character + 2)
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), inside)
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "**IPL001** `inplace-on-saved`" in text
    assert "torch.sigmoid" in text
    assert f"- v0 saved by torch.sigmoid at line {SIGMOID_LINE + 1}" in text
    assert f"- v1 written by `+=` at line {FLAGGED_LINE + 1}" in text
    assert "earlier op saved for backward" in text  # the rule's documentation
    assert "inplace_lsp/data/rules.md#ipl001)" in text
    assert hover.range == flagged.range
    elsewhere = types.Position(0, 0)
    assert (
        await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), elsewhere)
        )
        is None
    )


async def test_debug_info(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    await diagnostics(client, uri, 1)
    info = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(DEBUG_INFO, [uri])
    )
    assert info["version"]
    assert info["python"]
    assert info["configFile"] is None
    assert info["enabledRules"][0] == "IPL001" and len(info["enabledRules"]) == 9
    assert info["settings"]["run"] == "onType"
    assert info["positionEncoding"] == client.profile.encoding
    assert info["diagnostics"] == ("pull" if client.profile.pull else "push")
    assert any("debug info" in m.message for m in client.log_messages)


async def _settings_applied(client: Editor, uri: str, count: int, refreshes: int) -> None:
    """Waits for the server to act on new settings: a refresh request (pull) or a push."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT_S
    while True:
        if client.profile.pull and client.diagnostic_refresh_count > refreshes:
            return
        if not client.profile.pull and any(p.uri == uri for p in client.published[count:]):
            return
        assert asyncio.get_running_loop().time() < deadline, "settings not applied"
        await asyncio.sleep(0.005)


async def test_configuration_change(client: Editor, workspace: Path) -> None:
    if not client.profile.sends_configuration:
        pytest.skip(
            f"{client.profile.name} restarts the server on a settings change and sends no "
            "didChangeConfiguration (tests/test_editor_vscode.py checks the restart)"
        )
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    assert codes(await diagnostics(client, uri, 1)) == ["IPL001", "IPL003"]
    try:
        for settings, expected in (
            ({"ignore": ["IPL001"]}, ["IPL003"]),
            ({"ignore": "not a code!"}, ["IPL001", "IPL003"]),  # invalid: shown, default used
        ):
            client.set_configuration(settings, section="inplaceLsp")
            count, refreshes = len(client.published), client.diagnostic_refresh_count
            messages = len(client.messages)
            # (eglot sends its workspace configuration along; the server pulls it anyway)
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"inplaceLsp": settings})
            )
            await _settings_applied(client, uri, count, refreshes)
            assert codes(await diagnostics(client, uri, after=count)) == expected
        assert any("not a code!" in m.message for m in client.messages[messages:])
    finally:
        client.set_configuration({}, section="inplaceLsp")
        count, refreshes = len(client.published), client.diagnostic_refresh_count
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"inplaceLsp": {}})
        )
        await _settings_applied(client, uri, count, refreshes)


async def test_pyproject_is_reloaded(client: Editor, workspace: Path) -> None:
    watched = [
        r for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    ]
    if not watched:
        pytest.skip(
            f"{client.profile.name} cannot register file watchers for the server, so it sends "
            "no didChangeWatchedFiles"
        )
    project = workspace / f"project_{client.profile.name}"
    project.mkdir()
    uri = new_uri(project)
    open_document(client, uri, DOC)
    assert codes(await diagnostics(client, uri, 1)) == ["IPL001", "IPL003"]
    pyproject = project / "pyproject.toml"
    for change, content, expected in (
        (types.FileChangeType.Created, '[tool.inplace-lsp]\nignore = ["IPL001"]\n', ["IPL003"]),
        (types.FileChangeType.Deleted, None, ["IPL001", "IPL003"]),
    ):
        if content is None:
            pyproject.unlink()
        else:
            pyproject.write_text(content, encoding="utf-8")
        count, refreshes = len(client.published), client.diagnostic_refresh_count
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams([types.FileEvent(pyproject.as_uri(), change)])
        )
        await _settings_applied(client, uri, count, refreshes)
        assert codes(await diagnostics(client, uri, after=count)) == expected


async def test_notebook_cells_are_one_program(client: Editor, workspace: Path) -> None:
    if client.profile.name != "vscode":
        pytest.skip("notebook sync: VS Code only (eglot has no notebooks)")
    notebook = (workspace / "train.ipynb").as_uri()
    cells = [
        ("python", "%matplotlib inline\nimport torch\n"),
        ("python", "x = torch.ones(2, requires_grad=True)\ny = torch.sigmoid(x)"),
        ("markdown", "# Notes: é😀"),
        ("python", "note = 'é😀'; y += 1\ny.sum().backward()\n"),
    ]
    uris = open_notebook(client, notebook, cells)
    # The write in the last cell conflicts with the save in the second: one program.
    flagged = only(await diagnostics(client, uris[3]), "IPL001")
    start = units("note = 'é😀'; ", client.profile.encoding)
    assert flagged.range == types.Range(
        types.Position(0, start), types.Position(0, start + len("y += 1"))
    )
    assert flagged.related_information is not None
    saved_by, backward = flagged.related_information
    assert saved_by.location.uri == uris[1]
    assert saved_by.location.range.start == types.Position(1, 4)
    assert backward.location.uri == uris[3]
    assert backward.location.range.start.line == 1
    # Lines named in messages are the cells' own: the sigmoid is on line 2 of code cell 2.
    assert "(line 2 of code cell 2)" in flagged.message, flagged.message
    shown = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uris[3]), flagged.range.start)
    )
    assert shown is not None and isinstance(shown.contents, types.MarkupContent)
    text = shown.contents.value
    assert "(line 2 of code cell 2)" in text and "line 4" not in text
    for uri in uris[:2]:  # the code cells (the editor pulls none for the markdown cell)
        assert await diagnostics(client, uri) == []
    offered = await actions_at(client, uris[3], flagged.range, [flagged])
    fix = await resolved(client, next(a for a in offered if a.is_preferred))
    fixed = apply_edits(cells[3][1], edits_in(fix.edit, uris[3]), client.profile.encoding)
    assert fixed.startswith("note = 'é😀'; y = y + 1\n")
    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            types.NotebookDocumentIdentifier(notebook),
            [types.TextDocumentIdentifier(uri) for uri in uris],
        )
    )


async def test_malformed_request_gets_an_error_and_the_server_lives(
    client: Editor, workspace: Path
) -> None:
    # pytest-lsp only sends well-typed params; this goes through its raw send.
    protocol = client.protocol
    reply: Future[Any] = Future()
    protocol._request_futures["malformed-1"] = reply
    protocol._send_data(
        {
            "jsonrpc": "2.0",
            "id": "malformed-1",
            "method": "textDocument/hover",
            "params": {"textDocument": {"uri": 5}},
        }
    )
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(asyncio.wrap_future(reply), TIMEOUT_S)
    assert raised.value.code == -32602  # InvalidParams
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    assert codes(await diagnostics(client, uri, 1)) == ["IPL001", "IPL003"]


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _burst(client: Editor, uri: str, version: int, count: int) -> int:
    """`count` one-character changes, sent as fast as the transport takes them: `h += 1`
    (flagged) in odd versions, `h +  1` (no write) in even ones. Returns the last version."""
    start = units(PREFIX, client.profile.encoding)
    for _ in range(count):
        version += 1
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            types.Position(FLAGGED_LINE, start + 3),
                            types.Position(FLAGGED_LINE, start + 4),
                        ),
                        text="=" if version % 2 else " ",
                    )
                ],
            )
        )
        if version % 100 == 0:
            await asyncio.sleep(0)  # let the transport drain, as an editor's would
    return version


async def _burst_and_check(client: Editor, uri: str, version: int, count: int) -> int:
    published = len(client.published)
    started = asyncio.get_running_loop().time()
    version = await _burst(client, uri, version, count)
    found = await diagnostics(client, uri, version, after=published)
    assert asyncio.get_running_loop().time() - started < 10
    assert codes(found) == (["IPL001", "IPL003"] if version % 2 else ["IPL003"])
    if not client.profile.pull:
        versions = [p.version or 0 for p in client.published[published:] if p.uri == uri]
        assert versions == sorted(versions), "an older version was published over a newer one"
        assert versions[-1] == version
    return version


async def test_burst_of_1000_changes(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC)
    await diagnostics(client, uri, 1)
    version = await _burst_and_check(client, uri, 1, 1000)
    server = client._server
    if server is None or not Path(f"/proc/{server.pid}/statm").exists():
        return
    rss = _rss_mb(server.pid)
    for count in (1001, 999, 1001, 999):
        version = await _burst_and_check(client, uri, version, count)
    assert _rss_mb(server.pid) - rss < 20, "memory grows with every burst"


async def test_reopened_document_starts_again(client: Editor, workspace: Path) -> None:
    uri = new_uri(workspace)
    open_document(client, uri, DOC, version=7)
    assert codes(await diagnostics(client, uri, 7)) == ["IPL001", "IPL003"]
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    count = len(client.published)
    open_document(client, uri, DOC.replace("h += 1", "h = h + 1"), version=1)
    assert codes(await diagnostics(client, uri, 1, after=count)) == ["IPL003"]


# ---------------------------------------------------------------- every quick fix, proven


def _fixable_cases() -> list[Any]:
    from test_fixes import FAILING, NO_FIX

    return [case for case in FAILING if case.name not in NO_FIX]


@pytest.mark.torch
@pytest.mark.parametrize("case", _fixable_cases(), ids=lambda case: case.name)
async def test_quick_fixes_through_the_server_make_backward_work(
    client: Editor, workspace: Path, case: Any, tmp_path: Path
) -> None:
    """For each failing case of tests/cases, the editor applies the preferred quick fix of an
    Error diagnostic, again until none is left; the result runs under torch, backward
    succeeds, and its gradients equal those of the case's hand-written out-of-place twin."""
    import types as pytypes

    from test_fixes import NOT_PREFERRED, TWINS, _import

    torch = pytest.importorskip("torch")
    uri = new_uri(workspace, f"case_{case.path.stem}")
    text = case.path.read_text(encoding="utf-8")
    open_document(client, uri, text)
    version = 1
    found = await diagnostics(client, uri, version)
    for _ in range(10):
        errors = [d for d in found if d.severity == types.DiagnosticSeverity.Error]
        if not errors:
            break
        offered = await actions_at(client, uri, errors[0].range, [errors[0]])
        preferred = [a for a in offered if a.is_preferred]
        if case.name in NOT_PREFERRED:  # offered, not preferred: the user picks it by name
            assert not preferred
            preferred = [a for a in offered if (a.data or {}).get("action") == "fix"]
        assert preferred, f"no preferred quick fix for {errors[0].code} at {errors[0].range}"
        version += 1
        text, found = await run_action(client, uri, text, preferred[0], version)
    assert not [d for d in found if d.severity == types.DiagnosticSeverity.Error]
    fixed_path = tmp_path / case.path.name
    fixed_path.write_text(text, encoding="utf-8")
    anomaly = torch.is_anomaly_enabled()
    try:
        fixed = _import(fixed_path)
        fixed.run()  # backward succeeds
        twin = _import(TWINS / case.path.name)
        expected = twin.grads()
        got = pytypes.FunctionType(twin.grads.__code__, vars(fixed))()
    finally:
        torch.autograd.set_detect_anomaly(anomaly)
    assert expected.keys() == got.keys()
    for name, value in expected.items():
        assert (value is None) == (got[name] is None), name
        if value is not None:
            assert torch.allclose(value, got[name]), name
