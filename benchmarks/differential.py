"""Differential benchmark: generated PyTorch programs, labelled by torch, scored at Error level.

    python benchmarks/differential.py --count N --seed S [--jobs J] [--out DIR] [--verbose]
                                      [--json FILE] [--exclude-code IPL005] [--shapes]

Generates N programs (tests/differential/generator.py), runs each under torch in worker
subprocesses (oracle.py: `error` / `ok` / `other`, with the guilty lines), runs the analyzer on
each and prints Error-level precision and recall, overall and per generator feature, beside a
naive pattern linter. `--shapes` reshapes each program first (tests/differential/reshape.py:
helpers, base classes, layer containers, a trainer class; what it computes stays the same), so
the score says whether the verdict depends on the code's shape. `--verbose` lists every miss
and false positive with the path of its program text (written under --out, a temporary
directory by default). Torch must be importable by the interpreter running this script (or
the one given with --python).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# The generator, oracle and scorer live in tests/differential (the test suite uses them too).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from differential.generator import generate  # noqa: E402
from differential.oracle import label_programs, write_programs  # noqa: E402
from differential.scorer import (  # noqa: E402
    Finding,
    Report,
    Verdict,
    analyzer_findings,
    feature_rows,
    naive_findings,
    score,
)


def _describe(verdict: Verdict) -> str:
    label = verdict.label
    found = ", ".join(f"{f.code}@{f.line}" for f in verdict.findings) or "none"
    guilty = sorted(label.guilty_lines) if label.outcome == "error" else []
    return (
        f"  {verdict.path}\n"
        f"    torch: {label.outcome} {label.kind} {label.message[:110]}\n"
        f"    guilty lines: {guilty}  error findings: {found}"
    )


def _summary(name: str, report: Report) -> str:
    s = report.overall
    return (
        f"{name:9s} precision {s.precision:.3f} ({s.true_findings}/{s.findings} findings)  "
        f"recall {s.recall:.3f} ({s.found}/{s.error_programs} error programs)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--jobs", type=int, default=2, help="oracle worker processes")
    parser.add_argument("--out", type=Path, help="directory for the program texts")
    parser.add_argument("--python", help="interpreter with torch for the oracle")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per program")
    parser.add_argument("--verbose", action="store_true", help="list misses and false positives")
    parser.add_argument("--json", type=Path, help="write labels and verdicts to this file")
    parser.add_argument(
        "--exclude-code",
        action="append",
        default=[],
        metavar="CODE",
        help="leave this rule's findings out of the analyzer's score (repeatable)",
    )
    parser.add_argument(
        "--shapes", action="store_true", help="reshape each program (reshape.py) before scoring"
    )
    args = parser.parse_args(argv)

    out_dir = args.out or Path(tempfile.mkdtemp(prefix="inplace-diff-"))
    programs = generate(args.count, args.seed, shapes=args.shapes)
    pairs = write_programs(programs, out_dir)
    paths = [p for p, _ in pairs]
    started = time.perf_counter()
    labels = label_programs(pairs, jobs=args.jobs, python=args.python, timeout_s=args.timeout)
    oracle_s = time.perf_counter() - started
    started = time.perf_counter()
    excluded = set(args.exclude_code)

    def finder(text: str, path: str) -> list[Finding]:
        return [f for f in analyzer_findings(text, path) if f.code not in excluded]

    ours = score(programs, labels, paths, finder)
    analyzer_s = time.perf_counter() - started
    naive = score(programs, labels, paths, naive_findings)

    outcomes = Counter(label.outcome for label in labels)
    kinds = Counter(label.kind for label in labels if label.outcome == "error")
    unlocated = sum(1 for label in labels if label.outcome == "error" and not label.located)
    print(f"{args.count} programs, seed {args.seed}, texts in {out_dir}")
    if excluded:
        print("analyzer findings left out: " + ", ".join(sorted(excluded)))
    print(
        f"oracle: {outcomes['error']} error, {outcomes['ok']} ok, {outcomes['other']} other "
        f"({outcomes['other'] / max(1, len(labels)):.2%}); {unlocated} errors without lines; "
        f"{oracle_s:.1f} s on {args.jobs} workers; analyzer {analyzer_s:.1f} s"
    )
    print("error kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    others = Counter(label.message[:100] for label in labels if label.outcome == "other")
    for message, n in others.most_common(10):
        print(f"  other x{n}: {message}")
    print()
    print(_summary("analyzer", ours))
    print(_summary("naive", naive))
    print()
    for row in feature_rows(ours, naive):
        print(row)
    if args.verbose:
        print(f"\nmisses ({len(ours.misses)}):")
        for verdict in ours.misses:
            print(_describe(verdict))
        print(f"\nfalse positives ({len(ours.false_positive_programs)} programs):")
        for verdict in ours.false_positive_programs:
            print(_describe(verdict))
    if args.json:
        data = [
            {
                "path": v.path,
                "scenario": v.program.scenario,
                "features": list(v.program.features),
                "label": v.label.to_json(),
                "findings": [
                    {
                        "line": f.line,
                        "related": sorted(f.related),
                        "code": f.code,
                        "message": f.message,
                    }
                    for f in v.findings
                ],
                "missed": v.missed,
                "false_positives": [f.line for f in v.false_positives],
            }
            for v in ours.verdicts
        ]
        args.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
