"""The analysis engine on whole documents: incremental re-analysis agrees with a fresh one,
syntax errors mid-typing keep the other blocks' findings, bad input never raises, and columns
count code points after non-ASCII text."""

from __future__ import annotations

import ast
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from edits import parses, semantic_edits
from generated import with_slow_function

from inplace_lsp.analysis import evaluator, summaries
from inplace_lsp.analysis.blocks import ParseCache, Splitter
from inplace_lsp.analysis.engine import (
    DocumentAnalysis,
    DocumentResult,
    _dedupe,
    analyze,
    analyze_document,
)
from inplace_lsp.analysis.findings import Finding, Related, Severity, Span

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CASES = Path(__file__).resolve().parent / "cases"

GATE = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        h += 1
        return h


class Safe(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        h += 2.0
        return h
"""


def keys(text: str) -> list[tuple[str, str, int, int]]:
    return [(f.code, f.severity.value, f.span.line, f.span.col) for f in analyze(text)]


def test_the_seed_facts() -> None:
    # sigmoid saves its output: `h += 1` fails; Linear does not: `h += 2.0` is fine (a hint
    # says it was checked).
    assert keys(GATE) == [("IPL001", "error", 12, 8), ("IPL001", "hint", 23, 8)]


def test_syntax_error_keeps_other_blocks() -> None:
    broken = GATE.replace("        h = self.fc(x)\n", "        h = self.fc(x\n")
    result = analyze_document(broken)
    assert [(f.code, f.line) for f in result.findings if f.severity.value == "error"] == [
        ("IPL001", 12)
    ]
    assert len(result.syntax_errors) == 1 and result.syntax_errors[0].line >= 16


def test_column_after_non_ascii_text() -> None:
    text = GATE.replace("        h += 1\n", "        note = 'température ü'; h += 1\n")
    finding = analyze(text)[0]
    line = text.splitlines()[finding.line - 1]
    assert line[finding.span.col : finding.span.end_col] == "h += 1"


def _mutations(text: str, rng: random.Random) -> list[str]:
    """A typing session: characters inserted and deleted, lines added, removed, broken."""
    lines = text.splitlines(keepends=True)
    versions = []
    for _ in range(40):
        i = rng.randrange(len(lines))
        action = rng.choice(["char", "delete", "dup", "drop", "break", "comment"])
        line = lines[i]
        if action == "comment":  # typing in a comment: at its end, or a new one
            end = line.rstrip("\r\n")
            lines[i] = end + ("x" if "#" in end else "  # n") + line[len(end) :]
        elif action == "char" and line.strip():
            at = rng.randrange(len(line))
            lines[i] = line[:at] + rng.choice("x(): +=1") + line[at:]
        elif action == "delete" and len(line) > 1:
            at = rng.randrange(len(line) - 1)
            lines[i] = line[:at] + line[at + 1 :]
        elif action == "dup":
            lines.insert(i, line)
        elif action == "drop" and len(lines) > 5:
            del lines[i]
        elif action == "break":
            lines[i] = line.rstrip("\n") + " (\n"
        versions.append("".join(lines))
    return versions


@pytest.mark.parametrize(
    "name", ["residual_after_sigmoid.py", "gan_step_order.py", "relu_inplace_reused.py"]
)
def test_incremental_equals_fresh(name: str) -> None:
    """After each keystroke of a typing session that leaves the text parsing, the findings
    are a fresh analysis's. While it does not parse, a block that does not stands as it last
    parsed (test_a_class_broken_for_a_keystroke_still_defines_what_it_did), which a fresh
    analysis has no past for: then each finding lies on the text's lines."""
    rng = random.Random(name)
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    live = DocumentAnalysis()
    live.update(text)
    broken = 0
    for version in _mutations(text, rng):
        incremental = live.update(version)
        fresh = DocumentAnalysis().update(version)
        if parses(version):
            assert incremental.findings == fresh.findings
        else:
            broken += 1
            lines = len(version.splitlines())
            assert all(
                1 <= span.line <= span.end_line <= lines
                for f in incremental.findings
                for span in (f.span, *(r.span for r in f.related if r.path is None))
            )
        # Where errors are cut out is a heuristic (the edited block vs. column-0 pieces); both
        # must see that the text does not parse.
        assert bool(incremental.syntax_errors) == bool(fresh.syntax_errors) == (not parses(version))
    assert broken > 5


def test_edit_reparses_only_the_edited_block() -> None:
    live = DocumentAnalysis()
    live.update(GATE)
    before = live.parse_cache.parses
    result = live.update(GATE.replace("h += 2.0", "h += 3.0"))
    assert live.parse_cache.parses - before == 1
    assert [(f.code, f.line) for f in result.findings if f.severity.value == "error"] == [
        ("IPL001", 12)
    ]


def test_statements_that_share_a_line_are_one_block_of_whole_lines() -> None:
    """`a; b` and a statement that starts where the one before it ends are one block, whose
    tree holds both: each line is some block's, and no two blocks share a text they do not
    both have (a line's first statement used to be cut to an empty text, whose cached tree
    every such block then shared), in one update and in an edit's."""
    from inplace_lsp.analysis.blocks import Splitter

    text = (
        "import torch\n"
        "a = 1; b = 2\n"
        "x = torch.zeros(2)\n"
        "c = (1,\n"
        "     2); d = 3\n"
        "y = x * 2; y.add_(1)\n"
    )
    splitter = Splitter()
    for version in (text, text.replace("y = x * 2", "y = x * 3")):
        blocks = splitter.split(version)
        assert "".join(b.text for b in blocks) == version
        assert all(b.text for b in blocks)
        assert [[ast.unparse(s) for s in b.tree.body] for b in blocks if b.tree] == [
            ["import torch"],
            ["a = 1", "b = 2"],
            ["x = torch.zeros(2)"],
            ["c = (1, 2)", "d = 3"],
            [version.splitlines()[-1].split("; ")[0], "y.add_(1)"],
        ]


BINOP_3000 = "import torch\nx = " + "1 + " * 3000 + "1\n"  # too deep for 3.11 and 3.12
NUL = "import torch\n\x00\n"


def _fails_without_a_line(text: str) -> bool:
    """Python rejects the text with no line to blame (null bytes; RecursionError)."""
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc.lineno is None
    except (RecursionError, ValueError):
        return True
    return False


# Each text with the lines of its syntax errors: nothing in them is a finding.
BAD_INPUTS = [
    pytest.param("", [], id="empty"),
    pytest.param("\n\n\n", [], id="blank"),
    pytest.param(
        "import torch\nx = " + "(" * 1000 + "1" + ")" * 1000 + "\n", [2], id="parens-1000"
    ),
    pytest.param(BINOP_3000, [2] if _fails_without_a_line(BINOP_3000) else [], id="binop-3000"),
    pytest.param(
        "import torch\n"
        + "if x:\n"
        + "".join(" " * i + "if x:\n" for i in range(1, 90))
        + " " * 90
        + "x += 1\n",
        [],
        id="nested-ifs",
    ),
    pytest.param("import torch\ndef f(:\n", [2], id="syntax"),
    pytest.param(NUL, [2], id="nul"),
    pytest.param(
        "import torch\nclass A(nn.Module):\n    def forward(self, x):\n"
        "        return self.forward(x)\n",
        [],
        id="recursion",
    ),
    # a line of a Unicode space
    pytest.param("import torch\n\u2028\nx = torch.ones(2)\nx += 1\n", [2], id="u2028-line"),
]


@pytest.mark.parametrize("text,error_lines", BAD_INPUTS)
def test_bad_input_never_raises(text: str, error_lines: list[int]) -> None:
    result = analyze_document(text)
    assert [(f.code, f.line) for f in result.findings] == []
    assert bool(result.syntax_errors) == bool(error_lines)


@pytest.mark.parametrize("text,error_lines", [p for p in BAD_INPUTS if p.values[1]])
def test_bad_input_says_the_line_of_its_syntax_error(text: str, error_lines: list[int]) -> None:
    assert [e.line for e in analyze_document(text).syntax_errors] == error_lines


def test_cli_on_a_ten_megabyte_file(tmp_path: Path) -> None:
    block = GATE.replace("class Gate", "class Gate{n}").replace("class Safe", "class Safe{n}")
    body = "".join(block.replace("{n}", str(i)) for i in range(10 * 1024 * 1024 // len(block) + 1))
    path = tmp_path / "huge.py"
    path.write_text(body, encoding="utf-8")
    # Above the default max_file_bytes (2 MB): a project can raise it.
    (tmp_path / "pyproject.toml").write_text("[tool.inplace-lsp]\nmax_file_bytes = 20_000_000\n")
    run = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "check", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout.count('"IPL001"') == body.count("class Gate")


def test_output_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Which name a message gives for three views of one tensor saved by one op (torchvision's
    `b2.clamp(b1, b3)`) must not follow the order of a set of strings."""
    path = tmp_path / "boxes.py"
    path.write_text(
        "import torch\n\n\n"
        "def clamp_intercepts(b, bm, height):\n"
        "    b1, b2, b3, b4 = b.unbind(-1)\n"
        "    b1m, b2m, b3m, b4m = bm.unbind(-1)\n"
        "    b1 = b2.clamp(b1, b3).clamp(0, height)\n"
        "    b4 = b3.clamp(b2, b4).clamp(0, height)\n"
        "    b1.clamp_(b1m, b3m)\n"
        "    b3.clamp_(b1m, b3m)\n"
        "    b2.clamp_(b2m, b4m)\n"
        "    return torch.stack([b1, b2, b3, b4], dim=-1)\n",
        encoding="utf-8",
    )
    outputs = set()
    for seed in range(8):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        command = [sys.executable, "-m", "inplace_lsp", "check", "--show-hints", str(path)]
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert "IPL001" in result.stdout, result.stdout + result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1, outputs


def _big_class(methods: int) -> str:
    body = "".join(
        f"    def step_{i}(self, x):\n"
        f"        h = self.fc(x) * {i}\n"
        "        g = torch.sigmoid(h)\n"
        "        y = g + h\n"
        "        y += 1\n"
        "        return y.sum()\n\n"
        for i in range(methods)
    )
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Big(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(8, 8)\n\n" + body
    )


def test_what_is_kept_for_old_texts_is_bounded() -> None:
    """Each keystroke in a large class makes a new block text. What is kept for the texts the
    document no longer has must stay bounded: parse trees by their source size, findings by
    count, and a syntax error (the user mid-typing) must not keep the frames that raised it
    (they hold the whole document's lines and the previous version's blocks, a chain that
    grew by megabytes a keystroke: 98 MB to 6.66 GB over 1,000 edits of transformers'
    Trainer). The figures themselves are benchmarks/edit_memory.py's."""
    text = _big_class(40)
    lines = text.splitlines(keepends=True)
    sites = [i for i, line in enumerate(lines) if line.startswith("        ") and line.strip()]
    rng = random.Random(0)
    cache = ParseCache(max_chars=3 * len(text))
    doc = DocumentAnalysis(parse_cache=cache)
    doc.update(text)
    for _ in range(120):
        line = rng.choice(sites)
        column = rng.randrange(8, len(lines[line]))
        original = lines[line]
        lines[line] = original[:column] + "x" + original[column:]
        doc.update("".join(lines))
        for block in doc.splitter._blocks:
            if block.error is not None:
                assert block.error.__traceback__ is None
                assert block.error.__context__ is None
        lines[line] = original
        doc.update("".join(lines))
        assert cache.chars <= 3 * len(text) + len(text)  # the trees kept, and the first split
        # The findings of each of the 40 methods and of the other blocks, as many old ones
        # (a keystroke that breaks the class for a moment brings them back), and 32 more.
        assert len(doc._results) <= 2 * (40 + 2) + 32


def test_the_interned_facts_are_bounded_and_the_recent_ones_kept() -> None:
    """Facts name the AST nodes of one parse, so every keystroke in a method makes new ones:
    the table kept up to 100,000 (~6 kB each: +15 MB per 1,000 keystrokes in a 4,128-line
    file, benchmarks/edit_memory.py --day). Two generations of at most _INTERNED_MAX now,
    small enough for a day of editing; what is asked for again stays one object."""
    assert 2 * summaries._INTERNED_MAX <= 10_000
    kept = summaries.intern(("kept", 0))
    for number in range(3 * summaries._INTERNED_MAX):
        summaries.intern(("unique", number))
        if number % 1000 == 0:
            assert summaries.intern(("kept", 0)) is kept
        assert len(summaries._INTERNED) + len(summaries._INTERNED_OLDER) <= (
            2 * summaries._INTERNED_MAX
        )
    assert summaries.intern(("unique", 0)) is not None  # gone, or kept: equal either way


# A method chain 400 calls long: the interpreter runs out of Python's stack on it.
_DEEP_CHAIN = (
    "import torch\n"
    "\n"
    "def deep(x):\n"
    "    h = torch.sigmoid(x)\n"
    "    h.mul_(2)\n"
    "    return h" + ".clone()" * 400 + "\n"
    "\n"
    "def shallow(x):\n"
    "    h = torch.sigmoid(x)\n"
    "    h.mul_(2)\n"
    "    return h\n"
)


def test_a_function_too_deep_to_analyse_is_said_not_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = analyze_document(_DEEP_CHAIN)
    assert [(n.line, n.subject) for n in result.notes] == [(3, "function `deep`")]
    assert "too deep to analyse" in result.notes[0].message
    assert "line 6" in result.notes[0].message  # the statement that was too deep
    assert [(f.code, f.span.line) for f in result.findings] == [("IPL001", 10)]  # shallow's
    # The language server's analysis logs it, once per function, not per keystroke.
    analysis = DocumentAnalysis()
    with caplog.at_level(logging.WARNING, logger="inplace_lsp.analysis.engine"):
        analysis.update(_DEEP_CHAIN)
        analysis.update(_DEEP_CHAIN.replace("mul_(2)", "mul_(3)"))
    assert [r.getMessage() for r in caplog.records] == ["<document>:3: " + result.notes[0].message]


def test_a_function_over_the_time_limit_is_said_not_analysed_and_the_rest_is() -> None:
    short = analyze_document(with_slow_function(3), time_limit_s=10.0)
    # Within the limit, its write is found (line 18), as are the others'.
    assert [(f.code, f.span.line) for f in short.findings] == [
        ("IPL001", 18),
        ("IPL001", 24),
        ("IPL001", 31),
    ]
    assert short.notes == ()
    # 600 statements take seconds to analyse: over a 0.1 s limit, `slow` is said on its def
    # (once, not again for its call in calls_slow), and quick's and calls_slow's findings stay.
    text = with_slow_function(600)
    result = analyze_document(text, time_limit_s=0.1)
    (note,) = result.notes
    assert (note.line, note.col, note.subject) == (4, 0, "function `slow`")
    assert note.message == (
        "function `slow` is not analysed: its analysis took longer than 0.1 s (setting "
        "function_time_limit_s); the rest of the file is analysed"
    )
    assert [(f.code, f.span.line) for f in result.findings] == [("IPL001", 2412), ("IPL001", 2419)]


def test_a_callee_over_the_time_limit_is_unknown_where_it_is_called() -> None:
    text = with_slow_function(600).replace("    h.add_(1)\n", "")  # slow is no entry point
    result = analyze_document(text, time_limit_s=0.1)
    (note,) = result.notes
    assert (note.line, note.subject) == (4, "calls of `slow`")
    assert note.message == (
        "`slow` is not analysed where it is called: its analysis took longer than 0.1 s "
        "(setting function_time_limit_s)"
    )
    assert [(f.code, f.span.line) for f in result.findings] == [("IPL001", 2411), ("IPL001", 2418)]


def _long_block(lines: int) -> str:
    return "def long(x):\n" + "".join(f"    x = x + {i}\n" for i in range(lines)) + "    return x\n"


def test_a_syntax_error_typed_beside_a_long_function_does_not_parse_it_again() -> None:
    """A region that does not parse is widened by the blocks around it (an `else:` typed
    under an `if`), but not over thousands of lines: that parsed a 20,000-line function
    three times per keystroke."""
    cache = ParseCache()
    analysis = DocumentAnalysis(parse_cache=cache)
    head = "import torch\n\n\n" + _long_block(3000) + "\n\ndef short(x):\n    y = x.exp()\n"
    analysis.update(head + "    return y\n")
    before = cache.parses
    analysis.update(head + "    return y + 0\n")
    print(f"\nparses for a keystroke: {cache.parses - before} (the edited block)")
    assert cache.parses - before == 1
    analysis.update(head + "    return y\n")
    before = cache.parses
    typed = analysis.update(head + "    y.\n    return y\n")
    print(f"parses for a syntax error typed beside a 3,000-line function: {cache.parses - before}")
    assert [e.line for e in typed.syntax_errors] == [3010]
    assert cache.parses - before == 2  # the short block: tried, then kept with its error
    fixed = analysis.update(head + "    y.add_(1)\n    return y\n")
    assert [(f.code, f.line) for f in fixed.findings] == [("IPL001", 3010)]


def test_an_else_typed_after_a_long_block_still_joins_it() -> None:
    analysis = DocumentAnalysis()
    body = "".join(f"    x = x + {i}\n" for i in range(3000))
    text = "import torch\nx = torch.ones(2)\nif x.sum() > 0:\n" + body
    analysis.update(text + "y = 1\n")
    edited = analysis.update(text + "else:\n    x.add_(1)\n")
    assert edited.syntax_errors == []
    assert edited == analyze_document(text + "else:\n    x.add_(1)\n")


def test_an_edit_elsewhere_does_not_time_a_slow_function_again() -> None:
    analysis = DocumentAnalysis()
    analysis.time_limit_s = 0.1
    text = with_slow_function(600)
    first = analysis.update(text)
    assert [n.subject for n in first.notes] == ["function `slow`"]
    edited = analysis.update(text.replace("y.add_(1)", "y.add_(2)"))
    assert edited.functions_analysed == 1  # quick only: slow keeps its note, unrun
    assert edited.notes == first.notes
    assert [(f.code, f.span.line) for f in edited.findings] == [("IPL001", 2412), ("IPL001", 2419)]
    # Lines added above move the note with the function, and run nothing.
    moved = analysis.update("# a comment\n" + text)
    assert moved.functions_analysed == 0
    assert [(n.line, n.subject) for n in moved.notes] == [(5, "function `slow`")]


# ---------------------------------------------------------------- strict mode (unknown syntax)


def _node_classes(base: type) -> list[type]:
    """The node classes of this Python's parser (not the deprecated aliases it never makes)."""
    deprecated = {"Num", "Str", "Bytes", "NameConstant", "Ellipsis"}
    return [
        cls
        for name, cls in vars(ast).items()
        if isinstance(cls, type) and issubclass(cls, base) and cls is not base
        if name not in deprecated and not name.startswith("_")
    ]


def test_every_statement_and_expression_has_a_handler() -> None:
    """Python's grammar grows (`type X = ...` in 3.12): a node the interpreter does not
    handle must show up here, not be skipped silently while analysing."""
    from inplace_lsp.analysis import evaluator

    missing = [c.__name__ for c in _node_classes(ast.stmt) if c not in evaluator._STMT_HANDLERS]
    missing += [c.__name__ for c in _node_classes(ast.expr) if c not in evaluator._EXPR_HANDLERS]
    assert missing == []


def test_the_suite_runs_in_strict_mode_and_an_unhandled_node_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inplace_lsp.analysis import evaluator

    assert evaluator.STRICT  # tests/conftest.py sets INPLACE_LSP_STRICT=1
    text = (
        "import torch\ndef f(x):\n    h = x * 2\n    assert h.dim() == 2\n    h.mul_(2)\n"
        "    return h\n"
    )
    analyze(text)
    handlers = {k: v for k, v in evaluator._STMT_HANDLERS.items() if k is not ast.Assert}
    monkeypatch.setattr(evaluator, "_STMT_HANDLERS", handlers)
    with pytest.raises(evaluator.UnhandledNode, match=r"ast\.Assert \(line 4\)"):
        analyze(text)
    monkeypatch.setattr(evaluator, "STRICT", False)
    assert [f for f in analyze(text) if f.severity is Severity.ERROR] == []


MOVED = """\
import torch


def scale(h):
    h.mul_(2)
    return h


def forward(x):
    h = torch.sigmoid(x)
    h = scale(h)
    return h.sum()


forward(torch.randn(3, requires_grad=True)).backward()
"""


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: "\n\n" + text,  # every block moves
        lambda text: text.replace("\n\n\ndef forward", "\n\n\nLIMIT = 3\n\n\ndef forward"),
        lambda text: text.replace("\ndef scale", "\n# helpers\ndef scale"),  # the helper moves
    ],
)
def test_a_block_that_only_moved_keeps_its_findings_moved_with_it(edit: object) -> None:
    """Lines added above code move its findings (spans, related locations, fixes and the
    "(line N)" in messages, each by how far its own block moved) without analysing it again;
    they equal a fresh analysis of the new text."""
    assert callable(edit)
    live = DocumentAnalysis()
    before = live.update(MOVED)
    assert [f.code for f in before.findings] == ["IPL001"]
    assert "(line 10)" in before.findings[0].message
    moved = live.update(edit(MOVED))
    assert moved.blocks_analysed == 0
    assert moved.findings == DocumentAnalysis().update(edit(MOVED)).findings
    assert moved.findings != before.findings


@pytest.mark.parametrize("odd", ["\f", "\u2028", "\v", "\x85", "\u2029", "\x1c"])
def test_characters_that_splitlines_breaks_at_do_not_move_lines(odd: str) -> None:
    """A form feed or U+2028 in a comment is no line break for Python or for LSP: the
    findings below it are those of the same text with a space there, on every update."""
    text = (EXAMPLES / "residual_after_sigmoid.py").read_text(encoding="utf-8")
    plain = "# page one  and two\n" + text
    odd_text = plain.replace("one  and", f"one {odd}and")
    expected = DocumentAnalysis().update(plain).findings
    assert expected
    live = DocumentAnalysis()
    assert live.update(odd_text).findings == expected
    edited = odd_text.replace("import torch", "import torch  ", 1)
    assert (
        live.update(edited).findings
        == DocumentAnalysis().update(plain.replace("import torch", "import torch  ", 1)).findings
    )
    assert analyze_document(odd_text).findings == expected


COMMENTED = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)  # the projection

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))  # gate
        s = "# not a comment"
        h += 1
        return h


def build(dim):
    return Gate(dim)


def run(x):
    return build(4)(x).sum()
"""


@pytest.mark.parametrize(
    ("old", "new", "only"),
    [
        ("  # gate", "  # the gate", True),
        ("  # the projection", "  # the projection, dim x dim", True),
        ("        h += 1\n", "        h += 1  # add\n", True),
        ('"# not a comment"', '"# not a commentary"', False),  # inside a string
        ("  # gate", "", True),  # a comment removed
        ("torch.sigmoid(self.fc(x))  # gate", "torch.tanh(self.fc(x))  # gate", False),
        ("        h += 1\n", "        h += 1\n        # add\n", False),  # a line more
    ],
)
def test_an_edit_only_inside_comments_analyses_nothing(old: str, new: str, only: bool) -> None:
    """Typing in a comment changes no finding: nothing is analysed again, the class nor what
    depends on it, and the findings are a fresh analysis's; an edit that looks like one but
    changes code (a `#` in a string, code before the comment) is analysed."""
    live = DocumentAnalysis()
    live.update(COMMENTED)
    edited = live.update(COMMENTED.replace(old, new, 1))
    assert (edited.blocks_analysed == 0) is only
    assert edited.findings == DocumentAnalysis().update(COMMENTED.replace(old, new, 1)).findings


def _as_fresh(live: DocumentAnalysis, text: str) -> DocumentResult:
    """`live` updated to `text`, checked against a fresh analysis of it: findings, verify
    targets and notes."""
    result, fresh = live.update(text), DocumentAnalysis().update(text)
    assert (result.findings, result.targets, result.notes) == (
        fresh.findings,
        fresh.targets,
        fresh.notes,
    )
    return result


def test_typing_in_comments_between_code_edits_keeps_every_result_a_fresh_analysis() -> None:
    """A run of comment keystrokes reuses the whole last result (no model, no table is built
    again); the code edits between them, and their undo, still come out as a fresh analysis's:
    findings, verify targets and notes."""
    steps = [  # (old, new, whether an entry point is interpreted again)
        ("  # gate", "  # gate!", False),
        ("  # gate!", "  # gate!?", False),
        ("        h += 1\n", "        h += 2\n", True),
        # The undo of the code, not of the comments: `run` is kept, `Gate.forward` (whose
        # text, comment included, is new) runs again.
        ("        h += 2\n", "        h += 1\n", True),
        ("  # the projection", "  # the projection, then loss.backward()", True),
        ("  # gate!?", "  # gate", False),
    ]
    live, text = DocumentAnalysis(), COMMENTED
    live.update(text)
    for old, new, interpreted in steps:
        text = text.replace(old, new, 1)
        result = _as_fresh(live, text)
        assert result.findings, "the sigmoid's output is written in place"
        assert (result.functions_analysed > 0) is interpreted, (old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("import torch\n", "\n\nimport torch\n"),  # lines added at the top
        ("\n\ndef build(dim):", "\n\n\n# helpers\n\ndef build(dim):"),  # between blocks
        ("import torch.nn as nn\n\n", "import torch.nn as nn\n"),  # a line removed above
    ],
)
def test_blocks_that_only_moved_move_the_last_result(old: str, new: str) -> None:
    """Lines added or removed between blocks move every finding, its message's line
    references, the verify targets and the notes with the blocks, and analyse nothing."""
    live = DocumentAnalysis()
    first = live.update(COMMENTED)
    assert any("(line 11)" in f.message for f in first.findings)
    result = _as_fresh(live, COMMENTED.replace(old, new, 1))
    assert result.functions_analysed == 0
    assert result.findings != first.findings or old.startswith("\n\ndef")


HEADED = (
    "# header\n\ndef f(x):\n    import torch\n\n"
    "    h = torch.sigmoid(x)\n    h += 1\n    return h\n"
)


@pytest.mark.parametrize(
    "new",
    [
        "\n" + HEADED,  # a line added at the top of the file, above the header
        HEADED.replace("# header\n", "# header\n# more of it\n"),
        HEADED.replace("# header\n\n", ""),  # the header removed
    ],
)
def test_an_edit_above_the_first_statement_moves_its_findings(new: str) -> None:
    """The first block holds the header above its statement: an edit there moves the
    findings of the statement's code (message included) and analyses nothing."""
    live = DocumentAnalysis()
    assert live.update(HEADED).findings
    assert _as_fresh(live, new).functions_analysed == 0


UNITS = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        h += 1
        return h

    def describe(self):
        return "block"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.block(x))

    def reset(self):
        self.head.weight.data.mul_(0.5)


def unrelated(t):
    t.add_(1)
    return t
"""


@pytest.mark.parametrize(
    ("old", "new", "ran"),
    [
        # A method that cannot write in place and that nothing runs: nothing.
        ('return "block"', 'return "blocks"', set()),
        # A method nothing else runs: only it is analysed again.
        ("mul_(0.5)", "mul_(0.25)", {"Net.reset"}),
        ("t.add_(1)", "t.add_(2)", {"unrelated"}),
        # A method another one runs, that now says something else: both, not the other
        # methods of either class.
        ("torch.sigmoid(self.fc", "torch.tanh(self.fc", {"Block.forward", "Net.forward"}),
        # ... that says the same (its summary for the arguments the other gave it): only it,
        # the other's findings stand and its `self` is not built again (early cutoff); not
        # where one of them names the line edited (its message quotes it).
        ("        return h\n", "        return (h)\n", {"Block.forward"}),
        ("h += 1", "h += 2", {"Block.forward", "Net.forward"}),
        # __init__ gives the class its attributes: what reads the class is analysed again.
        ("nn.Linear(4, 2)", "nn.Linear(4, 3)", {"Net.forward", "Net.reset"}),
    ],
)
def test_the_unit_is_the_function_and_what_ran_it(
    old: str, new: str, ran: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit in a function analyses again the entry points whose analysis ran it (read
    it), and no other: not the other methods of its class, not code that only names it;
    and the findings are a fresh analysis's."""
    live = DocumentAnalysis()
    live.update(UNITS)
    interpreted: list[str] = []
    original = evaluator.Interpreter.run_function

    def counting(self, fn, start, owner):  # type: ignore[no-untyped-def]
        interpreted.append(f"{owner.name}.{fn.name}" if owner is not None else fn.name)
        return original(self, fn, start, owner)

    edited = UNITS.replace(old, new, 1)
    assert edited != UNITS
    monkeypatch.setattr(evaluator.Interpreter, "run_function", counting)
    result = live.update(edited)
    monkeypatch.undo()
    assert sorted(interpreted) == sorted(ran)
    assert result.functions_analysed == len(interpreted)
    assert result.findings == DocumentAnalysis().update(edited).findings


def _summarized(
    live: DocumentAnalysis, text: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], DocumentResult]:
    """The functions an update of `live` to `text` made summaries of, and its result."""
    made: list[str] = []
    original = evaluator.Interpreter._summarize

    def counting(self, fn, *args):  # type: ignore[no-untyped-def]
        made.append(self.model.def_key(fn))
        return original(self, fn, *args)

    monkeypatch.setattr(evaluator.Interpreter, "_summarize", counting)
    result = live.update(text)
    monkeypatch.undo()
    return made, result


def _edits_of_units(edited: str, again: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions an update of UNITS to `edited` made summaries of; the findings of that
    update and of a later one to `again` must be a fresh analysis's."""
    live = DocumentAnalysis()
    live.update(UNITS)
    made, result = _summarized(live, edited, monkeypatch)
    assert result.findings == DocumentAnalysis().update(edited).findings
    assert again != edited
    assert live.update(again).findings == DocumentAnalysis().update(again).findings
    return sorted(made)


def test_summaries_outlive_edits_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keystrokes in one function leave the summaries of other functions in place: back in
    `Net.forward` after three edits of `unrelated`, the edit runs `Net.forward` again, not
    the `Block.forward` it calls (whose summary those edits did not use)."""
    live = DocumentAnalysis()
    live.update(UNITS)
    for n in (2, 3, 4):
        live.update(UNITS.replace("t.add_(1)", f"t.add_({n})"))
    edited = UNITS.replace("t.add_(1)", "t.add_(4)").replace(
        "return self.head(self.block(x))", "return (self.head(self.block(x)))"
    )
    summarized, result = _summarized(live, edited, monkeypatch)
    assert result.functions_analysed == 1  # Net.forward
    assert summarized == ["Net.forward"]
    assert result.findings == DocumentAnalysis().update(edited).findings


@pytest.mark.parametrize(
    ("new", "summarized"),
    [
        # the same events, result and findings: Net.forward's summary still holds
        ("h += 1; pass", ["Block.forward", "Block.forward"]),
        ("h += 1  # shift", []),
        # another write: what Net.forward's summary applied changed, so it is made again
        # (and Block.forward for it: the one made to check it served only the check)
        ("h *= 2", ["Block.forward", "Block.forward", "Block.forward", "Net.forward"]),
    ],
)
def test_an_edited_callee_that_says_the_same_keeps_its_callers(
    new: str, summarized: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Early cutoff: an edit in `Block.forward` analyses it again (as an entry point and for
    the arguments `Net.forward` gave it); `Net.forward` is analysed again only when the
    callee's new summary differs from the one its summary applied."""
    edited = UNITS.replace("h += 1", new)
    again = UNITS.replace("h += 1", "h += 1; h = h * 1")  # and a later edit that changes it
    assert _edits_of_units(edited, again, monkeypatch) == summarized


@pytest.mark.parametrize(
    ("new", "summarized"),
    [
        # a local of its own, typed a keystroke at a time (`probe` names nothing yet): the
        # class has the same attributes, and Net.__init__ applied the same summary of it
        ("self.fc = nn.Linear(4, 4); probe = 1 + 2", ["Block.__init__", "Block.forward"]),
        ("self.fc = nn.Linear(4, 4); probe", ["Block.__init__", "Block.forward"]),
        # another attribute: what holds a Block (Net's summaries) is made again
        (
            "self.fc = nn.Linear(4, 3)",
            [
                "Block.__init__",
                "Block.forward",
                "Block.forward",
                "Net.__init__",
                "Net.forward",
                "Net.reset",
            ],
        ),
    ],
)
def test_an_edit_in_init_that_gives_the_same_attributes_keeps_the_summaries_of_its_users(
    new: str, summarized: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`__init__` is the class's shape only through what it gives the class
    (ClassInfo.init_said): an edit there that gives the same is an edit of a callee, cut
    off early like any other; the findings are a fresh analysis's, then and after a later
    edit that changes them."""
    edited = UNITS.replace("self.fc = nn.Linear(4, 4)", new)
    again = edited.replace("nn.Linear(4, 2)", "nn.Linear(4, 2)\n        self.fc.inplace = 1")
    assert _edits_of_units(edited, again, monkeypatch) == summarized


def test_objects_kept_in_summaries_run_the_methods_their_class_has_now() -> None:
    """A line dropped in a method parses its class's block again: the object a kept
    summary made (`get_loss_f()` returns a FactorKLoss) must run the method as it is now,
    not the old one at its old lines (the step was reported one line too low)."""
    text = Path(__file__).resolve().parent / "realworld" / "015_factor_vae_step_inside_loss.py"
    text = text.read_text(encoding="utf-8")
    line = "        vae_loss = rec_loss + kl_loss + anneal_reg * self.gamma * tc_loss\n"
    edited = text.replace(line, "")
    assert edited != text
    live = DocumentAnalysis()
    live.update(text)
    fresh = DocumentAnalysis().update(edited).findings
    assert [f.code for f in fresh if f.severity is Severity.ERROR] == ["IPL007"]
    assert live.update(edited).findings == fresh


BASE_ATTRIBUTES = """\
import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)


class Gate(Base):
    def forward(self, x):
        return self.act(torch.sigmoid(x))
"""


def test_a_class_sees_the_attributes_its_base_has_now() -> None:
    """A derived class's attributes come from its base's __init__: an edit there (the
    derived class's own text unchanged) is seen, both ways."""
    live = DocumentAnalysis()
    assert [f.code for f in live.update(BASE_ATTRIBUTES).findings] == ["IPL003"]
    safe = BASE_ATTRIBUTES.replace("inplace=True", "inplace=False")
    assert live.update(safe).findings == [] == DocumentAnalysis().update(safe).findings
    assert [f.code for f in live.update(BASE_ATTRIBUTES).findings] == ["IPL003"]
    renamed = BASE_ATTRIBUTES.replace("self.act = ", "self.other = ")
    assert live.update(renamed).findings == DocumentAnalysis().update(renamed).findings


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(CASES.glob("*.py")) if p.read_text(encoding="utf-8").count("def ") > 2][::4],
    ids=lambda p: p.stem,
)
def test_incremental_equals_fresh_after_edits_that_change_meaning(path: Path) -> None:
    """Each update reuses an entry point's findings only while every definition its
    analysis read is unchanged: after each edit, the findings are a fresh analysis's."""
    text = path.read_text(encoding="utf-8")
    live = DocumentAnalysis()
    live.update(text)
    for version in semantic_edits(text, random.Random(path.name)):
        assert live.update(version).findings == DocumentAnalysis().update(version).findings


def test_a_class_broken_for_a_keystroke_comes_back_without_analysis() -> None:
    """Typing `(` in a method breaks its class's syntax for a moment: that update uses none
    of the class's findings. The next keystroke restores the text, and every method's
    findings come back from the cache (a 4,500-line class would take a second)."""
    text = _big_class(60)
    live = DocumentAnalysis()
    first = live.update(text)
    broken = text.replace("        g = torch.sigmoid(h)\n", "        g = torch.sigmoid((h)\n", 1)
    assert live.update(broken).syntax_errors
    again = live.update(text)
    assert again.functions_analysed == 0
    assert again.findings == first.findings


ACT = """\
import torch
import torch.nn as nn


class Act(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)

    def scale(self):
        return 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = Act()

    def forward(self, x):
        h = self.act(x)
        h += 1
        return h
"""


def _errors(result: DocumentResult) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in result.findings if f.severity is Severity.ERROR]


def test_a_class_broken_for_a_keystroke_still_defines_what_it_did() -> None:
    """While a method is mid-typing (its class does not parse), the class stands as it last
    parsed: the analyses that read it keep their findings and are not run again (`Net`'s
    error rests on `Act.forward` saving its output); a first open of broken text has no
    such past. Once the class parses again, the findings are a fresh analysis's."""
    live = DocumentAnalysis()
    assert _errors(live.update(ACT)) == [("IPL001", 20)]
    typed = ACT.replace("        return 1\n", "        return 1\n        probe = (\n")
    for step in (typed, typed.replace("(\n", "(2\n")):
        broken = live.update(step)
        assert broken.syntax_errors and broken.functions_analysed == 0
        assert _errors(broken) == [("IPL001", 21)]
    assert _errors(analyze_document(typed)) == []  # (no past: `Act` is not known)
    for done in (
        typed.replace("(\n", "(2)\n"),
        typed.replace("probe = (\n", "pass\n").replace("torch.sigmoid", "torch.relu"),
    ):
        assert live.update(done).findings == DocumentAnalysis().update(done).findings
    assert _errors(live.update(ACT)) == [("IPL001", 20)]


DECORATED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.inference_mode()
def evaluate(model, x, y):
    probs = F.softmax(model(x), dim=-1)
    nll = -probs.gather(1, y[:, None]).log_().mean()
    return nll.item()


def run() -> None:
    model = nn.Linear(4, 3)
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    evaluate(model, x, y)
"""


def test_an_edit_of_a_decorated_callee_analyses_its_callers_again() -> None:
    """What `run` finds rests on the text of `evaluate`, which it calls, decorated or not:
    without `@torch.inference_mode()` the write is checked safe (a Hint) through `run`.
    (The callee's text was read only by chance, and a decorator that turns grad mode off
    skipped that read: `run` kept its findings from before the edit.)"""
    live = DocumentAnalysis()
    live.update(DECORATED)
    plain = DECORATED.replace("@torch.inference_mode()\n", "")
    result = live.update(plain)
    assert result.findings == DocumentAnalysis().update(plain).findings
    assert [(f.code, f.severity, f.line) for f in result.findings] == [("IPL001", Severity.HINT, 8)]


def test_a_syntax_error_block_holds_the_blocks_it_replaced_where_they_fit() -> None:
    """Block.stands_for: the blocks a region that stopped parsing replaced, as they last
    parsed, moved with the lines above them; carried while the region stays broken, and
    none where lines were deleted from under them."""
    splitter = Splitter()
    first = splitter.split(ACT)
    act = next(b for b in first if b.text.startswith("class Act"))
    typed = ACT.replace("        return 1\n", "        return (\n")
    broken = next(b for b in splitter.split(typed) if b.tree is None)
    assert broken.stands_for == (act,)
    for above in ("\n\n" + typed, "\n\n" + typed.replace("(\n", "(1\n")):
        again = next(b for b in splitter.split(above) if b.tree is None)
        assert [(b.key, b.start_line) for b in again.stands_for] == [(act.key, act.start_line + 2)]
    assert splitter.split(ACT)[1].stands_for == ()
    deleted = ACT.replace("    def scale(self):\n        return 1\n", "    def scale(self:\n")
    splitter.split(ACT)
    assert next(b for b in splitter.split(deleted) if b.tree is None).stands_for == ()


def test_modules_never_become_their_own_parents() -> None:
    """`self.config = config` where the code passed the model itself as its config (as
    transformers' modular_ernie.py does, `super().__init__(self, config)`) looped forever
    reading the module's training flag up a cycle of parents."""
    from inplace_lsp.analysis.domain import ModuleRef

    outer, inner = ModuleRef("Outer", None, 1), ModuleRef("Inner", None, 2)
    outer.adopt(inner)
    inner.adopt(outer)  # the child's attribute holds its parent
    outer.adopt(outer)
    assert inner.parent is outer and outer.parent is None
    outer.training_flag = False
    assert not inner.training and not outer.training


ACCUMULATING = """\
import torch
import torch.nn.functional as F


def train(model: torch.nn.Module, loader, opt):
    RESET_BEFORE
    for epoch in range(3):
        RESET_EPOCH
        for step, (x, y) in enumerate(loader):
            loss = F.mse_loss(model(x), y)
            loss.backward()
            total += loss
            if step % 4 == 3:
                opt.step()
                opt.zero_grad()
                RESET_WINDOW
        print(total)
"""


@pytest.mark.parametrize(
    ("before", "epoch", "window", "reported"),
    [
        ("total = 0", "pass", "total = 0", False),  # each window's graphs, then let go
        ("total = 0", "pass", "total = total.detach()", False),
        ("total = 0", "pass", "pass", True),  # every step's graph, for the whole run
        ("pass", "total = 0.0", "pass", True),  # set back per epoch: an epoch's graphs
        ("total = 0", "pass", "total = total * 0.5", True),  # rebound, graph and all
        ("total = 0", "pass", "total = 0 if epoch else total", True),  # on one path only
    ],
)
def test_a_total_the_same_loop_sets_back_keeps_one_windows_graphs(
    before: str, epoch: str, window: str, reported: bool
) -> None:
    """IPL004: `total += loss` holds every iteration's graph unless the loop it accumulates
    across sets it back to a value without a graph (torch: with the reset after each window,
    the graph behind the total stays one window's nodes; without it, it grows every step)."""
    text = (
        ACCUMULATING.replace("RESET_BEFORE", before)
        .replace("RESET_EPOCH", epoch)
        .replace("RESET_WINDOW", window)
    )
    found = [f.line for f in analyze(text) if f.code == "IPL004"]
    assert (found == [12]) is reported, found


RUNNING_MEAN = """\
import torch
import torch.nn as nn


class RunningMean(nn.Module):
    def __init__(self, beta: float, scale: int = 2):
        super().__init__()
        self.beta = beta
        self.steps = nn.Parameter(torch.tensor(0.0), requires_grad=False)
        self.total = nn.Parameter(torch.tensor(0.0), requires_grad=False)

    def forward(self, x):
        mean = self.total / (1 - self.beta**self.steps)
        loss = ((x - mean) ** 2).mean()
        self.total.mul_(self.beta)
        self.steps.add_(1.0)
        return loss
"""


@pytest.mark.parametrize(
    ("signature", "reported"),
    [
        ("beta: float, scale: int = 2", False),  # a Python number: nothing is saved
        ("beta, scale: int = 2", True),  # may be a tensor that requires grad
    ],
)
def test_a_constructor_argument_the_analysis_lacks_is_what_its_annotation_says(
    signature: str, reported: bool
) -> None:
    """A class analysed on its own is built from constructor arguments nobody passed: a
    `float` one is a Python number (torch: `t / (1 - 0.99 ** p)` with parameters made with
    requires_grad=False saves nothing); an unannotated one may be a tensor that requires
    grad, and what rests on that stays a Warning."""
    text = RUNNING_MEAN.replace("beta: float, scale: int = 2", signature)
    found = [f for f in analyze(text) if f.code == "IPL001" and f.severity != Severity.HINT]
    if not reported:
        assert not found, [f.message for f in found]
    else:
        assert [f.line for f in found] == [15, 16]
        assert all(f.severity == Severity.WARNING for f in found)


DETACHED = """\
import torch


class Holder:
    def __init__(self):
        self.last = None

    def keep(self, x):
        self.last = x * 2
        return self.last


def mask(x: torch.Tensor, holder: Holder, avail: torch.Tensor):
    made = MADE
    made[avail == 0] = -1e9
    return x, holder.last, made
"""


@pytest.mark.parametrize(
    ("made", "reported"),
    [
        ("x.clone().detach()", False),  # a copy no name holds: its only handle
        ("torch.softmax(x, dim=-1).detach()", False),
        ("(x * 2).detach()", False),
        ("x.detach()", True),  # x itself changes
        ("x.view(-1, 4).detach()", True),  # a view of x: x changes
        ("Holder().keep(x).detach()", True),  # the holder's `last` is the tensor
    ],
)
def test_a_write_through_a_detach_of_a_tensor_just_made_changes_nothing_else(
    made: str, reported: bool
) -> None:
    """IPL005: `t.clone().detach()` is the only handle on the copy (torch: writing into it
    leaves t, its version and its storage as they were); a detach of a name, of a view, or of
    what a function of the code returns (and may keep) still changes what something else
    reads."""
    found = [f.line for f in analyze(DETACHED.replace("MADE", made)) if f.code == "IPL005"]
    assert (found == [15]) is reported, found


def test_an_item_of_an_argument_names_the_argument_its_warning_rests_on() -> None:
    """`torch.max(cls_probs[i], 0)` saves its indices only if `cls_probs` requires grad
    (torch: d2l's multibox_detection, then a backward() through the scores it returns,
    fails at MaxBackward0 once `class_id[non_keep] = -1` bumped the indices' version; under
    no_grad nothing is saved): the Warning says which argument, not "on some paths"."""
    text = (
        "import torch\n"
        "def detect(cls_probs, batch_size):\n"
        "    out = []\n"
        "    for i in range(batch_size):\n"
        "        conf, class_id = torch.max(cls_probs[i][1:], 0)\n"
        "        class_id[conf < 0.5] = -1\n"
        "        out.append(torch.stack((class_id.float(), conf), dim=1))\n"
        "    return torch.stack(out)\n"
    )
    (found,) = [f for f in analyze(text) if f.code == "IPL001"]
    assert found.severity == Severity.WARNING and found.line == 6
    assert "fails if `cls_probs` requires grad" in found.message, found.message


BOUND_METHOD = """\
import torch
import torch.nn as nn


class Agent:
    def __init__(self, dim: int, use_topk: bool):
        self.net = nn.Linear(dim, 1)
        self.optim = torch.optim.Adam(self.net.parameters())
        self.calc_pi_loss = self.calc_pi_loss_topk if use_topk else self.calc_pi_loss_all

    def calc_pi_loss_all(self, states, advs):
        psi = nn.functional.softmax(advs, dim=0).squeeze_()
        return -(psi * self.net(states).squeeze(-1)).sum()

    def calc_pi_loss_topk(self, states, advs):
        top, idx = torch.topk(advs, advs.shape[0] // 2, dim=0)
        psi = nn.functional.softmax(top, dim=0).squeeze_()
        return -(psi * self.net(states).squeeze(-1)[idx]).sum()

    def update(self, states, rewards):
        with torch.no_grad():
            advs = (rewards - self.net(states).squeeze(-1)).unsqueeze(-1)
        loss = self.calc_pi_loss(states, advs)
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
"""


@pytest.mark.parametrize(
    ("grad_mode", "expected"),
    [
        ("with torch.no_grad():", []),  # the advantages need no grad: softmax saves nothing
        ("if True:", [("error", 12), ("error", 17)]),  # they do: SoftmaxBackward0 fails
    ],
)
def test_a_method_held_in_an_attribute_is_called_on_its_object(
    grad_mode: str, expected: list[tuple[str, int]]
) -> None:
    """`self.calc_pi_loss = self.calc_pi_loss_topk if use_topk else self.calc_pi_loss_all`,
    then `self.calc_pi_loss(states, advs)`: either method, on the object, with the caller's
    arguments, whose facts win over each method's own analysis (torch: `softmax(advs).squeeze_()`
    bumps the output's version, and backward() fails exactly when `advs` requires grad)."""
    text = BOUND_METHOD.replace("with torch.no_grad():", grad_mode)
    found = [(f.severity.value, f.line) for f in analyze(text) if f.code == "IPL001"]
    assert sorted(found) == expected, found


def test_a_refusal_only_a_later_pass_meets_rests_on_the_loop_running_again() -> None:
    """`avg = part` on a loop's first pass and `avg.add_(part)` on the next ones: torch
    refuses that write into a split view only if the loop runs more than once, which the
    number of heads decides (a Warning that says so); the division after the loop writes
    into the first view on every path (an Error), and torch raising there ends the path."""
    text = (
        "import torch\n"
        "from torch import nn\n"
        "class HeadAverage(nn.Module):\n"
        "    def __init__(self, heads, dim=6):\n"
        "        super().__init__()\n"
        "        self.heads = heads\n"
        "        self.score = nn.Linear(dim, dim * heads)\n"
        "    def forward(self, x):\n"
        "        maps = self.score(x).unsqueeze(1)\n"
        "        per_head = [m.squeeze(1) for m in torch.split(maps, 1, dim=1)]\n"
        "        avg = None\n"
        "        for i in range(self.heads):\n"
        "            if avg is None:\n"
        "                avg = per_head[i]\n"
        "            else:\n"
        "                avg.add_(per_head[i])\n"
        "        avg /= self.heads\n"
        "        avg[0] *= 2\n"
        "        return avg\n"
    )
    found = {(f.span.line, f.code): f for f in analyze(text) if f.code == "IPL009"}
    assert set(found) == {(16, "IPL009"), (17, "IPL009")}
    assert found[16, "IPL009"].severity is Severity.WARNING
    assert "if the loop around it runs more than once" in found[16, "IPL009"].message
    assert found[17, "IPL009"].severity is Severity.ERROR


TWO_SAVERS = """\
import torch


def bump(h):
    h += 1
    return h


def f(x):
    a = torch.sigmoid(x)
    bump(a)
    b = torch.exp(x)
    bump(b)
    return a.sum() + b.sum()
"""


def test_one_write_reached_from_two_calls_names_both_savers() -> None:
    """The write in `bump` is found once per call, each naming its own saver: the one finding
    kept names the latest saver (backward() meets it first: torch, `run` and verify name it)
    and carries the related locations of both, its own first, each once."""
    (found,) = [f for f in analyze(TWO_SAVERS) if f.code == "IPL001"]
    assert [(r.span.line, r.message.split(" here")[0]) for r in found.related] == [
        (12, "saved by torch.exp"),
        (10, "saved by torch.sigmoid"),
    ]
    shared = Related(Span(2, 0, 2, 1), "read here")
    first = Related(Span(1, 0, 1, 1), "saved here")
    later = Related(Span(3, 0, 3, 1), "saved here")
    span = Span(5, 4, 5, 10)
    duplicates = [
        Finding("IPL001", Severity.ERROR, "b", span, related=(later, shared)),
        Finding("IPL001", Severity.ERROR, "a", span, related=(first, shared)),
    ]
    (kept,) = _dedupe(duplicates)
    assert (kept.message, kept.related) == ("b", (later, shared, first))


def test_an_edit_of_another_class_does_not_run_an_in_place_activation_again() -> None:
    """The remedy of an `inplace=True` finding looks for a call of the module that throws its
    result away among the methods of the class that builds it: that class only, so an edit of
    another class's constructor does not analyse the first class's forward again."""
    text = (
        "import torch\n"
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "        self.act = nn.ReLU(inplace=True)\n"
        "    def forward(self, x):\n"
        "        return self.act(torch.sigmoid(self.fc(x)))\n"
        "class Other(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"
    )
    analysis = DocumentAnalysis()
    first = analysis.update(text)
    assert [(f.code, f.span.line) for f in first.findings] == [("IPL003", 7)]
    edited = analysis.update(text.replace("nn.Linear(4, 2)", "nn.Linear(4, 3)"))
    assert edited.functions_analysed == 0  # (Other.forward writes nothing in place)
    assert edited.findings == first.findings
