"""Latency on one realistic ~3,000-line model file: full analysis and re-analysis after a
one-character edit, as ratios to `ast.parse` of the same text in this process.

    python benchmarks/single_file.py [--runs N] [--edits M]

The file is real code: torchvision's resnet, vision_transformer, swin_transformer and
mobilenetv2 modules concatenated (their `from __future__` lines dropped, which must come first).
Each edit replaces the last character of a name inside one function body (same line count, still
parses); edits go round the functions in a shuffled order and accumulate, so no edited block's
text repeats and the parse cache only helps where an editor's would.
"""

from __future__ import annotations

import argparse
import ast
import keyword
import random
import statistics
import string
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import _sources

from inplace_lsp.analysis.engine import DocumentAnalysis

MODULES = ("resnet.py", "vision_transformer.py", "swin_transformer.py", "mobilenetv2.py")
FULL_TARGET = 1.5
INCREMENTAL_TARGET = 0.2


@dataclass(frozen=True)
class EditSite:
    """The last character of a name in a function body: (0-based line, 0-based column)."""

    function: str
    line: int
    col: int


def build_file(models_dir: Path) -> str:
    parts = []
    for name in MODULES:
        text = (models_dir / name).read_text(encoding="utf-8")
        kept = [line for line in text.splitlines() if not line.startswith("from __future__")]
        parts.append(f"# ---- torchvision/models/{name}\n" + "\n".join(kept) + "\n")
    return "\n\n".join(parts)


def _body_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Name]:
    names: list[ast.Name] = []
    for stmt in fn.body:
        names += [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and len(n.id) >= 3]
    return names


def edit_sites(text: str) -> list[EditSite]:
    """One site per function that has a body name (the one in its middle)."""
    lines = text.splitlines()
    sites = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [
            n
            for n in _body_names(node)
            if lines[n.lineno - 1].isascii()  # byte columns == character columns
            and lines[n.lineno - 1][n.col_offset : n.end_col_offset] == n.id  # not in an f-string
        ]
        if names:
            name = names[len(names) // 2]
            sites.append(EditSite(node.name, name.lineno - 1, (name.end_col_offset or 1) - 1))
    random.Random(0).shuffle(sites)
    return sites


def apply_edit(lines: list[str], site: EditSite) -> None:
    """Replaces the character at the site with the next letter that keeps a non-keyword name."""
    line = lines[site.line]
    start = site.col
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    letters = string.ascii_lowercase
    current = line[site.col]
    index = letters.index(current) if current in letters else -1
    for step in range(1, 27):
        letter = letters[(index + step) % 26]
        if not keyword.iskeyword(line[start : site.col] + letter):
            break
    lines[site.line] = line[: site.col] + letter + line[site.col + 1 :]


def _median_s(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=21, help="runs of parse and full analysis")
    parser.add_argument("--edits", type=int, default=200, help="one-character edits")
    args = parser.parse_args(argv)
    try:
        directories = _sources.fetch({"torchvision": _sources.PACKAGES["torchvision"]})
    except _sources.SourcesUnavailable as exc:
        print(f"single_file: skipped, sources unavailable: {exc}")
        return 0
    text = build_file(directories["torchvision"] / "torchvision" / "models")
    line_count = len(text.splitlines())
    sites = edit_sites(text)

    DocumentAnalysis().update(text)  # loads the knowledge table once, as a server does
    parse_s = _median_s(lambda: ast.parse(text), args.runs)
    full_s = _median_s(lambda: DocumentAnalysis().update(text), args.runs)

    warm = DocumentAnalysis()
    first = warm.update(text)
    unchanged_s = _median_s(lambda: warm.update(text), args.runs)
    lines = text.splitlines(keepends=True)
    edit_times: list[float] = []
    reparsed: list[int] = []
    analysed: list[int] = []
    for n in range(args.edits):
        apply_edit(lines, sites[n % len(sites)])
        edited = "".join(lines)
        parses = warm.parse_cache.parses
        start = time.perf_counter()
        result = warm.update(edited)
        edit_times.append(time.perf_counter() - start)
        reparsed.append(warm.parse_cache.parses - parses)
        analysed.append(result.blocks_analysed)
        if len(edited.splitlines()) != line_count or result.syntax_errors:
            raise AssertionError(f"edit {n} at {sites[n % len(sites)]} broke the file")
    incremental_s = statistics.median(edit_times)
    p95_s = sorted(edit_times)[int(0.95 * (len(edit_times) - 1))]

    print(
        f"file: torchvision {' + '.join(MODULES)}: {line_count} lines, "
        f"{len(first.findings)} findings, {len(sites)} functions edited in turn"
    )
    print(f"{'measurement':<52}{'ms':>9}{'ratio':>8}")
    rows = [
        (f"ast.parse(text), median of {args.runs}", parse_s),
        (f"full analysis, fresh DocumentAnalysis, median of {args.runs}", full_s),
        ("re-analysis, text unchanged (all cached)", unchanged_s),
        (f"re-analysis after 1-char edit, median of {args.edits}", incremental_s),
        ("re-analysis after 1-char edit, p95", p95_s),
        ("re-analysis after 1-char edit, max", max(edit_times)),
    ]
    for label, seconds in rows:
        print(f"{label:<52}{seconds * 1000:>9.2f}{seconds / parse_s:>7.3f}x")
    print(
        f"blocks per edit: re-parsed mean {statistics.mean(reparsed):.2f} (max {max(reparsed)}), "
        f"re-analysed mean {statistics.mean(analysed):.2f} (max {max(analysed)})"
    )
    print()
    print(
        f"single file: full/parse {full_s / parse_s:.2f} (target <= {FULL_TARGET}), "
        f"incremental/parse {incremental_s / parse_s:.3f} (target <= {INCREMENTAL_TARGET})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
