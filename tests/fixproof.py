"""Runs a file's entry points under torch and records what they compute, to prove a fix keeps it.

A *runner* is one way to execute a file: its zero-argument entry function (`run()`, `main()`,
...) or a verify target (`inplace_lsp.verify.targets.find_target`: an nn.Module class built and
fed with synthesized arguments, a function called with `example_args()`), or inputs the test
supplies for a target verify cannot infer. Running one records, in order:

* the output of every nn.Module call (a global forward hook),
* every `torch.autograd.backward` / `torch.autograd.grad`: the roots' values, then the gradients
  of every leaf the graph reaches (parameters in registration order, other leaves in the
  order they are first seen), or the error it raised,
* for a target: its return value and the gradients of its parameters and inputs after a
  backward() of the sum of its outputs (not its arguments after the call: whether callers
  rely on a write into their argument is the fix's to decide from the callers in the file,
  and the entry function is such a caller),
* at the end: the value and gradient of every parameter, buffer and leaf seen, and the
  file's module-level tensors (what optimizer steps, EMA updates and caches left behind),

and which lines of the file ran. `compare` says whether two records agree: equal forward
values and gradients (`torch.allclose`) wherever the original ran; where the original failed
with an autograd error, everything up to the failure.

stdlib + torch (and `inplace_lsp.verify.targets`, which imports neither).
"""

from __future__ import annotations

import ast
import contextlib
import io
import random
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import torch

from inplace_lsp.verify import targets

try:
    from casefile import OUTCOME_MESSAGES, import_path
except ImportError:  # tests/ imported as a package
    from tests.casefile import OUTCOME_MESSAGES, import_path

ENTRY_NAMES = targets.ENTRY_NAMES
# The errors a fix exists to remove: an in-place write autograd rejects.
AUTOGRAD_ERRORS = tuple(text for _, texts in OUTCOME_MESSAGES for text in texts)
SEED = 0


@dataclass(frozen=True)
class Runner:
    """How to execute a file: `call(module)` runs it on the freshly imported module."""

    name: str
    call: Callable[[ModuleType, Recorder], None]


@dataclass
class Record:
    events: list[tuple[str, Any]] = field(default_factory=list)
    error: str | None = None  # "Type: message" of what the run raised
    lines: set[int] = field(default_factory=set)  # lines of the file that ran

    @property
    def autograd_error(self) -> bool:
        return self.error is not None and any(text in self.error for text in AUTOGRAD_ERRORS)


def _snapshot(value: Any, depth: int = 0) -> Any:
    """A detached copy of the tensors in `value` (nested containers kept), other values as a
    type name (their identity differs between two runs)."""
    if depth > 6:
        return "..."
    if isinstance(value, torch.Tensor):
        if value.layout is not torch.strided:
            return ("tensor", value.detach().to_dense().clone())
        return ("tensor", value.detach().clone())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [_snapshot(v, depth + 1) for v in value])
    if isinstance(value, Mapping):
        return ("dict", [(str(k), _snapshot(v, depth + 1)) for k, v in value.items()])
    if value is None or isinstance(value, (bool, int, float, str)):
        return ("value", value)
    return ("object", type(value).__name__)


def _tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if depth > 6:
        return
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item, depth + 1)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item, depth + 1)


class Recorder:
    """The global hooks of one run: what they saw lands in `record.events`."""

    def __init__(self) -> None:
        self.record = Record()
        # Strong references keep ids unique for the run's lifetime.
        self.leaves: dict[int, tuple[str, torch.Tensor]] = {}
        self.buffers: dict[int, tuple[str, torch.nn.Module, str]] = {}

    def event(self, kind: str, value: Any) -> None:
        self.record.events.append((kind, _snapshot(value)))

    def leaf(self, tensor: torch.Tensor, label: str) -> None:
        if id(tensor) not in self.leaves:
            self.leaves[id(tensor)] = (f"{label}#{len(self.leaves)}", tensor)

    def graph_leaves(self, roots: list[torch.Tensor]) -> list[torch.Tensor]:
        """The leaves a backward from `roots` reaches, each registered on first sight."""
        found: list[torch.Tensor] = []
        seen: set[int] = set()
        keep: list[Any] = []
        stack = [r.grad_fn for r in roots if r.grad_fn is not None]
        found += [r for r in roots if r.grad_fn is None and r.requires_grad]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            keep.append(node)
            variable = getattr(node, "variable", None)
            if isinstance(variable, torch.Tensor):
                found.append(variable)
            stack.extend(reversed([nxt for nxt, _ in node.next_functions]))
        for tensor in found:
            self.leaf(tensor, "leaf")
        return sorted(found, key=lambda t: list(self.leaves).index(id(t)))

    def grads(self, leaves: list[torch.Tensor]) -> list[tuple[str, Any]]:
        return [(self.leaves[id(t)][0], t.grad) for t in leaves]

    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        import torch.nn.modules.module as module_mod

        real_backward, real_grad = torch.autograd.backward, torch.autograd.grad

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            roots = list(_tensors(tensors))
            self.event("backward", roots)
            leaves = self.graph_leaves(roots)
            try:
                result = real_backward(tensors, *args, **kwargs)
            except BaseException as exc:
                self.event("raised", type(exc).__name__)
                raise
            self.event("grads", self.grads(leaves))
            return result

        def grad(outputs: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            self.event("grad-of", list(_tensors(outputs)))
            result = real_grad(outputs, inputs, *args, **kwargs)
            self.event("grad", result)
            return result

        def forward_hook(module: torch.nn.Module, args: Any, output: Any) -> None:
            self.event(f"forward {type(module).__name__}", output)

        def parameter_hook(module: torch.nn.Module, name: str, param: Any) -> None:
            if isinstance(param, torch.Tensor):
                self.leaf(param, f"{type(module).__name__}.{name}")

        def buffer_hook(module: torch.nn.Module, name: str, buffer: Any) -> None:
            if isinstance(buffer, torch.Tensor):
                self.buffers.setdefault(
                    id(buffer), (f"{type(module).__name__}.{name}", module, name)
                )

        handles = [
            module_mod.register_module_forward_hook(forward_hook),
            module_mod.register_module_parameter_registration_hook(parameter_hook),
            module_mod.register_module_buffer_registration_hook(buffer_hook),
        ]
        torch.autograd.backward, torch.autograd.grad = backward, grad  # type: ignore[assignment]
        try:
            yield
        finally:
            torch.autograd.backward, torch.autograd.grad = real_backward, real_grad
            for handle in handles:
                handle.remove()

    def finish(self, module: ModuleType) -> None:
        """What the run left behind: parameters, buffers, leaves, module-level tensors."""
        for label, tensor in self.leaves.values():
            self.event(f"final {label}", (tensor, tensor.grad))
        for label, owner, name in self.buffers.values():
            self.event(f"final buffer {label}", getattr(owner, name, None))
        for name, value in sorted(vars(module).items()):
            if isinstance(value, torch.Tensor):
                self.event(f"final global {name}", value)


# ---------------------------------------------------------------------- runners


def _materialize(spec: Any) -> Any:
    """The value of a `targets` value spec (see that module's docstring)."""
    if not isinstance(spec, Mapping):
        return spec
    if "tensor" in spec:
        shape = [int(n) for n in spec["shape"]]
        if spec["tensor"] == "randint":
            return torch.randint(0, int(spec["high"]), shape)
        dtype = torch.bool if spec.get("dtype") == "bool" else None
        if spec["tensor"] in ("zeros", "ones"):
            return getattr(torch, spec["tensor"])(shape, dtype=dtype)
        return torch.randn(shape)
    if "tuple" in spec:
        return tuple(_materialize(v) for v in spec["tuple"])
    if "list" in spec:
        return [_materialize(v) for v in spec["list"]]
    if "dict" in spec:
        return {k: _materialize(v) for k, v in spec["dict"].items()}
    return spec.get("value")


def _call_args(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return (), dict(value)
    return (value,), {}


def _hook_value(hook: Mapping[str, Any], owner: Any, module: ModuleType) -> Any:
    if hook.get("scope") == "module":
        return getattr(module, str(hook["name"]))()
    return getattr(owner, str(hook["name"]))()


def _resolve(module: ModuleType, qualname: str) -> Any:
    value: Any = module
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _reduce(output: Any) -> torch.Tensor | None:
    parts = [
        t.sum().real.float() if t.is_complex() else t.sum().float()
        for t in _tensors(output)
        if t.requires_grad and (t.is_floating_point() or t.is_complex())
    ]
    return sum(parts[1:], parts[0]) if parts else None


def _called(
    rec: Recorder,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    params: list[tuple[str, torch.Tensor]],
) -> None:
    """Call a target, record its result and arguments, and backpropagate its sum."""
    inputs = [t for t in _tensors((args, kwargs)) if t.is_floating_point() and t.is_leaf]
    if not params:  # nothing to train: let the gradient flow to the inputs instead
        for tensor in inputs:
            tensor.requires_grad_(True)
    output = fn(*args, **kwargs)
    rec.event("returned", output)
    loss = _reduce(output)
    if loss is not None and loss.grad_fn is not None:
        loss.backward()
        rec.event("parameter grads", [(name, p.grad) for name, p in params])
        rec.event("input grads", [t.grad for t in inputs])


def _entry_runner(name: str) -> Runner:
    def call(module: ModuleType, rec: Recorder) -> None:
        rec.event("returned", getattr(module, name)())

    return Runner(f"{name}()", call)


def _spec_runner(spec: Mapping[str, Any], candidate: int | None) -> Runner:
    construct: Mapping[str, Any] = spec.get("construct") or {}

    def construct_args(owner: Any, module: ModuleType) -> tuple[tuple[Any, ...], dict[str, Any]]:
        hook = construct.get("hook")
        if hook:
            return _call_args(_hook_value(hook, owner, module))
        args = tuple(_materialize(v) for v in construct.get("args") or ())
        return args, {k: _materialize(v) for k, v in (construct.get("kwargs") or {}).items()}

    if spec["kind"] == "function":

        def call_function(module: ModuleType, rec: Recorder) -> None:
            args, kwargs = construct_args(None, module)
            _called(rec, _resolve(module, spec["name"]), args, kwargs, [])

        return Runner(f"{spec['name']}(...)", call_function)

    inputs: Mapping[str, Any] = spec.get("inputs") or {}

    def call_module(module: ModuleType, rec: Recorder) -> None:
        cls = _resolve(module, spec["name"])
        args, kwargs = construct_args(cls, module)
        model = cls(*args, **kwargs)
        model.train()
        hook = inputs.get("hook")
        if hook:
            value = (
                getattr(module, hook["name"])()
                if hook.get("scope") == "module"
                else getattr(model, hook["name"])()
            )
            call_args, call_kwargs = _call_args(value)
        elif candidate is None:
            call_args, call_kwargs = (), {}
        else:
            chosen = inputs["candidates"][candidate]
            call_args = tuple(_materialize(v) for v in chosen.get("args") or ())
            call_kwargs = {k: _materialize(v) for k, v in (chosen.get("kwargs") or {}).items()}
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        _called(rec, model, call_args, call_kwargs, params)

    label = spec["name"] if candidate is None else f"{spec['name']}[inputs {candidate}]"
    return Runner(label, call_module)


def supplied_runner(
    label: str, build: Callable[[ModuleType], tuple[Callable[..., Any], tuple[Any, ...]]]
) -> Runner:
    """A runner the test supplies for a target verify cannot build: `build(module)` gives the
    callable (a module instance, a function) and its arguments, after the seed is set."""

    def call(module: ModuleType, rec: Recorder) -> None:
        fn, args = build(module)
        params = list(fn.named_parameters()) if isinstance(fn, torch.nn.Module) else []
        _called(rec, fn, args, {}, [(n, p) for n, p in params if p.requires_grad])

    return Runner(f"{label}(supplied)", call)


def candidate_runners(text: str) -> tuple[list[list[Runner]], list[str]]:
    """Every way to run the file that the source shows: the entry function, then each class and
    function verify can build a call for. A class comes with its input candidates as
    alternatives (the first whose original run works is used). Also the reasons verify gave
    for the targets it cannot run."""
    tree = ast.parse(text)
    groups: list[list[Runner]] = []
    reasons: list[str] = []
    defs = [s for s in tree.body if isinstance(s, (ast.ClassDef, ast.FunctionDef))]
    functions = {s.name: s for s in defs if isinstance(s, ast.FunctionDef)}
    entry = next(
        (
            n
            for n in ENTRY_NAMES
            if n in functions and not functions[n].args.args and not functions[n].args.kwonlyargs
        ),
        None,
    )
    if entry is not None:
        groups.append([_entry_runner(entry)])
    for node in defs:
        if node.name == entry or node.name.startswith(("example_", "_")):
            continue
        try:
            spec = targets.find_target(text, node.body[0].lineno)
        except targets.VerifyError as exc:
            reasons.append(f"{node.name}: {exc.reason}")
            continue
        if spec["name"] != node.name:
            continue
        if spec["kind"] == "function":
            groups.append([_spec_runner(spec, None)])
            continue
        inputs = spec.get("inputs") or {}
        candidates = inputs.get("candidates") or []
        if inputs.get("hook") or not candidates:
            groups.append([_spec_runner(spec, None)])
        else:
            groups.append([_spec_runner(spec, i) for i in range(min(len(candidates), 4))])
    return groups, reasons


# ---------------------------------------------------------------------- running


def _import(path: Path) -> ModuleType:
    return import_path(path, "_inplace_proof")


@contextlib.contextmanager
def _line_trace(filename: str, lines: set[int]) -> Iterator[None]:
    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == filename:
            lines.add(frame.f_lineno)
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        yield
    finally:
        sys.settrace(previous)


@contextlib.contextmanager
def _torch_state() -> Iterator[None]:
    """Global torch state the user's code may change, put back after the run."""
    anomaly, grad = torch.is_anomaly_enabled(), torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    try:
        yield
    finally:
        torch.autograd.set_detect_anomaly(anomaly)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)


def execute(text: str, runner: Runner, name: str = "proof.py") -> Record:
    """Import `text` as a fresh module and run `runner` on it, seeded, recording everything."""
    rec = Recorder()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        path.write_text(text, encoding="utf-8")
        filename = str(path)
        out = io.StringIO()
        with (
            _torch_state(),
            warnings.catch_warnings(),  # the user's code may warn (anomaly mode): not ours
            contextlib.redirect_stdout(out),
            rec.hooks(),
            _line_trace(filename, rec.record.lines),
        ):
            warnings.simplefilter("ignore")
            try:
                torch.manual_seed(SEED)
                random.seed(SEED)
                module = _import(path)
                torch.manual_seed(SEED)
                random.seed(SEED)
                runner.call(module, rec)
                rec.finish(module)
            except Exception as exc:  # the user's code: any error is a result to compare
                rec.record.error = f"{type(exc).__name__}: {exc}"
    return rec.record


# ---------------------------------------------------------------------- comparing


def _same(a: Any, b: Any, where: str) -> str | None:
    """None when two snapshots agree, else where and how they differ."""
    if isinstance(a, tuple) and len(a) == 2 and a and a[0] == "tensor":
        if not (isinstance(b, tuple) and len(b) == 2 and b[0] == "tensor"):
            return f"{where}: a tensor became {b!r:.60}"
        x, y = a[1], b[1]
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"{where}: {x.dtype}{tuple(x.shape)} became {y.dtype}{tuple(y.shape)}"
        if x.is_floating_point() or x.is_complex():
            if not torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                diff = (x - y).abs().nan_to_num().max().item()
                return f"{where}: values differ (max |diff| {diff:.3g})"
            return None
        return None if torch.equal(x, y) else f"{where}: values differ"
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2:
        if a[0] != b[0]:
            return f"{where}: {a[0]} became {b[0]}"
        if isinstance(a[1], list) and isinstance(b[1], list):
            if len(a[1]) != len(b[1]):
                return f"{where}: {len(a[1])} items became {len(b[1])}"
            for i, (x, y) in enumerate(zip(a[1], b[1], strict=True)):
                found = _same(x, y, f"{where}[{i}]")
                if found:
                    return found
            return None
    return None if a == b else f"{where}: {a!r:.60} became {b!r:.60}"


def compare(original: Record, fixed: Record) -> str | None:
    """None when the fixed run computed what the original did (up to the original's autograd
    error, if it had one), else the first difference."""
    events = original.events
    if original.error is not None:
        # Up to the failure: a backward that raised is compared by its roots only.
        raised = [i for i, (kind, _) in enumerate(events) if kind == "raised"]
        events = events[: raised[0]] if raised else events
    for i, (event, got) in enumerate(zip(events, fixed.events, strict=False)):
        if event[0] != got[0]:
            return f"event {i}: `{event[0]}` became `{got[0]}`"
        found = _same(event[1], got[1], f"event {i} ({event[0]})")
        if found:
            return found
    if original.error is None:
        if fixed.error is not None:
            return f"the fixed code raised {fixed.error}"
        if len(fixed.events) != len(events):
            return f"{len(events)} events became {len(fixed.events)}"
    elif len(fixed.events) < len(events):
        return f"the fixed code stopped earlier ({fixed.error})"
    return None


# ---------------------------------------------------------------------- proving fixes


@dataclass
class Proof:
    """What running showed about one fix (or fix-all) of one file."""

    label: str  # "IPL003 line 15 inplace-false" or "fix-all"
    safe: bool
    changed: set[int] = field(default_factory=set)  # lines of the original the fix rewrites
    ran: set[int] = field(default_factory=set)  # lines of the original that ran (either side)
    differences: list[str] = field(default_factory=list)  # "runner: difference"
    still_failing: list[str] = field(default_factory=list)  # runners still raising
    # Not reached alone (an earlier error of the same run stops it), but run within fix-all.
    via_fix_all: bool = False

    @property
    def covered(self) -> bool:
        return bool(self.changed & self.ran) or self.via_fix_all

    @property
    def proven(self) -> bool:
        return self.covered and not self.differences and not self.still_failing


@dataclass
class FileProof:
    path: Path
    runners: list[str] = field(default_factory=list)  # the runners used
    unrunnable: list[str] = field(default_factory=list)  # why targets could not run
    proofs: list[Proof] = field(default_factory=list)


def line_map(before: str, after: str) -> tuple[set[int], dict[int, set[int]]]:
    """The lines (1-based) of `before` that differ in `after`, and for each line of `after`
    the lines of `before` it stands for (itself where unchanged, the rewritten range
    otherwise)."""
    import difflib

    old, new = before.splitlines(), after.splitlines()
    changed: set[int] = set()
    mapping: dict[int, set[int]] = {}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(j2 - j1):
                mapping[j1 + k + 1] = {i1 + k + 1}
            continue
        # An insertion stands for the line it is inserted before.
        span = set(range(i1 + 1, max(i2, i1 + 1) + 1))
        changed |= span
        for j in range(j1 + 1, j2 + 1):
            mapping[j] = span
    return changed, mapping


def prove(
    label: str,
    safe: bool,
    text: str,
    fixed: str,
    runs: list[tuple[Runner, Record]],
    errors_left: bool,
) -> Proof:
    """Run the fixed text with every runner and compare with the original's records.

    Where the original failed with an autograd error, the fixed code must get through unless
    `errors_left` (the analysis still reports an error in it: a fix of one write of several)."""
    changed, mapping = line_map(text, fixed)
    proof = Proof(label, safe, changed)
    for runner, original in runs:
        record = execute(fixed, runner)
        proof.ran |= original.lines
        for line in record.lines:
            proof.ran |= mapping.get(line, set())
        difference = compare(original, record)
        if difference is not None:
            proof.differences.append(f"{runner.name}: {difference}")
        elif original.error is not None and record.error is not None and not errors_left:
            proof.still_failing.append(f"{runner.name}: {record.error:.200}")
    return proof


def usable_runs(
    text: str, groups: list[list[Runner]], unrunnable: list[str]
) -> list[tuple[Runner, Record]]:
    """The first alternative of each group whose original run works (or fails only with an
    autograd error), with that run's record."""
    runs: list[tuple[Runner, Record]] = []
    for group in groups:
        failures: list[str] = []
        for runner in group:
            record = execute(text, runner)
            if record.error is None or record.autograd_error:
                runs.append((runner, record))
                break
            failures.append(f"{runner.name}: {record.error:.160}")
        else:
            unrunnable.append(failures[0])
    return runs


def prove_file(path: Path, supplied: list[Runner] | None = None) -> FileProof:
    """Every quick fix of the file applied alone, and fix-all, each run and compared."""
    from inplace_lsp import fixes
    from inplace_lsp.analysis.engine import analyze
    from inplace_lsp.analysis.findings import Severity

    def has_errors(source: str) -> bool:
        return any(f.severity is Severity.ERROR for f in analyze(source))

    text = path.read_text(encoding="utf-8")
    result = FileProof(path)
    groups, result.unrunnable = candidate_runners(text)
    groups += [[runner] for runner in supplied or []]
    runs = usable_runs(text, groups, result.unrunnable)
    result.runners = [runner.name for runner, _ in runs]
    findings = analyze(text)
    done: dict[str, Proof] = {}
    for finding in findings:
        if finding.fix is None:
            continue
        edits = fixes.edits_for(text, finding)
        if not edits:
            continue
        fixed = fixes.apply_edits(text, edits)
        label = f"{finding.code} line {finding.line} {finding.fix.kind}"
        if fixed in done:  # the same edit offered by two findings: one proof, safe if any is
            done[fixed].safe |= finding.fix.safe
            continue
        done[fixed] = prove(label, finding.fix.safe, text, fixed, runs, has_errors(fixed))
    result.proofs = list(done.values())
    fixed_all = fixes.apply_safe_fixes(text, findings)
    if fixed_all != text:
        whole = prove("fix-all", True, text, fixed_all, runs, has_errors(fixed_all))
        for proof in result.proofs:
            # A fix the run never reaches alone because an earlier write of the same run
            # fails first (a second leaf update): proven when fix-all, which includes it,
            # runs its lines and is proven.
            if (
                proof.safe
                and not proof.covered
                and not proof.differences
                and whole.proven
                and proof.changed <= whole.changed
                and proof.changed & whole.ran
            ):
                proof.via_fix_all = True
        result.proofs.append(whole)
    return result
