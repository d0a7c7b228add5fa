"""Score Error-level findings against the oracle's labels, overall and per generator feature.

A finding is an Error-level finding of one program, reduced to its line and the lines of its
related information (those in the same file). In a program labelled ``error`` a finding is a
true positive when one of its lines is a guilty line (the write, or the op that saved the
tensor); every other Error finding, and every Error finding in an ``ok`` program, is a false
positive. Precision = true-positive findings / all Error findings; recall = ``error`` programs
with at least one true-positive finding / ``error`` programs. Programs labelled ``other`` are
excluded (they are generator bugs, counted by the oracle).

Two finders are scored the same way: the analyzer, used as a black box through
``inplace_lsp.analysis.engine.analyze``, and a naive pattern linter that knows no autograd.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

try:
    from differential.generator import Program
    from differential.oracle import Label
except ImportError:  # tests/ imported as a package
    from tests.differential.generator import Program  # type: ignore[no-redef]
    from tests.differential.oracle import Label  # type: ignore[no-redef]

__all__ = [
    "Finding",
    "Score",
    "Report",
    "Verdict",
    "analyzer_findings",
    "naive_findings",
    "score",
    "judge",
]


@dataclass(frozen=True)
class Finding:
    """One Error-level finding: its line and the lines it relates to, in the program's file."""

    line: int
    related: frozenset[int] = frozenset()
    code: str = ""
    message: str = ""

    @property
    def lines(self) -> frozenset[int]:
        return self.related | {self.line}


Finder = Callable[[str, str], list[Finding]]


def analyzer_findings(text: str, path: str) -> list[Finding]:
    """The analyzer's Error-level findings (black box: engine.analyze)."""
    from inplace_lsp.analysis.engine import analyze
    from inplace_lsp.analysis.findings import Severity

    out = []
    for finding in analyze(text, path):
        if finding.severity != Severity.ERROR:
            continue
        related = frozenset(
            r.span.line for r in finding.related if r.path is None or r.path == path
        )
        out.append(Finding(finding.span.line, related, finding.code, finding.message))
    return out


_NAIVE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def naive_findings(text: str, path: str = "") -> list[Finding]:
    """A pattern linter that knows no autograd: every `+=` `-=` `*=` `/=`, `inplace=True`,
    subscript assignment and call of a method whose name ends in one `_`, at Error level."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, _NAIVE_OPS):
            lines.add(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == "inplace":
            if isinstance(node.value, ast.Constant) and node.value.value is True:
                lines.add(node.value.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) for t in targets):
                lines.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name.endswith("_") and not name.endswith("__") and not name.startswith("_"):
                lines.add(node.lineno)
    return [Finding(line, code="naive") for line in sorted(lines)]


@dataclass
class Verdict:
    """One scored program."""

    program: Program
    label: Label
    path: str
    findings: list[Finding]
    true_positives: list[Finding] = field(default_factory=list)
    false_positives: list[Finding] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.true_positives)

    @property
    def missed(self) -> bool:
        return self.label.outcome == "error" and not self.found


def judge(program: Program, label: Label, path: str, findings: list[Finding]) -> Verdict:
    """Split a program's findings into true and false positives against its label."""
    verdict = Verdict(program, label, path, findings)
    guilty = label.guilty_lines if label.outcome == "error" else set()
    for finding in findings:
        if finding.lines & guilty:
            verdict.true_positives.append(finding)
        else:
            verdict.false_positives.append(finding)
    return verdict


@dataclass
class Score:
    """Counts behind precision and recall."""

    programs: int = 0
    error_programs: int = 0
    found: int = 0
    findings: int = 0
    true_findings: int = 0

    @property
    def precision(self) -> float:
        return self.true_findings / self.findings if self.findings else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.error_programs if self.error_programs else 1.0

    def add(self, verdict: Verdict) -> None:
        self.programs += 1
        self.findings += len(verdict.findings)
        self.true_findings += len(verdict.true_positives)
        if verdict.label.outcome == "error":
            self.error_programs += 1
            self.found += verdict.found


@dataclass
class Report:
    """Scores of one finder over a labelled sample."""

    overall: Score
    by_feature: dict[str, Score]
    verdicts: list[Verdict]
    other: int

    @property
    def misses(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.missed]

    @property
    def false_positive_programs(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.false_positives]


def score(
    programs: Sequence[Program],
    labels: Sequence[Label],
    paths: Sequence[str],
    finder: Finder,
) -> Report:
    """Score `finder` on programs labelled by the oracle (``other`` ones excluded)."""
    overall = Score()
    by_feature: dict[str, Score] = {}
    verdicts: list[Verdict] = []
    other = 0
    for program, label, path in zip(programs, labels, paths, strict=True):
        if label.outcome == "other":
            other += 1
            continue
        verdict = judge(program, label, path, finder(program.text, path))
        verdicts.append(verdict)
        overall.add(verdict)
        for feature in program.features:
            by_feature.setdefault(feature, Score()).add(verdict)
    return Report(overall, by_feature, verdicts, other)


def feature_rows(report: Report, baseline: Report | None = None) -> Iterable[str]:
    """Per-feature table lines: programs, error programs, precision, recall (and baseline)."""
    head = f"{'feature':38s} {'progs':>5s} {'errs':>5s} {'prec':>5s} {'recall':>6s}"
    if baseline is not None:
        head += f" {'naive p':>7s} {'naive r':>7s}"
    yield head
    for name in sorted(report.by_feature):
        s = report.by_feature[name]
        row = f"{name[:38]:38s} {s.programs:5d} {s.error_programs:5d}"
        row += f" {s.precision:5.2f} {s.recall:6.2f}"
        if baseline is not None:
            b = baseline.by_feature.get(name, Score())
            row += f" {b.precision:7.2f} {b.recall:7.2f}"
        yield row
