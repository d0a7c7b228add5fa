"""The runtime detector: ``inplace_lsp.detect()`` names the line that wrote, in the user's run.

Imports only the standard library, the tracer (torch when entered) and the report's format
(``inplace_lsp.report``), so that ``import inplace_lsp`` costs a training script nothing.
The tracer is the one verify uses: saved-tensor hooks see what each op saves, a
``TorchFunctionMode`` sees every write. Anomaly mode is not used (it formats a stack for
every node of the graph, and names the op whose backward failed, never the write).

When backward fails with the in-place error, the ``RuntimeError`` it raises keeps torch's
message first and adds both ends: the writing line (or the ``inplace=True`` module's
constructor line and its call site), the op that saved the tensor and where, the tensor's
shape, dtype and device, and its version history. Warnings (``InplaceWarning``, and in the
report): writes through ``.data`` or a NumPy array into a saved tensor that backward then read
(torch raises nothing and the gradient is wrong), and with ``retention=True`` calls that build
on a graph that backward already freed (an accumulated loss keeps every step's graph alive; a
reused hidden state fails the next backward). When a backward does fail "through the graph a
second time", the error names the calls of its graph that built on the freed one, with or
without ``retention``.
"""

from __future__ import annotations

import contextlib
import datetime
import linecache
import os
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from inplace_lsp import report as _report  # the report's format (the server reads it)
from inplace_lsp.verify import tracer as _t

if TYPE_CHECKING:
    import torch

__all__ = ["Detector", "InplaceWarning", "detect", "rank_path"]

_MARK = "inplace-lsp detect:"  # starts the part of a message this module added

F = TypeVar("F", bound=Callable[..., Any])

# The detector of each thread, while one is active: a nested detect() (a decorated function
# called inside `inplace-lsp run`) joins it instead of tracing every op twice.
_active = threading.local()


class InplaceWarning(UserWarning):
    """A saved tensor changed where autograd cannot see it, or a graph is kept alive."""


def _rank() -> tuple[int | None, int | None]:
    """(rank, world size) under torchrun (or any launcher that sets RANK and WORLD_SIZE)."""
    try:
        world = int(os.environ["WORLD_SIZE"])
        rank = int(os.environ["RANK"])
    except (KeyError, ValueError):
        return None, None
    return (rank, world) if world > 1 else (None, None)


def rank_path(path: str | os.PathLike[str], rank: int | None) -> Path:
    """``last-run.json`` for one process, ``last-run-rank1.json`` for rank 1 of a job."""
    path = Path(path)
    if rank is None:
        return path
    return path.with_name(f"{path.stem}-rank{rank}{path.suffix}")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _source(site: _t.Site | None) -> str:
    if site is None:
        return ""
    return linecache.getline(site.path, site.line).strip()


def _where(site: _t.Site | None, **extra: object) -> dict[str, object] | None:
    if site is None:
        return None
    return {**site.as_json(), "source": _source(site), **extra}


def _short(site: _t.Site) -> str:
    """``path:line``, the path relative to the working directory when it is under it."""
    path = site.path
    with contextlib.suppress(ValueError):
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            path = relative
    return f"{path}:{site.line}"


def _via(site: _t.Site | None) -> str:
    """`` (via package/module.py:123)``: the installed package's line (a framework's) that the
    user's line went through to reach the op, when there is one."""
    if site is None or site.via is None:
        return ""
    parts = site.via.path.split(os.sep)
    starts = [i for i, part in enumerate(parts) if part in _t._INSTALLED]
    inside = parts[starts[-1] + 1 :] if starts else parts[-2:]
    return f" (via {'/'.join(inside)}:{site.via.line})"


def _tensor_json(tensor: torch.Tensor | None) -> dict[str, object] | None:
    if tensor is None:
        return None
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype), "device": str(tensor.device)}


def _tensor_text(tensor: torch.Tensor) -> str:
    return f"{tensor.dtype} {list(tensor.shape)} on {tensor.device}"


class Detector(contextlib.ContextDecorator):
    """``with Detector(): ...`` or ``@Detector()``: see ``detect``."""

    def __init__(
        self,
        *,
        silent: bool = True,
        leaf: bool = True,
        retention: bool = False,
        report: str | os.PathLike[str] | None = None,
        header: Mapping[str, object] | None = None,
    ) -> None:
        self.silent = silent
        self.leaf = leaf
        self.retention = retention
        self.rank, self.world_size = _rank()
        self.report = None if report is None else rank_path(report, self.rank)
        self.header: dict[str, object] = dict(header or {})
        self.report_error: str | None = None  # why the last write of the report failed
        # What a file is called in messages, where it has a name of its own (a notebook
        # cell's code: "Cell In[3]"); None: its path.
        self.names: Callable[[str], str | None] | None = None
        # What the report says of a notebook cell whose code a file is (``"cell"`` beside the
        # path of each place in it); None: not a cell.
        self.cells: Callable[[str], dict[str, object] | None] | None = None
        self.findings: list[dict[str, Any]] = []
        self._keys: dict[tuple[object, ...], dict[str, Any]] = {}
        self._tracer: _t.Tracer | None = None
        self._stack: contextlib.ExitStack | None = None
        self._joined: Detector | None = None
        self._pid = os.getpid()
        self._seen_silent = 0
        self._seen_numpy = 0
        self._seen_retained = 0
        self._started = _now()

    # entering and leaving -------------------------------------------------------------
    def __enter__(self) -> Detector:
        outer: Detector | None = getattr(_active, "detector", None)
        self._joined = outer
        if outer is not None:
            return self
        import torch

        frames = _t.UserFrames(None)
        _t.torch_keeps_backward_suffix()  # before the hooks, which turn torch's own check off
        tracer = _t.Tracer(frames, history=True, numpy=self.silent, leaves=self.leaf)
        tracer.on_error = self._version_failure
        tracer.on_call_error = self._call_failure
        tracer.on_backward = self._after_backward
        with contextlib.ExitStack() as stack:  # what did go in comes out if the rest fails
            stack.enter_context(_t.record_construction(frames))
            hooks = torch.autograd.graph.saved_tensors_hooks(tracer.pack, tracer.unpack)
            stack.enter_context(hooks)
            stack.enter_context(_t.warnings_at_callers())
            stack.enter_context(_t.make_mode(tracer))
            self._stack = stack.pop_all()
        self._tracer = tracer
        _active.detector = self
        return self

    @property
    def backward_calls(self) -> int:
        """How many backward() / autograd.grad() calls the detector saw return."""
        owner = self._joined or self
        return owner._tracer.backward_calls if owner._tracer is not None else 0

    def __exit__(self, *exc: object) -> None:
        if self._joined is not None:
            if self.report is not None:
                self.write_report()
            return
        if self._stack is not None:
            _active.detector = None
            self._stack.close()
            self._stack = None
        self._after_backward()
        _t.prune_construction_sites()
        if self.report is not None:
            self.write_report()

    def _called(self, site: _t.Site) -> str | None:
        """What ``names`` calls a line's file, with the line (``Cell In[3], line 5`` for a
        notebook cell's code); None for a file without a name of its own."""
        named = self.names(site.path) if self.names is not None else None
        return f"{named}, line {site.line}" if named else None

    def _short(self, site: _t.Site) -> str:
        """Where a line is, in the text printed: ``path:line`` relative to the working
        directory, or its name (``_called``)."""
        return self._called(site) or _short(site)

    def _named(self, site: _t.Site) -> str:
        """Where a line is, in a finding's message: ``path:line``, or its name."""
        return self._called(site) or str(site)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [f for f in self._all_findings() if f["severity"] == "error"]

    def _all_findings(self) -> list[dict[str, Any]]:
        return self._joined.findings if self._joined is not None else self.findings

    # findings -------------------------------------------------------------------------
    @property
    def _prefix(self) -> str:
        """What starts each message under torchrun: the rank."""
        return f"[rank {self.rank}] " if self.rank is not None else ""

    def _add(self, key: tuple[object, ...], finding: dict[str, Any]) -> bool:
        """Keep ``finding`` (counted once per key); True when it is new."""
        known = self._keys.get(key)
        if known is not None:
            known["count"] += 1
            return False
        finding["message"] = self._prefix + finding["message"]
        finding["count"] = 1
        self._keys[key] = finding
        self.findings.append(finding)
        return True

    def _warn(self, finding: dict[str, Any], site: _t.Site | None) -> None:
        if site is None:
            warnings.warn(finding["message"], InplaceWarning, stacklevel=2)
        else:
            warnings.warn_explicit(finding["message"], InplaceWarning, site.path, site.line)

    def _version_failure(self, record: _t.Saved, message: str) -> str:
        """Backward read a saved tensor that was written after the save: the error's text."""
        bump = record.bump
        mutation = bump.mutation if bump is not None else None
        call_site = bump.call_site if bump is not None else None
        module = bump.module if bump is not None else None
        op = record.op or (bump.op if bump is not None else "?")
        versions = [_t.Write(record.version, "saved", op, record.site), *(record.writes or ())]
        finding: dict[str, Any] = {
            "severity": "error",
            "kind": "inplace-error",
            "message": (
                _t.explain(bump, self._named)
                if bump is not None
                else f"a tensor saved for backward by {op} was modified in place "
                "(the writing call was not seen)"
            ),
            "mutation": _where(mutation),
            "saved_by": _where(record.site, op=op),
            "call_site": _where(call_site),
            "related": [],
            "tensor": _tensor_json(record.tensor),
            "versions": [write.as_json() for write in versions],
        }
        lines = [f"{_MARK} the tensor backward needed was changed in place after {op} saved it"]
        if mutation is None:
            lines.append(
                "  written at  (not seen: outside the detector, in another thread or in C++)"
            )
        elif module is not None:
            built = "constructed here" if call_site is not None else "(constructed earlier)"
            lines += [
                f"  written at  {self._short(mutation)}, in {module}(inplace=True) {built}"
                f"{_via(mutation)}",
                f"      {_source(mutation)}",
            ]
        else:
            last = record.writes[0].op if record.writes else "?"
            lines += [
                f"  written at  {self._short(mutation)} by {last}{_via(mutation)}",
                f"      {_source(mutation)}",
            ]
        if call_site is not None:
            lines += [
                f"  called at   {self._short(call_site)}{_via(call_site)}",
                f"      {_source(call_site)}",
            ]
        if record.site is not None:
            lines += [
                f"  saved by    {op} at {self._short(record.site)}{_via(record.site)}",
                f"      {_source(record.site)}",
            ]
        else:
            lines.append(f"  saved by    {op}")
        lines.append(f"  tensor      {_tensor_text(record.tensor)}")
        # "at line N" while every version is in one file; in two files each names its own.
        files = {w.site.path for w in versions if w.site is not None}
        history = ", ".join(
            f"v{w.version} {w.event} by {w.op}"
            + (
                ""
                if w.site is None
                else f" at line {w.site.line}"
                if len(files) == 1
                else f" at {self._short(w.site)}"
            )
            for w in versions
        )
        more = " (later writes not kept)" if len(versions) > _t.HISTORY_LIMIT else ""
        lines.append(f"  versions    {history}{more}")
        finding["detail"] = self._prefix + "\n".join(lines)
        if self._add(("inplace-error", mutation, record.site), finding):
            self._written()
        return message + "\n\n" + finding["detail"]

    def _call_failure(
        self,
        func: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: BaseException,
        frame: FrameType | None,
    ) -> None:
        """A torch call raised: add what we know to the leaf and second-backward errors."""
        text = _t.error_text(exc)
        if _MARK in text:
            return
        tracer = self._tracer
        assert tracer is not None
        if self.leaf and _t.LEAF_MSG in text:
            extra = self._leaf_failure(args, kwargs, frame)
        elif _t.SECOND_BACKWARD_MSG in text and tracer.reused:
            extra = self._second_backward(tracer.reused)
        else:
            return
        if extra and len(exc.args) == 1 and isinstance(exc.args[0], str):
            exc.args = (f"{exc.args[0]}\n\n{extra}",)

    def _leaf_failure(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], frame: FrameType | None
    ) -> str:
        import torch

        tracer = self._tracer
        assert tracer is not None
        mutation, call_site, module = _t.locate_write(_t.live_frames(frame), tracer.frames)
        written = _t.written_tensors(args, kwargs)
        tensor = written[0] if written else None
        leaf = tensor
        if tensor is not None and not tensor.is_leaf and tensor._base is not None:
            leaf = tensor._base
        created = tracer.leaf_site(leaf) if leaf is not None else None
        owner = _parameter_owner(leaf) if isinstance(leaf, torch.nn.Parameter) else None
        finding: dict[str, Any] = {
            "severity": "error",
            "kind": "leaf-error",
            "message": (
                "in-place write on a leaf tensor that requires grad"
                + (f" at {mutation}" if mutation is not None else "")
                + (f" (inside {module}(inplace=True))" if module else "")
                + ": wrap the update in torch.no_grad(), or write out of place"
            ),
            "mutation": _where(mutation),
            "saved_by": None,
            "call_site": _where(call_site),
            "related": [],
            "tensor": _tensor_json(tensor),
            "versions": [],
        }
        if created is not None:
            finding["related"].append({**(_where(created) or {}), "message": "created here"})
        if owner is not None:
            finding["related"].append({**(_where(owner[1]) or {}), "message": owner[0]})
        lines = [f"{_MARK} an in-place write on a tensor that requires grad and has no history"]
        if mutation is not None:
            via = f", in {module}(inplace=True) constructed here" if module else ""
            lines += [
                f"  written at  {self._short(mutation)}{via}{_via(mutation)}",
                f"      {_source(mutation)}",
            ]
        if call_site is not None:
            lines += [
                f"  called at   {self._short(call_site)}{_via(call_site)}",
                f"      {_source(call_site)}",
            ]
        if tensor is not None:
            view = " (a view of the leaf)" if leaf is not tensor else ""
            lines.append(f"  tensor      {_tensor_text(tensor)}{view}")
        if created is not None:
            lines += [
                f"  created at  {self._short(created)}{_via(created)}",
                f"      {_source(created)}",
            ]
        if owner is not None:
            lines += [f"  {owner[0]} at {self._short(owner[1])}", f"      {_source(owner[1])}"]
        lines.append(
            "  fix         an update of a parameter goes in `with torch.no_grad():`; a value "
            "computed from it is written out of place (`x = x + 1`)"
        )
        finding["detail"] = self._prefix + "\n".join(lines)
        if self._add(("leaf-error", mutation), finding):
            self._written()
        return finding["detail"]

    def _second_backward(self, reused: list[_t.Site | None]) -> str:
        """The text added to "backward through the graph a second time": the calls of the
        failing graph that built on a freed one (each an error finding)."""
        tracer = self._tracer
        assert tracer is not None
        lines = [f"{_MARK} calls that built on a graph that backward had freed:"]
        for use in reused[:5]:
            op, freed_by = tracer.retained[use]
            self._retained(use, op, freed_by, failed=True)
            if use is None:
                continue
            by = f" (freed by the backward at {self._short(freed_by)})" if freed_by else ""
            lines += [f"  {op} at {self._short(use)}{by}", f"      {_source(use)}"]
        lines.append(
            "  fix         detach() a tensor kept across steps (an RNN's hidden state), or pass "
            "retain_graph=True to the first backward"
        )
        return self._prefix + "\n".join(lines)

    def _after_backward(self) -> None:
        """Warnings that backward made certain: silent writes it read, graphs kept alive."""
        tracer = self._tracer
        if tracer is None:
            return
        changed = False
        used = [bump for bump in tracer.silent if bump.used]
        for bump in used[self._seen_silent :]:
            changed |= self._silent_write(bump)
        self._seen_silent = len(used)
        for record in tracer.numpy_changed[self._seen_numpy :]:
            changed |= self._numpy_write(record)
        self._seen_numpy = len(tracer.numpy_changed)
        if self.retention:
            retained = list(tracer.retained.items())
            for use, (op, freed_by) in retained[self._seen_retained :]:
                changed |= self._retained(use, op, freed_by)
            self._seen_retained = len(retained)
        if changed:
            self._written()

    def _silent_write(self, bump: _t.Bump) -> bool:
        finding: dict[str, Any] = {
            "severity": "warning",
            "kind": "silent-write",
            "message": _t.explain(bump, self._named),
            "mutation": _where(bump.mutation),
            "saved_by": _where(bump.saved_site, op=bump.op),
            "call_site": _where(bump.call_site),
            "related": [],
            "tensor": None,
            "versions": [],
        }
        new = self._add(("silent-write", bump.mutation, bump.saved_site), finding)
        if new:
            self._warn(finding, bump.mutation)
        return new

    def _numpy_write(self, record: _t.Saved) -> bool:
        tracer = self._tracer
        assert tracer is not None
        shared = tracer.numpy_site(record)
        saved = f" at {record.site}" if record.site is not None else ""
        via = f" (shared at {shared})" if shared is not None else ""
        finding: dict[str, Any] = {
            "severity": "warning",
            "kind": "silent-write",
            "message": (
                f"a write through a NumPy array{via} changed a tensor that {record.op} saved"
                f"{saved}: torch raises nothing and backward used the NEW values, so the "
                "gradients are silently wrong; write into a copy (`.numpy().copy()`)"
            ),
            "mutation": _where(shared),
            "saved_by": _where(record.site, op=record.op or "?"),
            "call_site": None,
            "related": [],
            "tensor": _tensor_json(record.tensor),
            "versions": [],
        }
        new = self._add(("numpy-write", shared, record.site), finding)
        if new:
            self._warn(finding, shared if shared is not None else record.site)
        return new

    def _retained(
        self, use: _t.Site | None, op: str, freed_by: _t.Site | None, *, failed: bool = False
    ) -> bool:
        """A call that built on a graph backward had freed: a warning (``retention``), or an
        error where a backward through it failed (``failed``)."""
        by = f" at {freed_by}" if freed_by is not None else ""
        if failed:
            advice = (
                "a backward through it raised 'Trying to backward through the graph a second "
                "time'; detach() a tensor kept across steps, or retain_graph=True"
            )
        elif op in ("__iadd__", "add_", "__add__", "__radd__", "add"):
            advice = (
                "an accumulator that requires grad keeps every step's graph in memory; "
                "accumulate `loss.item()` or `loss.detach()`"
            )
        else:
            advice = (
                "a backward through it raises 'Trying to backward through the graph a second "
                "time'; detach() a tensor kept across steps, or retain_graph=True"
            )
        finding: dict[str, Any] = {
            "severity": "error" if failed else "warning",
            "kind": "graph-retention",
            "message": f"{op} uses a tensor of the graph that the backward{by} freed: {advice}",
            "mutation": _where(use),
            "saved_by": None,
            "call_site": None,
            "related": (
                [{**(_where(freed_by) or {}), "message": "that backward"}] if freed_by else []
            ),
            "tensor": None,
            "versions": [],
        }
        known = self._keys.get(("graph-retention", use))
        if known is not None:  # each use once: a warning, or the error it turned into
            if failed:
                known.update(severity="error", message=self._prefix + finding["message"])
            return False
        new = self._add(("graph-retention", use), finding)
        if new and not failed:
            self._warn(finding, use)
        return new

    # the report -----------------------------------------------------------------------
    def report_data(self, **header: object) -> dict[str, Any]:
        """The JSON report: the run's facts (``header`` adds some), then the findings."""
        run_id = os.environ.get("TORCHELASTIC_RUN_ID") or self.header.get("run_id")
        if not run_id:
            run_id = self.header["run_id"] = uuid.uuid4().hex
        data: dict[str, Any] = {
            "tool": _report.TOOL,
            "format": _report.FORMAT,
            "run_id": run_id,
            "rank": self.rank,
            "world_size": self.world_size,
            "pid": self._pid,
            "command": list(sys.argv),
            "cwd": os.getcwd(),
            "started": self._started,
            "finished": None,
            "exit_code": None,
        }
        data.update(self.header)
        data.update(header)
        data["findings"] = self._all_findings()
        if self.cells is not None:
            data["findings"] = [self._with_cells(finding) for finding in data["findings"]]
        return data

    def _with_cells(self, finding: dict[str, Any]) -> dict[str, Any]:
        """``finding`` with ``"cell"`` beside each place that is in a notebook cell's code."""
        assert self.cells is not None
        cells = self.cells

        def placed(where: object) -> object:
            if isinstance(where, dict) and isinstance(where.get("path"), str):
                cell = cells(where["path"])
                if cell is not None:
                    return {**where, "cell": cell}
            return where

        copy = {key: placed(value) for key, value in finding.items()}
        if isinstance(finding.get("related"), list):
            copy["related"] = [placed(item) for item in finding["related"]]
        return copy

    def write_report(self, **header: object) -> None:
        """Write the report (atomically) to ``report``; never from a forked child."""
        if self.report is None or os.getpid() != self._pid:
            return
        path = self.report
        try:
            _report.write(path, self.report_data(**header))
        except OSError as exc:
            if self.report_error is None:  # said once, not at every finding
                print(f"inplace-lsp: cannot write the report {path}: {exc}", file=sys.stderr)
            self.report_error = str(exc)
        else:
            self.report_error = None

    def finish(self, exit_code: int | None) -> None:
        """The run ended with ``exit_code``: the report's last version."""
        self.write_report(finished=_now(), exit_code=exit_code)

    def _written(self) -> None:
        """A finding is new: the report says so at once (a long run may go on for hours)."""
        if self.report is not None and self._stack is not None:
            self.write_report()


def _parameter_owner(parameter: torch.nn.Parameter) -> tuple[str, _t.Site] | None:
    """("parameter `weight` of Linear constructed", its line) for a module's parameter."""
    for module, site in _t.constructed_modules():
        for name, value in module._parameters.items():
            if value is parameter:
                return f"parameter `{name}` of {type(module).__name__} constructed", site
    return None


@overload
def detect(func: F, /) -> F: ...


@overload
def detect(
    *,
    silent: bool = True,
    leaf: bool = True,
    retention: bool = False,
    report: str | os.PathLike[str] | None = None,
) -> Detector: ...


def detect(
    func: Callable[..., Any] | None = None,
    /,
    *,
    silent: bool = True,
    leaf: bool = True,
    retention: bool = False,
    report: str | os.PathLike[str] | None = None,
) -> Any:
    """Watch autograd in this thread; on the in-place error, name the line that wrote.

    A context manager (``with inplace_lsp.detect(): train()``) and a decorator (``@detect``,
    ``@detect(report="run.json")``). Options: ``silent`` also warns (``InplaceWarning``) about
    writes through ``.data`` or a NumPy array into a saved tensor that backward then read;
    ``leaf`` adds the write line and the tensor's creation line to torch's error for an
    in-place write on a leaf that requires grad; ``retention`` warns about calls that build on
    a graph backward already freed; ``report`` writes the findings as JSON there (under
    torchrun one file per rank: ``name-rank1.json``). Nothing here synchronises a CUDA device.
    """
    detector = Detector(silent=silent, leaf=leaf, retention=retention, report=report)
    if func is not None:
        return detector(func)
    return detector
