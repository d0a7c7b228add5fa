"""The statements verify reads without running them, for both of its readers (construct.py:
the constants a constructor binds; shapes.py: the shapes a forward implies): which statement
lists a compound statement holds, and which statements hold none. A statement kind named
nowhere here raises UnhandledStatement in strict mode (the test suite's INPLACE_LSP_STRICT=1,
as the analysis's evaluator does) instead of being skipped unseen.
"""

from __future__ import annotations

import ast
import os

STRICT = os.environ.get("INPLACE_LSP_STRICT") == "1"

# Statements that hold no other statement; the readers take what they need of them.
SIMPLE: tuple[type[ast.stmt], ...] = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Expr,
    ast.Return,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Delete,
    ast.Raise,
    ast.Assert,
    *((ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ()),  # Python 3.12
)
# Definitions: their bodies run when called, not here.
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class UnhandledStatement(Exception):
    """Strict mode: a statement kind the verify readers do not know."""

    def __init__(self, stmt: ast.stmt) -> None:
        super().__init__(f"line {stmt.lineno}: no reader for {type(stmt).__name__}")


def parts(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds, in the order of the text: an `if`'s
    body and else, a loop's body and else, a `with`'s body, a `try`'s body, handlers, else
    and finally, a `match`'s cases; none for a simple statement or a definition."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    if isinstance(stmt, (*SIMPLE, *DEFINITIONS)):
        return []
    if STRICT:
        raise UnhandledStatement(stmt)
    return []
