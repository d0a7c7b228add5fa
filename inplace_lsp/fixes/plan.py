"""Where a fix takes a write out of place so that the program still computes what it did:
rewrite the write itself, or clone the tensor first (before a `no_grad()` block, before the
view the write goes through), or refuse when the write is part of what a caller relies on.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

from inplace_lsp.analysis.findings import Finding
from inplace_lsp.fixes.scope import Scope, callers_rely, dotted, grad_off_with, locate, scope_of
from inplace_lsp.fixes.source import Located, Source

ALIAS_RULE = "IPL008"  # its very point is that the other names must NOT see the write


@dataclass(frozen=True)
class Plan:
    """`rebind`: rewrite the write out of place (`x = x + v`), the statement is `anchor`;
    `clone`: keep the write and insert `name = name.clone()` before `anchor`."""

    kind: Literal["rebind", "clone"]
    name: str
    anchor: Located


def saved_line(finding: Finding) -> int | None:
    """The line of this document whose op saved the tensor, when the finding names one."""
    for related in finding.related:
        if related.path is None and related.message.startswith("saved by"):
            return related.span.line
    return None


def plan_write(
    source: Source, found: Located, target: ast.expr, finding: Finding, rebind: bool
) -> Plan | None:
    """How to take the write of `found` into `target` (a name or `self.attr`) out of place;
    `rebind` says whether the write itself can be rewritten (else it stays, after a clone)."""
    name = dotted(target)
    if name is None:
        return None
    scope, found = scope_of(source, found)
    first, last = found.line(found.stmt), found.end_line(found.stmt)
    grad_with = grad_off_with(found)
    if "." in name:
        if grad_with is not None:
            return _clone_before(scope, finding, name, grad_with)
        if not rebind and _saved_within(finding, first, last):
            return None
        return Plan("rebind" if rebind else "clone", name, found)
    if not scope.is_local(name):
        return None
    root, chain = scope.view_chain(name, first)
    if chain:
        others = {b.name for b in chain[1:]} | {root}
        others.discard(name)
        live = any(scope.read_after(other, first, last) for other in others)
        first_view = chain[-1]
        if not live and scope.is_param_at(root, first_view.line):
            live = callers_rely(source, found, root)
        if live:
            # The write goes through a view and is meant to change the tensor it views:
            # clone that tensor before the view is taken, and the write changes the clone.
            if finding.code == ALIAS_RULE or not scope.is_local(root):
                return None
            if scope.is_param_at(root, first_view.line) and callers_rely(source, found, root):
                return None
            anchor = locate(scope.block, first_view.stmt)
            if anchor is None or grad_off_with(anchor) is not None:
                return None
            if _saved_after(scope, finding, first_view.line):
                return None
            return Plan("clone", root, anchor)
    if scope.is_param_at(name, first) and callers_rely(source, found, name):
        return None
    if grad_with is not None:
        # Rebinding under no_grad() would cut the graph: clone before the block instead.
        return _clone_before(scope, finding, name, grad_with)
    if not rebind and _saved_within(finding, first, last):
        return None  # `x[:, :c] = conv(x[:, :c])`: the clone would be what gets saved
    return Plan("rebind" if rebind else "clone", name, found)


def _clone_before(
    scope: Scope, finding: Finding, name: str, stmt: ast.With | ast.AsyncWith
) -> Plan | None:
    anchor = locate(scope.block, stmt)
    if anchor is None or _saved_after(scope, finding, anchor.line(stmt)):
        return None
    return Plan("clone", name, anchor)


def _saved_within(finding: Finding, first: int, last: int) -> bool:
    """Whether the write statement itself saved the tensor (before writing it)."""
    save = saved_line(finding)
    return save is not None and first <= save <= last


def _saved_after(scope: Scope, finding: Finding, line: int) -> bool:
    """Whether the save happens in this function at or after `line` (a clone placed there
    would be what gets saved)."""
    save = saved_line(finding)
    if save is None or not scope.is_function:
        return False
    node = scope.node
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return scope.line(node) <= save <= scope.end_line(node) and save >= line
