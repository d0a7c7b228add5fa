"""Hover on a flagged range: what the diagnostic itself does not say (the op that saved the
tensor, the tensor's version history, the rule's documentation with a link), and the message
of a hint that is not published as a diagnostic."""

from __future__ import annotations

import functools

from lsprotocol import types

from inplace_lsp.analysis.rules import RULES
from inplace_lsp.analysis.rules.base import rule_uri
from inplace_lsp.lsp import convert
from inplace_lsp.lsp.diagnostics import Item, View


@functools.cache
def rule_docs() -> dict[str, tuple[str, str]]:
    """Code -> (name, first paragraph of the rule's docstring, on one line)."""
    docs: dict[str, tuple[str, str]] = {}
    for rule in RULES:
        paragraph = (rule.__doc__ or "").strip().split("\n\n", 1)[0]
        docs[rule.CODE] = (rule.NAME, " ".join(paragraph.split()))
    return docs


def item_at(view: View, uri: str, line: int, col: int) -> Item | None:
    """The most severe finding whose range holds (1-based line, code-point column)."""
    hits = [
        item for item in view.items_for(uri, hidden=True) if convert.contains(item.span, line, col)
    ]
    return min(hits, key=lambda item: item.diagnostic.severity or 4, default=None)


def hover_text(item: Item, markdown: bool) -> str:
    finding = item.finding
    name, summary = rule_docs().get(finding.code, (finding.code.lower(), ""))
    url = rule_uri(finding.code)
    saved_by = next((r for r in finding.related if r.message.startswith("saved by")), None)
    code = (lambda text: f"`{text}`") if markdown else (lambda text: text)
    bold = (lambda text: f"**{text}**") if markdown else (lambda text: text)
    parts = [f"{bold(finding.code)} {code(name)} ({finding.severity.value})"]
    if not item.shown:
        # The editor shows a published diagnostic's message beside the hover already; an
        # unpublished hint has no other place to say it.
        parts.append(finding.message)
    if saved_by is not None:
        where = f"line {saved_by.span.line}" + (f" of {saved_by.path}" if saved_by.path else "")
        parts.append(f"{bold('Saved by:')} {saved_by.message.removeprefix('saved by ')} ({where})")
    if finding.history:
        parts.append(
            f"{bold('Version history:')}\n" + "\n".join(f"- {step}" for step in finding.history)
        )
    if summary:
        link = f"[{finding.code} documentation]({url})" if markdown else url
        parts.append(("---\n" if markdown else "") + f"{summary} {link}")
    return "\n\n".join(parts)


def hover(view: View, uri: str, line: int, col: int, markdown: bool) -> types.Hover | None:
    item = item_at(view, uri, line, col)
    if item is None:
        return None
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    text = view.layout.renumber(hover_text(item, markdown), item.cell)  # notebook: cell lines
    return types.Hover(
        contents=types.MarkupContent(kind=kind, value=text),
        range=item.diagnostic.range,
    )
