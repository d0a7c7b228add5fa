"""Memory and the slowest publish of the language server over a long run of keystrokes inside
one large top-level block, through a real LSP client over stdio.

    python benchmarks/edit_memory.py [--edits N]

Files: transformers' `trainer.py` (the `Trainer` class, ~4,500 of its 4,768 lines, from the
transformers wheel, not committed) and a generated 2,000-line class. Each file gets N edits at
random lines inside function bodies, the way a person types: a character inserted at a random
column (often a syntax error for a moment) and deleted again by the next edit, at most one
edit every 60 ms. The server's
resident memory is sampled every 50 edits; each edit waits for its publishDiagnostics.
Targets (issue 10): RSS <= 300 MB at every sample, no publish slower than 1 s. Prints a table
and a one-line summary; `ast.parse` of the same file, in this process, is the reference for
the latency ratios.

    python benchmarks/edit_memory.py --day [--edits 40000]

A day of editing instead: transformers' `modeling_seamless_m4t_v2.py` (4,128 lines) open, a
statement typed into a method of it a character at a time and deleted again the same way, over
and over, so that the text keeps coming back to where it was (each edit waits for its publish,
at a typist's pace). The server's RSS after 2,000 edits and after the last, sampled every
1,000. Target (issue 38): growth after the first 2,000 edits <= 15 MB.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _sources
from lsp_latency import CAPABILITIES, Client, keystroke_pause, open_params, percentile

TRANSFORMERS = {"transformers": "5.24.0"}
RSS_TARGET_MB = 300.0
PUBLISH_TARGET_S = 1.0
SAMPLE_EVERY = 50
DAY_FILE = "transformers/models/seamless_m4t_v2/modeling_seamless_m4t_v2.py"
DAY_STATEMENT = "hidden_states = hidden_states * 2"
DAY_WARM_EDITS = 2000
DAY_SAMPLE_EVERY = 1000
DAY_GROWTH_TARGET_MB = 15.0


def generated_class(lines: int = 2000) -> str:
    """A module with one nn.Module class of `lines` lines: many small methods that compute,
    save and write tensors, the shape of a large model file's class."""
    out = ["import torch", "import torch.nn as nn", "", "", "class Big(nn.Module):"]
    out += ["    def __init__(self):", "        super().__init__()"]
    out += ["        self.fc = nn.Linear(8, 8)", ""]
    number = 0
    while len(out) < lines:
        out += [
            f"    def step_{number}(self, x):",
            f"        h = self.fc(x) * {number % 7 + 1}",
            "        g = torch.sigmoid(h)",
            "        y = g + h",
            "        y += 1",
            "        return y.sum()",
            "",
        ]
        number += 1
    return "\n".join(out) + "\n"


def body_lines(text: str) -> list[int]:
    """0-based lines inside function bodies (not the def line), non-blank, ASCII."""
    lines = text.splitlines()
    found: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0].lineno - 1
            last = (node.end_lineno or node.lineno) - 1
            for index in range(first, last + 1):
                if lines[index].strip() and lines[index].isascii():
                    found.add(index)
    return sorted(found)


def run_edits(
    client: Client, uri: str, text: str, edits: int, seed: int
) -> tuple[list[float], list[float]]:
    """(publish latencies, RSS samples in MB)."""
    rng = random.Random(seed)
    lines = text.splitlines(keepends=True)
    sites = body_lines(text)
    client.notify("textDocument/didOpen", open_params(uri, text))
    client.published_at(uri, 1)
    latencies: list[float] = []
    samples = [client.rss_mb()]
    inserted: tuple[int, int] | None = None
    for number in range(edits):
        if inserted is None:
            line = rng.choice(sites)
            content = lines[line].rstrip("\r\n")
            column = rng.randrange(len(content) - len(content.lstrip()), len(content) + 1)
            change = {
                "range": {
                    "start": {"line": line, "character": column},
                    "end": {"line": line, "character": column},
                },
                "text": "x",
            }
            lines[line] = lines[line][:column] + "x" + lines[line][column:]
            inserted = (line, column)
        else:
            line, column = inserted
            change = {
                "range": {
                    "start": {"line": line, "character": column},
                    "end": {"line": line, "character": column + 1},
                },
                "text": "",
            }
            lines[line] = lines[line][:column] + lines[line][column + 1 :]
            inserted = None
        version = number + 2
        start = client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        latencies.append(client.published_at(uri, version) - start)
        keystroke_pause(start)
        if (number + 1) % SAMPLE_EVERY == 0:
            samples.append(client.rss_mb())
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return latencies, samples


def typed_and_deleted(text: str) -> list[tuple[dict[str, Any], str]]:
    """One round of the day's edits: a new line opened in the body of the first `forward`
    method of more than five statements, DAY_STATEMENT typed into it a character at a time,
    deleted the same way, the line removed: (range, text) changes that bring the text back
    to `text`."""
    lines = text.splitlines(keepends=True)
    method = next(
        node
        for cls in ast.walk(ast.parse(text))
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name == "forward" and len(node.body) > 5
    )
    line = method.body[2].lineno - 1
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]

    def at(character: int, row: int = line) -> dict[str, int]:
        return {"line": row, "character": character}

    edits = [({"start": at(0), "end": at(0)}, indent + "\n")]
    for count, char in enumerate(DAY_STATEMENT):
        edits.append(({"start": at(len(indent) + count), "end": at(len(indent) + count)}, char))
    for count in range(len(DAY_STATEMENT), 0, -1):
        edits.append(({"start": at(len(indent) + count - 1), "end": at(len(indent) + count)}, ""))
    edits.append(({"start": at(0), "end": at(0, line + 1)}, ""))
    return edits


def day_of_editing(directory: Path, edits: int) -> int:
    """The --day measurement (see the module docstring)."""
    text = (directory / DAY_FILE).read_text("utf-8")
    rounds = typed_and_deleted(text)
    samples: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-bench-") as tmp:
        root = Path(tmp)
        client = Client([sys.executable, "-m", "inplace_lsp", "serve"], root)
        try:
            params = {"processId": os.getpid(), "rootUri": root.as_uri()}
            client.request("initialize", {**params, "capabilities": CAPABILITIES})
            client.notify("initialized", {})
            uri = (root / "modeling.py").as_uri()
            client.notify("textDocument/didOpen", open_params(uri, text))
            client.published_at(uri, 1)
            samples[0] = client.rss_mb()
            latencies = []
            for number in range(edits):
                where, new = rounds[number % len(rounds)]
                change = {"range": where, "text": new}
                version = number + 2
                start = client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
                )
                latencies.append(client.published_at(uri, version) - start)
                keystroke_pause(start)
                if (number + 1) % DAY_SAMPLE_EVERY == 0 or number + 1 == DAY_WARM_EDITS:
                    samples[number + 1] = client.rss_mb()
                    print(f"  {number + 1:>6} edits: RSS {samples[number + 1]:.0f} MB", flush=True)
        finally:
            client.close()
    warm = samples.get(DAY_WARM_EDITS, samples[0])
    growth = samples[edits] - warm
    print(
        f"a day of editing, {DAY_FILE.rsplit('/', 1)[-1]} ({len(text.splitlines())} lines), "
        f"{edits} edits: RSS {samples[0]:.0f} MB open, {warm:.0f} MB after {DAY_WARM_EDITS}, "
        f"{samples[edits]:.0f} MB after {edits}, most {max(samples.values()):.0f} MB; growth "
        f"after the first {DAY_WARM_EDITS}: {growth:+.1f} MB (target <= "
        f"{DAY_GROWTH_TARGET_MB:.0f}: {'met' if growth <= DAY_GROWTH_TARGET_MB else 'MISSED'}); "
        f"publish p50 {statistics.median(latencies) * 1e3:.0f} ms, "
        f"p95 {percentile(latencies, 0.95) * 1e3:.0f} ms"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--edits", type=int, help="edits per file (2,000; --day: 40,000)")
    parser.add_argument("--day", action="store_true", help="a day of editing (see above)")
    args = parser.parse_args(argv)
    try:
        directory = _sources.fetch(TRANSFORMERS)["transformers"]
    except _sources.SourcesUnavailable as exc:
        print(f"edit_memory: skipped, sources unavailable: {exc}")
        return 0
    if args.day:
        return day_of_editing(directory, args.edits or 40_000)
    args.edits = args.edits or 2000
    files = {
        "transformers/trainer.py": (directory / "transformers" / "trainer.py").read_text("utf-8"),
        "generated 2,000-line class": generated_class(),
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-bench-") as tmp:
        root = Path(tmp)
        for seed, (label, text) in enumerate(files.items()):
            parse_s = statistics.median(
                [_timed(lambda text=text: ast.parse(text)) for _ in range(11)]
            )
            # A fresh server per file: each file's figures are its own.
            client = Client([sys.executable, "-m", "inplace_lsp", "serve"], root)
            try:
                client.request(
                    "initialize",
                    {
                        "processId": os.getpid(),
                        "rootUri": root.as_uri(),
                        "capabilities": CAPABILITIES,
                    },
                )
                client.notify("initialized", {})
                uri = (root / f"file_{seed}.py").as_uri()
                latencies, samples = run_edits(client, uri, text, args.edits, seed)
            finally:
                client.close()
            results.append((label, len(text.splitlines()), parse_s, latencies, samples))

    print(
        f"{'file':<30}{'lines':>7}{'edits':>7}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
        f"{'max/parse':>10}{'RSS start':>10}{'RSS max':>9}  verdict"
    )
    verdicts = []
    for label, count, parse_s, latencies, samples in results:
        worst = max(latencies)
        ok = max(samples) <= RSS_TARGET_MB and worst <= PUBLISH_TARGET_S
        verdicts.append(ok)
        print(
            f"{label:<30}{count:>7}{len(latencies):>7}"
            f"{statistics.median(latencies) * 1e3:9.1f}{percentile(latencies, 0.95) * 1e3:9.1f}"
            f"{worst * 1e3:9.1f}{worst / parse_s:9.1f}x{samples[0]:9.0f}M{max(samples):8.0f}M"
            f"  {'ok' if ok else 'MISSED'}"
        )
    print()
    print(
        "edit memory: "
        + "; ".join(
            f"{label} RSS max {max(s):.0f} MB, slowest publish {max(lat) * 1e3:.0f} ms"
            for label, _, _, lat, s in results
        )
        + f" (targets <= {RSS_TARGET_MB:.0f} MB, <= {PUBLISH_TARGET_S * 1e3:.0f} ms): "
        + ("all met" if all(verdicts) else "MISSED")
    )
    return 0


def _timed(run: object) -> float:
    assert callable(run)
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
