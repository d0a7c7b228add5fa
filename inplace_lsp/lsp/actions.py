"""Code actions for findings: the quick fix, fix-all (safe fixes only), "turn off in-place
activations in this class" and "suppress with # noqa", offered from the cached view and, where
the client resolves lazily, given their edits only in `codeAction/resolve`.

A quick fix is listed only where it applies to the code as it is (`fixes.fix_for`, computed
once per version): a safe one is preferred and joins fix-all; an unsafe one (it changes what
a caller sees) is listed with its reason, not preferred, and never in fix-all (ruff's
convention). Edits come from `inplace_lsp.fixes` (libcst codemods), imported where a fix is
first computed (the server loads libcst in its warm-up).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from lsprotocol import types

from inplace_lsp.analysis.findings import Finding, Span
from inplace_lsp.lsp import convert
from inplace_lsp.lsp.diagnostics import Item, View

if TYPE_CHECKING:
    from inplace_lsp.fixes import Fix

logger = logging.getLogger(__name__)

QUICKFIX = types.CodeActionKind.QuickFix.value
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.inplace-lsp"
KINDS = (QUICKFIX, FIX_ALL)
ACTIVATION_CODE = "IPL003"

# `data.action` of a lazily resolved action.
FIX, INPLACE_OFF, NOQA, FIX_ALL_ACTION = "fix", "inplaceOff", "noqa", "fixAll"

_CLASS = re.compile(r"^(\s*)class\s")


class Change(Protocol):
    """A text replacement in code-point columns: `fixes.Edit` and `convert.TextChange`."""

    @property
    def span(self) -> Span: ...

    @property
    def new_text(self) -> str: ...


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether a client asking for `only` kinds wants `kind` (kinds are dot-separated
    hierarchies: asking for "source.fixAll" includes "source.fixAll.inplace-lsp")."""
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


@dataclass(frozen=True)
class ClientEdits:
    """How the client takes edits."""

    lazy: bool  # resolves `edit` through codeAction/resolve
    document_changes: bool  # versioned TextDocumentEdits rather than a `changes` map


def code_actions(
    view: View,
    uri: str,
    span: Span,
    only: Sequence[str] | None,
    client: ClientEdits,
    beside: Sequence[types.Diagnostic] = (),
) -> list[types.CodeAction]:
    """The actions for the findings under `span` of `uri`, and fix-all for the document.
    `beside`: the diagnostics of a run or a verify under `span`; a finding of the analysis on
    one of their lines offers its fix for them too (the same line, the same fix)."""
    actions: list[types.CodeAction] = []
    on_line: dict[int, list[types.Diagnostic]] = {}
    for diagnostic in beside:
        on_line.setdefault(diagnostic.range.start.line + 1, []).append(diagnostic)
    items = [
        item
        for item in view.items_for(uri)
        if convert.overlaps(item.span, span) or item.span.line in on_line
    ]
    if wanted(QUICKFIX, only):
        for item in items:
            actions += _for_item(view, uri, item, on_line.get(item.span.line, []))
    if wanted(FIX_ALL, only):
        if any(_safe(view, item.finding) for item in view.items_for(uri)):
            actions.append(
                _action(
                    "Fix all safe in-place problems (inplace-lsp)",
                    FIX_ALL,
                    _data(view, uri, FIX_ALL_ACTION, None),
                    diagnostics=None,
                )
            )
    if client.lazy:
        return actions
    resolved = [resolve(view, action, client) for action in actions]
    return [action for action in resolved if action.edit is not None]


def _for_item(
    view: View, uri: str, item: Item, beside: list[types.Diagnostic]
) -> list[types.CodeAction]:
    finding = item.finding
    diagnostics = [item.diagnostic]
    actions: list[types.CodeAction] = []
    fix = fix_of(view, finding)
    if finding.fix is not None and fix is not None:
        title = f"{finding.fix.title} ({finding.code})"
        if not fix.safe:
            title = f"{finding.fix.title} ({finding.code}, unsafe: {fix.reason})"
        fixed = [*diagnostics, *beside]  # what a run found on the line goes with the rewrite
        action = _action(title, QUICKFIX, _data(view, uri, FIX, item), diagnostics=fixed)
        action.is_preferred = fix.safe or None
        actions.append(action)
    if (
        finding.code == ACTIVATION_CODE
        and enclosing_class(view.snapshot.lines, finding.span.line) is not None
    ):
        actions.append(
            _action(
                "Turn off in-place activations in this class",
                QUICKFIX,
                _data(view, uri, INPLACE_OFF, item),
                diagnostics=diagnostics,
            )
        )
    actions.append(
        _action(
            f"Suppress with `# noqa: {finding.code}`",
            QUICKFIX,
            _data(view, uri, NOQA, item),
            diagnostics=diagnostics,
        )
    )
    return actions


def _action(
    title: str, kind: str, data: dict[str, Any], diagnostics: list[types.Diagnostic] | None
) -> types.CodeAction:
    return types.CodeAction(title=title, kind=kind, diagnostics=diagnostics, data=data)


def _data(view: View, uri: str, action: str, item: Item | None) -> dict[str, Any]:
    data: dict[str, Any] = {"uri": uri, "version": view.version, "action": action}
    if item is not None:
        span = item.finding.span
        data.update(
            index=item.index,
            code=item.finding.code,
            span=[span.line, span.col, span.end_line, span.end_col],
        )
    return data


def fix_of(view: View, finding: Finding) -> Fix | None:
    """The finding's quick fix as it applies to this version (None: it has none, or it does
    not apply), computed once per version."""
    if finding.fix is None:
        return None
    span = finding.span
    key = ("fix-of", finding.code, span.line, span.col, span.end_line, span.end_col)
    if key not in view.edits:
        from inplace_lsp.fixes import fix_for

        try:
            view.edits[key] = fix_for(view.snapshot.text, finding)
        except Exception:  # a codemod that fails on odd code: no fix, not a failed request
            logger.exception("computing the fix of %s failed", finding.code)
            view.edits[key] = None
    return cast("Fix | None", view.edits[key])


def _safe(view: View, finding: Finding) -> bool:
    fix = fix_of(view, finding)
    return fix is not None and fix.safe


def enclosing_class(lines: Sequence[str], line: int) -> int | None:
    """The 1-based line of the `class` statement enclosing `line` (by indentation), if any."""
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1]
    indent = len(text) - len(text.lstrip())
    for number in range(line - 1, 0, -1):
        candidate = lines[number - 1]
        stripped = candidate.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(candidate) - len(stripped)
        if depth < indent:
            if _CLASS.match(candidate):
                return number
            indent = depth
        if indent == 0:
            return None
    return None


# ---------------------------------------------------------------- resolving edits


def find_item(view: View, data: dict[str, Any]) -> Item | None:
    """The finding an action was offered for: by index when the view is the one it came from,
    else by code and range (the document was re-analysed without moving it)."""
    code, span = data.get("code"), data.get("span")
    items = view.items
    index = data.get("index")
    if isinstance(index, int) and 0 <= index < len(items):
        item = items[index]
        if item.finding.code == code and _span_list(item.finding.span) == span:
            return item
    for item in items:
        if item.finding.code == code and _span_list(item.finding.span) == span:
            return item
    return None


def _span_list(span: Span) -> list[int]:
    return [span.line, span.col, span.end_line, span.end_col]


def changes_for(view: View, data: dict[str, Any]) -> list[Change] | None:
    """The text changes (program coordinates) of an action, None when there are none."""
    from inplace_lsp.fixes import inplace_off_edits, noqa_edit

    action = data.get("action")
    text = view.snapshot.text
    if action == FIX_ALL_ACTION:
        return _fix_all(view, str(data.get("uri")))
    item = find_item(view, data)
    if item is None:
        return None
    if action == FIX:
        fix = fix_of(view, item.finding)
        return list(fix.edits) if fix is not None else None
    if action == INPLACE_OFF:
        off = inplace_off_edits(text, item.finding.span.line)
        return list(off) if off else None
    if action == NOQA:
        return [noqa_edit(text, item.finding)]
    return None


def _fix_all(view: View, uri: str) -> list[Change] | None:
    from inplace_lsp.fixes import apply_safe_fixes

    findings = [item.finding for item in view.items_for(uri) if _safe(view, item.finding)]
    if not findings:
        return None
    old = view.snapshot.text
    change = convert.minimal_change(old, apply_safe_fixes(old, findings))
    return [change] if change is not None else None


def resolve(view: View, action: types.CodeAction, client: ClientEdits) -> types.CodeAction:
    """The action with its `edit`; unchanged (no edit) when the fix no longer applies."""
    data = action.data if isinstance(action.data, dict) else None
    if data is None:
        return action
    span = data.get("span")
    key = (
        data.get("action"),
        data.get("uri"),
        data.get("code"),
        tuple(span) if isinstance(span, list) else None,
    )
    if key not in view.edits:
        try:
            changes = changes_for(view, data)
        except Exception:  # a codemod that fails on odd code: no edit, not a failed request
            logger.exception("computing the edit of %r failed", action.title)
            changes = None
        view.edits[key] = (
            workspace_edit(view, changes, client.document_changes) if changes else None
        )
    edit = view.edits[key]
    if isinstance(edit, types.WorkspaceEdit):
        action.edit = edit
    return action


def workspace_edit(
    view: View, changes: Sequence[Change], document_changes: bool
) -> types.WorkspaceEdit | None:
    """Program-coordinate changes as edits of the documents (cells) they fall in; None when
    one falls outside every document."""
    by_cell: dict[str, list[types.TextEdit]] = {}
    versions: dict[str, int | None] = {}
    for change in changes:
        placed = view.layout.to_cell(change.span)
        if placed is None:
            return None
        cell, span = placed
        edit = convert.text_edit(span, change.new_text, view.lines_of(cell), view.encoding)
        by_cell.setdefault(cell.uri, []).append(edit)
        versions[cell.uri] = cell.version
    if document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    types.OptionalVersionedTextDocumentIdentifier(uri, versions[uri]),
                    list(edits),
                )
                for uri, edits in by_cell.items()
            ]
        )
    return types.WorkspaceEdit(changes=by_cell)
