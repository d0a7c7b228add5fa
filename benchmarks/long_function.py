"""A 20,000-line function: `check` says it is not analysed and checks the rest of the file in
a few seconds, and the editor shows a bug typed elsewhere in the file as fast as ruff shows
its diagnostics (issue 24).

    python benchmarks/long_function.py [--lines N] [--no-ruff]

The file: a training helper of N generated lines (tensor ops, writes in place under `if`s,
each joining every tensor made so far: its analysis grows with the square of its length, a
minute for 20,000 lines inside a loop) and, after it, a short function with a real bug
(`y.add_(1)` on exp's saved output). Rows:

1. `inplace-lsp check --no-cache` on the file, wall time (median of 3 runs of the command,
   start to exit) beside `ast.parse` of the same text in this process: target <= 3 s, with
   the long function reported as not analysed and the short function's finding present.
2. The language server: the file opened, then `y.mul_(2)` typed a character at a time as a
   new line of the short function; the time from each didChange to that version's
   diagnostics, beside ruff's server on the same edits; the last version's diagnostics must
   hold the typed bug. Target: p50 <= ruff's p50, p95 <= 1.5x ruff's p95.

Exit status 0: this is a measurement; the last line says how many targets were missed.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from lsp_latency import percentile
from lsp_vs_ruff import Change, Server, ruff_command
from single_file import _median_s

REPO = Path(__file__).resolve().parents[1]
CHECK_TARGET_S = 3.0
P50_TARGET, P95_TARGET = 1.0, 1.5


def long_function_file(lines: int) -> str:
    """The module: imports, the long function (its writes make it an entry point), the short
    buggy one."""
    out = ["import torch", "", "", "def long_step(x, w, model):", "    h = x"]
    for i in range(lines):
        kind = i % 5
        if kind == 0:
            out.append(f"    a{i} = torch.tanh(h @ w)")
        elif kind == 1:
            out.append(f"    h = h + a{i - 1} * {i % 7}")
        elif kind == 2:
            out.append(f"    if h.sum() > {i}:\n        a{i - 2}.mul_(2)")
        elif kind == 3:
            out.append(f"    loss{i} = model(h).sum()")
        else:
            out.append("    h = torch.relu(h)")
    out += ["    return h", "", "", "def short_step(x):", "    y = x.exp()", "    y.add_(1)"]
    return "\n".join([*out, "    return y", ""])
    return "\n".join(out)


def check_row(path: Path, text: str) -> tuple[float, float, bool, str]:
    """(seconds for `check`, seconds for ast.parse, whether its output is as expected, why)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    times, output = [], ""
    for _ in range(3):
        start = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "inplace_lsp", "check", "--no-cache", path.name],
            cwd=path.parent,
            env=env,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - start)
        output = run.stdout + run.stderr
    said = "function `long_step` is not analysed" in output
    found = f"{path.name}:{len(text.splitlines()) - 1}:5: IPL001" in output  # `y.add_(1)`
    why = "" if said and found else f"unexpected output:\n{output}"
    return statistics.median(times), _median_s(lambda: ast.parse(text), 3), said and found, why


def typing_changes(text: str) -> tuple[list[Change], int]:
    """`    y.mul_(2)` typed as a new line before short_step's `return y` (in the text without
    its bug); its 0-based line."""
    line = len(text.splitlines()) - 1  # `    return y`
    changes = [Change(line, 0, line, 0, "\n")]
    changes += [Change(line, col, line, col, ch) for col, ch in enumerate("    y.mul_(2)")]
    return changes, line


def editor_rows(
    text: str, root: Path, with_ruff: bool
) -> tuple[list[float], list[float] | None, bool]:
    text = text.replace("    y.add_(1)\n", "")  # the bug is the one typed
    changes, line = typing_changes(text)
    ours = Server("inplace", [sys.executable, "-m", "inplace_lsp", "serve"], root)
    try:
        uri = (root / "edit_inplace.py").as_uri()
        ours.open(uri, text)
        latencies = ours.edit(uri, changes)
        print("ours, each keystroke (ms):", " ".join(f"{t * 1e3:.0f}" for t in latencies))
        last = len(changes) + 1
        published = [
            m["params"]
            for m in ours.client.messages
            if m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and m["params"].get("version") == last
        ]
        shown = any(
            d.get("code") == "IPL001" and d["range"]["start"]["line"] == line
            for d in (published[-1]["diagnostics"] if published else [])
        )
    finally:
        ours.close()
    theirs = None
    command = ruff_command() if with_ruff else None
    if command is not None:
        ruff = Server("ruff", command, root)
        try:
            uri = (root / "edit_ruff.py").as_uri()
            ruff.open(uri, text)
            theirs = ruff.edit(uri, changes)
        finally:
            ruff.close()
    return latencies, theirs, shown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--lines", type=int, default=20_000, help="lines of the long function")
    parser.add_argument("--no-ruff", action="store_true", help="leave ruff's server out")
    args = parser.parse_args(argv)
    text = long_function_file(args.lines)
    missed = 0
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / "long_function.py"
        path.write_text(text, encoding="utf-8")
        check_s, parse_s, expected, why = check_row(path, text)
        ok = check_s <= CHECK_TARGET_S and expected
        missed += not ok
        print(f"file: {len(text.splitlines())} lines, ast.parse {parse_s * 1e3:.1f} ms")
        print(
            f"check --no-cache: {check_s:.2f} s ({check_s / parse_s:.1f}x parse), "
            f"target <= {CHECK_TARGET_S:.0f} s with the long function said not analysed and "
            f"the short one's finding: {'ok' if ok else 'MISSED'}"
        )
        if why:
            print(why)
        ours, theirs, shown = editor_rows(text, root, not args.no_ruff)
    p50, p95 = statistics.median(ours) * 1e3, percentile(ours, 0.95) * 1e3
    line = f"typing elsewhere: ours p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    if theirs is not None:
        r50, r95 = statistics.median(theirs) * 1e3, percentile(theirs, 0.95) * 1e3
        ok = p50 <= P50_TARGET * r50 and p95 <= P95_TARGET * r95 and shown
        missed += not ok
        line += f"; ruff p50 {r50:.1f} ms, p95 {r95:.1f} ms: {'ok' if ok else 'MISSED'}"
    print(line + f"; the typed bug {'is' if shown else 'is NOT'} shown")
    missed += not shown
    print(f"\nlong function: {missed} target(s) missed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
