"""Entry points of the analysis: one document's text in, findings out (cached per block)."""

from __future__ import annotations

from inplace_lsp.analysis.findings import Finding


def analyze(text: str, path: str | None = None) -> list[Finding]:
    """All findings of one Python source text, before settings and noqa are applied."""
    return []
