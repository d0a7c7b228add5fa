"""A document's findings as the client sees them: settings applied, each finding placed in its
file or notebook cell and turned into a Diagnostic. Code actions and hover read this view, so
a request on a cursor move converts nothing and analyses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lsprotocol import types

from inplace_lsp import config
from inplace_lsp.analysis.findings import Finding, Related, Severity, Span
from inplace_lsp.lsp import convert
from inplace_lsp.lsp.scheduler import Snapshot
from inplace_lsp.notebook import Cell, Layout

# The lines of another file (a related location in an imported module), None when unknown.
OtherLines = Callable[[str], Sequence[str] | None]


@dataclass(frozen=True)
class Item:
    """One finding in the client's terms."""

    index: int  # in View.items
    finding: Finding  # settings applied; span in program coordinates
    cell: Cell  # the document it is in
    span: Span  # in that document's coordinates
    diagnostic: types.Diagnostic
    # Hints ("checked: safe") are published only with the showHints setting; hover still
    # explains them.
    shown: bool = True


@dataclass(frozen=True)
class View:
    snapshot: Snapshot
    layout: Layout
    settings: config.Settings
    settings_generation: int
    encoding: str
    items: tuple[Item, ...]
    # uri -> Information diagnostics of code the analysis gave up on ("too deep to analyse")
    notes: dict[str, list[types.Diagnostic]] = field(default_factory=dict, compare=False)
    _by_uri: dict[str, list[Item]] = field(default_factory=dict, compare=False, repr=False)
    # Code-action edits computed for this version, by action (clients that do not resolve
    # lazily ask for them again on every cursor move).
    edits: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for item in self.items:
            self._by_uri.setdefault(item.cell.uri, []).append(item)

    @property
    def version(self) -> int | None:
        return self.snapshot.version

    @property
    def result_id(self) -> str:
        """Identifies what a pull answered: the analysed version (from the file alone, or
        refined by the files it imports) under these settings."""
        refined = "+" if self.snapshot.refined else ""
        return f"{self.version}{refined}:{self.settings_generation}"

    def items_for(self, uri: str, *, hidden: bool = False) -> list[Item]:
        """The findings the client sees in `uri` (`hidden`: also the unpublished hints)."""
        items = self._by_uri.get(uri, [])
        return items if hidden else [item for item in items if item.shown]

    def diagnostics_for(self, uri: str) -> list[types.Diagnostic]:
        return [item.diagnostic for item in self.items_for(uri)] + self.notes.get(uri, [])

    def lines_of(self, cell: Cell) -> Sequence[str]:
        return self.layout.lines_of(cell, self.snapshot.lines)


def diagnostic_data(finding: Finding, version: int | None, index: int) -> dict[str, object]:
    """What a code action needs to find the finding again, carried on the Diagnostic."""
    fix = finding.fix
    return {
        "version": version,
        "index": index,
        "code": finding.code,
        "span": [finding.span.line, finding.span.col, finding.span.end_line, finding.span.end_col],
        "fix": None if fix is None else {"kind": fix.kind, "title": fix.title, "safe": fix.safe},
    }


def _related(
    related: Related,
    layout: Layout,
    snapshot: Snapshot,
    encoding: str,
    other_lines: OtherLines,
) -> types.DiagnosticRelatedInformation | None:
    if related.path is None:
        placed = layout.to_cell(related.span)
        if placed is None:
            return None
        cell, span = placed
        lines = layout.lines_of(cell, snapshot.lines)
        where = convert.location(cell.uri, span, lines, encoding)
    else:
        lines_there = other_lines(related.path)
        if lines_there is None:
            return None
        where = convert.location(Path(related.path).as_uri(), related.span, lines_there, encoding)
    return types.DiagnosticRelatedInformation(where, related.message)


def build_view(
    snapshot: Snapshot,
    layout: Layout,
    settings: config.Settings,
    settings_generation: int,
    encoding: str,
    other_lines: OtherLines,
) -> View:
    findings = config.apply(snapshot.findings, settings, snapshot.lines)
    items: list[Item] = []
    for finding in findings:
        placed = layout.to_cell(finding.span)
        if placed is None:
            continue
        cell, span = placed
        related = [
            info
            for info in (
                _related(r, layout, snapshot, encoding, other_lines) for r in finding.related
            )
            if info is not None
        ]
        index = len(items)
        local = finding
        if layout.is_notebook:
            local = replace(finding, span=span, message=layout.renumber(finding.message, cell))
        diagnostic = convert.diagnostic(
            local,
            layout.lines_of(cell, snapshot.lines),
            encoding,
            related=related,
            data=diagnostic_data(finding, cell.version, index),
        )
        shown = settings.show_hints or finding.severity is not Severity.HINT
        items.append(Item(index, finding, cell, span, diagnostic, shown))
    notes = _note_diagnostics(snapshot, layout, encoding)
    return View(snapshot, layout, settings, settings_generation, encoding, tuple(items), notes)


def _note_diagnostics(
    snapshot: Snapshot, layout: Layout, encoding: str
) -> dict[str, list[types.Diagnostic]]:
    """Each note as an Information diagnostic on its line: a function whose findings are not
    reported is said so in the editor, as `check` says it, never a silent loss."""
    notes: dict[str, list[types.Diagnostic]] = {}
    for note in snapshot.notes:
        text = snapshot.lines[note.line - 1] if note.line <= len(snapshot.lines) else ""
        placed = layout.to_cell(Span(note.line, note.col, note.line, max(note.col, len(text))))
        if placed is None:
            continue
        cell, span = placed
        message = layout.renumber(note.message, cell) if layout.is_notebook else note.message
        lines = layout.lines_of(cell, snapshot.lines)
        notes.setdefault(cell.uri, []).append(
            types.Diagnostic(
                range=convert.to_range(span, lines, encoding),
                message=message,
                severity=types.DiagnosticSeverity.Information,
                source=convert.SOURCE,
            )
        )
    return notes
