"""Run one user callable under autograd tracing and report which lines broke autograd.

This module runs INSIDE the user's interpreter: it imports only the standard library at import
time and torch lazily, so it can also be executed as a script
(``python harness.py FILE FUNCNAME`` prints one JSON line).

The tracing itself (both ends of an in-place bug) is ``tracer.py``, loaded from beside this
file: the same tracer the runtime detector uses.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

__all__ = ["trace_call", "run_spec", "error_result", "main"]

# torch warns at import when numpy is missing; numpy is optional to torch and to verify, and
# the warning would read as a problem of the user's code.
_NUMPY_WARNING = "Failed to initialize NumPy"


def _load_tracer() -> ModuleType:
    """tracer.py from beside this file. Run as a script or loaded by path (worker.py), this
    file is not the package's: another inplace-lsp installed in the user's interpreter must not
    lend its tracer, and a user's ``tracer`` module must stay importable (a private name)."""
    if __package__ == "inplace_lsp.verify":
        from inplace_lsp.verify import tracer

        return tracer
    name = "_inplace_lsp_tracer"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tracer.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load tracer.py next to harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from inplace_lsp.verify import tracer as _t
else:
    _t = _load_tracer()


class _LinesRun:
    """Which lines of one file run while it is active (``with``): line coverage of the target.

    Cheap by design: on 3.12+ ``sys.monitoring`` calls back once per code location and each
    callback disables its location (a line is recorded once, other files cost one call per
    location); before 3.12 a ``sys.settrace`` tracer returns None for frames of other files, so
    only the target file's frames get line events, and it is removed as soon as every line of
    ``watch`` ran (a trace function slows every frame down: 3.11 checks it per instruction).
    Yields nothing (``ran`` stays None) when another tool already traces this process:
    coverage must not take a debugger's place.
    """

    def __init__(
        self,
        path: str,
        first: int,
        last: int,
        monitoring: bool | None = None,
        watch: Collection[int] = (),
    ) -> None:
        self.names = {path, _t.norm(path)}
        self.first = first
        self.last = last
        self.watch = frozenset(watch)
        self.ran: set[int] | None = None
        self._monitoring = hasattr(sys, "monitoring") if monitoring is None else monitoring
        self._tool: int | None = None
        self._previous: tuple[Any, Any] | None = None
        self._calls: Any = None  # the settrace function, while it is installed
        self._finished = False  # it removed itself: every watched line ran

    def lines(self) -> list[int] | None:
        """The lines of [first, last] that ran, or None when nothing was recorded."""
        if self.ran is None:
            return None
        return sorted(n for n in self.ran if self.first <= n <= self.last)

    def __enter__(self) -> _LinesRun:
        if self._monitoring:
            self._start_monitoring()
        else:
            self._start_settrace()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tool is not None:
            monitoring: Any = getattr(sys, "monitoring")  # noqa: B009 (3.12+; mypy reads 3.11)
            monitoring.set_events(self._tool, 0)
            monitoring.register_callback(self._tool, monitoring.events.LINE, None)
            monitoring.free_tool_id(self._tool)
            self._tool = None
        if self._previous is not None:
            import threading

            if sys.gettrace() is not self._calls and not self._finished:
                self.ran = None  # the user's code replaced the tracer: what ran is unknown
            sys.settrace(self._previous[0])
            threading.settrace(self._previous[1])
            self._previous = None

    def _start_monitoring(self) -> None:
        monitoring: Any = getattr(sys, "monitoring")  # noqa: B009 (3.12+; mypy reads 3.11)
        free = [t for t in range(6) if monitoring.get_tool(t) is None]
        if not free:
            return
        tool = monitoring.COVERAGE_ID if monitoring.COVERAGE_ID in free else free[-1]
        ran: set[int] = set()
        names = self.names
        disable = monitoring.DISABLE

        def line(code: Any, number: int) -> object:
            if code.co_filename in names:
                ran.add(number)
            return disable  # this location never calls back again

        monitoring.use_tool_id(tool, "inplace-lsp verify")
        monitoring.register_callback(tool, monitoring.events.LINE, line)
        monitoring.restart_events()  # locations disabled by an earlier run in this process
        monitoring.set_events(tool, monitoring.events.LINE)
        self._tool = tool
        self.ran = ran

    def _start_settrace(self) -> None:
        import threading

        if sys.gettrace() is not None:
            return
        ran: set[int] = set()
        names = self.names
        pending = set(self.watch)

        def local(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                number = frame.f_lineno
                ran.add(number)
                if number in pending:
                    pending.discard(number)
                    if not pending:  # every watched line ran: nothing more to learn
                        self._finished = True
                        sys.settrace(None)
                        threading.settrace(None)  # type: ignore[arg-type]
                        return None
            return local

        def calls(frame: FrameType, event: str, arg: object) -> Any:
            if frame.f_code.co_filename not in names:
                return None  # no line events in torch or anywhere else
            return local

        self._previous = (None, threading.gettrace() if hasattr(threading, "gettrace") else None)
        sys.settrace(calls)
        threading.settrace(calls)
        self._calls = calls
        self.ran = ran


# --------------------------------------------------------------------------- tracer


def _backward_on(value: object) -> None:
    """Reduce every grad-requiring tensor in ``value`` to one scalar and call backward."""
    total = None
    for tensor in _t.tensors(value):
        if not tensor.requires_grad:
            continue
        part = tensor.sum()
        if part.is_complex():
            part = part.real
        total = part if total is None else total + part
    if total is not None:
        total.backward()


def trace_call(
    fn: Callable[[], object],
    *,
    user_files: Collection[str] | None = None,
    anomaly: bool = True,
    coverage: tuple[str, int, int, Collection[int]] | None = None,
    phase: Callable[[], str] | None = None,
) -> dict[str, Any]:
    """Call ``fn()`` (and backward on its output if it did not), trace it, return the report.

    The report is JSON-able: ``status`` ("ok" | "inplace-error" | "leaf-error" |
    "retention-error" | "error"), ``mutation`` and ``saved_by`` (both ends of a failing
    in-place bug, or null; a retention error's ``mutation`` is the call that built on a freed
    graph), ``related``
    (call sites, and writes on saved _t.tensors that backward did not need), ``message``,
    ``exception`` and ``duration_s``; ``silent: true`` when the in-place error is a write
    through `.data` that torch did not raise for (backward used the new values).
    ``coverage`` (path, first line, last line, lines to watch): also ``lines_run``, the lines
    of that range of that file that ran (null when another tracer owns the process); it may
    stop recording once every watched line ran. ``phase()`` says where the code was when it
    called ``sys.exit`` or raised ``KeyboardInterrupt`` ("during forward").
    """
    import torch

    frames = _t.UserFrames(user_files)
    tracer = _t.Tracer(frames)
    _t.torch_keeps_backward_suffix()  # before the hooks, which turn torch's own check off
    error: BaseException | None = None
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if anomaly:
            stack.enter_context(torch.autograd.set_detect_anomaly(True, check_nan=False))
        stack.enter_context(_t.record_construction(frames))
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(tracer.pack, tracer.unpack))
        stack.enter_context(_t.own_frames_hidden())
        lines = None
        if coverage is not None:
            path, first, last, watch = coverage
            lines = _LinesRun(path, first, last, watch=watch)
        try:
            with _t.make_mode(tracer), lines or contextlib.nullcontext():
                result = fn()
                if not (tracer.backward_seen or tracer.unpacked):
                    _backward_on(result)
                del result
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the user's code: anything
            error = exc
    duration = time.perf_counter() - start
    _t.prune_construction_sites()
    report = _t.build_report(tracer, error, frames)
    if isinstance(error, (SystemExit, KeyboardInterrupt)):
        report["message"] = _stop_text(error, phase() if phase is not None else "")
    report["duration_s"] = round(duration, 6)
    if lines is not None:
        report["lines_run"] = lines.lines()
    return report


def _stop_text(error: SystemExit | KeyboardInterrupt, phase: str) -> str:
    """ "the code called sys.exit(0) during forward": what ended the user's code (its
    ``str()`` is just the exit code, or empty)."""
    if isinstance(error, SystemExit):
        code = "" if error.code is None else repr(error.code)
        text = f"the code called sys.exit({code})"
    else:
        detail = str(error).strip()
        text = "the code raised KeyboardInterrupt" + (f": {detail}" if detail else "")
    return f"{text} {phase}" if phase else text


def _phase_of(state: Mapping[str, Any]) -> str:
    return str(state.get("phase") or "")


def _stopped(report: Mapping[str, Any]) -> bool:
    """The user's code called sys.exit or raised KeyboardInterrupt."""
    return str(report.get("exception") or "").startswith(("SystemExit", "KeyboardInterrupt"))


def _import_file(path: str) -> ModuleType:
    name = "_inplace_lsp_target_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- verify specs
#
# A spec (built by inplace_lsp.verify.targets, completed by the runner) names a file, a
# target in it (an nn.Module subclass or a function), how to construct it and which inputs
# to try. ``run_spec`` runs it under ``trace_call`` and returns the verify result object.

_SEED = 0
_MAX_INPUT_ATTEMPTS = 8


class _SpecError(Exception):
    """The spec cannot run in this interpreter (no torch, no CUDA, bad target name)."""


class _ImportFailed(Exception):
    """Importing the user's file raised `cause`; `related`: where, in the user's code."""

    def __init__(self, message: str, cause: BaseException, related: list[dict[str, Any]]):
        super().__init__(message)
        self.cause = cause
        self.related = related


def _base_result(spec: Mapping[str, Any]) -> dict[str, Any]:
    return error_result(str(spec.get("name") or "?"))


def error_result(target: str, message: str = "") -> dict[str, Any]:
    """A result object with every key of the contract: an error, nothing run yet. The runner,
    the worker and the server start from it too, so all results have the same keys."""
    return {
        "status": "error",
        "target": target,
        "device": None,
        "mutation": None,
        "saved_by": None,
        "related": [],
        "message": message,
        "exception": None,
        "duration_s": 0.0,
        "not_run": [],
    }


def _python_name(spec: Mapping[str, Any]) -> str:
    return str(spec.get("python") or sys.executable)


def _pick_device(requested: str, spec: Mapping[str, Any]) -> str:
    import torch

    if requested == "cpu":
        return "cpu"
    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise _SpecError(
            f"CUDA was requested but torch.cuda.is_available() is False in {_python_name(spec)}"
            f" (torch {torch.__version__}); use --device auto or cpu"
        )
    if requested not in ("auto", "cuda") and not requested.startswith("cuda:"):
        raise _SpecError(f"unknown device {requested!r}: expected auto, cuda or cpu")
    if not available:
        return "cpu"
    if requested.startswith("cuda:"):
        torch.cuda.set_device(int(requested.split(":", 1)[1]))
    return f"cuda:{torch.cuda.current_device()}"


def _limit_memory(megabytes: object, device: str) -> None:
    """Cap the address space of this process (CPU runs only: CUDA reserves huge ranges)."""
    if not isinstance(megabytes, (int, float)) or megabytes <= 0 or device != "cpu":
        return
    try:
        import resource
    except ImportError:  # Windows
        return
    limit = int(megabytes) * 1024 * 1024
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        pass


def _module_name(path: str) -> tuple[str, str, list[str]]:
    """(module name, sys.path root, parent packages) for a file, honouring packages."""
    directory = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [stem]
    root = directory
    while os.path.isfile(os.path.join(root, "__init__.py")) and len(parts) < 16:
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    if all(part.isidentifier() for part in parts) and len(parts) > 1:
        return ".".join(parts), root, [".".join(parts[:i]) for i in range(1, len(parts))]
    taken = stem in sys.modules or stem in getattr(sys, "stdlib_module_names", ())
    if stem.isidentifier() and not taken:
        return stem, root, []
    return "_inplace_lsp_target_" + re.sub(r"\W", "_", stem), root, []


def _forget_user_modules(directories: Iterable[str]) -> None:
    """Drop modules loaded from the user's directories (a warm worker may have imported one
    of them before forking): the job must import the user's current code."""
    prefixes = tuple(_t.norm(d) + os.sep for d in directories if d)
    if not prefixes:
        return
    # An environment inside the project (.venv/lib/.../site-packages) is not the user's code.
    installed = {_t.norm(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str) or name == "torch" or name.startswith("torch."):
            continue
        path = _t.norm(filename)
        if not path.startswith(prefixes) or path.startswith(tuple(installed)):
            continue
        parts = path.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            continue
        del sys.modules[name]


def _load_user_module(path: str, source: str | None) -> ModuleType:
    """Import the user's file as a module (its directory, or its package root, on sys.path).

    ``source`` (an editor buffer that may differ from the disk) is compiled under the file's
    real path, so line numbers and tracebacks match the buffer.
    """
    import linecache

    name, root, parents = _module_name(path)
    directory = os.path.dirname(path)
    for entry in dict.fromkeys([directory, root]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    for parent in parents:
        importlib.import_module(parent)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        if source is None:
            spec.loader.exec_module(module)
        else:
            linecache.cache[path] = (len(source), None, source.splitlines(True), path)
            exec(compile(source, path, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _resolve(module: ModuleType, qualname: str) -> Any:
    value: Any = module
    for part in qualname.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise _SpecError(
                f"{qualname} is not defined in {getattr(module, '__file__', module.__name__)} "
                "after importing it (defined under `if __name__ == '__main__'`?)"
            ) from None
    return value


def _materialize(spec: Any, device: str) -> Any:
    """The value a value spec (spec.py) describes, on ``device``."""
    import torch

    if not isinstance(spec, Mapping):
        return spec
    if "tensor" in spec:
        kind, shape = spec["tensor"], [int(n) for n in spec["shape"]]
        if kind == "randint":
            return torch.randint(0, int(spec["high"]), shape, device=device)
        dtype = torch.bool if spec.get("dtype") == "bool" else None
        if kind == "zeros":
            return torch.zeros(shape, device=device, dtype=dtype)
        if kind == "ones":
            return torch.ones(shape, device=device, dtype=dtype)
        return torch.randn(shape, device=device)
    if "tuple" in spec:
        return tuple(_materialize(v, device) for v in spec["tuple"])
    if "list" in spec:
        return [_materialize(v, device) for v in spec["list"]]
    if "dict" in spec:
        return {k: _materialize(v, device) for k, v in spec["dict"].items()}
    return spec.get("value")


def _to_device(value: Any, device: str, depth: int = 0) -> Any:
    import torch

    if depth > 8 or device == "cpu":
        return value
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_to_device(v, device, depth + 1) for v in value)
    if isinstance(value, list):
        return [_to_device(v, device, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _to_device(v, device, depth + 1) for k, v in value.items()}
    return value


def _split_call_args(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A hook's value as call arguments: a tuple is positional arguments, a dict keyword
    arguments, anything else (a tensor, a list) the one argument."""
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return (), dict(value)
    return (value,), {}


def _call_hook(hook: Mapping[str, Any], owner: Any, module: ModuleType, instance: Any) -> Any:
    name = str(hook["name"])
    if hook.get("scope") == "module":
        return getattr(module, name)()
    raw = inspect.getattr_static(owner, name)
    if isinstance(raw, (staticmethod, classmethod)):
        return getattr(owner, name)()
    try:
        wants_self = bool(inspect.signature(raw).parameters)
    except (TypeError, ValueError):
        wants_self = False
    if not wants_self:
        return raw()
    if instance is None:
        raise TypeError(
            f"{owner.__name__}.{name}() needs an instance: make it a @staticmethod or "
            "@classmethod (it runs before the module is constructed)"
        )
    return getattr(instance, name)()


def _reduce(output: Any) -> Any:
    """Sum of every floating (or complex) tensor in the output that requires grad."""
    total = None
    for tensor in _t.tensors(output):
        if not tensor.requires_grad or not (tensor.is_floating_point() or tensor.is_complex()):
            continue
        part = tensor.sum()
        if part.is_complex():
            part = part.real
        part = part.float()
        total = part if total is None else total + part
    return total


class _NothingToBackprop(Exception):
    pass


def _describe_inputs(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    import torch

    def one(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).replace("torch.", "")
            return f"{dtype}{tuple(value.shape)}"
        if isinstance(value, (tuple, list)):
            inner = ", ".join(one(v) for v in value)
            return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {one(v)}" for k, v in value.items()) + "}"
        return repr(value)[:40]

    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _run_module_target(
    cls: Any,
    module: ModuleType,
    spec: Mapping[str, Any],
    device: str,
    user_files: Collection[str] | None,
    coverage: tuple[str, int, int, Collection[int]] | None = None,
) -> dict[str, Any]:
    import torch

    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise _SpecError(f"{spec.get('name')} is not an nn.Module subclass")
    construct: Mapping[str, Any] = spec.get("construct") or {}
    inputs: Mapping[str, Any] = spec.get("inputs") or {}
    input_hook = inputs.get("hook")
    candidates: list[Any] = list(inputs.get("candidates") or [])
    if input_hook or not candidates:
        candidates = [None]
    candidates = candidates[:_MAX_INPUT_ATTEMPTS]
    train_step = bool(spec.get("train_step"))
    anomaly = bool(spec.get("anomaly", True))
    first: dict[str, Any] | None = None
    report: dict[str, Any] = {}
    for attempt, candidate in enumerate(candidates):
        state: dict[str, Any] = {
            "constructed": False,
            "forward": False,
            "inputs": "",
            "phase": f"while constructing {cls.__name__}",
        }

        def run(candidate: Any = candidate, state: dict[str, Any] = state) -> None:
            torch.manual_seed(_SEED)
            hook = construct.get("hook")
            if hook:
                args, kwargs = _split_call_args(_call_hook(hook, cls, module, None))
            else:
                args = tuple(_materialize(v, device) for v in construct.get("args") or ())
                kwargs = {
                    k: _materialize(v, device) for k, v in (construct.get("kwargs") or {}).items()
                }
            model = cls(*args, **kwargs)
            model.to(device)
            model.train()
            state["constructed"] = True
            state["phase"] = "while making the inputs"
            if input_hook:
                value = _call_hook(input_hook, cls, module, model)
                call_args, call_kwargs = _split_call_args(_to_device(value, device))
            elif candidate is None:
                call_args, call_kwargs = (), {}
            else:
                call_args = tuple(_materialize(v, device) for v in candidate.get("args") or ())
                call_kwargs = {
                    k: _materialize(v, device) for k, v in (candidate.get("kwargs") or {}).items()
                }
            params = [p for p in model.parameters() if p.requires_grad]
            if not params:  # nothing to train: let the gradient flow to the inputs instead
                for value in _t.tensors((call_args, call_kwargs)):
                    if value.is_floating_point() and value.is_leaf:
                        value.requires_grad_(True)
            state["inputs"] = _describe_inputs(call_args, call_kwargs)
            optimizer = torch.optim.SGD(params, lr=1e-3) if train_step and params else None
            for step in range(2 if optimizer is not None else 1):
                state["phase"] = "during forward"
                output = model(*call_args, **call_kwargs)
                state["forward"] = True
                state["phase"] = "during backward"
                loss = _reduce(output)
                del output
                if loss is None:
                    raise _NothingToBackprop(
                        f"the output of {cls.__name__}.forward has no floating tensor that "
                        "requires grad: nothing to backpropagate"
                    )
                loss.backward()
                del loss
                if optimizer is not None and step == 0:
                    state["stepped"] = True
                    state["phase"] = "during optimizer.step()"
                    optimizer.step()
                    optimizer.zero_grad()

        report = trace_call(
            run,
            user_files=user_files,
            anomaly=anomaly,
            coverage=coverage,
            phase=functools.partial(_phase_of, state),
        )
        report["inputs"] = state["inputs"]
        report["construct"] = construct.get("source") or "defaults"
        retry = (
            report["status"] == "error"
            and state["constructed"]
            and not state["forward"]
            and not _stopped(report)  # sys.exit / KeyboardInterrupt: not a shape problem
            and attempt + 1 < len(candidates)
        )
        if not retry:
            break
        if first is None:
            first = report
        print(
            f"inplace-lsp verify: forward failed with inputs {state['inputs']}: "
            f"{report['message']}; trying the next input shapes",
            file=sys.stderr,
        )
    if first is not None and report["status"] == "error" and not state["forward"]:
        report = first
        report["message"] += (
            f" (also tried {len(candidates) - 1} other input shapes; add example_inputs() "
            "to the class to choose them)"
        )
    if (
        train_step
        and report["status"] == "inplace-error"
        and report.get("mutation") is None
        and state.get("stepped")
    ):
        saved = report.get("saved_by") or {}
        where = f" at line {saved.get('line')}" if saved else ""
        report["message"] = (
            f"the training step's optimizer.step() overwrote parameters that "
            f"{saved.get('op', 'an op')}{where} saved in the FIRST step's graph, which the "
            "second backward still used: the module keeps a graph across calls (detach what "
            "it caches between steps)"
        )
    report["train_step"] = train_step
    return report


def _run_function_target(
    fn: Any,
    module: ModuleType,
    spec: Mapping[str, Any],
    user_files: Collection[str] | None,
    coverage: tuple[str, int, int, Collection[int]] | None = None,
) -> dict[str, Any]:
    import torch

    if not callable(fn):
        raise _SpecError(f"{spec.get('name')} is not callable")
    construct: Mapping[str, Any] = spec.get("construct") or {}
    state = {"inputs": ""}

    def run() -> Any:
        torch.manual_seed(_SEED)
        hook = construct.get("hook")
        if hook:
            args, kwargs = _split_call_args(_call_hook(hook, None, module, None))
        else:
            args = tuple(_materialize(v, "cpu") for v in construct.get("args") or ())
            kwargs = {k: _materialize(v, "cpu") for k, v in (construct.get("kwargs") or {}).items()}
        state["inputs"] = _describe_inputs(args, kwargs)
        return fn(*args, **kwargs)

    anomaly = bool(spec.get("anomaly", True))
    name = getattr(fn, "__name__", None) or str(spec.get("name"))
    report = trace_call(
        run, user_files=user_files, anomaly=anomaly, coverage=coverage, phase=lambda: f"in {name}"
    )
    report["inputs"] = state["inputs"]
    report["construct"] = construct.get("source") or "no arguments"
    return report


def run_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Run one verify spec and return the result object (never raises for user errors).

    Keys: ``status`` ("ok" | "inplace-error" | "leaf-error" | "retention-error" | "error"),
    ``target``,
    ``device`` ("cpu", "cuda:0" or None when it never got that far), ``mutation``,
    ``saved_by``, ``related``, ``message``, ``exception``, ``duration_s``, and for runs that
    started: ``inputs`` (what forward got) and ``construct`` (where constructor arguments
    came from). ``fallback`` (``device``, ``exception``): "auto" picked CUDA, the run failed
    there without an in-place error, and the result is that of a second run on the CPU.
    ``silent``: true on an "inplace-error" that torch did not raise (a write through `.data`
    that backward then read). With ``watch_lines`` in the spec: ``lines_run`` (see
    ``trace_call``), which the runner turns into ``not_run``.
    """
    result = _base_result(spec)
    start = time.perf_counter()
    warnings.filterwarnings("ignore", message=_NUMPY_WARNING, category=UserWarning)

    def failed(message: str, exc: BaseException | None = None) -> dict[str, Any]:
        result["message"] = message
        if exc is not None:
            result["exception"] = f"{type(exc).__name__}: {exc}"
        result["duration_s"] = round(time.perf_counter() - start, 6)
        return result

    try:
        import torch  # noqa: F401
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch":
            return failed(f"torch is not installed in {_python_name(spec)}: pip install torch")
        return failed(f"cannot import torch in {_python_name(spec)}: {exc}", exc)
    try:
        device = _pick_device(str(spec.get("device") or "auto"), spec)
    except (_SpecError, RuntimeError, ValueError) as exc:
        return failed(str(exc))
    result["device"] = device
    _limit_memory(spec.get("memory_mb"), device)
    path = os.path.abspath(str(spec["path"]))
    if spec.get("cwd"):
        with contextlib.suppress(OSError):
            os.chdir(str(spec["cwd"]))
    sys.argv = [path]  # as if the user ran the file (argparse at import time sees no flags)
    try:
        report = _load_and_run(path, spec, device)
        if (
            device != "cpu"
            and str(spec.get("device") or "auto") == "auto"
            and report.get("status") == "error"
        ):
            # "auto" picked CUDA and the code failed there without an in-place error: code that
            # builds its own _t.tensors often mixes devices (module-level constants, CPU
            # generators). Run it again on the CPU, which is what the code was written for, and
            # say what happened on the GPU.
            first = report
            device = result["device"] = "cpu"
            report = _load_and_run(path, spec, device)
            report["fallback"] = {"device": first["device"], "exception": first.get("exception")}
    except _SpecError as exc:
        return failed(str(exc))
    except _ImportFailed as failure:
        if failure.related:
            result["related"] = failure.related
        return failed(str(failure), failure.cause)
    if report.get("status") == "error" and report.get("exception"):
        print(f"inplace-lsp verify: {report['exception']}", file=sys.stderr)
    return {**result, **report, "target": result["target"], "device": device}


def _load_and_run(path: str, spec: Mapping[str, Any], device: str) -> dict[str, Any]:
    """Import the user's file afresh and run its target on ``device``: the target's report.
    Raises _ImportFailed when the import raises."""
    import torch

    project = str(spec.get("project") or "")
    _forget_user_modules([os.path.dirname(path), str(spec.get("cwd") or ""), project])
    if project and project not in sys.path:  # its modules import, wherever the run is
        sys.path.append(project)
    user_files = spec.get("user_files")
    frames = _t.UserFrames(user_files)
    try:
        with _t.record_construction(frames):
            module = _load_user_module(path, spec.get("source"))
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the user's code raises anything
        _t.print_exception(exc)
        raised = _t.site_of(_t.traceback_frames(exc.__traceback__), frames)
        related = [{**raised.as_json(), "message": "raised here"}] if raised is not None else []
        raise _ImportFailed(
            f"cannot import {path}: {type(exc).__name__}: {exc}", exc, related
        ) from None
    target = _resolve(module, str(spec.get("name")))
    coverage = None
    watch = [int(n) for n in spec.get("watch_lines") or ()]
    if watch and isinstance(spec.get("end_line"), int):
        coverage = (path, int(spec.get("line") or 1), int(spec["end_line"]), watch)
    with contextlib.ExitStack() as stack:
        if device != "cpu":
            stack.enter_context(torch.device(device))
        if spec.get("kind") == "function":
            report = _run_function_target(target, module, spec, user_files, coverage)
        else:
            report = _run_module_target(target, module, spec, device, user_files, coverage)
    report["device"] = device
    return report


# --------------------------------------------------------------------------- process guard
# No process the user's code starts may outlive the verify request: not when the job ends,
# not when verify is killed (even by SIGKILL, which nothing can catch in the killed process),
# and not when the code detaches a process (a new session, a double fork) out of the process
# group that the runner kills. On Linux the job process becomes a "child subreaper", so every
# orphaned descendant is re-parented to it rather than to init and stays findable, and a
# thread watches a pipe from the parent (the runner or the warm worker): its end means the
# parent is gone, and the job kills its descendants and itself. Elsewhere these are no-ops and
# the process group is what gets killed.

_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0)) == 0
    except (OSError, AttributeError, TypeError, ValueError):
        return False


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (Linux; False elsewhere)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def descendants(root: int | None = None) -> list[int]:
    """The live (not zombie) descendants of ``root`` (default: this process), from /proc;
    [] where there is no /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 2 or fields[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    pending = list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def kill_descendants(reap: bool = True) -> int:
    """SIGKILL every descendant of this process until none is left (a process may fork while
    it is being killed); ``reap``: collect the exit status of this process's dead children
    too. The number of processes killed."""
    import signal

    killed = 0
    for _ in range(50):
        found = descendants()
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)
    while reap and hasattr(os, "WNOHANG"):  # no such call on Windows
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except (ChildProcessError, OSError):
            break
        if pid == 0:
            break
    return killed


def watch_lifeline(fd: int) -> None:
    """Read ``fd`` in a daemon thread; at its end (the parent closed it, or died), kill this
    process's descendants and exit at once, whatever the user's code is doing."""
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 4096):
                pass
        # The user's code may be spinning in the main thread: each /proc read below gives the
        # GIL up, and taking it back waited a switch interval (5 ms) every time, so the walk
        # could outlast the runner's grace and leave detached processes alive.
        with contextlib.suppress(ValueError, AttributeError):
            sys.setswitchinterval(1e-6)
        kill_descendants()
        os._exit(_LIFELINE_EXIT)

    threading.Thread(target=watch, name="inplace-lsp-lifeline", daemon=True).start()


# The exit code of a job whose parent went away (the parent is not there to read it).
_LIFELINE_EXIT = 70


def guard(lifeline: int | None) -> None:
    """Everything above for the process about to run the user's code."""
    become_subreaper()
    if lifeline is not None:
        watch_lifeline(lifeline)


def end_process(code: int) -> None:
    """Exit now with ``code``, after killing what the user's code left running and flushing
    the standard streams: never wait for threads the user's code started (a non-daemon thread
    would keep the process alive after its report was written)."""
    kill_descendants()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


# --------------------------------------------------------------------------- script


def _report_channel() -> tuple[Any, Callable[[], None]]:
    """A private stream for the report; fd 1 then points at stderr, so anything the user's
    code (or a C extension) prints cannot corrupt the report line."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        return sys.stdout, lambda: None
    channel = os.fdopen(os.dup(saved), "w", encoding="utf-8")
    original = sys.stdout
    sys.stdout = sys.stderr

    def restore() -> None:
        channel.close()
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout = original

    return channel, restore


def _main_spec(args: list[str]) -> int:
    """``harness.py --spec JSON|- [--device D] [--train-step] [--watch-stdin]``.

    ``--watch-stdin`` (with ``-``): the spec is the first line of stdin, which then stays
    open; its end means the runner is gone, and the job kills what it started and exits."""
    if not args:
        print(
            "usage: harness.py --spec JSON|- [--device auto|cuda|cpu] [--train-step]"
            " [--watch-stdin]",
            file=sys.stderr,
        )
        return 2
    lifeline: int | None = None
    if args[0] == "-" and "--watch-stdin" in args[1:]:
        text = sys.stdin.buffer.readline().decode("utf-8")
        lifeline = _take_stdin()
    else:
        text = sys.stdin.read() if args[0] == "-" else args[0]
    guard(lifeline)
    try:
        spec = json.loads(text)
    except ValueError as exc:
        print(f"harness.py: the spec is not JSON: {exc}", file=sys.stderr)
        return 2
    rest = args[1:]
    if "--train-step" in rest:
        spec["train_step"] = True
    if "--device" in rest and rest.index("--device") + 1 < len(rest):
        spec["device"] = rest[rest.index("--device") + 1]
    # User imports resolve next to the user's file, not next to this harness.
    if sys.path and _t.norm(sys.path[0] or ".") == _t.norm(os.path.dirname(__file__)):
        del sys.path[0]
    channel, restore = _report_channel()
    try:
        try:
            report = run_spec(spec)
        except BaseException as exc:  # a bug here must still produce a report
            import traceback

            traceback.print_exc(file=sys.stderr)
            report = _base_result(spec)
            report["message"] = f"internal error in the verify harness: {type(exc).__name__}: {exc}"
        channel.write(json.dumps(report) + "\n")
        channel.flush()
    finally:
        restore()
    return 0


def _take_stdin() -> int | None:
    """A private duplicate of stdin (not inherited by the user's subprocesses); stdin itself
    then reads from the null device, so the user's code cannot consume the lifeline."""
    try:
        private = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        return None
    return private


def main(argv: list[str] | None = None) -> int:
    """``harness.py FILE FUNCNAME``: trace ``FILE.FUNCNAME()`` and print one JSON line;
    ``harness.py --spec JSON|-``: run a verify spec (see ``run_spec``), print its result line.

    ``argv`` excludes the program name (default: ``sys.argv[1:]``). Anything the user's code
    prints goes to stderr, so stdout carries only the report.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    warnings.filterwarnings("ignore", message=_NUMPY_WARNING, category=UserWarning)
    if args[:1] == ["--spec"]:
        return _main_spec(args[1:])
    if len(args) != 2:
        print("usage: harness.py FILE FUNCNAME", file=sys.stderr)
        return 2
    path, funcname = os.path.abspath(args[0]), args[1]
    out = sys.stdout
    report: dict[str, Any]
    with contextlib.redirect_stdout(sys.stderr):
        # User imports resolve next to the user's file, not next to this harness.
        if sys.path and _t.norm(sys.path[0] or ".") == _t.norm(os.path.dirname(__file__)):
            sys.path[0] = os.path.dirname(path)
        else:
            sys.path.insert(0, os.path.dirname(path))
        start = time.perf_counter()
        try:
            with _t.record_construction(_t.UserFrames(None)):
                module = _import_file(path)
            fn = getattr(module, funcname)
        except (Exception, SystemExit) as exc:  # the user's code may raise anything
            report = {
                "status": "error",
                "mutation": None,
                "saved_by": None,
                "related": [],
                "message": f"cannot load {funcname} from {path}: {type(exc).__name__}: {exc}",
                "exception": f"{type(exc).__name__}: {exc}",
                "duration_s": round(time.perf_counter() - start, 6),
            }
        else:
            report = trace_call(fn)
    out.write(json.dumps(report) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    end_process(main())
