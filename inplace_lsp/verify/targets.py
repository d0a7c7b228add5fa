"""Decide what `verify` runs: the target at a line, how to construct it and what to feed it.

Pure: reads the source with ``ast`` (imports and classes through
``inplace_lsp.analysis.model``) and imports neither torch nor pygls. The jobs are split by
module: construct.py reads what a class's ``__init__`` builds (constant expressions through
``inplace_lsp.analysis.constants``, whose ``Scope`` ``InitScope`` extends with ``self.<attr>``,
tensors and layer constructor calls), shapes.py what its ``forward`` must be fed, walk.py which
statements the two read, spec.py the vocabulary of the result; this module picks the target and
assembles its spec. The product is a JSON-able spec that ``harness.run_spec`` executes in the
user's interpreter:

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from inplace_lsp.analysis import model as model_mod
from inplace_lsp.analysis.constants import NotConstant, evaluate
from inplace_lsp.analysis.frameworks import stub_model
from inplace_lsp.analysis.lines import line_count, split_lines
from inplace_lsp.analysis.model import ClassInfo, ModuleModel, calls_backward, looks_like_module
from inplace_lsp.verify.construct import (
    SUPER,
    ClassCtx,
    InitScope,
    LayerRef,
    Returned,
    assign,
    class_ctx,
    init_of,
    module_consts,
    required_names,
    run_body,
    signature_args,
    try_eval,
)
from inplace_lsp.verify.parsed import Parsed, parse
from inplace_lsp.verify.shapes import PASS, Finder, NoShape
from inplace_lsp.verify.spec import (
    BATCH,
    MAX_COMBOS,
    SEQ,
    Spec,
    VerifyError,
    describe_value,
    literal_spec,
)

__all__ = ["VerifyError", "find_target", "SPEC_VERSION"]

SPEC_VERSION = 1
INPUT_HOOK = "example_inputs"
ARGS_HOOK = "example_args"
# Entry points preferred when no line is given: the file's own training / demo function.
ENTRY_NAMES = ("run", "main", "train", "train_step", "step", "demo")


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


def _static_return(fn: ast.FunctionDef, scope: InitScope) -> Any:
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
        scope = InitScope(model, dict(defaults), None, consts)
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
    scope = InitScope(model, {}, None, consts)
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
    names = [a.arg for a in signature_args(fn, skip_self)] + [a.arg for a in fn.args.kwonlyargs]
    return ", ".join(names)


def _construct_spec(
    tree: ast.Module,
    model: ModuleModel,
    info: ClassInfo,
    consts: dict[str, Any],
    supplied: Mapping[str, Any] | Sequence[Any] | None,
) -> tuple[Spec, list[Any], dict[str, Any], bool]:
    """(construct spec, args, kwargs, statically known) for a module class."""
    init = init_of(info.owner or model, info)
    required = required_names(init, skip_self=True) if init is not None else []
    scope = InitScope(model, {}, None, consts)
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
        base_ctx = class_ctx(model, info, args, kwargs, consts)
        parent = base_ctx.attrs.get(SUPER)
        if isinstance(parent, LayerRef) and parent.qual and parent.qual.startswith("torch."):
            try:
                need = Finder(base_ctx).layer_need(parent, 0, None, None)
            except NoShape as exc:
                raise VerifyError(
                    f"cannot infer the input of {info.name}: it goes into {exc}; add "
                    f"`def example_inputs(): return ({_guess_input('x')},)` to the class"
                ) from None
            if need is not PASS:
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
    required = required_names(forward, skip_self=True)
    kwonly = {a.arg for a in forward.args.kwonlyargs}
    ctx = class_ctx(model, info, args, kwargs, consts) if known else None
    needs: dict[str, list[Spec]] = {}
    problems: list[str] = []
    for name in required:
        if ctx is None:
            problems.append(
                f"its constructor arguments come from {ARGS_HOOK}(), which is not a constant"
            )
            break
        try:
            need = Finder(ctx).param_need(forward, name)
        except NoShape as exc:
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
    return [a.arg for a in (*signature_args(forward, skip_self=True), *forward.args.kwonlyargs)]


def _function_ctx(
    tree: ast.Module, model: ModuleModel, consts: dict[str, Any], fn: ast.FunctionDef
) -> ClassCtx:
    """What the bare names in ``fn`` hold: the module's top-level values (layers too), then
    ``fn``'s body run symbolically with its parameters unknown."""
    module_names: dict[str, Any] = {}
    module_scope = InitScope(model, module_names, None, consts)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            value = try_eval(stmt.value, module_scope)
            for target in stmt.targets:
                assign(target, value, module_scope)
    params = [a.arg for a in (*signature_args(fn, False), *fn.args.kwonlyargs)]
    scope = InitScope(model, dict(module_names), None, consts)
    for name in params:
        scope.names[name] = NotConstant(f"`{name}` is an argument")
    try:
        run_body(fn.body, scope, 0)
    except Returned:
        pass
    return ClassCtx(None, model, {}, {k: v for k, v in scope.names.items() if k not in params})


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
        ctx: ClassCtx | None = _function_ctx(tree, model, consts, fn)
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
                need = Finder(ctx).param_need(fn, name)
            except NoShape as exc:
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
    required = required_names(fn, skip_self=False)
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
        "parameters": [a.arg for a in (*signature_args(fn, skip_self=False), *fn.args.kwonlyargs)],
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
        if fn is not None and not required_names(fn, False) and calls_backward(fn):
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
        if not required_names(fn, False) and calls_backward(fn):
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
    consts = module_consts(tree, model)
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
