"""A warm verify worker: imports torch once in the user's interpreter, forks one child per job.

Runs as a script (``python worker.py [--preload JSON] [--idle SECONDS]``) in the USER's
interpreter and loads ``harness.py`` from its own directory by path, so that interpreter needs
torch but not inplace-lsp. stdlib + torch only.

Protocol: one JSON object per line. The worker writes ``{"op": "hello", ...}`` once, then one
``{"op": "result", "id", "result", "output", "output_bytes", "exit", "killed"}`` per job; the
runner writes ``{"op": "run", "id", "spec", "output_limit"}``, ``{"op": "kill", "id"}`` and
``{"op": "exit"}``. The worker exits on ``exit``, at end of input, or after ``--idle`` seconds
without a job.

The parent never touches ``torch.cuda`` (a CUDA context does not survive ``fork``); each child
starts its own process group, so killing a job kills everything the job started, and its
output (stdout and stderr together) is kept only up to a limit, as a tail.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import importlib.util
import json
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

PROTOCOL = 1
DEFAULT_IDLE_S = 900.0
DEFAULT_OUTPUT_LIMIT = 64 * 1024
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_harness() -> ModuleType:
    """harness.py from this directory, under a private name (a user's ``harness`` module
    must stay importable)."""
    name = "_inplace_lsp_harness"
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, "harness.py"))
    if spec is None or spec.loader is None:
        raise ImportError("cannot load harness.py next to worker.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Lines:
    """Complete lines read from a file descriptor without blocking past a timeout."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.eof = False

    def poll(self, timeout: float | None) -> list[bytes]:
        if self.eof:
            return []
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            self.feed()
        return self.take()

    def feed(self) -> None:
        try:
            data = os.read(self.fd, 1 << 16)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return
            data = b""
        if not data:
            self.eof = True
        self.buffer += data

    def take(self) -> list[bytes]:
        *lines, self.buffer = self.buffer.split(b"\n")
        if self.eof and self.buffer:
            lines.append(self.buffer)
            self.buffer = b""
        return [line for line in lines if line.strip()]


class _Tail:
    """The last ``limit`` bytes of a stream, and how many bytes it carried in all."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1024, limit)
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.limit:
            del self.data[: -self.limit]

    def text(self) -> str:
        return bytes(self.data[-self.limit :]).decode("utf-8", "replace")


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name} (signal {number})"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    return f"ended with status {status}"


class Worker:
    """The worker's state: the protocol channel, the harness, the input reader."""

    def __init__(self, harness: ModuleType, channel: Any, idle_s: float) -> None:
        self.harness = harness
        self.channel = channel
        self.idle_s = idle_s
        self.input = _Lines(0)
        self.pending: list[dict[str, Any]] = []
        self.stopping = False

    def send(self, message: dict[str, Any]) -> None:
        self.channel.write(json.dumps(message) + "\n")
        self.channel.flush()

    def next_message(self) -> dict[str, Any] | None:
        """The next request; None on end of input, ``exit`` or idle timeout."""
        deadline = time.monotonic() + self.idle_s
        while not self.pending:
            if self.input.eof or self.stopping:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            for line in self.input.poll(remaining):
                self._queue(line)
        return self.pending.pop(0)

    def _queue(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if isinstance(message, dict):
            if message.get("op") == "exit":
                self.stopping = True
            else:
                self.pending.append(message)

    def serve(self) -> None:
        while True:
            message = self.next_message()
            if message is None:
                return
            if message.get("op") == "run":
                self.run_job(message)

    # ------------------------------------------------------------------ one job
    def run_job(self, message: dict[str, Any]) -> None:
        job_id = message.get("id")
        limit = int(message.get("output_limit") or DEFAULT_OUTPUT_LIMIT)
        out_r, out_w = os.pipe()
        res_r, res_w = os.pipe()
        # The child's lifeline: this end stays open while the worker lives (see harness.guard).
        life_r, life_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(life_w)
            self._child(message.get("spec") or {}, out_r, out_w, res_r, res_w, life_r)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        os.close(out_w)
        os.close(res_w)
        os.close(life_r)
        for fd in (out_r, res_r):
            os.set_blocking(fd, False)
        output = _Tail(limit)
        result = bytearray()
        open_fds = {out_r, res_r}
        killed: str | None = None
        status: int | None = None
        exited_at = 0.0
        while True:
            watch = [*open_fds]
            if not self.input.eof:
                watch.append(0)
            ready, _, _ = select.select(watch, [], [], 0.05) if watch else ([], [], [])
            for fd in ready:
                if fd == 0:
                    self.input.feed()
                    for line in self.input.take():
                        killed = self._control(line, job_id, pid) or killed
                    if self.input.eof and killed is None:
                        killed = "the runner went away"
                        _kill_group(pid)
                    continue
                chunk = _read(fd)
                if chunk is None:
                    continue
                if not chunk:
                    open_fds.discard(fd)
                    os.close(fd)
                elif fd == out_r:
                    output.feed(chunk)
                else:
                    result += chunk
            if status is None:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:
                    status, exited_at = code, time.monotonic()
            if status is not None and (not open_fds or time.monotonic() - exited_at > 0.2):
                break  # grandchildren may hold the output pipe open: do not wait for them
        for fd in open_fds:
            while True:
                chunk = _read(fd)
                if not chunk:
                    break
                (output.feed if fd == out_r else result.extend)(chunk)
            os.close(fd)
        _kill_group(pid)  # whatever the job left running, in its group and detached from it
        self.harness.kill_descendants()
        os.close(life_w)
        parsed: Any = None
        if result:
            try:
                parsed = json.loads(bytes(result))
            except ValueError:
                parsed = None
        self.send(
            {
                "op": "result",
                "id": job_id,
                "result": parsed,
                "output": output.text(),
                "output_bytes": output.total,
                "exit": _describe_exit(status) if status is not None else None,
                "killed": killed,
            }
        )

    def _control(self, line: bytes, job_id: object, pid: int) -> str | None:
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        op = message.get("op")
        if op == "kill" and message.get("id") == job_id:
            _kill_group(pid)
            return str(message.get("reason") or "killed")
        if op == "exit":
            self.stopping = True
            _kill_group(pid)
            return "the worker is exiting"
        if op == "run":
            self.pending.append(message)
        return None

    def _child(
        self, spec: dict[str, Any], out_r: int, out_w: int, res_r: int, res_w: int, life_r: int
    ) -> None:
        payload = b""
        try:
            os.setpgid(0, 0)
            self.harness.guard(life_r)
            os.close(out_r)
            os.close(res_r)
            with contextlib.suppress(OSError, ValueError):
                self.channel.close()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            os.close(out_w)
            for number in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
                signal.signal(number, signal.SIG_DFL)
            result = self.harness.run_spec(spec)
            payload = json.dumps(result).encode()
        except BaseException as exc:  # anything: the report must still be written
            payload = json.dumps(
                self.harness.error_result(
                    str(spec.get("name") or "?"),
                    f"internal error in the verify worker: {type(exc).__name__}: {exc}",
                )
            ).encode()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            view = memoryview(payload)
            with contextlib.suppress(OSError):
                while view:
                    written = os.write(res_w, view)
                    view = view[written:]
            self.harness.end_process(0)


def _read(fd: int) -> bytes | None:
    """A chunk, b"" at end of file, None when nothing is ready."""
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno == errno.EINTR:
            return None
        return b""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _channel() -> tuple[Any, Callable[[], None]]:
    """The protocol stream: the real stdout; fd 1 then points at stderr so that whatever the
    preloaded modules print cannot corrupt the protocol."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = os.fdopen(saved, "w", encoding="utf-8")
    return channel, channel.close


def _preload(names: list[str]) -> tuple[list[str], dict[str, str]]:
    loaded: list[str] = []
    failed: dict[str, str] = {}
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # a module may raise anything, even SystemExit
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            loaded.append(name)
    return loaded, failed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    preload: list[str] = []
    idle_s = DEFAULT_IDLE_S
    while args:
        flag = args.pop(0)
        if flag == "--preload" and args:
            preload = [str(name) for name in json.loads(args.pop(0))]
        elif flag == "--idle" and args:
            idle_s = float(args.pop(0))
    if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
        del sys.path[0]  # the user's imports must not find the files next to this one
    channel, close = _channel()
    hello: dict[str, Any] = {
        "op": "hello",
        "protocol": PROTOCOL,
        "pid": os.getpid(),
        "python": sys.executable,
        "fork": hasattr(os, "fork"),
    }
    # torch's warning that numpy is missing (optional to torch and to verify) is not news to
    # the user; every job forks from here, after this import.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    try:
        import torch
    except ImportError as exc:
        hello["ok"] = False
        if getattr(exc, "name", None) == "torch":
            hello["message"] = f"torch is not installed in {sys.executable}: pip install torch"
        else:
            hello["message"] = f"cannot import torch in {sys.executable}: {exc}"
        channel.write(json.dumps(hello) + "\n")
        close()
        return 0
    harness = _load_harness()
    # Processes a job detaches (a new session, a double fork) become the worker's children
    # when their parent dies, so the worker can kill them after the job.
    harness.become_subreaper()
    # What every job needs, imported once here; torch.cuda is left alone (no CUDA before fork).
    import torch.autograd.graph  # noqa: F401
    import torch.optim  # noqa: F401
    import torch.overrides  # noqa: F401

    # Building the first optimizer imports torch._dynamo (about a second): pay it once here.
    _preload(["torch._dynamo"])

    loaded, failed = _preload([n for n in preload if n != "torch"])
    hello.update(
        ok=True,
        torch=torch.__version__,
        preloaded=loaded,
        failed=failed,
        cuda_initialized=bool(torch.cuda.is_initialized()),
    )
    channel.write(json.dumps(hello) + "\n")
    channel.flush()
    if not hello["fork"]:
        close()
        return 0
    try:
        Worker(harness, channel, idle_s).serve()
    finally:
        harness.kill_descendants()
        with contextlib.suppress(OSError, ValueError):
            close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
