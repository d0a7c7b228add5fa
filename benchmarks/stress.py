"""Stress: a day of editing, hostile protocol input and hostile files, each against an oracle.

    python benchmarks/stress.py [--files N] [--edits N] [--seed S]

Three parts, each printing a table, then a one-line summary:

1. Edits: N real files of torchvision and timm (the wheels, not committed), each given random
   edits (a character inserted or deleted at a random place, a line duplicated or removed:
   often a syntax error for a moment, then undone) through one incremental
   `DocumentAnalysis`. After every
   edit whose text parses, its findings must equal a fresh analysis of the same text (the
   oracle). Resident memory is sampled every 100 edits; the slowest update is kept.
2. Protocol: the real server over pipes gets each malformed frame of issue 10, then a hover
   request that must be answered; then a burst of 10,000 didChange in one write, which must
   end in few publishes, the last one for the last version.
3. Command line: a FIFO named `*.py`, a `*.py` link to /dev/zero, a 50 MB file, a directory
   1,000 levels deep and a file name that is not UTF-8, each `check`ed with a time limit: it
   must finish, say why it skipped what it skipped, and stay within memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _sources
from lsp_latency import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from inplace_lsp.analysis.engine import DocumentAnalysis  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
LIMIT_S = 60.0


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _parses(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "invalid decimal literal" and friends, mid-typing
        try:
            compile(text, "<edit>", "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _edit(lines: list[str], rng: random.Random) -> None:
    index = rng.randrange(len(lines))
    line = lines[index]
    kind = rng.random()
    if kind < 0.45:
        column = rng.randrange(len(line) + 1)
        lines[index] = line[:column] + rng.choice("x_(:= .0\n") + line[column:]
    elif kind < 0.9 and len(line) > 1:
        column = rng.randrange(len(line) - 1)
        lines[index] = line[:column] + line[column + 1 :]
    elif kind < 0.95:
        lines.insert(index, line)
    elif len(lines) > 1:
        del lines[index]


def _key(findings: Sequence[Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            f.code,
            f.severity.value,
            f.span.line,
            f.span.col,
            f.span.end_line,
            f.span.end_col,
            f.message,
        )
        for f in findings
    )


def edits(files: list[Path], count: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    checked = mismatches = 0
    worst = 0.0
    peak = rss_mb()
    examples: list[str] = []
    done = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines(keepends=True) or ["\n"]
        incremental = DocumentAnalysis()
        incremental.update(text)
        for _ in range(count):
            before = list(lines)
            _edit(lines, rng)
            text = "".join(lines)
            start = time.perf_counter()
            result = incremental.update(text)
            worst = max(worst, time.perf_counter() - start)
            done += 1
            if done % 100 == 0:
                peak = max(peak, rss_mb())
            if not _parses(text):
                lines = before  # the typist fixes it: the next text is valid again
                continue
            checked += 1
            fresh = DocumentAnalysis().update(text)
            if _key(result.findings) != _key(fresh.findings):
                mismatches += 1
                if len(examples) < 3:
                    examples.append(f"{path.name} after edit {done}")
    return {
        "files": len(files),
        "edits": done,
        "checked": checked,
        "mismatches": mismatches,
        "examples": examples,
        "slowest_ms": worst * 1e3,
        "rss_peak_mb": peak,
    }


# ---------------------------------------------------------------- protocol


def _frame(message: object, header: str = "Content-Length: {}\r\n\r\n") -> bytes:
    body = json.dumps(message).encode()
    return header.format(len(body)).encode() + body


def _hover(request_id: int) -> dict[str, Any]:
    where = {"textDocument": {"uri": "file:///nowhere.py"}, "position": {"line": 0, "character": 0}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "textDocument/hover", "params": where}


def protocol(root: Path) -> list[tuple[str, bool, str]]:
    body = json.dumps(_hover(2)).encode()
    cases = {
        "Content-Length too small": f"Content-Length: {len(body) // 3}\r\n\r\n".encode() + body,
        "Content-Length too large": f"Content-Length: {len(body) * 3}\r\n\r\n".encode() + body,
        "lowercase header": _frame(_hover(2), "content-length: {}\r\n\r\n"),
        "no space after the colon": _frame(_hover(2), "Content-Length:{}\r\n\r\n"),
        "missing header": body,
        "64 KB of binary junk": random.Random(0).randbytes(65536),
        "invalid JSON": b"Content-Length: 9\r\n\r\n{not json",
        "a batch": _frame([_hover(2)]),
        "no jsonrpc key": _frame({"id": 2, "method": "textDocument/hover", "params": {}}),
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}},
    }
    rows = []
    for number, (label, data) in enumerate(cases.items()):
        server = Client([sys.executable, "-m", "inplace_lsp", "serve"], root)
        try:
            server.write_bytes(_frame(init) + _frame({"jsonrpc": "2.0", "method": "initialized"}))
            server.wait_for(lambda m: m.get("id") == 1)
            server.write_bytes(data + _frame(_hover(100 + number)))
            answered = server.wait_for(lambda m, n=100 + number: m.get("id") == n, 20.0)
            popups = [m for m in server.messages if m.get("method") == "window/showMessage"]
            ok = answered is not None and not popups
            rows.append((label, ok, "answered" if answered else "NOT answered"))
        finally:
            server.close()
    rows.append(_burst(root, init))
    return rows


def _burst(root: Path, init: dict[str, Any], count: int = 10_000) -> tuple[str, bool, str]:
    server = Client([sys.executable, "-m", "inplace_lsp", "serve"], root)
    uri = (root / "burst.py").as_uri()
    text = "import torch\n\n\ndef f(x):\n    h = torch.sigmoid(x)\n    h += 1\n    return h  # \n"
    frames = [
        _frame(init),
        _frame({"jsonrpc": "2.0", "method": "initialized"}),
        _frame(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}
                },
            }
        ),
    ]
    for n in range(count):
        end = {"line": 6, "character": 15 + n}
        frames.append(
            _frame(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didChange",
                    "params": {
                        "textDocument": {"uri": uri, "version": n + 2},
                        "contentChanges": [{"range": {"start": end, "end": end}, "text": "x"}],
                    },
                }
            )
        )
    try:
        start = time.perf_counter()
        server.write_bytes(b"".join(frames))
        last = server.wait_for(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"].get("version") == count + 1
            ),
            120.0,
        )
        seconds = time.perf_counter() - start
        publishes = sum(
            1 for m in server.messages if m.get("method") == "textDocument/publishDiagnostics"
        )
    finally:
        server.close()
    ok = last is not None and publishes <= 20
    return (f"burst of {count:,} didChange", ok, f"{seconds:.1f} s, {publishes} publishes")


# ---------------------------------------------------------------- command line


def _check(cwd: Path, *args: str) -> tuple[int | None, float, float, str]:
    """(exit code or None on a timeout, seconds, peak MB of the child, stderr)."""
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        done = subprocess.run(
            [sys.executable, "-m", "inplace_lsp", "check", *args],
            cwd=cwd,
            env=ENV,
            capture_output=True,
            timeout=LIMIT_S,
        )
        code: int | None = done.returncode
        err = done.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        code, err = None, ""
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return code, time.perf_counter() - start, peak, err


def command_line(root: Path) -> list[tuple[str, bool, str]]:
    rows = []
    header = "import torch\n"
    fifo_dir = root / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "pipe.py")
    (fifo_dir / "ok.py").write_text(header)
    code, seconds, peak, err = _check(fifo_dir)
    rows.append(("FIFO named *.py", code is not None and "regular" in err, f"{seconds:.1f} s"))
    zero_dir = root / "zero"
    zero_dir.mkdir()
    (zero_dir / "zero.py").symlink_to("/dev/zero")
    code, seconds, peak, err = _check(zero_dir, "zero.py")
    rows.append(
        (
            "*.py link to /dev/zero",
            code is not None and peak < 500,
            f"{seconds:.1f} s, {peak:.0f} MB",
        )
    )
    big_dir = root / "big"
    big_dir.mkdir()
    line = "x = torch.zeros(3) + 1  # padding padding padding padding\n"
    (big_dir / "big.py").write_text(header + line * (50_000_000 // len(line)))
    code, seconds, peak, err = _check(big_dir)
    ok = code is not None and "too large" in err and peak < 500
    rows.append(("50 MB file", ok, f"{seconds:.1f} s, {peak:.0f} MB"))
    deep = root / "deep"
    levels = [deep / os.path.join(*["d"] * n) if n else deep for n in range(1001)]
    for level in levels:  # one mkdir a level: pathlib's parents=True recurses
        level.mkdir()
    (levels[-1] / "m.py").write_text(header + "h = torch.sigmoid(torch.ones(2))\n")
    code, seconds, peak, err = _check(deep)
    rows.append(("directory 1,000 levels deep", code is not None and code != 2, f"{seconds:.1f} s"))
    (levels[-1] / "m.py").unlink()
    for level in reversed(levels):  # and one rmdir a level: shutil.rmtree recurses too
        level.rmdir()
    name_dir = root / "names"
    name_dir.mkdir()
    (name_dir / os.fsdecode(b"caf\xe9.py")).write_text(header + "x = torch.ones(2)\nx += 1\n")
    code, seconds, peak, err = _check(name_dir, "--format", "sarif")
    rows.append(("non-UTF-8 file name, SARIF", code in (0, 1), f"exit {code}"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=20, help="real files to edit")
    parser.add_argument("--edits", type=int, default=250, help="random edits per file")
    parser.add_argument("--seed", type=int, default=7, help="seed of the edits (tests use none)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", SyntaxWarning)  # what ast.parse says of half-typed code
    try:
        candidates = [p for p in _sources.python_files() if p.stat().st_size > 8_000]
    except _sources.SourcesUnavailable as exc:
        print(f"stress: skipped, sources unavailable: {exc}")
        return 0
    files = random.Random(args.seed).sample(candidates, min(args.files, len(candidates)))
    edit = edits(files, args.edits, args.seed)
    print(
        f"edits: {edit['edits']:,} over {edit['files']} real files, {edit['checked']:,} "
        f"parsed and compared with a fresh analysis: {edit['mismatches']} mismatches "
        f"{edit['examples'] or ''}; slowest update {edit['slowest_ms']:.0f} ms; "
        f"RSS peak {edit['rss_peak_mb']:.0f} MB"
    )
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-stress-") as tmp:
        root = Path(tmp)
        proto = protocol(root)
        cli = command_line(root)
    for title, rows in (("protocol", proto), ("command line", cli)):
        print(f"\n{title}:")
        for label, ok, detail in rows:
            print(f"  {label:<32}{'ok' if ok else 'FAILED':<8}{detail}")
    failed = [label for label, ok, _ in (*proto, *cli) if not ok]
    print()
    print(
        f"stress: {edit['mismatches']} of {edit['checked']:,} incremental results differ from a "
        f"fresh analysis; protocol {len(proto) - sum(1 for _, ok, _ in proto if not ok)}/"
        f"{len(proto)} ok; command line {len(cli) - sum(1 for _, ok, _ in cli if not ok)}/"
        f"{len(cli)} ok" + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
