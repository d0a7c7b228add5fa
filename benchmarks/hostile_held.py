"""The hostile inputs that the probe of issue 27 found handled ("held"), run again: each one is
done for real (the server over stdio, the CLI in a subprocess, verify's and run's children)
and checked for what a careful tool does. Prints one line per case, held or NOT HELD, with
its figures.

    python benchmarks/hostile_held.py [--only NAME ...] [--rewrite-s 60] [--files 100001]

Cases: malformed, UTF-16 and huge-line reports; a report rewritten every 10 ms (`--rewrite-s`,
a minute by default: hover p50 and the server's RSS at the start and the end); two servers on
one workspace; SIGINT / SIGTERM during `run` (the exit status python gives, a valid report);
verify of a target that hangs, that leaves a child process, that allocates 20 GB, that prints
100 MB; `check` of 100,001 files (`--files`) and of a tree with symlink loops; two `--fix` runs
at once on the same files; a corrupted cache. POSIX only (signals, process groups). Exit
status 1 when a case is not held.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_latency import REPO, Client, open_params

SERVER = [sys.executable, "-m", "inplace_lsp", "serve"]
BUG = """import torch


def gate(x):
    g = torch.sigmoid(x)
    g *= 0.5
    return g
"""
# An Error-level finding for `check` (exit status 1).
CHECKED = """import torch

w = torch.randn(8, requires_grad=True)
y = torch.sigmoid(w)
y.mul_(2)
y.sum().backward()
"""
RUN_SCRIPT = """import torch

w = torch.randn(8, requires_grad=True)
y = torch.sigmoid(w)
y.mul_(2)
try:
    y.sum().backward()
except RuntimeError:
    pass
print("ready", flush=True)
import time
time.sleep(60)
"""


def _env() -> dict[str, str]:
    return dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )


def cli(
    *args: str, cwd: Path, timeout: float = 600, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = _env()
    if cache is not None:
        env["INPLACE_LSP_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "inplace_lsp", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _project(root: Path) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "probe"\n', encoding="utf-8")
    (root / "model.py").write_text(BUG, encoding="utf-8")
    (root / ".inplace-lsp").mkdir(exist_ok=True)
    return root


def _finding(root: Path, line: int = 6, source: str = "g *= 0.5", message: str = "m") -> dict:
    place = {"path": str(root / "model.py"), "line": line, "source": source}
    return {
        "severity": "error",
        "kind": "inplace-error",
        "message": message,
        "mutation": place,
        "saved_by": None,
        "call_site": None,
        "related": [],
        "count": 1,
    }


def _report(findings: list[dict], run_id: str = "probe") -> dict:
    return {"tool": "inplace-lsp run", "format": 1, "run_id": run_id, "findings": findings}


class Served:
    """A server on `root` with model.py open: its analysis's diagnostic came, hovers answer."""

    def __init__(self, root: Path) -> None:
        self.client = Client(SERVER, root)
        self.uri = (root / "model.py").as_uri()
        self.client.request(
            "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
        )
        self.client.notify("initialized", {})
        self.client.notify("textDocument/didOpen", open_params(self.uri, BUG))
        self.client.published_at(self.uri, 1)

    def hover_ms(self) -> float:
        params = {"textDocument": {"uri": self.uri}, "position": {"line": 5, "character": 5}}
        return self.client.request("textDocument/hover", params)[0] * 1e3

    def run_diagnostics(self, limit: float = 10.0) -> list[dict]:
        """The newest run findings published for model.py (waits up to `limit` for one)."""

        def ran(message: dict[str, Any]) -> bool:
            return message.get("method") == "textDocument/publishDiagnostics" and any(
                d.get("source") == "inplace-lsp run" for d in message["params"]["diagnostics"]
            )

        self.client.wait_for(ran, limit)
        shown = [m for m in self.client.messages if ran(m)]
        last = shown[-1]["params"]["diagnostics"] if shown else []
        return [d for d in last if d.get("source") == "inplace-lsp run"]

    def shut_down(self) -> bool:
        """True when `shutdown` was answered and the process exited."""
        try:
            self.client.request("shutdown", None)
            self.client.notify("exit", None)
            return self.client.process.wait(10) == 0
        except Exception:  # noqa: BLE001 - a hang or a crash: not held
            self.client.process.kill()
            self.client.process.wait()
            return False


def _serves_on(root: Path, report_bytes: bytes) -> tuple[bool, str]:
    _project(root)
    (root / ".inplace-lsp" / "last-run.json").write_bytes(report_bytes)
    started = time.monotonic()
    served = Served(root)
    hover = served.hover_ms()
    time.sleep(2.5)  # a poll of the report folder
    hover = max(hover, served.hover_ms())
    alive = served.shut_down()
    return alive, (
        f"diagnostics after {time.monotonic() - started:.1f} s, hover {hover:.1f} ms, "
        f"shutdown {'answered' if alive else 'NOT answered'}"
    )


def malformed(root: Path) -> tuple[bool, str]:
    return _serves_on(root, b'{"tool": "inplace-lsp run", "findings": [{"mutation": 7}, ')


def utf16(root: Path) -> tuple[bool, str]:
    return _serves_on(root, json.dumps(_report([_finding(root)])).encode("utf-16"))


def huge_line(root: Path) -> tuple[bool, str]:
    """A 30 MB report on one line: one finding whose message is 30 MB."""
    text = json.dumps(_report([_finding(root, message="m" * (30 << 20))]))
    held, detail = _serves_on(root, text.encode())
    return held, f"{len(text) >> 20} MB on one line: {detail}"


def rewritten(root: Path, seconds: float) -> tuple[bool, str]:
    """The report rewritten every 10 ms (alternating runs) while hovers are timed."""
    _project(root)
    report = root / ".inplace-lsp" / "last-run.json"
    report.write_text(json.dumps(_report([_finding(root)], "a")), encoding="utf-8")
    served = Served(root)
    stop = threading.Event()
    writes = 0

    def writer() -> None:
        nonlocal writes
        while not stop.is_set():
            report.write_text(json.dumps(_report([_finding(root)], f"r{writes}")))
            writes += 1
            time.sleep(0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    hovers: list[float] = []
    rss: list[float] = []
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            hovers.append(served.hover_ms())
            if not rss or time.monotonic() - start > len(rss) * 5:
                rss.append(served.client.rss_mb())
            time.sleep(0.005)
    finally:
        stop.set()
        thread.join()
    alive = served.shut_down()
    p50 = statistics.median(hovers)
    first = statistics.mean(rss[1:3]) if len(rss) > 3 else rss[0]
    grown = rss[-1] - first
    held = alive and p50 <= 5.0 and grown <= 20.0
    return held, (
        f"{writes} writes in {seconds:.0f} s, {len(hovers)} hovers: p50 {p50:.1f} ms "
        f"(<= 5), max {max(hovers):.1f} ms; RSS {first:.0f} -> {rss[-1]:.0f} MB "
        f"(grew {grown:+.0f}, <= 20); shutdown {'answered' if alive else 'NOT answered'}"
    )


def two_servers(root: Path) -> tuple[bool, str]:
    """Two servers on one workspace: each shows the analysis and the run's finding."""
    _project(root)
    (root / ".inplace-lsp" / "last-run.json").write_text(json.dumps(_report([_finding(root)])))
    first, second = Served(root), Served(root)
    shown = [len(first.run_diagnostics()), len(second.run_diagnostics())]
    alive = [first.shut_down(), second.shut_down()]
    held = shown == [1, 1] and all(alive)
    return held, f"run findings shown {shown[0]} and {shown[1]}; both shut down: {all(alive)}"


def _interrupted(root: Path, sig: signal.Signals) -> tuple[bool, str]:
    """`run` and plain python get the signal after the script's backward: same status; the
    report is valid JSON naming the write."""
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    script = root / "train.py"
    script.write_text(RUN_SCRIPT, encoding="utf-8")
    codes = []
    for command in (
        [sys.executable, str(script)],
        [sys.executable, "-m", "inplace_lsp", "run", str(script)],
    ):
        process = subprocess.Popen(
            command, cwd=root, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdout is not None
        process.stdout.readline()  # "ready": past the backward
        process.send_signal(sig)
        codes.append(process.wait(60))
        process.stdout.close()
        assert process.stderr is not None
        process.stderr.close()
    try:
        report = json.loads((root / ".inplace-lsp" / "last-run.json").read_text())
        lines = [f["mutation"]["line"] for f in report["findings"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        lines = [f"invalid report: {exc}"]
    held = codes[0] == codes[1] and lines == [5]
    return held, f"exit status python {codes[0]}, run {codes[1]}; report names lines {lines}"


def sigint(root: Path) -> tuple[bool, str]:
    return _interrupted(root, signal.SIGINT)


def sigterm(root: Path) -> tuple[bool, str]:
    return _interrupted(root, signal.SIGTERM)


def _verify(
    root: Path, body: str, timeout: str = "20"
) -> tuple[subprocess.CompletedProcess[str], float]:
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    code = textwrap.dedent(
        """\
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
        """
    ) + textwrap.indent(textwrap.dedent(body), " " * 8)
    (root / "target.py").write_text(code, encoding="utf-8")
    start = time.monotonic()
    done = cli("verify", "target.py:11", "--device", "cpu", "--timeout", timeout, cwd=root)
    return done, time.monotonic() - start


def verify_timeout(root: Path) -> tuple[bool, str]:
    done, took = _verify(root, "import time\ntime.sleep(3600)\nreturn self.fc(x)\n", "5")
    said = (done.stdout + done.stderr).strip().splitlines()
    held = done.returncode == 2 and took < 60 and any("time" in line for line in said)
    return held, f"exit {done.returncode} after {took:.0f} s: {said[0] if said else ''!r}"


def verify_child(root: Path) -> tuple[bool, str]:
    marker = root / "child.pid"
    body = f"""\
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
open({str(marker)!r}, "w").write(str(child.pid))
import time
time.sleep(3600)
return self.fc(x)
"""
    done, took = _verify(root, body, "5")
    time.sleep(1)
    pid = int(marker.read_text()) if marker.exists() else None
    alive = False
    if pid is not None:
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            pass
        stat = Path(f"/proc/{pid}/stat")
        if alive and stat.exists() and stat.read_text().split()[2] == "Z":
            alive = False  # a zombie: dead, not yet reaped by init
    held = done.returncode == 2 and pid is not None and not alive
    return (
        held,
        f"exit {done.returncode} after {took:.0f} s; the child {pid} "
        + ("left RUNNING" if alive else "is gone"),
    )


def verify_20gb(root: Path) -> tuple[bool, str]:
    body = "big = torch.ones(20 * 2**30, dtype=torch.uint8)\nreturn self.fc(x) + big[0]\n"
    done, took = _verify(root, body, "60")
    said = (done.stdout + done.stderr).strip().splitlines()
    held = done.returncode == 2 and took < 60
    return held, f"exit {done.returncode} after {took:.0f} s: {said[0] if said else ''!r}"


def verify_output(root: Path) -> tuple[bool, str]:
    body = (
        "import sys\n"
        "for _ in range(100):\n"
        "    sys.stdout.write('x' * (1 << 20))\n"
        "return self.fc(x)\n"
    )
    done, took = _verify(root, body, "60")
    size = len(done.stdout) + len(done.stderr)
    held = done.returncode in (0, 1, 2) and size < (1 << 20) and took < 60
    return held, f"exit {done.returncode} after {took:.0f} s, {size} characters shown"


def many_files(root: Path, count: int) -> tuple[bool, str]:
    tree = root / "tree"
    for index in range(count):
        folder = tree / f"d{index // 1000}"
        if index % 1000 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{index}.py").write_text("x = 1\n")
    (tree / "d0" / "f0.py").write_text(CHECKED)
    start = time.monotonic()
    done = cli("check", "--no-cache", "tree", cwd=root, timeout=1800)
    took = time.monotonic() - start
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    held = (
        done.returncode == 1 and "IPL001" in done.stdout and str(count) in summary.replace(",", "")
    )
    return held, f"exit {done.returncode} after {took:.0f} s: {summary!r}"


def symlink_loops(root: Path) -> tuple[bool, str]:
    tree = root / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "model.py").write_text(CHECKED)
    (tree / "sub" / "up").symlink_to("..")  # a loop through the parent
    (tree / "self").symlink_to("self")  # a link to itself
    (tree / "a").symlink_to("b")
    (tree / "b").symlink_to("a")  # two links to each other
    start = time.monotonic()
    done = cli("check", "--no-cache", "tree", cwd=root, timeout=120)
    took = time.monotonic() - start
    lines = done.stdout.strip().splitlines()
    held = done.returncode == 1 and sum("[error]" in line for line in lines) == 1 and took < 60
    return (
        held,
        f"exit {done.returncode} after {took:.1f} s: {lines[-1] if lines else done.stderr!r}",
    )


def concurrent_fix(root: Path) -> tuple[bool, str]:
    """Two `check --fix` on the same 50 files at once: each file ends fixed once, still
    valid Python, no temporary file left."""
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    for index in range(50):
        (root / f"m{index}.py").write_text(BUG.replace("gate", f"gate{index}"))
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "inplace_lsp", "check", "--fix", "--no-cache", "."],
            cwd=root,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(300) for p in processes]
    codes = [p.returncode for p in processes]
    texts = [(root / f"m{index}.py").read_text() for index in range(50)]
    fixed = sum("g = g * 0.5" in text and "g *= 0.5" not in text for text in texts)
    valid = 0
    for text in texts:
        try:
            compile(text, "m.py", "exec")
            valid += 1
        except SyntaxError:
            pass
    left = [p.name for p in root.iterdir() if not p.name.endswith((".py", ".toml"))]
    internal = any("internal error" in out + err for out, err in outputs)
    held = fixed == 50 and valid == 50 and not left and not internal and 2 not in codes
    return held, (
        f"exit {codes}; {fixed} of 50 files fixed once, {valid} valid; "
        f"other files left: {left or 'none'}; internal error: {internal}"
    )


def corrupted_cache(root: Path) -> tuple[bool, str]:
    """Entries overwritten with junk, and a cache folder that cannot be read: each run gives
    what a run without a cache gives."""
    _project(root)
    cache = root / "cache"
    fresh = cli("check", "--no-cache", "model.py", cwd=root)
    cli("check", "model.py", cwd=root, cache=cache)
    entries = list(cache.rglob("*.json"))
    damage = [b"", b"\x00" * 100, b'{"key": ', b"[1, 2, 3]", b'{"key": "k", "read": 5}']
    same = 0
    for junk in damage:
        for entry in entries:
            entry.write_bytes(junk)
        again = cli("check", "model.py", cwd=root, cache=cache)
        same += (again.returncode, again.stdout) == (fresh.returncode, fresh.stdout)
    folders = [p for p in cache.iterdir() if p.is_dir()]
    for folder in folders:
        folder.chmod(0)
    try:
        locked = cli("check", "model.py", cwd=root, cache=cache)
    finally:
        for folder in folders:
            folder.chmod(0o700)
    same += (locked.returncode, locked.stdout) == (fresh.returncode, fresh.stdout)
    total = len(damage) + 1
    held = same == total and bool(entries)
    return (
        held,
        f"{same} of {total} damaged caches gave a fresh run's output ({len(entries)} entry)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--rewrite-s", type=float, default=60.0)
    parser.add_argument("--files", type=int, default=100_001)
    args = parser.parse_args(argv)
    cases: dict[str, Callable[[Path], tuple[bool, str]]] = {
        "malformed report": malformed,
        "UTF-16 report": utf16,
        "huge-line report": huge_line,
        "report rewritten every 10 ms": lambda root: rewritten(root, args.rewrite_s),
        "two servers on one workspace": two_servers,
        "SIGINT during run": sigint,
        "SIGTERM during run": sigterm,
        "verify timeout": verify_timeout,
        "verify child process": verify_child,
        "verify 20 GB allocation": verify_20gb,
        "verify 100 MB of output": verify_output,
        "100,001 files": lambda root: many_files(root, args.files),
        "symlink loops": symlink_loops,
        "two concurrent --fix": concurrent_fix,
        "corrupted cache": corrupted_cache,
    }
    failed = 0
    for name, case in cases.items():
        if args.only and not any(word.lower() in name.lower() for word in args.only):
            continue
        with tempfile.TemporaryDirectory() as folder:
            try:
                held, detail = case(Path(folder).resolve())
            except Exception as exc:  # noqa: BLE001 - a case that crashed is not held
                held, detail = False, f"{type(exc).__name__}: {exc}"
        failed += not held
        print(f"{'held    ' if held else 'NOT HELD'}  {name}: {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
