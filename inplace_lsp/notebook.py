"""Notebooks as programs: a notebook's code cells concatenated in cell order (IPython magics
masked), which cell each program line lives in, and `.ipynb` files read and written back.

The language server (LSP 3.17 notebook sync) and `inplace-lsp check` share this module, so a
notebook is the same program in the editor and on the command line. A program line belongs to
exactly one cell; columns are the same in the program and the cell (magics are masked in
place, character for character). Pure: no LSP types, no torch.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inplace_lsp.analysis.findings import Span
from inplace_lsp.analysis.lines import LINE_BREAK

# `%%time` and friends run their cell's Python; any other cell magic (%%bash, %%html) does not.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_LINE_MAGIC = re.compile(r"^(\s*)[%!]")
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b(?! of )")  # "line 3 of layers.py": another file


def _line_count(text: str) -> int:
    """Lines of `text`, which ends with a line break (or is empty), as LSP and `ast` count."""
    return len(LINE_BREAK.split(text)) - 1 if text else 0


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

    def renumber(
        self, text: str, cell: Cell | None, name: Callable[[int], str] | None = None
    ) -> str:
        """`text` (a message) with its "line N" program lines as the notebook user sees them:
        "line M" in `cell`, "line M of code cell K" in another (K counts code cells from 1;
        `name(index of the cell in self.cells)` names it otherwise, e.g. "cell 5")."""
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
            index = self.cells.index(where)
            return f"{found} of {name(index) if name else f'code cell {index + 1}'}"

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


def _program_part(text: str) -> str:
    """A cell's text as the program holds it: magics masked, ending with a line break."""
    text = mask_magics(text)
    if text and not text.endswith(("\n", "\r")):
        text += "\n"
    return text


def notebook_program(
    cells: Sequence[tuple[str, int | None, str]], separator: str = ""
) -> tuple[str, Layout]:
    """The code cells (uri, version, text), in notebook order, as one program and its layout.

    A `separator` (a comment) goes on a line of its own between two cells, belonging to
    neither: `split_program` finds the cells again in a program that fixes have rewritten."""
    parts: list[str] = []
    placed: list[Cell] = []
    line = 1
    for uri, version, text in cells:
        if separator and placed:
            parts.append(separator + "\n")
            line += 1
        text = _program_part(text)
        count = _line_count(text)
        placed.append(Cell(uri, version, line, count))
        parts.append(text)
        line += count
    return "".join(parts), Layout(tuple(placed))


# ---------------------------------------------------------------- .ipynb files

# Between two cells of a notebook's program in `inplace-lsp check`: a comment nobody writes.
CELL_SEPARATOR = "# inplace-lsp: cell boundary, do not edit (e3c1f0)"
_BOUNDARY = re.compile("^" + re.escape(CELL_SEPARATOR) + "\n", re.MULTILINE)
_LINE_WITH_END = re.compile(r"[^\n]*\n|[^\n]+$")


class NotebookError(ValueError):
    """The file is not an nbformat 4 notebook; the message says why, for the user."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based position among all the notebook's cells, markdown ones too
    source: str


@dataclass(frozen=True)
class JsonStyle:
    """How the file spelled its JSON, so that a rewrite changes only the cells' sources."""

    indent: int | str | None
    ensure_ascii: bool
    final_newline: bool
    newline: str  # "\r\n" for a file saved on Windows; JSON strings escape theirs


@dataclass(frozen=True)
class NotebookFile:
    content: dict[str, Any]  # the parsed JSON, every key in the file's order
    code_cells: tuple[CodeCell, ...]
    language: str  # "python" unless the notebook's metadata names another
    style: JsonStyle

    def program(self, uri: str) -> tuple[str, Layout]:
        """The code cells as one program, with CELL_SEPARATOR lines between them; cell k
        of the layout is code_cells[k], its uri `uri#cell=<number>`."""
        return notebook_program(
            [(f"{uri}#cell={cell.number}", None, cell.source) for cell in self.code_cells],
            separator=CELL_SEPARATOR,
        )


def _source_text(source: object, number: int) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    raise NotebookError(f"cell {number}: `source` is neither a string nor a list of strings")


def _json_style(text: str) -> JsonStyle:
    indent: int | str | None = None
    second = text.strip().split("\n", 2)[1:2]  # no second line: all on one line
    if second:
        lead = second[0][: len(second[0]) - len(second[0].lstrip())]
        indent = len(lead) if lead.strip(" ") == "" else lead
    return JsonStyle(
        indent=indent,
        ensure_ascii=text.isascii(),
        final_newline=text.endswith("\n"),
        newline="\r\n" if "\r\n" in text else "\n",
    )


def read_notebook(text: str) -> NotebookFile:
    """Parses an `.ipynb` file's text; raises NotebookError naming what is wrong."""
    if not text.strip():
        raise NotebookError("an empty file, not a Jupyter notebook")
    try:
        content = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"not a Jupyter notebook: invalid JSON at line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}"
        ) from None
    except RecursionError:
        raise NotebookError(
            "not a notebook Python can read: its JSON is nested too deep to read"
        ) from None
    if not isinstance(content, dict) or not isinstance(content.get("cells"), list):
        if isinstance(content, dict) and "worksheets" in content:
            raise NotebookError("nbformat 3 notebook: only nbformat 4 is supported")
        raise NotebookError("not a Jupyter notebook: the JSON has no `cells` list")
    code_cells: list[CodeCell] = []
    for number, cell in enumerate(content["cells"], start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {number}: not a JSON object")
        if cell.get("cell_type") == "code":
            code_cells.append(CodeCell(number, _source_text(cell.get("source", ""), number)))
    metadata = content.get("metadata")
    language = "python"
    if isinstance(metadata, dict):
        info = metadata.get("language_info")
        kernel = metadata.get("kernelspec")
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            language = info["name"]
        elif isinstance(kernel, dict) and isinstance(kernel.get("language"), str):
            language = kernel["language"]
    return NotebookFile(content, tuple(code_cells), language.lower(), _json_style(text))


def split_program(notebook: NotebookFile, program: str) -> dict[int, str] | None:
    """The new source of each code cell (by number) that `program`, the notebook's program
    after fixes, changed; None when the fixes moved or removed a cell boundary (a fix that
    spans two cells cannot be written back)."""
    if not notebook.code_cells:
        return {}
    parts = _BOUNDARY.split(program)
    if len(parts) != len(notebook.code_cells) or program.count(CELL_SEPARATOR) != len(parts) - 1:
        return None
    changed: dict[int, str] = {}
    for cell, part in zip(notebook.code_cells, parts, strict=True):
        old = _program_part(cell.source)
        if part == old:
            continue
        masked = mask_magics(cell.source)
        if old != masked and part.endswith("\n"):  # the break the program added
            part = part[:-1]
        changed[cell.number] = _unmask(cell.source, masked, part)
    return changed


def _unmask(source: str, masked: str, new: str) -> str:
    """`new` (a rewrite of `masked`) with the lines that the rewrite kept as they were in
    `source`, so masked magics come back."""
    original, before, after = source.split("\n"), masked.split("\n"), new.split("\n")
    lines: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        lines += original[i1:i2] if tag == "equal" else after[j1:j2]
    return "\n".join(lines)


def write_notebook(notebook: NotebookFile, sources: Mapping[int, str]) -> str:
    """The file's text with the code cells numbered in `sources` given new sources; the
    other cells, outputs, metadata, key order and JSON indentation are kept."""
    cells = list(notebook.content["cells"])
    for number, text in sources.items():
        cell = dict(cells[number - 1])
        if isinstance(cell.get("source"), list):
            cell["source"] = _LINE_WITH_END.findall(text)  # split at \n only, as nbformat does
        else:
            cell["source"] = text
        cells[number - 1] = cell
    content = {**notebook.content, "cells": cells}
    style = notebook.style
    text = json.dumps(content, indent=style.indent, ensure_ascii=style.ensure_ascii)
    if style.final_newline:
        text += "\n"
    return text.replace("\n", style.newline) if style.newline != "\n" else text
