"""Hover latency and the server's memory while it reads a run report that names many large
files (what a cloned repository can commit), in one run.

    python benchmarks/report_flood.py [--files N] [--kb K] [--checkout PATH] [--json PATH]

A workspace with `model.py` open in the server (over stdio, as an editor runs it) and N files
of K kB each (default 40 of 1,950 kB: just under the 2 MB a named file may have); then
`.inplace-lsp/last-run.json` is written with one finding per large file (its last line, which
holds the run's text: the worst case, every file read is matched and kept). While the server
reads it (it polls the report folder every 2 s), hovers on `model.py` are sent one after the
other, each timed from request to reply, until the findings of the large files are published
(or 60 s). Reported: the hovers' p50, p95 and max in that window, the time until the findings
were published, and the server's peak RSS (VmHWM).

Targets (issue 27): hover <= 50 ms while any report is read; peak RSS <= 300 MB. `--checkout`
runs the server of another checkout (an older commit's worktree) for a before / after.
Exit status 0 (a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HOVER_TARGET_MS = 50.0
RSS_TARGET_MB = 300.0
MODEL = """import torch


def gate(x):
    g = torch.sigmoid(x)
    g *= 0.5
    return g
"""


class Client:
    """The server over stdio: requests, and the notifications it sends, in arrival order."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lock = threading.Condition()
        self.replies: dict[object, dict[str, Any]] = {}
        self.published: list[tuple[float, str, int]] = []  # (when, uri, run diagnostics)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if not line:
                return
            message = json.loads(stream.read(length))
            with self.lock:
                if "id" in message and "method" in message:  # a request of the server
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                elif "id" in message:
                    self.replies[message["id"]] = message
                elif message.get("method") == "textDocument/publishDiagnostics":
                    params = message["params"]
                    ran = sum(d.get("source") == "inplace-lsp run" for d in params["diagnostics"])
                    self.published.append((time.monotonic(), params["uri"], ran))
                self.lock.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        stdin.flush()

    def request(self, request_id: int, method: str, params: object) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with self.lock:
            while request_id not in self.replies:
                if not self.lock.wait(60):
                    raise TimeoutError(f"no reply to {method}")
            return self.replies.pop(request_id)

    def notify(self, method: str, params: object) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def peak_rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")


def measure(files: int, kilobytes: int, checkout: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("", encoding="utf-8")
        (root / "model.py").write_text(MODEL, encoding="utf-8")
        (root / ".inplace-lsp").mkdir()
        filler = "x = 0\n" * (kilobytes * 1000 // 6)
        findings = []
        for index in range(files):
            path = root / f"big{index}.py"
            path.write_text(filler + f"y{index} += 1\n", encoding="utf-8")
            place = {"path": str(path), "line": filler.count("\n") + 1, "source": f"y{index} += 1"}
            findings.append(
                {
                    "severity": "error",
                    "kind": "inplace-error",
                    "message": "m",
                    "mutation": place,
                    "saved_by": None,
                    "call_site": None,
                    "related": [],
                    "count": 1,
                }
            )
        env = dict(os.environ, PYTHONPATH=str(checkout))
        client = Client([sys.executable, "-m", "inplace_lsp", "serve"], root, env)
        try:
            client.request(
                1, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
            )
            client.notify("initialized", {})
            uri = (root / "model.py").as_uri()
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": MODEL}},
            )
            hover = {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 5}}
            client.request(2, "textDocument/hover", hover)  # the file analysed once
            report = {
                "tool": "inplace-lsp run",
                "format": 1,
                "run_id": "flood",
                "findings": findings,
            }
            written = time.monotonic()
            (root / ".inplace-lsp" / "last-run.json").write_text(json.dumps(report))
            latencies: list[float] = []
            shown_s = None
            request_id = 10
            while time.monotonic() - written < 60:
                request_id += 1
                sent = time.monotonic()
                client.request(request_id, "textDocument/hover", hover)
                latencies.append((time.monotonic() - sent) * 1e3)
                with client.lock:
                    done = [t for t, u, ran in client.published if ran and "big" in u]
                if done:
                    shown_s = done[0] - written
                    break
            rss = client.peak_rss_mb()
            client.request(request_id + 1, "shutdown", None)
            client.notify("exit", None)
        finally:
            try:
                client.process.wait(10)
            except subprocess.TimeoutExpired:
                client.process.kill()
    ordered = sorted(latencies)
    return {
        "files": files,
        "kb_each": kilobytes,
        "checkout": str(checkout),
        "hovers": len(latencies),
        "hover_ms": {
            "p50": statistics.median(ordered),
            "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
            "max": ordered[-1],
        },
        "findings_shown_after_s": shown_s,
        "peak_rss_mb": rss,
        "hover_target_met": ordered[-1] <= HOVER_TARGET_MS,
        "rss_target_met": rss <= RSS_TARGET_MB,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--kb", type=int, default=1950)
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.files, args.kb, args.checkout.resolve())
    hover = result["hover_ms"]
    shown = result["findings_shown_after_s"]
    print(
        f"{args.files} files x {args.kb} kB, server of {result['checkout']}: "
        f"{result['hovers']} hovers while the report was read: p50 {hover['p50']:.1f} ms, "
        f"p95 {hover['p95']:.1f} ms, max {hover['max']:.1f} ms (target <= {HOVER_TARGET_MS:.0f}: "
        f"{'met' if result['hover_target_met'] else 'MISSED'}); findings shown after "
        + (f"{shown:.1f} s" if shown is not None else "never (60 s)")
        + f"; peak RSS {result['peak_rss_mb']:.0f} MB (target <= {RSS_TARGET_MB:.0f}: "
        f"{'met' if result['rss_target_met'] else 'MISSED'})"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
