"""Error and Warning findings of the analysis on the known-good corpora (benchmarks/_sources.py),
per corpus: files, lines, errors, warnings, warnings per 100k lines and the seconds it took.

Each file is analysed as tests/test_realcode.py does: `DocumentAnalysis(path=..., workspace=...)
.update(text)` with one workspace per corpus rooted at its unpacked wheel, so that imports (a
model's base class from `...modeling_utils`) are resolved as `inplace-lsp check` resolves them.
`--standalone` analyses each text without a path (no import is resolved), as an editor buffer
outside any folder is. `--training` measures the training-code corpora of `_sources.TRAINING`
(RL, GAN, sequence-model and LM fine-tuning scripts, recipes and training loops) instead of the
libraries, each with its workspace rooted at its unpacked distribution as well.

    python benchmarks/realcode_warnings.py                    # every corpus
    python benchmarks/realcode_warnings.py timm diffusers     # only these
    python benchmarks/realcode_warnings.py --json out.json    # also every finding, per file time
    python benchmarks/realcode_warnings.py --standalone       # without resolving imports
    python benchmarks/realcode_warnings.py --training         # the training code instead
    python benchmarks/realcode_warnings.py --training cleanrl trl --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import _sources

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.findings import Severity
from inplace_lsp.analysis.workspace import Workspace


@dataclass
class CorpusFigures:
    name: str
    files: int = 0
    lines: int = 0
    errors: int = 0
    warnings: int = 0
    crashes: int = 0
    seconds: float = 0.0
    findings: list[dict[str, object]] = field(default_factory=list)
    slowest: list[tuple[float, str]] = field(default_factory=list)

    @property
    def warnings_per_100k(self) -> float:
        return 100_000 * self.warnings / self.lines if self.lines else 0.0


def _relative(path: Path, corpus: str, *, training: bool = False) -> str:
    """The path inside the wheel, as the realcode test's allow-list writes it; for a training
    corpus, whose entries may be files or patterns, the path inside the unpacked distribution."""
    if training:
        try:
            return path.relative_to(corpus_root(corpus, training=True)).as_posix()
        except ValueError:
            return path.name
    info = _sources.CORPORA[corpus]
    parts = path.parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in info.packages:
            return "/".join(parts[index:])
    return path.name


def corpus_root(name: str, *, training: bool = False) -> Path:
    """The unpacked wheel's (or sdist's) directory, the root its imports resolve from."""
    corpus = (_sources.TRAINING if training else _sources.CORPORA)[name]
    return _sources.corpus_dir(corpus)


def measure(
    name: str, files: list[Path], *, standalone: bool = False, training: bool = False
) -> CorpusFigures:
    figures = CorpusFigures(name)
    timings: list[tuple[float, str]] = []
    root = corpus_root(name, training=training)
    workspace = None if standalone else Workspace(root, use_jedi=False)
    for path in files:
        text = path.read_text(encoding="utf-8")
        relative = _relative(path, name, training=training)
        figures.files += 1
        figures.lines += len(text.splitlines())
        started = time.perf_counter()
        try:
            if workspace is None:
                analysis = DocumentAnalysis()
            else:
                analysis = DocumentAnalysis(
                    parse_cache=workspace.parse_cache, path=str(path), workspace=workspace
                )
            analysis.log_notes = False  # notes are not findings; the log would drown the table
            result = analysis.update(text)
        except Exception as exc:  # counted and listed: the realcode test fails on it
            figures.crashes += 1
            figures.findings.append(
                {"path": relative, "severity": "crash", "message": f"{type(exc).__name__}: {exc}"}
            )
            continue
        finally:
            elapsed = time.perf_counter() - started
            figures.seconds += elapsed
            timings.append((elapsed, relative))
        for finding in result.findings:
            if finding.severity is Severity.ERROR:
                figures.errors += 1
            elif finding.severity is Severity.WARNING:
                figures.warnings += 1
            else:
                continue
            figures.findings.append(
                {
                    "path": relative,
                    "line": finding.span.line,
                    "code": finding.code,
                    "severity": finding.severity.value,
                    "message": finding.message,
                }
            )
    figures.slowest = sorted(timings, reverse=True)[:10]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpora",
        nargs="*",
        help=f"any of {', '.join(_sources.CORPORA)} (with --training: of "
        f"{', '.join(_sources.TRAINING)})",
    )
    parser.add_argument("--json", type=Path, help="write every finding and the slowest files")
    parser.add_argument("--standalone", action="store_true", help="no path: imports unresolved")
    parser.add_argument(
        "--training", action="store_true", help="the training-code corpora, not the libraries"
    )
    args = parser.parse_args(argv)
    catalogue = _sources.TRAINING if args.training else _sources.CORPORA
    chosen = args.corpora or None
    try:
        if args.training:
            corpora = _sources.training_files(chosen)
        else:
            corpora = _sources.corpus_files(chosen)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    except _sources.SourcesUnavailable as exc:
        print(f"sources unavailable: {exc}", file=sys.stderr)
        return 1
    width = max(14, *(len(name) + 1 for name in corpora))
    header = f"{'corpus':<{width}}{'files':>7}{'lines':>10}{'errors':>8}{'warnings':>10}"
    print(header + f"{'warn/100k':>11}{'crashes':>9}{'seconds':>9}")
    results: list[CorpusFigures] = []
    for name, files in corpora.items():
        figures = measure(name, files, standalone=args.standalone, training=args.training)
        results.append(figures)
        print(
            f"{name:<{width}}{figures.files:>7}{figures.lines:>10,}{figures.errors:>8}"
            f"{figures.warnings:>10}{figures.warnings_per_100k:>11.1f}{figures.crashes:>9}"
            f"{figures.seconds:>9.1f}",
            flush=True,
        )
    if args.json:
        payload = {
            figures.name: {
                "distribution": catalogue[figures.name].distribution,
                "version": catalogue[figures.name].version,
                "files": figures.files,
                "lines": figures.lines,
                "errors": figures.errors,
                "warnings": figures.warnings,
                "warnings_per_100k": round(figures.warnings_per_100k, 1),
                "crashes": figures.crashes,
                "seconds": round(figures.seconds, 2),
                "slowest": [[round(s, 3), p] for s, p in figures.slowest],
                "findings": figures.findings,
            }
            for figures in results
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
