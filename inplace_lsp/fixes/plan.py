"""Where a fix takes a write out of place so that the program still computes what it did:
rewrite the write itself, or clone the tensor first (before a `no_grad()` block, before the
view the write goes through, before another name or container takes the tensor and reads it
after the write), or refuse when the write is part of what a caller relies on. Asked for an
unsafe fix (`MODE`), it takes a write into an argument out of place all the same and says why
the fix is unsafe: the caller no longer sees its tensor change.
"""

from __future__ import annotations

import ast
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from inplace_lsp.analysis.findings import Finding
from inplace_lsp.fixes.scope import (
    Scope,
    callers_rely,
    dotted,
    grad_off_with,
    locate,
    scope_of,
    written_root,
)
from inplace_lsp.fixes.source import Located, Source

ALIAS_RULE = "IPL008"  # its very point is that the other names must NOT see the write


@dataclass
class FixMode:
    """What the codemods run under it may do: `unsafe` lets a fix change what a caller sees;
    `reasons` says why the fixes they made are unsafe."""

    unsafe: bool = False
    reasons: list[str] = field(default_factory=list)


MODE: ContextVar[FixMode | None] = ContextVar("inplace_lsp_fix_mode", default=None)


def _caller_may_change(name: str) -> bool:
    """Whether the fix may go on although a caller may read the argument `name` after the
    call (an unsafe fix: the caller would no longer see the tensor change)."""
    mode = MODE.get()
    if mode is None or not mode.unsafe:
        return False
    mode.reasons.append(f"`{name}` is an argument: its caller would no longer see it change")
    return True


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
            if (
                scope.is_param_at(root, first_view.line)
                and callers_rely(source, found, root)
                and not _caller_may_change(root)
            ):
                return None
            anchor = locate(scope.block, first_view.stmt)
            if anchor is None or grad_off_with(anchor) is not None:
                return None
            if _saved_after(scope, finding, first_view.line):
                return None
            return Plan("clone", root, anchor)
    if (
        scope.is_param_at(name, first)
        and callers_rely(source, found, name)
        and not _caller_may_change(name)
    ):
        return None
    hides_from_others = finding.code != ALIAS_RULE and not (
        finding.fix is not None and finding.fix.param("rebind-others") == "no"
    )
    shared = _shared_before(scope, name, first, last) if hides_from_others else None
    if shared is not None:
        # `g = h` (or a view, a list, an attribute holding h) is read after the write:
        # rebinding h, or cloning it at the write, would hide the write from g. Clone h
        # before g takes it instead; the write then changes the clone that both share.
        anchor = locate(scope.block, shared)
        if anchor is None or grad_off_with(anchor) is not None:
            return None
        if _saved_after(scope, finding, anchor.line(shared)):
            return None
        return Plan("clone", name, anchor)
    if grad_with is not None:
        # Rebinding under no_grad() would cut the graph: clone before the block instead.
        return _clone_before(scope, finding, name, grad_with)
    if not rebind and _saved_within(finding, first, last):
        return None  # `x[:, :c] = conv(x[:, :c])`: the clone would be what gets saved
    return Plan("rebind" if rebind else "clone", name, found)


_STORES = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "put"})


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body and of the blocks inside it, not of nested defs or classes."""
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for part in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, part, None)
            if isinstance(inner, list):
                found += _statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            found += _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            found += _statements(case.body)
    return found


def _names_in(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _shared_before(scope: Scope, name: str, first: int, last: int) -> ast.stmt | None:
    """The first statement between the binding of `name` and its write on [first, last]
    that lets something else hold the same tensor (`g = name`, `v = name.view(-1)`,
    `outs.append(name)`, `self.cache = name`, `pair = (name, x)`), when that holder can be
    read after the write."""
    own = scope.binding_before(name, first)
    start = own.end_line if own is not None else 0
    held = {name}
    shared: ast.stmt | None = None
    live = False
    for stmt in sorted(_statements(scope.node.body), key=lambda s: (s.lineno, s.col_offset)):
        line = scope.line(stmt)
        if line <= start or line >= first:
            continue
        holders: list[ast.expr] = []
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets: list[ast.expr] = (
                list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]
            )
            root = written_root(stmt.value)
            if isinstance(root, ast.Name) and root.id in held:
                holders = targets
            elif not isinstance(stmt.value, ast.Call) and _names_in(stmt.value, held):
                # a display (`[h]`, `(h, x)`, `{"h": h}`) or an expression that may keep h
                if any(
                    isinstance(n, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and _names_in(n, held)
                    for n in ast.walk(stmt.value)
                ):
                    holders = targets
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr in _STORES
            and any(_names_in(a, held) for a in stmt.value.args)
        ):
            holders = [stmt.value.func.value]
        if not holders:
            continue
        for holder in holders:
            if isinstance(holder, ast.Name):
                held.add(holder.id)
                live |= scope.read_after(holder.id, first, last)
            else:  # an attribute, a subscript, a container: readable from anywhere
                live = True
        shared = shared or stmt
    return shared if live else None


def _clone_before(
    scope: Scope, finding: Finding, name: str, stmt: ast.With | ast.AsyncWith
) -> Plan | None:
    anchor = locate(scope.block, stmt)
    if anchor is None or _saved_after(scope, finding, anchor.line(stmt)):
        return None
    if (
        "." not in name
        and name not in scope.params
        and not scope.binding_before(name, anchor.line(stmt))
    ):
        return None  # bound inside the block (`for e in ...:`): no tensor to clone before it
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
