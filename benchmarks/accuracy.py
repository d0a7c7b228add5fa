"""Accuracy on the realistic cases of tests/cases: precision and recall of Error-level findings
against the `# error: IPL00N` lines (whose truth was established by running them under torch),
beside a naive pattern linter.

    python benchmarks/accuracy.py [--verbose]

Ours: a finding is a true positive when its (line, code) is an expected error; codes matter.
Naive: flags, at Error level and on every line it finds one, each augmented assignment
(`+=` `-=` `*=` `/=`), each `inplace=True`, each subscript assignment `x[...] = v`, and each call
of a method whose name ends with a single `_` (`.add_(`); matched on the line only.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Severity

CASES_DIR = Path(__file__).resolve().parent.parent / "tests" / "cases"
TARGET = 0.95
NAIVE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)

# tests/casefile.py is the one reader of the expectation comments.
sys.path.insert(0, str(CASES_DIR.parent))
from casefile import Case, discover  # noqa: E402


@dataclass
class Score:
    true_positives: int = 0
    reported: int = 0
    expected: int = 0

    @property
    def precision(self) -> float:
        return self.true_positives / self.reported if self.reported else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected if self.expected else 1.0

    def add(self, tp: int, reported: int, expected: int) -> None:
        self.true_positives += tp
        self.reported += reported
        self.expected += expected


def naive_lines(text: str) -> set[int]:
    """Lines a pattern linter that knows no autograd would flag."""
    flagged: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, NAIVE_OPS):
            flagged.add(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == "inplace":
            if isinstance(node.value, ast.Constant) and node.value.value is True:
                flagged.add(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) for t in _flatten(targets)):
                flagged.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name.endswith("_") and not name.endswith("__") and name != "_":
                flagged.add(node.func.end_lineno or node.lineno)
    return flagged


def _flatten(targets: Iterable[ast.expr]) -> Iterable[ast.expr]:
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _flatten(target.elts)
        else:
            yield target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--verbose", action="store_true", help="list every case, not only misses")
    args = parser.parse_args(argv)
    cases: list[Case] = discover(CASES_DIR)
    ours, naive = Score(), Score()
    print(f"{'case':<52}{'expected':>9}{'ours tp/fp/fn':>15}{'naive tp/fp/fn':>16}")
    for case in cases:
        text = case.path.read_text(encoding="utf-8")
        expected = set(case.errors.items())
        findings = [f for f in analyze(text, str(case.path)) if f.severity is Severity.ERROR]
        reported = {(f.span.line, f.code) for f in findings}
        tp = len(reported & expected)
        ours.add(tp, len(reported), len(expected))
        flagged = naive_lines(text)
        naive_tp = len(flagged & set(case.errors))
        naive.add(naive_tp, len(flagged), len(expected))
        missed = sorted(expected - reported)
        extra = sorted(reported - expected)
        if args.verbose or missed or extra:
            counts = f"{tp}/{len(reported) - tp}/{len(expected) - tp}"
            naive_counts = f"{naive_tp}/{len(flagged) - naive_tp}/{len(expected) - naive_tp}"
            print(f"{case.name:<52}{len(expected):>9}{counts:>15}{naive_counts:>16}")
            for line, code in missed:
                print(f"    missed {code} at line {line}")
            for line, code in extra:
                others = [f"{f.code}" for f in findings if f.span.line == line]
                note = f" (expected {case.errors[line]})" if line in case.errors else ""
                print(f"    false {code} at line {line}{note} [{', '.join(others)}]")
    print()
    print(
        f"{'':<24}{'cases':>7}{'expected':>10}{'reported':>10}{'tp':>6}{'precision':>11}"
        f"{'recall':>8}"
    )
    for label, score in (("inplace-lsp (line+code)", ours), ("naive (line)", naive)):
        print(
            f"{label:<24}{len(cases):>7}{score.expected:>10}{score.reported:>10}"
            f"{score.true_positives:>6}{score.precision:>11.3f}{score.recall:>8.3f}"
        )
    print()
    print(
        f"accuracy: precision {ours.precision:.3f}, recall {ours.recall:.3f} "
        f"(target >= {TARGET} each); naive: precision {naive.precision:.3f}, "
        f"recall {naive.recall:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
