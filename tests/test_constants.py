"""The constant-expression evaluator (`inplace_lsp.analysis.constants`) that the model's
constructor-argument tests and verify's symbolic `__init__` share: what it evaluates, what it
refuses and with which message, and what a scope adds on top."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from inplace_lsp.analysis import model
from inplace_lsp.analysis.constants import (
    BUILTINS,
    MATH,
    NotConstant,
    Scope,
    evaluate,
)


def value(source: str, **names: Any) -> Any:
    return evaluate(ast.parse(source, mode="eval").body, Scope(names))


def refusal(source: str, scope: Scope | None = None) -> str:
    with pytest.raises(NotConstant) as info:
        evaluate(ast.parse(source, mode="eval").body, scope or Scope())
    return str(info.value)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("3", 3),
        ("'batch'", "batch"),
        ("None", None),
        ("dim * 4 // 3 - 1", 5),
        ("dim / 2", 2.5),
        ("2 ** 10 % 1000", 24),
        ("-dim", -5),
        ("+dim", 5),
        ("not dim", False),
        ("norm == 'batch'", True),
        ("norm != 'batch'", False),
        ("0 < dim <= 5", True),
        ("0 < dim < 5", False),
        ("norm in ('batch', 'layer')", True),
        ("norm not in ('batch', 'layer')", False),
        ("bias is None", True),
        ("bias is not None", False),
        ("dim if norm == 'batch' else 0", 5),
        ("dim if norm == 'layer' else 0", 0),
        # Python's and / or: the operand that decides, not a bool
        ("bias or dim", 5),
        ("dim and norm", "batch"),
        ("bias and dim", None),
        ("(dim, 2)", (5, 2)),
        ("[dim, 2]", [5, 2]),
        ("(1, *sizes, 4)", (1, 2, 3, 4)),
        ("[*sizes]", [2, 3]),
        ("{'a': dim, **{'b': 2}}", {"a": 5, "b": 2}),
        ("sizes[1]", 3),
        ("sizes[-1]", 3),
        ("'abcdef'[1:5:2]", "bd"),
        ("sizes[::-1]", [3, 2]),
        ("{'k': 7}['k']", 7),
        ("int(dim / 2)", 2),
        ("max(dim, 8)", 8),
        ("min(*sizes)", 2),
        ("round(2.345, ndigits=1)", 2.3),
        ("len(sizes)", 2),
        ("sum(sizes)", 5),
        ("list(range(3))", [0, 1, 2]),
        ("range(dim)", range(5)),
        ("zip(sizes, 'ab')", [(2, "a"), (3, "b")]),
        ("enumerate(sizes, start=1)", [(1, 2), (2, 3)]),
        ("reversed(sizes)", [3, 2]),
        ("divmod(dim, 2)", (2, 1)),
        ("math.ceil(dim / 2)", 3),
        ("math.pi > 3", True),
        ("math.prod(sizes)", 6),
        ("[2 * s for s in sizes]", [4, 6]),
        ("[s for s in range(6) if s % 2 if s > 1]", [3, 5]),
        ("[a + b for a, b in zip(sizes, sizes)]", [4, 6]),
        ("sum(s * s for s in sizes)", 13),
    ],
)
def test_evaluates(source: str, expected: Any) -> None:
    result = value(source, dim=5, norm="batch", bias=None, sizes=[2, 3])
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("width", "`width` is not a constant"),
        ("cfg.dim", "`cfg` is not a constant"),
        ("sizes.count", "`sizes.count` is not a constant"),
        ("f'{dim}'", "an f-string"),
        ("make(dim)", "make(dim)"),
        ("dim / 0", "dim / 0"),
        ("dim << 2", "dim << 2"),
        ("~dim", "~dim"),
        ("-norm", "-norm"),
        ("dim < norm", "dim < norm"),
        ("sizes[5]", "sizes[5]"),
        ("(*dim,)", "(*dim,)"),
        ("{sizes: 1}", "{sizes: 1}"),
        ("{**dim}", "{**dim}"),
        ("int(norm)", "int(norm)"),
        ("max(**opts)", "max(**opts)"),
        ("[a for a in sizes for b in sizes]", "[a for a in sizes for b in sizes]"),
        ("[a for a, b in sizes]", "[a for a, b in sizes]"),
        ("lambda: 1", "lambda: 1"),
        # what would take long or fill memory is refused, not computed
        ("2 ** 10 ** 10", "2 ** 10 ** 10: too large"),
        ("pow(3, 100000)", "pow(3, 100000): too large"),
        ("[0] * 10 ** 9", "[0] * 10 ** 9: too many items"),
        ("sum(range(10 ** 9))", "sum(range(10 ** 9)): too many items"),
        ("[x for x in range(10 ** 9)]", "[x for x in range(10 ** 9)]: too many items"),
    ],
)
def test_refuses_with_the_expression(source: str, message: str) -> None:
    names = {"dim": 5, "norm": "batch", "sizes": [2, 3], "opts": {}}
    assert refusal(source, Scope(names)) == message


def test_an_unknown_operand_makes_and_or_unknown() -> None:
    # Every operand is evaluated (as the model and verify always did): `x is None or x > 0`
    # with x unknown stays unknown.
    assert refusal("dim > 0 or width > 0", Scope({"dim": 5})) == "`width` is not a constant"


def test_a_bound_name_hides_the_builtin() -> None:
    assert value("len(sizes)", sizes=[1]) == 1
    assert refusal("len(sizes)", Scope({"len": 3, "sizes": [1]})) == "len(sizes)"


def test_math_through_the_scopes_qualify() -> None:
    class FromMath(Scope):
        def qualify(self, node: ast.expr) -> str | None:  # `from math import ceil`
            return f"math.{node.id}" if isinstance(node, ast.Name) else super().qualify(node)

    assert evaluate(ast.parse("ceil(7 / 2)", mode="eval").body, FromMath()) == 4
    assert refusal("ceil(7 / 2)") == "ceil(7 / 2)"


def test_a_comprehension_leaves_the_scope_alone() -> None:
    scope = Scope({"s": "outer", "sizes": [1, 2]})
    assert evaluate(ast.parse("[s for s in sizes]", mode="eval").body, scope) == [1, 2]
    assert scope.names["s"] == "outer"


class Box:
    """A value of the user's: a shape that arithmetic keeps."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


class Layers(Scope):
    """A scope that adds values of its own, as verify's does: `cfg.<key>` from a config,
    `Box(...)` calls, `box.shape`, and scaling a Box keeps it."""

    def __init__(self, names: dict[str, Any], cfg: dict[str, Any]) -> None:
        super().__init__(names)
        self.cfg = cfg

    def attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == "cfg":
            if node.attr in self.cfg:
                return self.cfg[node.attr]
            raise NotConstant(f"`cfg.{node.attr}` is not set")
        return super().attribute(node)

    def member(self, value: Any, node: ast.Attribute) -> Any:
        if isinstance(value, Box) and node.attr == "shape":
            return value.shape
        return super().member(value, node)

    def binary(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        if isinstance(left, Box) and isinstance(right, (int, float)):
            return left
        return super().binary(node, left, right)

    def call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Name) and node.func.id == "Box":
            return Box(tuple(evaluate(a, self) for a in node.args))
        return super().call(node)


def test_a_scope_adds_names_attributes_calls_and_operators() -> None:
    scope = Layers({"depth": 2}, {"dim": 8})

    def run(source: str) -> Any:
        return evaluate(ast.parse(source, mode="eval").body, scope)

    # the scope's own values go through the generic cases: arithmetic, tuples, subscripts
    assert run("cfg.dim * depth") == 16
    assert run("Box(cfg.dim, depth * 2).shape[1]") == 4
    assert run("(Box(cfg.dim) / 8 ** 0.5).shape") == (8,)
    assert run("[Box(cfg.dim, i).shape for i in range(depth)]") == [(8, 0), (8, 1)]
    assert refusal("cfg.heads", scope) == "`cfg.heads` is not set"
    assert refusal("Box(1).size", scope) == "`Box(1).size` is not a constant"
    assert refusal("Box(1) + Box(1)", scope) == "Box(1) + Box(1)"
    assert refusal("Linear(cfg.dim)", scope) == "Linear(cfg.dim)"


def test_the_models_evaluate_is_the_shared_one() -> None:
    def decide(source: str, consts: dict[str, object]) -> object:
        return model.evaluate(ast.parse(source, mode="eval").body, consts)

    assert decide("norm == 'batch'", {"norm": "batch"}) is True
    assert decide("dim * 2 > 64", {"dim": 40}) is True
    assert model.Undecidable is NotConstant
    with pytest.raises(model.Undecidable, match="`norm` is not a constant"):
        decide("norm == 'batch'", {})


def test_constant_range_reads_constant_arithmetic() -> None:
    def rng(source: str) -> range | None:
        return model.constant_range(ast.parse(source, mode="eval").body)

    assert rng("range(2 * 3)") == range(6)
    assert rng("range(1, 9, 4)") == range(1, 9, 4)
    assert rng("range(depth)") is None
    assert rng("range(0, 4, 0)") is None
    assert rng("range(2.5)") is None


def test_tables_are_read_only_and_threads_share_nothing() -> None:
    with pytest.raises(TypeError):
        BUILTINS["open"] = open  # type: ignore[index]
    with pytest.raises(TypeError):
        MATH["math.pi"] = 3  # type: ignore[index]
    node = ast.parse("[d * k for k in range(50)][-1] + len(str(d))", mode="eval").body

    def run(d: int) -> Any:
        return evaluate(node, Scope({"d": d}))

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(400)))
    assert results == [d * 49 + len(str(d)) for d in range(400)]
