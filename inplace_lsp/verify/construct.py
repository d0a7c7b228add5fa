"""What a module's `__init__` builds, read without running it: its layers (constructor calls,
`LayerRef`), the tensors and constants it binds on `self`, through helper functions and base
classes (`ClassCtx`), with the constant evaluation of inplace_lsp.analysis.constants.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inplace_lsp.analysis.constants import BINARY_OPS, NotConstant, Scope, evaluate
from inplace_lsp.analysis.model import ClassInfo, ModuleModel
from inplace_lsp.verify import walk


@dataclass
class InitTensor:
    """A tensor built in __init__ (``torch.randn(a, b)``, ``nn.Parameter(...)``): its shape."""

    shape: tuple[int, ...]


@dataclass
class LayerRef:
    """A module constructor call seen in __init__ (``nn.Linear(dim, 4 * dim)``)."""

    qual: str | None  # "torch.nn.Linear", a local class name, "timm.create_model", or None
    call: ast.Call
    scope: InitScope
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
class InitScope(Scope):
    """Names visible while running ``__init__`` symbolically: locals, ``self`` attributes,
    module constants; on top of the generic constants, tensors (``InitTensor``) and constructor
    calls (``LayerRef``), module-level helpers run symbolically."""

    model: ModuleModel
    names: dict[str, Any]
    attrs: dict[str, Any] | None = None  # self.<attr> values (shared while __init__ runs)
    consts: dict[str, Any] = field(default_factory=dict)  # module-level constants
    depth: int = 0  # helper functions being run symbolically

    def snapshot(self) -> InitScope:
        return InitScope(self.model, dict(self.names), self.attrs, self.consts, self.depth)

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
        if isinstance(value, InitTensor) and node.attr == "shape":
            return value.shape
        if isinstance(value, Mapping) and node.attr in value:
            return value[node.attr]
        return super().member(value, node)

    def binary(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        if isinstance(left, InitTensor) or isinstance(right, InitTensor):
            # torch.randn(d, r) / d ** 0.5: scaling keeps the shape
            tensors = [v for v in (left, right) if isinstance(v, InitTensor)]
            others = [v for v in (left, right) if not isinstance(v, InitTensor)]
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
            return InitTensor(_tensor_shape(qual.rsplit(".", 1)[-1], node, self))
        if isinstance(func, ast.Attribute) and func.attr in ("clone", "detach", "float", "t"):
            base = evaluate(func.value, self)
            if isinstance(base, InitTensor):
                return InitTensor(base.shape[::-1]) if func.attr == "t" else base
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


class Returned(Exception):
    """Control flow: a ``return`` while running a function body symbolically."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


def _call_local_function(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call, scope: InitScope
) -> Any:
    """Run a module-level helper (``def conv3x3(i, o): return nn.Conv2d(...)``) symbolically."""
    if scope.depth > 8:
        raise NotConstant(f"{fn.name}() nests too deeply")
    args, kwargs = evaluate_args(node, scope)
    inner = InitScope(scope.model, {}, None, scope.consts, scope.depth + 1)
    inner.names.update(_bind_call(fn, args, kwargs, inner, skip_self=False))
    try:
        run_body(fn.body, inner, scope.depth + 1)
    except Returned as returned:
        if isinstance(returned.value, NotConstant):
            raise returned.value from None
        return returned.value
    raise NotConstant(f"{fn.name}() returns nothing verify can follow")


def _tensor_shape(maker: str, node: ast.Call, scope: InitScope) -> tuple[int, ...]:
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


def _container_children(ref: LayerRef, scope: InitScope) -> list[Any]:
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


def _bind_target(target: ast.expr, value: Any, scope: InitScope) -> None:
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
class ClassCtx:
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


def init_of(model: ModuleModel, info: ClassInfo) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = model.find_method(info, "__init__")
    return found[1] if found is not None else None


def signature_args(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[ast.arg]:
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


def required_names(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[str]:
    defaults = _defaults(fn)
    names = [a.arg for a in signature_args(fn, skip_self)] + [a.arg for a in fn.args.kwonlyargs]
    return [n for n in names if n not in defaults]


def _bind_call(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    scope: InitScope,
    skip_self: bool = True,
) -> dict[str, Any]:
    """Parameter name -> value for a call with the given (already evaluated) arguments."""
    params = signature_args(fn, skip_self)
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


def evaluate_args(call: ast.Call, scope: InitScope) -> tuple[list[Any], dict[str, Any]]:
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


def class_ctx(
    model: ModuleModel,
    info: ClassInfo,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    consts: dict[str, Any],
    depth: int = 0,
) -> ClassCtx:
    """Run ``__init__`` symbolically with these arguments; unknown values stay unknown."""
    attrs: dict[str, Any] = {}
    owner = info.owner or model
    init = init_of(owner, info)
    if init is not None:
        module_scope = InitScope(owner, {}, None, consts)
        names = _bind_call(init, args, kwargs, module_scope)
        scope = InitScope(owner, names, attrs, consts)
        try:
            run_body(init.body, scope, depth)
        except Returned:
            pass
        parent = attrs.get(SUPER)
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
                    attrs[target.id] = evaluate(stmt.value, InitScope(owner, {}, None, consts))
                except NotConstant:
                    pass
    return ClassCtx(info, owner, attrs)


def run_body(body: Sequence[ast.stmt], scope: InitScope, depth: int) -> None:
    for stmt in body:
        _run_statement(stmt, scope, depth)


def assign(target: ast.expr, value: Any, scope: InitScope) -> None:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and scope.attrs is not None
    ):
        scope.attrs[target.attr] = value
    elif isinstance(target, (ast.Name, ast.Tuple, ast.List)):
        _bind_target(target, value, scope)


def try_eval(node: ast.expr, scope: InitScope) -> Any:
    try:
        return evaluate(node, scope)
    except NotConstant as exc:
        return exc
    except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as exc:
        return NotConstant(f"{ast.unparse(node)}: {exc}")


def _run_statement(stmt: ast.stmt, scope: InitScope, depth: int) -> None:
    if isinstance(stmt, ast.Assign):
        value = try_eval(stmt.value, scope)
        for target in stmt.targets:
            assign(target, value, scope)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        assign(stmt.target, try_eval(stmt.value, scope), scope)
    elif isinstance(stmt, ast.AugAssign):
        op = BINARY_OPS.get(type(stmt.op))
        load = ast.BinOp(left=_as_load(stmt.target), op=stmt.op, right=stmt.value)
        value = try_eval(load, scope) if op is not None else NotConstant("augmented assignment")
        assign(stmt.target, value, scope)
    elif isinstance(stmt, ast.If):
        test = try_eval(stmt.test, scope)
        if isinstance(test, NotConstant):
            _run_either([stmt.body, stmt.orelse], scope, depth)
        else:
            run_body(stmt.body if test else stmt.orelse, scope, depth)
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        iterable = try_eval(stmt.iter, scope)
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
        run_body(stmt.body, scope, depth)
    elif isinstance(stmt, (ast.Try, ast.TryStar)):
        # a handler runs instead of the rest of the body: the body's values win
        _run_either([stmt.body, *(h.body for h in stmt.handlers)], scope, depth)
        run_body(stmt.orelse, scope, depth)
        run_body(stmt.finalbody, scope, depth)
    elif isinstance(stmt, ast.Match):
        _run_either([case.body for case in stmt.cases], scope, depth)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        _run_call_statement(stmt.value, scope)
    elif isinstance(stmt, ast.Return):
        raise Returned(None if stmt.value is None else try_eval(stmt.value, scope))
    else:  # `with`, `while`: their bodies, once (a strict run names a kind not known)
        for part in walk.parts(stmt):
            run_body(part, scope, depth)


def _run_either(arms: Sequence[Sequence[ast.stmt]], scope: InitScope, depth: int) -> None:
    """Statement lists of which one runs, not known which (an `if` on an unknown test, a
    `try`'s body and its handlers, a `match`'s cases): each runs, and where several bind a
    name the first one's value stays."""
    first: tuple[dict[str, Any], dict[str, Any]] | None = None
    for arm in arms:
        run_body(arm, scope, depth)
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


def _run_call_statement(call: ast.Call, scope: InitScope) -> None:
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
            value = try_eval(call.args[0], scope)
            if func.attr == "append":
                container.children.append(value)
            elif isinstance(value, (list, tuple)):
                container.children.extend(value)
        elif isinstance(container, list) and call.args:
            value = try_eval(call.args[0], scope)
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
        scope.attrs[SUPER] = LayerRef(None, call, scope.snapshot())
        return
    is_self = isinstance(func.value, ast.Name) and func.value.id == "self"
    if not is_self or scope.attrs is None or len(call.args) < 2:
        return
    if func.attr in ("add_module", "register_module", "register_buffer", "register_parameter"):
        name = try_eval(call.args[0], scope)
        if isinstance(name, str):
            scope.attrs[name] = try_eval(call.args[1], scope)


SUPER = "<super().__init__>"  # attrs key: the base class constructor call


def module_consts(tree: ast.Module, model: ModuleModel) -> dict[str, Any]:
    """Module-level ``NAME = <constant expression>`` values, in file order."""
    consts: dict[str, Any] = {}
    scope = InitScope(model, consts, None, {})
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            value = try_eval(stmt.value, scope)
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
                value = try_eval(stmt.value, scope)
                if not isinstance(value, (LayerRef, NotConstant)):
                    consts[stmt.target.id] = value
    return consts
