"""Decide what `verify` runs: the target at a line, how to construct it and what to feed it.

Pure: reads the source with ``ast`` (imports and classes through
``inplace_lsp.analysis.model``, constant expressions through ``inplace_lsp.analysis.constants``,
whose ``Scope`` ``_Scope`` extends with ``self.<attr>``, tensors and layer constructor calls)
and imports neither torch nor pygls. The product is a JSON-able spec that ``harness.run_spec``
executes in the user's interpreter:

* ``kind`` "module" (an ``nn.Module`` subclass) or "function" (a top-level function);
* ``construct``: a user hook (``example_args()``), literal arguments (defaults, a call of the
  class found in the file, values the caller supplies) for the constructor or the function;
* ``inputs``: a user hook (``example_inputs()``) or candidate input sets synthesized from the
  first layer that consumes each ``forward`` parameter (Linear, ConvNd, Embedding, RNNs,
  LayerNorm, MultiheadAttention, BatchNorm, Sequential, local module classes, ...). The
  harness tries the candidates in order and keeps the first whose forward runs.

Value specs: ``{"tensor": "randn"|"randint"|"zeros"|"ones", "shape": [...], "high": n,
"dtype": "bool"}``, ``{"value": literal}``, ``{"tuple": [...]}``, ``{"list": [...]}``,
``{"dict": {...}}``.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from inplace_lsp.analysis import model as model_mod
from inplace_lsp.analysis.constants import BINARY_OPS, NotConstant, Scope, evaluate
from inplace_lsp.analysis.frameworks import stub_model
from inplace_lsp.analysis.lines import line_count, split_lines
from inplace_lsp.analysis.model import (
    ClassInfo,
    ModuleModel,
    calls_backward,
    looks_like_module,
)
from inplace_lsp.verify import walk
from inplace_lsp.verify.parsed import Parsed, parse

__all__ = ["VerifyError", "find_target", "SPEC_VERSION"]

SPEC_VERSION = 1
BATCH = 2
SEQ = 8
MAX_COMBOS = 8
# Spatial sizes tried, in order, for convolution inputs (a Linear after the convolutions often
# fixes one size: 32 for CIFAR nets, 28 for MNIST nets, 224 for ImageNet nets).
SPATIAL: dict[int, tuple[int, ...]] = {
    1: (32, 64, 128, 16),
    2: (32, 28, 64, 224, 16),
    3: (16, 8, 32),
}
INPUT_HOOK = "example_inputs"
ARGS_HOOK = "example_args"
# Entry points preferred when no line is given: the file's own training / demo function.
ENTRY_NAMES = ("run", "main", "train", "train_step", "step", "demo")

Spec = dict[str, Any]


class VerifyError(Exception):
    """Verify cannot run this target; the message says what is missing and how to provide it."""

    def __str__(self) -> str:
        return f"VerifyError: {self.args[0]}" if self.args else "VerifyError"

    @property
    def reason(self) -> str:
        return str(self.args[0]) if self.args else ""


# --------------------------------------------------------------------------- value specs


def randn(*shape: int) -> Spec:
    return {"tensor": "randn", "shape": list(shape)}


def randint(high: int, *shape: int) -> Spec:
    return {"tensor": "randint", "high": high, "shape": list(shape)}


def literal_spec(value: object) -> Spec:
    """The value spec of a Python literal (numbers, strings, None, tuples, lists, dicts)."""
    if isinstance(value, tuple):
        return {"tuple": [literal_spec(v) for v in value]}
    if isinstance(value, list):
        return {"list": [literal_spec(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): literal_spec(v) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise NotConstant(f"{type(value).__name__} is not a literal")


def describe_value(spec: Spec) -> str:
    """Python source that builds the value a spec describes (for messages)."""
    if "tensor" in spec:
        shape = ", ".join(str(n) for n in spec["shape"])
        if spec["tensor"] == "randint":
            comma = "," if len(spec["shape"]) == 1 else ""
            return f"torch.randint(0, {spec['high']}, ({shape}{comma}))"
        dtype = ", dtype=torch.bool" if spec.get("dtype") == "bool" else ""
        return f"torch.{spec['tensor']}({shape}{dtype})"
    if "tuple" in spec:
        items = [describe_value(v) for v in spec["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if "list" in spec:
        return "[" + ", ".join(describe_value(v) for v in spec["list"]) + "]"
    if "dict" in spec:
        return "{" + ", ".join(f"{k!r}: {describe_value(v)}" for k, v in spec["dict"].items()) + "}"
    return repr(spec.get("value"))


# --------------------------------------------------------------------------- evaluation


@dataclass
class _Tensor:
    """A tensor built in __init__ (``torch.randn(a, b)``, ``nn.Parameter(...)``): its shape."""

    shape: tuple[int, ...]


@dataclass
class LayerRef:
    """A module constructor call seen in __init__ (``nn.Linear(dim, 4 * dim)``)."""

    qual: str | None  # "torch.nn.Linear", a local class name, "timm.create_model", or None
    call: ast.Call
    scope: _Scope
    children: list[Any] | None = None  # Sequential / ModuleList contents (LayerRef or unknown)

    @property
    def kind(self) -> str:
        """The torch.nn class name (``Linear``) or the qualified name for anything else."""
        qual = self.qual or ast.unparse(self.call.func)
        if qual.startswith("torch.nn."):
            return qual.rsplit(".", 1)[-1]
        return qual

    def text(self) -> str:
        source = ast.unparse(self.call)
        return source if len(source) <= 60 else source[:57] + "..."


_TENSOR_MAKERS = frozenset(
    {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "normal", "arange", "eye"}
)
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


@dataclass
class _Scope(Scope):
    """Names visible while running ``__init__`` symbolically: locals, ``self`` attributes,
    module constants; on top of the generic constants, tensors (``_Tensor``) and constructor
    calls (``LayerRef``), module-level helpers run symbolically."""

    model: ModuleModel
    names: dict[str, Any]
    attrs: dict[str, Any] | None = None  # self.<attr> values (shared while __init__ runs)
    consts: dict[str, Any] = field(default_factory=dict)  # module-level constants
    depth: int = 0  # helper functions being run symbolically

    def snapshot(self) -> _Scope:
        return _Scope(self.model, dict(self.names), self.attrs, self.consts, self.depth)

    def lookup(self, name: str) -> Any:
        if name in self.names:
            value = self.names[name]
        elif name in self.consts:
            value = self.consts[name]
        elif name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        else:
            raise NotConstant(f"`{name}` is not a constant")
        if isinstance(value, NotConstant):
            raise value
        return value

    def qualify(self, node: ast.expr) -> str | None:
        return self.model.qualify(node)

    def attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == "self" and self.attrs is not None:
            if node.attr not in self.attrs:
                raise NotConstant(f"`self.{node.attr}` is not known")
            value = self.attrs[node.attr]
            if isinstance(value, NotConstant):
                raise value
            return value
        return super().attribute(node)

    def member(self, value: Any, node: ast.Attribute) -> Any:
        if isinstance(value, _Tensor) and node.attr == "shape":
            return value.shape
        if isinstance(value, Mapping) and node.attr in value:
            return value[node.attr]
        return super().member(value, node)

    def binary(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        if isinstance(left, _Tensor) or isinstance(right, _Tensor):
            # torch.randn(d, r) / d ** 0.5: scaling keeps the shape
            tensors = [v for v in (left, right) if isinstance(v, _Tensor)]
            others = [v for v in (left, right) if not isinstance(v, _Tensor)]
            if all(isinstance(v, (int, float)) for v in others):
                return tensors[0]
            if len(tensors) == 2 and tensors[0].shape == tensors[1].shape:
                return tensors[0]
            raise NotConstant(ast.unparse(node))
        return super().binary(node, left, right)

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> Any:
        # [Block(dim) for _ in range(depth)]: one element is enough to know the layer.
        gen = node.generators[0]
        first = next(iter(evaluate(gen.iter, self)), _NO_ITEM)
        if first is _NO_ITEM:
            return []
        inner = self.snapshot()
        _bind_target(gen.target, first, inner)
        return [evaluate(node.elt, inner)]

    def call(self, node: ast.Call) -> Any:
        """Tensor makers, ``nn.Parameter``, ``OrderedDict``, local helpers, and constructor
        calls (``LayerRef``) for the rest."""
        func = node.func
        qual = self.model.qualify(func)
        if qual in _PARAMETER and node.args:
            return evaluate(node.args[0], self)
        if (
            qual is not None
            and qual.startswith("torch.")
            and qual.rsplit(".", 1)[-1] in _TENSOR_MAKERS
        ):
            return _Tensor(_tensor_shape(qual.rsplit(".", 1)[-1], node, self))
        if isinstance(func, ast.Attribute) and func.attr in ("clone", "detach", "float", "t"):
            base = evaluate(func.value, self)
            if isinstance(base, _Tensor):
                return _Tensor(base.shape[::-1]) if func.attr == "t" else base
        if qual in ("collections.OrderedDict", "OrderedDict", "dict") and node.args:
            pairs = evaluate(node.args[0], self)
            return dict(pairs)
        if isinstance(func, ast.Name) and qual in self.model.functions:
            return _call_local_function(self.model.functions[func.id], node, self)
        if qual is None and isinstance(func, ast.Attribute):
            # self.make_layer(...) or config.something(): a module we cannot see into.
            return LayerRef(None, node, self.snapshot())
        ref = LayerRef(qual, node, self.snapshot())
        if ref.kind in ("Sequential", "ModuleList", "ModuleDict"):
            ref.children = _container_children(ref, self)
        return ref


class _Returned(Exception):
    """Control flow: a ``return`` while running a function body symbolically."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


def _call_local_function(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call, scope: _Scope
) -> Any:
    """Run a module-level helper (``def conv3x3(i, o): return nn.Conv2d(...)``) symbolically."""
    if scope.depth > 8:
        raise NotConstant(f"{fn.name}() nests too deeply")
    args, kwargs = _evaluate_args(node, scope)
    inner = _Scope(scope.model, {}, None, scope.consts, scope.depth + 1)
    inner.names.update(_bind_call(fn, args, kwargs, inner, skip_self=False))
    try:
        _run_body(fn.body, inner, scope.depth + 1)
    except _Returned as returned:
        if isinstance(returned.value, NotConstant):
            raise returned.value from None
        return returned.value
    raise NotConstant(f"{fn.name}() returns nothing verify can follow")


def _tensor_shape(maker: str, node: ast.Call, scope: _Scope) -> tuple[int, ...]:
    args = [a for a in node.args]
    if maker in ("full",):
        args = args[:1]
    elif maker == "randint":
        args = args[-1:] if len(args) >= 2 else []
        for kw in node.keywords:
            if kw.arg == "size":
                args = [kw.value]
    elif maker == "arange":
        values = [evaluate(a, scope) for a in args]
        return (len(range(*[int(v) for v in values])),)
    elif maker == "eye":
        size = int(evaluate(args[0], scope))
        return (size, size)
    elif maker == "normal":
        for kw in node.keywords:
            if kw.arg == "size":
                args = [kw.value]
    for kw in node.keywords:
        if kw.arg == "size":
            args = [kw.value]
    dims: list[int] = []
    for arg in args:
        value = evaluate(arg, scope)
        if isinstance(value, (tuple, list)):
            dims.extend(int(v) for v in value)
        elif isinstance(value, int) and not isinstance(value, bool):
            dims.append(value)
        else:
            raise NotConstant(ast.unparse(node))
    return tuple(dims)


def _container_children(ref: LayerRef, scope: _Scope) -> list[Any]:
    """The modules a Sequential / ModuleList / ModuleDict is built from, in order."""
    values: list[Any] = []
    for arg in ref.call.args:
        try:
            if isinstance(arg, ast.Starred):
                values.extend(evaluate(arg.value, scope))
            else:
                value = evaluate(arg, scope)
                if ref.kind in ("ModuleList", "ModuleDict") or isinstance(value, dict):
                    values.extend(value.values() if isinstance(value, dict) else value)
                else:
                    values.append(value)
        except NotConstant as exc:
            values.append(exc)
        except TypeError:
            values.append(NotConstant(ast.unparse(arg)))
    return values


def _bind_target(target: ast.expr, value: Any, scope: _Scope) -> None:
    """Assign ``value`` to a Name / Tuple target in ``scope.names`` (unknown parts stay unknown)."""
    if isinstance(target, ast.Name):
        scope.names[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        try:
            items = list(value) if not isinstance(value, NotConstant) else None
        except TypeError:
            items = None
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Starred):
                elt = elt.value
            item = items[i] if items is not None and i < len(items) else NotConstant("unpacking")
            _bind_target(elt, item, scope)


# --------------------------------------------------------------------------- __init__


@dataclass
class _ClassCtx:
    """A module class with its constructor arguments bound: what ``self.<attr>`` holds.

    For a top-level function target there is no class (``info`` None) and ``names`` holds
    what its bare names are bound to: its own locals (``w = torch.zeros(3, 5)``,
    ``lin = nn.Linear(5, 2)``) over the module's (``net = Net()``)."""

    info: ClassInfo | None
    model: ModuleModel
    attrs: dict[str, Any]
    names: dict[str, Any] = field(default_factory=dict)

    def method(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        if self.info is None:
            return None
        found = self.model.find_method(self.info, name)
        return found[1] if found is not None else None


def _init_of(model: ModuleModel, info: ClassInfo) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = model.find_method(info, "__init__")
    return found[1] if found is not None else None


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[ast.arg]:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    return positional[1:] if skip_self and positional else positional


def _defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    found = {
        a.arg: d for a, d in zip(reversed(positional), reversed(fn.args.defaults), strict=False)
    }
    for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if default is not None:
            found[arg.arg] = default
    return found


def _required(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[str]:
    defaults = _defaults(fn)
    names = [a.arg for a in _parameters(fn, skip_self)] + [a.arg for a in fn.args.kwonlyargs]
    return [n for n in names if n not in defaults]


def _bind_call(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    scope: _Scope,
    skip_self: bool = True,
) -> dict[str, Any]:
    """Parameter name -> value for a call with the given (already evaluated) arguments."""
    params = _parameters(fn, skip_self)
    bound: dict[str, Any] = {}
    for param, value in zip(params, args, strict=False):
        bound[param.arg] = value
    if fn.args.vararg is not None:
        bound[fn.args.vararg.arg] = tuple(args[len(params) :])
    extra: dict[str, Any] = {}
    names = {p.arg for p in params} | {a.arg for a in fn.args.kwonlyargs}
    for key, value in kwargs.items():
        if key in names:
            bound[key] = value
        else:
            extra[key] = value
    if fn.args.kwarg is not None:
        bound[fn.args.kwarg.arg] = extra
    for name, default in _defaults(fn).items():
        if name not in bound:
            try:
                bound[name] = evaluate(default, scope)
            except NotConstant as exc:
                bound[name] = exc
    for name in names:
        bound.setdefault(name, NotConstant(f"`{name}` has no value"))
    return bound


def _evaluate_args(call: ast.Call, scope: _Scope) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    for arg in call.args:
        try:
            if isinstance(arg, ast.Starred):
                args.extend(evaluate(arg.value, scope))
            else:
                args.append(evaluate(arg, scope))
        except NotConstant as exc:
            if isinstance(arg, ast.Starred):
                break  # the positions after it are unknown
            args.append(exc)
        except TypeError:
            break
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        try:
            value = evaluate(kw.value, scope)
        except NotConstant as exc:
            value = exc
        if kw.arg is None:
            if isinstance(value, Mapping):
                kwargs.update(value)
        else:
            kwargs[kw.arg] = value
    return args, kwargs


def _class_ctx(
    model: ModuleModel,
    info: ClassInfo,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    consts: dict[str, Any],
    depth: int = 0,
) -> _ClassCtx:
    """Run ``__init__`` symbolically with these arguments; unknown values stay unknown."""
    attrs: dict[str, Any] = {}
    owner = info.owner or model
    init = _init_of(owner, info)
    if init is not None:
        module_scope = _Scope(owner, {}, None, consts)
        names = _bind_call(init, args, kwargs, module_scope)
        scope = _Scope(owner, names, attrs, consts)
        try:
            _run_body(init.body, scope, depth)
        except _Returned:
            pass
        parent = attrs.get(_SUPER)
        if isinstance(parent, LayerRef) and info.bases:
            # class Block(nn.Sequential): super().__init__(conv, bn, act)
            parent.qual = info.bases[0]
            if parent.kind in ("Sequential", "ModuleList", "ModuleDict"):
                parent.children = _container_children(parent, parent.scope)
    # class-level constants (``expansion = 4``) are visible as self.<name>
    for stmt in info.node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and target.id not in attrs:
                try:
                    attrs[target.id] = evaluate(stmt.value, _Scope(owner, {}, None, consts))
                except NotConstant:
                    pass
    return _ClassCtx(info, owner, attrs)


def _run_body(body: Sequence[ast.stmt], scope: _Scope, depth: int) -> None:
    for stmt in body:
        _run_statement(stmt, scope, depth)


def _assign(target: ast.expr, value: Any, scope: _Scope) -> None:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and scope.attrs is not None
    ):
        scope.attrs[target.attr] = value
    elif isinstance(target, (ast.Name, ast.Tuple, ast.List)):
        _bind_target(target, value, scope)


def _try_eval(node: ast.expr, scope: _Scope) -> Any:
    try:
        return evaluate(node, scope)
    except NotConstant as exc:
        return exc
    except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as exc:
        return NotConstant(f"{ast.unparse(node)}: {exc}")


def _run_statement(stmt: ast.stmt, scope: _Scope, depth: int) -> None:
    if isinstance(stmt, ast.Assign):
        value = _try_eval(stmt.value, scope)
        for target in stmt.targets:
            _assign(target, value, scope)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        _assign(stmt.target, _try_eval(stmt.value, scope), scope)
    elif isinstance(stmt, ast.AugAssign):
        op = BINARY_OPS.get(type(stmt.op))
        load = ast.BinOp(left=_as_load(stmt.target), op=stmt.op, right=stmt.value)
        value = _try_eval(load, scope) if op is not None else NotConstant("augmented assignment")
        _assign(stmt.target, value, scope)
    elif isinstance(stmt, ast.If):
        test = _try_eval(stmt.test, scope)
        if isinstance(test, NotConstant):
            _run_either([stmt.body, stmt.orelse], scope, depth)
        else:
            _run_body(stmt.body if test else stmt.orelse, scope, depth)
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        iterable = _try_eval(stmt.iter, scope)
        first: Any = NotConstant("loop variable")
        if not isinstance(iterable, NotConstant):
            try:
                # Only the first item is bound: `range(10**9)` in a training loop must not
                # become a list.
                items = iter(iterable)
            except TypeError:
                return
            first = next(items, _NO_ITEM)
            if first is _NO_ITEM:
                return
        _bind_target(stmt.target, first, scope)
        _run_body(stmt.body, scope, depth)
    elif isinstance(stmt, (ast.Try, ast.TryStar)):
        # a handler runs instead of the rest of the body: the body's values win
        _run_either([stmt.body, *(h.body for h in stmt.handlers)], scope, depth)
        _run_body(stmt.orelse, scope, depth)
        _run_body(stmt.finalbody, scope, depth)
    elif isinstance(stmt, ast.Match):
        _run_either([case.body for case in stmt.cases], scope, depth)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        _run_call_statement(stmt.value, scope)
    elif isinstance(stmt, ast.Return):
        raise _Returned(None if stmt.value is None else _try_eval(stmt.value, scope))
    else:  # `with`, `while`: their bodies, once (a strict run names a kind not known)
        for part in walk.parts(stmt):
            _run_body(part, scope, depth)


def _run_either(arms: Sequence[Sequence[ast.stmt]], scope: _Scope, depth: int) -> None:
    """Statement lists of which one runs, not known which (an `if` on an unknown test, a
    `try`'s body and its handlers, a `match`'s cases): each runs, and where several bind a
    name the first one's value stays."""
    first: tuple[dict[str, Any], dict[str, Any]] | None = None
    for arm in arms:
        _run_body(arm, scope, depth)
        if first is None:
            first = dict(scope.names), dict(scope.attrs or {})
    if first is not None:
        scope.names.update(first[0])
        if scope.attrs is not None:
            scope.attrs.update(first[1])


_NO_ITEM = object()


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.Name(id=target.id, ctx=ast.Load())
    if isinstance(target, ast.Attribute):
        return ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load())
    return target


def _run_call_statement(call: ast.Call, scope: _Scope) -> None:
    """``self.layers.append(Block(d))``, ``self.add_module("fc", ...)``, register_buffer."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return
    if func.attr in ("append", "extend"):
        try:
            container = evaluate(func.value, scope)
        except NotConstant:
            return
        if isinstance(container, LayerRef) and container.children is not None and call.args:
            value = _try_eval(call.args[0], scope)
            if func.attr == "append":
                container.children.append(value)
            elif isinstance(value, (list, tuple)):
                container.children.extend(value)
        elif isinstance(container, list) and call.args:
            value = _try_eval(call.args[0], scope)
            if func.attr == "append":
                container.append(value)
            elif isinstance(value, (list, tuple)):
                container.extend(value)
        return
    if (
        func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
        and scope.attrs is not None
    ):
        scope.attrs[_SUPER] = LayerRef(None, call, scope.snapshot())
        return
    is_self = isinstance(func.value, ast.Name) and func.value.id == "self"
    if not is_self or scope.attrs is None or len(call.args) < 2:
        return
    if func.attr in ("add_module", "register_module", "register_buffer", "register_parameter"):
        name = _try_eval(call.args[0], scope)
        if isinstance(name, str):
            scope.attrs[name] = _try_eval(call.args[1], scope)


_SUPER = "<super().__init__>"  # attrs key: the base class constructor call


def _module_consts(tree: ast.Module, model: ModuleModel) -> dict[str, Any]:
    """Module-level ``NAME = <constant expression>`` values, in file order."""
    consts: dict[str, Any] = {}
    scope = _Scope(model, consts, None, {})
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            value = _try_eval(stmt.value, scope)
            if isinstance(value, LayerRef) or isinstance(value, NotConstant):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        consts.pop(target.id, None)
                continue
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    consts[target.id] = value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            if isinstance(stmt.target, ast.Name):
                value = _try_eval(stmt.value, scope)
                if not isinstance(value, (LayerRef, NotConstant)):
                    consts[stmt.target.id] = value
    return consts


# --------------------------------------------------------------------------- inputs

# Layers that keep the shape class of their input (any rank works): tracking goes through them.
_PASS_THROUGH = frozenset(
    (
        "ReLU ReLU6 GELU SiLU Sigmoid Tanh ELU CELU SELU LeakyReLU PReLU RReLU Softmax LogSoftmax "
        "Softmin Softplus Softsign Mish Hardswish Hardsigmoid Hardtanh Threshold Tanhshrink "
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout Identity Flatten "
        "Upsample UpsamplingNearest2d UpsamplingBilinear2d MaxPool1d MaxPool2d MaxPool3d "
        "AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
        "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d ZeroPad1d ZeroPad2d "
        "ReflectionPad1d ReflectionPad2d ReplicationPad1d ReplicationPad2d ConstantPad1d "
        "ConstantPad2d LocalResponseNorm ChannelShuffle"
    ).split()
)
# Methods and functions that keep the tensor's shape (or only reshape it: flatten/view).
_KEEP_METHODS = frozenset(
    (
        "float half double bfloat16 contiguous clone detach to cuda cpu type type_as relu sigmoid "
        "tanh exp abs neg mul add sub div pow sqrt clamp masked_fill softmax log_softmax "
        "requires_grad_ flatten view reshape squeeze"
    ).split()
)
_KEEP_FUNCTIONS = frozenset(
    (
        "relu relu6 gelu silu sigmoid tanh elu leaky_relu hardswish mish softplus softmax "
        "log_softmax dropout dropout1d dropout2d normalize exp abs neg clamp flatten reshape "
        "squeeze max_pool1d max_pool2d avg_pool1d avg_pool2d adaptive_avg_pool2d interpolate pad "
        "mul add sub div"
    ).split()
)
_OPAQUE = frozenset({"flatten", "view", "reshape", "squeeze"})
_TORCH_PREFIXES = ("torch.", "torch.nn.functional.")


# ("transpose", a, b) | ("permute", dims) | ("unsqueeze", d) | ("index", ops) | ("opaque",)
Transform = tuple[Any, ...]


class _Found(Exception):
    """Control flow: the first consumer of the tracked tensor was found."""

    def __init__(self, candidates: list[Spec]) -> None:
        super().__init__("found")
        self.candidates = candidates


class _NoShape(Exception):
    """The first consumer is known, but what it expects is not; the message says why."""


_PASS = "pass"


def _invert(shape: list[int], transforms: Sequence[Transform]) -> list[int] | None:
    """The shape before ``transforms`` of a tensor that has ``shape`` after them."""
    shape = list(shape)
    for transform in reversed(transforms):
        kind = transform[0]
        rank = len(shape)
        if kind == "transpose":
            a, b = (d % rank for d in transform[1:3])
            shape[a], shape[b] = shape[b], shape[a]
        elif kind == "permute":
            dims = [d % rank for d in transform[1]]
            if sorted(dims) != list(range(rank)):
                return None
            permuted = [0] * rank
            for new_index, old_index in enumerate(dims):
                permuted[old_index] = shape[new_index]
            shape = permuted
        elif kind == "unsqueeze":
            d = transform[1] % rank
            del shape[d]
        elif kind == "index":
            original: list[int] = []
            i = 0
            for op in transform[1]:
                if op == "keep":
                    if i >= rank:
                        return None
                    original.append(shape[i])
                    i += 1
                elif op == "new":
                    i += 1
                else:  # an integer index removed this dimension
                    original.append(max(SEQ, op + 1) if op >= 0 else SEQ)
            shape = original + shape[i:]
        elif kind == "opaque":
            continue
    return shape


def _with_transforms(candidates: list[Spec], transforms: Sequence[Transform]) -> list[Spec]:
    if not transforms:
        return candidates
    result: list[Spec] = []
    for spec in candidates:
        if "tensor" not in spec:
            result.append(spec)
            continue
        try:
            shape = _invert(spec["shape"], transforms)
        except (IndexError, ZeroDivisionError):
            shape = None
        if shape is not None:
            result.append({**spec, "shape": shape})
    return result


_LAYER_PARAMS: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features", "bias"),
    "Bilinear": ("in1_features", "in2_features", "out_features"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "EmbeddingBag": ("num_embeddings", "embedding_dim"),
    "RNN": ("input_size", "hidden_size", "num_layers"),
    "LSTM": ("input_size", "hidden_size", "num_layers", "bias", "batch_first"),
    "GRU": ("input_size", "hidden_size", "num_layers", "bias", "batch_first"),
    "RNNCell": ("input_size", "hidden_size"),
    "LSTMCell": ("input_size", "hidden_size"),
    "GRUCell": ("input_size", "hidden_size"),
    "LayerNorm": ("normalized_shape", "eps"),
    "RMSNorm": ("normalized_shape", "eps"),
    "GroupNorm": ("num_groups", "num_channels"),
    "MultiheadAttention": (
        "embed_dim",
        "num_heads",
        "dropout",
        "bias",
        "add_bias_kv",
        "add_zero_attn",
        "kdim",
        "vdim",
        "batch_first",
    ),
    "TransformerEncoderLayer": (
        "d_model",
        "nhead",
        "dim_feedforward",
        "dropout",
        "activation",
        "layer_norm_eps",
        "batch_first",
        "norm_first",
    ),
    "TransformerDecoderLayer": (
        "d_model",
        "nhead",
        "dim_feedforward",
        "dropout",
        "activation",
        "layer_norm_eps",
        "batch_first",
        "norm_first",
    ),
    "TransformerEncoder": ("encoder_layer", "num_layers", "norm"),
    "TransformerDecoder": ("decoder_layer", "num_layers", "norm"),
    "Transformer": (
        "d_model",
        "nhead",
        "num_encoder_layers",
        "num_decoder_layers",
        "dim_feedforward",
        "dropout",
        "activation",
        "custom_encoder",
        "custom_decoder",
        "layer_norm_eps",
        "batch_first",
    ),
}
for _rank in (1, 2, 3):
    for _conv in (f"Conv{_rank}d", f"ConvTranspose{_rank}d"):
        _LAYER_PARAMS[_conv] = ("in_channels", "out_channels", "kernel_size", "stride", "padding")
    for _norm in (f"BatchNorm{_rank}d", f"InstanceNorm{_rank}d"):
        _LAYER_PARAMS[_norm] = ("num_features", "eps", "momentum")
_LAYER_PARAMS["SyncBatchNorm"] = ("num_features",)
_TRANSFORMER_DEFAULTS = {"Transformer": 512}


def _layer_args(ref: LayerRef) -> dict[str, Any]:
    names = _LAYER_PARAMS.get(ref.kind, ())
    args, kwargs = _evaluate_args(ref.call, ref.scope)
    bound: dict[str, Any] = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    return bound


def _int_arg(ref: LayerRef, bound: Mapping[str, Any], name: str) -> int:
    value = bound.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, NotConstant):
            raise _NoShape(f"{ref.kind}'s {name} in `{ref.text()}`: {value}")
        if value is None and ref.kind == "Transformer" and name == "d_model":
            return _TRANSFORMER_DEFAULTS["Transformer"]
        raise _NoShape(f"{ref.kind}'s {name} in `{ref.text()}` is not a constant")
    return value


def _seq_shape(rank: int | None, feature: int, batch_first: bool = True) -> list[list[int]]:
    """Shapes for a layer that reads the last dimension: (B, F), (B, T, F), honouring a rank."""
    if rank is not None and rank >= 1:
        return [[BATCH, *([SEQ] * (rank - 2)), feature] if rank >= 2 else [feature]]
    return [[BATCH, feature], [BATCH, SEQ, feature]]


def _float_inputs(shapes: list[list[int]]) -> list[Spec]:
    return [randn(*shape) for shape in shapes]


class _Finder:
    """Finds how a module's ``forward`` (or a helper method) consumes one of its parameters."""

    def __init__(self, ctx: _ClassCtx, depth: int = 0) -> None:
        self.ctx = ctx
        self.depth = depth

    # -------------------------------------------------------------- layer needs
    def layer_need(self, ref: Any, index: int, keyword: str | None, rank: int | None) -> Any:
        """Candidates for input ``index`` (or ``keyword``) of a layer; _PASS for shape-keeping
        layers. Raises _NoShape when the layer is known but its input is not."""
        if isinstance(ref, NotConstant):
            raise _NoShape(str(ref))
        if not isinstance(ref, LayerRef):
            raise _NoShape(f"{type(ref).__name__} is not a module")
        kind = ref.kind
        if kind in _PASS_THROUGH:
            return _PASS
        if kind == "Sequential":
            return self.sequential_need(ref, rank)
        local = self.ctx.model.lookup_class(ref.qual or "") if ref.qual else None
        if local is not None and looks_like_module(local):
            return self.local_need(ref, local, index, keyword)
        if kind.startswith("Lazy"):
            shapes: dict[str, list[int]] = {
                "LazyLinear": [BATCH, 16],
                "LazyConv1d": [BATCH, 3, SPATIAL[1][0]],
                "LazyConv2d": [BATCH, 3, SPATIAL[2][0], SPATIAL[2][0]],
                "LazyConv3d": [BATCH, 3, *[SPATIAL[3][0]] * 3],
                "LazyBatchNorm1d": [BATCH, 16],
                "LazyBatchNorm2d": [BATCH, 3, 16, 16],
            }
            if kind in shapes:
                return [randn(*shapes[kind])]
        if kind.startswith("torchvision.models"):
            return [randn(BATCH, 3, size, size) for size in (64, 224)]
        bound = _layer_args(ref)
        if kind in ("Linear",):
            return _float_inputs(_seq_shape(rank, _int_arg(ref, bound, "in_features")))
        if kind == "Bilinear":
            name = "in2_features" if index == 1 or keyword == "input2" else "in1_features"
            return _float_inputs(_seq_shape(rank, _int_arg(ref, bound, name)))
        if kind in ("Embedding", "EmbeddingBag"):
            high = _int_arg(ref, bound, "num_embeddings")
            if rank == 1:
                return [randint(high, SEQ)]
            return [randint(high, BATCH, SEQ)]
        if kind in ("RNN", "LSTM", "GRU"):
            if index > 0 or keyword == "hx":
                raise _NoShape(f"the hidden state of `{ref.text()}`")
            size = _int_arg(ref, bound, "input_size")
            if bound.get("batch_first") is True:
                return [randn(BATCH, SEQ, size)]
            return [randn(SEQ, BATCH, size)]
        if kind in ("RNNCell", "LSTMCell", "GRUCell"):
            if index > 0:
                raise _NoShape(f"the hidden state of `{ref.text()}`")
            return [randn(BATCH, _int_arg(ref, bound, "input_size"))]
        if kind in ("LayerNorm", "RMSNorm"):
            shape = bound.get("normalized_shape")
            if isinstance(shape, int) and not isinstance(shape, bool):
                if rank is not None:
                    return _float_inputs(_seq_shape(rank, shape))
                return _float_inputs([[BATCH, SEQ, shape], [BATCH, shape]])
            if isinstance(shape, (tuple, list)) and all(isinstance(n, int) for n in shape):
                return [randn(BATCH, *shape)]
            raise _NoShape(f"LayerNorm's normalized_shape in `{ref.text()}` is not a constant")
        if kind == "GroupNorm":
            channels = _int_arg(ref, bound, "num_channels")
            return [randn(BATCH, channels, s, s) for s in (8,)] + [randn(BATCH, channels, SEQ)]
        if kind.startswith(("Conv", "ConvTranspose")) and kind[-2:] in ("1d", "2d", "3d"):
            dims = int(kind[-2])
            channels = _int_arg(ref, bound, "in_channels")
            return [randn(BATCH, channels, *([s] * dims)) for s in SPATIAL[dims]]
        if kind.startswith(("BatchNorm", "InstanceNorm")) or kind == "SyncBatchNorm":
            features = _int_arg(ref, bound, "num_features")
            dims = int(kind[-2]) if kind[-2:] in ("1d", "2d", "3d") else 2
            if dims == 1:
                shapes_1d = [[BATCH, features], [BATCH, features, SEQ]]
                if kind.startswith("InstanceNorm"):
                    shapes_1d.reverse()
                if rank == 3:
                    shapes_1d = [[BATCH, features, SEQ]]
                return _float_inputs(shapes_1d)
            sizes = SPATIAL[2] if dims == 2 else SPATIAL[3]
            return [randn(BATCH, features, *([s] * dims)) for s in sizes]
        if kind == "MultiheadAttention":
            embed = _int_arg(ref, bound, "embed_dim")
            position = {"query": 0, "key": 1, "value": 2}.get(keyword or "", index)
            if position > 2:
                raise _NoShape(f"argument {position} of `{ref.text()}`")
            size = embed
            for pos, name in ((1, "kdim"), (2, "vdim")):
                if position == pos and isinstance(bound.get(name), int):
                    size = bound[name]
            if bound.get("batch_first") is True:
                return [randn(BATCH, SEQ, size)]
            return [randn(SEQ, BATCH, size)]
        if kind in ("TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer"):
            if index > 1 or (keyword and keyword not in ("src", "tgt", "memory")):
                raise _NoShape(f"argument {keyword or index} of `{ref.text()}`")
            d_model = _int_arg(ref, bound, "d_model")
            if bound.get("batch_first") is True:
                return [randn(BATCH, SEQ, d_model)]
            return [randn(SEQ, BATCH, d_model)]
        if kind in ("TransformerEncoder", "TransformerDecoder"):
            layer_name = "encoder_layer" if kind == "TransformerEncoder" else "decoder_layer"
            inner = bound.get(layer_name)
            return self.layer_need(inner, index, keyword, rank)
        raise _NoShape(f"`{ref.text()}` ({kind}) has an input shape verify cannot infer")

    def sequential_need(self, ref: LayerRef, rank: int | None) -> Any:
        for child in ref.children or []:
            need = self.layer_need(child, 0, None, rank)
            if need is not _PASS:
                return need
        return _PASS

    def local_need(self, ref: LayerRef, info: ClassInfo, index: int, keyword: str | None) -> Any:
        if self.depth > 6:
            raise _NoShape(f"`{ref.text()}` nests too deeply")
        args, kwargs = _evaluate_args(ref.call, ref.scope)
        ctx = _class_ctx(
            info.owner or self.ctx.model, info, args, kwargs, ref.scope.consts, self.depth + 1
        )
        forward = ctx.method("forward")
        if forward is None:
            parent = ctx.attrs.get(_SUPER)
            if isinstance(parent, LayerRef) and parent.qual and parent.qual.startswith("torch."):
                return _Finder(ctx, self.depth + 1).layer_need(parent, index, keyword, None)
            raise _NoShape(f"{info.name} has no forward()")
        params = _parameters(forward, skip_self=True)
        if keyword is not None:
            name = keyword
        elif index < len(params):
            name = params[index].arg
        else:
            raise _NoShape(f"argument {index} of {info.name}.forward")
        finder = _Finder(ctx, self.depth + 1)
        need = finder.param_need(forward, name)
        if need is None:
            return _PASS
        return need

    # -------------------------------------------------------------- forward walk
    def param_need(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> Any:
        """Candidates for ``param`` of ``fn``; None when no layer consumes it (it may still
        flow out unchanged). Raises _NoShape when the first consumer is opaque."""
        walk = _Walk(self, fn, param)
        try:
            walk.run()
        except _Found as found:
            if walk.rank is not None:
                ranked = [c for c in found.candidates if len(c.get("shape", ())) == walk.rank]
                return ranked or found.candidates
            return found.candidates
        return None


def _rank_hint(fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> int | None:
    """The rank of ``param`` if ``fn`` unpacks its shape (``B, T, C = x.shape``)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Tuple) and not any(
                isinstance(e, ast.Starred) for e in target.elts
            ):
                if _is_shape_of(value, param):
                    return len(target.elts)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if (
                isinstance(node.ops[0], ast.Eq)
                and isinstance(right, ast.Constant)
                and isinstance(right.value, int)
                and _is_rank_of(left, param)
            ):
                return right.value
    return None


def _is_shape_of(node: ast.expr, param: str) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return isinstance(node.value, ast.Name) and node.value.id == param
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute):
        func = node.func
        return func.attr == "size" and isinstance(func.value, ast.Name) and func.value.id == param
    return False


def _is_rank_of(node: ast.expr, param: str) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "ndim":
        return isinstance(node.value, ast.Name) and node.value.id == param
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        return (
            func.attr in ("dim", "ndimension")
            and isinstance(func.value, ast.Name)
            and (func.value.id == param)
        )
    return False


class _Walk:
    """One pass over a function body, in evaluation order, tracking a parameter's aliases."""

    def __init__(
        self, finder: _Finder, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str
    ) -> None:
        self.finder = finder
        self.ctx = finder.ctx
        self.fn = fn
        self.aliases: dict[str, tuple[Transform, ...]] = {param: ()}
        self.loop_layers: dict[str, Any] = {}
        self.rank = _rank_hint(fn, param)

    def run(self) -> None:
        self.block(self.fn.body)

    def block(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if stmt.value is None:
                return
            self.visit(stmt.value)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            derived = self.derive(stmt.value)
            if isinstance(stmt, ast.AugAssign):
                return
            for target in targets:
                if isinstance(target, ast.Name):
                    if derived is not None:
                        self.aliases[target.id] = derived
                    else:
                        self.aliases.pop(target.id, None)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.visit(stmt.iter)
            layer = self.layer_of_iter(stmt.iter)
            if layer is not None and isinstance(stmt.target, ast.Name):
                self.loop_layers[stmt.target.id] = layer
            elif (
                isinstance(stmt.target, ast.Tuple)
                and len(stmt.target.elts) == 2
                and isinstance(stmt.target.elts[1], ast.Name)
                and layer is not None
            ):
                self.loop_layers[stmt.target.elts[1].id] = layer
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, walk.DEFINITIONS):
            return
        else:
            # the expressions of the statement itself (an `if`'s test, a `with`'s context
            # managers, a `match`'s subject), then the statements it holds
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.withitem):
                    child = child.context_expr
                if isinstance(child, ast.expr):
                    self.visit(child)
            for part in walk.parts(stmt):
                self.block(part)

    def layer_of_iter(self, node: ast.expr) -> Any:
        """``for blk in self.blocks`` / ``self.blocks.values()`` / ``enumerate(self.blocks)``."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in ("enumerate", "reversed"):
                return self.layer_of_iter(node.args[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("values", "children", "modules"):
                return self.layer_of_iter(node.func.value)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            node = node.value
        container = self.self_attr(node)
        if isinstance(container, LayerRef) and container.children:
            return container.children[0]
        return None

    def self_attr(self, node: ast.expr) -> Any:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return self.ctx.attrs.get(node.attr)
        return None

    def visit(self, node: ast.expr) -> None:
        """Visit sub-expressions in evaluation order; check each call for a consumer."""
        if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return
        if isinstance(node, ast.Call):
            self.visit(node.func)
            for arg in node.args:
                self.visit(arg.value if isinstance(arg, ast.Starred) else arg)
            for kw in node.keywords:
                self.visit(kw.value)
            self.check_call(node)
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            self.visit(node.left)
            self.visit(node.right)
            self.check_matmul(node.left, node.right)
            return
        if isinstance(node, ast.BinOp):
            self.visit(node.left)
            self.visit(node.right)
            self.check_broadcast(node.left, node.right)
            self.check_broadcast(node.right, node.left)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.visit(child)

    def callee(self, func: ast.expr) -> tuple[str, Any] | None:
        """("layer", LayerRef) / ("method", name) / ("function", qualname) for a call."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == "self":
                value = self.ctx.attrs.get(func.attr)
                if value is not None:
                    return "layer", value
                if self.ctx.method(func.attr) is not None:
                    return "method", func.attr
                return "layer", NotConstant(f"`self.{func.attr}` is not built in __init__")
        if isinstance(func, ast.Subscript):
            container = self.self_attr(func.value)
            if isinstance(container, LayerRef) and container.children:
                try:
                    index = evaluate(func.slice, _Scope(self.ctx.model, {}, None, {}))
                except NotConstant:
                    index = 0
                children = container.children
                if isinstance(index, int) and -len(children) <= index < len(children):
                    return "layer", children[index]
                return "layer", children[0]
        if isinstance(func, ast.Name) and func.id in self.loop_layers:
            return "layer", self.loop_layers[func.id]
        if isinstance(func, ast.Name) and func.id not in self.aliases:
            local = self.ctx.names.get(func.id)
            if isinstance(local, LayerRef):  # a function target's `lin = nn.Linear(5, 2)`
                return "layer", local
        qual = self.ctx.model.qualify(func)
        if qual is not None:
            return "function", qual
        return None

    def consumed(self, call: ast.Call) -> Iterator[tuple[int, str | None, tuple[Transform, ...]]]:
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            transforms = self.derive(arg)
            if transforms is not None:
                yield index, None, transforms
        for kw in call.keywords:
            if kw.arg is None:
                continue
            transforms = self.derive(kw.value)
            if transforms is not None:
                yield -1, kw.arg, transforms

    def check_call(self, call: ast.Call) -> None:
        uses = list(self.consumed(call))
        if not uses:
            return
        callee = self.callee(call.func)
        if callee is None:
            return
        kind, target = callee
        for index, keyword, transforms in uses:
            if kind == "layer":
                rank = self.rank if not transforms else None
                need = self.finder.layer_need(target, max(index, 0), keyword, rank)
                if need is _PASS:
                    continue
                raise _Found(_with_transforms(need, transforms))
            if kind == "method":
                method = self.ctx.method(target)
                assert method is not None
                params = _parameters(method, skip_self=True)
                name = keyword
                if name is None and index < len(params):
                    name = params[index].arg
                if name is None:
                    continue
                sub = _Finder(self.ctx, self.finder.depth + 1)
                if self.finder.depth > 6:
                    continue
                need = sub.param_need(method, name)
                if need is not None:
                    raise _Found(_with_transforms(need, transforms))
            if kind == "function":
                self.check_function(target, call, index, transforms)

    def check_function(
        self, qual: str, call: ast.Call, index: int, transforms: tuple[Transform, ...]
    ) -> None:
        """F.linear(x, self.w), F.embedding(x, self.w), F.conv2d(x, self.w), torch.matmul."""
        name = qual.rsplit(".", 1)[-1]
        if not qual.startswith("torch.") or index != 0 or len(call.args) < 2:
            return
        weight = self.tensor_value(call.args[1])
        if weight is None:
            return
        shape = list(weight.shape)
        if name == "linear" and len(shape) == 2:
            need = _float_inputs(_seq_shape(self.rank, shape[1]))
            raise _Found(_with_transforms(need, transforms))
        if name == "embedding" and len(shape) == 2:
            raise _Found(_with_transforms([randint(shape[0], BATCH, SEQ)], transforms))
        if name in ("conv1d", "conv2d", "conv3d") and len(shape) >= 3:
            dims = int(name[-2])
            candidates = [randn(BATCH, shape[1], *([s] * dims)) for s in SPATIAL[dims]]
            raise _Found(_with_transforms(candidates, transforms))
        if name in ("matmul", "mm") and len(shape) == 2:
            need = _float_inputs(_seq_shape(self.rank, shape[0]))
            raise _Found(_with_transforms(need, transforms))

    def check_matmul(self, left: ast.expr, right: ast.expr) -> None:
        transforms = self.derive(left)
        if transforms is None:
            return
        weight = self.tensor_value(right)
        if weight is not None and len(weight.shape) == 2:
            need = _float_inputs(_seq_shape(self.rank, weight.shape[0]))
            raise _Found(_with_transforms(need, transforms))
        if isinstance(right, ast.Attribute) and right.attr == "T":
            weight = self.tensor_value(right.value)
            if weight is not None and len(weight.shape) == 2:
                need = _float_inputs(_seq_shape(self.rank, weight.shape[1]))
                raise _Found(_with_transforms(need, transforms))

    def check_broadcast(self, operand: ast.expr, other: ast.expr) -> None:
        """``x * self.gamma`` with ``self.gamma = nn.Parameter(torch.ones(dim))``."""
        transforms = self.derive(operand)
        if transforms is None:
            return
        weight = self.tensor_value(other)
        if weight is None or not weight.shape:
            return
        shape = [8 if d == 1 else d for d in weight.shape]
        if len(shape) == 1:
            need = _float_inputs(_seq_shape(self.rank, shape[0]))
        else:
            need = [randn(BATCH, *shape)]
        raise _Found(_with_transforms(need, transforms))

    def tensor_value(self, node: ast.expr) -> _Tensor | None:
        value = self.self_attr(node)
        if isinstance(value, _Tensor):
            return value
        if isinstance(node, ast.Name) and node.id not in self.aliases:
            local = self.ctx.names.get(node.id)
            if isinstance(local, _Tensor):  # a function target's `w = torch.zeros(3, 5)`
                return local
        if isinstance(value, LayerRef) and isinstance(node, ast.Attribute):
            return None
        return None

    def derive(self, node: ast.expr) -> tuple[Transform, ...] | None:
        """The transforms from the tracked parameter to ``node``'s value, or None when
        ``node`` is not (a shape-kept form of) the parameter."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
            left = self.derive(node.left)
            return left if left is not None else self.derive(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.derive(node.operand)
        if isinstance(node, ast.IfExp):
            body = self.derive(node.body)
            return body if body is not None else self.derive(node.orelse)
        if isinstance(node, ast.Subscript):
            base = self.derive(node.value)
            index = self.index_transform(node.slice) if base is not None else None
            return None if base is None or index is None else (*base, index)
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.derive(func.value)
            if receiver is not None:
                return self.method_transform(func.attr, node, receiver)
        callee = self.callee(func)
        if callee is None or not node.args:
            return None
        first = node.args[0]
        transforms = self.derive(first) if not isinstance(first, ast.Starred) else None
        if transforms is None:
            return None
        kind, target = callee
        if kind == "layer":
            try:
                need = self.finder.layer_need(target, 0, None, None)
            except _NoShape:
                return None
            return transforms if need is _PASS else None
        if kind == "function" and any(target.startswith(p) for p in _TORCH_PREFIXES):
            name = target.rsplit(".", 1)[-1]
            if name in ("transpose", "swapaxes") and len(node.args) >= 3:
                dims = self.constants(node.args[1:3])
                return (*transforms, ("transpose", *dims)) if dims else None
            if name == "permute" and len(node.args) >= 2:
                dims = self.constants(node.args[1:])
                if dims and len(dims) == 1 and isinstance(dims[0], (tuple, list)):
                    dims = list(dims[0])
                return (*transforms, ("permute", tuple(dims))) if dims else None
            if name == "unsqueeze" and len(node.args) >= 2:
                dims = self.constants(node.args[1:2])
                return (*transforms, ("unsqueeze", dims[0])) if dims else None
            if name in _KEEP_FUNCTIONS:
                return (*transforms, ("opaque",)) if name in _OPAQUE else transforms
        return None

    def index_transform(self, index: ast.expr) -> Transform | None:
        """``x[:, t]`` keeps dim 0 and removes dim 1: ("index", ("keep", t))."""
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        ops: list[Any] = []
        for element in elements:
            if isinstance(element, ast.Slice):
                ops.append("keep")
            elif isinstance(element, ast.Constant) and element.value is None:
                ops.append("new")
            elif isinstance(element, ast.Constant) and element.value is Ellipsis:
                return None
            elif isinstance(element, ast.Constant) and isinstance(element.value, int):
                ops.append(element.value)
            elif isinstance(element, (ast.Name, ast.BinOp, ast.UnaryOp)):
                ops.append(-1)
            else:
                return None
        return ("index", tuple(ops))

    def method_transform(
        self, name: str, call: ast.Call, transforms: tuple[Transform, ...]
    ) -> tuple[Transform, ...] | None:
        if name in ("transpose", "swapaxes") and len(call.args) == 2:
            dims = self.constants(call.args)
            return (*transforms, ("transpose", *dims)) if dims else None
        if name == "permute" and call.args:
            dims = self.constants(call.args)
            if dims and len(dims) == 1 and isinstance(dims[0], (tuple, list)):
                dims = list(dims[0])
            return (*transforms, ("permute", tuple(dims))) if dims else None
        if name == "unsqueeze" and len(call.args) == 1:
            dims = self.constants(call.args)
            return (*transforms, ("unsqueeze", dims[0])) if dims else None
        if name in _KEEP_METHODS or name.endswith("_") and name[:-1] in _KEEP_METHODS:
            return (*transforms, ("opaque",)) if name in _OPAQUE else transforms
        return None

    def constants(self, nodes: Sequence[ast.expr]) -> list[Any] | None:
        try:
            return [evaluate(n, _Scope(self.ctx.model, {}, None, {})) for n in nodes]
        except NotConstant:
            return None


# --------------------------------------------------------------------------- targets


@dataclass
class _Enclosing:
    kind: str  # "class" | "function" | "method"
    node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    qualname: str
    owner: ast.ClassDef | None = None


def _span(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return start, node.end_lineno or node.lineno


def _enclosing(tree: ast.Module, line: int) -> _Enclosing | None:
    for stmt in tree.body:
        start, end = _span(stmt)
        if not start <= line <= end:
            continue
        if isinstance(stmt, ast.ClassDef):
            return _Enclosing("class", stmt, stmt.name)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return _Enclosing("function", stmt, stmt.name)
    return None


def _module_function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _class_hook(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _hook(
    tree: ast.Module, cls: ast.ClassDef | None, name: str
) -> tuple[Spec, ast.FunctionDef] | None:
    if cls is not None:
        method = _class_hook(cls, name)
        if method is not None:
            return {"scope": "class", "name": name}, method
    function = _module_function(tree, name)
    if function is not None:
        return {"scope": "module", "name": name}, function
    return None


def _static_return(fn: ast.FunctionDef, scope: _Scope) -> Any:
    """The value of a hook whose body is ``return <constant expression>``."""
    body = [
        s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise NotConstant("not a single return")
    return evaluate(body[0].value, scope)


def _split_args(value: Any) -> tuple[list[Any], dict[str, Any]]:
    """The hooks' convention (as in the harness): a tuple is positional arguments, a dict
    keyword arguments, anything else the one argument."""
    if isinstance(value, dict):
        return [], {str(k): v for k, v in value.items()}
    if isinstance(value, tuple):
        return list(value), {}
    return [value], {}


def _literal_call_args(
    tree: ast.Module, model: ModuleModel, name: str, consts: dict[str, Any]
) -> tuple[list[Any], dict[str, Any], int] | None:
    """Arguments of the first call ``Name(...)`` in the file whose arguments are all literals,
    or names of the enclosing function's parameters that have literal defaults (a parent
    module's ``def __init__(self, dim=32): self.block = Block(dim)``)."""
    found: list[tuple[int, int, ast.Call, dict[str, Any]]] = []

    def visit(node: ast.AST, defaults: dict[str, Any]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, _literal_defaults(child, model, consts))
                continue
            if isinstance(child, ast.Call) and (
                (isinstance(child.func, ast.Name) and child.func.id == name)
                or model.qualify(child.func) == name
            ):
                found.append((child.lineno, child.col_offset, child, defaults))
            visit(child, defaults)

    visit(tree, {})
    found.sort(key=lambda item: (item[0], item[1]))
    for _, _, call, defaults in found:
        scope = _Scope(model, dict(defaults), None, consts)
        try:
            args = [evaluate(a, scope) for a in call.args if not isinstance(a, ast.Starred)]
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            kwargs = {kw.arg: evaluate(kw.value, scope) for kw in call.keywords if kw.arg}
            if any(kw.arg is None for kw in call.keywords):
                continue
            for value in [*args, *kwargs.values()]:
                literal_spec(value)
        except (NotConstant, TypeError, ValueError, ArithmeticError):
            continue
        return args, {str(k): v for k, v in kwargs.items()}, call.lineno
    return None


def _literal_defaults(
    fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    model: ModuleModel,
    consts: dict[str, Any],
) -> dict[str, Any]:
    """A function's parameters whose defaults evaluate to literals."""
    scope = _Scope(model, {}, None, consts)
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    kw_pairs = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    pairs += [(a, d) for a, d in kw_pairs if d is not None]
    values: dict[str, Any] = {}
    for arg, default in pairs:
        try:
            value = evaluate(default, scope)
            literal_spec(value)
        except (NotConstant, TypeError, ValueError, ArithmeticError):
            continue
        values[arg.arg] = value
    return values


_COUNT = "16"  # what a parameter the name says nothing of gets: a size


def _guess_value(name: str) -> str:
    lowered = name.lower()
    if any(word in lowered for word in ("mask", "lengths", "cache", "state", "hidden")):
        return "None"
    # Words of the name, not substrings: `steps` holds "eps" but is a count.
    if any(w.startswith("drop") or w in ("eps", "rate", "scale") for w in lowered.split("_")):
        return "0.1"
    if lowered.startswith(("use_", "is_", "has_")) or lowered in ("bias", "batch_first"):
        return "True"
    return _COUNT


def _function_signature(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> str:
    names = [a.arg for a in _parameters(fn, skip_self)] + [a.arg for a in fn.args.kwonlyargs]
    return ", ".join(names)


def _construct_spec(
    tree: ast.Module,
    model: ModuleModel,
    info: ClassInfo,
    consts: dict[str, Any],
    supplied: Mapping[str, Any] | Sequence[Any] | None,
) -> tuple[Spec, list[Any], dict[str, Any], bool]:
    """(construct spec, args, kwargs, statically known) for a module class."""
    init = _init_of(info.owner or model, info)
    required = _required(init, skip_self=True) if init is not None else []
    scope = _Scope(model, {}, None, consts)
    if supplied is not None:
        args, kwargs = _split_args(
            dict(supplied) if isinstance(supplied, Mapping) else tuple(supplied)
        )
        try:
            spec = {
                "hook": None,
                "args": [literal_spec(a) for a in args],
                "kwargs": {k: literal_spec(v) for k, v in kwargs.items()},
                "source": "settings",
            }
        except NotConstant as exc:
            raise VerifyError(f"constructor arguments for {info.name}: {exc}") from None
        return spec, args, kwargs, True
    hook = _hook(tree, info.node, ARGS_HOOK)
    if hook is not None:
        ref, fn = hook
        try:
            value = _static_return(fn, scope)
            args, kwargs = _split_args(value)
            known = True
        except (NotConstant, TypeError, ValueError, ArithmeticError):
            args, kwargs, known = [], {}, False
        source = f"{ARGS_HOOK}()" + (" of the class" if ref["scope"] == "class" else "")
        return {"hook": ref, "args": [], "kwargs": {}, "source": source}, args, kwargs, known
    if not required:
        return {"hook": None, "args": [], "kwargs": {}, "source": "defaults"}, [], {}, True
    found = _literal_call_args(tree, model, info.name, consts)
    if found is not None:
        args, kwargs, line = found
        spec = {
            "hook": None,
            "args": [literal_spec(a) for a in args],
            "kwargs": {k: literal_spec(v) for k, v in kwargs.items()},
            "source": f"the call at line {line}",
        }
        return spec, args, kwargs, True
    assert init is not None
    guess = ", ".join(_guess_value(n) for n in required)
    if len(required) == 1:
        guess += ","
    raise VerifyError(
        f"cannot construct {info.name}: __init__({_function_signature(init, True)}) has no "
        f"default for {', '.join(required)}; add `def example_args(): return ({guess})` "
        "to the class (a dict gives keyword arguments)"
    )


def _input_candidates(
    model: ModuleModel,
    info: ClassInfo,
    args: list[Any],
    kwargs: dict[str, Any],
    consts: dict[str, Any],
    known: bool,
) -> tuple[list[Spec], str]:
    """Candidate input sets (``{"args": [...], "kwargs": {...}}``) and a description."""
    found = model.find_method(info, "forward")
    if found is None and known:
        # class ConvBNAct(nn.Sequential): the base class's forward reads the input
        base_ctx = _class_ctx(model, info, args, kwargs, consts)
        parent = base_ctx.attrs.get(_SUPER)
        if isinstance(parent, LayerRef) and parent.qual and parent.qual.startswith("torch."):
            try:
                need = _Finder(base_ctx).layer_need(parent, 0, None, None)
            except _NoShape as exc:
                raise VerifyError(
                    f"cannot infer the input of {info.name}: it goes into {exc}; add "
                    f"`def example_inputs(): return ({_guess_input('x')},)` to the class"
                ) from None
            if need is not _PASS:
                return [{"args": [c], "kwargs": {}} for c in need[:MAX_COMBOS]], (
                    f"input={describe_value(need[0])}"
                )
    if found is None:
        raise VerifyError(
            f"{info.name} has no forward(); add `def example_inputs(): return (...)` "
            "or point verify at a function that uses it"
        )
    forward = found[1]
    signature = f"{info.name}.forward({_function_signature(forward, True)})"
    if forward.args.vararg is not None or isinstance(forward, ast.AsyncFunctionDef):
        raise VerifyError(
            f"cannot infer the input of {signature}: it takes *{forward.args.vararg.arg}"
            if forward.args.vararg is not None
            else f"cannot infer the input of {signature}: it is async"
        )
    required = _required(forward, skip_self=True)
    kwonly = {a.arg for a in forward.args.kwonlyargs}
    ctx = _class_ctx(model, info, args, kwargs, consts) if known else None
    needs: dict[str, list[Spec]] = {}
    problems: list[str] = []
    for name in required:
        if ctx is None:
            problems.append(
                f"its constructor arguments come from {ARGS_HOOK}(), which is not a constant"
            )
            break
        try:
            need = _Finder(ctx).param_need(forward, name)
        except _NoShape as exc:
            problems.append(f"`{name}` first goes into {exc}")
            continue
        except (RecursionError, NotConstant) as exc:
            problems.append(f"`{name}`: {exc}")
            continue
        if not need:
            problems.append(f"no layer with a known input shape consumes `{name}`")
            continue
        needs[name] = need
    if problems:
        suggestion = ", ".join(
            describe_value(needs[n][0]) if n in needs else _guess_input(n) for n in required
        )
        if len(required) == 1:
            suggestion += ","
        raise VerifyError(
            f"cannot infer the input of {signature}: {'; '.join(problems)}; add "
            f"`def example_inputs(): return ({suggestion})` to the class"
        )
    lists = [needs[name] for name in required]
    indices = sorted(itertools.product(*(range(len(c)) for c in lists)), key=sum)[:MAX_COMBOS]
    candidates: list[Spec] = []
    for combo in indices:
        positional: list[Spec] = []
        keyword: dict[str, Spec] = {}
        for name, options, i in zip(required, lists, combo, strict=True):
            if name in kwonly:
                keyword[name] = options[i]
            else:
                positional.append(options[i])
        candidates.append({"args": positional, "kwargs": keyword})
    description = ", ".join(f"{n}={describe_value(needs[n][0])}" for n in required)
    return candidates, description


def _guess_input(name: str) -> str:
    lowered = name.lower()
    if "mask" in lowered or "lengths" in lowered or "cache" in lowered:
        return "None"
    return f"torch.randn({BATCH}, {SEQ}, 16)"


def _module_spec(
    tree: ast.Module,
    model: ModuleModel,
    info: ClassInfo,
    consts: dict[str, Any],
    supplied: Mapping[str, Any] | Sequence[Any] | None,
) -> Spec:
    construct, args, kwargs, known = _construct_spec(tree, model, info, consts, supplied)
    input_hook = _hook(tree, info.node, INPUT_HOOK)
    inputs: Spec
    if input_hook is not None:
        inputs = {"hook": input_hook[0], "candidates": [], "description": f"{INPUT_HOOK}()"}
    else:
        candidates, description = _input_candidates(model, info, args, kwargs, consts, known)
        inputs = {"hook": None, "candidates": candidates, "description": description}
    return {
        "version": SPEC_VERSION,
        "kind": "module",
        "name": info.name,
        "line": _span(info.node)[0],
        "end_line": _span(info.node)[1],
        "parameters": _forward_parameters(info.node),
        "construct": construct,
        "inputs": inputs,
    }


def _forward_parameters(node: ast.ClassDef) -> list[str]:
    """The names ``forward`` takes besides ``self`` (none when it is inherited)."""
    forward = _class_hook(node, "forward")
    if forward is None:
        return []
    return [a.arg for a in (*_parameters(forward, skip_self=True), *forward.args.kwonlyargs)]


def _function_ctx(
    tree: ast.Module, model: ModuleModel, consts: dict[str, Any], fn: ast.FunctionDef
) -> _ClassCtx:
    """What the bare names in ``fn`` hold: the module's top-level values (layers too), then
    ``fn``'s body run symbolically with its parameters unknown."""
    module_names: dict[str, Any] = {}
    module_scope = _Scope(model, module_names, None, consts)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            value = _try_eval(stmt.value, module_scope)
            for target in stmt.targets:
                _assign(target, value, module_scope)
    params = [a.arg for a in (*_parameters(fn, False), *fn.args.kwonlyargs)]
    scope = _Scope(model, dict(module_names), None, consts)
    for name in params:
        scope.names[name] = NotConstant(f"`{name}` is an argument")
    try:
        _run_body(fn.body, scope, 0)
    except _Returned:
        pass
    return _ClassCtx(None, model, {}, {k: v for k, v in scope.names.items() if k not in params})


# Tensor methods whose first argument is a dimension (`x.sum(dim)`); others take sizes first.
_DIM_FIRST = frozenset(
    "sum mean prod std var softmax log_softmax logsumexp argmax argmin max min cumsum cumprod "
    "unsqueeze squeeze".split()
)


# Arithmetic whose operands broadcast as tensors (`x ** p` takes a number for `p`).
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult)


def _tensor_names(fn: ast.FunctionDef) -> tuple[set[str], set[str], set[str]]:
    """(names of ``fn`` that hold tensors, names in arithmetic with one of them, names given
    as a dimension: ``dim=name``, ``x.sum(name)``). A tensor:
    ``name.sum()``, ``name[0]``, ``name @ w``, ``torch.exp(name)``; what meets a tensor in
    arithmetic (``x * cos``: ``cos`` is one too, not a count); what is assigned from a tensor
    expression (``rotated = torch.cat(...)``), until nothing more is found."""
    tensors: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name):
            tensors.add(node.value.id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            tensors.update(o.id for o in (node.left, node.right) if isinstance(o, ast.Name))
        elif isinstance(node, ast.Call) and ast.unparse(node.func).startswith(("torch.", "F.")):
            tensors.update(a.id for a in node.args if isinstance(a, ast.Name))

    def tensor(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in tensors
        if isinstance(node, ast.Call):
            func = node.func
            return ast.unparse(func).startswith(("torch.", "F.")) or (
                isinstance(func, ast.Attribute) and tensor(func.value)
            )
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return tensor(node.value)
        if isinstance(node, ast.BinOp):
            return tensor(node.left) or tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return tensor(node.operand)
        return False

    def names(node: ast.expr) -> list[str]:
        if isinstance(node, ast.Name):
            return [node.id]
        if isinstance(node, (ast.Tuple, ast.List)):
            return [n for elt in node.elts for n in names(elt)]
        return []

    arithmetic: set[str] = set()
    grown = True
    while grown:
        before = len(tensors)
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if tensor(other) and isinstance(side, ast.Name):
                        tensors.add(side.id)
                        arithmetic.add(side.id)
            elif isinstance(node, ast.Assign) and tensor(node.value):
                tensors.update(n for target in node.targets for n in names(target))
        grown = len(tensors) > before
    dims: set[str] = set()
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        given = [k.value for k in node.keywords if k.arg in ("dim", "axis")]
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _DIM_FIRST and tensor(func.value):
            given += node.args[:1]  # `x.sum(dim)`
        dims.update(v.id for v in given if isinstance(v, ast.Name) and v.id not in tensors)
    return tensors, arithmetic, dims


_PLACEHOLDER = "torch.randn(...)"


def _example_args_hint(
    tree: ast.Module,
    model: ModuleModel,
    consts: dict[str, Any],
    fn: ast.FunctionDef,
    required: list[str],
) -> str:
    """The ``example_args()`` to suggest for ``fn``: tensors of the shapes its body implies
    (``x @ w`` with ``w = torch.zeros(3, 5)``, ``lin(x)`` with ``lin = nn.Linear(5, 2)``),
    else ``torch.randn(...)`` placeholders, said plainly, for the user to fill in."""
    try:
        ctx: _ClassCtx | None = _function_ctx(tree, model, consts, fn)
    except Exception:  # best effort: a hint must never turn into an internal error
        ctx = None
    values: list[str] = []
    unknown: list[str] = []
    reasons: list[str] = []
    tensors, arithmetic, dims = _tensor_names(fn)
    for name in required:
        need: Any = None
        if ctx is not None:
            try:
                need = _Finder(ctx).param_need(fn, name)
            except _NoShape as exc:
                reasons.append(f"`{name}` first goes into {exc}")
            except Exception:  # as above
                need = None
        guess = _guess_value(name)  # a mask, a rate, a flag: the name says
        if guess == "None" and name in arithmetic:  # `x / lengths`: not an optional None
            guess = _COUNT
        if guess == _COUNT and name in dims:  # `x.sum(dim)`: the last one always exists
            guess = "-1"
        if need:
            values.append(describe_value(need[0]))
        elif guess != _COUNT:
            values.append(guess)
        elif name in tensors:
            values.append(_PLACEHOLDER)
            unknown.append(name)
        else:
            values.append(_COUNT)
    kwonly = {a.arg for a in fn.args.kwonlyargs}
    if any(name in kwonly for name in required):
        returned = "{" + ", ".join(f"{n!r}: {v}" for n, v in zip(required, values, strict=True))
        returned += "}"
    else:
        returned = "(" + ", ".join(values) + ("," if len(values) == 1 else "") + ")"
    hook = f"`def {ARGS_HOOK}(): return {returned}`"
    forms = "a tuple gives positional arguments, a dict keyword arguments"
    if not unknown:
        shapes = "tensor shapes from how its body uses them; " if "torch." in returned else ""
        return f"add {hook} to the module ({shapes}{forms})"
    named = ", ".join(f"`{n}`" for n in unknown)
    why = f" ({'; '.join(reasons)})" if reasons else ""
    return (
        f"verify cannot tell from the body of {fn.name} what shape {named} must have{why}; "
        f"add {hook} to the module and replace each `...` with the shape {fn.name} expects "
        f"({forms})"
    )


def _function_spec(
    tree: ast.Module, fn: ast.FunctionDef, model: ModuleModel, consts: dict[str, Any]
) -> Spec:
    required = _required(fn, skip_self=False)
    hook = _hook(tree, None, ARGS_HOOK)
    construct: Spec = {"hook": None, "args": [], "kwargs": {}, "source": "no arguments"}
    if hook is not None and (required or fn.args.args):
        construct = {"hook": hook[0], "args": [], "kwargs": {}, "source": f"{ARGS_HOOK}()"}
    elif required:
        raise VerifyError(
            f"cannot call {fn.name}({_function_signature(fn, False)}): no value for "
            f"{', '.join(required)}; {_example_args_hint(tree, model, consts, fn, required)}"
        )
    return {
        "version": SPEC_VERSION,
        "kind": "function",
        "name": fn.name,
        "line": _span(fn)[0],
        "end_line": _span(fn)[1],
        "parameters": [a.arg for a in (*_parameters(fn, skip_self=False), *fn.args.kwonlyargs)],
        "construct": construct,
        "inputs": None,
        "calls_backward": calls_backward(fn),
    }


def _module_class(stmt: ast.stmt, model: ModuleModel) -> TypeGuard[ast.ClassDef]:
    """A top-level `class` statement of an nn.Module subclass."""
    return (
        isinstance(stmt, ast.ClassDef)
        and stmt.name in model.classes
        and looks_like_module(model.classes[stmt.name])
    )


def _default_target(tree: ast.Module, model: ModuleModel) -> ast.FunctionDef | ClassInfo | None:
    functions = {
        stmt.name: stmt
        for stmt in tree.body
        if isinstance(stmt, ast.FunctionDef) and not stmt.name.startswith("example_")
    }
    for name in ENTRY_NAMES:
        fn = functions.get(name)
        if fn is not None and not _required(fn, False) and calls_backward(fn):
            return fn
    modules = [model.classes[s.name] for s in tree.body if _module_class(s, model)]
    used: set[str] = set()
    for info in modules:
        for sub in ast.walk(info.node):
            if isinstance(sub, ast.Call):
                qual = model.qualify(sub.func)
                if qual is not None and qual != info.name:
                    used.add(qual)
    roots = [info for info in modules if info.name not in used]
    if roots:
        return roots[-1]
    for fn in functions.values():
        if not _required(fn, False) and calls_backward(fn):
            return fn
    return None


def _is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side of the ==)."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = [test.left, test.comparators[0]]
    return (
        isinstance(test.ops[0], ast.Eq)
        and any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
        and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    )


_RUNS_CODE = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Call, ast.Await)


def module_code_line(tree: ast.Module) -> int | None:
    """The first module-level statement that runs code when the file is imported (a call, a
    loop, a `with`; not imports, definitions, plain assignments or the block under
    `if __name__ == "__main__":`), which verify's import runs before the target."""
    for stmt in tree.body:
        if isinstance(
            stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ) or _is_main_guard(stmt):
            continue
        if any(isinstance(node, _RUNS_CODE) for node in ast.walk(stmt)):
            return stmt.lineno
    return None


def _what_runs(tree: ast.Module, model: ModuleModel) -> str:
    """The classes and functions of the file that verify can be pointed at, for a message."""
    found = [
        f"class {stmt.name} (line {stmt.lineno})"
        if isinstance(stmt, ast.ClassDef)
        else f"{stmt.name}() (line {stmt.lineno})"
        for stmt in tree.body
        if _module_class(stmt, model) or isinstance(stmt, ast.FunctionDef)
    ]
    if not found:
        return "this file has no nn.Module subclass and no function to run"
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    return f"give a line inside one of: {shown}, or no line to run the file's main target"


def find_target(
    text: str,
    line: int | None = None,
    *,
    path: str | None = None,
    constructor_args: Mapping[str, Any] | Sequence[Any] | None = None,
    parsed: Parsed | None = None,
) -> Spec:
    """The verify spec for the target enclosing ``line`` (1-based), or the file's main target.

    ``constructor_args`` (a tuple of positional or a dict of keyword arguments, literals only)
    overrides how a module class is constructed. ``parsed``: the text's tree, when the caller
    has it. Raises VerifyError with a message that says what is missing and how to provide it.
    """
    where = path or "<text>"
    try:
        tree = parse(text, parsed)
    except SyntaxError as exc:
        raise VerifyError(f"cannot parse {where}: line {exc.lineno}: {exc.msg}") from None
    model = model_mod.build([(tree, 1, True)], path=path, lines=split_lines(text), stubs=stub_model)
    consts = _module_consts(tree, model)
    enclosing = _enclosing(tree, line) if line is not None else None
    if line is not None and enclosing is None:
        count = line_count(text)
        where_line = (
            f"line {line} is past the end of {where} ({count} lines)"
            if line > count
            else f"line {line} of {where} is outside any class or function"
        )
        raise VerifyError(
            f"{where_line}: verify runs the nn.Module class or the function around the line "
            f"it is given; {_what_runs(tree, model)}"
        )
    spec: Spec
    if enclosing is None:
        chosen = _default_target(tree, model)
        if chosen is None:
            at = f" line {line} is outside any class or function, and" if line else ""
            raise VerifyError(
                f"nothing to verify in {where}:{at} it has no nn.Module subclass and no "
                "function without arguments that calls backward(); point verify at a line "
                "inside the class or function to run"
            )
        if isinstance(chosen, ClassInfo):
            spec = _module_spec(tree, model, chosen, consts, constructor_args)
        else:
            spec = _function_spec(tree, chosen, model, consts)
    elif enclosing.kind == "class":
        assert isinstance(enclosing.node, ast.ClassDef)
        info = model.classes.get(enclosing.node.name)
        if info is None or not looks_like_module(info):
            raise VerifyError(
                f"line {line} is in class {enclosing.node.name}, which is not an nn.Module "
                "subclass; point verify at a module class or at a top-level function that "
                "runs it"
            )
        spec = _module_spec(tree, model, info, consts, constructor_args)
    else:
        fn = enclosing.node
        if isinstance(fn, ast.AsyncFunctionDef):
            raise VerifyError(f"{fn.name} is async; verify runs plain functions")
        assert isinstance(fn, ast.FunctionDef)
        spec = _function_spec(tree, fn, model, consts)
    if path is not None:
        spec["path"] = path
    return spec
