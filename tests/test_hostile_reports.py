"""Run reports and the files they name, as a cloned repository can commit them: the server
reads only regular files, only inside the project, only up to a size, and serves on.

Each case runs the real server over stdio (test_protocol's `Server`), with a report in the
workspace before it starts, then opens a file with a bug: the analysis's diagnostic, a hover
and the reply to `shutdown` must all come (on the old code `/dev/stdin` and the FIFO hung the
server, `/dev/zero` grew it to gigabytes, and files outside the project got diagnostics)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_lsp_run_report import (
    MODEL,
    SOURCE,
    WRITE,
    _place,
    inplace_finding,
    run_of,
    write_report,
)
from test_protocol import Server, request

from inplace_lsp import files, report
from inplace_lsp.lsp.run_findings import READ_BUDGET, RunFindings
from inplace_lsp.report import Finding, Place, Run

pytestmark = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev files: POSIX")


def _served(tmp_path: Path) -> list[dict[str, Any]]:
    """Starts the server on `tmp_path`, opens model.py and returns every diagnostics
    notification it published until `shutdown` was answered (which it must be)."""
    server = Server(tmp_path)
    try:
        server.initialize({})
        uri = (tmp_path / "model.py").as_uri()
        found = server.open_and_wait(uri, MODEL)
        assert any(d.get("code") == "IPL001" for d in found)
        hover = {"textDocument": {"uri": uri}, "position": {"line": WRITE, "character": 30}}
        server.send(request(7, "textDocument/hover", hover))
        assert "result" in server.reply(7)
        # The debug info waits for the report being read: what it publishes is out by then.
        command = {"command": "inplace-lsp.showDebugInfo", "arguments": []}
        server.send(request(8, "workspace/executeCommand", command))
        assert "result" in server.reply(8)
        assert server.stop() == 0
        return [
            m["params"] for m in server.seen if m.get("method") == "textDocument/publishDiagnostics"
        ]
    finally:
        server.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / ".inplace-lsp").mkdir()
    return tmp_path


@pytest.mark.lsp
@pytest.mark.parametrize("target", ["/dev/stdin", "/dev/zero"])
def test_a_report_that_links_to_a_device_is_not_read(workspace: Path, target: str) -> None:
    """`.inplace-lsp/last-run.json` committed as a symlink to the server's own input, or to an
    endless file: not opened for reading, and the server serves on."""
    if not os.path.exists(target):
        pytest.skip(f"no {target} here")
    (workspace / ".inplace-lsp" / "last-run.json").symlink_to(target)
    published = _served(workspace)
    assert not any(run_of(p["diagnostics"]) for p in published)
    assert "not read" in (workspace / "server.log").read_text("utf-8", "replace")


@pytest.mark.lsp
def test_a_fifo_a_finding_names_is_not_opened_for_reading(workspace: Path) -> None:
    fifo = workspace / "pipe.py"
    os.mkfifo(fifo)
    finding = inplace_finding(workspace)
    finding["mutation"] = {"path": str(fifo), "line": 1, "source": "x += 1"}
    write_report(workspace, [finding])
    published = _served(workspace)
    assert not any(p["uri"] == fifo.as_uri() for p in published)


@pytest.mark.lsp
def test_a_report_larger_than_the_limit_is_not_read(workspace: Path) -> None:
    path = write_report(workspace, [inplace_finding(workspace)])
    with path.open("r+b") as stream:  # sparse: 200 MB that take no disk
        stream.truncate(200 << 20)
    published = _served(workspace)
    assert not any(run_of(p["diagnostics"]) for p in published)
    assert "more than" in (workspace / "server.log").read_text("utf-8", "replace")


@pytest.mark.lsp
def test_findings_outside_the_project_are_not_shown(workspace: Path, tmp_path_factory: Any) -> None:
    """A finding naming a file outside the project (absolute, by `..`, or through a symlink in
    it) gets no diagnostic, and its related lines none either; the project's own finding
    shows."""
    outside = tmp_path_factory.mktemp("elsewhere") / "secret.py"
    outside.write_text("password = 1\nx += 1\n", encoding="utf-8")
    (workspace / "link.py").symlink_to(outside)
    escapes = [
        str(outside),
        str(workspace / ".." / outside.parent.name / "secret.py"),
        str(workspace / "link.py"),
    ]
    findings: list[dict[str, Any]] = [inplace_finding(workspace)]
    for path in escapes:
        bad = inplace_finding(workspace, message=f"names {path}")
        bad["mutation"] = {"path": path, "line": 2, "source": "x += 1"}
        bad["saved_by"] = {"path": path, "line": 1, "source": "password = 1", "op": "X"}
        bad["related"] = []
        findings.append(bad)
    write_report(workspace, findings)
    published = _served(workspace)
    shown = {p["uri"] for p in published if run_of(p["diagnostics"])}
    assert shown == {(workspace / "model.py").as_uri()}, shown
    model = [p for p in published if p["uri"] == (workspace / "model.py").as_uri()]
    assert [d["range"]["start"]["line"] for d in run_of(model[-1]["diagnostics"])] == [WRITE]
    related = [
        r["location"]["uri"]
        for p in published
        for d in run_of(p["diagnostics"])
        for r in d.get("relatedInformation") or []
    ]
    assert not any("secret" in uri or "link.py" in uri for uri in related)


def test_read_regular_refuses_what_is_not_a_regular_file_in_the_folder(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    assert files.read_regular(str(tmp_path / "a.py"), 100, str(tmp_path)) == b"x = 1\n"
    with pytest.raises(files.Refused, match="more than 3"):
        files.read_regular(str(tmp_path / "a.py"), 3)
    with pytest.raises(files.Refused, match="outside"):
        files.read_regular(str(tmp_path / "a.py"), 100, str(tmp_path / "sub"))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(files.Refused, match="not a regular file"):
        files.read_regular(str(tmp_path / "fifo"), 100)
    with pytest.raises(files.Refused, match="not a regular file"):
        files.read_regular(str(tmp_path), 100)


def test_the_files_one_report_names_are_read_within_a_budget_and_unmatched_ones_not_kept(
    tmp_path: Path,
) -> None:
    """150 findings, each naming another 16 MB file whose line does not hold the run's text:
    the reads stop at READ_BUDGET and none of the lines stay."""
    import gc
    import weakref

    class Lines(list[str]):  # a list that a weak reference can follow
        pass

    read: list[weakref.ref[Lines]] = []

    def reader(path: str) -> list[str]:
        lines = Lines(["y = 0\n"] * ((16 << 20) // 6))
        read.append(weakref.ref(lines))
        return lines

    def finding(index: int) -> Finding:
        place = Place(str(tmp_path / f"f{index}.py"), 1, "x += 1")
        return Finding("error", "inplace-error", "m", place, None, None, None)

    findings = RunFindings(reader)
    findings.replace(Run("r", ("report",), tuple(finding(i) for i in range(150))))
    assert 0 < len(read) <= READ_BUDGET // (16 << 20) + 1
    gc.collect()
    assert findings.shown_in() == set() and not findings._files
    assert all(lines() is None for lines in read)  # no file's lines are held


@pytest.mark.parametrize(
    "text",
    [
        "x = 0\r\n" * 40000 + "y += 1",  # a \r\n at every piece's edge
        ("a\rb\n\u2028c\f\n" * 30000) + "\n",  # lone \r, U+2028 and form feeds; a final break
        "z" * 200000 + "\n" + "w\n" * 70000,  # a line longer than a piece
        "q\r" * 100000,  # no \n at all: one piece
        "",
    ],
    ids=["crlf", "mixed", "long-line", "cr-only", "empty"],
)
def test_the_gentle_reader_gives_the_lines_split_lines_gives(tmp_path: Path, text: str) -> None:
    """A file the report-reading thread splits in pieces (pausing between two, so the event
    loop's thread gets the GIL) has the lines, line for line, that split_lines gives."""
    from inplace_lsp.analysis.lines import split_lines
    from inplace_lsp.lsp import run_findings

    path = tmp_path / "big.py"
    path.write_bytes(text.encode("utf-8"))
    decoded = path.read_bytes().decode("utf-8")
    assert run_findings.read_gently(str(path)) == split_lines(decoded)
    assert run_findings.read_lines(str(path)) == split_lines(decoded)


def test_the_thread_frees_the_lines_of_files_where_nothing_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the reading thread hands to the event loop holds the lines only of files where a
    finding's line still holds the run's text: an unmatched file is given as read with no
    lines (emptied in the thread, not freed on the loop), and nothing is shown there."""
    from inplace_lsp.lsp import run_findings

    matched = tmp_path / "matched.py"
    matched.write_text("x = 0\n" * 100000 + "y += 1\n", encoding="utf-8")
    unmatched = tmp_path / "unmatched.py"
    unmatched.write_text("x = 0\n" * 100000 + "z = 2\n", encoding="utf-8")
    run = Run(
        "r",
        ("report",),
        tuple(
            Finding(
                "error", "inplace-error", "m", Place(str(path), 100001, "y += 1"), None, None, None
            )
            for path in (matched, unmatched)
        ),
    )
    emptied: list[int] = []
    real = run_findings.release

    def release(lines: list[str]) -> None:
        emptied.append(len(lines))
        real(lines)
        assert lines == []

    monkeypatch.setattr(run_findings, "release", release)
    read = run_findings.prefetch(run, run_findings.read_gently, gentle=True)
    assert emptied == [100002]
    assert read[str(unmatched)] == () and len(read[str(matched)] or ()) == 100002
    findings = RunFindings()
    assert findings.replace(run, read) == {run_findings.file_key(str(matched))}


def test_a_report_reader_drops_places_outside_its_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".inplace-lsp").mkdir(parents=True)
    inside = _place(project / "m.py", "x = 1\nx += 1\n", 1)
    outside = {**inside, "path": str(tmp_path / "other.py")}
    cell = {**outside, "path": "/tmp/ipykernel_1/2.py", "cell": {"text": "x += 1"}}
    data = {"tool": report.TOOL, "format": report.FORMAT, "run_id": "r"}
    data["findings"] = [
        {"message": "in", "mutation": inside},
        {"message": "out", "mutation": outside},
        {"message": "cell", "mutation": cell},
    ]
    path = project / ".inplace-lsp" / "last-run.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    read = report.read(str(path))
    assert read is not None
    assert [f.message for f in read.findings] == ["in", "cell"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"tool": "inplace-lsp run", "format": 1, "findings": ' + "[" * 1_000_000,
            "nested too deeply to be a report",
        ),
        ("[" * 1_000_000, "not a report of inplace-lsp run"),  # no object: not read further
    ],
    ids=["findings", "the whole"],
)
def test_a_report_nested_a_million_deep_is_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, said: str
) -> None:
    path = tmp_path / ".inplace-lsp" / "last-run.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    assert report.read(str(path)) is None
    assert [r.getMessage() for r in caplog.records] == [f"run report {path}: {said}"]


def test_the_files_a_report_names_are_read_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a report's files are read (here: a read held until the test lets it go), the
    event loop serves on; the findings are applied when the read is done."""
    import asyncio
    import threading

    from test_lsp_units import _session

    from inplace_lsp.lsp import run_findings

    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    write_report(tmp_path, [inplace_finding(tmp_path)])
    release = threading.Event()
    reading = threading.Event()
    real = run_findings.read_lines

    def slow(path: str, gentle: bool = False) -> list[str] | None:
        reading.set()
        assert release.wait(30)
        return real(path, gentle)

    monkeypatch.setattr(run_findings, "read_lines", slow)

    async def scenario() -> list[str]:
        session, client = _session(tmp_path)
        session.load_run_reports()  # returns at once: the read runs in a thread
        assert await asyncio.to_thread(reading.wait, 30)
        ticks = 0
        for _ in range(5):  # the loop runs other work while the read is held
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 5 and not client.published
        release.set()
        for _ in range(300):
            if client.published:
                break
            await asyncio.sleep(0.01)
        return [u for u, _, found in client.published if any(d.source == SOURCE for d in found)]

    assert asyncio.run(scenario()) == [(tmp_path / "model.py").as_uri()]


def test_a_changed_file_with_run_findings_is_read_again_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file with a run finding that changes on disk (the editor's watcher says so) is read
    again, and compared, in a thread (here held until the test lets it go, while the loop
    serves on; for a 2 MB file this took the loop 115-160 ms); then its finding follows its
    line (two lines added above it)."""
    import asyncio
    import threading

    from test_lsp_units import _session

    from inplace_lsp.lsp import run_findings

    model = tmp_path / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    write_report(tmp_path, [inplace_finding(tmp_path)])
    hold = threading.Event()
    release = threading.Event()
    reading = threading.Event()
    readers: list[threading.Thread] = []
    real = run_findings.read_lines

    def held(path: str, gentle: bool = False) -> list[str] | None:
        readers.append(threading.current_thread())
        if hold.is_set():
            reading.set()
            assert release.wait(30)
        return real(path, gentle)

    monkeypatch.setattr(run_findings, "read_lines", held)

    async def lines_shown(client: Any, count: int) -> list[int]:
        for _ in range(300):
            shown = [
                d.range.start.line
                for u, _, found in client.published[count:]
                for d in found
                if d.source == SOURCE and u == model.as_uri()
            ]
            if shown:
                return shown
            await asyncio.sleep(0.01)
        return []

    async def scenario() -> tuple[list[int], list[int]]:
        session, client = _session(tmp_path)
        session.load_run_reports()
        before = await lines_shown(client, 0)
        hold.set()
        model.write_text("# one\n# two\n" + MODEL, encoding="utf-8")
        published = len(client.published)
        session.files_changed([model.as_uri()])  # returns at once: the read runs in a thread
        assert await asyncio.to_thread(reading.wait, 30)
        for _ in range(5):  # the loop runs other work while the read is held
            await asyncio.sleep(0.01)
        assert len(client.published) == published
        release.set()
        return before, await lines_shown(client, published)

    assert asyncio.run(scenario()) == ([WRITE], [WRITE + 2])
    assert readers and threading.main_thread() not in readers


@pytest.mark.parametrize(
    "edit",
    [
        lambda lines: ["# new"] + lines,
        lambda lines: lines[:3] + lines[5:],
        lambda lines: lines[:-1] + ["  " + lines[-1] + "  "],
        lambda lines: [line + "  " for line in lines],
        lambda lines: lines[:10] + ["x = 1"] * 5 + lines[10:],
        lambda lines: [],
        lambda lines: lines,
    ],
    ids=[
        "added-above",
        "removed-above",
        "spaces-at-end",
        "spaces-everywhere",
        "added-between",
        "emptied",
        "same",
    ],
)
def test_a_thread_s_reread_moves_the_anchors_as_a_read_on_the_loop_does(
    tmp_path: Path, edit: Any
) -> None:
    """The lines a thread compared (`reread`: the unchanged start and end found there) move
    a file's anchors exactly as comparing on the event loop does."""
    from inplace_lsp.lsp import run_findings

    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    write_report(tmp_path, [inplace_finding(tmp_path)])
    run = report.newest_run([str(tmp_path)])
    assert run is not None
    on_loop, in_thread = RunFindings(), RunFindings()
    on_loop.replace(run)
    in_thread.replace(run)
    key = run_findings.file_key(str(path))
    lines = MODEL.split("\n")
    path.write_text("\n".join(edit(lines)), encoding="utf-8")
    old = in_thread.lines_of(key)
    assert old is not None
    expected = on_loop.disk_changed(key)
    assert in_thread.disk_changed(key, run_findings.reread(key, old)) == expected
    assert in_thread.diagnostics(key, "utf-16") == on_loop.diagnostics(key, "utf-16")


# ------------------------------------------------------ floods and malformed findings (issue 38)

# A member of a finding that is not of its kind: the finding is skipped, the others are read.
MALFORMED = {
    "related: 7": {"related": 7},
    "related: a string": {"related": "x"},
    "related item: a list": {"related": [[1, 2]]},
    "mutation: a list": {"mutation": [1]},
    "saved_by: a string": {"saved_by": "x"},
    "call_site: 3": {"call_site": 3},
    "kind: a list": {"kind": ["x"]},
    "line: a float": {"mutation": {"path": "/x.py", "line": 1.5, "source": "x"}},
    "path with NUL": {"mutation": {"path": "/x\0.py", "line": 1, "source": "x"}},
    "message: 5": {"message": 5},
}


@pytest.mark.parametrize("bad", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_finding_is_skipped_with_one_warning(
    workspace: Path, caplog: pytest.LogCaptureFixture, bad: dict[str, Any]
) -> None:
    """`"related": 7` beside a good finding raised a TypeError: no finding of the report was
    shown, and the last run's stayed."""
    path = write_report(workspace, [{**inplace_finding(workspace, "bad"), **bad},
                                    inplace_finding(workspace, "good")])  # fmt: skip
    read = report.read(str(path))
    assert read is not None
    messages = [f.message for f in read.findings]
    assert messages[-1] == "good" and len(messages) <= 2, messages
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == (2 - len(messages)), warned
    assert all("skipped 1 findings" in w for w in warned), warned


def _flood(workspace: Path, count: int, message: str = "flood {}") -> list[dict[str, Any]]:
    """`count` findings on the write of model.py, with messages that differ (none merge)."""
    place = inplace_finding(workspace)["mutation"]
    return [{"message": message.format(n), "mutation": place} for n in range(count)]


def test_a_report_is_read_up_to_its_caps_and_says_so_once(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Six files with 300 findings each, then 20,000 on one line (the probe committed
    100,000): a file shows at most MAX_FILE_FINDINGS, a run MAX_FINDINGS, texts are cut at
    MAX_TEXT; a run of several reports is held to the same caps."""
    findings: list[dict[str, Any]] = []
    for number in range(6):
        path = str(workspace / f"other{number}.py")
        for line in range(1, 301):
            place = {"path": path, "line": line, "source": f"y{line} += 1"}
            findings.append({"message": f"other {number} {line}", "mutation": place})
    findings[0]["message"] += "x" * 10_000
    findings += _flood(workspace, 20_000)
    path = write_report(workspace, findings)
    read = report.read(str(path))
    assert read is not None
    assert len(read.findings) == report.MAX_FINDINGS
    per_file: dict[str, int] = {}
    for finding in read.findings:
        assert finding.at is not None
        per_file[finding.at.path] = per_file.get(finding.at.path, 0) + 1
    assert max(per_file.values()) == report.MAX_FILE_FINDINGS
    assert len(read.findings[0].message) == report.MAX_TEXT
    assert [r.getMessage() for r in caplog.records] == [
        f"run report {path}: {len(findings) - report.MAX_FINDINGS} more findings not shown "
        f"(a run shows at most {report.MAX_FINDINGS} findings, {report.MAX_FILE_FINDINGS} "
        "in a file)"
    ]
    caplog.clear()
    path.unlink()
    for rank in range(3):  # a torchrun job: each rank's report within the caps, not together
        write_report(workspace, _flood(workspace, 150, f"rank {rank} {{}}"), rank=rank)
    run = report.newest_run([str(workspace)])
    assert run is not None and len(run.findings) == report.MAX_FILE_FINDINGS
    assert [r.getMessage() for r in caplog.records] == [
        f"run run-1: {3 * 150 - report.MAX_FILE_FINDINGS} more findings of its 3 reports not "
        f"shown (a run shows at most {report.MAX_FINDINGS} findings, "
        f"{report.MAX_FILE_FINDINGS} in a file)"
    ]


def test_the_diagnostics_of_a_run_are_bounded_in_bytes(workspace: Path) -> None:
    """Long messages and long related paths: what a run shows stays within MAX_SHOWN_BYTES."""
    deep = workspace / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    findings = []
    for n in range(report.MAX_FILE_FINDINGS):
        finding = inplace_finding(workspace, f"{n} " + "é" * 4_100)
        target = deep / f"f{n}.py"
        target.write_text("x += 1\n", encoding="utf-8")
        place = {"path": str(target), "line": 1, "source": "x += 1", "message": "m" * 1_000}
        finding["related"] = [place] * 20
        findings.append(finding)
    read = report.read(str(write_report(workspace, findings)))
    assert read is not None and 0 < len(read.findings) < report.MAX_FILE_FINDINGS
    assert all(len(f.related) == report.MAX_RELATED for f in read.findings)
    shown = sum(len(json.dumps([f.message, *(m for _, m in f.related)])) for f in read.findings)
    assert shown <= report.MAX_SHOWN_BYTES


@pytest.mark.lsp
def test_a_flooded_report_is_published_in_bounded_messages(workspace: Path) -> None:
    """20,000 findings on one line of the open file, one of them malformed: the server shows
    the file's first MAX_FILE_FINDINGS (the old code published all of them in one message of
    several MB), answers the hover, and says once that it left the rest out."""
    findings = _flood(workspace, 20_000)
    findings[5]["related"] = 7
    write_report(workspace, findings)
    published = _served(workspace)
    model = (workspace / "model.py").as_uri()
    shown = [run_of(p["diagnostics"]) for p in published if p["uri"] == model]
    assert shown and len(shown[-1]) == report.MAX_FILE_FINDINGS, [len(s) for s in shown]
    assert "flood 5" not in {d["message"] for d in shown[-1]}
    assert max(len(json.dumps(p)) for p in published) < 1 << 20
    log = (workspace / "server.log").read_text("utf-8", "replace")
    assert log.count("more findings not shown") == 1 and log.count("skipped 1 findings") == 1
