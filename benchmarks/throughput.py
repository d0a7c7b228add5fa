"""Throughput of `inplace-lsp check` over every .py file of torchvision and timm (or the
corpora named), as a ratio to reading and `ast.parse`-ing the same files sequentially in this
process.

    python benchmarks/throughput.py [--jobs N] [--repeat R] [--corpora NAME ...]
                                    [--match GLOB] [--first N]

(issue 24 measures `--corpora torchvision timm transformers`; issue 41 also `--corpora
transformers --match 'transformers/models/*/modeling_*.py' --first 300`: the 300 first
modelling files in sorted order)

Rows: (a) the reference, read + ast.parse of every file, one after the other; (b) the CLI's code
path, `cli.check_files` (worker processes above cli.PARALLEL_MIN_FILES files, skips files that
never mention torch, applies settings and noqa); (c) our analysis alone, sequential in this
process: a fresh DocumentAnalysis().update() per file; (d) and (e) (b) with the check cache in an
empty directory, run twice: cold, then warm (nothing changed: every result read back; issue 12's
target is <= 0.1x). Findings are counted by code and severity; these packages are known-good
code, so every Error is a false positive until a run proves it. The peak resident memory of
the CLI's worker processes (b) and of this process (after (c)) is printed beside, and what the
garbage collector did during (c): its runs, their time and the objects they freed.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import _sources

from inplace_lsp import cli, config
from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.findings import Finding, Severity
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.cache import ENV_DIR

TARGET = 1.5
SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT)


def _cpu_s() -> float:
    """CPU seconds of this process and of its reaped children (the CLI's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(run: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run."""
    wall, cpu = time.perf_counter(), _cpu_s()
    run()
    return time.perf_counter() - wall, _cpu_s() - cpu


def reference(paths: Sequence[Path]) -> None:
    for path in paths:
        ast.parse(path.read_bytes(), str(path))


def via_cli(paths: Sequence[str], jobs: int, use_cache: bool = False) -> list[cli.FileResult]:
    return cli.check_files(paths, config.Settings(), jobs=jobs, use_cache=use_cache)


class Collections:
    """The cyclic garbage collector's runs while a block runs: how many, their seconds and the
    objects they freed. The analysis holds the collector off during each update (engine.
    CollectorPause), so what these runs free is the garbage the updates left."""

    def __init__(self) -> None:
        self.runs = 0
        self.seconds = 0.0
        self.freed = 0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.runs += 1
            self.seconds += time.perf_counter() - self._started
            self.freed += info["collected"]

    def __enter__(self) -> Collections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def sequential(texts: Sequence[str]) -> list[list[Finding]]:
    return [DocumentAnalysis().update(text).findings for text in texts]


def _counts_table(title: str, findings: Sequence[Finding]) -> list[str]:
    counts = Counter((f.code, f.severity) for f in findings)
    codes = sorted({code for code, _ in counts})
    header = f"{title:<16}" + "".join(f"{s.value:>13}" for s in SEVERITIES)
    rows = [header]
    for code in codes:
        rows.append(f"{code:<16}" + "".join(f"{counts[(code, s)]:>13}" for s in SEVERITIES))
    rows.append(
        f"{'total':<16}" + "".join(f"{sum(counts[(c, s)] for c in codes):>13}" for s in SEVERITIES)
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=cli._cpu_count(), help="CLI worker processes")
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs of the reference before and after (median)"
    )
    parser.add_argument(
        "--corpora",
        nargs="+",
        choices=sorted(_sources.CORPORA),
        default=list(_sources.PACKAGES),
        help="the library corpora to check (default: torchvision timm)",
    )
    parser.add_argument(
        "--match", help="only the files whose path ends as this glob does (fnmatch, '/'-separated)"
    )
    parser.add_argument("--first", type=int, help="only the first N files, in sorted order")
    args = parser.parse_args(argv)
    try:
        paths = [p for files in _sources.corpus_files(args.corpora).values() for p in files]
    except _sources.SourcesUnavailable as exc:
        print(f"throughput: skipped, sources unavailable: {exc}")
        return 0
    if args.match:
        paths = sorted(p for p in paths if fnmatch.fnmatchcase(p.as_posix(), "*/" + args.match))
    if args.first is not None:
        paths = sorted(paths)[: args.first]
    texts = [path.read_text(encoding="utf-8") for path in paths]  # also warms the page cache
    lines = sum(len(split_lines(text)) for text in texts)
    mentions_torch = sum("torch" in text for text in texts)

    # The reference runs before and after the analyses, so load from other processes on a
    # shared machine weighs on both sides of the ratio.
    before = [_timed(lambda: reference(paths)) for _ in range(args.repeat)]
    results: list[cli.FileResult] = []
    per_file: list[list[Finding]] = []
    names = [str(p) for p in paths]
    cli_s, cli_cpu = _timed(lambda: results.extend(via_cli(names, args.jobs)))
    workers_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-cache-") as cache:
        os.environ[ENV_DIR] = cache  # the workers inherit it
        cached: list[cli.FileResult] = []
        cold_s, cold_cpu = _timed(lambda: via_cli(names, args.jobs, use_cache=True))
        warm_s, warm_cpu = _timed(lambda: cached.extend(via_cli(names, args.jobs, use_cache=True)))
        del os.environ[ENV_DIR]
    same = [r.findings for r in cached] == [r.findings for r in results]
    with Collections() as collections:
        seq_s, seq_cpu = _timed(lambda: per_file.extend(sequential(texts)))
    after = [_timed(lambda: reference(paths)) for _ in range(args.repeat)]
    parse_s = statistics.median(wall for wall, _ in before + after)
    parse_cpu = statistics.median(cpu for _, cpu in before + after)

    failed = [message for r in results if r.failed for message in r.messages]
    cli_findings = [f for r in results for f in r.findings]
    seq_findings = [f for findings in per_file for f in findings]
    checked = sum(r.checked for r in results)

    print(" + ".join(f"{name} {_sources.CORPORA[name].version}" for name in args.corpora))
    print(f"{'run':<44}{'files':>7}{'lines':>9}{'wall s':>9}{'ratio':>8}{'cpu s':>9}{'ratio':>8}")
    rows = [
        ("(a) read + ast.parse, sequential", parse_s, parse_cpu),
        (f"(b) cli.check_files, {args.jobs} jobs ({checked} analysed)", cli_s, cli_cpu),
        ("(c) DocumentAnalysis.update, sequential", seq_s, seq_cpu),
        (f"(d) (b) with the cache, cold, {args.jobs} jobs", cold_s, cold_cpu),
        ("(e) (b) with the cache, warm: nothing changed", warm_s, warm_cpu),
    ]
    for label, wall, cpu in rows:
        print(
            f"{label:<44}{len(paths):>7}{lines:>9}{wall:>9.3f}{wall / parse_s:>7.2f}x"
            f"{cpu:>9.3f}{cpu / parse_cpu:>7.2f}x"
        )
    print(f"files mentioning torch (the CLI analyses only these): {mentions_torch}")
    print(
        f"(c)'s garbage collections: {collections.runs}, {collections.seconds:.3f} s "
        f"({collections.seconds / seq_cpu:.0%} of its CPU), {collections.freed} objects freed"
    )
    own_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: (b)'s largest worker {workers_mb:.0f} MB; this process {own_mb:.0f} MB")
    print(f"warm cache: the same findings as (b): {'yes' if same else 'NO'}")
    print()
    for row in _counts_table("(b) findings", cli_findings):
        print(row)
    print()
    for row in _counts_table("(c) findings", seq_findings):
        print(row)
    errors = [(path, f) for path, findings in zip(paths, per_file, strict=True) for f in findings]
    errors = [(path, f) for path, f in errors if f.severity is Severity.ERROR]
    if errors:
        print()
        print("Error-level findings (known-good code: each is a false positive until proven):")
        for path, f in errors:
            short = "/".join(path.parts[-3:])
            print(f"  {short}:{f.span.line}:{f.span.col + 1}: {f.code} {f.message}")
    if failed:
        print()
        print("CLI internal errors:")
        for message in failed:
            print(f"  {message}")
    print()
    print(f"throughput: {cli_s / parse_s:.2f}x ast.parse (target <= {TARGET}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
