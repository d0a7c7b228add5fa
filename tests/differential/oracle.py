"""Label generated programs by running them under torch: outcome and guilty lines.

A program is ``error`` when torch raises one of its in-place autograd errors (``ERROR_KINDS``),
``ok`` when it runs to the end, ``other`` for any other exception, a timeout or a crashed
worker (generator bugs: excluded from scoring and kept near zero).

For an ``error`` program the worker runs it a second time under a tracer of its own, to find
the guilty lines: a ``saved_tensors_hooks`` pack hook records every tensor saved for backward,
its version and the program line that saved it; a ``TorchFunctionMode`` sees every torch call
and, after it, notes which saved tensors changed version and on which line. Installing pack
hooks turns off torch's own version check, so the unpack hook performs it and raises the same
error, naming the saved tensor. Errors that torch raises at the write itself (leaf, view of a
leaf, multi-output view, ...) are located at the line of the raising call. Inside a torch
module (``nn.ReLU(inplace=True)`` in an ``nn.Sequential``) the line that built the module
counts as well as the program line that called it.

The first run, without any hook, is the truth; the tracer only says where.

Many programs run in one worker process (each ``exec``'d in a fresh namespace after
``torch.manual_seed(0)``); a worker that dies or passes the per-program timeout is replaced
and that program is labelled ``other``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["ERROR_KINDS", "Label", "classify", "label_programs"]

# (kind, text in the exception message), most specific first; torch 2.13's wording.
ERROR_KINDS: tuple[tuple[str, str], ...] = (
    ("version", "modified by an inplace operation"),
    ("leaf_view", "a view of a leaf Variable that requires grad is being used in an in-place"),
    ("leaf", "a leaf Variable that requires grad is being used in an in-place operation"),
    ("multi_output_view", "is a view and is being modified inplace"),
    ("no_grad_view", "created in no_grad mode and is being modified inplace"),
    ("inference_tensor", "Inplace update to inference tensor outside InferenceMode"),
    ("out_with_grad", "functions with out=... arguments don't support automatic differentiation"),
)

DEFAULT_TIMEOUT_S = 20.0
START_TIMEOUT_S = 180.0  # importing torch in a fresh worker on a loaded machine
READY = "ready"


def classify(message: str) -> str | None:
    """The in-place error kind of an exception message, or None when it is none of them."""
    for kind, text in ERROR_KINDS:
        if text in message:
            return kind
    return None


@dataclass
class Label:
    """What torch did with one program."""

    outcome: str  # "error" | "ok" | "other"
    kind: str = ""  # an ERROR_KINDS kind, or the exception type for "other"
    message: str = ""
    write_lines: list[int] = field(default_factory=list)
    save_lines: list[int] = field(default_factory=list)
    located: bool = False  # the tracer reproduced the error and found its lines

    @property
    def guilty_lines(self) -> set[int]:
        return set(self.write_lines) | set(self.save_lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "kind": self.kind,
            "message": self.message,
            "write_lines": self.write_lines,
            "save_lines": self.save_lines,
            "located": self.located,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Label:
        return cls(
            outcome=data["outcome"],
            kind=data.get("kind", ""),
            message=data.get("message", ""),
            write_lines=list(data.get("write_lines", [])),
            save_lines=list(data.get("save_lines", [])),
            located=bool(data.get("located", False)),
        )


# --- the worker (runs in the subprocess; imports torch) -------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def _tb_lines(exc: BaseException, path: str) -> list[int]:
    tb = exc.__traceback__
    last: int | None = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            last = tb.tb_lineno
        tb = tb.tb_next
    return [last] if last is not None else []


def _run_plain(code: Any, path: str) -> BaseException | None:
    import torch

    torch.manual_seed(0)
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    try:
        exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001 - the program's failure is the result
        if isinstance(exc, KeyboardInterrupt):
            raise
        return exc
    finally:
        torch.set_grad_enabled(True)
    return None


def _run_traced(code: Any, path: str) -> tuple[list[int], list[int], bool]:
    """(write lines, save lines, reproduced) of every in-place error of a traced run.

    The run goes on past each error, as if that write had been fixed: a failed version check
    returns the tensor anyway, and a write that torch refused is redone without grad (or, for
    an inference tensor, inside inference mode). So a program with two bad writes (`w -= ...`
    then `b -= ...`) has both lines guilty, though torch stops at the first."""
    import torch
    from torch.overrides import TorchFunctionMode

    module_lines: dict[int, int] = {}
    records: list[list[Any]] = []  # [tensor, saved version, save lines, bump lines, last version]
    write_lines: set[int] = set()
    save_lines: set[int] = set()
    reported: set[int] = set()

    def user_lines() -> list[int]:
        frame: FrameType | None = sys._getframe(2)
        extra: list[int] = []
        while frame is not None:
            if frame.f_code.co_filename == path:
                return [frame.f_lineno] + extra
            if "torch" in frame.f_code.co_filename and "modules" in frame.f_code.co_filename:
                owner = frame.f_locals.get("self")
                if owner is not None and id(owner) in module_lines:
                    extra.append(module_lines[id(owner)])
            frame = frame.f_back
        return extra

    original_init = torch.nn.Module.__init__

    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == path:
                module_lines.setdefault(id(self), frame.f_lineno)
                break
            frame = frame.f_back

    def pack(tensor: Any) -> int:
        records.append([tensor, tensor._version, user_lines(), [], tensor._version])
        return len(records) - 1

    def unpack(index: int) -> Any:
        tensor, version, saved_at, bumps, _ = records[index]
        if tensor._version != version and index not in reported:
            reported.add(index)
            save_lines.update(saved_at)
            write_lines.update(line for lines in bumps for line in lines)
        return tensor

    class Writes(TorchFunctionMode):
        def __torch_function__(
            self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None
        ) -> Any:
            try:
                result = func(*args, **(kwargs or {}))
            except RuntimeError as exc:
                kind = classify(str(exc))
                if kind in (None, "version"):
                    raise
                write_lines.update(user_lines())
                redo = torch.inference_mode() if kind == "inference_tensor" else torch.no_grad()
                with redo:
                    result = func(*args, **(kwargs or {}))
            for record in records:
                version = record[0]._version
                if version != record[4]:
                    record[4] = version
                    record[3].append(user_lines())
            return result

    torch.nn.Module.__init__ = recording_init  # type: ignore[method-assign]
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack), Writes():
            _run_plain(code, path)
    finally:
        torch.nn.Module.__init__ = original_init  # type: ignore[method-assign]
        records.clear()
    located = bool(write_lines or save_lines)
    return sorted(write_lines), sorted(save_lines), located


def _label_one(path: str, text: str) -> Label:
    try:
        code = compile(text, path, "exec")
    except SyntaxError as syntax_error:
        return Label("other", "SyntaxError", _first_line(syntax_error))
    failure = _run_plain(code, path)
    if failure is None:
        return Label("ok")
    kind = classify(str(failure))
    if kind is None:
        return Label("other", type(failure).__name__, _first_line(failure))
    label = Label("error", kind, _first_line(failure))
    write, save, located = _run_traced(code, path)
    if not located and kind != "version":
        # Raised at the write: the innermost program line of the first run's traceback.
        write = _tb_lines(failure, path)
        located = bool(write)
    label.write_lines, label.save_lines, label.located = write, save, located
    return label


def worker_main() -> None:
    """Read one JSON request per line on stdin, answer one JSON label per line."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # programs that print must not corrupt the protocol
    os.dup2(devnull, 2)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the worker
    sys.stderr = sys.stdout
    import warnings

    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(1)
    proto.write(READY + "\n")  # torch is imported: program timeouts start counting now
    for raw in sys.stdin:
        request = json.loads(raw)
        try:
            label = _label_one(request["path"], request["text"])
        except BaseException as exc:  # noqa: BLE001 - never lose the worker to one program
            label = Label("other", "OracleError", _first_line(exc))
        proto.write(json.dumps(label.to_json()) + "\n")


# --- the parent: a pool of workers with timeouts ------------------------------------------


class _Worker:
    def __init__(self, python: str) -> None:
        self.python = python
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""
        self.exited = False  # the worker's stdout reached end of file

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
        return subprocess.Popen(
            [self.python, os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def _read_line(self, timeout_s: float) -> bytes | None:
        """One line from the worker, or None when it exits or the time runs out."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self.exited = True
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def run(self, path: str, text: str, timeout_s: float) -> Label:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
            self.buffer, self.exited = b"", False
            if self._read_line(START_TIMEOUT_S) != READY.encode():
                self.close()
                return Label("other", "WorkerDied", "the worker did not start")
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps({"path": path, "text": text}) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            self.close()
            return Label("other", "WorkerDied", "the worker died before the program ran")
        line = self._read_line(timeout_s)
        if line is None:
            died = self.exited
            self.close()
            if died:
                return Label("other", "WorkerDied", "the worker exited while running the program")
            return Label("other", "Timeout", f"no result in {timeout_s:.0f} s")
        return Label.from_json(json.loads(line.decode()))

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


def label_programs(
    items: Iterable[tuple[str, str]],
    jobs: int = 2,
    python: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[Label]:
    """Labels of (path, text) programs, in order, run on `jobs` worker processes."""
    todo = list(items)
    labels: list[Label | None] = [None] * len(todo)
    lock = threading.Lock()
    next_index = [0]

    def loop() -> None:
        worker = _Worker(python or sys.executable)
        try:
            while True:
                with lock:
                    i = next_index[0]
                    next_index[0] += 1
                if i >= len(todo):
                    return
                path, text = todo[i]
                labels[i] = worker.run(path, text, timeout_s)
        finally:
            worker.close()

    threads = [threading.Thread(target=loop) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [label if label is not None else Label("other", "Lost") for label in labels]


def write_programs(programs: Iterable[Any], directory: Path) -> list[tuple[str, str]]:
    """Write each program's text to `directory/<name>.py`; (path, text) pairs for the oracle."""
    directory.mkdir(parents=True, exist_ok=True)
    pairs = []
    for program in programs:
        path = directory / f"{program.name}.py"
        path.write_text(program.text, encoding="utf-8")
        pairs.append((str(path), program.text))
    return pairs


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    worker_main()
