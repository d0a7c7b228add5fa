"""The value of a constant Python expression: `dim * 4`, `norm == "batch"`, `math.ceil(n / 2)`.

One evaluator for the analysis (the model's constructor-argument tests in `__init__`,
`model.evaluate`) and for verify (`verify.targets` runs `__init__` symbolically).
`evaluate(node, scope)` does what Python does for constants, names, unary / binary / boolean
operators, chained comparisons, conditional expressions, tuples and lists (starred items too),
dicts, subscripts and slices, one-generator comprehensions, the safe builtins (`min`, `len`,
`range`, ...) and `math`. A `Scope` says what names mean and decides what the generic cases
leave open: attributes of values, other calls, binary operators on its own values, how much of
a comprehension to build. A subclass adds its own there (verify: `self.<attr>`, tensors,
layer constructor calls). Whatever is not a constant raises NotConstant; its message says
which expression.

Pure and thread-safe: the tables are read-only, a scope belongs to one evaluation.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import operator
from collections.abc import Callable, Mapping, Sized
from types import MappingProxyType
from typing import Any, TypeVar

__all__ = [
    "BINARY_OPS",
    "BUILTINS",
    "COMPARE_OPS",
    "MATH",
    "NotConstant",
    "Scope",
    "evaluate",
]

# The most items a constant sequence may have (`[0] * n`, `list(range(n))`) and the largest
# integer exponent (`2 ** n`): source that asks for more is not worth evaluating.
MAX_ITEMS = 100_000
MAX_EXPONENT = 4_096


class NotConstant(Exception):
    """An expression whose value cannot be known from the source alone; the message says
    which."""


BINARY_OPS: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = MappingProxyType(
    {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
        ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod,
        ast.Pow: operator.pow,
    }
)
COMPARE_OPS: Mapping[type[ast.cmpop], Callable[[Any, Any], Any]] = MappingProxyType(
    {
        ast.Eq: operator.eq,
        ast.NotEq: operator.ne,
        ast.Lt: operator.lt,
        ast.LtE: operator.le,
        ast.Gt: operator.gt,
        ast.GtE: operator.ge,
        ast.Is: operator.is_,
        ast.IsNot: operator.is_not,
        ast.In: lambda a, b: a in b,
        ast.NotIn: lambda a, b: a not in b,
    }
)
BUILTINS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        "int": int,
        "float": float,
        "round": round,
        "min": min,
        "max": max,
        "abs": abs,
        "len": len,
        "sum": sum,
        "tuple": tuple,
        "list": list,
        "bool": bool,
        "str": str,
        "range": range,
        "pow": pow,
        "divmod": divmod,
        "zip": lambda *a, strict=False: list(zip(*a, strict=strict)),
        "enumerate": lambda *a, **k: list(enumerate(*a, **k)),
        "reversed": lambda a: list(reversed(a)),
    }
)
# Builtins that need no walk over a sequence argument (a long `range` is fine for them).
_NO_WALK = frozenset({"len", "range", "bool", "int", "float", "round", "abs", "str", "divmod"})
MATH: Mapping[str, Any] = MappingProxyType(
    {
        "math.ceil": math.ceil,
        "math.floor": math.floor,
        "math.sqrt": math.sqrt,
        "math.isqrt": math.isqrt,
        "math.log": math.log,
        "math.log2": math.log2,
        "math.prod": math.prod,
        "math.gcd": math.gcd,
        "math.pi": math.pi,
        "math.e": math.e,
    }
)

_S = TypeVar("_S", bound="Scope")


class Scope:
    """What a name means while evaluating, and the hooks a subclass overrides.

    This base knows its `names` (name -> value) and, through `qualify`, the dotted names of
    `math`; it refuses attributes of values and every call but the builtins and `math`."""

    names: dict[str, Any]

    def __init__(self, names: Mapping[str, Any] | None = None) -> None:
        self.names = dict(names) if names is not None else {}

    def lookup(self, name: str) -> Any:
        """The value of a bare name."""
        if name in self.names:
            return self.names[name]
        raise NotConstant(f"`{name}` is not a constant")

    def shadows(self, name: str) -> bool:
        """Whether `name` is bound here, hiding the builtin of that name."""
        return name in self.names

    def qualify(self, node: ast.expr) -> str | None:
        """The dotted name an expression refers to (`math.pi`), None when it is not one."""
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def attribute(self, node: ast.Attribute) -> Any:
        """`a.b`: a `math` constant, else `member` of the value of `a`."""
        qual = self.qualify(node)
        if qual is not None and qual in MATH:
            return MATH[qual]
        return self.member(evaluate(node.value, self), node)

    def member(self, value: Any, node: ast.Attribute) -> Any:
        """The attribute `node.attr` of a known `value`."""
        raise NotConstant(f"`{ast.unparse(node)}` is not a constant")

    def binary(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        """`left <op> right` for the operator of `node` (one of BINARY_OPS)."""
        op = BINARY_OPS[type(node.op)]
        if type(node.op) is ast.Pow:
            _check_power(left, right, node)
        elif type(node.op) is ast.Mult:
            _check_repeat(left, right, node)
        try:
            return op(left, right)
        except Exception as exc:
            raise NotConstant(ast.unparse(node)) from exc

    def call(self, node: ast.Call) -> Any:
        """A call that is neither a builtin nor a `math` function."""
        raise NotConstant(ast.unparse(node))

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> Any:
        """`[elt for target in iter if ...]` with one generator: the list it builds."""
        gen = node.generators[0]
        result: list[Any] = []
        for item in _items(evaluate(gen.iter, self), node):
            inner = self.snapshot()
            _bind(gen.target, item, inner.names, node)
            if all(evaluate(test, inner) for test in gen.ifs):
                result.append(evaluate(node.elt, inner))
        return result

    def snapshot(self: _S) -> _S:
        """A copy whose names can be rebound without touching this scope's."""
        inner = copy.copy(self)
        inner.names = dict(self.names)
        return inner


def evaluate(node: ast.expr, scope: Scope) -> Any:
    """The value of `node` in `scope`; NotConstant when it has none known."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return scope.lookup(node.id)
    if isinstance(node, ast.Attribute):
        return scope.attribute(node)
    if isinstance(node, ast.BinOp):
        if type(node.op) not in BINARY_OPS:
            raise NotConstant(ast.unparse(node))
        return scope.binary(node, evaluate(node.left, scope), evaluate(node.right, scope))
    if isinstance(node, ast.UnaryOp):
        operand = evaluate(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not operand
        try:
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
        except TypeError as exc:
            raise NotConstant(ast.unparse(node)) from exc
        raise NotConstant(ast.unparse(node))
    if isinstance(node, ast.BoolOp):
        # Every operand is evaluated: one that is not a constant makes the whole unknown.
        values = [evaluate(v, scope) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = (result and value) if isinstance(node.op, ast.And) else (result or value)
        return result
    if isinstance(node, ast.Compare):
        left = evaluate(node.left, scope)
        for op_node, right_node in zip(node.ops, node.comparators, strict=True):
            right = evaluate(right_node, scope)
            try:
                if not COMPARE_OPS[type(op_node)](left, right):
                    return False
            except Exception as exc:
                raise NotConstant(ast.unparse(node)) from exc
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return evaluate(node.body if evaluate(node.test, scope) else node.orelse, scope)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = _elements(node.elts, scope, node)
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict):
        return _dict(node, scope)
    if isinstance(node, ast.Subscript):
        base = evaluate(node.value, scope)
        index: Any
        if isinstance(node.slice, ast.Slice):
            index = slice(
                *(
                    None if part is None else evaluate(part, scope)
                    for part in (node.slice.lower, node.slice.upper, node.slice.step)
                )
            )
        else:
            index = evaluate(node.slice, scope)
        try:
            return base[index]
        except Exception as exc:
            raise NotConstant(ast.unparse(node)) from exc
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise NotConstant(ast.unparse(node))
        return scope.comprehension(node)
    if isinstance(node, ast.JoinedStr):
        raise NotConstant("an f-string")
    if isinstance(node, ast.Call):
        return _call(node, scope)
    raise NotConstant(ast.unparse(node))


def _elements(nodes: list[ast.expr], scope: Scope, where: ast.expr) -> list[Any]:
    """The values of a display's elements or a call's positional arguments, starred ones
    unpacked (`where`: the expression, for the message of one that is not a sequence)."""
    items: list[Any] = []
    for elt in nodes:
        if isinstance(elt, ast.Starred):
            items.extend(_items(evaluate(elt.value, scope), where))
        else:
            items.append(evaluate(elt, scope))
    return items


def _call(node: ast.Call, scope: Scope) -> Any:
    func = node.func
    target: Callable[..., Any] | None = None
    if isinstance(func, ast.Name) and func.id in BUILTINS and not scope.shadows(func.id):
        target = BUILTINS[func.id]
    else:
        qual = scope.qualify(func)
        if qual is not None and callable(MATH.get(qual)):
            target = MATH[qual]
    if target is None:
        return scope.call(node)
    args = _elements(node.args, scope, node)
    kwargs = {kw.arg: evaluate(kw.value, scope) for kw in node.keywords if kw.arg is not None}
    if len(kwargs) != len(node.keywords):  # f(**options)
        raise NotConstant(ast.unparse(node))
    walks = not (isinstance(func, ast.Name) and func.id in _NO_WALK)
    for arg in args:
        if walks and isinstance(arg, Sized) and len(arg) > MAX_ITEMS:
            raise NotConstant(f"{ast.unparse(node)}: too many items")
    if target is pow and len(args) == 2:
        _check_power(args[0], args[1], node)
    try:
        return target(*args, **kwargs)
    except Exception as exc:
        raise NotConstant(ast.unparse(node)) from exc


def _dict(node: ast.Dict, scope: Scope) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        try:
            if key is None:  # {**other}
                result.update(evaluate(value, scope))
            else:
                result[evaluate(key, scope)] = evaluate(value, scope)
        except (TypeError, ValueError) as exc:  # an unhashable key, `**` of a non-mapping
            raise NotConstant(ast.unparse(node)) from exc
    return result


def _items(value: Any, node: ast.expr) -> list[Any]:
    """The items of an iterable value (at most MAX_ITEMS)."""
    try:
        items = list(itertools.islice(iter(value), MAX_ITEMS + 1))
    except TypeError as exc:
        raise NotConstant(ast.unparse(node)) from exc
    if len(items) > MAX_ITEMS:
        raise NotConstant(f"{ast.unparse(node)}: too many items")
    return items


def _bind(target: ast.expr, value: Any, names: dict[str, Any], node: ast.expr) -> None:
    """Assign `value` to a comprehension's target (a name or a tuple of them) in `names`."""
    if isinstance(target, ast.Name):
        names[target.id] = value
        return
    if isinstance(target, (ast.Tuple, ast.List)) and not any(
        isinstance(elt, ast.Starred) for elt in target.elts
    ):
        items = _items(value, node)
        if len(items) == len(target.elts):
            for elt, item in zip(target.elts, items, strict=True):
                _bind(elt, item, names, node)
            return
    raise NotConstant(ast.unparse(node))


def _check_power(base: Any, exponent: Any, node: ast.expr) -> None:
    if type(base) is int and type(exponent) is int and abs(base) > 1 and exponent > MAX_EXPONENT:
        raise NotConstant(f"{ast.unparse(node)}: too large")


def _check_repeat(left: Any, right: Any, node: ast.expr) -> None:
    """`[0] * n`, `"-" * n`: refused beyond MAX_ITEMS items."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, (str, bytes, list, tuple)) and type(count) is int:
            if len(seq) * count > MAX_ITEMS:
                raise NotConstant(f"{ast.unparse(node)}: too many items")
