"""The `inplace-false` codemod (`nn.ReLU(inplace=True)` -> `nn.ReLU(inplace=False)`, also in
functional calls), and the same for every `inplace=True` of one class.

A functional call on its own line (`F.relu(h, inplace=True)`) passes its result on through
`h`; `inplace=False` there would throw the result away, so it becomes `h = F.relu(h)`.
"""

from __future__ import annotations

import ast

import libcst as cst

from inplace_lsp.analysis.findings import Finding, Span
from inplace_lsp.fixes.cstedit import (
    clone_statement,
    find_statement,
    insert_before,
    rebind_call,
    stmt_span,
)
from inplace_lsp.fixes.plan import plan_write
from inplace_lsp.fixes.source import Edit, Located, Region, Source, region_for, walk_statements


def _is_inplace_true(arg: cst.Arg) -> bool:
    return (
        arg.keyword is not None
        and arg.keyword.value == "inplace"
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "True"
    )


def _is_flag(arg: cst.Arg) -> bool:
    """`inplace=True`, or a positional `True` (the finding says it is the `inplace` one)."""
    if arg.keyword is None and isinstance(arg.value, cst.Name) and arg.value.value == "True":
        return not arg.star
    return _is_inplace_true(arg)


class _Off(cst.CSTTransformer):
    """`inplace=True` -> `inplace=False` on the args chosen (all when `only` is None)."""

    def __init__(self, only: set[cst.Arg] | None = None) -> None:
        super().__init__()
        self.only = only

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        if self.only is None:
            flagged = _is_inplace_true(original_node)
        else:
            flagged = original_node in self.only and _is_flag(original_node)
        if flagged:
            return updated_node.with_changes(value=cst.Name("False"))
        return updated_node


def _edits(region: Region, only: set[cst.Arg] | None) -> list[Edit]:
    module = region.module.visit(_Off(only))
    assert isinstance(module, cst.Module)
    return region.edits_for_code(module.code)


def inplace_false(source: Source, finding: Finding) -> list[Edit] | None:
    if finding.fix is None:
        return None
    target = finding.fix.target
    found = source.statement(target, exact=False)
    if found is None:
        return None
    region = region_for(source, found)
    if region is None:
        return None
    args = [
        arg
        for arg in region.find(cst.Arg, lambda s: (s.line, s.col) == (target.line, target.col))
        if isinstance(arg, cst.Arg) and _is_flag(arg)
    ]
    if not args:
        return None
    node = find_statement(region, stmt_span(source, found))
    if (
        isinstance(node, cst.Expr)
        and isinstance(node.value, cst.Call)
        and any(arg is args[0] for arg in node.value.args)
    ):
        return _rebind(source, found, region, node, args[0], finding)
    return _edits(region, {args[0]}) or None


def _rebind(
    source: Source,
    found: Located,
    region: Region,
    node: cst.Expr,
    flag: cst.Arg,
    finding: Finding,
) -> list[Edit] | None:
    """`F.relu(h, inplace=True)` on its own line -> `h = F.relu(h)`, or a clone of `h` first
    where rebinding would change what the program computes (see `plan_write`)."""
    stmt = found.stmt
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    if not stmt.value.args or isinstance(stmt.value.args[0], ast.Starred):
        return None
    plan = plan_write(source, found, stmt.value.args[0], finding, rebind=True)
    if plan is None:
        return None
    if plan.kind == "clone":
        return insert_before(source, plan.anchor, clone_statement(plan.name))
    call = node.value
    assert isinstance(call, cst.Call)
    if flag.keyword is None:  # positional: it keeps its place, `F.leaky_relu(h, 0.2, False)`
        kept = [a.with_changes(value=cst.Name("False")) if a is flag else a for a in call.args]
    else:
        kept = [a for a in call.args if a is not flag]
    return region.replace(node, rebind_call(node, call, kept, plan.name))


def inplace_off_edits(source: Source, line: int) -> list[Edit]:
    """Every `inplace=True` in the class around `line` turned into `inplace=False`."""
    try:
        block = source.block(line, narrow=False)
    except SyntaxError:
        return []
    classes = [
        found
        for found in walk_statements(block.tree, (), block)
        if isinstance(found.stmt, ast.ClassDef)
        and found.line(found.stmt) <= line <= found.end_line(found.stmt)
    ]
    if not classes:
        return []
    found = classes[-1]  # the innermost
    if "inplace" not in source.text_of(
        Span(found.line(found.stmt), 0, found.end_line(found.stmt) + 1, 0)
    ):
        return []
    region = region_for(source, found)
    if region is None:
        return []
    return _edits(region, None)
