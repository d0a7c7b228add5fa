"""The analysis on the real-world corpus (tests/realworld): code users wrote, from public issue
threads and forum questions, and safe look-alikes from maintained repositories, labelled by
torch runs. Error-level precision and in-place-error recall, per category, beside the naive
pattern linter of benchmarks/accuracy.py.

    python benchmarks/realworld.py [--verbose]

A bug case is found when an Error-level finding lies on its guilty line (the `# error:` line:
the write, or the step, that the runtime detector named); the rule code is reported, not
required. Precision counts every Error-level finding of the corpus: one on a guilty line is
true, any other (in a safe case, or elsewhere in a failing one) is false. Recall is over the
in-place errors (`inplace-error`, `leaf-error`, `refused-error`); `retention-error` cases (a
graph used after backward freed it) are scored on their own line. The naive linter flags
every augmented assignment, `inplace=True`, subscript assignment and `x.op_()` call.

A false Error in a failing case may be a guilty line its labels miss: torch raises at the
first guilty line, and the next one is guilty too when the detector names it once the lines
before it are replaced by `pass` (tests/realworld/README.md). Each such Error is run that way
(label.neutralized, a few rounds) and the lines torch names are counted apart, as is the
precision against torch (`--labels-only`: not run).

Targets (issue 23): precision >= 0.95, in-place-error recall >= 0.90.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from accuracy import naive_lines

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Finding, Severity

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "realworld"
sys.path.insert(0, str(CORPUS))
import label  # noqa: E402
from corpus import CATEGORIES, Case, discover  # noqa: E402

PRECISION_TARGET = 0.95
RECALL_TARGET = 0.90
INPLACE_OUTCOMES = ("inplace-error", "leaf-error", "refused-error")


@dataclass
class Tally:
    """One linter on a set of cases: guilty lines found, Error findings true and false; for
    ours also the guilty lines with a finding of any severity but Hint (`seen`) and those a
    Hint calls safe (`hinted`)."""

    bugs: int = 0
    found: int = 0
    true_errors: int = 0
    false_errors: int = 0
    seen: int = 0
    hinted: int = 0
    unlabelled: int = 0  # false Errors torch names guilty once the labelled lines are gone

    @property
    def precision(self) -> float:
        reported = self.true_errors + self.false_errors
        return self.true_errors / reported if reported else 1.0

    @property
    def torch_precision(self) -> float:
        reported = self.true_errors + self.false_errors
        return (self.true_errors + self.unlabelled) / reported if reported else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.bugs if self.bugs else 1.0

    @property
    def any_recall(self) -> float:
        return self.seen / self.bugs if self.bugs else 1.0

    def add(
        self,
        case: Case,
        flagged: set[int],
        seen: set[int] = frozenset(),
        hinted: set[int] = frozenset(),
    ) -> tuple[bool, set[int]]:
        """Scores one case's flagged lines (Error), and the lines with any finding but a
        Hint (`seen`) and with a Hint (`hinted`): (found, false lines)."""
        guilty = set(case.errors)
        true = flagged & guilty
        false = flagged - guilty
        if case.bug and case.outcome != "retention-error":
            self.bugs += 1
            self.found += bool(true)
            self.seen += bool(seen & guilty)
            self.hinted += len(hinted & guilty)
        self.true_errors += len(true)
        self.false_errors += len(false)
        return bool(true), false


def guilty_too(case: Case, lines: set[int], rounds: int = 4) -> set[int]:
    """Of these Error lines outside a failing case's labels, those the runtime detector names
    once the labelled guilty lines (and each line it names on the way) are `pass`."""
    gone = set(case.errors)
    found: set[int] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for step in range(rounds):
            folder = Path(tmp) / str(step)
            folder.mkdir()
            copy = label.neutralized(case.path, sorted(gone), folder)
            result = label.run_cases([copy])[str(copy)]
            named = {
                f["mutation"]
                for f in result["detected"]["findings"]
                if f.get("severity") == "error" and f.get("mutation")
            }
            found |= named & lines
            if not named - gone or lines <= found:
                break
            gone |= named
    return found


def error_lines(findings: list[Finding]) -> set[int]:
    return {f.span.line for f in findings if f.severity is Severity.ERROR}


@dataclass
class Scores:
    ours: dict[str, Tally]
    naive: dict[str, Tally]
    retention_found: int
    retention_cases: int
    cases: int
    repositories: int


def score(
    cases: list[Case], verbose: bool = False, quiet: bool = False, run: bool = True
) -> Scores:
    ours = {name: Tally() for name in ("all", *CATEGORIES)}
    naive = {name: Tally() for name in ("all", *CATEGORIES)}
    retention = retention_found = 0
    for case in cases:
        text = case.path.read_text(encoding="utf-8")
        findings = analyze(text, str(case.path))
        flagged = error_lines(findings)
        seen = {f.span.line for f in findings if f.severity is not Severity.HINT}
        hinted = {f.span.line for f in findings if f.severity is Severity.HINT}
        naive_flagged = naive_lines(text)
        for key in ("all", case.category):
            found, false = ours[key].add(case, flagged, seen, hinted)
            naive[key].add(case, naive_flagged)
        unlabelled = (
            guilty_too(case, false) if run and false and case.outcome in INPLACE_OUTCOMES else set()
        )
        for key in ("all", case.category):
            ours[key].unlabelled += len(unlabelled)
        if case.outcome == "retention-error":
            retention += 1
            retention_found += bool(
                {f.span.line for f in findings if f.severity is not Severity.HINT}
                & set(case.errors)
            )
        missed = case.bug and case.outcome != "retention-error" and not found
        if not quiet and (verbose or missed or false):
            print(f"{case.name} ({case.outcome}, {case.category}): {case.source}")
            if missed:
                print(f"    missed: guilty line {sorted(case.errors)}")
            for line in sorted(false):
                codes = [f"{f.code} {f.message[:90]}" for f in findings if f.span.line == line]
                why = " (guilty by torch, not labelled)" if line in unlabelled else ""
                print(f"    false Error at line {line}{why}: {'; '.join(codes)}")
    repositories = len({c.repo for c in cases})
    return Scores(ours, naive, retention_found, retention, len(cases), repositories)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--verbose", action="store_true", help="list every case, not only misses")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help="another folder of cases (tests/realworld_blind)",
    )
    parser.add_argument(
        "--blind",
        action="store_true",
        help="the figures only: no case, line or miss is named (a split nobody working on the "
        "analysis may read)",
    )
    parser.add_argument(
        "--labels-only",
        action="store_true",
        help="do not run the failing cases that hold a false Error (see the module's text)",
    )
    args = parser.parse_args(argv)
    cases = discover(args.corpus)
    scores = score(
        cases, args.verbose and not args.blind, quiet=args.blind, run=not args.labels_only
    )
    safe = sum(not c.bug for c in cases)
    print()
    print(f"{scores.cases} cases ({safe} safe) from {scores.repositories} repositories")
    print(
        f"{'category':<11}{'bugs':>6}{'found':>7}{'recall':>8}{'errors':>8}{'false':>7}"
        f"{'precision':>11}{'naive recall':>14}{'naive precision':>17}"
    )
    for name in ("all", *CATEGORIES):
        ours, naive = scores.ours[name], scores.naive[name]
        print(
            f"{name:<11}{ours.bugs:>6}{ours.found:>7}{ours.recall:>8.3f}"
            f"{ours.true_errors + ours.false_errors:>8}{ours.false_errors:>7}"
            f"{ours.precision:>11.3f}{naive.recall:>14.3f}{naive.precision:>17.3f}"
        )
    if scores.retention_cases:
        print(
            f"retention (graph used after backward freed it): a finding on the line in "
            f"{scores.retention_found} of {scores.retention_cases}"
        )
    overall = scores.ours["all"]
    if overall.unlabelled:
        print(
            f"false Errors on lines torch names guilty once the labelled ones are gone (the "
            f"labels miss them): {overall.unlabelled}; precision against torch "
            f"{overall.torch_precision:.3f}"
        )
    print()
    print(
        f"{args.corpus.name}: precision {overall.precision:.3f} (target >= {PRECISION_TARGET}), "
        f"in-place-error recall {overall.recall:.3f} (target >= {RECALL_TARGET}), any-severity "
        f"recall {overall.any_recall:.3f}, Hints on guilty lines {overall.hinted}; naive "
        f"{scores.naive['all'].precision:.3f} / {scores.naive['all'].recall:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
