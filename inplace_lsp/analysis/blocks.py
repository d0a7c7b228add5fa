"""Split a source text into top-level blocks and parse each one, cached by the block's text.

An edit inside one function changes one block: only that block is parsed again. A block that
does not parse (the user is mid-typing) is reported as a syntax error and the other blocks
keep their analysis.
"""

from __future__ import annotations

import ast
import hashlib
from collections import OrderedDict
from dataclasses import dataclass

# A line that starts at column 0 with one of these continues the block above it.
_CONTINUATIONS = ("else", "elif", "except", "finally", "case")
_CLOSERS = (")", "]", "}")


@dataclass(frozen=True)
class Block:
    """One top-level statement (with its decorators and comments above it)."""

    start_line: int  # 1-based line of the block's first line in the document
    text: str
    key: str  # digest of the text: the cache key
    tree: ast.Module | None  # None: the block does not parse
    error: SyntaxError | None

    @property
    def line_count(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)


class ParseCache:
    """Bounded map from block text to its parse tree (line numbers relative to the block)."""

    def __init__(self, capacity: int = 4096) -> None:
        self._trees: OrderedDict[str, tuple[ast.Module | None, SyntaxError | None]] = OrderedDict()
        self._capacity = capacity
        self.parses = 0  # how many blocks were really parsed (for tests and benchmarks)

    def parse(self, text: str) -> tuple[str, ast.Module | None, SyntaxError | None]:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        hit = self._trees.get(key)
        if hit is not None:
            self._trees.move_to_end(key)
            return key, hit[0], hit[1]
        self.parses += 1
        tree: ast.Module | None
        error: SyntaxError | None = None
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            tree, error = None, exc
        except (RecursionError, MemoryError, ValueError) as exc:
            # Expressions nested thousands deep exhaust the parser's stack; null bytes raise
            # ValueError. Both are reported like a syntax error of this block.
            tree, error = None, SyntaxError(f"cannot parse: {type(exc).__name__}: {exc}")
        self._trees[key] = (tree, error)
        if len(self._trees) > self._capacity:
            self._trees.popitem(last=False)
        return key, tree, error


def _starts_block(line: str) -> bool:
    if not line or line[0] in " \t\r\n#" or line.startswith(_CLOSERS):
        return False
    word = line.split(None, 1)[0].rstrip(":")
    return word not in _CONTINUATIONS


def split_lines(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) 0-based line index ranges of candidate top-level blocks."""
    starts: list[int] = []
    after_decorator = False
    for i, line in enumerate(lines):
        if _starts_block(line):
            if not after_decorator:
                starts.append(i)
            after_decorator = line.startswith("@")
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = starts[1:] + [len(lines)]
    return list(zip(starts, bounds, strict=True))


def split(text: str, cache: ParseCache) -> list[Block]:
    """Blocks of the text, each parsed through the cache.

    Candidate splits come from column-0 lines; a candidate that does not parse is merged with
    the next ones (a string or bracket spanning column-0 lines) until it parses, up to a few
    blocks; if it never does, the first candidate alone is the syntax-error block.
    """
    lines = text.splitlines(keepends=True)
    ranges = split_lines(lines)
    blocks: list[Block] = []
    i = 0
    while i < len(ranges):
        start, end = ranges[i]
        chunk = "".join(lines[start:end])
        key, tree, error = cache.parse(chunk)
        j = i
        if tree is None:
            # Try merging with following candidates: a docstring or bracket spanning col-0 lines.
            for k in range(i + 1, min(len(ranges), i + 8)):
                merged = "".join(lines[start : ranges[k][1]])
                mkey, mtree, _ = cache.parse(merged)
                if mtree is not None:
                    key, tree, error, chunk, end, j = mkey, mtree, None, merged, ranges[k][1], k
                    break
        blocks.append(Block(start + 1, chunk, key, tree, error))
        i = j + 1
    return blocks
