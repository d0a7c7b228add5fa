"""Where the lines of an analysed program live in the editor: one file, or a notebook's code
cells concatenated in cell order (LSP 3.17 notebook sync), with positions mapped both ways.

A program line belongs to exactly one cell; columns are the same in the program and the cell
(IPython magics are masked in place, character for character).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from inplace_lsp.analysis.findings import Span
from inplace_lsp.lsp.convert import split_lines

# `%%time` and friends run their cell's Python; any other cell magic (%%bash, %%html) does not.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_LINE_MAGIC = re.compile(r"^(\s*)[%!]")
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b(?! of )")  # "line 3 of layers.py": another file


@dataclass(frozen=True)
class Cell:
    """One editor document's share of a program: program lines first_line .. + line_count."""

    uri: str
    version: int | None
    first_line: int  # 1-based
    line_count: int

    def holds(self, line: int) -> bool:
        return self.first_line <= line < self.first_line + self.line_count


@dataclass(frozen=True)
class Layout:
    cells: tuple[Cell, ...]

    @classmethod
    def single(cls, uri: str, version: int | None) -> Layout:
        """A plain file: the program is the document."""
        return cls((Cell(uri, version, 1, 1 << 30),))

    @property
    def is_notebook(self) -> bool:
        return len(self.cells) != 1 or self.cells[0].line_count != 1 << 30

    def cell(self, uri: str) -> Cell | None:
        return next((c for c in self.cells if c.uri == uri), None)

    def cell_at(self, line: int) -> Cell | None:
        return next((c for c in self.cells if c.holds(line)), None)

    def to_cell(self, span: Span) -> tuple[Cell, Span] | None:
        """A program span in its cell's coordinates; None when it is in no cell or spans two
        (a change ending at the start of the line after a cell still belongs to the cell)."""
        cell = self.cell_at(span.line)
        if cell is None:
            return None
        end_inside = cell.holds(span.end_line) or (
            span.end_line == cell.first_line + cell.line_count and span.end_col == 0
        )
        if not end_inside:
            return None
        shift = cell.first_line - 1
        return cell, Span(span.line - shift, span.col, span.end_line - shift, span.end_col)

    def to_program(self, uri: str, span: Span) -> Span | None:
        cell = self.cell(uri)
        if cell is None:
            return None
        shift = cell.first_line - 1
        return Span(span.line + shift, span.col, span.end_line + shift, span.end_col)

    def renumber(self, text: str, cell: Cell | None) -> str:
        """`text` (a message) with its "line N" program lines as the notebook user sees them:
        "line M" in `cell`, "line M of code cell K" in another or when `cell` is None (a message
        shown in no cell); K counts code cells from 1."""
        if not self.is_notebook or "line " not in text:
            return text

        def local(match: re.Match[str]) -> str:
            line = int(match.group(1))
            where = self.cell_at(line)
            if where is None:
                return match.group(0)
            found = f"line {line - where.first_line + 1}"
            if where == cell:
                return found
            return f"{found} of code cell {self.cells.index(where) + 1}"

        return _LINE_REFERENCE.sub(local, text)

    def lines_of(self, cell: Cell, program_lines: Sequence[str]) -> Sequence[str]:
        if not self.is_notebook:
            return program_lines
        start = cell.first_line - 1
        return program_lines[start : start + cell.line_count]


def mask_magics(text: str) -> str:
    """IPython line magics and shell escapes (`%matplotlib inline`, `!pip install x`) as
    comments of the same length; a non-Python cell magic (`%%bash`) comments the whole cell."""
    lines = text.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%") and first[2:].split(" ", 1)[0] not in PYTHON_CELL_MAGICS:
        return "\n".join("#" + line if line else line for line in lines)
    return "\n".join(_LINE_MAGIC.sub(r"\1#", line, count=1) for line in lines)


def notebook_program(cells: Sequence[tuple[str, int | None, str]]) -> tuple[str, Layout]:
    """The code cells (uri, version, text), in notebook order, as one program and its layout."""
    parts: list[str] = []
    placed: list[Cell] = []
    line = 1
    for uri, version, text in cells:
        text = mask_magics(text)
        if text and not text.endswith(("\n", "\r")):
            text += "\n"
        count = len(split_lines(text)) - 1 if text else 0
        placed.append(Cell(uri, version, line, count))
        parts.append(text)
        line += count
    return "".join(parts), Layout(tuple(placed))
