"""Verify through the language server, end to end, once per editor profile of test_lsp (VS Code:
pulls diagnostics, refreshes code lenses; eglot: diagnostics pushed, UTF-8 columns, verify
through the source code action as it shows no code lenses):

* a "Verify forward/backward" code lens above each nn.Module subclass and each function that
  calls backward(), and no user code run to find them;
* the walkthrough: a broken module -> the `inplace-lsp.verify` command names the mutating and
  the saving line (its result, a diagnostic from "inplace-lsp verify", a message) -> the quick
  fix through code actions -> verify again says OK and the verify diagnostic is gone;
* a module that hangs: a timeout under a small `verify.timeout_s`, the server lives on;
* cancelling the progress ends the run at once; shutdown stops the warm worker.

Each server keeps one warm verify worker (torch imported once); every run forks from it.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
import test_lsp as base
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig
from test_lsp_units import CONFIRMED, _receive, said_by_verify, verify_diagnostics
from test_verify import AUTO_DEVICE

pytestmark = [pytest.mark.lsp, pytest.mark.torch]
in_module_loop = pytest.mark.asyncio(loop_scope="module")  # the server lives as long as the module

VERIFY = "inplace-lsp.verify"
ACTION_KIND = "source.verify.inplace-lsp"  # the verify code action, for editors without lenses
TITLE = "Verify forward/backward"
RUN_TIMEOUT_S = 60.0  # the first run starts the warm worker (imports torch)

BROKEN = """import torch
import torch.nn as nn


class ResidualBlock(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        h += x
        return h


class Config:
    depth = 2


def train_step():
    model = ResidualBlock()
    model(torch.randn(4, 16)).sum().backward()


def helper(x):
    return x + 1
"""
CLASS_LINE = 4  # 0-based
SAVING_LINE = 10
MUTATION_LINE = 11
TRAIN_LINE = 19

HANGING = """import time

import torch.nn as nn


class Stuck(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        time.sleep(600)
        return self.fc(x)
"""


def _make_client() -> base.Editor:
    return base.make_editor()  # it counts workspace/codeLens/refresh requests


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("verify-workspace")


@pytest_lsp.fixture(
    config=ClientServerConfig(
        [sys.executable, "-m", "inplace_lsp", "serve"],
        client_factory=_make_client,
        server_env=base.SERVER_ENV,
    ),
    scope="module",
    params=sorted(base.PROFILES),
)
async def client(request: pytest.FixtureRequest, lsp_client: base.Editor, workspace: Path) -> Any:
    profile = base.PROFILES[request.param]()
    lsp_client.profile = profile
    lsp_client.init_result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=profile.capabilities,
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "workspace")],
        )
    )
    yield
    if getattr(lsp_client, "shut_down", False):  # the last test did, to watch the worker go
        lsp_client.exit(None)
        if lsp_client._server is not None:
            await asyncio.wait_for(lsp_client._server.wait(), base.TIMEOUT_S)
    else:
        await lsp_client.shutdown_session()


# ---------------------------------------------------------------- helpers


async def lenses(client: base.Editor, uri: str) -> list[types.CodeLens]:
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri))
    )
    return list(found or [])


async def verify_arguments(client: base.Editor, uri: str, line: int) -> list[Any]:
    """The verify command's arguments for the target around 0-based `line`, as the editor
    gets them: the code lens above it where the editor shows lenses, else the source code
    action there (lsprotocol reads an action with a `command` key as a plain Command)."""
    if client.profile.shows_lenses:
        found = [lens for lens in await lenses(client, uri) if lens.range.start.line <= line]
        command = found[-1].command if found else None
    else:
        where = types.Range(types.Position(line, 0), types.Position(line, 0))
        offered = await client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri),
                where,
                types.CodeActionContext(diagnostics=[], only=[ACTION_KIND]),
            )
        )
        # lsprotocol's client side reads the action ({title, kind, command: {...}}) as a
        # Command whose `command` is the nested command's repr: take that back.
        commands = [
            types.Command(**ast.literal_eval(a.command))
            for a in offered or []
            if isinstance(a, types.Command) and a.command.startswith("{")
        ]
        command = commands[0] if commands else None
    assert command is not None and command.command == VERIFY and command.arguments is not None
    return list(command.arguments)


async def verify(client: base.Editor, *arguments: Any) -> dict[str, Any]:
    result = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(VERIFY, list(arguments))),
        RUN_TIMEOUT_S,
    )
    assert isinstance(result, dict)
    return result


def without_python(message: str) -> str:
    """A verify window message less the interpreter it names at its end (every verify output
    names the interpreter it ran in: issue 40)."""
    head, sep, tail = message.rpartition(" [python: ")
    assert sep and tail.endswith(")]"), message
    return head


async def pushed_or_pulled(client: base.Editor, uri: str, version: int, after: int) -> list[Any]:
    """The diagnostics after a verify: pulled, or the first push since the `after`-th."""
    return await base.diagnostics(client, uri, version, after=after)


def messages_since(client: base.Editor, count: int) -> list[types.ShowMessageParams]:
    return list(client.messages[count:])


def progress_runs(client: base.Editor) -> dict[str, list[Any]]:
    """The verify progress bars seen so far: token -> begin, reports, end."""
    return {
        str(token): values
        for token, values in client.progress_reports.items()
        if str(token).startswith("inplace-lsp-verify-")
    }


# ---------------------------------------------------------------- tests


@in_module_loop
async def test_code_lenses_above_modules_and_training_functions(
    client: base.Editor, workspace: Path
) -> None:
    if not client.profile.shows_lenses:
        pytest.skip(f"{client.profile.name} asks for no code lenses")
    assert client.init_result is not None
    capabilities = client.init_result.capabilities
    assert capabilities.code_lens_provider is not None
    assert capabilities.execute_command_provider is not None
    assert VERIFY in capabilities.execute_command_provider.commands
    marker = workspace / f"ran_{client.profile.name}"
    uri = base.new_uri(workspace, "lenses")
    text = BROKEN + f"\nopen({str(marker)!r}, 'w').close()\n"  # top-level code: never run here
    base.open_document(client, uri, text)
    await base.diagnostics(client, uri, 1)
    found = await lenses(client, uri)
    assert [lens.range.start.line for lens in found] == [CLASS_LINE, TRAIN_LINE]
    for lens in found:
        assert lens.command is not None
        assert lens.command.title == TITLE
        assert lens.command.command == VERIFY
        position = {"line": lens.range.start.line, "character": 0}
        assert list(lens.command.arguments or []) == [uri, position]
    refreshes = client.lens_refreshes
    base.replace_text(client, uri, 2, "# a new first line\n" + text)
    await base.diagnostics(client, uri, 2)
    if client.profile.name == "vscode":  # refreshSupport: VS Code yes, Neovim no
        await base.wait_until(lambda: client.lens_refreshes > refreshes)
    else:
        assert client.lens_refreshes == 0
    moved = await lenses(client, uri)
    assert [lens.range.start.line for lens in moved] == [CLASS_LINE + 1, TRAIN_LINE + 1]
    assert not marker.exists(), "opening, analysing or listing lenses ran the user's code"


def test_verify_code_action_for_clients_without_lenses(tmp_path: Path) -> None:
    """Helix and eglot show no code lenses: the same command comes as a source code action.
    Checked on the wire: lsprotocol's client side reads any action with a `command` key as a
    plain Command, which is what pytest-lsp would show."""
    uri = (tmp_path / "action.py").as_uri()
    server = subprocess.Popen(
        [sys.executable, "-m", "inplace_lsp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    pipe, replies = server.stdin, server.stdout

    def send(message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        pipe.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        pipe.flush()

    def until(wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while not wanted(message := _receive(replies)):
            pass
        return message

    def actions(line: int, only: list[str] | None, request: int) -> list[dict[str, Any]]:
        where = {"start": {"line": line, "character": 9}, "end": {"line": line, "character": 9}}
        context: dict[str, Any] = {"diagnostics": [], **({"only": only} if only else {})}
        params = {"textDocument": {"uri": uri}, "range": where, "context": context}
        send({"id": request, "method": "textDocument/codeAction", "params": params})
        result: list[dict[str, Any]] = until(lambda m: m.get("id") == request)["result"]
        return result

    try:
        send({"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
        capabilities = until(lambda m: m.get("id") == 1)["result"]["capabilities"]
        assert "source.verify.inplace-lsp" in capabilities["codeActionProvider"]["codeActionKinds"]
        send({"method": "initialized", "params": {}})
        document = {"uri": uri, "languageId": "python", "version": 1, "text": BROKEN}
        send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
        until(lambda m: m.get("method") == "textDocument/publishDiagnostics")

        (verify,) = [a for a in actions(MUTATION_LINE, None, 2) if "command" in a]
        assert verify == {
            "title": "Verify ResidualBlock: forward/backward under autograd (inplace-lsp)",
            "kind": "source.verify.inplace-lsp",
            "command": {
                "title": TITLE,
                "command": VERIFY,
                "arguments": [uri, {"line": CLASS_LINE, "character": 0}],
            },
        }
        assert [a["kind"] for a in actions(MUTATION_LINE, ["source"], 3) if "command" in a] == [
            "source.verify.inplace-lsp"
        ]
        assert all(a["kind"] == "quickfix" for a in actions(MUTATION_LINE, ["quickfix"], 4))
        assert not [a for a in actions(0, None, 5) if "command" in a]  # outside any target
        send({"id": 6, "method": "shutdown"})
        until(lambda m: m.get("id") == 6)
        send({"method": "exit"})
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@in_module_loop
async def test_verify_names_the_lines_then_the_fix_verifies(
    client: base.Editor, workspace: Path
) -> None:
    uri = base.new_uri(workspace, "residual")
    path = uri.removeprefix("file://")
    base.open_document(client, uri, BROKEN)
    flagged = base.only(await base.diagnostics(client, uri, 1), "IPL001")
    arguments = await verify_arguments(client, uri, MUTATION_LINE)
    messages, published = len(client.messages), len(client.published)
    runs = set(progress_runs(client))

    # 1. Verify the broken module: the mutating line and the saving line, three ways.
    result = await verify(client, *arguments)
    assert result["status"] == "inplace-error"
    assert result["target"] == "ResidualBlock"
    assert result["mutation"] == {"path": path, "line": MUTATION_LINE + 1}
    assert result["saved_by"]["line"] == SAVING_LINE + 1
    assert result["saved_by"]["op"] == "SigmoidBackward0"
    summary = (
        f"ResidualBlock fails: line {MUTATION_LINE + 1} overwrites the output of "
        f"torch.sigmoid saved at line {SAVING_LINE + 1}"
    )
    await base.wait_until(
        lambda: any(without_python(m.message) == summary for m in client.messages[messages:])
    )
    shown = next(m for m in client.messages[messages:] if without_python(m.message) == summary)
    assert shown.type == types.MessageType.Error
    found = await pushed_or_pulled(client, uri, 1, published)
    # One entry for the bug: the analysis's Error on the line says verify confirmed it, and
    # verify's places follow its own (was: a second Error from verify on the same line).
    (checked,) = verify_diagnostics(found)
    assert found.count(checked) == 1 and base.codes(found) == ["IPL001"]
    assert (checked.code, checked.source, checked.range) == (
        "IPL001",
        flagged.source,
        flagged.range,
    )
    assert checked.severity == types.DiagnosticSeverity.Error
    assert checked.message == f"{flagged.message}{CONFIRMED}{summary})"
    assert checked.related_information is not None
    *analysed, saved = checked.related_information
    assert analysed == list(flagged.related_information or ())
    assert saved.location.uri == uri
    assert saved.location.range.start == types.Position(SAVING_LINE, 8)
    assert "SigmoidBackward0" in saved.message

    # Progress: created by the server, begun (cancellable), reported, ended with the summary.
    new_runs = {t: v for t, v in progress_runs(client).items() if t not in runs}
    (values,) = new_runs.values()
    begin, *_, end = values
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.title == TITLE and begin.cancellable is True
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message is not None
    assert without_python(end.message) == summary

    # 2. The quick fix of the analysis's diagnostic, applied as the editor would.
    offered = await base.actions_at(client, uri, flagged.range, [checked])
    fix = next(a for a in offered if a.is_preferred)
    fixed, found = await base.run_action(client, uri, BROKEN, fix, 2)
    assert "h = h + x" in fixed
    assert verify_diagnostics(found) == []  # a verify result never outlives its text

    # 3. Verify again, this time the file's main target (no position): OK, nothing flagged.
    messages, published = len(client.messages), len(client.published)
    result = await verify(client, uri)
    assert result["status"] == "ok", result
    assert result["target"] == "train_step"  # an entry-point name wins
    assert result["device"] == AUTO_DEVICE
    assert result["mutation"] is None
    await base.wait_until(
        lambda: any(
            m.message.startswith(f"train_step: ran OK on {AUTO_DEVICE} in ")
            for m in client.messages[messages:]
        )
    )
    assert verify_diagnostics(await base.diagnostics(client, uri, 2)) == []
    assert base.codes(await base.diagnostics(client, uri, 2)) == []


@in_module_loop
async def test_verify_an_untitled_buffer(client: base.Editor, workspace: Path) -> None:
    """A buffer never saved runs from its text, as if it lived in the workspace."""
    uri = f"untitled:Untitled-{client.profile.name}"
    base.open_document(client, uri, BROKEN)
    flagged = base.only(await base.diagnostics(client, uri, 1), "IPL001")
    published = len(client.published)
    result = await verify(client, uri, {"line": MUTATION_LINE, "character": 8})
    assert (result["status"], result["target"]) == ("inplace-error", "ResidualBlock"), result
    assert result["mutation"]["line"] == MUTATION_LINE + 1
    assert result["saved_by"]["line"] == SAVING_LINE + 1
    (checked,) = verify_diagnostics(await pushed_or_pulled(client, uri, 1, published))
    assert checked.range == flagged.range and checked.code == "IPL001"
    assert said_by_verify(checked).startswith(f"ResidualBlock fails: line {MUTATION_LINE + 1} ")
    assert not list(workspace.glob("_inplace_lsp_untitled_*"))  # nothing written


NOTEBOOK_CELLS = [
    ("python", "import torch\nfrom torch import nn\n\nSCALE = torch.tensor([2.0]).view(1, 1)\n"),
    ("markdown", "# A gate: é😀"),
    (
        "python",
        "class Gate(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "\n"
        "    def forward(self, x):\n"
        "        h = torch.sigmoid(self.fc(x)) * SCALE\n"
        "        g = torch.sigmoid(h)\n"
        "        g += x  # é😀\n"
        "        return g\n",
    ),
    ("python", "%matplotlib inline\nmodel = Gate()\nopen(MARKER, 'w').close()\n"),
]


@in_module_loop
async def test_verify_a_notebook_cell(client: base.Editor, workspace: Path) -> None:
    """A cell's module runs with the notebook's imports, definitions and constants; other
    top-level code (here: a line that writes a file) does not run; lines are the cell's."""
    if client.profile.name != "vscode":
        pytest.skip("notebook sync: VS Code only (eglot has no notebooks)")
    marker = workspace / "notebook_ran"
    cells = [
        (language, text.replace("MARKER", repr(str(marker)))) for language, text in NOTEBOOK_CELLS
    ]
    notebook = (workspace / "gate.ipynb").as_uri()
    uris = base.open_notebook(client, notebook, cells)
    await base.diagnostics(client, uris[2])
    # The lens sits above the class in its own cell, with the cell's line numbers.
    (lens,) = await lenses(client, uris[2])
    assert lens.range.start == types.Position(0, 0) and lens.command is not None
    assert list(lens.command.arguments or []) == [uris[2], {"line": 0, "character": 0}]
    assert await lenses(client, uris[0]) == [] and await lenses(client, uris[3]) == []
    messages, published = len(client.messages), len(client.published)
    result = await verify(client, *lens.command.arguments)
    assert (result["status"], result["target"]) == ("inplace-error", "Gate"), result
    # The message shows in no cell: it names the cell (the markdown cell is not a code cell).
    summary = (
        "Gate fails: line 9 of code cell 2 overwrites the output of torch.sigmoid saved at "
        "line 8 of code cell 2"
    )
    await base.wait_until(
        lambda: any(without_python(m.message) == summary for m in client.messages[messages:])
    )
    # The failure is a diagnostic of the cell, at the cell's line; related: the saving line.
    (checked,) = verify_diagnostics(await pushed_or_pulled(client, uris[2], 1, published))
    in_cell = "Gate fails: line 9 overwrites the output of torch.sigmoid saved at line 8"
    assert checked.range.start.line == 8 and said_by_verify(checked) == in_cell
    saved = (checked.related_information or [])[-1]
    assert (saved.location.uri, saved.location.range.start.line) == (uris[2], 7)
    assert verify_diagnostics(await base.diagnostics(client, uris[0])) == []
    assert not marker.exists(), "verify ran the notebook's other top-level code"
    assert not list(workspace.glob("_inplace_lsp_notebook_*"))  # nothing written
    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            types.NotebookDocumentIdentifier(notebook),
            [types.TextDocumentIdentifier(uri) for uri in uris],
        )
    )


@in_module_loop
async def test_verify_diagnostic_needs_no_reverify_to_go(
    client: base.Editor, workspace: Path
) -> None:
    """Verify at version 1 flags a line; an edit of the verified class that does not fix it
    still removes the verify diagnostic (it described the old text), keeping the analysis's;
    an edit elsewhere moves it with its line."""
    uri = base.new_uri(workspace, "stale")
    base.open_document(client, uri, BROKEN)
    await base.diagnostics(client, uri, 1)
    published = len(client.published)
    result = await verify(client, uri, {"line": MUTATION_LINE, "character": 4})
    assert result["status"] == "inplace-error"
    assert len(verify_diagnostics(await pushed_or_pulled(client, uri, 1, published))) == 1
    moved = "# a new first line\n" + BROKEN + "\n# edited\n"
    base.replace_text(client, uri, 2, moved)
    (kept,) = verify_diagnostics(await base.diagnostics(client, uri, 2))
    assert kept.range.start.line == MUTATION_LINE + 1
    assert f"line {MUTATION_LINE + 2} overwrites" in kept.message
    base.replace_text(client, uri, 3, moved.replace("return h", "return h  # edited"))
    found = await base.diagnostics(client, uri, 3)
    assert verify_diagnostics(found) == []
    assert "IPL001" in base.codes(found)


TWO_BROKEN = (
    BROKEN
    + """

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        g = torch.exp(self.fc(x))
        g *= 2
        return g
"""
)


@in_module_loop
async def test_verifying_one_class_keeps_the_other_classes_result(
    client: base.Editor, workspace: Path
) -> None:
    """Two broken classes in one file, each verified: two verify diagnostics, not one (the
    second verify used to replace the first's)."""
    uri = base.new_uri(workspace, "two")
    base.open_document(client, uri, TWO_BROKEN)
    await base.diagnostics(client, uri, 1)
    lines = TWO_BROKEN.splitlines()
    first = await verify_arguments(client, uri, lines.index("class ResidualBlock(nn.Module):"))
    second = await verify_arguments(client, uri, lines.index("class Gate(nn.Module):"))
    assert (await verify(client, *first))["status"] == "inplace-error"
    published = len(client.published)
    gate = await verify(client, *second)
    assert (gate["status"], gate["target"]) == ("inplace-error", "Gate"), gate
    expected = [MUTATION_LINE, TWO_BROKEN.splitlines().index("        g *= 2")]
    found = await pushed_or_pulled(client, uri, 1, published)
    assert sorted(d.range.start.line for d in verify_diagnostics(found)) == expected


MASKED = """import torch
import torch.nn as nn


class MaskedPool(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, pad_mask=None):
        h = torch.sigmoid(self.fc(x))
        if pad_mask is not None:
            h *= pad_mask
        return h.sum(dim=1)
"""


@in_module_loop
async def test_an_ok_that_did_not_run_the_flagged_line_says_so(
    client: base.Editor, workspace: Path
) -> None:
    """forward and backward pass without reaching the flagged line: the message is a warning
    that names it and why, and the line gets an Information diagnostic from verify."""
    uri = base.new_uri(workspace, "masked")
    base.open_document(client, uri, MASKED)
    await base.diagnostics(client, uri, 1)
    messages, published = len(client.messages), len(client.published)
    result = await verify(client, uri, {"line": 4, "character": 0})
    assert result["status"] == "ok" and [e["line"] for e in result["not_run"]] == [13], result
    await base.wait_until(
        lambda: any("did not run" in m.message for m in client.messages[messages:])
    )
    shown = next(m for m in client.messages[messages:] if "did not run" in m.message)
    assert shown.type == types.MessageType.Warning
    assert without_python(shown.message).endswith(
        ", but line 13 (IPL001) did not run: `pad_mask` was None; add an `example_inputs()` "
        "that passes one"
    )
    (note,) = verify_diagnostics(await pushed_or_pulled(client, uri, 1, published))
    assert note.severity == types.DiagnosticSeverity.Information
    assert note.range.start.line == 12
    assert note.message.startswith("verify ran MaskedPool but not this line (IPL001): ")


@in_module_loop
async def test_a_hanging_module_times_out_and_the_server_lives(
    client: base.Editor, workspace: Path
) -> None:
    project = workspace / f"slow_{client.profile.name}"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        "[tool.inplace-lsp.verify]\ntimeout_s = 2\n", encoding="utf-8"
    )
    uri = base.new_uri(project, "stuck")
    base.open_document(client, uri, HANGING)
    await base.diagnostics(client, uri, 1)
    messages, published = len(client.messages), len(client.published)
    started = time.monotonic()
    result = await verify(client, uri, {"line": 5, "character": 0})
    assert result["status"] == "timeout", result
    assert time.monotonic() - started < 20
    assert "did not finish within 2 s" in result["message"]
    await base.wait_until(
        lambda: any("did not finish within 2 s" in m.message for m in client.messages[messages:])
    )
    shown = next(m for m in client.messages[messages:] if "did not finish" in m.message)
    assert shown.type == types.MessageType.Warning
    assert verify_diagnostics(await base.diagnostics(client, uri, 1)) == []
    if not client.profile.pull:
        assert not any(p.uri == uri for p in client.published[published:])
    # Alive: it analyses, and verifies again.
    other = base.new_uri(workspace, "after_timeout")
    base.open_document(client, other, base.DOC)
    assert base.codes(await base.diagnostics(client, other, 1)) == ["IPL001", "IPL003"]
    fine = BROKEN.replace("h += x", "h = h + x")
    base.replace_text(client, other, 2, fine)
    await base.diagnostics(client, other, 2)
    assert (await verify(client, other, {"line": CLASS_LINE, "character": 0}))["status"] == "ok"


@in_module_loop
async def test_cancelling_the_progress_kills_the_run(client: base.Editor, workspace: Path) -> None:
    uri = base.new_uri(workspace, "cancelled")
    base.open_document(client, uri, HANGING)
    await base.diagnostics(client, uri, 1)
    runs = set(progress_runs(client))
    task = asyncio.ensure_future(verify(client, uri, {"line": 5, "character": 0}))

    def running() -> str | None:
        for token, values in progress_runs(client).items():
            if token not in runs and any(
                isinstance(v, types.WorkDoneProgressReport)
                and (v.message or "").startswith("running")
                for v in values
            ):
                return token
        return None

    await base.wait_until(lambda: running() is not None)
    token = running()
    assert token is not None
    await asyncio.sleep(0.5)  # the job is in user code (time.sleep) by now
    started = time.monotonic()
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token))
    result = await asyncio.wait_for(task, 15)
    assert time.monotonic() - started < 5
    assert result["status"] == "error" and result.get("cancelled") is True
    assert "cancelled" in result["message"]
    await base.wait_until(
        lambda: isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd)
    )


@in_module_loop
async def test_bad_arguments_are_invalid_params(client: base.Editor, workspace: Path) -> None:
    for arguments in ([], [5], ["file:///x.py", {"line": "a"}], ["file:///x.py", None, 3]):
        with pytest.raises(JsonRpcException) as raised:
            await verify(client, *arguments)
        assert raised.value.code == -32602


@in_module_loop
async def test_shutdown_stops_the_warm_worker(client: base.Editor, workspace: Path) -> None:
    """Last in the module: shuts the server down (the fixture then only says exit)."""

    uri = base.new_uri(workspace, "last")
    base.open_document(client, uri, BROKEN.replace("h += x", "h = h + x"))
    await base.diagnostics(client, uri, 1)
    result = await verify(client, uri)
    assert result["status"] == "ok"
    pid = result.get("worker_pid")
    assert isinstance(pid, int)
    os.kill(pid, 0)  # alive
    await client.shutdown_async(None)
    client.shut_down = True  # type: ignore[attr-defined]

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    await base.wait_until(gone)
    with pytest.raises(JsonRpcException) as raised:  # answered, not dropped
        await asyncio.wait_for(client.shutdown_async(None), base.TIMEOUT_S)
    assert raised.value.code == -32600  # InvalidRequest


# ---------------------------------------------------------------- the pure parts, no server


def test_lens_targets_follow_the_analysis_model() -> None:
    from inplace_lsp.lsp.verification import LensTarget, lens_targets

    text = """from torch import nn as tnn
from lightning import LightningModule
import torch


class Base(tnn.Module):
    pass


class Derived(Base):
    pass


class Lit(LightningModule):
    pass


class Plain:
    def backward(self):
        pass


def loss_step():
    torch.autograd.grad(torch.ones(1, requires_grad=True).sum(), [])


async def not_run():
    pass
"""
    assert lens_targets(text, None) == (
        LensTarget("Base", "module", 6, 7),
        LensTarget("Derived", "module", 10, 11),
        LensTarget("Lit", "module", 14, 15),
        LensTarget("loss_step", "function", 23, 24),
    )
    assert lens_targets(text + "\ndef broken(:\n", None) is None  # the caller keeps its lenses


def test_notebook_definitions_keep_line_numbers() -> None:
    from inplace_lsp.lsp.verification import notebook_definitions

    program = (
        "import torch\n"
        "MEAN = torch.tensor([0.5]).view(1, 1)\n"
        "DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "data = load_everything(\n"
        "    'huge')\n"
        "for step in range(10):\n"
        "    train(step)\n"
        "class M(torch.nn.Module):\n"
        "    pass\n"
        "model = M()\n"
        "print(model)\r\n"
        "LR: float = 1e-3\n"
    )
    kept = notebook_definitions(program)
    assert kept.splitlines(keepends=True) == [
        "import torch\n",
        "MEAN = torch.tensor([0.5]).view(1, 1)\n",
        "DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n",
        "\n",
        "\n",
        "\n",
        "\n",
        "class M(torch.nn.Module):\n",
        "    pass\n",
        "\n",
        "\r\n",
        "LR: float = 1e-3\n",
    ]
    assert notebook_definitions("def broken(:\n") == "def broken(:\n"  # run reports it


def test_arguments() -> None:
    from inplace_lsp.lsp.verification import parse_arguments

    assert parse_arguments(["file:///a.py"]) == ("file:///a.py", None)
    assert parse_arguments(["file:///a.py", None]) == ("file:///a.py", None)
    assert parse_arguments(["file:///a.py", {"line": 3, "character": 2}]) == (
        "file:///a.py",
        types.Position(3, 2),
    )
    for bad in ([], [None], ["u", {"line": -1, "character": 0}], ["u", {"line": True}], ["u", 3]):
        with pytest.raises(ValueError):
            parse_arguments(bad)


def test_a_mutation_in_another_file_is_shown_at_the_target() -> None:
    from inplace_lsp.lsp.verification import diagnostics, message

    lines = ["import torch", "", "class M(nn.Module):", "    pass"]
    result = {
        "status": "inplace-error",
        "target": "M",
        "mutation": {"path": "/lib/helpers.py", "line": 7},
        "saved_by": {"path": "/work/m.py", "line": 1, "op": "ExpBackward0"},
    }
    (found,) = diagnostics(result, "/work/m.py", "file:///work/m.py", lines, "utf-16", 3)
    assert found.range.start == types.Position(2, 0)
    assert found.message == (
        "M fails: /lib/helpers.py:7 overwrites the output of torch.exp saved at line 1"
    )
    assert found.related_information is not None
    elsewhere, saved = found.related_information
    assert elsewhere.location.uri == "file:///lib/helpers.py"
    assert elsewhere.location.range.start.line == 6
    assert saved.location.uri == "file:///work/m.py"
    assert diagnostics({**result, "status": "ok"}, "/work/m.py", "u", lines, "utf-16") == []
    error = {
        "status": "error",
        "target": "M",
        "message": "boom",
        "stderr_tail": "a\nValueError: x\n",
    }
    assert message(error, "/work/m.py") == (
        "M: error: boom (ValueError: x)",
        types.MessageType.Error,
    )
