"""The findings of `inplace-lsp run` in the editor: the server reads the newest run report of
the workspace (`.inplace-lsp/last-run.json`, or one `last-run-rank<N>.json` per torchrun rank)
and shows each finding as a diagnostic from "inplace-lsp run" on the line it names, next to
the analysis's own, for as long as that line holds the text it had in the run.

The first part runs the real server over stdio (test_protocol's `Server`) with clients that
watch files for it (the test sends didChangeWatchedFiles, as the editor would) and clients
that do not (the server polls), pushing and pulling; the second checks the report reader and
the line tracking in this process. Reports are written here, in format 1, by hand.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from test_protocol import Server, notification, request

from inplace_lsp.lsp.run_findings import DIFF_LIMIT, RunFindings, changed_lines, file_key
from inplace_lsp.lsp.session import POLL_S, WATCHED_POLL_S
from inplace_lsp.report import Finding, Place, Run, is_report, newest_run

SOURCE = "inplace-lsp run"
POLL_WAIT_S = 4 * POLL_S

MODEL = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 8)

    def forward(self, x):
        g = torch.sigmoid(self.gate(x))
        note = "é😀"; g *= 0.5
        return g
"""
SAVED = 10  # 0-based lines of MODEL
WRITE = 11
WRITE_TEXT = 'note = "é😀"; g *= 0.5'

TRAIN = """import torch
from model import Gate

model = Gate()
total = 0
for step in range(3):
    loss = model(torch.randn(4, 8)).sum()
    loss.backward()
    total += loss
"""
TOTAL = 8


def _units(text: str, encoding: str) -> int:
    return len(text.encode("utf-8")) if encoding == "utf-8" else len(text.encode("utf-16-le")) // 2


def _line_range(line: int, text: str, source_line: str, encoding: str) -> dict[str, Any]:
    """The range of the stripped `source_line` on 0-based `line` of a text whose line is
    `text` (its indentation counts too)."""
    start = _units(text[: len(text) - len(text.lstrip())], encoding)
    return {
        "start": {"line": line, "character": start},
        "end": {"line": line, "character": start + _units(source_line, encoding)},
    }


def _place(path: Path, text: str, line: int) -> dict[str, Any]:
    """A report's {"path", "line", "source"} for 0-based `line` of `text`."""
    source = text.splitlines()[line].strip()
    return {
        "path": os.path.normcase(os.path.normpath(str(path))),
        "line": line + 1,
        "source": source,
    }


def inplace_finding(root: Path, message: str = "g was saved by sigmoid, then written") -> dict:
    model = root / "model.py"
    return {
        "severity": "error",
        "kind": "inplace-error",
        "message": message,
        "mutation": _place(model, MODEL, WRITE),
        "saved_by": {**_place(model, MODEL, SAVED), "op": "SigmoidBackward0"},
        "call_site": None,
        "related": [{**_place(root / "train.py", TRAIN, 7), "message": "backward() raised here"}],
        "tensor": {"shape": [4, 8], "dtype": "torch.float32", "device": "cpu"},
        "versions": [
            {"version": 0, "event": "saved", "op": "SigmoidBackward0", "path": "", "line": 11},
            {"version": 1, "event": "written", "op": "__imul__", "path": "", "line": 12},
        ],
        "count": 1,
    }


def retention_finding(root: Path) -> dict:
    return {
        "severity": "warning",
        "kind": "graph-retention",
        "message": "total keeps every step's graph alive",
        "mutation": _place(root / "train.py", TRAIN, TOTAL),
        "saved_by": None,
        "call_site": None,
        "related": [],
        "tensor": None,
        "versions": [],
        "count": 3,
    }


def write_report(
    root: Path,
    findings: list[dict],
    *,
    run_id: str = "run-1",
    rank: int | None = None,
    mtime: float | None = None,
) -> Path:
    """A report as `inplace-lsp run` writes it (to a temporary name, then renamed)."""
    name = "last-run.json" if rank is None else f"last-run-rank{rank}.json"
    path = root / ".inplace-lsp" / name
    path.parent.mkdir(exist_ok=True)
    data = {
        "tool": "inplace-lsp run",
        "format": 1,
        "run_id": run_id,
        "rank": rank,
        "world_size": None if rank is None else 2,
        "pid": 4242,
        "command": ["train.py", "--epochs", "1"],
        "cwd": str(root),
        "started": "2026-12-02T01:23:45Z",
        "finished": "2026-12-02T01:24:45Z",
        "exit_code": 1,
        "findings": findings,
    }
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# ---------------------------------------------------------------- the server over stdio

WATCHING = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
PULLING = {
    "textDocument": {"diagnostic": {}},
    "workspace": {
        "diagnostics": {"refreshSupport": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
    },
    "general": {"positionEncodings": ["utf-8", "utf-16"]},
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


@pytest.fixture
def server(workspace: Path) -> Iterator[Server]:
    running = Server(workspace)
    try:
        yield running
    finally:
        running.close()


Diagnostics = list[dict[str, Any]]


def wait_published(
    server: Server,
    uri: str,
    wanted: Callable[[Diagnostics], bool],
    what: str,
    version: int | None = None,
) -> Diagnostics:
    """The next diagnostics published for `uri` (of `version`, when given) that `wanted`
    accepts; the server's requests on the way (registrations, refreshes) are answered as an
    editor would."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        message = server.next_message(what)
        if "method" in message and "id" in message:  # a request of the server
            server.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            continue
        params = message.get("params") or {}
        if message.get("method") == "textDocument/publishDiagnostics" and params["uri"] == uri:
            if version is not None and params.get("version") != version:
                continue
            if wanted(params["diagnostics"]):
                return list(params["diagnostics"])
    raise AssertionError(f"no {what}")


def run_of(found: Diagnostics) -> Diagnostics:
    return [d for d in found if d.get("source") == SOURCE]


def has_run(found: Diagnostics) -> bool:
    return bool(run_of(found))


def open_document(server: Server, uri: str, text: str, version: int = 1) -> None:
    document = {"uri": uri, "languageId": "python", "version": version, "text": text}
    server.send(notification("textDocument/didOpen", {"textDocument": document}))


def change(server: Server, uri: str, version: int, *changes: dict[str, Any]) -> None:
    params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": list(changes)}
    server.send(notification("textDocument/didChange", params))


def at(line: int, character: int = 0) -> dict[str, int]:
    return {"line": line, "character": character}


def files_changed(server: Server, *paths: Path) -> None:
    changes = [{"uri": path.as_uri(), "type": 2} for path in paths]
    server.send(notification("workspace/didChangeWatchedFiles", {"changes": changes}))


def pull(server: Server, request_id: int, uri: str) -> dict[str, Any]:
    server.send(request(request_id, "textDocument/diagnostic", {"textDocument": {"uri": uri}}))
    while True:
        message = server.next_message(f"pull {request_id}")
        if "method" in message and "id" in message:
            server.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif message.get("id") == request_id:
            return dict(message["result"])


def open_beside_run(server: Server, workspace: Path) -> tuple[str, dict, dict]:
    """Opens model.py: (its uri, the run's diagnostic, the analysis's IPL001), once both are
    published."""
    uri = (workspace / "model.py").as_uri()
    open_document(server, uri, MODEL)
    found = wait_published(
        server, uri, lambda d: has_run(d) and any(x.get("code") == "IPL001" for x in d), "both"
    )
    [ran] = run_of(found)
    [analysed] = [d for d in found if d.get("code") == "IPL001"]
    return uri, ran, analysed


@pytest.mark.lsp
def test_a_report_present_at_start_shows_next_to_the_analysis(
    server: Server, workspace: Path
) -> None:
    """UTF-16 columns (no encoding offered) after the line's non-ASCII text; the related lines:
    the op that saved the tensor, and the report's own related entry in another file; the
    file that is not open (train.py) gets its finding pushed, checked against the disk."""
    write_report(workspace, [inplace_finding(workspace), retention_finding(workspace)])
    server.initialize()
    train = (workspace / "train.py").as_uri()
    [kept] = wait_published(server, train, has_run, "the run finding of train.py (not open)")
    assert (kept["code"], kept["severity"], kept["source"]) == ("graph-retention", 2, SOURCE)
    line = TRAIN.splitlines()[TOTAL]
    assert kept["range"] == _line_range(TOTAL, line, line.strip(), "utf-16")

    uri, ran, analysed = open_beside_run(server, workspace)
    assert analysed["source"] == "inplace-lsp" and analysed["range"]["start"]["line"] == WRITE
    line = MODEL.splitlines()[WRITE]
    assert ran["range"] == _line_range(WRITE, line, WRITE_TEXT, "utf-16")
    assert ran["range"]["end"]["character"] == 8 + len(WRITE_TEXT) + 1  # 😀: two UTF-16 units
    assert (ran["code"], ran["severity"], ran["message"]) == (
        "inplace-error",
        1,
        "g was saved by sigmoid, then written",
    )
    related = [
        (r["location"]["uri"], r["location"]["range"], r["message"])
        for r in ran["relatedInformation"]
    ]
    saved = MODEL.splitlines()[SAVED]
    assert related == [
        (
            uri,
            _line_range(SAVED, saved, saved.strip(), "utf-16"),
            "saved for backward by SigmoidBackward0",
        ),
        (
            train,
            _line_range(7, TRAIN.splitlines()[7], "loss.backward()", "utf-16"),
            "backward() raised here",
        ),
    ]
    assert not server.popups()
    assert server.stop() == 0


@pytest.mark.lsp
def test_a_run_finding_offers_the_fix_of_its_lines_analysis_finding(
    server: Server, workspace: Path
) -> None:
    """Asked for quick fixes where only the run's diagnostic is (the line's start, before the
    IPL001 span), as the Problems entry of the run finding asks: the analysis's fix of that
    line is offered, for the run's diagnostic too, and applies."""
    write_report(workspace, [inplace_finding(workspace)])
    server.initialize()
    uri, ran, analysed = open_beside_run(server, workspace)
    assert analysed["range"]["start"]["character"] > 8  # after `note = "é😀"; `
    params = {
        "textDocument": {"uri": uri},
        "range": {"start": at(WRITE, 4), "end": at(WRITE, 4)},  # in the indentation
        "context": {"diagnostics": [ran], "only": ["quickfix"]},
    }
    server.send(request(50, "textDocument/codeAction", params))
    offered = server.reply(50)["result"]
    [fix] = [a for a in offered if a["title"].endswith("(IPL001)")]
    assert fix["isPreferred"] is True
    assert [(d["source"], d["code"]) for d in fix["diagnostics"]] == [
        ("inplace-lsp", "IPL001"),
        (SOURCE, "inplace-error"),
    ]
    [edit] = fix["edit"]["changes"][uri]
    line = MODEL.splitlines()[WRITE]
    assert edit["range"]["start"]["line"] == edit["range"]["end"]["line"] == WRITE

    def index(units: int) -> int:  # a UTF-16 column of the line as an index into it
        return len(line.encode("utf-16-le")[: 2 * units].decode("utf-16-le"))

    start, end = (index(edit["range"][e]["character"]) for e in ("start", "end"))
    assert line[:start] + edit["newText"] + line[end:] == '        note = "é😀"; g = g * 0.5'
    assert server.stop() == 0


@pytest.mark.lsp
@pytest.mark.parametrize("watching", [True, False], ids=["watched", "polled"])
def test_a_report_written_while_the_server_runs(
    server: Server, workspace: Path, watching: bool
) -> None:
    """A client that watches files for the server is asked to watch the reports (and tells
    it of the change); for one that does not, the server polls."""
    answer = server.initialize(WATCHING if watching else {})
    assert answer["result"]["capabilities"]
    uri = (workspace / "model.py").as_uri()
    found = server.open_and_wait(uri, MODEL)
    assert not has_run(found)
    registered = [m for m in server.seen if m.get("method") == "client/registerCapability"]
    if watching:
        [registration] = registered[0]["params"]["registrations"]
        globs = [w["globPattern"] for w in registration["registerOptions"]["watchers"]]
        assert "**/.inplace-lsp/last-run*.json" in globs
    else:
        assert not registered
    report = write_report(workspace, [inplace_finding(workspace)])
    written = time.monotonic()
    if watching:
        files_changed(server, report)
    found = wait_published(server, uri, has_run, "the run's diagnostic")
    assert [d["range"]["start"]["line"] for d in run_of(found)] == [WRITE]
    assert any(d.get("code") == "IPL001" for d in found)  # the analysis's stay
    # Watched: at the event (the server polls too, every WATCHED_POLL_S, for watchers that
    # miss the folder); polled: within a poll or two.
    limit = POLL_S if watching else POLL_WAIT_S
    assert time.monotonic() - written < limit
    assert server.stop() == 0


@pytest.mark.lsp
def test_a_new_report_folder_is_looked_in_again_soon(server: Server, workspace: Path) -> None:
    """VS Code's watcher may report a new `.inplace-lsp` folder and miss the report written
    into it at once: the folder's event alone brings the report in, well before a poll."""
    server.initialize(WATCHING)
    uri = (workspace / "model.py").as_uri()
    server.open_and_wait(uri, MODEL)
    registered = [m for m in server.seen if m.get("method") == "client/registerCapability"]
    [registration] = registered[0]["params"]["registrations"]
    globs = [w["globPattern"] for w in registration["registerOptions"]["watchers"]]
    assert "**/.inplace-lsp" in globs
    (workspace / ".inplace-lsp").mkdir()
    files_changed(server, workspace / ".inplace-lsp")  # the folder's event, not the file's
    hover = {"textDocument": {"uri": uri}, "position": at(0)}
    server.send(request(90, "textDocument/hover", hover))
    server.reply(90)  # the event was handled (in order): the folder was still empty then
    written = time.monotonic()
    write_report(workspace, [inplace_finding(workspace)])
    found = wait_published(server, uri, has_run, "the run's diagnostic")
    assert [d["range"]["start"]["line"] for d in run_of(found)] == [WRITE]
    assert time.monotonic() - written < WATCHED_POLL_S / 2
    assert server.stop() == 0


@pytest.mark.lsp
def test_the_finding_follows_its_line_and_goes_when_the_line_changes(
    server: Server, workspace: Path
) -> None:
    write_report(workspace, [inplace_finding(workspace)])
    server.initialize({"textDocument": {"publishDiagnostics": {"versionSupport": True}}})
    uri = (workspace / "model.py").as_uri()
    open_document(server, uri, MODEL)
    found = wait_published(server, uri, has_run, "the run's diagnostic")
    assert [d["range"]["start"]["line"] for d in run_of(found)] == [WRITE]

    # Two lines typed above: the finding and its related line move down by two.
    change(server, uri, 2, {"range": {"start": at(4), "end": at(4)}, "text": "# one\n# two\n"})
    [ran] = run_of(wait_published(server, uri, has_run, "the moved diagnostic", 2))
    assert ran["range"]["start"]["line"] == WRITE + 2
    assert ran["relatedInformation"][0]["location"]["range"]["start"]["line"] == SAVED + 2

    # A line removed above, typing elsewhere in the same change (two content changes).
    change(
        server,
        uri,
        3,
        {"range": {"start": at(4), "end": at(5)}, "text": ""},
        {"range": {"start": at(0, 12), "end": at(0, 12)}, "text": "  # torch"},
    )
    [ran] = run_of(wait_published(server, uri, has_run, "the diagnostic moved back by one", 3))
    assert ran["range"]["start"]["line"] == WRITE + 1

    # The line itself edited: gone, and typing the old text again does not bring it back.
    line = WRITE + 1
    column = 8 + len('note = "é😀"; g *= 0.') + 1  # UTF-16
    change(
        server,
        uri,
        4,
        {"range": {"start": at(line, column), "end": at(line, column + 1)}, "text": "25"},
    )
    found = wait_published(server, uri, lambda d: not has_run(d), "the diagnostic dropped", 4)
    assert any(d.get("code") == "IPL001" for d in found)
    change(
        server,
        uri,
        5,
        {"range": {"start": at(line, column), "end": at(line, column + 2)}, "text": "5"},
    )
    while True:  # the analysis of version 5
        message = server.next_message("the analysis of version 5")
        params = message.get("params") or {}
        if (
            message.get("method") == "textDocument/publishDiagnostics"
            and params.get("version") == 5
        ):
            assert not has_run(params["diagnostics"])
            break
    assert server.stop() == 0


@pytest.mark.lsp
def test_a_change_of_the_whole_text_keeps_the_finding_on_its_line(
    server: Server, workspace: Path
) -> None:
    """A client that sends the whole text: the lines are compared (difflib), lines added
    above move the finding, an indentation change keeps it, an edit of the line drops it."""
    write_report(workspace, [inplace_finding(workspace)])
    server.initialize({"textDocument": {"publishDiagnostics": {"versionSupport": True}}})
    uri = (workspace / "model.py").as_uri()
    open_document(server, uri, MODEL)
    wait_published(server, uri, has_run, "the run's diagnostic")
    moved = "# a\n# b\n# c\n" + MODEL
    change(server, uri, 2, {"text": moved})
    [ran] = run_of(wait_published(server, uri, has_run, "the moved diagnostic", 2))
    assert ran["range"]["start"]["line"] == WRITE + 3
    change(server, uri, 3, {"text": moved.replace(WRITE_TEXT, WRITE_TEXT.replace("0.5", "2.0"))})
    wait_published(server, uri, lambda d: not has_run(d), "the diagnostic dropped", 3)
    assert server.stop() == 0


@pytest.mark.lsp
def test_only_the_newest_run_counts(server: Server, workspace: Path) -> None:
    """torchrun: one file per rank of the newest run; a rank file left by an older run (a
    bigger world size then) is stale."""
    now = time.time()
    stale = inplace_finding(workspace, "[rank 2] from an older run")
    write_report(workspace, [stale], run_id="old", rank=2, mtime=now - 3600)
    for rank in (0, 1):
        finding = inplace_finding(workspace, f"[rank {rank}] g was saved, then written")
        write_report(workspace, [finding], run_id="new", rank=rank, mtime=now - rank)
    server.initialize()
    uri = (workspace / "model.py").as_uri()
    open_document(server, uri, MODEL)
    found = wait_published(server, uri, has_run, "both ranks' finding")
    # one diagnostic for what both ranks found; the stale rank 2 is not among them
    assert [d["message"] for d in run_of(found)] == ["[ranks 0-1] g was saved, then written"]
    assert server.stop() == 0


@pytest.mark.lsp
def test_a_malformed_report_is_ignored_and_the_server_serves_on(
    server: Server, workspace: Path
) -> None:
    report = workspace / ".inplace-lsp" / "last-run.json"
    report.parent.mkdir()
    report.write_text(
        '{"tool": "inplace-lsp run", "format": 1, "findings": [{"sev', encoding="utf-8"
    )
    server.initialize(WATCHING)
    uri = (workspace / "model.py").as_uri()
    found = server.open_and_wait(uri, MODEL)
    assert not has_run(found)
    for broken in ("", "[1, 2]", '{"tool": "inplace-lsp run", "format": 99, "findings": []}'):
        report.write_text(broken, encoding="utf-8")
        files_changed(server, report)
    server.send(
        request(7, "textDocument/hover", {"textDocument": {"uri": uri}, "position": at(WRITE, 10)})
    )
    assert "result" in server.reply(7)
    write_report(workspace, [inplace_finding(workspace)])
    files_changed(server, report)
    wait_published(server, uri, has_run, "the run's diagnostic")
    # Half written again (a run rewriting it): what is shown stays, nothing pops up.
    report.write_text('{"tool": "inplace-lsp run", "form', encoding="utf-8")
    files_changed(server, report)
    server.send(
        request(8, "textDocument/hover", {"textDocument": {"uri": uri}, "position": at(WRITE, 10)})
    )
    assert "result" in server.reply(8)
    shown = [m for m in server.seen if m.get("method") == "textDocument/publishDiagnostics"][-1][
        "params"
    ]["diagnostics"]
    assert has_run(shown)
    assert not server.popups()
    assert server.stop() == 0
    log = server.log.read_text(errors="replace")
    assert "run report" in log and "format 99" in log


@pytest.mark.lsp
def test_a_pulling_client_gets_them_in_its_pulls(server: Server, workspace: Path) -> None:
    """VS Code: pulls (UTF-8 columns here), refreshes. A file not open has its findings
    pushed; once open, they come with its pulls (and the pushed copy goes); a new report
    asks for a refresh."""
    write_report(workspace, [inplace_finding(workspace)])
    server.initialize(PULLING)
    uri = (workspace / "model.py").as_uri()
    wait_published(server, uri, has_run, "the findings of model.py, not open yet")
    open_document(server, uri, MODEL)
    wait_published(server, uri, lambda d: d == [], "the pushed copy removed")
    report = pull(server, 5, uri)
    items = report["items"]
    assert any(d.get("code") == "IPL001" for d in items)
    [ran] = run_of(items)
    assert ran["range"] == _line_range(WRITE, MODEL.splitlines()[WRITE], WRITE_TEXT, "utf-8")
    again = pull(server, 6, uri)
    assert again.get("kind") == "unchanged" or run_of(again["items"]) == [ran]
    files_changed(
        server, write_report(workspace, [inplace_finding(workspace, "the second run")], run_id="2")
    )
    while True:
        message = server.next_message("a refresh")
        if message.get("method") == "workspace/diagnostic/refresh":
            server.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            break
    report = pull(server, 9, uri)
    assert [d["message"] for d in run_of(report["items"])] == ["the second run"]
    assert server.stop() == 0


@pytest.mark.lsp
def test_a_pulling_client_that_cannot_refresh_gets_them_pushed(
    server: Server, workspace: Path
) -> None:
    """Neovim 0.11: pulls, but cannot be asked to pull again; the run findings are pushed,
    on their own (as verify results are), and not in the pulls."""
    server.initialize({"textDocument": {"diagnostic": {}}})
    uri = (workspace / "model.py").as_uri()
    open_document(server, uri, MODEL)
    assert not run_of(pull(server, 4, uri)["items"])
    write_report(workspace, [inplace_finding(workspace)])
    [ran] = wait_published(server, uri, has_run, "the run's diagnostic, pushed (polled)")
    assert ran["range"]["start"]["line"] == WRITE
    items = pull(server, 5, uri)["items"]
    assert not run_of(items) and any(d.get("code") == "IPL001" for d in items)
    change(server, uri, 2, {"range": {"start": at(0), "end": at(0)}, "text": "\n"})
    [ran] = wait_published(server, uri, has_run, "the moved diagnostic, pushed")
    assert ran["range"]["start"]["line"] == WRITE + 1
    assert server.stop() == 0


# ---------------------------------------------------------------- the parts, in this process


def test_reading_reports(tmp_path: Path) -> None:
    folder = str(tmp_path)
    assert newest_run([folder]) == Run(None, (), ())
    write_report(tmp_path, [inplace_finding(tmp_path), {"message": "names no line"}])
    run = newest_run([folder])
    assert run is not None and run.run_id == "run-1"
    [finding] = run.findings
    model = os.path.normcase(str(tmp_path / "model.py"))
    assert finding.mutation == Place(model, WRITE + 1, WRITE_TEXT)
    assert finding.saved_op == "SigmoidBackward0" and finding.at is finding.mutation
    assert is_report(str(tmp_path / ".inplace-lsp" / "last-run-rank3.json"))
    assert not is_report(str(tmp_path / ".inplace-lsp" / "notes.json"))
    (tmp_path / ".inplace-lsp" / "last-run.json").write_text("{", encoding="utf-8")
    assert newest_run([folder]) is None  # being written: keep what is shown
    (tmp_path / ".inplace-lsp" / "last-run.json").unlink()
    assert newest_run([folder]) == Run(None, (), ())


def test_ranks_that_found_the_same_are_one_finding(tmp_path: Path) -> None:
    """Eight ranks of a torchrun job hitting one bug: one diagnostic, not eight."""
    same = "g was saved by sigmoid, then written"
    for rank in (0, 1, 2, 4):
        write_report(tmp_path, [inplace_finding(tmp_path, f"[rank {rank}] {same}")], rank=rank)
    other = {**inplace_finding(tmp_path, f"[rank 3] {same}"), "count": 2}
    other["mutation"] = _place(tmp_path / "model.py", MODEL, SAVED)  # another line
    write_report(tmp_path, [other], rank=3)
    run = newest_run([str(tmp_path)])
    assert run is not None and len(run.files) == 5
    assert sorted((f.message, f.count) for f in run.findings) == [
        (f"[rank 3] {same}", 2),
        (f"[ranks 0-2, 4] {same}", 4),
    ]


def test_changed_lines_of_content_changes() -> None:
    def partial(start: int, end: int, text: str) -> types.TextDocumentContentChangePartial:
        where = types.Range(types.Position(start, 0), types.Position(end, 0))
        return types.TextDocumentContentChangePartial(range=where, text=text)

    assert changed_lines([partial(3, 3, "x")], 10) == (3, 6)
    assert changed_lines([partial(3, 5, "")], 10) == (3, 4)
    assert changed_lines([partial(3, 3, "a\nb\n"), partial(8, 8, "x")], 10) == (3, 3)
    assert changed_lines([types.TextDocumentContentChangeWholeDocument(text="x")], 10) == (0, 0)
    assert changed_lines([partial(50, 99, "x")], 10) == (9, 0)


def _tracked(
    tmp_path: Path, text: str, line: int, disk: str | None = None
) -> tuple[RunFindings, str]:
    """A run finding at 0-based `line` of `text`, the file on disk holding `disk` (`text`)."""
    path = tmp_path / "m.py"
    path.write_text(text if disk is None else disk, encoding="utf-8")
    source = text.splitlines()[line].strip()
    place = Place(str(path), line + 1, source)
    finding = Finding("error", "inplace-error", "m", place, None, None, None)
    findings = RunFindings()
    findings.replace(Run("r", (), (finding,)))
    return findings, file_key(str(path))


def _shown_at(findings: RunFindings, key: str) -> list[int]:
    return [d.range.start.line for d in findings.diagnostics(key, "utf-16")]


def test_tracking_through_edits_of_a_large_file(tmp_path: Path) -> None:
    """Beyond DIFF_LIMIT changed lines the anchor is looked for near its old place; a report
    naming a line that moved since the run finds it there too."""
    body = [f"x{i} = {i}" for i in range(DIFF_LIMIT * 2)]
    text = "\n".join([*body[:3000], "    h += 1", *body[3000:]]) + "\n"
    findings, key = _tracked(tmp_path, text, 3000)
    assert _shown_at(findings, key) == [3000]
    findings.opened(key, "file:///m.py", text)
    new = "\n".join([f"y{i} = {i}" for i in range(10)] + text.split("\n"))  # 10 lines above
    findings.edited(key, new)  # no changes given: the whole text compared
    assert _shown_at(findings, key) == [3010]
    new = new.replace("x", "z")  # every line but the anchor's changed: searched near
    findings.edited(key, new)
    assert _shown_at(findings, key) == [3010]
    indented = new.replace("    h += 1", "        h += 1")
    findings.edited(key, indented)
    assert _shown_at(findings, key) == [3010]
    findings.edited(key, indented.replace("h += 1", "h += 2"))
    assert _shown_at(findings, key) == []
    # Reported at a line that two added lines have moved since: found two lines below.
    findings, key = _tracked(tmp_path, text, 3000, disk="a = 1\nb = 2\n" + text)
    assert _shown_at(findings, key) == [3002]


def test_enter_at_either_end_of_the_line(tmp_path: Path) -> None:
    text = "a = 1\n    h += 1\nb = 2\n"
    findings, key = _tracked(tmp_path, text, 1)
    findings.opened(key, "file:///m.py", text)
    after = "a = 1\n    h += 1\n    \nb = 2\n"
    end = types.Position(1, len("    h += 1"))
    findings.edited(
        key,
        after,
        changes=[types.TextDocumentContentChangePartial(types.Range(end, end), "\n    ")],
    )
    assert _shown_at(findings, key) == [1]
    before = "a = 1\n\n    h += 1\n    \nb = 2\n"
    start = types.Position(1, 0)
    findings.edited(
        key,
        before,
        changes=[types.TextDocumentContentChangePartial(types.Range(start, start), "\n")],
    )
    assert _shown_at(findings, key) == [2]
    findings.closed(key)  # the disk's text again: the line is back at 1
    assert _shown_at(findings, key) == [1]


def test_a_file_closed_unsaved_has_its_finding_where_the_disk_has_it(tmp_path: Path) -> None:
    """The session with a pushing client: not open, pushed alone; open, with the analysis's;
    edited, moved; closed without a save, back at the disk's line."""
    from test_lsp_units import _session

    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    write_report(tmp_path, [inplace_finding(tmp_path)])
    session, client = _session(tmp_path)
    session.load_run_reports()
    uri = (tmp_path / "model.py").as_uri()

    def last() -> list[tuple[str, int]]:
        found = next(d for u, _, d in reversed(client.published) if u == uri)
        return sorted((str(d.code), d.range.start.line) for d in found)

    assert last() == [("inplace-error", WRITE)]
    session.open_document(uri, 1, MODEL)
    assert last() == [("IPL001", WRITE), ("inplace-error", WRITE)]
    session.change_document(uri, 2, "# one more line\n" + MODEL, saved=False)
    assert last() == [("IPL001", WRITE + 1), ("inplace-error", WRITE + 1)]
    session.close_document(uri)
    assert last() == [("inplace-error", WRITE)]
    assert session.debug_info(None)["runReport"]["runId"] == "run-1"


@pytest.mark.lsp
def test_without_folders_the_open_files_folders_are_looked_in(
    server: Server, workspace: Path
) -> None:
    """An editor in single-file mode (Neovim 0.11 outside a project) names no root: the
    report is looked for beside the open file and above it, and polled for."""
    write_report(workspace, [inplace_finding(workspace)])
    params = {"processId": None, "rootUri": None, "capabilities": WATCHING}
    server.send(request(1, "initialize", params))
    assert "result" in server.reply(1)
    server.send(notification("initialized", {}))
    uri = (workspace / "model.py").as_uri()
    open_document(server, uri, MODEL)
    wait_published(server, uri, has_run, "the run's diagnostic")
    write_report(workspace, [inplace_finding(workspace, "the second run")], run_id="2")
    wait_published(
        server,
        uri,
        lambda d: [x["message"] for x in run_of(d)] == ["the second run"],
        "the second run's diagnostic (polled)",
    )
    assert server.stop() == 0


# ---------------------------------------------------------------- notebook cells

NB_CELLS = [
    "import torch\nx = torch.ones(3, requires_grad=True)",
    "%%inplace_detect\ny = torch.sigmoid(x)\ny.mul_(2)\ny.sum().backward()",
    "z = torch.sigmoid(x)\nz.add_(1)\nz.sum().backward()",
]


def _cell_place(text: str, line: int, cell: dict[str, Any]) -> dict[str, Any]:
    """A report's place in a cell the kernel ran: its code's name, the line, the cell."""
    return {
        "path": f"/tmp/ipykernel_4242/{cell['execution_count']}.py",
        "line": line + 1,
        "source": text.splitlines()[line].strip(),
        "cell": cell,
    }


def _cell_finding(text: str, write: int, saved: int, cell: dict[str, Any]) -> dict[str, Any]:
    return {
        "severity": "error",
        "kind": "inplace-error",
        "message": "the sigmoid's output was written in place",
        "mutation": _cell_place(text, write, cell),
        "saved_by": {**_cell_place(text, saved, cell), "op": "SigmoidBackward0"},
        "call_site": None,
        "related": [],
        "count": 1,
    }


def _open_notebook(server: Server, notebook: str, cells: list[str]) -> list[str]:
    uris = [f"vscode-notebook-cell:{notebook[len('file:') :]}#W{i}sZmlsZQ%3D%3D" for i in range(3)]
    params = {
        "notebookDocument": {
            "uri": notebook,
            "notebookType": "jupyter-notebook",
            "version": 1,
            "cells": [{"kind": 2, "document": uri} for uri in uris],
        },
        "cellTextDocuments": [
            {"uri": uri, "languageId": "python", "version": 1, "text": text}
            for uri, text in zip(uris, cells, strict=True)
        ],
    }
    server.send(notification("notebookDocument/didOpen", params))
    return uris


def _edit_cell(server: Server, notebook: str, cell: str, version: int, *edits: dict) -> None:
    params = {
        "notebookDocument": {"uri": notebook, "version": version},
        "change": {
            "cells": {
                "textContent": [
                    {"document": {"uri": cell, "version": version}, "changes": list(edits)}
                ]
            }
        },
    }
    server.send(notification("notebookDocument/didChange", params))


@pytest.mark.lsp
def test_a_kernels_finding_shows_on_its_notebook_cell_and_follows_its_edits(
    server: Server, workspace: Path
) -> None:
    """`%inplace_detect` in a kernel reports lines of cells: the one the front end named (VS
    Code's Jupyter extension gives the kernel the cell's URI) and, without an id, the cell of
    that notebook whose text ran. Each shows on its cell's line, moves with the lines added
    above it and goes when its line is edited; nothing is published for the kernel's names."""
    notebook_path = workspace / "lessons.ipynb"
    notebook = notebook_path.as_uri()
    server.initialize(WATCHING)
    cells = _open_notebook(server, notebook, NB_CELLS)
    found = wait_published(server, cells[1], lambda d: True, "the cell's analysis")
    assert not has_run(found)
    by_id = {"id": cells[1], "notebook": None, "execution_count": 2, "text": NB_CELLS[1]}
    by_text = {
        "id": None,
        "notebook": os.path.normcase(str(notebook_path)),
        "execution_count": 3,
        "text": NB_CELLS[2],
    }
    report = write_report(
        workspace,
        [_cell_finding(NB_CELLS[1], 2, 1, by_id), _cell_finding(NB_CELLS[2], 1, 0, by_text)],
    )
    files_changed(server, report)
    found = wait_published(server, cells[1], has_run, "the finding in the cell the kernel named")
    [ran] = run_of(found)
    assert ran["range"]["start"]["line"] == 2 and ran["code"] == "inplace-error"
    [related] = ran["relatedInformation"]
    assert related["location"]["uri"] == cells[1]
    assert related["location"]["range"]["start"]["line"] == 1
    found = wait_published(server, cells[2], has_run, "the finding in the cell of that text")
    assert [d["range"]["start"]["line"] for d in run_of(found)] == [1]

    _edit_cell(
        server, notebook, cells[1], 2, {"range": {"start": at(1), "end": at(1)}, "text": "w = 1\n"}
    )
    found = wait_published(server, cells[1], has_run, "the finding moved down a line", 2)
    assert [d["range"]["start"]["line"] for d in run_of(found)] == [3]
    _edit_cell(
        server,
        notebook,
        cells[1],
        3,
        {"range": {"start": at(3, 0), "end": at(3, 9)}, "text": "y = y * 2"},
    )
    found = wait_published(server, cells[1], lambda d: not has_run(d), "the finding gone", 3)
    published = [
        m["params"]["uri"]
        for m in server.seen
        if m.get("method") == "textDocument/publishDiagnostics"
    ]
    assert not any("ipykernel" in uri for uri in published)
    assert server.stop() == 0
