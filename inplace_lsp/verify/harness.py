"""Run one user callable under autograd tracing and report which lines broke autograd.

This module runs INSIDE the user's interpreter: it imports only the standard library at import
time and torch lazily, so it can also be executed as a script
(``python harness.py FILE FUNCNAME`` prints one JSON line).

How the two ends of an in-place bug are found:

* ``torch.autograd.graph.saved_tensors_hooks`` sees every tensor an op saves for backward. The
  pack hook keeps a detached alias (it shares the version counter, so a write through any view
  or ``.detach()`` alias is visible), the version at save time and the innermost user line.
* Installing saved-tensor hooks switches OFF autograd's own version check (torch only checks
  ``saved_version`` when no hooks are set), so the unpack hook performs the same check and
  raises the same ``RuntimeError`` text. That also tells us exactly which saved tensor failed.
* A ``torch.overrides.TorchFunctionMode`` sees every torch call; after calls that can write in
  place (``*_`` methods, ``__setitem__``, ``out=``, ``inplace=True``) it looks for saved tensors
  whose version moved and records the writing line (innermost user frame). Writes inside an
  ``inplace=True`` module are reported at the line that constructed the module (found by
  wrapping ``torch.nn.Module.__init__`` while tracing), with the call site as related info.
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
import sysconfig
import time
import warnings
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import FrameType, ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["trace_call", "run_spec", "error_result", "main"]

_HARNESS_FILE = os.path.normcase(os.path.abspath(__file__))
# Frames of these files are never user code: this harness and the warm worker that runs it.
_INTERNAL_FILES = frozenset(
    {_HARNESS_FILE, os.path.normcase(os.path.join(os.path.dirname(_HARNESS_FILE), "worker.py"))}
)

# torch warns at import when numpy is missing; numpy is optional to torch and to verify, and
# the warning would read as a problem of the user's code.
_NUMPY_WARNING = "Failed to initialize NumPy"

_INPLACE_MSG = "modified by an inplace operation"
_LEAF_MSG = "a leaf Variable that requires grad"

# Dunder methods that write into ``self``. Every other ``__x__`` name ends with "_" too but is
# out of place (``__add__``, ``__getitem__``), so dunders are matched against this set only.
_INPLACE_DUNDERS = frozenset(
    {
        "__setitem__",
        "__delitem__",
        "__iadd__",
        "__isub__",
        "__imul__",
        "__imatmul__",
        "__itruediv__",
        "__ifloordiv__",
        "__imod__",
        "__ipow__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
    }
)
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")
# Backward nodes of view/reshape ops: they save no tensors, so the op that saved something
# during a call sits below them (``F.linear`` on 3-D input ends in ViewBackward0 over addmm).
_VIEW_NODE = re.compile(
    r"(View|UnsafeView|Reshape\w*|T|Transpose|Permute|Expand|Squeeze\w*|Unsqueeze\w*"
    r"|AsStrided|Alias|Slice|Select|Narrow|Split\w*|Unbind|Flatten|Unflatten)Backward\d*$"
)


@dataclass(frozen=True)
class _Site:
    path: str
    line: int

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line}

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class _Bump:
    """The first in-place write seen on one saved tensor."""

    saved_site: _Site | None
    op: str
    mutation: _Site | None  # where the fix goes: the write, or the inplace module's constructor
    call_site: _Site | None  # set when the write happened inside an inplace=True module
    module: str | None  # class name of that module
    silent: str | None = None  # a fused kernel that wrote WITHOUT bumping the version


class _Saved:
    """One tensor saved for backward (the object the graph holds instead of the tensor)."""

    __slots__ = (
        "tensor",
        "version",
        "site",
        "op",
        "producer",
        "output_nr",
        "is_leaf",
        "original",
        "node",
        "bump",
        "storage",
        "used",
        "__weakref__",
    )

    def __init__(
        self,
        tensor: torch.Tensor,
        version: int,
        site: _Site | None,
        producer: str | None,
        output_nr: int,
        is_leaf: bool,
        original: torch.Tensor | weakref.ref[torch.Tensor] | None,
        node: object,
    ) -> None:
        self.tensor = tensor
        self.version = version
        self.site = site
        self.op: str | None = None
        self.producer = producer
        self.output_nr = output_nr
        self.is_leaf = is_leaf
        # The saved tensor itself, for the error text: like torch, name its CURRENT grad_fn
        # when an op saved one of its inputs (an in-place write changes it). Held strongly,
        # as torch does, except for outputs (a reference cycle through the node) and saves
        # outside any seen torch call (weakly: we cannot tell an output there).
        self.original = original
        self.node = node  # grad_fn at save time, held only until its torch call returns
        self.bump: _Bump | None = None
        # Where its memory lives: a write into that memory that leaves the version alone went
        # through an alias autograd does not track (`.data`).
        self.storage = _storage_of(tensor)
        self.used = False  # backward unpacked it after a silent write


# --------------------------------------------------------------------------- user frames


class _UserFrames:
    """Decides which source files are user code and finds the innermost user frame."""

    def __init__(self, user_files: Collection[str] | None) -> None:
        import torch

        self._cache: dict[str, bool] = {}
        self._wanted: frozenset[str] | None = None
        if user_files is not None:
            self._wanted = frozenset(_norm(p) for p in user_files)
        self._torch_dir = _norm(os.path.dirname(torch.__file__)) + os.sep
        self._stdlib = _stdlib_dirs()

    def is_user(self, filename: str) -> bool:
        known = self._cache.get(filename)
        if known is None:
            known = self._classify(filename)
            self._cache[filename] = known
        return known

    def _classify(self, filename: str) -> bool:
        if filename.startswith("<frozen") or filename.startswith("<built-in"):
            return False
        path = _norm(filename)
        if path in _INTERNAL_FILES:
            return False
        if self._wanted is not None:
            return path in self._wanted
        if path.startswith(self._torch_dir):
            return False
        if path.startswith(self._stdlib):
            parts = path.split(os.sep)
            return "site-packages" in parts or "dist-packages" in parts
        return True

    def innermost(self, frame: FrameType | None) -> FrameType | None:
        while frame is not None and not self.is_user(frame.f_code.co_filename):
            frame = frame.f_back
        return frame

    def site(self, frame: FrameType | None) -> _Site | None:
        user = self.innermost(frame)
        if user is None:
            return None
        return _Site(_norm(user.f_code.co_filename), user.f_lineno)


def _norm(path: str) -> str:
    if os.path.isabs(path):
        return _norm_absolute(path)
    return os.path.normcase(os.path.abspath(path))


@functools.lru_cache(maxsize=4096)
def _norm_absolute(path: str) -> str:
    # Called for every saved tensor's frame: abspath costs a getcwd() and a normpath.
    return os.path.normcase(os.path.normpath(path))


@functools.cache
def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {_norm(paths[key]) + os.sep for key in ("stdlib", "platstdlib") if paths.get(key)}
    return tuple(sorted(found))


# --------------------------------------------------------------------------- module sites

# id(module) -> (weak reference to the module, construction site). Filled while
# ``_record_construction`` is active; looked up when a write happens inside a module.
_CONSTRUCTED: dict[int, tuple[weakref.ref[Any], _Site]] = {}


def _construction_site(module: object) -> _Site | None:
    entry = _CONSTRUCTED.get(id(module))
    if entry is None or entry[0]() is not module:
        return None
    return entry[1]


def _prune_construction_sites() -> None:
    for key in [k for k, (ref, _) in _CONSTRUCTED.items() if ref() is None]:
        del _CONSTRUCTED[key]


@contextlib.contextmanager
def _record_construction(frames: _UserFrames) -> Iterator[None]:
    """Wrap ``torch.nn.Module.__init__`` to remember where each module was constructed."""
    import torch

    original = torch.nn.Module.__init__

    def __init__(self: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        frame: FrameType | None = sys._getframe(1)
        # Skip the module's own (and its base classes') __init__ frames: the site is the
        # line that called the class, not ``super().__init__()``.
        while frame is not None:
            if frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is self:
                frame = frame.f_back
                continue
            if frames.is_user(frame.f_code.co_filename):
                break
            frame = frame.f_back
        if frame is None:
            return
        site = _Site(_norm(frame.f_code.co_filename), frame.f_lineno)
        try:
            _CONSTRUCTED[id(self)] = (weakref.ref(self), site)
        except TypeError:
            pass

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    torch.nn.Module.__init__ = __init__  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.__init__ = original  # type: ignore[method-assign]


# --------------------------------------------------------------------------- line coverage


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
        self.names = {path, _norm(path)}
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


def _func_name(func: Callable[..., object]) -> str:
    name = getattr(func, "__name__", None)
    return name if isinstance(name, str) else type(func).__name__


_INPLACE_POSITION: dict[object, int | None] = {}


def _inplace_position(func: Callable[..., object]) -> int | None:
    """Index of a positional ``inplace`` parameter (``F.dropout(x, p, training, inplace)``)."""
    try:
        return _INPLACE_POSITION[func]
    except KeyError:
        pass
    except TypeError:
        return None
    position: int | None = None
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = []
    for index, param in enumerate(params):
        if param.name == "inplace" and param.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            position = index
            break
    _INPLACE_POSITION[func] = position
    return position


def _may_write(
    func: Callable[..., object],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    name: str | None = None,
) -> bool:
    """Cheap test: can this torch call write into an existing tensor?"""
    if name is None:
        name = _func_name(func)
    if name.startswith("__") and name.endswith("__"):
        if name in _INPLACE_DUNDERS:
            return True
    elif name.endswith("_"):
        return True
    if kwargs:
        if kwargs.get("out") is not None or kwargs.get("inplace"):
            return True
    position = _inplace_position(func)
    return position is not None and len(args) > position and bool(args[position])


def _call_nodes(result: object) -> list[Any]:
    """grad_fns of a call's outputs, then (through view nodes only) the nodes below them."""
    nodes: list[Any] = []
    todo = [t.grad_fn for t in _tensors(result) if t.grad_fn is not None]
    while todo and len(nodes) < 32:
        node = todo.pop(0)
        if any(node is seen for seen in nodes):
            continue
        nodes.append(node)
        if _VIEW_NODE.match(node.name()):
            todo.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return nodes


def _autograd_function_name(frame: FrameType | None) -> str | None:
    """Name of the custom ``autograd.Function`` whose ``apply`` is saving tensors, if any."""
    import torch

    while frame is not None:
        if frame.f_code.co_name == "apply":
            cls = frame.f_locals.get("cls")
            if isinstance(cls, type) and issubclass(cls, torch.autograd.Function):
                return f"{cls.__name__}Backward"
        frame = frame.f_back
    return None


class _Tracer:
    """State of one ``trace_call``: saved tensors, bumps, the failing saved tensor."""

    def __init__(self, frames: _UserFrames) -> None:
        import torch

        self.frames = frames
        self.live: list[weakref.ref[_Saved]] = []
        self.bumps: list[_Bump] = []
        self.failed: _Saved | None = None
        self.pending: list[_Saved] | None = None  # saved during the current torch call
        self.backward_seen = False
        self.unpacked = False
        self.silent: list[_Saved] = []  # saved tensors written through `.data`
        # The `.data` aliases handed out (id -> weak reference): writes through them, or a
        # view of one, leave the saved tensor's version alone.
        self.aliases: dict[int, weakref.ref[torch.Tensor]] = {}
        self.data_property = torch.Tensor.data

    # saved_tensors_hooks ------------------------------------------------------------
    def pack(self, tensor: torch.Tensor) -> _Saved:
        import torch

        with torch._C.DisableTorchFunction():
            alias = tensor.detach()
            grad_fn = tensor.grad_fn
            record = _Saved(
                alias,
                tensor._version,
                self.frames.site(sys._getframe(1)),
                None if grad_fn is None else grad_fn.name(),
                tensor.output_nr,
                tensor.is_leaf,
                None if tensor.is_leaf else tensor,
                grad_fn,
            )
        if self.pending is not None:
            self.pending.append(record)
        else:
            record.node = None
            if record.original is not None:
                record.original = weakref.ref(tensor)
            record.op = _autograd_function_name(sys._getframe(1)) or record.producer
        self.live.append(weakref.ref(record))
        return record

    def unpack(self, record: _Saved) -> torch.Tensor:
        import torch

        self.unpacked = True
        if record.bump is not None and record.bump.silent == _DATA_WRITE:
            record.used = True
        with torch._C.DisableTorchFunction():
            current = record.tensor._version
            if current != record.version:
                if self.failed is None:
                    self.failed = record
                raise RuntimeError(_version_error(record, current))
        return record.tensor

    # TorchFunctionMode ---------------------------------------------------------------
    def call(
        self,
        func: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> object:
        """Run one torch call and record what it saved and wrote (the mode inlines this:
        anomaly mode formats every frame on the stack for every node, so one frame less
        between the user's line and the op is measurably cheaper)."""
        outer = self.pending
        pending: list[_Saved] = []
        self.pending = pending
        try:
            result = func(*args, **kwargs)
        finally:
            self.pending = outer
        return self.after(func, args, kwargs, pending, result, sys._getframe(1))

    def after(
        self,
        func: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        pending: list[_Saved],
        result: object,
        caller: FrameType | None,
    ) -> object:
        """Name the op of what the call saved; scan for version bumps if it may write."""
        if pending:
            nodes = _call_nodes(result)
            op = next(
                (node.name() for node in nodes if not _VIEW_NODE.match(node.name())),
                _func_name(func),
            )
            for record in pending:
                record.op = op
                if any(record.node is node for node in nodes):
                    record.original = None  # an output: torch names the node that saved it
                record.node = None
        name = _func_name(func)
        if name == "__get__" and getattr(func, "__self__", None) is self.data_property:
            if len(self.aliases) > 4096:  # a loop over `p.data`: forget the dead ones
                self.aliases = {k: r for k, r in self.aliases.items() if r() is not None}
            with contextlib.suppress(TypeError):
                self.aliases[id(result)] = weakref.ref(result)  # type: ignore[arg-type]
        if name == "backward" or (
            name == "grad" and getattr(func, "__module__", "") == "torch.autograd"
        ):
            self.backward_seen = True
        if _may_write(func, args, kwargs, name):
            fused = name.startswith("_fused_")
            written = None
            if self.aliases and not fused:
                written = [t for t in _written(args, kwargs) if self.is_alias(t)]
            self.scan(caller, written)
            if fused:
                self.scan_fused(name, args, kwargs, caller)
        return result

    def is_alias(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` is a `.data` alias or a view of one."""
        for candidate in (tensor, tensor._base):
            ref = self.aliases.get(id(candidate)) if candidate is not None else None
            if ref is not None and ref() is candidate:
                return True
        return False

    def scan_fused(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], frame: FrameType | None
    ) -> None:
        """Fused optimizer kernels (``_fused_adam_``) write parameters without bumping their
        version, so backward silently uses the new values: match saved tensors by storage."""
        written = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        written.discard(0)
        still: list[weakref.ref[_Saved]] = []
        where: tuple[_Site | None, _Site | None, str | None] | None = None
        for ref in self.live:
            record = ref()
            if record is None:
                continue
            if record.tensor.untyped_storage().data_ptr() not in written:
                still.append(ref)
                continue
            if where is None:
                where = _locate_write(_live_frames(frame), self.frames)
            mutation, call_site, module = where
            record.bump = _Bump(
                record.site, record.op or "?", mutation, call_site, module, silent=name
            )
            self.bumps.append(record.bump)
        self.live = still

    def scan(self, frame: FrameType | None, written: list[torch.Tensor] | None = None) -> None:
        """Record the first version bump of every live saved tensor; called after writes.
        ``written``: the tensors the call wrote into; one that overlaps a saved tensor whose
        version did not move was written through `.data` (autograd cannot see it)."""
        still: list[weakref.ref[_Saved]] = []
        where: tuple[_Site | None, _Site | None, str | None] | None = None
        storages = {_storage_of(t): t for t in written or ()}
        storages.pop(0, None)
        for ref in self.live:
            record = ref()
            if record is None:
                continue
            silent: str | None = None
            if record.tensor._version == record.version:
                target = storages.get(record.storage) if storages else None
                if target is None or not _overlap(target, record.tensor):
                    still.append(ref)
                    continue
                silent = _DATA_WRITE
            if where is None:
                where = _locate_write(_live_frames(frame), self.frames)
            mutation, call_site, module = where
            record.bump = _Bump(
                record.site, record.op or "?", mutation, call_site, module, silent=silent
            )
            self.bumps.append(record.bump)
            if silent is not None:
                self.silent.append(record)
        self.live = still


# _Bump.silent of a write through `.data` (the fused optimizer kernels name themselves).
_DATA_WRITE = ".data"


def _storage_of(tensor: torch.Tensor) -> int:
    """The address of a tensor's memory; 0 for tensors without one (sparse, meta, nested)."""
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return 0


def _written(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[torch.Tensor]:
    """The tensors an in-place call writes into: ``out=``, else its first argument
    (``x.add_``, ``x[i] = v``, ``F.relu(x, inplace=True)``, ``torch._foreach_add_(xs)``)."""
    out = kwargs.get("out")
    if out is not None:
        return list(_tensors(out))
    return list(_tensors(args[0])) if args else []


def _overlap(written: torch.Tensor, saved: torch.Tensor) -> bool:
    """Whether two tensors of one storage share any bytes (by the extent of each)."""

    def extent(t: torch.Tensor) -> tuple[int, int]:
        size = t.element_size()
        start = int(t.storage_offset()) * size
        if t.numel() == 0:
            return start, start
        span = sum((int(n) - 1) * abs(int(s)) for n, s in zip(t.shape, t.stride(), strict=True))
        return start, start + (span + 1) * size

    a, b = extent(written), extent(saved)
    return a[0] < b[1] and b[0] < a[1]


@functools.cache
def _torch_keeps_backward_suffix() -> bool:
    """Whether this torch names the producer "SigmoidBackward0" (2.11) or "Sigmoid" (2.13) in
    its version-check message: asked once, by making torch raise it."""
    import torch

    # Quietly: under the user's anomaly mode the probe's failure would print a traceback.
    with torch.enable_grad(), torch.autograd.set_detect_anomaly(False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leaf = torch.ones(1, device="cpu", requires_grad=True)
        out = leaf.sigmoid()
        out.add_(1)
        try:
            out.sum().backward()
        except RuntimeError as exc:
            return "SigmoidBackward" in str(exc)
    return False


def _version_error(record: _Saved, current: int) -> str:
    """The message torch's own ``SavedVariable::unpack`` check would raise."""
    import torch

    tensor = record.tensor
    text = (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [{tensor.type()} {list(tensor.shape)}]"
    )
    producer = record.producer
    original = record.original
    if isinstance(original, weakref.ref):
        original = original()
    if original is not None and original.grad_fn is not None:
        producer = original.grad_fn.name()
    if not record.is_leaf and producer is not None:
        if not _torch_keeps_backward_suffix():
            producer = _BACKWARD_SUFFIX.sub("", producer)
        text += f", which is output {record.output_nr} of {producer},"
    text += f" is at version {current}; expected version {record.version} instead."
    if torch.is_anomaly_enabled():
        text += (
            " Hint: the backtrace further above shows the operation that failed to compute its"
            " gradient. The variable in question was changed in there or anywhere later."
            " Good luck!"
        )
    else:
        text += (
            " Hint: enable anomaly detection to find the operation that failed to compute its"
            " gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
        )
    return text


_FRAME_LINE = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')


def _without_own_frames(text: str) -> str:
    """A printed traceback (an exception's, or the forward traceback anomaly mode adds to its
    "Error detected in ..." warning) without the frames of this harness and the worker: the
    user reads their own code's frames (and torch's), never the tool's."""
    kept: list[str] = []
    skipping = False
    for line in text.split("\n"):
        match = _FRAME_LINE.match(line)
        if match is not None:
            skipping = _norm(match.group("path")) in _INTERNAL_FILES
        elif not (skipping and line.startswith("    ")):  # not the skipped frame's source
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


@contextlib.contextmanager
def _own_frames_hidden() -> Iterator[None]:
    """Warnings shown meanwhile (anomaly mode's forward traceback) lose the tool's frames; one
    attributed to a line of the harness (torch warns at the caller of ``backward()``, which is
    the harness's) is shown without that location."""
    original = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        text = str(message)
        if 'File "' in text:
            cleaned = _without_own_frames(text)
            if cleaned != text:
                message = category(cleaned)
        if _norm(filename) in _INTERNAL_FILES:
            stream = file if file is not None else sys.stderr
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.write(f"{category.__name__}: {message}\n")
            return
        original(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        if warnings.showwarning is show:  # the user's code may have installed its own
            warnings.showwarning = original


def _print_exception(exc: BaseException) -> None:
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    print(_without_own_frames(text), end="", file=sys.stderr)


def _live_frames(frame: FrameType | None) -> Iterator[tuple[FrameType, int]]:
    """``frame`` and its callers, innermost first, with their current line."""
    while frame is not None:
        yield frame, frame.f_lineno
        frame = frame.f_back


def _traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """The frames of a traceback, innermost first, with the line each was at."""
    found: list[tuple[FrameType, int]] = []
    while tb is not None:
        found.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    found.reverse()
    return found


def _locate_write(
    stack: Iterable[tuple[FrameType, int]], frames: _UserFrames
) -> tuple[_Site | None, _Site | None, str | None]:
    """(mutation site, call site, module name) for a write happening at the top of ``stack``.

    If an ``inplace``-enabled module runs between the write and the innermost user frame
    (``self.act(x)`` with ``self.act = nn.ReLU(inplace=True)``), the mutation site is the
    module's construction line and the call site is the user line that called it.
    """
    import torch

    module: torch.nn.Module | None = None
    call_site: _Site | None = None
    for frame, line in stack:
        filename = frame.f_code.co_filename
        if frames.is_user(filename):
            call_site = _Site(_norm(filename), line)
            break
        if module is None:
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, torch.nn.Module) and getattr(candidate, "inplace", False):
                module = candidate
    if module is None:
        return call_site, None, None
    constructed = _construction_site(module)
    if constructed is None:
        return call_site, None, type(module).__name__
    return constructed, call_site, type(module).__name__


def _site_of(stack: Iterable[tuple[FrameType, int]], frames: _UserFrames) -> _Site | None:
    for frame, line in stack:
        if frames.is_user(frame.f_code.co_filename):
            return _Site(_norm(frame.f_code.co_filename), line)
    return None


# --------------------------------------------------------------------------- the call


@functools.cache
def _mode_class() -> type:
    from torch.overrides import TorchFunctionMode

    class _WriteWatcher(TorchFunctionMode):
        tracer: _Tracer

        def __torch_function__(
            self,
            func: Callable[..., object],
            types: Collection[type],
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> object:
            # _Tracer.call, inlined: the op runs one frame below the user's line.
            tracer = self.tracer
            kwargs = kwargs or {}
            outer = tracer.pending
            pending: list[_Saved] = []
            tracer.pending = pending
            try:
                result = func(*args, **kwargs)
            finally:
                tracer.pending = outer
            return tracer.after(func, args, kwargs, pending, result, sys._getframe(1))

    return _WriteWatcher


def _make_mode(tracer: _Tracer) -> Any:
    mode = _mode_class()()
    mode.tracer = tracer
    return mode


def _tensors(value: object, depth: int = 0) -> Iterator[torch.Tensor]:
    import torch

    if depth > 8:
        return
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth + 1)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item, depth + 1)


def _backward_on(value: object) -> None:
    """Reduce every grad-requiring tensor in ``value`` to one scalar and call backward."""
    total = None
    for tensor in _tensors(value):
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

    The report is JSON-able: ``status`` ("ok" | "inplace-error" | "leaf-error" | "error"),
    ``mutation`` and ``saved_by`` (both ends of a failing in-place bug, or null), ``related``
    (call sites, and writes on saved tensors that backward did not need), ``message``,
    ``exception`` and ``duration_s``; ``silent: true`` when the in-place error is a write
    through `.data` that torch did not raise for (backward used the new values).
    ``coverage`` (path, first line, last line, lines to watch): also ``lines_run``, the lines
    of that range of that file that ran (null when another tracer owns the process); it may
    stop recording once every watched line ran. ``phase()`` says where the code was when it
    called ``sys.exit`` or raised ``KeyboardInterrupt`` ("during forward").
    """
    import torch

    frames = _UserFrames(user_files)
    tracer = _Tracer(frames)
    _torch_keeps_backward_suffix()  # before the hooks, which turn torch's own check off
    error: BaseException | None = None
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if anomaly:
            stack.enter_context(torch.autograd.set_detect_anomaly(True, check_nan=False))
        stack.enter_context(_record_construction(frames))
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(tracer.pack, tracer.unpack))
        stack.enter_context(_own_frames_hidden())
        lines = None
        if coverage is not None:
            path, first, last, watch = coverage
            lines = _LinesRun(path, first, last, watch=watch)
        try:
            with _make_mode(tracer), lines or contextlib.nullcontext():
                result = fn()
                if not (tracer.backward_seen or tracer.unpacked):
                    _backward_on(result)
                del result
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the user's code: anything
            error = exc
    duration = time.perf_counter() - start
    _prune_construction_sites()
    report = _report(tracer, error, frames)
    if isinstance(error, (SystemExit, KeyboardInterrupt)):
        report["message"] = _stop_text(error, phase() if phase is not None else "")
    report["duration_s"] = round(duration, 6)
    if lines is not None:
        report["lines_run"] = lines.lines()
    return report


def _report(tracer: _Tracer, error: BaseException | None, frames: _UserFrames) -> dict[str, Any]:
    text = "" if error is None else str(error)
    first_line = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    report: dict[str, Any] = {
        "status": "ok",
        "mutation": None,
        "saved_by": None,
        "related": [],
        "message": "",
        "exception": None if error is None else f"{type(error).__name__}: {text}",
        "duration_s": 0.0,
    }
    related: list[dict[str, object]] = report["related"]
    primary: _Bump | None = None

    used = [record for record in tracer.silent if record.used and record.bump is not None]
    if error is None and used:
        # Torch raised nothing, but backward read a saved tensor after a `.data` write.
        report["status"] = "inplace-error"
        report["silent"] = True
        primary = used[0].bump
        assert primary is not None
        _report_bump(report, related, primary)
    elif error is None:
        report["message"] = "forward and backward ran without autograd errors"
    elif isinstance(error, RuntimeError) and _INPLACE_MSG in text:
        report["status"] = "inplace-error"
        failed = tracer.failed
        primary = failed.bump if failed is not None else None
        if failed is not None and primary is None:
            primary = _Bump(failed.site, failed.op or "?", None, None, None)
        if primary is None:
            report["message"] = first_line
        else:
            _report_bump(report, related, primary)
    elif isinstance(error, RuntimeError) and _LEAF_MSG in text:
        report["status"] = "leaf-error"
        mutation, call_site, module = _locate_write(_traceback_frames(error.__traceback__), frames)
        if mutation is not None:
            report["mutation"] = mutation.as_json()
        if call_site is not None:
            related.append({**call_site.as_json(), "message": "called here"})
        where = f" at {mutation}" if mutation is not None else ""
        via = f" (inside {module}(inplace=True))" if module else ""
        report["message"] = (
            f"in-place write on a leaf tensor that requires grad{where}{via}: "
            "wrap the update in torch.no_grad()"
        )
    else:
        report["status"] = "error"
        report["message"] = first_line
        raised = _site_of(_traceback_frames(error.__traceback__), frames)
        if raised is not None:
            related.append({**raised.as_json(), "message": "raised here"})

    seen: set[tuple[_Site | None, _Site | None]] = set()
    if primary is not None:
        seen.add((primary.mutation, primary.saved_site))
    for bump in tracer.bumps:
        key = (bump.mutation, bump.saved_site)
        if key in seen or bump.mutation is None:
            continue
        seen.add(key)
        saved = f" at {bump.saved_site}" if bump.saved_site is not None else ""
        if bump.silent == _DATA_WRITE:
            message = (
                f"a write through `.data` changed a tensor saved by {bump.op}{saved} (autograd "
                "cannot see it); backward did not use it"
            )
        elif bump.silent:
            message = (
                f"{bump.silent} overwrites a tensor saved by {bump.op}{saved} without bumping its"
                " version: torch raises nothing and backward uses the NEW values"
            )
        elif report["status"] == "ok":
            message = (
                f"in-place write on a tensor saved by {bump.op}{saved}; backward did not use it"
            )
        else:
            message = f"also overwrites a tensor saved by {bump.op}{saved}"
        related.append({**bump.mutation.as_json(), "message": message})
    if report["status"] == "ok" and len(related) > 0:
        report["message"] += f"; {len(related)} warning(s) about saved tensors in related"
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


def _report_bump(report: dict[str, Any], related: list[dict[str, Any]], bump: _Bump) -> None:
    """Both ends of the write that broke (or silently changed) a saved tensor, in `report`."""
    report["saved_by"] = _saved_json(bump)
    if bump.mutation is not None:
        report["mutation"] = bump.mutation.as_json()
    report["message"] = _explain(bump)
    if bump.call_site is not None:
        related.append({**bump.call_site.as_json(), "message": "called here"})


def _saved_json(bump: _Bump) -> dict[str, object] | None:
    if bump.saved_site is None:
        return None
    return {**bump.saved_site.as_json(), "op": bump.op}


def _explain(bump: _Bump) -> str:
    saved = f" at {bump.saved_site}" if bump.saved_site is not None else ""
    if bump.mutation is None:
        return (
            f"a tensor saved for backward by {bump.op}{saved} was modified in place "
            "(the writing call was not seen)"
        )
    via = f" ({bump.module}(inplace=True) constructed here)" if bump.module else ""
    if bump.silent == _DATA_WRITE:
        return (
            f"{bump.mutation} writes through `.data` into a tensor that {bump.op} saved{saved}: "
            "torch raises nothing and backward used the NEW values, so the gradients are "
            "silently wrong; write out of place, or into a `.detach().clone()`"
        )
    return (
        f"{bump.mutation}{via} modifies in place a tensor that {bump.op} saved{saved}; "
        "backward needs its old value"
    )


# --------------------------------------------------------------------------- script


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
    prefixes = tuple(_norm(d) + os.sep for d in directories if d)
    if not prefixes:
        return
    # An environment inside the project (.venv/lib/.../site-packages) is not the user's code.
    installed = {_norm(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str) or name == "torch" or name.startswith("torch."):
            continue
        path = _norm(filename)
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
    """The value a targets.py value spec describes, on ``device``."""
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
    for tensor in _tensors(output):
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
                for value in _tensors((call_args, call_kwargs)):
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

    Keys: ``status`` ("ok" | "inplace-error" | "leaf-error" | "error"), ``target``,
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
            # builds its own tensors often mixes devices (module-level constants, CPU
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

    _forget_user_modules([os.path.dirname(path), str(spec.get("cwd") or "")])
    user_files = spec.get("user_files")
    frames = _UserFrames(user_files)
    try:
        with _record_construction(frames):
            module = _load_user_module(path, spec.get("source"))
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the user's code raises anything
        _print_exception(exc)
        raised = _site_of(_traceback_frames(exc.__traceback__), frames)
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
    if sys.path and _norm(sys.path[0] or ".") == _norm(os.path.dirname(__file__)):
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
        if sys.path and _norm(sys.path[0] or ".") == _norm(os.path.dirname(__file__)):
            sys.path[0] = os.path.dirname(path)
        else:
            sys.path.insert(0, os.path.dirname(path))
        start = time.perf_counter()
        try:
            with _record_construction(_UserFrames(None)):
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
