"""Split a source text into top-level blocks, each with its parse tree, reusing the parse of
every block whose text did not change.

The first time, the whole text is parsed once and cut at its top-level statements. After an
edit, only the lines that changed are looked at: the blocks they touch are parsed again (as
one region), the others keep their trees and just move. A region that does not parse (the
user is mid-typing) becomes one syntax-error block and the other blocks keep their analysis.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from inplace_lsp.analysis.lines import line_count, lines_with_ends

# A line that starts at column 0 with one of these continues the block above it.
_CONTINUATIONS = ("else", "elif", "except", "finally", "case")
_CLOSERS = (")", "]", "}")
_MAX_GROW = 3  # how many times a region that does not parse is widened by a block each side
# ... while it stays this short: a syntax error typed beside a 20,000-line function parsed it
# three times per keystroke (an `else:` after a longer block has the whole text parsed again).
_MAX_GROWN_LINES = 2_000


@dataclass(frozen=True)
class Block:
    """One top-level statement (with its decorators and the comments below it)."""

    start_line: int  # 1-based document line of the block's first line
    text: str
    key: str  # digest of the text: the cache key
    tree: ast.Module | None  # None: the block does not parse
    error: SyntaxError | None
    tree_line0: int = 1  # the tree's line number of the block's first line
    error_line: int = 0  # document line of the syntax error
    # A block that does not parse: the blocks it replaced as they last parsed (where they
    # are now), which stand for it in the model of the file until it parses again (a
    # keystroke that breaks a method for a moment does not unmake its class, and with it
    # every analysis that reads the class).
    stands_for: tuple[Block, ...] = ()

    @functools.cached_property
    def line_count(self) -> int:
        return max(line_count(self.text), 1)

    @property
    def start(self) -> int:
        """1 + what to add to the tree's line numbers to get document lines."""
        return self.start_line - self.tree_line0 + 1

    def moved(self, start_line: int) -> Block:
        delta = start_line - self.start_line
        return Block(
            start_line,
            self.text,
            self.key,
            self.tree,
            self.error,
            self.tree_line0,
            self.error_line + delta if self.error else 0,
            tuple(b.moved(b.start_line + delta) for b in self.stands_for),
        )


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class ParseCache:
    """Parse trees of recently seen block texts, bounded by the size of those texts.

    A tree takes about 28 bytes per character of its source (transformers' trainer.py: 236 K
    characters, 6.5 MB), so the bound is in characters, not entries: a thousand versions of
    one 4,500-line class, typed one keystroke at a time, would otherwise keep 6.6 GB. The
    trees of the blocks a document has now are held by its Splitter, not by this cache; the
    cache only spares a re-parse when a text comes back (an undo, a file opened again).
    """

    def __init__(self, max_chars: int = 500_000, max_document_chars: int = 2_000_000) -> None:
        self._trees: OrderedDict[str, tuple[ast.Module, int, int]] = OrderedDict()
        self._chars = 0
        self._max_chars = max_chars
        self.parses = 0  # how many texts were really parsed (for tests and benchmarks)
        # Whole texts already split: a file the CLI checks and another file imports is parsed
        # once (a few recent ones; each holds all its trees).
        self.documents: OrderedDict[str, tuple[list[Block], int]] = OrderedDict()
        self._document_chars = 0
        self._max_document_chars = max_document_chars

    @property
    def chars(self) -> int:
        """Characters of source whose trees this cache holds (trees and documents)."""
        return self._chars + self._document_chars

    def get(self, key: str) -> tuple[ast.Module, int] | None:
        hit = self._trees.get(key)
        if hit is None:
            return None
        self._trees.move_to_end(key)
        return hit[0], hit[1]

    def put(self, key: str, tree: ast.Module, line0: int, size: int) -> None:
        """Keep `tree` (parsed from `size` characters) unless it alone exceeds the bound."""
        old = self._trees.pop(key, None)
        if old is not None:
            self._chars -= old[2]
        if size > self._max_chars:
            return
        self._trees[key] = (tree, line0, size)
        self._chars += size
        while self._chars > self._max_chars:
            _, (_, _, dropped) = self._trees.popitem(last=False)
            self._chars -= dropped

    def document(self, key: str) -> list[Block] | None:
        hit = self.documents.get(key)
        if hit is None:
            return None
        self.documents.move_to_end(key)
        return hit[0]

    def put_document(self, key: str, blocks: list[Block], size: int) -> None:
        if key in self.documents or size > self._max_document_chars:
            return
        self.documents[key] = (blocks, size)
        self._document_chars += size
        while self._document_chars > self._max_document_chars:
            _, (_, dropped) = self.documents.popitem(last=False)
            self._document_chars -= dropped

    def add_document(self, text: str, tree: ast.Module) -> None:
        """A whole text parsed elsewhere (`tree`: what `ast.parse(text)` gives): its blocks are
        cut from `tree`, so that a Splitter meeting `text` first does not parse it again."""
        key = digest(text)
        if key in self.documents or len(text) > self._max_document_chars:
            return
        lines = lines_with_ends(text)
        self.put_document(key, Splitter(self)._region(lines, 0, len(lines), tree=tree), len(text))

    def parse(self, text: str) -> ast.Module:
        """ast.parse, counted; RecursionError/MemoryError/ValueError become SyntaxError."""
        self.parses += 1
        try:
            return ast.parse(text)
        except SyntaxError:
            raise
        except (RecursionError, MemoryError, ValueError) as exc:
            # Expressions nested thousands deep exhaust the parser's stack; null bytes raise
            # ValueError. Both are reported like a syntax error.
            raise SyntaxError(f"cannot parse: {type(exc).__name__}: {exc}") from None


class Splitter:
    """The blocks of one document, updated from one version of its text to the next."""

    def __init__(self, cache: ParseCache | None = None) -> None:
        self.cache = cache or ParseCache()
        self._lines: list[str] = []
        self._blocks: list[Block] = []
        # The lines of the last text split that differ from the text before it (1-based,
        # first and last: last < first where lines were only deleted); None: no text before.
        self.edited: tuple[int, int] | None = None

    def split(self, text: str) -> list[Block]:
        lines = lines_with_ends(text)
        old_lines, old_blocks = self._lines, self._blocks
        self.edited = None
        if not old_blocks:
            key = digest(text)
            known = self.cache.document(key)
            if known is not None:
                blocks = known
            else:
                blocks = self._region(lines, 0, len(lines))
                self.cache.put_document(key, blocks, len(text))
        else:
            blocks = self._update(old_lines, old_blocks, lines)
        self._lines, self._blocks = lines, blocks
        return blocks

    def _update(self, old: list[str], old_blocks: list[Block], new: list[str]) -> list[Block]:
        limit = min(len(old), len(new))
        prefix = 0
        while prefix < limit and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
            suffix += 1
        self.edited = (prefix + 1, len(new) - suffix)
        if prefix == len(old) == len(new):
            return old_blocks
        delta = len(new) - len(old)
        old_end = len(old) - suffix  # changed old lines: [prefix, old_end)
        # Blocks touching the change (0-based line ranges); an empty change touches the block
        # it sits in or the one ending right before it.
        first = last = None
        for i, block in enumerate(old_blocks):
            b_start = block.start_line - 1
            b_end = b_start + block.line_count
            touches = (
                b_start <= old_end and b_end >= prefix
                if old_end > prefix
                else b_start <= prefix <= b_end
            )
            if touches:
                first = i if first is None else first
                last = i
        if first is None or last is None:
            return self._region(new, 0, len(new))
        # The blocks around the change, widened while they do not parse together (an `else:`
        # typed under an `if` block belongs with it); then the narrowest region is kept and
        # split at column-0 lines.
        narrow = (first, last)
        middle: list[Block] = []
        for attempt in range(_MAX_GROW + 1):
            if attempt:
                first, last = max(first - 1, 0), min(last + 1, len(old_blocks) - 1)
            r_start, r_end = self._bounds(old_blocks, first, last, delta)
            if attempt and r_end - r_start > _MAX_GROWN_LINES:
                r_start, r_end = self._bounds(old_blocks, *narrow, delta)
                if r_start < len(new) and new[r_start].startswith(_CONTINUATIONS + _CLOSERS):
                    return self._region(new, 0, len(new))  # it may continue the block above
                break
            middle = self._region(new, r_start, r_end, strict=True)
            if middle or (first == 0 and last == len(old_blocks) - 1):
                break
        if not middle:
            first, last = narrow
            r_start, r_end = self._bounds(old_blocks, first, last, delta)
            middle = _standing(
                self._region(new, r_start, r_end),
                old_blocks[first : last + 1],
                lambda b: b.moved(b.start_line + delta) if b.start_line > old_end else b,
            )
        after = [b.moved(b.start_line + delta) for b in old_blocks[last + 1 :]]
        return old_blocks[:first] + middle + after

    @staticmethod
    def _bounds(blocks: list[Block], first: int, last: int, delta: int) -> tuple[int, int]:
        """0-based new-text line range covered by old blocks first..last after the edit."""
        start = blocks[first].start_line - 1
        end_old = blocks[last].start_line - 1 + blocks[last].line_count
        return start, max(end_old + delta, start)

    def _region(
        self,
        lines: list[str],
        start: int,
        end: int,
        strict: bool = False,
        depth: int = 0,
        tree: ast.Module | None = None,
    ) -> list[Block]:
        """Blocks of lines[start:end] (0-based), parsed as one text when possible.

        strict: return [] when the region does not parse (the caller widens it).
        tree: the region's, parsed already.
        """
        if start >= end:
            return []
        if tree is not None:
            return self._cut(lines, start, end, tree)
        text = "".join(lines[start:end])
        key = digest(text)
        cached = self.cache.get(key)
        if cached is not None and len(cached[0].body) <= 1:
            return [Block(start + 1, text, key, cached[0], None, cached[1])]
        try:
            tree = self.cache.parse(text)
        except SyntaxError as exc:
            if strict:
                return []
            # The block keeps the error; its traceback would keep this call's frames, with the
            # whole document's lines and the previous version's blocks, alive version after
            # version.
            exc.__traceback__ = exc.__context__ = exc.__cause__ = None
            return self._fallback(lines, start, end, exc, depth)
        return self._cut(lines, start, end, tree)

    def _cut(self, lines: list[str], start: int, end: int, tree: ast.Module) -> list[Block]:
        """One block per top-level statement of a parsed region; lines are region-relative."""
        if not tree.body:
            text = "".join(lines[start:end])
            return [Block(start + 1, text, digest(text), tree, None, 1)]
        # Statements that share a line (`opt.zero_grad(); loss.backward()`, or one that starts
        # on the line where the one before it ends) are one block: a block is whole lines.
        groups: list[list[ast.stmt]] = []
        last_line = -1
        for stmt in tree.body:
            if groups and first_line(stmt) <= last_line:
                groups[-1].append(stmt)
            else:
                groups.append([stmt])
            last_line = max(last_line, getattr(stmt, "end_lineno", None) or stmt.lineno)
        starts = [first_line(group[0]) - 1 for group in groups]
        starts[0] = 0
        bounds = [*starts[1:], end - start]
        blocks: list[Block] = []
        for group, b_start, b_end in zip(groups, starts, bounds, strict=True):
            text = "".join(lines[start + b_start : start + b_end])
            key = digest(text)
            line0 = b_start + 1
            cached = self.cache.get(key)
            if cached is not None:
                sub, line0 = cached
            else:
                sub = ast.Module(body=group, type_ignores=[])
                self.cache.put(key, sub, line0, len(text))
            blocks.append(Block(start + b_start + 1, text, key, sub, None, line0))
        return blocks

    def _fallback(
        self, lines: list[str], start: int, end: int, error: SyntaxError, depth: int = 0
    ) -> list[Block]:
        """A region that does not parse: the column-0 piece holding the error becomes one
        syntax-error block, and the code before and after it is split as usual (recursively,
        for several errors), so everything around a syntax error keeps its blocks."""
        pieces = _candidate_ranges(lines, start, end)
        if error.lineno is None and len(pieces) > 1 and depth <= 64:
            # Python names no line (null bytes; an expression nested too deep for its parser):
            # each half is parsed alone, down to the piece that does not parse.
            middle = pieces[len(pieces) // 2][0]
            return [
                *self._region(lines, start, middle, depth=depth + 1),
                *self._region(lines, middle, end, depth=depth + 1),
            ]
        if error.lineno is None:  # one piece: the line with a null byte, or its first
            error_line = next((i for i in range(start, end) if "\x00" in lines[i]), start)
        else:
            error_line = start + error.lineno - 1  # 0-based document line
        e_start, e_end = next(((a, b) for a, b in pieces if a <= error_line < b), pieces[-1])
        if depth > 64:  # a file of many errors: the rest is one error block
            e_start, e_end = start, end
        text = "".join(lines[e_start:e_end])
        bad = Block(e_start + 1, text, digest(text), None, error, 1, error_line + 1)
        before = self._region(lines, start, e_start, depth=depth + 1) if e_start > start else []
        after = (
            self._region(lines, e_end, end, depth=depth + 1) if e_end < end and depth <= 64 else []
        )
        return [*before, bad, *after]


def _standing(
    middle: list[Block], replaced: list[Block], moved: Callable[[Block], Block]
) -> list[Block]:
    """The blocks of an edited region, the first that does not parse holding the blocks it
    replaced as they last parsed (Block.stands_for): those of `replaced` (the old blocks
    around the edit, or what an old syntax-error block stood for) whose text is not in the
    region now, `moved` where they are now. Only where they fit in the lines that do not
    parse: lines deleted from under them leave none (as a region that never parsed)."""
    broken = [b for b in middle if b.tree is None]
    if not broken:
        return middle
    now = {b.key for b in middle if b.tree is not None}
    stands = tuple(
        moved(last)
        for b in replaced
        for last in ((b,) if b.tree is not None else b.stands_for)
        if last.key not in now
    )
    spans = [(b.start_line, b.start_line + b.line_count) for b in broken]
    if not stands or not all(
        any(first <= s.start_line and s.start_line + s.line_count <= end for first, end in spans)
        for s in stands
    ):
        return middle
    at = middle.index(broken[0])
    return [*middle[:at], replace(broken[0], stands_for=stands), *middle[at + 1 :]]


def pieces(lines: list[str]) -> list[tuple[int, int]]:
    """The (start, end) 0-based line ranges of a text's top-level statements as its lines tell
    them, without parsing: each begins at a column-0 line that starts a statement (with its
    decorators; not inside a triple-quoted string). What a region that does not parse is cut
    at; a column-0 line inside brackets is taken for a start (only a parse tells)."""
    return _candidate_ranges(lines, 0, len(lines)) if lines else []


def block_at(
    lines: list[str],
    line: int,
    cache: ParseCache | None = None,
    ranges: list[tuple[int, int]] | None = None,
) -> Block | None:
    """The top-level block holding 0-based `line` of a text's lines (with their ends),
    parsing only the lines around it: its piece (see `pieces`; `ranges`: the text's, when the
    caller has them), widened by a piece each side while it does not parse, and cut at its
    statements; the whole text, split, when no such region parses (the block may then be
    the syntax error's, without a tree). None for a text without lines."""
    ranges = pieces(lines) if ranges is None else ranges
    if not ranges:
        return None
    line = min(max(line, 0), len(lines) - 1)
    at = next(i for i, (start, end) in enumerate(ranges) if start <= line < end)
    splitter = Splitter(cache)
    found: list[Block] = []
    for grow in range(_MAX_GROW + 1):
        first, last = max(at - grow, 0), min(at + grow, len(ranges) - 1)
        found = splitter._region(lines, ranges[first][0], ranges[last][1], strict=True)
        if found or (first == 0 and last == len(ranges) - 1):
            break
    if not found:
        found = splitter.split("".join(lines))
    return next(b for b in reversed(found) if b.start_line - 1 <= line)


def first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    if decorators:
        return min(stmt.lineno, *(d.lineno for d in decorators))
    return stmt.lineno


def _starts_block(line: str) -> bool:
    if not line or line[0] in " \t\r\n#" or line.startswith(_CLOSERS):
        return False
    words = line.split(None, 1)  # [] for a line of Unicode spaces (U+2028, U+3000...)
    return bool(words) and words[0].rstrip(":") not in _CONTINUATIONS


def _candidate_ranges(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) 0-based line ranges beginning at column-0 statement-like lines (not inside
    a triple-quoted string)."""
    starts: list[int] = []
    after_decorator = False
    in_string = ""
    for i in range(start, end):
        line = lines[i]
        if not in_string and _starts_block(line):
            if not after_decorator:
                starts.append(i)
            after_decorator = line.startswith("@")
        for quote in ('"""', "'''"):
            if (not in_string or in_string == quote) and line.count(quote) % 2 == 1:
                in_string = "" if in_string else quote
    if not starts or starts[0] != start:
        starts.insert(0, start)
    return list(zip(starts, [*starts[1:], end], strict=True))
