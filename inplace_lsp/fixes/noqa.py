"""The "suppress with `# noqa: IPLxxx`" edit: appended to the finding's first line, or the code
added to the noqa comment already there (read as `inplace_lsp.analysis.noqa` reads it).
"""

from __future__ import annotations

import io
import re
import tokenize

from inplace_lsp.analysis.findings import Finding, Span
from inplace_lsp.analysis.noqa import suppressed
from inplace_lsp.fixes.source import Edit, Source

_NOQA = re.compile(
    r"#\s*noqa(?:\s*:\s*(?P<codes>[a-z]+[0-9]+(?:[\s,]+[a-z]+[0-9]+)*))?", re.IGNORECASE
)


def noqa_edit(source: Source, finding: Finding) -> Edit:
    number = finding.span.line
    text = source.line(number)
    end = len(text)
    nothing = Edit(Span(number, end, number, end), "")
    if suppressed(text, finding.code):
        return nothing
    comment, commentable = _comment(source, finding)
    if comment is not None:
        match = _NOQA.search(text, comment)
        if match is not None and match.group("codes") is not None:
            at = match.end("codes")
            return Edit(Span(number, at, number, at), f", {finding.code}")
    if not commentable:
        return nothing  # the line ends inside a string or with a backslash
    code_end = len(text.rstrip(" \t"))
    return Edit(Span(number, code_end, number, end), f"  # noqa: {finding.code}")


def _comment(source: Source, finding: Finding) -> tuple[int | None, bool]:
    """Where the comment of the finding's first line starts (code points), and whether a
    comment can be appended to that line at all."""
    number = finding.span.line
    found = source.statement(Span(number, finding.span.col, number, finding.span.col), exact=False)
    first = found.line(found.stmt) if found is not None else number
    last = found.end_line(found.stmt) if found is not None else number
    first, last = min(first, number), max(last, number)
    text = "".join(source.lines[first - 1 : last])
    row = number - first + 1
    comment: int | None = None
    commentable = False
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] != row:
                continue
            if token.type == tokenize.COMMENT:
                comment = token.start[1]
                commentable = True
            elif token.type in (tokenize.NEWLINE, tokenize.NL):
                commentable = True
    except (tokenize.TokenError, SyntaxError, IndentationError):
        line = source.line(number)
        return (line.find("#") if "#" in line else None), not line.rstrip().endswith("\\")
    return comment, commentable
