"""Codemods that rewrite an in-place write out of place: `augassign` (`h += x` -> `h = h + x`),
`method-out-of-place` (`x.add_(y)` -> `x = x.add(y)`, chains and `out=` too) and the unsafe
`item` (`total += loss` -> `total += loss.item()`).

Where rebinding the name would change what the program computes (the write sits under
`no_grad()`, or goes through a view of a tensor read later) the plan says to clone first
instead; where a caller relies on the write, there is no fix.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

import libcst as cst

from inplace_lsp.analysis import knowledge
from inplace_lsp.analysis.findings import Finding, Span
from inplace_lsp.fixes.cstedit import (
    clone_statement,
    expr_span,
    find_expression,
    find_statement,
    insert_before,
    rebind_call,
    receiver,
    right_operand,
    stmt_span,
)
from inplace_lsp.fixes.plan import Plan, plan_write
from inplace_lsp.fixes.scope import scope_of
from inplace_lsp.fixes.source import Edit, Located, Region, Source, region_for

# In-place methods without an out-of-place twin of the same meaning: `x = x.clone().op_()`.
# From the knowledge table (in place, no out-of-place variant: fill_, zero_, copy_, normal_...;
# `bernoulli()` exists but reads x as probabilities, so the table gives `bernoulli_` none),
# and the methods that take a Python callable, which the table cannot probe.
NO_TWIN = frozenset(
    name
    for name, op in knowledge.load().methods().items()
    if name.endswith("_") and not name.endswith("__")
    if op.inplace and op.outofplace_variant is None
) | {"apply_", "map_", "map2_"}
# In-place methods that change metadata or storage, not values: no out-of-place rewrite.
NOT_REWRITTEN = frozenset(
    {"requires_grad_", "resize_", "resize_as_", "set_", "share_memory_", "detach_", "retain_grad"}
)


def _clone_edits(source: Source, plan: Plan) -> list[Edit] | None:
    return insert_before(source, plan.anchor, clone_statement(plan.name))


def _located(source: Source, finding: Finding) -> Located | None:
    return None if finding.fix is None else source.statement(finding.fix.target)


# ---------------------------------------------------------------------- augassign


def augassign(source: Source, finding: Finding) -> list[Edit] | None:
    found = _located(source, finding)
    if found is None or not isinstance(found.stmt, ast.AugAssign):
        return None
    if not isinstance(found.stmt.target, (ast.Name, ast.Attribute)):
        return None
    plan = plan_write(source, found, found.stmt.target, finding, rebind=True)
    if plan is None:
        return None
    if plan.kind == "clone":
        return _clone_edits(source, plan)
    region = region_for(source, found)
    if region is None:
        return None
    node = find_statement(region, stmt_span(source, found))
    if not isinstance(node, cst.AugAssign):
        return None
    return region.replace(node, out_of_place_assign(node))


def _simple(whitespace: object) -> cst.SimpleWhitespace:
    if isinstance(whitespace, cst.SimpleWhitespace):
        return whitespace
    return cst.SimpleWhitespace(" ")


def out_of_place_assign(node: cst.AugAssign) -> cst.Assign:
    """`h += x` -> `h = h + x` (the right side parenthesized when it binds looser)."""
    op = node.operator
    binary = getattr(cst, type(op).__name__.removesuffix("Assign"))()
    assert isinstance(binary, cst.BaseBinaryOp)
    before, after = (
        _simple(getattr(op, side, None)) for side in ("whitespace_before", "whitespace_after")
    )
    return cst.Assign(
        targets=[
            cst.AssignTarget(
                target=node.target, whitespace_before_equal=before, whitespace_after_equal=after
            )
        ],
        value=cst.BinaryOperation(
            left=node.target.deep_clone(),
            operator=binary,
            right=right_operand(node.value, binary),
        ),
        semicolon=node.semicolon,
    )


# ---------------------------------------------------------------------- item


def item(source: Source, finding: Finding) -> list[Edit] | None:
    found = _located(source, finding)
    if found is None or not isinstance(found.stmt, ast.AugAssign):
        return None
    value = found.stmt.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr in ("item", "detach", "tolist"):
            return None
    region = region_for(source, found)
    if region is None:
        return None
    node = find_statement(region, stmt_span(source, found))
    if not isinstance(node, cst.AugAssign):
        return None
    call = cst.Call(func=cst.Attribute(value=receiver(node.value), attr=cst.Name("item")))
    return region.replace(node, node.with_changes(value=call))


# ---------------------------------------------------------------------- methods


def _inplace_name(node: cst.CSTNode) -> str | None:
    """The method name of `<expr>.name_(...)` when it is an in-place tensor method."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    name = node.func.attr.value
    if name.endswith("_") and not name.endswith("__") and name not in NOT_REWRITTEN:
        return name
    return None


def _chain(region_nodes: list[cst.CSTNode], innermost: cst.Call) -> list[cst.Call]:
    """`h.mul_(a).add_(b)`: the in-place calls applied one on the result of the other."""
    chain = [innermost]
    while True:
        outer = next(
            (
                node
                for node in region_nodes
                if isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.value is chain[-1]
                and _inplace_name(node) is not None
            ),
            None,
        )
        if outer is None:
            return chain
        chain.append(outer)


def _rewrite_chain(call: cst.Call, inner: cst.BaseExpression | None) -> cst.Call:
    """One call of the chain out of place, on top of the already rewritten `inner`."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    base = inner if inner is not None else func.value
    name = func.attr.value
    if name in NO_TWIN:
        clone = cst.Call(func=cst.Attribute(value=base, attr=cst.Name("clone")))
        return call.with_changes(func=func.with_changes(value=clone))
    return call.with_changes(func=func.with_changes(value=base, attr=cst.Name(name[:-1])))


def _ast_call(source: Source, found: Located, span: Span) -> ast.Call | None:
    for node in ast.walk(found.stmt):
        if isinstance(node, ast.Call) and expr_span(source, found, node) == span:
            return node
    return None


def method_out_of_place(source: Source, finding: Finding) -> list[Edit] | None:
    found = _located(source, finding)
    if found is None:
        return None
    call = _ast_call(source, found, finding.span)
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    out = next((k.value for k in call.keywords if k.arg == "out"), None)
    if out is not None:
        return _out_argument(source, finding, found, out)
    if not call.func.attr.endswith("_") or call.func.attr in NOT_REWRITTEN:
        return None
    site = _rebind_site(source, finding, found, call.func.value)
    if not isinstance(site, _Site):
        return site
    innermost = find_expression(site.region, finding.span, cst.Call)
    if site.statement is None or not isinstance(innermost, cst.Call):
        return None
    chain = _chain(list(site.region.positions()), innermost)
    rewritten: cst.BaseExpression | None = None
    for link in chain:
        rewritten = _rewrite_chain(link, rewritten)
    assert rewritten is not None
    # An IPL003 read-after warning wants the other name to keep the old values: no rebinding.
    keep = finding.fix is None or finding.fix.param("rebind-others") != "no"
    return _rebind(
        source, found, site.region, site.statement, chain[-1], rewritten, site.name, keep
    )


class _Site(NamedTuple):
    """Where a write is rewritten to rebind `name`: the parsed region and its statement."""

    name: str
    region: Region
    statement: cst.CSTNode | None


def _rebind_site(
    source: Source, finding: Finding, found: Located, written: ast.expr
) -> list[Edit] | _Site | None:
    """The clone edits when the plan is to clone first; else where to rebind; None when the
    write cannot be fixed."""
    plan = plan_write(source, found, written, finding, rebind=True)
    if plan is None:
        return None
    if plan.kind == "clone":
        return _clone_edits(source, plan)
    region = region_for(source, found)
    if region is None:
        return None
    return _Site(plan.name, region, find_statement(region, stmt_span(source, found)))


def _rebind(
    source: Source,
    found: Located,
    region: Region,
    statement: cst.CSTNode,
    old: cst.BaseExpression,
    new: cst.BaseExpression,
    name: str,
    keep: bool = True,
) -> list[Edit] | None:
    """Put `name = <new>` where `old` was evaluated (in an assignment, also rebind `name`
    when it is read later and `keep`)."""
    target = cst.parse_expression(name)
    assert isinstance(target, (cst.Name, cst.Attribute))
    if isinstance(statement, cst.Expr) and statement.value is old:
        assign = cst.Assign(
            targets=[cst.AssignTarget(target=target)],
            value=new.with_changes(lpar=[], rpar=[]),
            semicolon=statement.semicolon,
        )
        return region.replace(statement, assign)
    if isinstance(statement, cst.Assign) and statement.value is old:
        targets = list(statement.targets)
        written = {cst.Module([]).code_for_node(t.target) for t in targets}
        scope, located = scope_of(source, found)
        first, last = located.line(located.stmt), located.end_line(located.stmt)
        if keep and name not in written and scope.read_after(name.split(".")[0], first, last):
            targets.append(cst.AssignTarget(target=target))
        return region.replace(statement, statement.with_changes(targets=targets, value=new))
    return _hoist(source, found, region, statement, old, new, target)


_DEFERRED = (
    cst.Lambda,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.IfExp,
    cst.BooleanOperation,
)


def _hoist(
    source: Source,
    found: Located,
    region: Region,
    statement: cst.CSTNode,
    old: cst.BaseExpression,
    new: cst.BaseExpression,
    target: cst.BaseAssignTargetExpression,
) -> list[Edit] | None:
    """`return t.pow_(2).mean()` -> `t = t.pow(2)` + `return t.mean()`: only when nothing else
    in the statement reads the name (which would now see the new value earlier) and the call
    is evaluated exactly once."""
    if not isinstance(statement, cst.BaseSmallStatement):
        return None
    name = cst.Module([]).code_for_node(target)
    path = _path_to(statement, old)
    if path is None or any(isinstance(node, _DEFERRED) for node in path):
        return None
    uses = sum(
        1
        for node in _descendants(statement)
        if isinstance(node, (cst.Name, cst.Attribute))
        and cst.Module([]).code_for_node(node).strip() == name
    )
    if uses != 1:
        return None
    assign_line = cst.parse_statement(f"{name} = x")
    assert isinstance(assign_line, cst.SimpleStatementLine)
    assign = assign_line.body[0]
    assert isinstance(assign, cst.Assign)
    assign = assign.with_changes(value=new.with_changes(lpar=[], rpar=[]))
    replacement = target.deep_clone().with_changes(lpar=old.lpar, rpar=old.rpar)
    return insert_before(source, found, assign, {old: replacement}, region)


def _descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.children)
    return out


def _path_to(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    if root is target:
        return []
    for child in root.children:
        path = _path_to(child, target)
        if path is not None:
            return [root, *path]
    return None


def _out_argument(
    source: Source, finding: Finding, found: Located, out: ast.expr
) -> list[Edit] | None:
    """`torch.sub(x, m, out=x)` -> `x = torch.sub(x, m)` (an expression statement only)."""
    if not isinstance(found.stmt, ast.Expr) or not isinstance(found.stmt.value, ast.Call):
        return None
    site = _rebind_site(source, finding, found, out)
    if not isinstance(site, _Site):
        return site
    statement = site.statement
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return None
    call = statement.value
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == "out")]
    return site.region.replace(statement, rebind_call(statement, call, args, site.name))
