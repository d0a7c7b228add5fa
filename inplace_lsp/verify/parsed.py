"""One source text and its `ast` tree, parsed at most once: what a verify request hands from
step to step (the target, the imports to preload, the lines that did not run, the span of the
verified target) so that none of them parses the text again.

Pure: imports neither torch nor pygls.
"""

from __future__ import annotations

import ast

__all__ = ["Parsed", "parse"]


class Parsed:
    """A text and, once asked for, its tree; the error `ast.parse` raised is raised again on
    each ask (the callers catch what they caught from `ast.parse` before)."""

    __slots__ = ("text", "_tree", "_error")

    def __init__(self, text: str, tree: ast.Module | None = None) -> None:
        self.text = text
        self._tree = tree  # given: a tree equal to ast.parse(text)'s
        self._error: BaseException | None = None

    def tree(self) -> ast.Module:
        """`ast.parse(text)`, parsed on the first call; raises as it did."""
        if self._tree is None:
            if self._error is None:
                try:
                    self._tree = ast.parse(self.text)
                except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                    self._error = exc
                    raise
                return self._tree
            raise self._error.with_traceback(None)
        return self._tree


def parse(text: str, parsed: Parsed | None) -> ast.Module:
    """`parsed`'s tree when it is of `text`, else `ast.parse(text)`."""
    if parsed is not None and (parsed.text is text or parsed.text == text):
        return parsed.tree()
    return ast.parse(text)
