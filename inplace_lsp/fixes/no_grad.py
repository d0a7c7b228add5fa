"""The `wrap-no-grad` codemod: put in-place updates of leaf tensors under
`with torch.no_grad():` (torch as this file imports it). Consecutive flagged statements share
one block, and a block right before or after them is extended rather than a second one added.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import libcst as cst

from inplace_lsp.analysis.findings import Finding
from inplace_lsp.fixes.cstedit import find_statement, leading, stmt_span
from inplace_lsp.fixes.imports import no_grad_call
from inplace_lsp.fixes.source import Edit, Located, Region, Source

Statement = cst.BaseStatement | cst.BaseSmallStatement


def _is_no_grad(call: ast.expr) -> bool:
    if not isinstance(call, ast.Call) or call.args or call.keywords:
        return False
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "no_grad") or (
        isinstance(func, ast.Name) and func.id == "no_grad"
    )


def _ast_no_grad_with(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.With)
        and len(stmt.items) == 1
        and stmt.items[0].optional_vars is None
        and _is_no_grad(stmt.items[0].context_expr)
    )


def _cst_no_grad_with(stmt: cst.CSTNode) -> bool:
    if not (isinstance(stmt, cst.With) and len(stmt.items) == 1 and stmt.asynchronous is None):
        return False
    item = stmt.items[0]
    call = item.item
    if item.asname is not None or not isinstance(call, cst.Call) or call.args:
        return False
    func = call.func
    named = (isinstance(func, cst.Attribute) and func.attr.value == "no_grad") or (
        isinstance(func, cst.Name) and func.value == "no_grad"
    )
    return named and isinstance(stmt.body, cst.IndentedBlock)


def groups(source: Source, findings: Sequence[Finding]) -> list[list[Located]]:
    """The statements of `findings`, grouped into runs of consecutive siblings."""
    located: dict[tuple[int, int], Located] = {}
    for finding in findings:
        if finding.fix is None:
            continue
        found = source.statement(finding.fix.target)
        if found is not None:
            located.setdefault((id(found.body), found.index), found)
    runs: list[list[Located]] = []
    for key in sorted(located, key=lambda k: (k[0], k[1])):
        found = located[key]
        last = runs[-1][-1] if runs else None
        if last is not None and last.body is found.body and last.index + 1 == found.index:
            runs[-1].append(found)
        else:
            runs.append([found])
    return runs


def wrap_no_grad(source: Source, statements: Sequence[Located]) -> list[Edit] | None:
    """Edits wrapping consecutive sibling statements in one `with torch.no_grad():`."""
    if not statements:
        return None
    body = statements[0].body
    first, last = statements[0].index, statements[-1].index
    if first > 0 and _ast_no_grad_with(body[first - 1]):
        first -= 1
    if last + 1 < len(body) and _ast_no_grad_with(body[last + 1]):
        last += 1
    head = statements[0]
    region = _region(source, head, head.line(body[first]), head.end_line(body[last]))
    if region is None:
        return None
    targets = [find_statement(region, stmt_span(source, found)) for found in statements]
    if any(t is None for t in targets):
        return None
    call_text, import_edits = no_grad_call(source)
    call = cst.parse_expression(call_text)
    wrap = _Wrap({t for t in targets if t is not None}, call, source.indent_unit())
    module = region.module.visit(wrap)
    assert isinstance(module, cst.Module)
    return [*import_edits, *region.edits_for_code(module.code)]


def _region(source: Source, found: Located, first: int, last: int) -> Region | None:
    region = Region.around(source, first, last)
    if region is not None:
        return region
    for node in reversed(found.ancestors):
        if isinstance(node, ast.stmt):
            region = Region.around(source, found.line(node), found.end_line(node))
            if region is not None:
                return region
    return None


class _Wrap(cst.CSTTransformer):
    def __init__(self, targets: set[Statement], call: cst.BaseExpression, unit: str) -> None:
        super().__init__()
        self.targets = targets
        self.call = call
        self.unit = unit

    def on_leave(
        self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
    ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, (cst.Module, cst.IndentedBlock)) and isinstance(
            result, (cst.Module, cst.IndentedBlock)
        ):
            return result.with_changes(body=self._body(original_node.body, result.body))
        suite = getattr(original_node, "body", None)
        new_suite = getattr(result, "body", None)
        if (
            isinstance(suite, cst.SimpleStatementSuite)
            and isinstance(new_suite, cst.SimpleStatementSuite)
            and isinstance(result, cst.CSTNode)
            and any(s in self.targets for s in suite.body)
        ):
            # `for p in ps: p.clamp_(0, 1)`: the body becomes an indented block first
            original_line = cst.SimpleStatementLine(body=suite.body)
            line = cst.SimpleStatementLine(
                body=_without_last_semicolon(new_suite.body),
                trailing_whitespace=new_suite.trailing_whitespace,
            )
            block = cst.IndentedBlock(body=self._body([original_line], [line]), indent=self.unit)
            return result.with_changes(body=block)
        return result

    def _body(
        self, originals: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> list[cst.BaseStatement]:
        pieces: list[tuple[bool, cst.BaseStatement]] = []
        for old, new in zip(originals, updated, strict=True):
            if isinstance(old, cst.SimpleStatementLine) and isinstance(
                new, cst.SimpleStatementLine
            ):
                if any(s in self.targets for s in old.body):
                    pieces += self._split(old, new)
                    continue
            pieces.append((old in self.targets, new))
        out: list[cst.BaseStatement] = []
        i = 0
        while i < len(pieces):
            if not pieces[i][0]:
                out.append(pieces[i][1])
                i += 1
                continue
            j = i
            while j < len(pieces) and pieces[j][0]:
                j += 1
            group = [stmt for _, stmt in pieces[i:j]]
            if out and _cst_no_grad_with(out[-1]):
                out[-1] = _extend(out[-1], group, at_end=True)
            elif j < len(pieces) and _cst_no_grad_with(pieces[j][1]):
                pieces[j] = (False, _extend(pieces[j][1], group, at_end=False))
            else:
                lead = leading(group[0])
                group[0] = group[0].with_changes(leading_lines=[])
                out.append(
                    cst.With(
                        items=[cst.WithItem(item=self.call)],
                        body=cst.IndentedBlock(body=group, indent=self.unit),
                        leading_lines=lead,
                    )
                )
            i = j
        return out

    def _split(
        self, old: cst.SimpleStatementLine, new: cst.SimpleStatementLine
    ) -> list[tuple[bool, cst.BaseStatement]]:
        """`a = 1; w -= g` -> `a = 1` and `w -= g` on lines of their own (targets apart)."""
        runs: list[tuple[bool, list[cst.BaseSmallStatement]]] = []
        for o, n in zip(old.body, new.body, strict=True):
            flagged = o in self.targets
            if runs and runs[-1][0] == flagged:
                runs[-1][1].append(n)
            else:
                runs.append((flagged, [n]))
        if len(runs) == 1:
            return [(runs[0][0], new)]
        out: list[tuple[bool, cst.BaseStatement]] = []
        for k, (flagged, smalls) in enumerate(runs):
            line = cst.SimpleStatementLine(
                body=_without_last_semicolon(smalls),
                leading_lines=new.leading_lines if k == 0 else [],
                trailing_whitespace=(
                    new.trailing_whitespace if k == len(runs) - 1 else cst.TrailingWhitespace()
                ),
            )
            out.append((flagged, line))
        return out


def _without_last_semicolon(
    smalls: Sequence[cst.BaseSmallStatement],
) -> list[cst.BaseSmallStatement]:
    out = list(smalls)
    out[-1] = out[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return out


def _extend(block: cst.BaseStatement, group: list[cst.BaseStatement], at_end: bool) -> cst.With:
    assert isinstance(block, cst.With) and isinstance(block.body, cst.IndentedBlock)
    inner = list(block.body.body)
    if at_end:
        return block.with_changes(body=block.body.with_changes(body=[*inner, *group]))
    # the group goes first: it takes the block's place, the block's comments move inside
    lead = leading(group[0])
    group = [group[0].with_changes(leading_lines=[]), *group[1:]]
    if inner:
        inner[0] = inner[0].with_changes(leading_lines=[*block.leading_lines, *leading(inner[0])])
    return block.with_changes(
        leading_lines=lead, body=block.body.with_changes(body=[*group, *inner])
    )
