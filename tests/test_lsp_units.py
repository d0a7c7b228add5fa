"""The language server's parts in this process, without a client: position conversion, notebook
layout, the analysis scheduler (coalescing, version order), the session's publishing rules,
code actions with and without lazy resolve, hover, settings and debug info."""

from __future__ import annotations

import asyncio
import gc
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
from generated import with_slow_function
from lsprotocol import types

from inplace_lsp import fixes
from inplace_lsp.analysis.engine import CollectorPause, DocumentResult
from inplace_lsp.analysis.findings import Finding, FixRecipe, Related, Severity, Span
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.lsp import actions, convert, hover
from inplace_lsp.lsp import scheduler as scheduler_mod
from inplace_lsp.lsp.diagnostics import build_view
from inplace_lsp.lsp.scheduler import Scheduler, Snapshot
from inplace_lsp.lsp.session import Features, Session, untitled_path, uri_to_path
from inplace_lsp.lsp.settings import SettingsStore, unwrap
from inplace_lsp.notebook import Layout, mask_magics, notebook_program
from inplace_lsp.verify.harness import error_result

# ---------------------------------------------------------------- convert

LINE = 'x = "é😀中"; h += 1'  # é: 2 UTF-8 bytes; 😀: 4 bytes, 2 UTF-16 units; 中: 3 bytes
FLAGGED = LINE.index("h")


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (None, "utf-16"),
        ([], "utf-16"),
        (["utf-16"], "utf-16"),
        (["utf-8", "utf-16"], "utf-8"),
        (["utf-16", "utf-8"], "utf-8"),  # preferred whenever offered
        (["utf-32", "utf-16"], "utf-16"),
        (["utf-32"], "utf-32"),
        (["latin-1"], "utf-16"),
    ],
)
def test_choose_encoding(offered: list[str] | None, chosen: str) -> None:
    assert convert.choose_encoding(offered) == chosen


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("utf-32", FLAGGED), ("utf-16", FLAGGED + 1), ("utf-8", FLAGGED + 1 + 3 + 2)],
)
def test_columns_after_astral_and_non_ascii_text(encoding: str, expected: int) -> None:
    assert convert.to_units(LINE, FLAGGED, encoding) == expected
    assert convert.from_units(LINE, expected, encoding) == FLAGGED
    assert convert.to_units(LINE, 0, encoding) == 0
    assert convert.to_units(LINE, len(LINE) + 3, encoding) == convert.units(LINE, encoding) + 3


def test_offsets_inside_a_character_and_past_the_end() -> None:
    emoji = LINE.index("😀")
    assert convert.from_units(LINE, emoji + 1, "utf-16") == emoji  # between the surrogates
    assert convert.from_units(LINE, emoji + 1 + 2, "utf-8") == emoji  # a continuation byte
    assert convert.from_units(LINE, emoji + 2, "utf-16") == emoji + 1
    assert convert.from_units(LINE, 10_000, "utf-16") == len(LINE)
    assert convert.from_units("abc", 10, "utf-8") == 3


def test_ranges_and_points_round_trip() -> None:
    lines = ["import torch", LINE]
    span = Span(2, FLAGGED, 2, FLAGGED + 6)
    for encoding in ("utf-8", "utf-16", "utf-32"):
        lsp_range = convert.to_range(span, lines, encoding)
        assert lsp_range.start.line == 1
        assert convert.to_span(lines, lsp_range, encoding) == span


def test_split_lines_as_lsp_and_ast_do() -> None:
    assert split_lines("a\r\nb\rc\nd\u2028e\x0cf\n") == ["a", "b", "c", "d\u2028e\x0cf", ""]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nh += 1\nb\n", "a\nh = h + 1\nb\n"),
        ("é😀\nx\n", "é😀\ny\n"),
        ("a\r\nb\r\n", "a\r\nc\r\nb\r\n"),
        ("a\r\nb", "a\nb"),
        ("abc", "abc!"),
        ("abc", ""),
    ],
)
def test_minimal_change_turns_old_into_new(old: str, new: str) -> None:
    change = convert.minimal_change(old, new)
    assert change is not None
    assert _apply(old, [change]) == new
    assert convert.minimal_change(new, new) is None


def test_minimal_change_touches_only_the_changed_lines() -> None:
    old = "".join(f"line {i}\n" for i in range(100))
    new = old.replace("line 50\n", "line fifty\n")
    change = convert.minimal_change(old, new)
    assert change is not None
    assert change.span.line == change.span.end_line == 51


def _apply(text: str, changes: list[Any]) -> str:
    """Applies code-point changes (sorted from the end) to a text split as LSP splits it."""
    import re

    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    for change in sorted(changes, key=lambda c: (c.span.line, c.span.col), reverse=True):
        start = starts[change.span.line - 1] + change.span.col
        end = starts[change.span.end_line - 1] + change.span.end_col
        text = text[:start] + change.new_text + text[end:]
    return text


def test_diagnostic_fields() -> None:
    finding = _finding("IPL001", Span(1, 4, 1, 10))
    diagnostic = convert.diagnostic(finding, ["abc é😀 h += 1"], "utf-16", data={"k": 1})
    assert diagnostic.code == "IPL001"
    assert diagnostic.source == "inplace-lsp"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.code_description is not None
    href = diagnostic.code_description.href
    assert href.startswith("file://") and href.endswith("/inplace_lsp/data/rules.md#ipl001")
    # The link leads to the rules page, installed with the package, and to the rule's anchor.
    page = Path(url2pathname(urlparse(href).path))
    assert '<a id="ipl001"></a>' in page.read_text(encoding="utf-8")
    assert diagnostic.related_information is None
    assert diagnostic.data == {"k": 1}
    assert diagnostic.range.end.character == 11  # the emoji counts twice in UTF-16


# ---------------------------------------------------------------- notebook layout


def test_magics_are_masked_in_place() -> None:
    text = "%matplotlib inline\n  !pip install x\nx = 1  # 50% off\n"
    masked = mask_magics(text)
    assert masked == "#matplotlib inline\n  #pip install x\nx = 1  # 50% off\n"
    assert mask_magics("%%bash\nls -l\n") == "#%%bash\n#ls -l\n"
    assert mask_magics("%%time\nx = 1\n") == "#%time\nx = 1\n"


def test_notebook_program_maps_lines_to_cells() -> None:
    text, layout = notebook_program(
        [("c0", 1, "import torch"), ("c1", 3, ""), ("c2", 2, "a = 1\nb = 2\n")]
    )
    assert text == "import torch\na = 1\nb = 2\n"
    assert [(c.uri, c.first_line, c.line_count) for c in layout.cells] == [
        ("c0", 1, 1),
        ("c1", 2, 0),
        ("c2", 2, 2),
    ]
    placed = layout.to_cell(Span(3, 0, 3, 5))
    assert placed is not None and placed[0].uri == "c2" and placed[1] == Span(2, 0, 2, 5)
    assert layout.to_cell(Span(1, 0, 2, 1)) is None  # across two cells
    assert layout.to_cell(Span(3, 0, 4, 0)) is not None  # up to the cell's end
    assert layout.to_program("c2", Span(2, 0, 2, 5)) == Span(3, 0, 3, 5)
    assert layout.is_notebook and not Layout.single("f", 1).is_notebook


# ---------------------------------------------------------------- scheduler


class Blocking:
    """An analysis whose first update waits for `release`; records every text it analyses."""

    def __init__(self, release: threading.Event, texts: list[str]) -> None:
        self.release = release
        self.texts = texts

    def update(self, text: str) -> DocumentResult:
        self.texts.append(text)
        if len(self.texts) == 1:
            assert self.release.wait(10)
        return DocumentResult([_finding("IPL001", Span(1, 0, 1, 1))], [], 1)


def test_burst_is_coalesced_to_the_newest_version() -> None:
    release, texts = threading.Event(), []
    published: list[Snapshot] = []
    done = threading.Event()

    def publish(snapshot: Snapshot) -> None:
        published.append(snapshot)
        if snapshot.version == 100:
            done.set()

    scheduler = Scheduler(publish, analysis_factory=lambda p, w: Blocking(release, texts))
    scheduler.open("a", None, 1, "v1")
    for version in range(2, 101):
        scheduler.submit("a", version, f"v{version}")
    scheduler.submit("a", 50, "late")  # an older version arriving late is dropped
    newest = scheduler.latest("a")
    release.set()
    assert done.wait(10)
    assert texts == ["v1", "v100"]
    assert [s.version for s in published] == [100]  # v1 was overtaken: never published
    snapshot = newest.result(10)
    assert snapshot is not None and snapshot.version == 100
    assert scheduler.analyses == 2
    scheduler.shutdown()


def test_a_closed_document_is_not_published() -> None:
    release, texts = threading.Event(), []
    published: list[Snapshot] = []
    scheduler = Scheduler(published.append, analysis_factory=lambda p, w: Blocking(release, texts))
    scheduler.open("a", None, 1, "v1")
    waiting = scheduler.latest("a")
    scheduler.close("a")
    release.set()
    assert waiting.result(10) is None
    scheduler.shutdown()
    assert published == []


def test_debounce_waits_for_a_pause() -> None:
    texts: list[str] = []
    done = threading.Event()

    class Counting:
        def update(self, text: str) -> DocumentResult:
            texts.append(text)
            return DocumentResult([], [], 1)

    def publish(snapshot: Snapshot) -> None:
        if snapshot.version == 5:
            done.set()

    scheduler = Scheduler(publish, analysis_factory=lambda p, w: Counting())
    scheduler.open("a", None, 1, "v1")
    time.sleep(0.1)
    started = time.monotonic()
    for version in range(2, 6):
        scheduler.submit("a", version, f"v{version}", debounce_s=0.15)
        time.sleep(0.02)
    assert done.wait(10)
    assert time.monotonic() - started >= 0.15 + 3 * 0.02
    assert texts == ["v1", "v5"]
    scheduler.shutdown()


class Inline(Executor):
    """Runs submitted work at once, in the caller's thread: deterministic tests."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_only_the_most_recent_documents_keep_their_analysis_state() -> None:
    scheduler = Scheduler(lambda s: None, executor=Inline(), max_live=2)
    for key in "abc":
        scheduler.open(key, None, 1, "import torch\n")
    assert scheduler.live_count() == 2
    scheduler.submit("a", 2, "import torch\nx = 1\n")  # comes back with a fresh analysis
    snapshot = scheduler.snapshot("a")
    assert snapshot is not None and snapshot.version == 2
    assert scheduler.live_count() == 2


def test_free_memory_goes_back_to_the_system_every_trim_every_analyses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """glibc keeps what an analysis freed inside its heap: a day of typing into a 4,128-line
    file grew the server 4-5 MB per 1,000 keystrokes (benchmarks/edit_memory.py --day)."""
    trims: list[int] = []
    scheduler = Scheduler(lambda s: None, executor=Inline())
    monkeypatch.setattr(scheduler_mod, "_give_back_free_memory", lambda: trims.append(1))
    scheduler.open("a", None, 1, "import torch\n")
    for version in range(2, 2 * scheduler_mod.TRIM_EVERY + 1):
        scheduler.submit("a", version, f"import torch\nx = {version}\n")
    assert scheduler.analyses == 2 * scheduler_mod.TRIM_EVERY and len(trims) == 2
    scheduler_mod._give_back_free_memory()  # the real one: glibc's malloc_trim, or nothing


def test_an_analysis_that_raises_publishes_no_findings() -> None:
    class Broken:
        def update(self, text: str) -> DocumentResult:
            raise RuntimeError("bug in a rule")

    published: list[Snapshot] = []
    scheduler = Scheduler(
        published.append, executor=Inline(), analysis_factory=lambda p, w: Broken()
    )
    scheduler.open("a", None, 1, "x")
    assert [s.findings for s in published] == [()]


def test_the_collector_is_off_while_anyone_holds_it() -> None:
    pause = CollectorPause()
    assert gc.isenabled()
    pause.hold()
    pause.hold()
    try:
        assert not gc.isenabled()
        pause.release()
        assert not gc.isenabled()  # one holder left
    finally:
        pause.release()
    assert gc.isenabled()
    gc.disable()
    try:
        pause.hold()
        pause.release()
        assert not gc.isenabled()  # off before the first hold: stays off
    finally:
        gc.enable()


# ---------------------------------------------------------------- session


DOC = """import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = torch.sigmoid(x)
        note = "é😀"; h += 1
        return self.act(torch.tanh(h))
"""


class FakeClient:
    def __init__(self) -> None:
        self.published: list[tuple[str, int | None, list[types.Diagnostic]]] = []
        self.shown: list[str] = []
        self.refreshes = 0

    def call_soon(self, callback: Callable[[], None]) -> None:
        callback()

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.published.append((uri, version, diagnostics))

    def refresh_diagnostics(self) -> None:
        self.refreshes += 1

    def show(self, message: str, kind: types.MessageType) -> None:
        self.shown.append(message)

    def last(self, uri: str) -> tuple[int | None, list[str]]:
        version, found = next((v, d) for u, v, d in reversed(self.published) if u == uri)
        return version, sorted(str(d.code) for d in found)


def _session(tmp_path: Path, **features: Any) -> tuple[Session, FakeClient]:
    client = FakeClient()
    scheduler = Scheduler(lambda s: None, executor=Inline())
    session = Session(client, Features(**features), root=str(tmp_path), scheduler=scheduler)
    scheduler._publish = session._analysed  # the session's callback, as in production
    return session, client


@pytest.fixture
def stub_fixes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Simple stand-ins for the fixes contract (the real codemods are tested elsewhere)."""

    def edits_for(text: str, finding: Finding) -> list[convert.TextChange] | None:
        if finding.fix is None or finding.fix.kind != "augassign":
            return None
        return [convert.TextChange(finding.fix.target, "h = h + 1")]

    def fix_for(text: str, finding: Finding) -> fixes.Fix | None:
        edits = edits_for(text, finding)
        return fixes.Fix(edits, safe=True) if edits else None  # type: ignore[arg-type]

    def apply_safe_fixes(text: str, findings: list[Finding]) -> str:
        return text.replace("h += 1", "h = h + 1").replace("inplace=True", "inplace=False")

    def noqa_edit(text: str, finding: Finding) -> convert.TextChange:
        end = len(split_lines(text)[finding.span.line - 1])
        line = finding.span.line
        return convert.TextChange(Span(line, end, line, end), f"  # noqa: {finding.code}")

    def inplace_off_edits(text: str, line: int) -> list[convert.TextChange]:
        return []

    for name, function in {
        "edits_for": edits_for,
        "fix_for": fix_for,
        "apply_safe_fixes": apply_safe_fixes,
        "noqa_edit": noqa_edit,
        "inplace_off_edits": inplace_off_edits,
    }.items():
        monkeypatch.setattr(fixes, name, function)
    yield


def test_a_documents_settings_are_resolved_once_per_settings_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, client = _session(tmp_path)
    asked: list[str | None] = []
    resolve = SettingsStore.for_path

    def counted(store: SettingsStore, path: str | None) -> Any:
        asked.append(path)
        return resolve(store, path)

    monkeypatch.setattr(SettingsStore, "for_path", counted)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    opened = len(asked)
    for version in range(2, 7):
        session.change_document(uri, version, DOC + "#" * version + "\n", saved=False)
    assert client.last(uri) == (6, ["IPL001", "IPL003"])
    print(f"settings resolved: {opened} on open, {len(asked) - opened} for 5 keystrokes")
    assert len(asked) - opened == 0
    session.settings.set_editor({"showHints": False})  # a new generation: resolved once more
    session.change_document(uri, 7, DOC, saved=False)
    assert len(asked) - opened == 1


def test_push_on_open_change_and_close(tmp_path: Path) -> None:
    session, client = _session(tmp_path, encoding="utf-8")
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    assert client.last(uri) == (1, ["IPL001", "IPL003"])
    session.change_document(uri, 2, DOC.replace("h += 1", "h = h + 1"), saved=False)
    assert client.last(uri) == (2, ["IPL003"])
    session.change_document(uri, 2, DOC, saved=True)  # onType: a save changes nothing
    assert len(client.published) == 2
    session.close_document(uri)
    assert client.last(uri) == (None, [])


def test_run_on_save(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.inplace-lsp]\nrun = "onSave"\n')
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    fixed = DOC.replace("h += 1", "h = h + 1")
    session.change_document(uri, 2, fixed, saved=False)
    assert client.last(uri) == (1, ["IPL001", "IPL003"])  # not analysed while typing
    session.change_document(uri, 2, fixed, saved=True)
    assert client.last(uri) == (2, ["IPL003"])


def test_an_older_version_is_never_published_over_a_newer_one(tmp_path: Path) -> None:
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 5, DOC)
    old = session.scheduler.snapshot(uri)
    assert old is not None
    session.change_document(uri, 6, DOC + "\n", saved=False)
    count = len(client.published)
    session._publish(old)  # a late result of version 5
    assert len(client.published) == count


def test_pull_mode_never_pushes(tmp_path: Path) -> None:
    import asyncio

    session, client = _session(tmp_path, pull=True, refresh=True)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    assert client.published == []
    report = asyncio.run(session.pull(uri, None))
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert sorted(str(d.code) for d in report.items) == ["IPL001", "IPL003"]
    again = asyncio.run(session.pull(uri, report.result_id))
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    session.set_editor_settings({"ignore": ["IPL003"]})
    assert client.refreshes == 1
    report = asyncio.run(session.pull(uri, report.result_id))
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [str(d.code) for d in report.items] == ["IPL001"]
    unknown = asyncio.run(session.pull("file:///nowhere.py", None))
    assert isinstance(unknown, types.RelatedFullDocumentDiagnosticReport) and not unknown.items


def test_eager_code_actions_carry_their_edits(tmp_path: Path, stub_fixes: None) -> None:
    session, client = _session(tmp_path, encoding="utf-16", lazy_edits=False)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    offered = session.code_actions(uri, flagged.range, None)
    titles = [a.title for a in offered]
    # inplace_off_edits finds nothing to change here: that action is dropped.
    assert titles == [
        "Rewrite out of place (IPL001)",
        "Suppress with `# noqa: IPL001`",
        "Fix all safe in-place problems (inplace-lsp)",
        "Verify Gate: forward/backward under autograd (inplace-lsp)",
    ]
    fix = offered[0]
    assert fix.is_preferred and fix.edit is not None and fix.edit.changes is not None
    (edit,) = fix.edit.changes[uri]
    assert edit.range == flagged.range and edit.new_text == "h = h + 1"
    fix_all = offered[2]
    assert fix_all.edit is not None and fix_all.edit.changes is not None
    (whole,) = fix_all.edit.changes[uri]
    assert whole.range.start.line == 7 and whole.range.end.line == 11  # minimal, not the file


def test_lazy_code_actions_resolve_with_versioned_edits(tmp_path: Path, stub_fixes: None) -> None:
    session, client = _session(tmp_path, lazy_edits=True, document_changes=True)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 3, DOC)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    offered = session.code_actions(uri, flagged.range, [actions.QUICKFIX])
    assert all(a.edit is None for a in offered)
    assert [a.kind for a in offered] == ["quickfix"] * 2
    fix = session.resolve_code_action(offered[0])
    assert fix.edit is not None and fix.edit.document_changes is not None
    (change,) = fix.edit.document_changes
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.version == 3
    stale = session.resolve_code_action(
        types.CodeAction("x", data={"uri": uri, "version": 3, "action": "fix", "code": "IPL009"})
    )
    assert stale.edit is None


def test_a_version_going_backwards_is_analysed(tmp_path: Path) -> None:
    """The buffer took the change (the editor sent it); the analysis must describe it too."""
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 5, DOC)
    fixed = DOC.replace("h += 1", "h = h + 1")
    session.change_document(uri, 3, fixed, saved=False)
    snapshot = session.scheduler.snapshot(uri)
    assert snapshot is not None and (snapshot.version, snapshot.text) == (3, fixed)
    assert client.last(uri) == (3, ["IPL003"])
    session.change_document(uri, 4, DOC, saved=False)  # and on from there
    assert client.last(uri) == (4, ["IPL001", "IPL003"])


def test_no_code_action_for_a_text_other_than_the_buffer(tmp_path: Path, stub_fixes: None) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.inplace-lsp]\nrun = "onSave"\n')
    session, client = _session(tmp_path, lazy_edits=True)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    offered = session.code_actions(uri, flagged.range, [actions.QUICKFIX])
    assert offered
    moved = "# a line above\n" + DOC
    session.change_document(uri, 2, moved, saved=False)  # onSave: not analysed yet
    assert session.code_actions(uri, flagged.range, None) == []
    assert session.resolve_code_action(offered[0]).edit is None
    session.change_document(uri, 2, moved, saved=True)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    assert flagged.range.start.line == 12
    fix = session.resolve_code_action(session.code_actions(uri, flagged.range, None)[0])
    assert fix.edit is not None and fix.edit.changes is not None
    assert [e.range for e in fix.edit.changes[uri]] == [flagged.range]


def test_hover_plain_text(tmp_path: Path) -> None:
    session, client = _session(tmp_path, markdown=False, encoding="utf-32")
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    found = session.hover(uri, flagged.range.end)  # the end still counts
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    assert found.contents.kind == types.MarkupKind.PlainText
    assert "**" not in found.contents.value
    assert "v0 saved by torch.sigmoid at line 11" in found.contents.value


SAFE = """import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        h += 1  # Linear saves its input, not its output: safe
        return h
"""


def test_hints_are_not_published_unless_asked_but_hover_explains_them(tmp_path: Path) -> None:
    """A "checked: safe" hint on every safe in-place line is noise in a sign column: it is
    published only with showHints; hovering the line still says why it is safe."""
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, SAFE)
    assert client.published[-1][2] == []
    view = session.view(uri)
    assert view is not None
    (hint,) = view.items_for(uri, hidden=True)
    assert hint.finding.severity is Severity.HINT and not hint.shown
    lines = SAFE.splitlines()
    found = session.hover(uri, convert.position(lines, hint.span.line, hint.span.col, "utf-16"))
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    assert hint.finding.message in found.contents.value
    session.set_editor_settings({"showHints": True})
    session.settings_changed()
    assert [d.severity for d in client.published[-1][2]] == [types.DiagnosticSeverity.Hint]


def test_hover_does_not_repeat_the_diagnostic(tmp_path: Path) -> None:
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    found = session.hover(uri, flagged.range.start)
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    assert flagged.message not in found.contents.value
    assert "saved by" in found.contents.value.lower() or "Saved by" in found.contents.value


# Three cells: the save in c1, the write in c2 (IPL001).
NOTEBOOK_CELLS = [
    ("c0", 1, "import torch\nx = torch.ones(2, requires_grad=True)\n"),
    ("c1", 1, "y = torch.sigmoid(x)\n"),
    ("c2", 1, "y += 1\ny.sum().backward()\n"),
]


def test_notebook_push_per_cell_and_deleted_cells_cleared(tmp_path: Path) -> None:
    session, client = _session(tmp_path)
    notebook = (tmp_path / "n.ipynb").as_uri()
    cells = NOTEBOOK_CELLS
    session.open_notebook(notebook, 1, cells)
    assert client.last("c2") == (1, ["IPL001"])
    assert client.last("c0") == (1, [])
    session.change_notebook(notebook, 2, [cells[0], cells[2]])  # c1 deleted
    assert client.last("c1") == (None, [])
    assert client.last("c2") == (1, [])
    assert session.key_of("c2") == notebook and session.key_of("c1") is None
    session.close_notebook(notebook)
    assert client.last("c0") == (None, []) and session.key_of("c0") is None


CONFIRMED = " (confirmed by verify: "


def verify_diagnostics(found: list[types.Diagnostic]) -> list[types.Diagnostic]:
    """What verify shows among the diagnostics: its own, and the analysis's Errors it
    confirmed (one entry per bug: a verify error on such a line joins that one)."""
    return [d for d in found if d.source == "inplace-lsp verify" or CONFIRMED in d.message]


def said_by_verify(diagnostic: types.Diagnostic) -> str:
    """What verify says in a diagnostic: its own message, or what it added to the analysis's."""
    _, confirmed, said = diagnostic.message.partition(CONFIRMED)
    return said.removesuffix(")") if confirmed else diagnostic.message


def test_notebook_verify_diagnostics_land_in_cells_and_go_on_edit(tmp_path: Path) -> None:
    session, client = _session(tmp_path)
    notebook = (tmp_path / "n.ipynb").as_uri()
    cells = NOTEBOOK_CELLS
    session.open_notebook(notebook, 1, cells)
    document = session._documents[notebook]
    program = "".join(text for _, _, text in cells)
    path = str(tmp_path / "_inplace_lsp_notebook_n.py")
    result = {
        "status": "inplace-error",
        "target": "run",
        "mutation": {"path": path, "line": 4},
        "saved_by": {"path": path, "line": 3, "op": "SigmoidBackward0"},
        "related": [],
    }
    session.verifying.verified_notebook(notebook, document.layout, path, program, 4, result)
    version, found = client.published[-1][1], client.published[-1][2]
    assert client.published[-1][0] == "c2" and version == 1
    (checked,) = verify_diagnostics(found)
    assert checked.range.start.line == 0  # line 4 of the program: the first of c2
    said = said_by_verify(checked)
    assert "line 1 overwrites" in said and "line 1 of code cell 2" in said
    saved = (checked.related_information or [])[-1]
    assert (saved.location.uri, saved.location.range.start.line) == ("c1", 0)
    session.change_notebook(notebook, 2, [cells[0], cells[1], ("c2", 2, "y = y + 1\n")])
    assert verify_diagnostics(client.published[-1][2]) == []


def test_related_location_in_another_file(tmp_path: Path) -> None:
    other = tmp_path / "layers.py"
    other.write_text("é😀 = 1\nself.act = nn.ReLU(inplace=True)\n", encoding="utf-8")
    finding = Finding(
        "IPL003",
        Severity.ERROR,
        "m",
        Span(1, 0, 1, 1),
        related=(Related(Span(1, 3, 1, 4), "built here", str(other)),),
    )
    snapshot = Snapshot("a", 1, "x\n", ["x", ""], (finding,))
    session, _ = _session(tmp_path)
    view = build_view(snapshot, Layout.single("a", 1), session.settings.editor, 0, "utf-8",
                      session._lines_of_file)  # fmt: skip
    (info,) = view.items[0].diagnostic.related_information or []
    assert info.location.uri == other.as_uri()
    assert info.location.range.start.character == 7  # é😀 and a space, in bytes


LAYERS = """import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return {body}
"""
MODEL = """import torch.nn as nn
from .layers import Gate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate(4)

    def forward(self, x):
        g = self.gate(x)
        g += 1
        return g
"""


def test_a_changed_imported_file_reanalyses_open_documents(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    layers = package / "layers.py"
    layers.write_text(LAYERS.format(body="torch.sigmoid(self.proj(x))"))
    session, client = _session(tmp_path)
    uri = (package / "model.py").as_uri()
    session.open_document(uri, 1, MODEL)

    def severity() -> list[types.DiagnosticSeverity | None]:
        return [d.severity for d in client.published[-1][2]]

    assert severity() == [types.DiagnosticSeverity.Error]  # Gate's sigmoid saved its output
    layers.write_text(LAYERS.format(body="self.proj(x)"))
    session.files_changed([layers.as_uri()])
    assert client.published[-1][0] == uri
    assert severity() == []  # checked: Linear saves no output (a hint, published on request)
    count = len(client.published)
    session.files_changed([(package / "unrelated.py").as_uri()])  # imported by nobody
    assert len(client.published) == count


# ---------------------------------------------------------------- settings, actions, hover


def test_settings_store_merges_the_nearest_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.inplace-lsp]\nignore = ["IPL003"]\nstrict = "yes"\n', encoding="utf-8"
    )
    store = SettingsStore()
    assert store.set_editor({"inplaceLsp": {"select": ["IPL00"], "run": "onSave"}}) == []
    effective = store.for_path(str(tmp_path / "pkg" / "m.py"))
    assert effective.pyproject == tmp_path / "pyproject.toml"
    assert effective.settings.ignore == ("IPL003",)
    assert effective.settings.select == ("IPL00",) and effective.settings.run == "onSave"
    problems = store.new_problems(str(tmp_path / "m.py"))
    assert len(problems) == 1 and "strict" in problems[0]
    assert store.new_problems(str(tmp_path / "m.py")) == []  # reported once
    assert store.set_editor([1, 2]) != []
    assert unwrap({"inplaceLsp": {"a": 1}}) == {"a": 1}


def test_debug_info(tmp_path: Path) -> None:
    session, _ = _session(tmp_path, encoding="utf-8", pull=True)
    info = session.debug_info(None)
    assert info["positionEncoding"] == "utf-8" and info["diagnostics"] == "pull"
    assert info["enabledRules"] == [f"IPL00{i}" for i in range(1, 10)]
    assert info["settings"]["severity"] == {} and info["settings"]["select"] == ["IPL"]


@pytest.mark.parametrize(
    ("kind", "only", "wanted"),
    [
        ("quickfix", None, True),
        ("quickfix", ["quickfix"], True),
        (actions.FIX_ALL, ["source.fixAll"], True),
        (actions.FIX_ALL, ["source"], True),
        (actions.FIX_ALL, ["quickfix"], False),
        ("quickfix", ["source.fixAll"], False),
    ],
)
def test_wanted_kinds(kind: str, only: list[str] | None, wanted: bool) -> None:
    assert actions.wanted(kind, only) is wanted


def test_enclosing_class() -> None:
    lines = split_lines(DOC)
    assert actions.enclosing_class(lines, 8) == 5
    assert actions.enclosing_class(lines, 12) == 5
    assert actions.enclosing_class(lines, 1) is None
    assert actions.enclosing_class(["def f():", "    x = 1"], 2) is None


def test_rule_docs_cover_every_rule() -> None:
    docs = hover.rule_docs()
    assert sorted(docs) == [f"IPL00{i}" for i in range(1, 10)]
    assert all(summary for _, summary in docs.values())


def test_verify_results_are_pushed_to_pull_clients_without_refresh(tmp_path: Path) -> None:
    """Neovim 0.11 pulls diagnostics but has no workspace/diagnostic/refresh: verify results
    go out as pushed diagnostics (kept apart from the pulled ones), and are pushed away."""
    session, client = _session(tmp_path, pull=True, refresh=False)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    pulled = asyncio.run(session.pull(uri, None))
    assert isinstance(pulled, types.RelatedFullDocumentDiagnosticReport)
    flagged = next(d for d in pulled.items if d.code == "IPL001")
    line = flagged.range.start.line + 1
    path = str(tmp_path / "m.py")
    result = {
        "status": "inplace-error",
        "target": "Gate",
        "mutation": {"path": path, "line": line},
        "saved_by": {"path": path, "line": line - 1, "op": "SigmoidBackward0"},
        "related": [],
    }
    lines = split_lines(DOC)
    session.verifying.verified_result(uri, 1, path, lines, line, result)
    assert client.refreshes == 0
    (published_uri, version, found) = client.published[-1]
    assert (published_uri, version) == (uri, 1)
    assert [(d.source, d.range.start.line) for d in found] == [("inplace-lsp verify", line - 1)]
    again = asyncio.run(session.pull(uri, None))  # the pulled report has no copy of it
    assert isinstance(again, types.RelatedFullDocumentDiagnosticReport)
    assert all(d.source != "inplace-lsp verify" for d in again.items)
    # An edit above the class moves the result with it; one inside the class ends it.
    session.change_document(uri, 2, "# a first line\n" + DOC, saved=False)
    (published_uri, version, found) = client.published[-1]
    assert (published_uri, version) == (uri, 2)
    assert [d.range.start.line for d in found] == [line]
    assert f"line {line + 1} overwrites" in found[0].message
    session.change_document(uri, 3, DOC.replace("h += 1", "h += 2"), saved=False)
    assert client.published[-1] == (uri, 3, [])
    session.verifying.verified_result(uri, 3, path, lines, line, result)
    session.close_document(uri)
    assert client.published[-1] == (uri, None, [])


TWO_GATES = (
    DOC
    + """

class Other(nn.Module):
    def forward(self, x):
        g = torch.exp(x)
        g += 1
        return g
"""
)


def _failed(path: str, target: str, saved: int, line: int) -> dict[str, Any]:
    return {
        "status": "inplace-error",
        "target": target,
        "mutation": {"path": path, "line": line},
        "saved_by": {"path": path, "line": saved, "op": "ExpBackward0"},
        "related": [],
    }


def test_each_target_keeps_its_verify_result_until_its_text_changes(tmp_path: Path) -> None:
    """Verifying one class leaves another class's failed verify in place; an edit moves each
    result with its class or ends it, for that class only."""
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    path = str(tmp_path / "m.py")
    session.open_document(uri, 1, TWO_GATES)
    lines = split_lines(TWO_GATES)
    gate = lines.index('        note = "é😀"; h += 1') + 1
    other = lines.index("        g += 1") + 1

    def verified() -> list[tuple[int, str]]:
        found = next(d for u, _, d in reversed(client.published) if u == uri)
        return sorted((d.range.start.line + 1, said_by_verify(d).split(":")[0])
                      for d in verify_diagnostics(found))  # fmt: skip

    session.verifying.verified_result(
        uri, 1, path, lines, gate, _failed(path, "Gate", gate - 1, gate)
    )
    session.verifying.verified_result(
        uri, 1, path, lines, other, _failed(path, "Other", other - 1, other)
    )
    assert verified() == [(gate, "Gate fails"), (other, "Other fails")]
    ok = {**error_result("Gate"), "status": "ok", "device": "cpu"}
    session.verifying.verified_result(
        uri, 1, path, lines, gate, ok
    )  # Gate fixed elsewhere: only it goes
    assert verified() == [(other, "Other fails")]
    session.verifying.verified_result(
        uri, 1, path, lines, gate, _failed(path, "Gate", gate - 1, gate)
    )
    edited = TWO_GATES.replace("return self.act", "# why\n        return self.act")
    session.change_document(uri, 2, edited, saved=False)  # inside Gate, above Other
    assert verified() == [(other + 1, "Other fails")]


def test_untitled_path(tmp_path: Path) -> None:
    assert untitled_path("untitled:Untitled-1", tmp_path) == str(
        tmp_path / "_inplace_lsp_untitled_Untitled_1.py"
    )
    assert untitled_path("untitled:/a b/é.py", None).endswith("_inplace_lsp_untitled_a_b_é_py.py")


def test_uri_to_path() -> None:
    assert uri_to_path("file:///tmp/a%20b.py") == "/tmp/a b.py"
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path("vscode-notebook-cell:/x.ipynb#W0") is None


def _finding(code: str, span: Span) -> Finding:
    return Finding(
        code,
        Severity.ERROR,
        "message",
        span,
        fix=FixRecipe("augassign", "Rewrite out of place", True, span),
    )


# ---------------------------------------------------------------- serve --tcp


def _send(sock: Any, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _receive(stream: Any) -> dict[str, Any]:
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


@pytest.mark.lsp
def test_serve_over_tcp() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "inplace_lsp", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.05)
        with sock, sock.makefile("rb") as stream:
            general = {"positionEncodings": ["utf-16", "utf-8"]}
            _send(
                sock,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "processId": None,
                        "rootUri": None,
                        "capabilities": {"general": general},
                    },
                },
            )
            reply = _receive(stream)
            assert reply["id"] == 1
            assert reply["result"]["capabilities"]["positionEncoding"] == "utf-8"
            assert reply["result"]["serverInfo"]["name"] == "inplace-lsp"
            _send(sock, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            _send(sock, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            while _receive(stream).get("id") != 2:
                pass
            _send(sock, {"jsonrpc": "2.0", "method": "exit"})
        assert server.wait(30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_incremental_edits_after_form_feed_and_line_separator() -> None:
    """LSP breaks lines only at \\n, \\r\\n and \\r: text after a form feed or U+2028 keeps
    its line, so an incremental edit lands where the editor put it."""
    from lsprotocol import types as lsp
    from pygls.workspace import TextDocument

    from inplace_lsp.lsp.server import ServerDocument

    text = "a = 1\f# x\u2028y\nh += 1\n"
    document = ServerDocument("file:///t.py", text, version=1)
    assert document.lines == ("a = 1\f# x\u2028y\n", "h += 1\n")
    change = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(1, 0), lsp.Position(1, 6)), text="h = h + 1"
    )
    document.apply_change(change)
    assert document.source == "a = 1\f# x\u2028y\nh = h + 1\n"
    # pygls's own class is left as it is: only the server's documents split this way.
    assert len(TextDocument("file:///t.py", text).lines) == 4


def test_a_document_above_max_file_bytes_gets_one_note_and_no_analysis(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.inplace-lsp]\nmax_file_bytes = 2000\n")
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    big = DOC + "# padding\n" * 200  # about 2.3 KB: over the limit
    session.open_document(uri, 1, big)
    version, found = next((v, d) for u, v, d in reversed(client.published) if u == uri)
    assert version == 1
    assert [
        (d.message.split(" (")[0], d.range.start.line, d.severity, d.source) for d in found
    ] == [("file too large to analyse", 0, types.DiagnosticSeverity.Information, "inplace-lsp")]
    assert "MB > 0.0 MB" in found[0].message
    session.change_document(uri, 2, big + "x = 1\n", saved=False)
    assert len(client.last(uri)[1]) == 1  # still only the note
    session.change_document(uri, 3, DOC, saved=False)  # below the limit: analysed again
    assert client.last(uri) == (3, ["IPL001", "IPL003"])


def test_the_position_codec_reads_positions_as_lsp_does() -> None:
    """Every position of lines with and without breaks (LF, CRLF, CR, none), empty, ASCII and
    not: a column counts code units of the encoding; past the line's end it is the line's end,
    before the break (pygls put it after the break, or one character short of the end); a
    column inside a character is that character; a line past the last is the document's end.
    The line lengths agree with pygls's."""
    from pygls.workspace.position_codec import PositionCodec

    from inplace_lsp.lsp.server import _FastCodec

    rng = random.Random(0)
    lines = ["", "\n", "x\r\n", "y\r", "    h += 1\n", "é = 1\n", "s = '😀' + x\r\n", "tail😀"]
    lines += ["".join(rng.choice("ab (:\té😀") for _ in range(rng.randrange(30))) + "\n"]
    width = {"utf-8": lambda c: len(c.encode()), "utf-16": lambda c: 1 + (ord(c) > 0xFFFF)}
    for encoding in ("utf-8", "utf-16", "utf-32"):
        units = width.get(encoding, lambda c: 1)
        codec, reference = _FastCodec(encoding), PositionCodec(encoding)
        for line in range(len(lines) + 2):
            for character in range(60):
                got = codec.position_from_client_units(lines, types.Position(line, character))
                if line >= len(lines):
                    assert (got.line, got.character) == (len(lines) - 1, len(lines[-1]))
                    continue
                content = lines[line].rstrip("\r\n")
                column = seen = 0
                while column < len(content) and seen + units(content[column]) <= character:
                    seen += units(content[column])
                    column += 1
                assert (got.line, got.character) == (line, column), (encoding, line, character)
        for text in lines:
            assert codec.client_num_units(text) == reference.client_num_units(text)


DEEP = (
    "import torch\n\n\ndef deep(x):\n    h = torch.sigmoid(x)\n    h.mul_(2)\n"
    "    return h" + ".clone()" * 400 + "\n"
)


def test_a_function_too_deep_to_analyse_gets_a_diagnostic_in_file_and_cell(tmp_path: Path) -> None:
    """The editor says what `check` says: the function's findings are not reported."""
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, "# é \u2028 \f\n\n" + DEEP)  # no line breaks
    _, found = next((v, d) for u, v, d in reversed(client.published) if u == uri)
    (note,) = found
    assert note.message.startswith("function `deep` is too deep to analyse")
    assert "line 9" in note.message  # the statement given up on
    assert note.severity == types.DiagnosticSeverity.Information and note.code is None
    assert (note.range.start.line, note.range.start.character) == (5, 0)
    assert (note.range.end.line, note.range.end.character) == (5, len("def deep(x):"))
    notebook = (tmp_path / "n.ipynb").as_uri()
    session.open_notebook(notebook, 1, [("a", 1, "x = 1\n"), ("b", 1, DEEP)])
    _, in_cell = client.last("b")
    cell_note = next(d for u, v, ds in reversed(client.published) if u == "b" for d in ds)
    assert in_cell == ["None"] and cell_note.range.start.line == 3
    assert "line 7" in cell_note.message  # renumbered to the cell's line
    assert client.last("a") == (1, [])


def test_a_function_over_the_project_time_limit_gets_a_note_and_the_rest_its_diagnostics(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.inplace-lsp]\nfunction_time_limit_s = 0.1\n")
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, with_slow_function(600))
    _, found = next((v, d) for u, v, d in reversed(client.published) if u == uri)
    assert [(d.range.start.line, d.severity, d.code) for d in found] == [
        (2411, types.DiagnosticSeverity.Warning, "IPL001"),
        (2418, types.DiagnosticSeverity.Warning, "IPL001"),
        (3, types.DiagnosticSeverity.Information, None),  # on `def slow`
    ]
    assert found[2].message.startswith("function `slow` is not analysed: its analysis took longer")
    assert "0.1 s (setting function_time_limit_s)" in found[2].message


def test_a_notebook_above_max_file_bytes_gets_one_note_in_its_first_cell(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.inplace-lsp]\nmax_file_bytes = 2000\n")
    session, client = _session(tmp_path)
    notebook = (tmp_path / "n.ipynb").as_uri()
    padded = [*NOTEBOOK_CELLS[:2], ("c2", 1, NOTEBOOK_CELLS[2][2] + "# padding\n" * 200)]
    session.open_notebook(notebook, 1, padded)
    first = next(d for u, v, ds in reversed(client.published) if u == "c0" for d in ds)
    assert first.message.startswith("file too large to analyse")
    assert client.last("c2") == (1, [])  # not analysed: no finding
    session.change_notebook(notebook, 2, NOTEBOOK_CELLS)  # below the limit again
    assert client.last("c2") == (1, ["IPL001"]) and client.last("c0") == (1, [])


def test_on_save_hover_describes_only_the_buffers_text(tmp_path: Path) -> None:
    """With run = "onSave", the findings are of the saved text: after an unsaved edit, their
    positions are no longer the cursor's, so hover says nothing until the save."""
    (tmp_path / "pyproject.toml").write_text('[tool.inplace-lsp]\nrun = "onSave"\n')
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    flagged = next(d for d in client.published[-1][2] if d.code == "IPL001")
    assert session.hover(uri, flagged.range.start) is not None
    edited = "# a new first line\n" + DOC
    session.change_document(uri, 2, edited, saved=False)
    assert session.hover(uri, flagged.range.start) is None
    session.change_document(uri, 2, edited, saved=True)
    moved = types.Position(flagged.range.start.line + 1, flagged.range.start.character)
    found = session.hover(uri, moved)
    assert found is not None and "saved by torch.sigmoid" in str(found.contents)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _units(text: str) -> int:
    return sum(2 if ord(char) > 0xFFFF else 1 for char in text)


def _position(text: str, starts: list[int], line: int, rng: random.Random) -> types.Position:
    """A random position on the line, inside its text (UTF-16 units)."""
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = text[starts[line] : end].rstrip("\r\n")
    return types.Position(line, _units(content[: rng.randrange(len(content) + 1)]))


def _reference_edit(text: str, change: types.TextDocumentContentChangePartial) -> str:
    """The edit applied to the text by offsets, counting UTF-16 units on LSP lines."""
    starts = _line_starts(text)

    def offset(position: types.Position) -> int:
        start = starts[position.line]
        units = 0
        index = start
        while units < position.character:
            units += 2 if ord(text[index]) > 0xFFFF else 1
            index += 1
        return index

    return text[: offset(change.range.start)] + change.text + text[offset(change.range.end) :]


def test_incremental_text_sync_equals_edits_by_offset() -> None:
    """The server's incremental text sync (kept lines, only the touched ones rebuilt) gives
    the text an offset-based edit gives, with \\r\\n, \\r, form feeds, U+2028, astral
    characters and edits that join or split lines."""
    from inplace_lsp.lsp.server import ServerDocument

    rng = random.Random(7)
    pieces = ["a", "bc", " ", "\n", "\r\n", "\r", "\f", "\u2028", "é", "😀", "x = 1\n"]
    text = "import torch\r\nx = 1\n\fy\u2028 = 2\r\n😀 = 3\n"
    document = ServerDocument(
        "file:///t.py", text, sync_kind=types.TextDocumentSyncKind.Incremental
    )
    for _ in range(500):
        starts = _line_starts(text)

        line = rng.randrange(len(starts))
        other = min(line + rng.choice([0, 0, 1, 2]), len(starts) - 1)
        start, end = _position(text, starts, line, rng), _position(text, starts, other, rng)
        if (end.line, end.character) < (start.line, start.character):
            start, end = end, start
        change = types.TextDocumentContentChangePartial(
            range=types.Range(start, end),
            text="".join(rng.choice(pieces) for _ in range(rng.randrange(3))),
        )
        expected = _reference_edit(text, change)
        document.apply_change(change)
        assert document.source == expected
        assert "".join(document.lines) == expected
        text = expected
