"""Run verify for the server and the CLI: pick the interpreter, launch the harness, enforce limits.

Imports neither torch nor pygls. The harness (``harness.py``) and the warm worker
(``worker.py``) are launched BY PATH in the user's interpreter, so that interpreter needs torch
but not inplace-lsp. A warm worker is kept per (interpreter, launcher): it imports torch once
and forks one child per job; without ``fork`` (or when asked) each job runs cold in a new
process. Every job gets a time limit (the process group is killed), an output limit (the tail
is kept), an address-space limit on CPU runs, and can be cancelled.

Entry point for the language server: ``run_verify(path, text, line, settings, cancel)``.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import itertools
import json
import os
import queue
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from inplace_lsp.analysis.lines import read_python, split_lines
from inplace_lsp.config import Settings, VerifySettings
from inplace_lsp.verify import coverage, targets
from inplace_lsp.verify.harness import error_result
from inplace_lsp.verify.parsed import Parsed, parse

if TYPE_CHECKING:
    from inplace_lsp.analysis.findings import Finding

__all__ = [
    "Interpreter",
    "RunOptions",
    "find_interpreter",
    "run_spec",
    "run_verify",
    "describe",
    "describe_lines",
    "shutdown_workers",
]

HARNESS_PATH = Path(__file__).with_name("harness.py")
WORKER_PATH = Path(__file__).with_name("worker.py")
OUTPUT_LIMIT = 64 * 1024  # bytes of the user's output kept (the tail)
STDERR_TAIL_CHARS = 4000  # of that, in the result
REPORT_LIMIT = 8 * 1024 * 1024  # a cold run's stdout (the report line) beyond this is dropped
START_TIMEOUT_S = 120.0  # starting a worker (importing torch) on a slow file system
KILL_GRACE_S = 3.0
LIFELINE_GRACE_S = 1.0  # for a job to kill what it started once its stdin ends
WORKER_IDLE_S = 900.0
MAX_PRELOAD = 32
# The statuses of an autograd error in the user's code, each naming its line (exit code 1).
FAILED = ("inplace-error", "leaf-error", "retention-error")

Cancel = Callable[[], bool] | threading.Event | None
Progress = Callable[[str], None] | None


# --------------------------------------------------------------------------- interpreter


@dataclass(frozen=True)
class Interpreter:
    path: str
    source: str  # why this one: "setting verify.python", "workspace .venv", ...


def _venv_python(directory: str) -> str | None:
    for relative in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
        candidate = os.path.join(directory, relative)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _is_project_root(directory: str) -> bool:
    return any(
        os.path.exists(os.path.join(directory, marker))
        for marker in (".git", ".hg", "pyproject.toml", "setup.cfg", "setup.py")
    )


def _project_root(directory: str, root: str | None) -> str | None:
    """The project the file's folder is in: the workspace `root` when it holds the folder,
    else the nearest folder up with a project marker; None when there is none."""
    if root is not None:
        top = os.path.abspath(root)
        if directory == top or directory.startswith(top.rstrip(os.sep) + os.sep):
            return top
    while True:
        if _is_project_root(directory):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def find_interpreter(
    path: str | None, settings: VerifySettings | None = None, root: str | None = None
) -> Interpreter:
    """The interpreter that runs the user's code (docs/verify.md lists the order): setting
    ``verify.python``, else a ``.venv`` / ``venv`` in the file's folder or a parent up to its
    project's root (none outside a project: a stray ``~/.venv`` is not the project's), else
    the activated environment (``$VIRTUAL_ENV``, ``$CONDA_PREFIX``), else the server's own."""
    settings = settings or VerifySettings()
    base = root or (os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    if settings.python:
        configured = os.path.expandvars(os.path.expanduser(settings.python))
        if not os.path.isabs(configured):
            if os.sep in configured or "/" in configured:
                configured = os.path.join(base, configured)
            else:
                configured = shutil.which(configured) or configured
        if os.path.isdir(configured):
            configured = _venv_python(configured) or configured
        return Interpreter(configured, "setting verify.python")
    directory = os.path.dirname(os.path.abspath(path)) if path else None
    project = _project_root(directory, root) if directory is not None else None
    while directory is not None and project is not None:
        for name in (".venv", "venv"):
            found = _venv_python(os.path.join(directory, name))
            if found:
                return Interpreter(found, f"the project's {name}")
        if directory == project:
            break
        parent = os.path.dirname(directory)
        directory = parent if parent != directory else None
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = os.environ.get(variable)
        found = _venv_python(prefix) if prefix else None
        if found:
            return Interpreter(found, f"the activated environment ${variable}")
    return Interpreter(sys.executable, "the interpreter inplace-lsp runs in")


def default_memory_mb() -> int | None:
    """80% of physical memory: a runaway allocation fails in the job, not in the machine."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    if pages <= 0 or size <= 0:
        return None
    return int(pages * size * 0.8 / (1024 * 1024))


@dataclass(frozen=True)
class RunOptions:
    """How one job runs (``run_verify`` derives it from the settings)."""

    python: str = sys.executable
    launcher: tuple[str, ...] = ()
    timeout_s: float = 120.0
    memory_mb: int | None = field(default_factory=default_memory_mb)
    output_limit: int = OUTPUT_LIMIT
    warm: bool = True
    cwd: str | None = None
    python_source: str = ""


# --------------------------------------------------------------------------- helpers


def _cancelled(cancel: Cancel) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


def _report(progress: Progress, message: str) -> None:
    if progress is not None:
        with contextlib.suppress(Exception):
            progress(message)


class _Tail:
    """The last bytes of a stream (bounded memory), and how many bytes it carried."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1024, limit)
        self.data = bytearray()
        self.total = 0
        self.lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        with self.lock:
            self.total += len(chunk)
            self.data += chunk
            if len(self.data) > 2 * self.limit:
                del self.data[: -self.limit]

    def text(self) -> str:
        with self.lock:
            return bytes(self.data[-self.limit :]).decode("utf-8", "replace")


def _tail_text(text: str, limit: int = STDERR_TAIL_CHARS) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def _kill_group(proc: subprocess.Popen[bytes], gentle: bool) -> None:
    """Kill the process group a job runs in (SIGTERM first behind a launcher such as srun,
    which must get the chance to cancel the remote step)."""
    if not hasattr(os, "killpg"):  # Windows: no process groups to signal
        with contextlib.suppress(OSError):
            proc.kill()
        return
    if proc.poll() is not None and not gentle:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        return
    if gentle:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(KILL_GRACE_S)


def _popen(
    command: list[str], cwd: str | None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes] | dict[str, Any]:
    """Start a job process in its own session (process group); an error result if it cannot."""
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd if cwd and os.path.isdir(cwd) else None,
            env=None if env is None else {**os.environ, **env},
            start_new_session=True,
        )
    except OSError as exc:
        return {"message": f"cannot run {command[0]}: {exc.strerror or exc}"}


def _missing_python(options: RunOptions) -> str | None:
    if options.launcher:  # the interpreter may live on another machine
        return None
    if os.path.isfile(options.python) and os.access(options.python, os.X_OK):
        return None
    where = f" ({options.python_source})" if options.python_source else ""
    return f"the interpreter {options.python}{where} does not exist or is not executable"


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name} (signal {-code})"
    return f"exited with code {code}"


# --------------------------------------------------------------------------- cold runs


def _run_cold(
    spec: Mapping[str, Any], options: RunOptions, cancel: Cancel
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(harness result or None, runner facts) for one job in a new interpreter.

    Without a launcher, the job's stdin is its lifeline: the spec is its first line and it
    stays open until the job is over, so that the job kills what it started and exits when
    this process ends by any means, SIGKILL included (see ``harness.guard``). A launcher
    (srun, ...) cancels its own remote step, and may not pass the end of stdin on."""
    watch = not options.launcher
    command = [*options.launcher, options.python, str(HARNESS_PATH), "--spec", "-"]
    if watch:
        command.append("--watch-stdin")
    proc = _popen(command, options.cwd)
    if isinstance(proc, dict):
        return None, {"failed": proc["message"], "output": "", "output_bytes": 0}
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    payload = json.dumps(spec).encode() + b"\n"  # one line: json.dumps escapes newlines
    stdin = proc.stdin
    fed = threading.Event()

    def feed() -> None:
        with contextlib.suppress(OSError, ValueError):
            stdin.write(payload)
            stdin.flush()
            if not watch:
                stdin.close()
            fed.set()

    threading.Thread(target=feed, daemon=True).start()
    report = bytearray()
    output = _Tail(options.output_limit)
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    deadline = time.monotonic() + options.timeout_s
    stopped: str | None = "interrupted"  # until the loop ends normally
    exited_at: float | None = None
    try:
        stopped = None
        while selector.get_map():
            if time.monotonic() > deadline:
                stopped = "timeout"
                break
            if _cancelled(cancel):
                stopped = "cancelled"
                break
            for key, _ in selector.select(0.1):
                stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    selector.unregister(stream)
                elif key.data == "out":
                    if len(report) < REPORT_LIMIT:
                        report += chunk
                else:
                    output.feed(chunk)
            if proc.poll() is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > 0.5:
                    break  # a grandchild holds the pipes open: do not wait for it
    except BaseException:  # KeyboardInterrupt in the CLI: the job must not outlive it
        stopped = "interrupted"
        raise
    finally:
        selector.close()
        if watch and fed.is_set():
            # The end of the lifeline: the job kills its descendants, even those that left
            # its process group, and exits; the group is killed below in any case.
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
            if stopped is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(LIFELINE_GRACE_S)
        if stopped is not None:
            _kill_group(proc, gentle=bool(options.launcher))
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(KILL_GRACE_S)
            with contextlib.suppress(OSError, AttributeError):  # whatever the job left running
                os.killpg(proc.pid, signal.SIGKILL)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
    facts: dict[str, Any] = {
        "output": output.text(),
        "output_bytes": output.total,
        "exit": _exit_text(proc.returncode),
        "stopped": stopped,
    }
    result = None
    for line in reversed(bytes(report).splitlines()):
        if line.strip():
            with contextlib.suppress(ValueError):
                parsed = json.loads(line)
                result = parsed if isinstance(parsed, dict) else None
            break
    return result, facts


# --------------------------------------------------------------------------- warm workers


class WorkerError(Exception):
    """The worker could not start or died; the message says why."""

    def __init__(self, message: str, output: str = "", fatal: bool = False) -> None:
        super().__init__(message)
        self.output = output
        self.fatal = fatal  # the interpreter itself is unusable (no torch): do not retry cold


class Worker:
    """One warm worker process (``worker.py``) in the user's interpreter."""

    def __init__(
        self,
        python: str,
        launcher: Sequence[str] = (),
        preload: Iterable[str] = (),
        cwd: str | None = None,
        idle_s: float = WORKER_IDLE_S,
    ) -> None:
        self.python = python
        self.launcher = tuple(launcher)
        self.preload = frozenset(preload)
        self.cwd = cwd
        self.idle_s = idle_s
        self.hello: dict[str, Any] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = _Tail(OUTPUT_LIMIT)
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.jobs = 0

    @property
    def pid(self) -> int | None:
        return self.hello.get("pid") if self.hello else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = START_TIMEOUT_S, cancel: Cancel = None) -> dict[str, Any]:
        command = [
            *self.launcher,
            self.python,
            str(WORKER_PATH),
            "--preload",
            json.dumps(sorted(self.preload)),
            "--idle",
            str(self.idle_s),
        ]
        # torch.cuda.is_available() through NVML: a module the worker preloads may ask, and
        # the CUDA driver's own check would make CUDA unusable in every forked child.
        proc = _popen(command, self.cwd, {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"})
        if isinstance(proc, dict):
            raise WorkerError(proc["message"], fatal=True)
        self.proc = proc
        threading.Thread(target=self._read_stdout, args=(proc,), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(proc,), daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while True:
            if _cancelled(cancel):
                self.close()
                raise WorkerError("cancelled while starting the worker")
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if time.monotonic() > deadline:
                    self.close()
                    raise WorkerError(
                        f"the verify worker did not start within {timeout_s:g} s",
                        self.stderr.text(),
                    ) from None
                continue
            if line is None:
                code = self.proc.wait(KILL_GRACE_S) if self.proc else None
                raise WorkerError(
                    f"the verify worker {_exit_text(code)} while starting", self.stderr.text()
                )
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict) and message.get("op") == "hello":
                    self.hello = message
                    break
        if not self.hello.get("ok"):
            self.close()
            raise WorkerError(str(self.hello.get("message")), self.stderr.text(), fatal=True)
        if not self.hello.get("fork") or self.hello.get("cuda_initialized"):
            self.close()
            raise WorkerError("the worker cannot fork safely in this interpreter")
        return self.hello

    def _read_stdout(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for line in proc.stdout:
                self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            while True:
                chunk = os.read(proc.stderr.fileno(), 1 << 16)
                if not chunk:
                    break
                self.stderr.feed(chunk)

    def _send(self, message: Mapping[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def run(
        self, spec: Mapping[str, Any], options: RunOptions, cancel: Cancel
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(harness result or None, runner facts) for one job; WorkerError if the worker
        died under it."""
        while not self.lock.acquire(timeout=0.1):  # another job runs: wait, but cancellably
            if _cancelled(cancel):
                return None, {"stopped": "cancelled", "output": "", "output_bytes": 0}
        try:
            return self._run_locked(spec, options, cancel)
        finally:
            self.lock.release()

    def _run_locked(
        self, spec: Mapping[str, Any], options: RunOptions, cancel: Cancel
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        if not self.alive():
            raise WorkerError("the verify worker is not running")
        job_id = next(self.ids)
        try:
            self._send(
                {"op": "run", "id": job_id, "spec": spec, "output_limit": options.output_limit}
            )
        except OSError as exc:
            raise WorkerError(f"cannot reach the verify worker: {exc}") from None
        self.jobs += 1
        deadline = time.monotonic() + options.timeout_s
        stopped: str | None = None
        kill_sent_at: float | None = None
        while True:
            if stopped is None:
                if time.monotonic() > deadline:
                    stopped = "timeout"
                elif _cancelled(cancel):
                    stopped = "cancelled"
                if stopped is not None:
                    kill_sent_at = time.monotonic()
                    with contextlib.suppress(OSError):
                        self._send({"op": "kill", "id": job_id, "reason": stopped})
            elif kill_sent_at is not None and time.monotonic() - kill_sent_at > KILL_GRACE_S:
                self.close()  # the worker does not answer: kill it and everything below it
                return None, {"stopped": stopped, "output": "", "output_bytes": 0}
            try:
                line = self.lines.get(timeout=0.05)
            except queue.Empty:
                continue
            if line is None:
                code = self.proc.wait(KILL_GRACE_S) if self.proc else None
                raise WorkerError(
                    f"the verify worker {_exit_text(code)} during the job",
                    self.stderr.text(),
                )
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or message.get("id") != job_id:
                continue
            facts = {
                "output": message.get("output") or "",
                "output_bytes": message.get("output_bytes") or 0,
                "exit": message.get("exit"),
                "stopped": stopped or (message.get("killed") and "killed"),
            }
            result = message.get("result")
            return (result if isinstance(result, dict) else None), facts

    def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            if proc.poll() is None:
                self._send({"op": "exit"})
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
        _kill_group(proc, gentle=False)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()


_WORKERS: dict[tuple[str, tuple[str, ...]], Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _worker_for(
    options: RunOptions, preload: frozenset[str], cancel: Cancel, progress: Progress
) -> Worker:
    """The warm worker for this interpreter and launcher: reused while it lives and already
    imported what the file imports; otherwise (re)started."""
    key = (options.python, options.launcher)
    with _WORKERS_LOCK:
        worker = _WORKERS.get(key)
        if worker is not None and worker.alive() and preload <= worker.preload:
            return worker
        if worker is not None:
            preload = preload | (worker.preload if worker.alive() else frozenset())
            worker.close()
            del _WORKERS[key]
        if len(preload) > MAX_PRELOAD:
            preload = frozenset(sorted(preload)[:MAX_PRELOAD])
        _report(progress, f"starting a warm worker in {options.python} (importing torch)")
        # Not in the run's folder (a temporary one goes when its run ends): each run's job
        # moves into its own.
        worker = Worker(options.python, options.launcher, preload, tempfile.gettempdir())
        worker.start(cancel=cancel)
        _WORKERS[key] = worker
        return worker


def workers() -> list[Worker]:
    """The warm workers alive now (tests and the server's status)."""
    with _WORKERS_LOCK:
        return [w for w in _WORKERS.values() if w.alive()]


def shutdown_workers() -> None:
    """Stop every warm worker (the server calls this on shutdown; also at exit)."""
    with _WORKERS_LOCK:
        for worker in _WORKERS.values():
            worker.close()
        _WORKERS.clear()


atexit.register(shutdown_workers)


# --------------------------------------------------------------------------- jobs


def preload_modules(
    text: str, path: str | None, roots: Iterable[str] = (), parsed: Parsed | None = None
) -> frozenset[str]:
    """Modules a file imports at its top level that are not the user's own files (next to it
    or under ``roots``): what a warm worker imports once. The user's own modules are imported
    fresh in every job. ``parsed``: the text's tree, when the caller has it."""
    try:
        tree = parse(text, parsed)
    except SyntaxError:
        return frozenset()
    directory = os.path.dirname(os.path.abspath(path)) if path else None
    stem = os.path.splitext(os.path.basename(path))[0] if path else None
    local_dirs = [d for d in (directory, *roots) if d]
    names: set[str] = set()
    statements = list(tree.body)
    while statements:
        stmt = statements.pop(0)
        if isinstance(stmt, (ast.If, ast.Try)):
            statements.extend(stmt.body)
            statements.extend(getattr(stmt, "orelse", []))
            for handler in getattr(stmt, "handlers", []):
                statements.extend(handler.body)
        elif isinstance(stmt, ast.Import):
            names.update(alias.name for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            names.add(stmt.module)
    kept: set[str] = set()
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    for name in names:
        top = name.split(".")[0]
        # torch is in every worker already; the standard library is cheap to import per job
        if top in ("__future__", "__main__", "torch", stem) or top in stdlib:
            continue
        if any(
            os.path.exists(os.path.join(d, top + ".py")) or os.path.isdir(os.path.join(d, top))
            for d in local_dirs
        ):
            continue
        kept.add(name)
    return frozenset(kept)


def _cause_line(output: str) -> str | None:
    """The line of the job's output that says why it ended: the exception line of its last
    traceback, or a "Fatal Python error"; None when there is none (the output's last line
    is then often an unrelated warning, which stays in ``stderr_tail``)."""
    cause: str | None = None
    in_traceback = False
    for line in output.splitlines():
        if line.startswith("Fatal Python error:"):
            cause, in_traceback = line.strip(), False
        elif line.startswith("Traceback (most recent call last):"):
            in_traceback = True
        elif in_traceback and line.strip() and not line[:1].isspace():
            cause, in_traceback = line.strip(), False
    return cause


def _finish(
    spec: Mapping[str, Any],
    result: dict[str, Any] | None,
    facts: Mapping[str, Any],
    options: RunOptions,
    mode: str,
    started: float,
) -> dict[str, Any]:
    """The result object: the harness's report, or one built from how the process ended."""
    target = str(spec.get("name") or "?")
    output = str(facts.get("output") or "")
    stopped = facts.get("stopped")
    final = error_result(target)
    if stopped == "timeout":
        final["status"] = "timeout"
        final["message"] = (
            f"{target} did not finish within {options.timeout_s:g} s; verify killed its "
            "process group (raise verify.timeout_s if it is just slow)"
        )
    elif stopped in ("cancelled", "killed"):
        final["message"] = "verify was cancelled; its process group was killed"
        final["cancelled"] = True
    elif facts.get("failed"):
        final["message"] = str(facts["failed"])
    elif result is None:
        exit_text = facts.get("exit") or "ended"
        final["message"] = f"the verify process {exit_text} without a report"
        cause = _cause_line(output)
        if cause:
            final["message"] += f": {cause[:300]}"
    else:
        final.update(result)
        final["target"] = result.get("target") or target
    final["kind"] = spec.get("kind")
    final["python"] = options.python
    final["mode"] = mode
    final["wall_s"] = round(time.monotonic() - started, 3)
    final["stderr_tail"] = _tail_text(output)
    final["output_bytes"] = int(facts.get("output_bytes") or 0)
    final["output_truncated"] = final["output_bytes"] > len(output.encode("utf-8", "replace"))
    return final


def run_spec(
    spec: Mapping[str, Any],
    options: RunOptions,
    cancel: Cancel = None,
    progress: Progress = None,
    preload: Iterable[str] = (),
) -> dict[str, Any]:
    """Run one harness spec (``targets.find_target``'s, with ``path`` set) under ``options``."""
    started = time.monotonic()
    job = dict(spec)
    job.setdefault("python", options.python)
    job.setdefault("cwd", options.cwd)
    if options.memory_mb:
        job.setdefault("memory_mb", options.memory_mb)
    missing = _missing_python(options)
    if missing is not None:
        return _finish(job, None, {"failed": missing}, options, "none", started)
    if _cancelled(cancel):
        return _finish(job, None, {"stopped": "cancelled"}, options, "none", started)
    if options.warm and hasattr(os, "fork"):
        for attempt in range(2):
            try:
                worker = _worker_for(options, frozenset(preload), cancel, progress)
            except WorkerError as exc:
                if exc.fatal:
                    facts = {"failed": str(exc), "output": exc.output}
                    return _finish(job, None, facts, options, "warm", started)
                if _cancelled(cancel):
                    return _finish(job, None, {"stopped": "cancelled"}, options, "warm", started)
                break  # fall back to a cold run
            _report(progress, f"running {job.get('name')} in worker {worker.pid}")
            try:
                result, facts = worker.run(job, options, cancel)
            except WorkerError:
                if attempt == 0:
                    continue  # the worker died between jobs or under this one: once more
                break
            final = _finish(job, result, facts, options, "warm", started)
            final["worker_pid"] = worker.pid
            return final
    _report(progress, f"running {job.get('name')} in a new {options.python} process")
    result, facts = _run_cold(job, options, cancel)
    return _finish(job, result, facts, options, "cold", started)


def _verify_settings(settings: Settings | VerifySettings | None) -> VerifySettings:
    if isinstance(settings, Settings):
        return settings.verify
    return settings or VerifySettings()


def run_verify(
    path: str,
    text: str | None,
    line: int | None,
    settings: Settings | VerifySettings | None = None,
    cancel: Cancel = None,
    *,
    root: str | None = None,
    device: str | None = None,
    timeout_s: float | None = None,
    train_step: bool = False,
    warm: bool | None = None,
    progress: Progress = None,
    constructor_args: Mapping[str, Any] | Sequence[Any] | None = None,
    findings: Iterable[Finding] | None = None,
    parsed: Parsed | None = None,
) -> dict[str, Any]:
    """Verify the target at ``line`` (1-based; None: the file's main target) of ``path``.

    ``text`` is the editor's buffer (None: read the file); it is what runs, under the file's
    path. Returns the result object of DESIGN.md (``status``, ``target``, ``device``,
    ``mutation``, ``saved_by``, ``message``, ``duration_s``) plus ``related``,
    ``stderr_tail``, ``python``, ``mode`` ("warm" | "cold"), ``wall_s``, and ``not_run``: the
    analysis's warnings and errors inside the target whose line the run never reached,
    ``[{"line", "code", "reason"}]`` (``silent``: see ``harness.run_spec``). Never raises for a
    problem with the user's code or interpreter: those are ``status: "error"`` results.
    ``warm`` (default: on unless a launcher is set) reuses a worker per interpreter.

    The language server passes what it has of ``text`` already, so that a request parses it
    once: ``findings``, the analysis's of ``text`` (before settings; None: analyse it here),
    and ``parsed`` (its tree, parsed at most once; None: parsed here, once).
    """
    started = time.monotonic()
    verify = _verify_settings(settings)
    path = os.path.abspath(path)
    if text is None:
        try:
            text = read_python(path)
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            return _error_result(path, f"cannot read {path}: {exc}", started)
    if parsed is None or parsed.text != text:
        parsed = Parsed(text)
    try:
        spec = targets.find_target(
            text, line, path=path, constructor_args=constructor_args, parsed=parsed
        )
    except targets.VerifyError as exc:
        return _error_result(path, str(exc), started)
    except RecursionError:
        return _error_result(path, f"VerifyError: {path} is too deeply nested to read", started)
    spec["path"] = path
    spec["source"] = text
    spec["device"] = device or verify.device
    module_code = targets.module_code_line(parse(text, parsed))
    spec["train_step"] = train_step
    flagged = _flagged(text, path, spec, settings, findings, parsed)
    if flagged:
        spec["watch_lines"] = sorted({line for line, _ in flagged})
    interpreter = find_interpreter(path, verify, root)
    project = root or os.path.dirname(path)
    spec["project"] = project  # on sys.path, wherever it runs
    temporary = None
    if verify.cwd == "temporary":
        temporary = tempfile.mkdtemp(prefix="inplace-lsp-verify-")
    options = RunOptions(
        python=interpreter.path,
        python_source=interpreter.source,
        launcher=tuple(verify.launcher),
        timeout_s=timeout_s if timeout_s is not None else verify.timeout_s,
        warm=(not verify.launcher) if warm is None else warm,
        cwd=temporary or project,
    )
    preload = preload_modules(text, path, [root] if root else [], parsed)
    try:
        result = run_spec(spec, options, cancel, progress, preload)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    result["cwd"] = {"kind": verify.cwd, "path": options.cwd}
    lines_run = result.pop("lines_run", None)
    if isinstance(lines_run, list):
        result["not_run"] = coverage.not_run(text, spec, flagged, lines_run, parsed)
        if result["not_run"] and result.get("status") == "ok":
            result["message"] = f"{result.get('message')}, but {not_run_text(result)}"
    if module_code is not None:  # what importing the file ran before the target
        result["module_code"] = {"path": path, "line": module_code}
    result.setdefault("python", options.python)
    result["python_source"] = interpreter.source
    result["wall_s"] = round(time.monotonic() - started, 3)
    return result


def _flagged(
    text: str,
    path: str,
    spec: Mapping[str, Any],
    settings: Settings | VerifySettings | None,
    findings: Iterable[Finding] | None = None,
    parsed: Parsed | None = None,
) -> list[tuple[int, str]]:
    """(line, code) of the analysis's warnings and errors inside the target, under the
    project's settings and `# noqa` comments: the lines whose run the result must account for.
    ``findings``: the analysis's of ``text`` when the caller has them (None: analyse it, from
    the tree of ``parsed`` when it is parsed already)."""
    from inplace_lsp import config
    from inplace_lsp.analysis import engine
    from inplace_lsp.analysis.findings import Severity

    first, last = spec.get("line"), spec.get("end_line")
    if not isinstance(first, int) or not isinstance(last, int):
        return []
    chosen = settings if isinstance(settings, Settings) else Settings()
    if findings is not None:
        found = list(findings)
    else:
        try:
            if parsed is not None and parsed.text == text:
                engine.default_workspace().parse_cache.add_document(text, parsed.tree())
            found = engine.analyze_document(text, path).findings
        except (SyntaxError, ValueError, RecursionError):
            return []
    lines = split_lines(text)  # as ast numbers them
    kept = config.apply(found, chosen, lines)
    return sorted(
        {
            (f.line, f.code)
            for f in kept
            if first <= f.line <= last and f.severity in (Severity.ERROR, Severity.WARNING)
        }
    )


def _error_result(path: str, message: str, started: float) -> dict[str, Any]:
    result = error_result(os.path.basename(path), message)
    result.update(wall_s=round(time.monotonic() - started, 3), stderr_tail="")
    return result


# --------------------------------------------------------------------------- messages


@functools.cache
def _saves_output() -> dict[str, str]:
    """Backward node -> the op that made it and saved its OUTPUT (so an in-place write on
    the result breaks it), from the knowledge table: {"SigmoidBackward0": "torch.sigmoid"}."""
    from inplace_lsp.analysis import knowledge

    found: dict[str, str] = {}
    ops = knowledge.load().ops
    # torch.<op> first, then torch.nn.functional (as `F.`), then Tensor methods.
    for name in sorted(ops, key=lambda n: (n.startswith("Tensor."), "nn.functional" in n, n)):
        op = ops[name]
        if op.grad_fn and not op.inplace and any("output" in s for s in op.saves.values()):
            found.setdefault(op.grad_fn, name.replace("torch.nn.functional.", "F."))
    return found


def _op_phrase(op: str) -> str:
    """What was saved, to be followed by "saved": "the output of torch.sigmoid"."""
    made_by = _saves_output().get(op)
    if made_by is not None:
        return f"the output of {made_by}"
    return f"a tensor that {op}"


def _where(location: Mapping[str, Any] | None, path: str | None) -> str:
    if not location:
        return "an unknown line"
    if path and os.path.normcase(str(location.get("path"))) == os.path.normcase(path):
        return f"line {location.get('line')}"
    return f"{location.get('path')}:{location.get('line')}"


def describe(result: Mapping[str, Any], path: str | None = None) -> str:
    """One line for the editor's message / the CLI (``path``: the verified file, so its
    lines are named by number only)."""
    line = _describe_outcome(result, path)
    fallback = result.get("fallback")
    if isinstance(fallback, Mapping):
        raised = str(fallback.get("exception") or "an error").splitlines()[0]
        if len(raised) > 160:
            raised = raised[:157] + "..."
        line += f" [on {fallback.get('device')} it raised {raised}; ran again on cpu]"
    return line


# What a failure that names one line did there: (the line where none is named, what).
_FAILS_AT = {
    "leaf-error": (
        "a line",
        "writes in place into a leaf tensor that requires grad (wrap it in torch.no_grad())",
    ),
    "retention-error": (
        "a call",
        "builds on a graph that an earlier backward freed, and the next backward raised "
        "'Trying to backward through the graph a second time' (detach what is kept across "
        "steps)",
    ),
}


def _describe_outcome(result: Mapping[str, Any], path: str | None) -> str:
    target = result.get("target") or "target"
    status = result.get("status")
    device = result.get("device") or "?"
    if status == "ok":
        duration = float(result.get("duration_s") or 0.0)
        what = "ran" if result.get("kind") == "function" else "forward and backward"
        line = f"{target}: {what} OK on {device} in {duration:.2f} s"
        warnings = len(result.get("related") or [])
        if warnings:
            line += f" ({warnings} warning{'s' if warnings != 1 else ''})"
        unproven = not_run_text(result)
        if unproven:
            line += f", but {unproven}"
        return line
    if status == "inplace-error":
        saved = result.get("saved_by")
        mutation = result.get("mutation")
        if saved:
            what = f"{_op_phrase(str(saved.get('op')))} saved at {_where(saved, path)}"
        else:
            what = "a tensor saved for backward"
        if mutation and result.get("silent"):
            return (
                f"{target} computes wrong gradients: {_where(mutation, path)} writes through "
                f"`.data` into {what}; torch raised nothing and backward used the new values"
            )
        if mutation:
            return f"{target} fails: {_where(mutation, path)} overwrites {what}"
        return f"{target} fails: {what} was modified in place: {result.get('message')}"
    if status in _FAILS_AT:
        unknown, what = _FAILS_AT[status]
        mutation = result.get("mutation")
        return f"{target} fails: {_where(mutation, path) if mutation else unknown} {what}"
    if status == "timeout":
        return str(result.get("message"))  # "X did not finish within N s; ..."
    return f"{target}: error: {result.get('message')}"


def not_run_text(result: Mapping[str, Any]) -> str:
    """ "line 29 (IPL001) did not run: `pad_mask` was None; ..." for the result's flagged lines
    that did not run, one clause per line ("" when every flagged line ran)."""
    by_line: dict[int, tuple[list[str], str]] = {}
    for entry in result.get("not_run") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("line"), int):
            continue
        codes, _ = by_line.setdefault(entry["line"], ([], str(entry.get("reason") or "")))
        if entry.get("code") and entry["code"] not in codes:
            codes.append(str(entry["code"]))
    clauses = []
    for line, (codes, reason) in sorted(by_line.items()):
        named = f" ({', '.join(codes)})" if codes else ""
        clauses.append(f"line {line}{named} did not run" + (f": {reason}" if reason else ""))
    return "; and ".join(clauses)


def interpreter_text(result: Mapping[str, Any]) -> str:
    """The interpreter a result ran in and why that one (`/p/.venv/bin/python (the project's
    .venv)`); "" when the result does not say (it did not get as far as choosing one)."""
    python = result.get("python")
    if not python:
        return ""
    source = result.get("python_source")
    return f"{python} ({source})" if source else str(python)


def describe_lines(result: Mapping[str, Any], path: str | None = None) -> list[str]:
    """``describe`` plus the locations (and, for errors, the end of the output), then the
    interpreter it ran in."""
    lines = [describe(result, path)]
    mutation = result.get("mutation")
    saved = result.get("saved_by")
    if mutation:
        what = "in-place write"
        if result.get("status") == "retention-error":
            what = "builds on the graph a backward freed"
        lines.append(f"  {mutation.get('path')}:{mutation.get('line')}: {what}")
    if saved:
        lines.append(f"  {saved.get('path')}:{saved.get('line')}: saved by {saved.get('op')}")
    for related in result.get("related") or []:
        lines.append(f"  {related.get('path')}:{related.get('line')}: {related.get('message')}")
    module_code = result.get("module_code")
    if module_code and result.get("status") in ("error", "timeout"):
        lines.append(
            f"  {module_code.get('path')}:{module_code.get('line')}: importing the file ran its "
            "module-level code from here on, before the target"
        )
    if result.get("status") != "ok" and path:
        for entry in result.get("not_run") or []:  # the one-line summary names them for ok
            reason = f": {entry.get('reason')}" if entry.get("reason") else ""
            lines.append(f"  {path}:{entry.get('line')}: {entry.get('code')} did not run{reason}")
    cwd = result.get("cwd")
    failed = result.get("status") in ("error", "timeout")
    if failed and isinstance(cwd, Mapping) and cwd.get("kind") == "temporary":
        # (a file it opens by a relative path is not there)
        lines.append(
            '  it ran in a new temporary folder (verify.cwd = "project" runs it in the project\'s)'
        )
    interpreter = interpreter_text(result)
    if interpreter:
        lines.append(f"  interpreter: {interpreter}")
    return lines
