"""Codemods that keep a write in place but make it land in a copy: `clone-setitem`
(`x[:, :d] = y` -> `x = x.clone()` first) and `detach-clone` (`z = y.detach()` ->
`z = y.detach().clone()` where the alias is made).
"""

from __future__ import annotations

import ast

import libcst as cst

from inplace_lsp.analysis.findings import Finding, Severity, Span
from inplace_lsp.fixes.cstedit import (
    clone_statement,
    expr_span,
    find_expression,
    insert_before,
)
from inplace_lsp.fixes.plan import plan_write
from inplace_lsp.fixes.scope import (
    VIEW_ATTRS,
    VIEW_METHODS,
    Binding,
    Scope,
    locate,
    scope_of,
    written_root,
)
from inplace_lsp.fixes.source import Edit, Located, Source, region_for


def _subscript_targets(stmt: ast.stmt) -> list[ast.Subscript]:
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    else:
        return []
    return [t for t in targets if isinstance(t, ast.Subscript)]


def _starts_at(source: Source, found: Located, node: ast.expr, span: Span) -> bool:
    return expr_span(source, found, node) == span


def clone_setitem(source: Source, finding: Finding) -> list[Edit] | None:
    if finding.fix is None:
        return None
    found = source.statement(finding.fix.target)
    if found is None:
        return None
    subscripts = _subscript_targets(found.stmt)
    if not subscripts:
        return None
    chosen = next((t for t in subscripts if _starts_at(source, found, t, finding.span)), None)
    root = written_root(chosen if chosen is not None else subscripts[0])
    plan = plan_write(source, found, root, finding, rebind=False)
    if plan is None:
        return None
    return insert_before(source, plan.anchor, clone_statement(plan.name))


# ---------------------------------------------------------------------- detach-clone


def _written(source: Source, found: Located, span: Span) -> ast.expr | None:
    """The tensor expression the statement writes into in place."""
    subscripts = _subscript_targets(found.stmt)
    if subscripts:
        chosen = next((t for t in subscripts if _starts_at(source, found, t, span)), subscripts[0])
        return written_root(chosen)
    if isinstance(found.stmt, ast.AugAssign):
        return found.stmt.target
    for node in ast.walk(found.stmt):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _starts_at(source, found, node, span)
        ):
            return written_root(node.func.value)
    return None


def _detach_in(value: ast.expr) -> ast.expr | None:
    """The `.detach()` call or `.data` attribute a view chain starts from."""
    node = value
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "detach" and not node.args and not node.keywords:
                return node
            if node.func.attr not in VIEW_METHODS:
                return None
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if node.attr == "data":
                return node
            if node.attr not in VIEW_ATTRS:
                return None
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return None


def detach_clone(source: Source, finding: Finding) -> list[Edit] | None:
    """Clone where the alias is made. A write through `p.detach()` is also how one updates a
    parameter or a gradient without autograd (`p.detach().mul_(0.9)`): unless backward fails
    (an Error), only aliases of a tensor computed in this function are cloned."""
    if finding.fix is None:
        return None
    found = source.statement(finding.fix.target)
    if found is None:
        return None
    written = _written(source, found, finding.span)
    if not isinstance(written, ast.Name):
        return None
    scope, located = scope_of(source, found)
    binding = scope.binding_before(written.id, located.line(located.stmt))
    alias = _detach_in(binding.value) if binding is not None and binding.value else None
    if binding is not None and alias is not None:
        if finding.severity is not Severity.ERROR and not _computed_here(scope, alias, binding):
            return None
        edits = _clone_at(source, locate(scope.block, binding.stmt), alias)
        if edits is not None:
            return edits
    if finding.severity is not Severity.ERROR:
        return None
    plan = plan_write(source, found, written, finding, rebind=False)
    if plan is None:
        return None
    return insert_before(source, plan.anchor, clone_statement(plan.name))


def _computed_here(scope: Scope, alias: ast.expr, binding: Binding) -> bool:
    """Whether the tensor `alias` detaches is one this function computed (`y = self.fc(x)`),
    not a parameter, a loop variable or an attribute that outlives the call."""
    holder = alias.func if isinstance(alias, ast.Call) else alias
    base = holder.value if isinstance(holder, ast.Attribute) else None
    if not isinstance(base, ast.Name) or scope.is_param_at(base.id, binding.line):
        return False
    origin = scope.binding_before(base.id, binding.line)
    return (
        origin is not None
        and origin.value is not None
        and not isinstance(origin.value, (ast.Name, ast.Attribute, ast.Subscript))
    )


def _clone_at(source: Source, found: Located | None, alias: ast.expr) -> list[Edit] | None:
    """`.detach()` -> `.detach().clone()`, `.data` -> `.detach().clone()` in `found`."""
    if found is None:
        return None
    region = region_for(source, found)
    if region is None:
        return None
    span = expr_span(source, found, alias)
    kind: type[cst.CSTNode] = cst.Call if isinstance(alias, ast.Call) else cst.Attribute
    node = find_expression(region, span, kind)
    if node is None:
        return None
    if isinstance(node, cst.Attribute):  # x.data
        detached: cst.BaseExpression = cst.Call(
            func=cst.Attribute(value=node.value, attr=cst.Name("detach"))
        )
    else:
        assert isinstance(node, cst.Call)
        detached = node.with_changes(lpar=[], rpar=[])
    clone = cst.Call(
        func=cst.Attribute(value=detached, attr=cst.Name("clone")), lpar=node.lpar, rpar=node.rpar
    )
    return region.replace(node, clone)
