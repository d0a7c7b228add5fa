"""Per-function summaries on the five real files of benchmarks/lsp_vs_ruff.py: how often a
whole-file analysis interprets each function, and what an edit inside a helper analyses again.

    python benchmarks/summaries.py [--files NAME ...] [--helpers N] [--verbose]

1. Whole file: one fresh analysis of the file as the language server makes it. A function is
   interpreted once per distinct signature (the facts of its arguments and of what it read
   through them, `summaries.Summary.key` and `.reads`); the table prints the functions run,
   the interpretations, the distinct signatures and the most interpretations of one
   signature (the target: 1).
2. Edits inside helpers: for up to N helpers of the file (functions and methods another one
   calls, that the whole-file analysis ran), one edit that keeps the
   helper's meaning and its lines (`; pass` after its first simple statement), made to the
   server's analysis of the file (`DocumentAnalysis.update`). Printed: the functions that
   edit interpreted again (with how many interpretations) and the entry points analysed
   again; the helper itself is always among them. A caller's summary is kept from the last
   update when each changed callee, interpreted again for the arguments it gave it, says the
   same (early cutoff): those are printed as kept; the others are the callers whose summary
   input changed (an `__init__` edit that changes what it gives the class, its attributes,
   changes the class's shape, which every key of an object of the class holds; one that gives
   the same is cut off as any other).

The figures are counts, not times: they do not depend on the machine.
"""

from __future__ import annotations

import argparse
import ast
import collections
import random
import sys
from collections.abc import Sequence

import _sources
from lsp_vs_ruff import FILES

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.lines import split_lines


def _texts(names: Sequence[str]) -> dict[str, str]:
    texts = {}
    for name in names:
        corpus = _sources.CORPORA[FILES[name][0]]
        directory = _sources.fetch({corpus.distribution: corpus.version})[corpus.distribution]
        texts[name] = (directory / corpus.packages[0] / FILES[name][1]).read_text("utf-8")
    return texts


def whole_file(text: str) -> tuple[int, int, int, int, dict[str, int]]:
    """(functions, interpretations, distinct signatures, most interpretations of one
    signature, interpretations per function) of one fresh analysis."""
    analysis = DocumentAnalysis()
    analysis.update(text)
    cache = analysis._summaries
    signatures: collections.Counter[tuple[object, ...]] = collections.Counter()
    for fn_id, made in cache.by_function.items():
        for summary in made:
            signatures[(fn_id, summary.key, summary.reads)] += 1
    runs = dict(cache.runs)
    most = max(signatures.values(), default=0)
    return len(runs), sum(runs.values()), len(signatures), most, runs


def _edited(text: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The text with `; pass` after the helper's first one-line simple statement (its
    meaning and its lines unchanged), or None when it has none."""
    lines = split_lines(text)
    for stmt in ast.walk(fn):
        if (
            isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.AnnAssign))
            and stmt.lineno == stmt.end_lineno
            and stmt is not fn.body[0]  # not a docstring
        ):
            line = lines[stmt.lineno - 1]
            end = stmt.end_col_offset or 0
            if line[end:].strip():
                continue  # a comment or another statement follows
            lines[stmt.lineno - 1] = line[:end] + "; pass"
            return "\n".join(lines)
    return None


def helpers(text: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The functions and methods another one of the file calls (`helper(...)`,
    `self.helper(...)`, `Block(...)` for `Block.__init__`) that the whole-file analysis ran."""
    tree = ast.parse(text)
    defined: dict[str, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined[stmt.name] = (stmt.name, stmt)
        elif isinstance(stmt, ast.ClassDef):
            for sub in stmt.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    called = stmt.name if sub.name == "__init__" else sub.name
                    defined.setdefault(called, (f"{stmt.name}.{sub.name}", sub))
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                called.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                if func.value.id == "self":
                    called.add(func.attr)
    *_, runs = whole_file(text)
    found = [defined[name] for name in sorted(called) if name in defined]
    return [(name, fn) for name, fn in found if name in runs]


def edit_helper(text: str, name: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    edited = _edited(text, fn)
    if edited is None:
        return ""
    analysis = DocumentAnalysis()
    analysis.update(text)
    result = analysis.update(edited)
    runs = analysis._summaries.runs
    again = sorted(runs)
    others = [f for f in again if f != name]
    kept = sorted(analysis._summaries.kept)
    return (
        f"  {name}: {len(again)} function(s) interpreted again, {sum(runs.values())} time(s)"
        f" ({'itself' if name in again else 'not itself'}"
        f"{', and ' + ', '.join(others) if others else ''});"
        f" callers kept: {', '.join(kept) if kept else 'none'};"
        f" {result.functions_analysed} entry point(s) analysed again"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", nargs="*", choices=sorted(FILES), default=list(FILES))
    parser.add_argument("--helpers", type=int, default=6, help="helpers edited per file")
    parser.add_argument("--verbose", action="store_true", help="interpretations per function")
    args = parser.parse_args(argv)
    try:
        texts = _texts(args.files)
    except _sources.SourcesUnavailable as exc:
        print(f"summaries: skipped, sources unavailable: {exc}")
        return 0
    header = ("file", "functions", "runs", "signatures", "most per signature")
    print(f"{header[0]:<20} {header[1]:>9} {header[2]:>6} {header[3]:>10} {header[4]:>18}")
    worst = 0
    for name, text in texts.items():
        functions, runs, signatures, most, per_function = whole_file(text)
        worst = max(worst, most)
        print(f"{name:<20} {functions:>9} {runs:>6} {signatures:>10} {most:>18}")
        if args.verbose:
            for function, count in sorted(per_function.items(), key=lambda kv: -kv[1]):
                print(f"    {count:>4}  {function}")
    print("\nedits inside helpers (what each analysed again):")
    rng = random.Random(0)
    for name, text in texts.items():
        print(name)
        found = helpers(text)
        for helper, fn in rng.sample(found, min(args.helpers, len(found))):
            line = edit_helper(text, helper, fn)
            if line:
                print(line)
    verdict = "met" if worst <= 1 else "missed"
    print(f"\nsummaries: at most {worst} interpretation(s) per signature (target 1: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
