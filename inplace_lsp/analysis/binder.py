"""Static facts of the code itself, read from the syntax tree before (or without) running it:
annotations, constant ranges and indices, indexing shapes, which loops call backward(), the
names a statement binds; memoized on the nodes (trees are cached per block text).
"""

from __future__ import annotations

import ast

from inplace_lsp.analysis.candidates import is_candidate
from inplace_lsp.analysis.model import ModuleModel, constant_range

CONTAINER_TYPES = frozenset(
    "tuple Tuple list List dict Dict Sequence Mapping Iterable typing.Tuple typing.List".split()
)


UNROLLED_LAYERS = 32  # a ModuleList iterated in a loop is followed layer by layer up to this


_UNROLLED_STEPS = 4  # `for i in range(n)` with n this small runs each pass with its number


def annotation_text(node: ast.expr | None) -> str:
    """The names in an annotation, joined (`Optional[torch.Tensor]` -> "Optional[torch.Tensor"),
    enough to tell tensors, modules and scalars apart without ast.unparse."""
    if node is None:
        return ""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{annotation_text(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return f"{annotation_text(node.value)}[{annotation_text(node.slice)}"
    if isinstance(node, ast.Tuple):
        return ",".join(annotation_text(e) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return f"{annotation_text(node.left)}|{annotation_text(node.right)}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def outer_type(annotation: str) -> str:
    """`Optional[tuple[Tensor, float]]` and `tuple[...] | None` -> "tuple"."""
    for prefix in ("Optional[", "typing.Optional["):
        annotation = annotation.removeprefix(prefix)
    return annotation.split("[")[0].split("|")[0].split(",")[0]


def small_range(node: ast.expr | range) -> list[int] | None:
    """The numbers of `range(...)` with constant arguments (or of a range the code built from
    known values), when there are a few."""
    numbers = node if isinstance(node, range) else constant_range(node)
    return list(numbers) if numbers is not None and 1 <= len(numbers) <= _UNROLLED_STEPS else None


def const_index(node: ast.expr) -> int | None:
    """`xs[2]` / `xs[-1]`: the constant position, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = const_index(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def leading_index(index: ast.expr) -> bool:
    """Whether basic indexing with `index` keeps a contiguous tensor contiguous: it indexes or
    slices (step 1) the first dimension only, the rest whole (`h[0]`, `h[1:3]`, `h[None]`,
    `h[2, :]`); `h[:, :4]` or `h[::2]` may not."""
    parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    while parts and isinstance(parts[0], ast.Constant) and parts[0].value is None:
        parts.pop(0)
    if not parts:
        return True
    first, rest = parts[0], parts[1:]
    if isinstance(first, ast.Slice) and first.step is not None:
        return False
    if isinstance(first, ast.Constant) and first.value is Ellipsis:
        return not rest  # `h[...]` is all of it; `h[..., :4]` may not be
    whole_rest = all(
        _whole(p) or (isinstance(p, ast.Constant) and p.value is Ellipsis) for p in rest
    )
    return whole_rest and not isinstance(first, (ast.Starred, ast.Tuple, ast.List))


def _whole(part: ast.expr) -> bool:
    """`:` (a whole dimension) or `None` (a new one)."""
    if isinstance(part, ast.Constant) and part.value is None:
        return True
    return (
        isinstance(part, ast.Slice)
        and part.lower is None
        and part.upper is None
        and part.step is None
    )


def string_key(node: ast.expr) -> bool:
    """`d["key"]` / `d[f"layer{i}"]`: a tensor is never indexed by a string."""
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def has_backward(loop: ast.stmt) -> bool:
    """Whether a loop body calls backward() or step()."""
    return any(
        isinstance(node, ast.Attribute) and node.attr in ("backward", "step")
        for stmt in getattr(loop, "body", ())
        for node in ast.walk(stmt)
    )


def always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def dotted(node: ast.AST) -> str:
    """`self.betas` for an attribute of a name (up to three deep), "" for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < 3:
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return ""
    return ".".join([node.id, *reversed(parts)])


def is_static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def writes_in_place(owner: ModuleModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function of another file can write in place. Helpers of other files that
    cannot, or that get no tensor, are treated as unknown calls: interpreting every utility
    and model factory of a library costs more than it finds."""
    start = owner.start_of(fn) - 1
    return is_candidate(
        "\n".join(owner.lines[fn.lineno - 1 + start : (fn.end_lineno or fn.lineno) + start])
    )


def names_in(node: ast.AST) -> set[str]:
    """The names an expression reads (`(total_loss / n).backward` reads total_loss, n)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
