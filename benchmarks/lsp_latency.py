"""Latency and memory of the language server as an editor sees them, through a real LSP client
over stdio, as ratios to `ast.parse` of the same ~3,000-line file in this process.

    python benchmarks/lsp_latency.py [--edits N] [--opens N] [--moves N] [--files N]

The client is lsprotocol-shaped JSON over the server's pipes, read by one thread that stamps
each message when it arrives; it announces VS Code-like capabilities with push diagnostics
(UTF-16, lazy code-action edits). The file is single_file.py's: torchvision's resnet,
vision_transformer, swin_transformer and mobilenetv2 concatenated. Rows:

* didChange -> publishDiagnostics for one character typed inside a function (edits go round
  the functions in single_file.py's order and accumulate, at most one every 60 ms, as a
  fast typist's): p50 and p95;
* didOpen -> first publishDiagnostics of the file under a new name (a cold analysis);
* textDocument/codeAction on a cursor move (an empty range somewhere in the file);
* resident memory of the server with N open 1,000-line files (pieces of torchvision and timm,
  each piece distinct).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _sources
import single_file

REPO = Path(__file__).resolve().parents[1]
CHANGE_P50_TARGET = 0.5
CHANGE_P95_TARGET = 1.0
OPEN_TARGET = 2.0
CODE_ACTION_TARGET_MS = 5.0
MEMORY_TARGET_MB = 300.0
FILE_LINES = 1000
TIMEOUT_S = 120.0

CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "synchronization": {"didSave": True, "dynamicRegistration": True},
        "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
        "codeAction": {
            "codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["", "quickfix", "source", "source.fixAll"]}
            },
            "isPreferredSupport": True,
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
        },
        "hover": {"contentFormat": ["markdown", "plaintext"]},
    },
    "workspace": {"workspaceEdit": {"documentChanges": True}, "configuration": False},
}


class Client:
    """A minimal LSP client over the server's stdio; one reader thread stamps every message."""

    def __init__(self, command: Sequence[str], cwd: Path) -> None:
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
        )
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=cwd,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin = self.process.stdin
        self._stdout = self.process.stdout
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue[tuple[float, dict[str, Any]]]] = {}
        self._published: dict[str, dict[int | None, float]] = {}
        self.messages: list[dict[str, Any]] = []  # everything the server wrote, in order
        self.largest = 0  # bytes of the largest message the server wrote
        self._condition = threading.Condition()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name="lsp-reader", daemon=True).start()

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.write_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def write_bytes(self, data: bytes) -> None:
        """Writes `data` as it is (frames, or anything else a test of the reader needs)."""
        with self._lock:
            self._stdin.write(data)
            self._stdin.flush()

    def _read(self) -> None:
        while True:
            length = 0
            while True:
                line = self._stdout.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            message = json.loads(self._stdout.read(length))
            now = time.perf_counter()
            self.largest = max(self.largest, length)
            if "method" in message and "id" in message:  # a request from the server
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "id" in message and message["id"] in self._replies:
                self._replies[message["id"]].put((now, message))
            with self._condition:
                self.messages.append(message)
                if message.get("method") == "textDocument/publishDiagnostics":
                    params = message["params"]
                    self._published.setdefault(params["uri"], {})[params.get("version")] = now
                self._condition.notify_all()

    def request(self, method: str, params: Any) -> tuple[float, Any]:
        """Sends a request; returns (seconds until the reply, its result)."""
        msg_id = next(self._ids)
        replies: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self._replies[msg_id] = replies
        start = time.perf_counter()
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        arrived, reply = replies.get(timeout=TIMEOUT_S)
        del self._replies[msg_id]
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return arrived - start, reply.get("result")

    def notify(self, method: str, params: Any) -> float:
        start = time.perf_counter()
        self._write({"jsonrpc": "2.0", "method": method, "params": params})
        return start

    def published_at(self, uri: str, version: int | None) -> float:
        """When diagnostics of `uri` at `version` arrived (waits for them)."""
        deadline = time.monotonic() + TIMEOUT_S
        with self._condition:
            while version not in self._published.get(uri, {}):
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise RuntimeError(f"no diagnostics for {uri} version {version}")
                self._condition.wait(left)
            return self._published[uri][version]

    def wait_for(
        self, test: Callable[[dict[str, Any]], bool], limit: float = TIMEOUT_S
    ) -> dict[str, Any] | None:
        """The first message the server wrote that passes `test` (waits up to `limit`)."""
        deadline = time.monotonic() + limit
        with self._condition:
            while True:
                found = next((m for m in self.messages if test(m)), None)
                left = deadline - time.monotonic()
                if found is not None or left <= 0 or self.process.poll() is not None:
                    return found
                self._condition.wait(left)

    def rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(10)
        except Exception:
            self.process.kill()
            self.process.wait()


def open_params(uri: str, text: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[int(fraction * (len(ordered) - 1))]


def _times(run: Callable[[], object], count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def measure_changes(client: Client, uri: str, text: str, edits: int) -> list[float]:
    lines = text.splitlines(keepends=True)
    sites = single_file.edit_sites(text)
    client.notify("textDocument/didOpen", open_params(uri, text))
    client.published_at(uri, 1)
    latencies = []
    for number in range(edits):
        site = sites[number % len(sites)]
        single_file.apply_edit(lines, site)
        version = number + 2
        start = client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": site.line, "character": site.col},
                            "end": {"line": site.line, "character": site.col + 1},
                        },
                        "text": lines[site.line][site.col],
                    }
                ],
            },
        )
        latencies.append(client.published_at(uri, version) - start)
        keystroke_pause(start)
    return latencies


KEYSTROKE_S = 0.06  # a fast typist; the server treats changes under 30 ms apart as a burst


def keystroke_pause(since: float) -> None:
    """Waits until KEYSTROKE_S after `since`: edits come at a person's pace, not as a burst
    (which the server coalesces, on purpose, into one analysis after it ends)."""
    left = KEYSTROKE_S - (time.perf_counter() - since)
    if left > 0:
        time.sleep(left)


def measure_opens(client: Client, root: Path, text: str, opens: int) -> list[float]:
    latencies = []
    for number in range(opens):
        uri = (root / f"opened_{number}.py").as_uri()
        start = client.notify("textDocument/didOpen", open_params(uri, text))
        latencies.append(client.published_at(uri, 1) - start)
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return latencies


def measure_code_actions(client: Client, uri: str, text: str, moves: int) -> list[float]:
    lines = text.splitlines()
    rng = random.Random(1)
    latencies = []
    for _ in range(moves):
        line = rng.randrange(len(lines))
        character = rng.randrange(len(lines[line]) + 1)
        position = {"line": line, "character": character}
        seconds, _ = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": position, "end": position},
                "context": {"diagnostics": [], "triggerKind": 2},
            },
        )
        latencies.append(seconds)
    return latencies


def thousand_line_files(count: int) -> list[str]:
    """`count` distinct 1,000-line pieces of torchvision and timm, cut at top-level statements
    (each piece parses on its own); def/class lines get a tag when the sources run out."""
    files = _sources.python_files()
    pieces: list[str] = []
    current: list[str] = []
    for path in files:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            top_level = line[:1] not in ("", " ", "\t", ")", "]", "}", "#")
            if len(current) >= FILE_LINES and top_level:
                pieces.append("\n".join(current) + "\n")
                current = []
            current.append(line)
    pieces = [p for p in pieces if _parses(p)]
    result = pieces[:count]
    round_number = 0
    while len(result) < count:
        round_number += 1
        for piece in pieces[: count - len(result)]:
            result.append(
                "\n".join(
                    f"{line}  # copy {round_number}"
                    if line.lstrip().startswith(("def ", "class ")) and line.rstrip().endswith(":")
                    else line
                    for line in piece.splitlines()
                )
                + "\n"
            )
    return result


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def measure_memory(client: Client, root: Path, texts: list[str]) -> tuple[float, float]:
    before = client.rss_mb()
    uris = [(root / "open" / f"file_{number}.py").as_uri() for number in range(len(texts))]
    for uri, text in zip(uris, texts, strict=True):
        client.notify("textDocument/didOpen", open_params(uri, text))
    for uri in uris:
        client.published_at(uri, 1)
    return before, client.rss_mb()


@dataclass(frozen=True)
class Row:
    label: str
    ms: float | None
    ratio: float | None
    target: str
    ok: bool


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--edits", type=int, default=300, help="one-character edits")
    parser.add_argument("--opens", type=int, default=15, help="didOpen of the big file")
    parser.add_argument("--moves", type=int, default=300, help="code-action requests")
    parser.add_argument("--files", type=int, default=200, help="open 1,000-line files")
    parser.add_argument("--runs", type=int, default=51, help="runs of ast.parse")
    args = parser.parse_args(argv)
    try:
        directories = _sources.fetch({"torchvision": _sources.PACKAGES["torchvision"]})
        small_files = thousand_line_files(args.files) if args.files else []
    except _sources.SourcesUnavailable as exc:
        print(f"lsp_latency: skipped, sources unavailable: {exc}")
        return 0
    text = single_file.build_file(directories["torchvision"] / "torchvision" / "models")
    parse = _times(lambda: ast.parse(text), args.runs)
    parse_s = statistics.median(parse)

    with tempfile.TemporaryDirectory(prefix="inplace-lsp-bench-") as tmp:
        root = Path(tmp)
        client = Client([sys.executable, "-m", "inplace_lsp", "serve"], root)
        try:
            client.request(
                "initialize",
                {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": CAPABILITIES},
            )
            client.notify("initialized", {})
            # Steady state: the server warms up (autograd table, rules, libcst) in the
            # background for a few tenths of a second after `initialized`.
            warm_uri = (root / "warm_up.py").as_uri()
            client.notify("textDocument/didOpen", open_params(warm_uri, "import torch\n"))
            client.published_at(warm_uri, 1)
            time.sleep(1.0)
            idle_mb = client.rss_mb()
            opens = measure_opens(client, root, text, args.opens)
            uri = (root / "models.py").as_uri()
            changes = measure_changes(client, uri, text, args.edits)
            moves = measure_code_actions(client, uri, text, args.moves)
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            before_mb, memory_mb = (
                measure_memory(client, root, small_files) if small_files else (idle_mb, idle_mb)
            )
        finally:
            client.close()

    p50, p95 = statistics.median(changes), percentile(changes, 0.95)
    open_s = statistics.median(opens)
    move_s = statistics.median(moves)
    rows = [
        Row(f"ast.parse(text), median of {args.runs}", parse_s * 1e3, 1.0, "", True),
        Row(
            f"didChange -> diagnostics, p50 of {args.edits}",
            p50 * 1e3,
            p50 / parse_s,
            f"<= {CHANGE_P50_TARGET}x",
            p50 / parse_s <= CHANGE_P50_TARGET,
        ),
        Row(
            "didChange -> diagnostics, p95",
            p95 * 1e3,
            p95 / parse_s,
            f"<= {CHANGE_P95_TARGET}x",
            p95 / parse_s <= CHANGE_P95_TARGET,
        ),
        Row("didChange -> diagnostics, max", max(changes) * 1e3, max(changes) / parse_s, "", True),
        Row(
            f"didOpen -> first diagnostics, median of {args.opens}",
            open_s * 1e3,
            open_s / parse_s,
            f"<= {OPEN_TARGET}x",
            open_s / parse_s <= OPEN_TARGET,
        ),
        Row(
            f"codeAction on cursor move, p50 of {args.moves}",
            move_s * 1e3,
            None,
            f"<= {CODE_ACTION_TARGET_MS} ms",
            move_s * 1e3 <= CODE_ACTION_TARGET_MS,
        ),
        Row("codeAction on cursor move, p95", percentile(moves, 0.95) * 1e3, None, "", True),
    ]
    print(
        f"file: torchvision {' + '.join(single_file.MODULES)}: {len(text.splitlines())} lines; "
        f"server idle RSS {idle_mb:.0f} MB"
    )
    print(f"{'measurement':<52}{'ms':>9}{'ratio':>8}  {'target':<12}")
    for row in rows:
        ms = f"{row.ms:9.2f}" if row.ms is not None else f"{'':>9}"
        ratio = f"{row.ratio:7.3f}x" if row.ratio is not None else f"{'':>8}"
        mark = "" if not row.target else ("ok" if row.ok else "MISSED")
        print(f"{row.label:<52}{ms}{ratio}  {row.target:<12}{mark}")
    memory_ok = memory_mb <= MEMORY_TARGET_MB
    if small_files:
        print(
            f"{f'resident memory, {len(small_files)} open {FILE_LINES}-line files':<52}"
            f"{memory_mb:8.0f}M{'':>8}  {f'<= {MEMORY_TARGET_MB:.0f} MB':<12}"
            f"{'ok' if memory_ok else 'MISSED'}  (before opening: {before_mb:.0f} MB)"
        )
    print()
    print(
        f"lsp latency: change p50 {p50 / parse_s:.2f}x / p95 {p95 / parse_s:.2f}x of ast.parse "
        f"(targets {CHANGE_P50_TARGET}x / {CHANGE_P95_TARGET}x), open {open_s / parse_s:.2f}x "
        f"(<= {OPEN_TARGET}x), code action p50 {move_s * 1e3:.2f} ms "
        f"(<= {CODE_ACTION_TARGET_MS} ms), memory {memory_mb:.0f} MB with {len(small_files)} "
        f"files (<= {MEMORY_TARGET_MB:.0f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
