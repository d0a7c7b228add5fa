"""Watches autograd while user code runs: which op saved each tensor, which line overwrote it.

One tracer serves verify (``harness.py`` runs a module under it in a subprocess) and the
runtime detector (``inplace_lsp.detect()``, ``inplace-lsp run``) in the user's own process.
It imports only the standard library at import time and torch lazily; ``harness.py`` loads it
by path (it runs in the user's interpreter, which need not have inplace-lsp installed).

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

Nothing here synchronises a CUDA device: versions, storage addresses, shapes and strides are
host-side facts (tests/test_detect.py checks that no tensor value is read).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import sys
import sysconfig
import threading
import warnings
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# Frames of this package's files are never user code (the harness, the worker, the detector,
# the `run` command): the user reads their own lines.
PACKAGE_DIR = os.path.normcase(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def is_internal(path: str) -> bool:
    return norm(path).startswith(PACKAGE_DIR)


INPLACE_MSG = "modified by an inplace operation"
LEAF_MSG = "a leaf Variable that requires grad"
SECOND_BACKWARD_MSG = "backward through the graph a second time"
# The key of an autograd node's metadata that names the call which built it on a graph that a
# backward had freed (the call's site, a key of `Tracer.retained`).
_REUSE = "inplace_lsp.reuse"

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
class Site:
    path: str
    line: int
    # The innermost library frame (an installed package's: a framework's optimizer wrapper)
    # between this line of the user's and the op: context, not part of the site's identity.
    via: Site | None = field(default=None, compare=False)

    def as_json(self) -> dict[str, object]:
        found: dict[str, object] = {"path": self.path, "line": self.line}
        if self.via is not None:
            found["via"] = self.via.as_json()
        return found

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


_INSTALLED = ("site-packages", "dist-packages")


@dataclass
class Bump:
    """The first in-place write seen on saved tensors: one per (write, save) pair of lines."""

    saved_site: Site | None
    op: str
    mutation: Site | None  # where the fix goes: the write, or the inplace module's constructor
    call_site: Site | None  # set when the write happened inside an inplace=True module
    module: str | None  # class name of that module
    silent: str | None = None  # a fused kernel that wrote WITHOUT bumping the version
    count: int = 1  # saved tensors this write changed (a loop writes once per iteration)
    used: bool = False  # a silent write: backward then read the changed tensor

    @property
    def key(self) -> tuple[Site | None, Site | None, str | None]:
        return self.mutation, self.saved_site, self.silent


@dataclass(frozen=True)
class Write:
    """One version of a saved tensor: ``written`` by ``op`` at ``site`` (or ``saved``)."""

    version: int
    event: str  # "saved" | "written"
    op: str
    site: Site | None

    def as_json(self) -> dict[str, object]:
        where = self.site.as_json() if self.site is not None else {"path": None, "line": None}
        return {"version": self.version, "event": self.event, "op": self.op, **where}


# Versions kept per saved tensor: a tensor written in a loop keeps its first writes.
HISTORY_LIMIT = 8


class Saved:
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
        "_storage",
        "seen",
        "writes",
        "snapshot",
        "__weakref__",
    )

    def __init__(
        self,
        tensor: torch.Tensor,
        version: int,
        site: Site | None,
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
        self.bump: Bump | None = None
        self._storage: int | None = None
        self.seen = version  # the version the last scan saw
        self.writes: list[Write] | None = None  # the writes seen since the save (history)
        # A copy of its values, kept when NumPy shares its memory: a write through the array
        # changes nothing torch can see, so backward compares the values themselves.
        self.snapshot: torch.Tensor | None = None

    @property
    def storage(self) -> int:
        """Where its memory lives: a write into that memory that leaves the version alone went
        through an alias autograd does not track (`.data`). Asked only once such an alias
        exists (most runs never do): the address stays while the tensor lives."""
        if self._storage is None:
            self._storage = _storage_of(self.tensor)
        return self._storage


# --------------------------------------------------------------------------- user frames


_USER, _LIBRARY, _OTHER = 1, 2, 0  # a frame's file: the user's, an installed package's, neither
_FORWARDERS = frozenset(("__torch_function__", "__torch_dispatch__"))


class UserFrames:
    """Decides which source files are user code and finds the innermost user frame: not
    this tool's, torch's, the standard library's, nor an installed package's (site-packages:
    a framework's); when no frame is the user's, the innermost installed package's (unless
    the user's files are given, as verify gives them: then none)."""

    def __init__(self, user_files: Collection[str] | None) -> None:
        import torch

        self._cache: dict[str, int] = {}
        self._wanted: frozenset[str] | None = None
        if user_files is not None:
            self._wanted = frozenset(norm(p) for p in user_files)
        self._torch_dir = norm(os.path.dirname(torch.__file__)) + os.sep
        self._stdlib = _stdlib_dirs()

    def is_user(self, filename: str) -> bool:
        return self._kind(filename) == _USER

    def _kind(self, filename: str) -> int:
        known = self._cache.get(filename)
        if known is None:
            known = self._classify(filename)
            self._cache[filename] = known
        return known

    def _classify(self, filename: str) -> int:
        if filename.startswith("<frozen") or filename.startswith("<built-in"):
            return _OTHER
        path = norm(filename)
        if path.startswith(PACKAGE_DIR):
            return _OTHER
        if self._wanted is not None and path in self._wanted:
            return _USER
        if path.startswith(self._torch_dir):
            return _OTHER
        if any(part in _INSTALLED for part in path.split(os.sep)):
            return _LIBRARY
        if self._wanted is not None or path.startswith(self._stdlib):
            return _OTHER
        return _USER

    def frame_kind(self, frame: FrameType) -> int:
        """A frame's kind, by its file; a ``__torch_function__`` or ``__torch_dispatch__``
        (the user's own mode, or tensor subclass) is no line of the user's: it forwards the
        call that the line under it made."""
        if frame.f_code.co_name in _FORWARDERS:
            return _OTHER
        return self._kind(frame.f_code.co_filename)

    def innermost(self, frame: FrameType | None) -> FrameType | None:
        return self._innermost(frame)[0]

    def _innermost(self, frame: FrameType | None) -> tuple[FrameType | None, FrameType | None]:
        """The innermost user frame (else the innermost library frame), and the innermost
        library frame inside it (None when there is none, or no user frame)."""
        library = None
        while frame is not None:
            kind = self.frame_kind(frame)
            if kind == _USER:
                return frame, library
            if kind == _LIBRARY and library is None:
                library = frame
            frame = frame.f_back
        return (library if self.fallback else None), None

    @property
    def fallback(self) -> bool:
        """Whether an installed package's line stands in for a missing user line."""
        return self._wanted is None

    def site(self, frame: FrameType | None) -> Site | None:
        user, library = self._innermost(frame)
        if user is None:
            return None
        via = None if library is None else Site(norm(library.f_code.co_filename), library.f_lineno)
        return Site(norm(user.f_code.co_filename), user.f_lineno, via)


def norm(path: str) -> str:
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
    found = {norm(paths[key]) + os.sep for key in ("stdlib", "platstdlib") if paths.get(key)}
    return tuple(sorted(found))


# --------------------------------------------------------------------------- module sites

# id(module) -> (weak reference to the module, construction site). Filled while
# ``record_construction`` is active; looked up when a write happens inside a module.
_CONSTRUCTED: dict[int, tuple[weakref.ref[Any], Site]] = {}


def _construction_site(module: object) -> Site | None:
    entry = _CONSTRUCTED.get(id(module))
    if entry is None or entry[0]() is not module:
        return None
    return entry[1]


def constructed_modules() -> Iterator[tuple[Any, Site]]:
    """The live modules constructed while construction was recorded, with their lines."""
    for ref, site in list(_CONSTRUCTED.values()):
        module = ref()
        if module is not None:
            yield module, site


def prune_construction_sites() -> None:
    for key in [k for k, (ref, _) in _CONSTRUCTED.items() if ref() is None]:
        del _CONSTRUCTED[key]


# The record_construction blocks open in any thread, and the wrapper the first one installed:
# it goes when the last one closes, so that detectors in two threads never leave it installed
# or take it away from each other.
_RECORDERS: list[Any] = [0, None]  # [how many, (wrapper, the __init__ it replaced)]
_RECORDERS_LOCK = threading.Lock()


@contextlib.contextmanager
def record_construction(frames: UserFrames) -> Iterator[None]:
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
        site = Site(norm(frame.f_code.co_filename), frame.f_lineno)
        try:
            _CONSTRUCTED[id(self)] = (weakref.ref(self), site)
        except TypeError:
            pass

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    with _RECORDERS_LOCK:
        if _RECORDERS[0] == 0:
            torch.nn.Module.__init__ = __init__  # type: ignore[method-assign]
            _RECORDERS[1] = (__init__, original)
        _RECORDERS[0] += 1
    try:
        yield
    finally:
        with _RECORDERS_LOCK:
            _RECORDERS[0] -= 1
            installed, replaced = _RECORDERS[1]
            if _RECORDERS[0] == 0:
                _RECORDERS[1] = None
                if torch.nn.Module.__init__ is installed:  # else the user's code patched it
                    torch.nn.Module.__init__ = replaced  # type: ignore[method-assign]


# --------------------------------------------------------------------------- line coverage


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


# func -> (its name, whether `after` can treat it as a plain call: a name that neither writes
# (`add_`, `__iadd__`, `_fused_adam_`) nor means something to the tracer (`backward`, `.data`,
# `numpy`, ...), the index of its positional `inplace` parameter); funcs that cannot be hashed
# are looked at each time.
_CALLS: dict[object, tuple[str, bool, int | None]] = {}
_SPECIAL = frozenset(("__get__", "backward", "grad", "numpy", "from_numpy", "requires_grad_"))


def _call_info(func: Callable[..., object]) -> tuple[str, bool, int | None]:
    name = _func_name(func)
    writes = name.endswith("_") or name in _INPLACE_DUNDERS
    plain = not writes and name not in _SPECIAL and not name.startswith("__")
    info = name, plain, _inplace_position(func)
    if len(_CALLS) > 65536:
        _CALLS.clear()
    with contextlib.suppress(TypeError):
        _CALLS[func] = info
    return info


def _call_nodes(result: object) -> list[Any]:
    """grad_fns of a call's outputs, then (through view nodes only) the nodes below them."""
    nodes: list[Any] = []
    todo = [node for t in tensors(result) if (node := _grad_fn_of(t)) is not None]
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


class Tracer:
    """State of one ``trace_call`` or detector: saved tensors, bumps, the failing saved tensor.

    Options (all off for verify): ``history`` keeps each saved tensor's writes (up to
    ``HISTORY_LIMIT``); ``numpy`` compares, at backward, the values of saved tensors whose
    memory a NumPy array shares; ``leaves`` remembers where tensors that require grad were
    created. The graph each backward freed is remembered, and the calls that build on it
    (``retained``: a reused hidden state, an accumulated loss); when a backward then fails
    "through the graph a second time", ``reused`` names those of its graph.
    ``on_error(record, message)`` gives the text of the in-place error raised at backward;
    ``on_call_error(func, args, kwargs, exc, frame)`` sees every torch call that raised.
    """

    def __init__(
        self,
        frames: UserFrames,
        *,
        history: bool = False,
        numpy: bool = False,
        leaves: bool = False,
    ) -> None:
        import torch

        self.frames = frames
        self.live: list[weakref.ref[Saved]] = []
        self.prune_at = 4096  # len(live) at which dead references are dropped
        # The same references by the address of the tensor's memory: a write can move only the
        # versions of the saved tensors in the memory it wrote (views and `.detach()` share
        # it), so a scan after `relu_` looks at those, not at every live one.
        self.by_storage: dict[int, list[weakref.ref[Saved]]] = {}
        self.indexed = 0  # references in by_storage, dead ones included
        self.index_prune_at = 4096
        self.bumps: list[Bump] = []
        self.bump_index: dict[tuple[Site | None, Site | None, str | None], Bump] = {}
        self.failed: Saved | None = None
        self.pending: list[Saved] | None = None  # saved during the current torch call
        # (frame, instruction, user site) of the last save of the current torch call: one op
        # saves many tensors from one place (an LSTM cell, 14), the stack is walked once.
        self.memo: tuple[FrameType, int, Site | None] | None = None
        self.backward_calls = 0  # backward() / autograd.grad() calls that returned
        self.unpacked = False
        self.silent: list[Bump] = []  # writes through `.data` into saved tensors
        # The `.data` aliases handed out (id -> weak reference): writes through them, or a
        # view of one, leave the saved tensor's version alone.
        self.aliases: dict[int, weakref.ref[torch.Tensor]] = {}
        self.data_property = torch.Tensor.data
        self.tensor_type = torch.Tensor
        self.history = history
        self.numpy = numpy
        # storage address -> (tensor, line of the `.numpy()` / `from_numpy`) shared with NumPy
        self.exported: dict[int, tuple[weakref.ref[torch.Tensor], Site | None]] = {}
        self.numpy_changed: list[Saved] = []  # saved tensors whose values changed that way
        self.leaves = leaves
        self.leaf_sites: dict[int, tuple[weakref.ref[torch.Tensor], Site | None]] = {}
        # The outputs' nodes of the last backward that freed its graph (a graph is held by
        # its roots), and id -> node of that graph, walked when first needed: a training
        # step that carries no tensor of the last graph over never needs it.
        self.freed_roots: list[Any] = []
        self._freed: dict[int, object] | None = None
        self.freed_site: Site | None = None
        # The autograd sequence number of the first node built after the last backward: a
        # tensor of a newer node was checked for retention when the call that made it returned.
        self.built_since = 0
        self.retained: dict[Site | None, tuple[str, Site | None]] = {}  # use -> (op, backward)
        # The uses (keys of `retained`) in the graph of the backward that failed "through the
        # graph a second time"; None until one does.
        self.reused: list[Site | None] | None = None
        self.on_error: Callable[[Saved, str], str] | None = None
        self.on_backward: Callable[[], None] | None = None  # after each backward() returned
        self.on_call_error: (
            Callable[
                [
                    Callable[..., object],
                    tuple[Any, ...],
                    dict[str, Any],
                    BaseException,
                    FrameType | None,
                ],
                None,
            ]
            | None
        ) = None

    # saved_tensors_hooks ------------------------------------------------------------
    @property
    def backward_seen(self) -> bool:
        return self.backward_calls > 0

    def pack(self, tensor: torch.Tensor) -> Saved:
        import torch

        caller = sys._getframe(1)
        memo = self.memo
        if memo is not None and memo[0] is caller and memo[1] == caller.f_lasti:
            site = memo[2]
        else:
            site = self.frames.site(caller)
            if self.pending is not None:  # held only until the call returns
                self.memo = (caller, caller.f_lasti, site)
        with torch._C.DisableTorchFunction():
            alias = tensor.detach()
            grad_fn = _grad_fn_of(tensor)
            record = Saved(
                alias,
                tensor._version,
                site,
                None if grad_fn is None else grad_fn.name(),
                tensor.output_nr,
                tensor.is_leaf,
                None if tensor.is_leaf else tensor,
                grad_fn,
            )
            if self.exported and record.storage in self.exported:
                record.snapshot = alias.clone()
        if self.pending is not None:
            self.pending.append(record)
        else:
            record.node = None
            if record.original is not None:
                record.original = weakref.ref(tensor)
            record.op = _autograd_function_name(sys._getframe(1)) or record.producer
        live = self.live
        ref = weakref.ref(record)
        live.append(ref)
        if len(live) > self.prune_at:  # a long run that never writes: forget the dead ones
            self.live = live = [ref for ref in live if ref() is not None]
            self.prune_at = max(4096, 2 * len(live))
        bucket = self.by_storage.get(record.storage)
        if bucket is None:
            self.by_storage[record.storage] = [ref]
        else:
            bucket.append(ref)
        self.indexed += 1
        if self.indexed > self.index_prune_at:
            self._prune_index()
        return record

    def _prune_index(self) -> None:
        index: dict[int, list[weakref.ref[Saved]]] = {}
        for key, refs in self.by_storage.items():
            alive = [ref for ref in refs if ref() is not None]
            if alive:
                index[key] = alive
        self.by_storage = index
        self.indexed = sum(len(refs) for refs in index.values())
        self.index_prune_at = max(4096, 2 * self.indexed)

    def unpack(self, record: Saved) -> torch.Tensor:
        import torch

        self.unpacked = True
        if record.bump is not None and record.bump.silent == _DATA_WRITE:
            record.bump.used = True
        with torch._C.DisableTorchFunction():
            current = record.tensor._version
            if current != record.version:
                if self.failed is None:
                    self.failed = record
                message = _version_error(record, current)
                if self.on_error is not None:
                    message = self.on_error(record, message)
                raise RuntimeError(message)
            snapshot = record.snapshot
            if snapshot is not None and not torch.equal(record.tensor, snapshot):
                record.snapshot = None  # reported once
                self.numpy_changed.append(record)
        return record.tensor

    # TorchFunctionMode ---------------------------------------------------------------
    def after(
        self,
        func: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        pending: list[Saved],
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
        try:
            name, plain, position = _CALLS[func]
        except (KeyError, TypeError):
            name, plain, position = _call_info(func)
        if plain:
            # Most calls: no special name, and no write unless `out=` or `inplace` says so.
            if self.freed_roots:
                self.check_retention(name, args, result, caller)
            if kwargs:
                if self.leaves and kwargs.get("requires_grad"):
                    self.remember_leaves(result, caller)
                if kwargs.get("out") is not None or kwargs.get("inplace"):
                    return self._after_write(func, args, kwargs, name, caller, result)
            if position is not None and len(args) > position and args[position]:
                return self._after_write(func, args, kwargs, name, caller, result)
            return result
        if name == "__get__" and getattr(func, "__self__", None) is self.data_property:
            if len(self.aliases) > 4096:  # a loop over `p.data`: forget the dead ones
                self.aliases = {k: r for k, r in self.aliases.items() if r() is not None}
            with contextlib.suppress(TypeError):
                self.aliases[id(result)] = weakref.ref(result)  # type: ignore[arg-type]
        if name == "backward" or (
            name == "grad" and getattr(func, "__module__", "") == "torch.autograd"
        ):
            self.backward_calls += 1
            if name == "backward":
                self.remember_freed(args, kwargs, caller)
            if self.on_backward is not None:
                self.on_backward()
        elif self.freed_roots:
            self.check_retention(name, args, result, caller)
        if self.numpy and name in ("numpy", "from_numpy"):
            self.share_with_numpy(args[0] if name == "numpy" else result, caller)
        if self.leaves and (name == "requires_grad_" or (kwargs and kwargs.get("requires_grad"))):
            self.remember_leaves(result, caller)
        if _may_write(func, args, kwargs, name):
            return self._after_write(func, args, kwargs, name, caller, result)
        return result

    def _after_write(
        self,
        func: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str,
        caller: FrameType | None,
        result: object,
    ) -> object:
        fused = name.startswith("_fused_")
        written = None
        targets = None if fused or name in _NEW_MEMORY else written_tensors(args, kwargs)
        if self.aliases and targets:
            written = [t for t in targets if self.is_alias(t)]
        self.scan(caller, written, name, targets)
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

    def add_bump(self, bump: Bump) -> Bump:
        """``bump``, or the same write on the same save seen before (counted)."""
        known = self.bump_index.get(bump.key)
        if known is not None:
            known.count += 1
            return known
        self.bump_index[bump.key] = bump
        self.bumps.append(bump)
        if bump.silent == _DATA_WRITE:
            self.silent.append(bump)
        return bump

    def scan_fused(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], frame: FrameType | None
    ) -> None:
        """Fused optimizer kernels (``_fused_adam_``) write parameters without bumping their
        version, so backward silently uses the new values: match saved tensors by storage."""
        written = {t.untyped_storage().data_ptr() for t in tensors((args, kwargs))}
        written.discard(0)
        still: list[weakref.ref[Saved]] = []
        where: tuple[Site | None, Site | None, str | None] | None = None
        for ref in self.live:
            record = ref()
            if record is None:
                continue
            if record.tensor.untyped_storage().data_ptr() not in written:
                still.append(ref)
                continue
            if where is None:
                where = locate_write(live_frames(frame), self.frames)
            mutation, call_site, module = where
            record.bump = self.add_bump(
                Bump(record.site, record.op or "?", mutation, call_site, module, silent=name)
            )
        self.live = still

    def scan(
        self,
        frame: FrameType | None,
        written: list[torch.Tensor] | None = None,
        op: str = "?",
        targets: list[torch.Tensor] | None = None,
    ) -> None:
        """Record the first version bump of every live saved tensor (with ``history``, every
        write up to ``HISTORY_LIMIT``); called after writes by ``op``. ``targets``: the tensors
        the call wrote into, when known: only saved tensors in their memory are looked at.
        ``written``: those of them that are `.data` aliases; one that overlaps a saved tensor
        whose version did not move was written through `.data` (autograd cannot see it)."""
        storages = {_storage_of(t): t for t in written or ()}
        storages.pop(0, None)
        where: list[tuple[Site | None, Site | None, str | None]] = []  # located once, if needed
        keys = {_storage_of(t) for t in targets} if targets else None
        if keys is not None and 0 not in keys:
            for key in keys:
                bucket = self.by_storage.get(key)
                if bucket:
                    self.by_storage[key] = self._scan(bucket, frame, storages, op, where)
            return
        self.live = self._scan(self.live, frame, storages, op, where)

    def _scan(
        self,
        refs: list[weakref.ref[Saved]],
        frame: FrameType | None,
        storages: dict[int, torch.Tensor],
        op: str,
        where: list[tuple[Site | None, Site | None, str | None]],
    ) -> list[weakref.ref[Saved]]:
        """``scan`` over ``refs``: the references still to watch."""
        still: list[weakref.ref[Saved]] = []
        for ref in refs:
            record = ref()
            if record is None:
                continue
            silent: str | None = None
            current = record.tensor._version
            if current == record.seen:
                target = storages.get(record.storage) if storages else None
                if target is None or not _overlap(target, record.tensor):
                    still.append(ref)
                    continue
                silent = _DATA_WRITE
            if not where:
                where.append(locate_write(live_frames(frame), self.frames))
            mutation, call_site, module = where[0]
            if record.bump is None:
                record.bump = self.add_bump(
                    Bump(record.site, record.op or "?", mutation, call_site, module, silent=silent)
                )
            if self.history and silent is None:
                record.seen = current
                if record.writes is None:
                    record.writes = []
                record.writes.append(Write(current, "written", op, mutation))
                if len(record.writes) < HISTORY_LIMIT:
                    still.append(ref)
        return still

    # detector options ----------------------------------------------------------------
    def share_with_numpy(self, tensor: object, frame: FrameType | None) -> None:
        """``tensor``'s memory is now shared with a NumPy array: keep a copy of every live
        saved tensor there (and of those saved later), compared at backward."""
        import torch

        if not isinstance(tensor, torch.Tensor):
            return
        storage = _storage_of(tensor)
        if storage == 0:
            return
        if len(self.exported) > 4096:
            self.exported = {k: v for k, v in self.exported.items() if v[0]() is not None}
        self.exported[storage] = (weakref.ref(tensor), self.frames.site(frame))
        with torch._C.DisableTorchFunction():
            for ref in self.live:
                record = ref()
                if record is not None and record.storage == storage and record.snapshot is None:
                    record.snapshot = record.tensor.clone()

    def numpy_site(self, record: Saved) -> Site | None:
        entry = self.exported.get(record.storage)
        return entry[1] if entry is not None else None

    def remember_leaves(self, result: object, frame: FrameType | None) -> None:
        site = self.frames.site(frame)
        if len(self.leaf_sites) > 4096:
            self.leaf_sites = {k: v for k, v in self.leaf_sites.items() if v[0]() is not None}
        for tensor in tensors(result):
            if tensor.is_leaf and tensor.requires_grad:
                self.leaf_sites[id(tensor)] = (weakref.ref(tensor), site)

    def leaf_site(self, tensor: torch.Tensor) -> Site | None:
        entry = self.leaf_sites.get(id(tensor))
        return entry[1] if entry is not None and entry[0]() is tensor else None

    def remember_freed(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], frame: FrameType | None
    ) -> None:
        """After ``backward(...)``: the roots of the graph it freed (none with retain_graph)."""
        retain = kwargs.get("retain_graph")
        if retain is None and len(args) > 2:
            retain = args[2]
        if retain is None:
            retain = kwargs.get("create_graph") or (len(args) > 3 and bool(args[3]))
        if retain:
            return
        self.freed_roots = [n for t in tensors(args[:1]) if (n := _grad_fn_of(t)) is not None]
        self._freed = None
        self.freed_site = self.frames.site(frame)
        self.built_since = _next_sequence_nr()

    @property
    def freed(self) -> dict[int, object]:
        """id -> node of the graph the last backward freed (held, so that ids stay unique)."""
        if self._freed is None:
            freed: dict[int, object] = {}
            todo = list(self.freed_roots)
            while todo:
                node = todo.pop()
                if id(node) in freed:
                    continue
                freed[id(node)] = node
                todo.extend(
                    nxt
                    for nxt, _ in node.next_functions
                    if nxt is not None and type(nxt).__name__ != "AccumulateGrad"  # leaves stay
                )
            self._freed = freed
        return self._freed

    def check_retention(
        self, name: str, args: tuple[Any, ...], result: object, frame: FrameType | None
    ) -> None:
        """A call whose output requires grad and builds on the graph the last backward freed:
        an accumulator keeps every step's graph alive, a reused tensor fails the next backward."""
        # Runs on every call after a backward: the arguments are looked at inline (a tensor,
        # or the tensors of a list among them), most have no node or a node built since.
        since, tensor_type = self.built_since, self.tensor_type
        for arg in args:
            if isinstance(arg, tensor_type):
                found: Iterable[torch.Tensor] = (arg,)
            elif isinstance(arg, (list, tuple)):
                found = tensors(arg, 7)
            else:
                continue
            for tensor in found:
                try:
                    node = tensor.grad_fn
                except RuntimeError:  # see _grad_fn_of
                    continue
                if node is None or (node._sequence_nr() >= since and tensor is not result):
                    continue  # built since that backward, and judged then (an in-place write's
                    # node is this call's own: judged now)
                freed = self.freed
                if id(node) in freed or any(
                    nxt is not None and id(nxt) in freed for nxt, _ in node.next_functions
                ):
                    self._retained_use(name, result, frame)
                    return

    def _retained_use(self, name: str, result: object, frame: FrameType | None) -> None:
        """The call `name` built `result` on a freed graph: remember where, and tag its nodes
        so that a failing backward finds the use in its own graph."""
        built = [t for t in tensors(result) if t.requires_grad]
        if not built:
            return
        site = self.frames.site(frame)
        if site not in self.retained:
            self.retained[site] = (name, self.freed_site)
        for out in built:
            node = _grad_fn_of(out)
            if node is not None:
                node.metadata[_REUSE] = site

    def second_backward(self, args: tuple[Any, ...]) -> None:
        """A backward of ``args[0]`` failed "through the graph a second time": ``reused``, the
        uses of a freed graph that its graph holds: those that built on the freed graph itself
        (``y = labels[i]``, not ``y_hat - y``, which built on ``y``), else the others; every use
        known where none is found."""
        first: list[Site | None] = []
        then: list[Site | None] = []
        seen: set[int] = set()
        freed = self.freed
        todo = [node for t in tensors(args[:1]) if (node := _grad_fn_of(t)) is not None]
        while todo and len(seen) < _GRAPH_WALK_LIMIT:
            node = todo.pop()
            if id(node) in seen or id(node) in freed:
                continue
            seen.add(id(node))
            following = [nxt for nxt, _ in node.next_functions if nxt is not None]
            use = node.metadata.get(_REUSE, _NOT_REUSED)
            if use is not _NOT_REUSED:
                on_freed = any(id(nxt) in freed for nxt in following)
                (first if on_freed else then).append(use)
            todo.extend(following)
        self.reused = list(dict.fromkeys(first or then)) or list(self.retained)


@functools.cache
def _probe() -> torch.Tensor:
    import torch

    with torch._C.DisableTorchFunction():
        return torch.zeros((), requires_grad=True)


def _next_sequence_nr() -> int:
    """The sequence number the next autograd node built in this thread gets (every node has
    one, counted up per thread): nodes with smaller ones were built before now."""
    import torch

    probe = _probe()
    with torch._C.DisableTorchFunction(), torch.enable_grad():
        node = probe.view_as(probe).grad_fn
    return node._sequence_nr() + 1 if node is not None else sys.maxsize


# The nodes a failed backward's graph is searched through for the uses of a freed graph.
_GRAPH_WALK_LIMIT = 200_000
_NOT_REUSED = object()

# Bump.silent of a write through `.data` (the fused optimizer kernels name themselves).
_DATA_WRITE = ".data"
# In-place calls that may give the tensor other memory: a scan after them looks at every
# saved tensor, not only those in the memory the tensor has now.
_NEW_MEMORY = frozenset(("set_", "resize_", "resize_as_", "_set_", "swap_", "set_data"))


def _grad_fn_of(tensor: torch.Tensor) -> Any:
    """A tensor's grad_fn, None where torch refuses to give it: a view made under no_grad
    whose base was since written in place with grad on raises when its grad_fn is read (the
    user's code, which never reads it, runs)."""
    try:
        return tensor.grad_fn
    except RuntimeError:
        return None


def _storage_of(tensor: torch.Tensor) -> int:
    """The address of a tensor's memory; 0 for tensors without one (sparse, meta, nested)."""
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return 0


def written_tensors(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[torch.Tensor]:
    """The tensors an in-place call writes into: ``out=``, else its first argument
    (``x.add_``, ``x[i] = v``, ``F.relu(x, inplace=True)``, ``torch._foreach_add_(xs)``)."""
    out = kwargs.get("out")
    if out is not None:
        return list(tensors(out))
    return list(tensors(args[0])) if args else []


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
def torch_keeps_backward_suffix() -> bool:
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


def _version_error(record: Saved, current: int) -> str:
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
    node = _grad_fn_of(original) if original is not None else None
    if node is not None:
        producer = node.name()
    if not record.is_leaf and producer is not None:
        if not torch_keeps_backward_suffix():
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


def without_own_frames(text: str) -> str:
    """A printed traceback (an exception's, or the forward traceback anomaly mode adds to its
    "Error detected in ..." warning) without the frames of this harness and the worker: the
    user reads their own code's frames (and torch's), never the tool's."""
    kept: list[str] = []
    skipping = False
    for line in text.split("\n"):
        match = _FRAME_LINE.match(line)
        if match is not None:
            skipping = is_internal(match.group("path"))
        elif not (skipping and line.startswith("    ")):  # not the skipped frame's source
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


@contextlib.contextmanager
def own_frames_hidden() -> Iterator[None]:
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
            cleaned = without_own_frames(text)
            if cleaned != text:
                message = category(cleaned)
        if is_internal(filename):
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


# Matches this module under either of its names (the package's, or harness.py's private one).
_OWN_MODULE = r"(inplace_lsp\.verify\.tracer|_inplace_lsp_tracer)"


@contextlib.contextmanager
def warnings_at_callers() -> Iterator[None]:
    """A warning torch's C++ code raises during a watched call is filed by Python at the
    innermost Python frame, the mode's handler here, instead of the line that called torch:
    the filters, the once-per-location registry and the message would all see this file. Such
    a warning reaches the handler installed here (an "always" filter for this module only) and
    is warned again at the caller's line, with the caller's registry: what the user's filters
    do with it, and how often it shows, is what it would be without the detector."""
    import torch

    handler = getattr(_mode_class(), "__torch_function__").__code__  # noqa: B009 (mypy)
    overrides = norm(os.path.join(os.path.dirname(torch.__file__), "overrides.py"))
    original = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code is not handler:
            frame = frame.f_back
        if frame is None or not is_internal(filename):
            original(message, category, filename, lineno, file, line)
            return
        frame = frame.f_back
        while frame is not None and norm(frame.f_code.co_filename) == overrides:
            frame = frame.f_back
        if frame is None:
            original(message, category, filename, lineno, file, line)
            return
        where = frame.f_globals
        warnings.warn_explicit(
            message,
            category,
            frame.f_code.co_filename,
            frame.f_lineno,
            module=where.get("__name__", "<string>"),
            registry=where.setdefault("__warningregistry__", {}),
            module_globals=where,
        )

    warnings.filterwarnings("always", module=_OWN_MODULE)  # kept: later runs add no copy
    warnings.showwarning = show
    try:
        yield
    finally:
        if warnings.showwarning is show:  # the user's code may have installed its own
            warnings.showwarning = original


def print_exception(exc: BaseException) -> None:
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    print(without_own_frames(text), end="", file=sys.stderr)


def live_frames(frame: FrameType | None) -> Iterator[tuple[FrameType, int]]:
    """``frame`` and its callers, innermost first, with their current line."""
    while frame is not None:
        yield frame, frame.f_lineno
        frame = frame.f_back


_DISPATCH = (os.path.join("torch", "overrides.py"), "handle_torch_function")


def _dispatches(tb: TracebackType) -> bool:
    """torch's `handle_torch_function`, which hands a call to the detector's TorchFunctionMode."""
    code = tb.tb_frame.f_code
    return code.co_name == _DISPATCH[1] and code.co_filename.endswith(_DISPATCH[0])


def user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` as the same error has it without the detector: without this tool's frames, nor
    the two a TorchFunctionMode adds to each call it sees (``handle_torch_function``, and the
    frame that called it, which runs again inside)."""
    entries: list[TracebackType] = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    kept = [t for t in entries if not is_internal(t.tb_frame.f_code.co_filename)]
    shown = [
        t
        for i, t in enumerate(kept)
        if not _dispatches(t)
        and not (
            i + 2 < len(kept)
            and _dispatches(kept[i + 1])
            and kept[i + 2].tb_frame.f_code is t.tb_frame.f_code  # the same call, entered again
        )
    ]
    rebuilt: TracebackType | None = None
    for t in reversed(shown):
        rebuilt = TracebackType(rebuilt, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return rebuilt


def without_detector_frames(exc: BaseException) -> None:
    """Gives ``exc`` and the exceptions chained to it their user_traceback."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = user_traceback(current.__traceback__)
        todo += [current.__cause__, current.__context__]


def traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """The frames of a traceback, innermost first, with the line each was at."""
    found: list[tuple[FrameType, int]] = []
    while tb is not None:
        found.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    found.reverse()
    return found


def locate_write(
    stack: Iterable[tuple[FrameType, int]], frames: UserFrames
) -> tuple[Site | None, Site | None, str | None]:
    """(mutation site, call site, module name) for a write happening at the top of ``stack``.

    If an ``inplace``-enabled module runs between the write and the innermost user frame
    (``self.act(x)`` with ``self.act = nn.ReLU(inplace=True)``), the mutation site is the
    module's construction line and the call site is the user line that called it.
    """
    import torch

    module: torch.nn.Module | None = None
    call_site: Site | None = None
    caller: FrameType | None = None
    library: Site | None = None  # the innermost installed package's line (see Site.via)
    for frame, line in stack:
        filename = frame.f_code.co_filename
        kind = frames.frame_kind(frame)
        if kind == _USER:
            call_site = Site(norm(filename), line, library)
            caller = frame
            break
        if kind == _LIBRARY and library is None:
            library = Site(norm(filename), line)
        if module is None:
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, torch.nn.Module) and getattr(candidate, "inplace", False):
                module = candidate
    if call_site is None and frames.fallback:
        call_site = library  # no line of the user's: the package's, rather than none
    if module is None:
        return call_site, None, None
    constructed = _construction_site(module)
    if constructed is None and caller is not None:
        constructed = _assignment_site(caller.f_locals.get("self"), module)
    if constructed is None:
        return call_site, None, type(module).__name__
    return constructed, call_site, type(module).__name__


def _assignment_site(owner: object, module: object) -> Site | None:
    """The ``self.act = ...`` line in ``owner``'s ``__init__`` (or a base class's) that made
    ``module`` its child: where the module was constructed, when that ran before tracing."""
    children = getattr(owner, "_modules", None)
    if not isinstance(children, dict):
        return None
    name = next((key for key, child in children.items() if child is module), None)
    if name is None or not name.isidentifier():
        return None
    assigned = re.compile(rf"\bself\.{re.escape(name)}\s*(:[^=]*)?=(?!=)")
    for cls in type(owner).__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        try:
            lines, first = inspect.getsourcelines(init)
            path = inspect.getsourcefile(init)
        except (OSError, TypeError):
            continue
        if path is None:
            continue
        for offset, text in enumerate(lines):
            if assigned.search(text):
                return Site(norm(path), first + offset)
    return None


def site_of(stack: Iterable[tuple[FrameType, int]], frames: UserFrames) -> Site | None:
    """The innermost user line of a stack (innermost first), as UserFrames.site."""
    library: Site | None = None
    for frame, line in stack:
        kind = frames.frame_kind(frame)
        if kind == _USER:
            return Site(norm(frame.f_code.co_filename), line, library)
        if kind == _LIBRARY and library is None:
            library = Site(norm(frame.f_code.co_filename), line)
    return library if frames.fallback else None


# --------------------------------------------------------------------------- the call


@functools.cache
def _mode_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    compiling = torch.compiler.is_compiling

    class _WriteWatcher(TorchFunctionMode):
        tracer: Tracer

        def __torch_function__(
            self,
            func: Callable[..., object],
            types: Collection[type],
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> object:
            # One frame less between the user's line and the op is measurably cheaper: anomaly
            # mode formats every frame on the stack for every node.
            kwargs = kwargs or {}
            if compiling():  # torch.compile traces this: the graph gets the call alone
                return func(*args, **kwargs)
            tracer = self.tracer
            outer = tracer.pending
            pending: list[Saved] = []
            tracer.pending = pending
            try:
                result = func(*args, **kwargs)
            except RuntimeError as exc:
                if SECOND_BACKWARD_MSG in error_text(exc):
                    tracer.second_backward(args)
                if tracer.on_call_error is not None:
                    tracer.on_call_error(func, args, kwargs, exc, sys._getframe(1))
                raise
            finally:
                tracer.pending = outer
                tracer.memo = None
            return tracer.after(func, args, kwargs, pending, result, sys._getframe(1))

    return _WriteWatcher


def make_mode(tracer: Tracer) -> Any:
    mode = _mode_class()()
    mode.tracer = tracer
    return mode


def tensors(value: object, depth: int = 0) -> Iterator[torch.Tensor]:
    import torch

    if depth > 8:
        return
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item, depth + 1)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from tensors(item, depth + 1)


def error_text(error: BaseException) -> str:
    """``str(error)``, which a user's exception class may make raise: then its class name."""
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - the user's __str__, anything at all
        return f"{type(error).__name__} (str() of it raised)"


def build_report(tracer: Tracer, error: BaseException | None, frames: UserFrames) -> dict[str, Any]:
    text = "" if error is None else error_text(error)
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
    primary: Bump | None = None

    used = [bump for bump in tracer.silent if bump.used]
    if error is None and used:
        # Torch raised nothing, but backward read a saved tensor after a `.data` write.
        report["status"] = "inplace-error"
        report["silent"] = True
        primary = used[0]
        _report_bump(report, related, primary)
    elif error is None:
        report["message"] = "forward and backward ran without autograd errors"
    elif isinstance(error, RuntimeError) and INPLACE_MSG in text:
        report["status"] = "inplace-error"
        failed = tracer.failed
        primary = failed.bump if failed is not None else None
        if failed is not None and primary is None:
            primary = Bump(failed.site, failed.op or "?", None, None, None)
        if primary is None:
            report["message"] = first_line
        else:
            _report_bump(report, related, primary)
    elif isinstance(error, RuntimeError) and LEAF_MSG in text:
        report["status"] = "leaf-error"
        mutation, call_site, module = locate_write(traceback_frames(error.__traceback__), frames)
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
    elif isinstance(error, RuntimeError) and SECOND_BACKWARD_MSG in text and tracer.reused:
        report["status"] = "retention-error"
        uses = [use for use in tracer.reused if use is not None]
        op, freed_by = tracer.retained[uses[0] if uses else None]
        if uses:
            report["mutation"] = uses[0].as_json()
        if freed_by is not None:
            related.append({**freed_by.as_json(), "message": "this backward freed the graph"})
        related += [
            {**use.as_json(), "message": f"{tracer.retained[use][0]} also builds on it"}
            for use in uses[1:]
        ]
        where = f" at {uses[0]}" if uses else ""
        by = f" at {freed_by}" if freed_by is not None else " of an earlier step"
        report["message"] = (
            f"{op}{where} builds on the graph that the backward{by} freed; the next backward "
            "raised 'Trying to backward through the graph a second time': detach() what is "
            "kept across steps, or pass retain_graph=True to the first backward"
        )
    else:
        report["status"] = "error"
        report["message"] = first_line
        raised = site_of(traceback_frames(error.__traceback__), frames)
        if raised is not None:
            related.append({**raised.as_json(), "message": "raised here"})

    seen: set[tuple[Site | None, Site | None]] = set()
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


def _report_bump(report: dict[str, Any], related: list[dict[str, Any]], bump: Bump) -> None:
    """Both ends of the write that broke (or silently changed) a saved tensor, in `report`."""
    report["saved_by"] = _saved_json(bump)
    if bump.mutation is not None:
        report["mutation"] = bump.mutation.as_json()
    report["message"] = explain(bump)
    if bump.call_site is not None:
        related.append({**bump.call_site.as_json(), "message": "called here"})


def _saved_json(bump: Bump) -> dict[str, object] | None:
    if bump.saved_site is None:
        return None
    return {**bump.saved_site.as_json(), "op": bump.op}


def explain(bump: Bump, name: Callable[[Site], str] = str) -> str:
    """The finding's message; ``name`` says where a line is (default: ``path:line``)."""
    saved = f" at {name(bump.saved_site)}" if bump.saved_site is not None else ""
    if bump.mutation is None:
        return (
            f"a tensor saved for backward by {bump.op}{saved} was modified in place "
            "(the writing call was not seen)"
        )
    via = f" ({bump.module}(inplace=True) constructed here)" if bump.module else ""
    if bump.silent == _DATA_WRITE:
        return (
            f"{name(bump.mutation)} writes through `.data` into a tensor that {bump.op} "
            f"saved{saved}: torch raises nothing and backward used the NEW values, so the "
            "gradients are silently wrong; write out of place, or into a `.detach().clone()`"
        )
    return (
        f"{name(bump.mutation)}{via} modifies in place a tensor that {bump.op} saved{saved}; "
        "backward needs its old value"
    )


# --------------------------------------------------------------------------- script
