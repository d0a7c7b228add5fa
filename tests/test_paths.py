"""Control flow as Python runs it: code after `return`, `raise`, `break` and `continue` never
runs, a `finally` always does, a loop's `else` only without `break`, and a walrus binds. Each
program is run under torch (its outcome is the truth) and analysed: an Error finding on the
line marked `# <-` exactly when torch raises; when it runs, no Error at all and no Warning on
that line.
"""

from __future__ import annotations

import textwrap

import pytest

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Severity

REPORTED = (Severity.ERROR, Severity.WARNING)

HEAD = """\
import torch
import torch.nn as nn

x = torch.randn(3, 4, requires_grad=True)
"""

# (id, program body after HEAD, whether torch raises at backward)
PROGRAMS = [
    (
        "write-after-break",
        """
        def f(x):
            h = torch.sigmoid(x)
            for _ in range(3):
                break
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        False,
    ),
    (
        "write-after-continue",
        """
        def f(x):
            h = torch.sigmoid(x)
            for _ in range(3):
                continue
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        False,
    ),
    (
        "else-returns-before-the-write",
        """
        def f(x, flag):
            h = torch.sigmoid(x)
            if flag:
                h = h * 2
            else:
                return h
            h += 1  # <-
            return h

        f(x, True).sum().backward()
        f(x, False).sum().backward()
        """,
        False,
    ),
    (
        "write-in-finally-after-return",
        """
        def f(x):
            h = torch.sigmoid(x)
            try:
                return h
            finally:
                h += 1  # <-

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "loop-else-runs-without-break",
        """
        def f(x):
            h = torch.sigmoid(x)
            for v in range(2):
                if v > 5:
                    break
            else:
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "while-true-left-by-break",
        """
        def f(x):
            h = torch.exp(x)
            steps = 0
            while True:
                steps += 1
                if steps > 2:
                    break
            h *= 2  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "handler-runs-after-the-raise",
        """
        def f(x):
            h = torch.tanh(x)
            try:
                raise ValueError("bad batch")
            except ValueError:
                h.mul_(0.5)  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "match-without-wildcard-falls-through",
        """
        def f(x, mode):
            h = torch.sigmoid(x)
            match mode:
                case "skip":
                    return h
            h += 1  # <-
            return h

        f(x, "train").sum().backward()
        """,
        True,
    ),
    (
        "walrus-in-a-while-condition",
        """
        def f(x):
            n = 0
            while n < 1 and (h := torch.sigmoid(x)) is not None:
                n += 1
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "guard-raises-before-the-write",
        """
        def f(x):
            h = torch.sigmoid(x)
            if h.sum() > 1e9:
                raise FloatingPointError("overflow")
                h.clamp_(max=1.0)  # <-
            return h

        f(x).sum().backward()
        """,
        False,
    ),
]


def _program(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def _marked_line(text: str) -> int:
    (line,) = [n for n, t in enumerate(text.splitlines(), start=1) if t.endswith("# <-")]
    return line


@pytest.mark.parametrize(
    ("body", "raises"), [p[1:] for p in PROGRAMS], ids=[p[0] for p in PROGRAMS]
)
def test_torch_agrees_and_errors_follow_the_paths_that_run(body: str, raises: bool) -> None:
    text = _program(body)
    try:
        exec(compile(text, "<program>", "exec"), {"__name__": "program"})  # noqa: S102
        raised = False
    except RuntimeError as exc:
        assert "modified by an inplace operation" in str(exc)
        raised = True
    assert raised == raises, "the program's label disagrees with torch"
    findings = analyze(text, "program.py")
    errors = [f.span.line for f in findings if f.severity is Severity.ERROR]
    assert errors == ([_marked_line(text)] if raises else [])
    if not raises:  # the marked line never runs, or runs harmlessly: not even a warning
        marked = _marked_line(text)
        assert [f for f in findings if f.span.line == marked and f.severity in REPORTED] == []
