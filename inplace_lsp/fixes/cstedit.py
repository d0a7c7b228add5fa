"""libcst node surgery the codemods share: find a statement of a region by its span, insert a
statement before another, parenthesize by precedence, build `name = name.clone()`.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import cast

import libcst as cst

from inplace_lsp.analysis.findings import Span
from inplace_lsp.fixes.source import Edit, Located, Region, Source, region_for

Statement = cst.BaseStatement | cst.BaseSmallStatement


def stmt_span(source: Source, found: Located) -> Span:
    return expr_span(source, found, found.stmt)


def expr_span(source: Source, found: Located, node: ast.expr | ast.stmt) -> Span:
    """The document span of an `ast` node of `found`'s block."""
    line, end_line = found.line(node), found.end_line(node)
    return Span(
        line,
        source.col(line, node.col_offset),
        end_line,
        source.col(end_line, node.end_col_offset or 0),
    )


def find_statement(region: Region, span: Span) -> Statement | None:
    """The small statement with exactly `span`, or the compound statement starting there."""
    for node in region.positions():
        if isinstance(node, cst.BaseSmallStatement) and region.range_of(node) == span:
            return node
        if isinstance(node, cst.BaseCompoundStatement):
            found = region.range_of(node)
            if (found.line, found.col) == (span.line, span.col):
                return node
    return None


def find_expression(region: Region, span: Span, kind: type[cst.CSTNode]) -> cst.CSTNode | None:
    for node in region.positions():
        if isinstance(node, kind) and region.range_of(node) == span:
            return node
    return None


def leading(stmt: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    """The blank and comment lines above a statement."""
    if isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        return stmt.leading_lines
    return ()


def clone_statement(name: str) -> cst.BaseSmallStatement:
    line = cst.parse_statement(f"{name} = {name}.clone()")
    assert isinstance(line, cst.SimpleStatementLine)
    return line.body[0]


def rebind_call(
    statement: cst.Expr, call: cst.Call, args: Sequence[cst.Arg], name: str
) -> cst.Assign:
    """`name = call(args)` in place of the bare call statement `statement`: the call with the
    arguments given (a trailing comma dropped), its result bound instead of thrown away."""
    kept = list(args)
    if kept:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    target = cst.parse_expression(name)
    assert isinstance(target, (cst.Name, cst.Attribute))
    return cst.Assign(
        targets=[cst.AssignTarget(target=target)],
        value=call.with_changes(args=kept),
        semicolon=statement.semicolon,
    )


def insert_before(
    source: Source,
    anchor: Located,
    new: cst.BaseSmallStatement,
    replace: dict[cst.CSTNode, cst.CSTNode] | None = None,
    region: Region | None = None,
) -> list[Edit] | None:
    """Edits inserting `new` before the statement `anchor` (on a line of its own, with the
    blank lines and comments above the anchor kept above both), optionally also replacing
    nodes (of `region`, the one holding the anchor) inside the anchor."""
    if region is None:
        region = region_for(source, anchor)
    if region is None:
        return None
    node = find_statement(region, stmt_span(source, anchor))
    if node is None:
        return None
    module = region.module.visit(_InsertBefore(node, new, replace or {}))
    assert isinstance(module, cst.Module)
    return region.edits_for_code(module.code)


class _InsertBefore(cst.CSTTransformer):
    def __init__(
        self,
        anchor: Statement,
        new: cst.BaseSmallStatement,
        replace: dict[cst.CSTNode, cst.CSTNode],
    ) -> None:
        super().__init__()
        self.anchor = anchor
        self.new = new
        self.replace = replace

    def on_leave(
        self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
    ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        replacement = self.replace.get(original_node)
        if replacement is not None:
            return cast(cst.CSTNodeT, replacement)
        return super().on_leave(original_node, updated_node)

    def _in_line(
        self, original: Sequence[cst.BaseSmallStatement], updated: Sequence[cst.BaseSmallStatement]
    ) -> list[cst.BaseSmallStatement] | None:
        if self.anchor not in original:
            return None
        out: list[cst.BaseSmallStatement] = []
        for old, new in zip(original, updated, strict=True):
            if old is self.anchor:
                out.append(self.new.with_changes(semicolon=cst.MaybeSentinel.DEFAULT))
            out.append(new)
        return out

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if len(original_node.body) > 1:
            body = self._in_line(original_node.body, updated_node.body)
            if body is not None:
                return updated_node.with_changes(body=body)
        return updated_node

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        body = self._in_line(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body)

    def _in_block(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> list[cst.BaseStatement] | None:
        out: list[cst.BaseStatement] = []
        hit = False
        for old, new in zip(original, updated, strict=True):
            whole = old is self.anchor or (
                isinstance(old, cst.SimpleStatementLine)
                and len(old.body) == 1
                and old.body[0] is self.anchor
            )
            if whole:
                hit = True
                out.append(cst.SimpleStatementLine(body=[self.new], leading_lines=leading(new)))
                new = new.with_changes(leading_lines=[])
            out.append(new)
        return out if hit else None

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = self._in_block(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._in_block(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body)


# ---------------------------------------------------------------------- precedence

_BINARY = {
    cst.BitOr: 7,
    cst.BitXor: 8,
    cst.BitAnd: 9,
    cst.LeftShift: 10,
    cst.RightShift: 10,
    cst.Add: 11,
    cst.Subtract: 11,
    cst.Multiply: 12,
    cst.Divide: 12,
    cst.FloorDivide: 12,
    cst.Modulo: 12,
    cst.MatrixMultiply: 12,
    cst.Power: 14,
}
ATOM = 16


def precedence(node: cst.BaseExpression) -> int:
    """Python's binding strength of an expression (higher binds tighter; parenthesized = atom)."""
    if node.lpar:
        return ATOM
    if isinstance(node, (cst.NamedExpr, cst.Yield)):
        return 0
    if isinstance(node, cst.Lambda):
        return 1
    if isinstance(node, cst.IfExp):
        return 2
    if isinstance(node, cst.BooleanOperation):
        return 3 if isinstance(node.operator, cst.Or) else 4
    if isinstance(node, cst.UnaryOperation):
        return 5 if isinstance(node.operator, cst.Not) else 13
    if isinstance(node, cst.Comparison):
        return 6
    if isinstance(node, cst.BinaryOperation):
        return _BINARY.get(type(node.operator), 11)
    if isinstance(node, cst.Await):
        return 15
    return ATOM


def operator_precedence(operator: cst.BaseBinaryOp) -> int:
    return _BINARY.get(type(operator), 11)


def parenthesize(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def right_operand(node: cst.BaseExpression, operator: cst.BaseBinaryOp) -> cst.BaseExpression:
    """`node` as the right operand of `operator`, parenthesized when it would bind looser."""
    strength = operator_precedence(operator)
    own = precedence(node)
    if isinstance(operator, cst.Power):
        needs = own < 13  # `h ** -x` and `h ** a ** b` read as written
    else:
        needs = own <= strength
    return parenthesize(node) if needs else node


def receiver(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node` as the object of an attribute access (`(a + b).item()`)."""
    if precedence(node) < ATOM or isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return parenthesize(node)
    return node
