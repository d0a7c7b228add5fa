"""Findings and edits in LSP terms: positions in the negotiated encoding, Diagnostics, TextEdits.

Findings count columns in Unicode code points; LSP clients count in UTF-16 code units unless
they and the server agreed on UTF-8 (bytes) or UTF-32 (code points) at `initialize`. Every
conversion between the two lives here, as pure functions of the line's text.
Lines are split as LSP and `ast` split them: at `\\r\\n`, `\\r` and `\\n` only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from inplace_lsp.analysis.findings import Finding, Severity, Span
from inplace_lsp.analysis.lines import LINE_BREAK
from inplace_lsp.analysis.rules.base import rule_uri

SOURCE = "inplace-lsp"
UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value


SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def choose_encoding(offered: Sequence[str] | None) -> str:
    """The position encoding the server uses: UTF-8 when the client offers it (no conversion
    of byte offsets for clients that think in bytes), else UTF-16, which every client must
    support (LSP 3.17), unless the client offers only UTF-32."""
    offered = list(offered or ())
    if UTF8 in offered:
        return UTF8
    if offered and UTF16 not in offered and UTF32 in offered:
        return UTF32
    return UTF16


def units(text: str, encoding: str) -> int:
    """The length of `text` in code units of `encoding`."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def to_units(line: str, col: int, encoding: str) -> int:
    """A code-point column of `line` in code units (a column past the end stays past it)."""
    if col <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return col
    return units(line[:col], encoding) + max(0, col - len(line))


def from_units(line: str, offset: int, encoding: str) -> int:
    """A code-unit column of `line` as a code point column. An offset inside a character (the
    second half of a surrogate pair, a continuation byte) means the character it falls in;
    an offset past the end means the end of the line (LSP: the client means the line end)."""
    if offset <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(offset, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= offset:
            return index
        width = units(char, encoding)
        if seen + width > offset:
            return index
        seen += width
    return len(line)


def line_at(lines: Sequence[str], line_index: int) -> str:
    """Line `line_index` (0-based) of `lines`; "" past either end."""
    return lines[line_index] if 0 <= line_index < len(lines) else ""


def position(lines: Sequence[str], line: int, col: int, encoding: str) -> types.Position:
    """A 1-based line and code-point column as an LSP Position."""
    index = max(line - 1, 0)
    return types.Position(index, to_units(line_at(lines, index), col, encoding))


def to_range(span: Span, lines: Sequence[str], encoding: str) -> types.Range:
    return types.Range(
        position(lines, span.line, span.col, encoding),
        position(lines, span.end_line, span.end_col, encoding),
    )


def to_point(lines: Sequence[str], where: types.Position, encoding: str) -> tuple[int, int]:
    """An LSP Position as (1-based line, code-point column)."""
    return where.line + 1, from_units(line_at(lines, where.line), where.character, encoding)


def to_span(lines: Sequence[str], where: types.Range, encoding: str) -> Span:
    start = to_point(lines, where.start, encoding)
    end = to_point(lines, where.end, encoding)
    return Span(start[0], start[1], end[0], end[1])


def code_range(lines: Sequence[str], index: int, encoding: str) -> types.Range:
    """The code on 0-based line `index` (lines with or without their ends): its text without
    indentation and trailing blanks; an empty range at its start when it holds none."""
    text = line_at(lines, index).rstrip("\r\n")
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if end <= start:
        start = end = 0
    return types.Range(
        types.Position(index, to_units(text, start, encoding)),
        types.Position(index, to_units(text, end, encoding)),
    )


def contains(span: Span, line: int, col: int) -> bool:
    """Whether (1-based line, code-point column) lies in `span`, its end included (a cursor
    right after the flagged expression still hovers it)."""
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


def overlaps(a: Span, b: Span) -> bool:
    """Whether two spans share a position (touching counts: an empty range at a diagnostic's
    edge, which is where a cursor sits, asks about it)."""
    return (a.line, a.col) <= (b.end_line, b.end_col) and (b.line, b.col) <= (
        a.end_line,
        a.end_col,
    )


# ---------------------------------------------------------------- diagnostics


def places_shown(text: str, path: str | None) -> str:
    """A message of a run (verify's, `inplace-lsp run`'s) as the editor's others read: a place
    in `path`, the file it is shown in, is "line N"; one in a file of its folder, a relative
    path (the runs name absolute ones)."""
    if not path:
        return text
    text = re.sub(re.escape(path) + r":(\d+)", r"line \1", text)
    folder = os.path.dirname(path) + os.sep
    return text.replace(folder, "") if len(folder) > 1 else text


def location(uri: str, span: Span, lines: Sequence[str], encoding: str) -> types.Location:
    return types.Location(uri, to_range(span, lines, encoding))


def diagnostic(
    finding: Finding,
    lines: Sequence[str],
    encoding: str,
    *,
    related: Sequence[types.DiagnosticRelatedInformation] = (),
    data: dict[str, Any] | None = None,
) -> types.Diagnostic:
    """A finding as an LSP Diagnostic: code, rule link, source, related locations, data.
    `lines` are the lines of the document the finding's span counts in."""
    return types.Diagnostic(
        range=to_range(finding.span, lines, encoding),
        message=finding.message,
        severity=SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=rule_uri(finding.code)),
        source=SOURCE,
        related_information=list(related) or None,
        data=data,
    )


# ---------------------------------------------------------------- edits


@dataclass(frozen=True)
class TextChange:
    """A replacement of `span` (code-point columns) by `new_text`; fixes.Edit has this shape."""

    span: Span
    new_text: str


def text_edit(span: Span, new_text: str, lines: Sequence[str], encoding: str) -> types.TextEdit:
    return types.TextEdit(to_range(span, lines, encoding), new_text)


def minimal_change(old: str, new: str) -> TextChange | None:
    """One replacement that turns `old` into `new`, as small as a common prefix and suffix
    make it (a fix-all that touches two lines edits only those lines); None when equal."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[-1 - end] == new[-1 - end]:
        end += 1
    # Never split a \r\n pair: a client would see a lone \r left behind.
    if 0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n":
        start -= 1
    old_end = len(old) - end
    if 0 < old_end < len(old) and old[old_end - 1] == "\r" and old[old_end] == "\n":
        end -= 1
        old_end += 1
    return TextChange(
        Span(*_point_at(old, start), *_point_at(old, old_end)),
        new[start : len(new) - end],
    )


def _point_at(text: str, offset: int) -> tuple[int, int]:
    """(1-based line, code-point column) of a string offset that is not inside a \\r\\n pair."""
    head = text[:offset]
    line = 1
    line_start = 0
    for match in LINE_BREAK.finditer(head):
        line += 1
        line_start = match.end()
    return line, offset - line_start
