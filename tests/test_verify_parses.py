"""A verify request through the language server parses the buffer once (issue 24, "One of
each"): the session hands the runner the findings of the version it analysed, and the target,
the preloaded imports, the lines that did not run and the span of the verified target are all
read off one `ast` tree.

The session runs in-process (as in test_lsp_units) with `ast.parse` counted; the run itself
(the user's interpreter, another process) is stubbed: what the server parses does not depend
on it, only on the lines it reports as run.
"""

from __future__ import annotations

import ast
import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from inplace_lsp.analysis.blocks import ParseCache, Splitter
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.lsp import verification
from inplace_lsp.lsp.scheduler import Scheduler
from inplace_lsp.lsp.session import Features, Session
from inplace_lsp.verify import runner
from inplace_lsp.verify.harness import error_result
from inplace_lsp.verify.parsed import Parsed

DOC = """import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, mask=None):
        h = torch.sigmoid(self.fc(x))
        if mask is not None:
            h += mask
        return h


def helper(x):
    return x + 1
"""
FLAGGED = split_lines(DOC).index("            h += mask") + 1  # IPL001, never run below

CELLS = [
    ("c0", 1, "import torch\nimport torch.nn as nn\n"),
    ("c1", 1, DOC.split("\n", 3)[3].split("\n\ndef helper")[0] + "\n"),
    ("c2", 1, "model = Gate()\nmodel(torch.randn(2, 4)).sum().backward()\n"),
]


class Inline(Executor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


class Client:
    def __init__(self) -> None:
        self.published: list[tuple[str, int | None, list[types.Diagnostic]]] = []
        self.shown: list[str] = []

    def call_soon(self, callback: Callable[[], None]) -> None:
        callback()

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.published.append((uri, version, diagnostics))

    def refresh_diagnostics(self) -> None:
        pass

    def show(self, message: str, kind: types.MessageType) -> None:
        self.shown.append(message)

    def refresh_code_lenses(self) -> None:
        pass


class Progress:
    def __init__(self) -> None:
        self.cancel = threading.Event()

    async def begin(self, title: str) -> None:
        pass

    def report(self, message: str) -> None:
        pass

    def end(self, message: str) -> None:
        pass


def _session(tmp_path: Path) -> tuple[Session, Client]:
    client = Client()
    scheduler = Scheduler(lambda s: None, executor=Inline())
    session = Session(client, Features(), root=str(tmp_path), scheduler=scheduler)
    scheduler._publish = session._analysed
    return session, client


def _of_document(calls: list[str], what: str) -> list[str]:
    """The parses of the document (texts that hold the target), printed; the others are of
    one statement (a rule's suggestion, in an analysis)."""
    document = [text for text in calls if "class Gate(" in text]
    print(f"\nparses of the document in one verify request ({what}): {len(document)}")
    print(f"ast.parse calls in all: {len(calls)}")
    return document


def test_a_verify_request_parses_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, client = _session(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    session.open_document(uri, 1, DOC)
    with _counting(monkeypatch) as calls:
        result = asyncio.run(
            session.verify(uri, 1, DOC, types.Position(FLAGGED - 2, 8), Progress())
        )
    document = _of_document(calls, "a file")
    assert result["status"] == "ok", result
    assert [(e["line"], e["code"]) for e in result["not_run"]] == [(FLAGGED, "IPL001")]
    assert result["not_run"][0]["reason"].startswith("`mask` was None")
    shown = [d for d in client.published[-1][2] if d.source == verification.SOURCE]
    assert [d.range.start.line + 1 for d in shown] == [FLAGGED]
    assert len(document) == 1
    assert len(calls) == 1  # the findings are the session's: no analysis again


def test_a_verify_request_parses_the_notebook_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, client = _session(tmp_path)
    notebook = (tmp_path / "n.ipynb").as_uri()
    session.open_notebook(notebook, 1, CELLS)
    program = "".join(text for _, _, text in CELLS)
    flagged = split_lines(program).index("            h += mask") + 1
    cell_line = flagged - CELLS[0][2].count("\n") - 1  # 0-based in c1
    with _counting(monkeypatch, flagged) as calls:
        result = asyncio.run(
            session.verify("c1", 1, CELLS[1][2], types.Position(cell_line, 8), Progress())
        )
    document = _of_document(calls, "a notebook cell")
    assert result["status"] == "ok", result
    assert [(e["line"], e["code"]) for e in result["not_run"]] == [(flagged, "IPL001")]
    found = next(d for uri, _, d in reversed(client.published) if uri == "c1")
    shown = [d for d in found if d.source == verification.SOURCE]
    assert [d.range.start.line for d in shown] == [cell_line]
    assert len(document) == 1  # the analysis of the program verify runs takes its tree


class _counting:
    """Counts `ast.parse` calls (in this process) inside the `with`; the run is stubbed: OK,
    every line of the target but `flagged` ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, flagged: int = FLAGGED) -> None:
        self.monkeypatch = monkeypatch
        self.flagged = flagged
        self.calls: list[str] = []
        self.on = False

    def __enter__(self) -> list[str]:
        real = ast.parse
        calls = self.calls

        def counted(source: Any, *args: Any, **kwargs: Any) -> Any:
            if self.on:
                calls.append(source if isinstance(source, str) else repr(source))
            return real(source, *args, **kwargs)

        flagged = self.flagged

        def run_spec(spec: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
            first, last = spec["line"], spec["end_line"]
            return {
                **error_result(str(spec["name"])),
                "status": "ok",
                "device": "cpu",
                "kind": spec.get("kind"),
                "duration_s": 0.01,
                "lines_run": [n for n in range(first, last + 1) if n != flagged],
            }

        self.monkeypatch.setattr(ast, "parse", counted)
        self.monkeypatch.setattr(runner, "run_spec", run_spec)
        self.on = True
        return calls

    def __exit__(self, *exc: object) -> None:
        self.on = False


PROGRAMS = [
    "".join(text for _, _, text in CELLS),
    "import torch\nx = torch.ones(2); print(x)\nMEAN = torch.tensor([0.5])\n\n\n"
    "@torch.no_grad()\ndef f(\n    a,\n):\n    return a\n\nfor i in range(3):\n    f(i)\n",
    "import torch\r\nprint(1)\r\nclass A:\r\n    pass\r\nA()",  # no line end at the end
    "x = 1\n",
    "",
    "def broken(:\n",
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_definitions_tree_is_that_of_their_text(program: str) -> None:
    """The tree `definitions` derives (the program's, less the statements blanked) is what
    parsing the text it returns gives: the runner reads it instead of parsing."""
    kept = verification.definitions(Parsed(program))
    assert kept.text == verification.notebook_definitions(program)
    try:
        expected = ast.parse(kept.text)
    except SyntaxError:
        with pytest.raises(SyntaxError):
            kept.tree()
        return
    assert ast.dump(kept.tree(), include_attributes=True) == ast.dump(
        expected, include_attributes=True
    )


@pytest.mark.parametrize("program", PROGRAMS[:4])
def test_a_document_added_to_the_parse_cache_splits_as_if_parsed(program: str) -> None:
    """ParseCache.add_document: a Splitter meeting the text takes the blocks cut from the tree
    it was given (no parse), the same blocks as from parsing it."""
    cache = ParseCache()
    cache.add_document(program, ast.parse(program))
    added = Splitter(cache).split(program)
    assert cache.parses == 0
    parsed = Splitter(ParseCache()).split(program)
    assert [(b.start_line, b.text, b.key, b.tree_line0) for b in added] == [
        (b.start_line, b.text, b.key, b.tree_line0) for b in parsed
    ]
    assert [ast.dump(b.tree, include_attributes=True) for b in added if b.tree] == [
        ast.dump(b.tree, include_attributes=True) for b in parsed if b.tree
    ]


def test_parsed_parses_once_and_raises_again() -> None:
    parsed = Parsed("x = (\n")
    for _ in range(2):
        with pytest.raises(SyntaxError):
            parsed.tree()
    good = Parsed("x = 1\n")
    assert good.tree() is good.tree()
