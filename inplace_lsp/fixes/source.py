"""The document a fix edits: line positions, the `ast` tree of one top-level block, libcst
regions of whole lines, and the rendering of a rewritten region into minimal Edits.

Nothing here decides what to rewrite; the codemods do. Parsing stays local: a fix on a
3,000-line file parses the top-level block around it with `ast` (cut as the analysis cuts its
blocks, `analysis.blocks`) and the few lines it rewrites with libcst, never the whole file
with libcst (that alone takes ~0.5 s).
"""

from __future__ import annotations

import ast
import bisect
import difflib
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from inplace_lsp.analysis import blocks
from inplace_lsp.analysis.findings import Span
from inplace_lsp.analysis.lines import lines_with_ends

_LARGE_BLOCK = 200  # lines; larger top-level blocks are narrowed to the function


@dataclass(frozen=True)
class Edit:
    """Replace the text of `span` (lines 1-based, columns 0-based code points) with `new_text`."""

    span: Span
    new_text: str


def split_lines(text: str) -> list[str]:
    """Lines with their endings, numbered as `ast` numbers them; the text after the last line
    end is a final (possibly empty) line, so every position has a line."""
    lines = lines_with_ends(text)
    if not lines or lines[-1][-1:] in ("\n", "\r"):
        lines.append("")
    return lines


def strip_end(line: str) -> str:
    return line.rstrip("\r\n")


@dataclass
class BlockTree:
    """The `ast` tree of document lines [first, last]: tree line n is document line n + line0.
    A function cut out of a large class is parsed under a one-line stand-in for its parent
    (`class _:` or `if True:`), which is then the outermost node of the tree."""

    tree: ast.Module
    first: int
    last: int
    line0: int


@dataclass(frozen=True)
class Located:
    """A statement found in a block: its ancestors (outermost first), the body list holding it."""

    stmt: ast.stmt
    ancestors: tuple[ast.AST, ...]
    body: list[ast.stmt]
    index: int
    block: BlockTree

    def line(self, node: ast.stmt | ast.expr) -> int:
        return node.lineno + self.block.line0

    def end_line(self, node: ast.stmt | ast.expr) -> int:
        return (node.end_lineno or node.lineno) + self.block.line0

    @property
    def function(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for node in reversed(self.ancestors):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
            if isinstance(node, ast.ClassDef):
                return None
        return None

    @property
    def class_def(self) -> ast.ClassDef | None:
        """The class whose body (directly) defines the enclosing function, if any."""
        function = self.function
        for i, node in enumerate(self.ancestors):
            if node is function and i > 0 and isinstance(self.ancestors[i - 1], ast.ClassDef):
                parent = self.ancestors[i - 1]
                assert isinstance(parent, ast.ClassDef)
                return parent
        return None


class Source:
    """One version of a document's text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.starts = [0, *itertools.accumulate(len(line) for line in self.lines)][:-1]
        self._blocks: dict[tuple[int, int], BlockTree] = {}
        self._pieces: list[tuple[int, int]] | None = None  # blocks.pieces of the text
        self._top: list[BlockTree] = []  # the top-level blocks parsed so far
        self._module: ast.Module | None = None
        self._indent_unit: str | None = None

    # ------------------------------------------------------------------ positions

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def line(self, number: int) -> str:
        """Document line `number` (1-based) without its line end ("" past the end)."""
        if not 1 <= number <= len(self.lines):
            return ""
        return strip_end(self.lines[number - 1])

    def line_end(self, number: int) -> str:
        line = self.lines[number - 1] if 1 <= number <= len(self.lines) else ""
        return line[len(strip_end(line)) :]

    def newline(self) -> str:
        """The document's line end (that of its first line), for inserted lines."""
        return self.line_end(1) or "\n"

    def offset(self, line: int, col: int) -> int:
        if line > len(self.lines):
            return len(self.text)
        line = max(line, 1)
        return self.starts[line - 1] + min(max(col, 0), len(self.lines[line - 1]))

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index]

    def span_of(self, start: int, end: int) -> Span:
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(line, col, end_line, end_col)

    def text_of(self, span: Span) -> str:
        return self.text[
            self.offset(span.line, span.col) : self.offset(span.end_line, span.end_col)
        ]

    def col(self, line: int, byte_col: int) -> int:
        """An `ast` column (utf-8 bytes) of document line `line` in code points."""
        text = self.line(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))

    def indent(self, line: int) -> str:
        text = self.line(line)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def indent_unit(self) -> str:
        """One level of indentation as this document writes it (4 spaces when it has none)."""
        if self._indent_unit is None:
            self._indent_unit = "    "
            for number in range(1, len(self.lines)):
                header = self.line(number).rstrip()
                if not header.endswith(":") or header.lstrip().startswith("#"):
                    continue
                outer = self.indent(number)
                for following in range(number + 1, min(number + 5, len(self.lines)) + 1):
                    body = self.line(following)
                    if not body.strip():
                        continue
                    inner = self.indent(following)
                    if len(inner) > len(outer) and inner.startswith(outer):
                        self._indent_unit = inner[len(outer) :]
                    break
                break
        return self._indent_unit

    # ------------------------------------------------------------------ ast

    def block(self, line: int, narrow: bool = True) -> BlockTree:
        """The `ast` tree of the top-level statement holding document line `line`, with the
        comments and blank lines below it, as the analysis cuts its blocks (`blocks.block_at`:
        only the lines around it are parsed); SyntaxError when it does not parse. In a large
        block (a long class), with `narrow`, only the function holding the line."""
        text_lines = self.lines if self.lines[-1] else self.lines[:-1]  # as blocks has them
        if self._pieces is None:
            self._pieces = blocks.pieces(text_lines)
        index = min(max(line, 1), len(self.lines)) - 1
        at = next((p for p in self._pieces if p[0] <= index < p[1]), None)
        if at is not None and narrow and at[1] - at[0] - 1 > _LARGE_BLOCK:
            function = self._function_block(line, at[0] + 1)
            if function is not None:
                return function
        for known in self._top:
            if known.first <= index + 1 <= known.last:
                return known
        found = blocks.block_at(text_lines, index, ranges=self._pieces)
        if found is None:  # an empty document
            return BlockTree(ast.Module(body=[], type_ignores=[]), 1, len(self.lines), 0)
        if found.tree is None:  # a new error: the block's keeps no traceback
            raise SyntaxError(str(found.error or "the block does not parse"))
        first = found.start_line
        last = first + found.line_count - 1
        if last >= len(text_lines):
            last = len(self.lines)  # the last block also holds the empty line after the end
        tree = BlockTree(found.tree, first, last, found.start - 1)
        self._top.append(tree)
        return tree

    def _indent_width(self, number: int) -> int | None:
        """The indentation of a line of code (None for blank and comment lines)."""
        text = self.line(number)
        stripped = text.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            return None
        return len(text) - len(stripped)

    def _function_block(self, line: int, top: int) -> BlockTree | None:
        """The function (method) around `line`, found by indentation and parsed on its own."""
        limit = self._indent_width(line)
        if limit is None:
            return None
        header = None
        for number in range(line - 1, top - 1, -1):
            width = self._indent_width(number)
            if width is None or width >= limit:
                continue
            code = self.line(number).lstrip()
            if code.startswith(("def ", "async def ")):
                header = number
                break
            if code.startswith("class "):
                return None
            limit = width
        if header is None:
            return None
        width = self._indent_width(header) or 0
        first = header
        while first - 1 > top and self.line(first - 1).lstrip().startswith("@"):
            first -= 1
        last = header
        for number in range(header + 1, len(self.lines) + 1):
            inner = self._indent_width(number)
            if inner is not None and inner <= width:
                break
            if inner is not None:
                last = number
        parent = "if True:"
        for number in range(first - 1, top - 1, -1):
            outer = self._indent_width(number)
            if outer is not None and outer < width:
                if self.line(number).lstrip().startswith("class "):
                    parent = "class _:"
                break
        key = (first, -last)
        cached = self._blocks.get(key)
        if cached is not None:
            return cached
        try:
            tree = ast.parse(parent + "\n" + "".join(self.lines[first - 1 : last]))
        except (SyntaxError, ValueError):
            return None
        found = BlockTree(tree, first, last, first - 2)
        self._blocks[key] = found
        return found

    def module(self) -> ast.Module:
        """The whole document's tree (only for fixes at module level, which need all of it)."""
        if self._module is None:
            self._module = ast.parse(self.text)
        return self._module

    def statement(self, span: Span, exact: bool = True) -> Located | None:
        """The statement whose range is `span` (exact), or the innermost statement holding the
        start of `span` (not exact)."""
        try:
            block = self.block(span.line)
        except SyntaxError:
            return None
        best: Located | None = None
        for found in walk_statements(block.tree, (), block, span.line):
            stmt = found.stmt
            first, last = found.line(stmt), found.end_line(stmt)
            start = (first, self.col(first, stmt.col_offset))
            end = (last, self.col(last, stmt.end_col_offset or 0))
            if exact:
                if start == (span.line, span.col) and end == (span.end_line, span.end_col):
                    return found
            elif start <= (span.line, span.col) < end or start == (span.line, span.col):
                best = found  # walk is outer-first: the last hit is the innermost
        return best


def walk_statements(
    node: ast.AST, ancestors: tuple[ast.AST, ...], block: BlockTree, line: int | None = None
) -> Iterator[Located]:
    """The statements under `node`, outer first; with `line`, only those around that document
    line (and the ancestors of those)."""
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        children = getattr(node, name, None)
        if not isinstance(children, list):
            continue
        for index, child in enumerate(children):
            if line is not None:
                first = getattr(child, "lineno", None)
                if first is not None:
                    first += block.line0
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        decorators = [d.lineno for d in child.decorator_list]
                        first = min([first, *(d + block.line0 for d in decorators)])
                    last = (getattr(child, "end_lineno", None) or 0) + block.line0
                    if not first <= line <= last:
                        continue
            if isinstance(child, ast.stmt):
                yield Located(child, ancestors, children, index, block)
                yield from walk_statements(child, (*ancestors, child), block, line)
            elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                yield from walk_statements(child, (*ancestors, child), block, line)


# ---------------------------------------------------------------------- libcst regions


class RegionError(Exception):
    """The lines do not parse as whole statements on their own."""


@dataclass
class Region:
    """Document lines [first, last] parsed with libcst. Indented lines are parsed inside a
    synthetic `if True:` so that nothing in them (strings, continuation lines) is re-indented."""

    source: Source
    first: int
    last: int
    module: cst.Module = field(init=False)
    wrapped: bool = field(init=False)
    wrapper: str = field(init=False)
    _positions: dict[cst.CSTNode, CodeRange] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        indent = self.source.indent(self.first)
        self.wrapped = bool(indent)
        self.wrapper = "if True:" + (self.source.line_end(self.first) or "\n") if indent else ""
        code = self.wrapper + self.old_text
        try:
            self.module = cst.parse_module(code)
        except cst.ParserSyntaxError as exc:
            raise RegionError(str(exc)) from None
        if self.wrapped and not (
            len(self.module.body) == 1 and isinstance(self.module.body[0], cst.If)
        ):
            raise RegionError("the lines are not one indented block")

    @classmethod
    def around(cls, source: Source, first: int, last: int) -> Region | None:
        """The region of lines [first, last], or None when they are not whole statements."""
        try:
            return cls(source, first, last)
        except RegionError:
            return None

    @property
    def old_text(self) -> str:
        return "".join(self.source.lines[self.first - 1 : self.last])

    @property
    def body(self) -> Sequence[cst.BaseStatement]:
        """The statements of the region (inside the wrapper when there is one)."""
        if self.wrapped:
            wrapper = self.module.body[0]
            assert isinstance(wrapper, cst.If) and isinstance(wrapper.body, cst.IndentedBlock)
            return wrapper.body.body
        return self.module.body

    def positions(self) -> dict[cst.CSTNode, CodeRange]:
        if self._positions is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = dict(wrapper.resolve(PositionProvider))
        return self._positions

    def range_of(self, node: cst.CSTNode) -> Span:
        """A node's document span."""
        code_range = self.positions()[node]
        shift = self.first - 1 - (1 if self.wrapped else 0)
        return Span(
            code_range.start.line + shift,
            code_range.start.column,
            code_range.end.line + shift,
            code_range.end.column,
        )

    def find(self, kind: type[cst.CSTNode], test: Callable[[Span], bool]) -> list[cst.CSTNode]:
        """The nodes of a kind whose document span passes `test`, outermost first."""
        return [
            node
            for node in self.positions()
            if isinstance(node, kind) and test(self.range_of(node))
        ]

    def edits_for_code(self, code: str) -> list[Edit]:
        """Edits turning the region into the code of a rewritten `self.module`."""
        assert code.startswith(self.wrapper)
        return diff_edits(self.source, self.first, self.old_text, code[len(self.wrapper) :])

    def replace(self, old: cst.CSTNode, new: cst.CSTNode) -> list[Edit]:
        """Edits replacing one node of the region."""
        module = self.module.deep_replace(old, new)
        assert isinstance(module, cst.Module)
        return self.edits_for_code(module.code)


def region_for(source: Source, found: Located) -> Region | None:
    """The smallest region of whole lines holding `found.stmt`: its own lines, else those of
    ever larger enclosing statements (a one-line `else: x += 1` needs its `if`)."""
    nodes: list[ast.stmt] = [found.stmt]
    nodes += [a for a in reversed(found.ancestors) if isinstance(a, ast.stmt)]
    for node in nodes:
        first, last = found.line(node), found.end_line(node)
        region = Region.around(source, first, last)
        if region is not None:
            return region
    return None


def diff_edits(source: Source, first_line: int, old: str, new: str) -> list[Edit]:
    """Minimal edits turning `old` (whole lines from `first_line` on) into `new`."""
    if old == new:
        return []
    old_lines, new_lines = split_lines(old), split_lines(new)
    base = source.offset(first_line, 0)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits: list[Edit] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = base + sum(len(line) for line in old_lines[:i1])
        old_chunk = "".join(old_lines[i1:i2])
        new_chunk = "".join(new_lines[j1:j2])
        if tag == "replace" and i2 - i1 == j2 - j1:
            prefix = _common_prefix(old_chunk, new_chunk)
            old_chunk, new_chunk, start = old_chunk[prefix:], new_chunk[prefix:], start + prefix
            suffix = _common_prefix(old_chunk[::-1], new_chunk[::-1])
            old_chunk = old_chunk[: len(old_chunk) - suffix]
            new_chunk = new_chunk[: len(new_chunk) - suffix]
        edits.append(Edit(source.span_of(start, start + len(old_chunk)), new_chunk))
    return edits


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """The text with non-overlapping edits applied (insertions at one point keep their order)."""
    source = Source(text)
    placed = sorted(
        (
            (
                source.offset(e.span.line, e.span.col),
                source.offset(e.span.end_line, e.span.end_col),
                i,
                e,
            )
            for i, e in enumerate(edits)
        ),
        key=lambda item: (item[0], item[1], item[2]),
    )
    out: list[str] = []
    cursor = 0
    for start, end, _, edit in placed:
        if start < cursor:
            raise ValueError(f"overlapping edits at {edit.span}")
        out.append(text[cursor:start])
        out.append(edit.new_text)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)
