"""Say why a line that the analysis flags did not run during a verify, from the lines that did.

Pure: reads the source with ``ast`` and imports neither torch nor pygls. The harness records
which lines of the target ran (``lines_run``); a flagged line outside them was not proven
either way, and the result must say so instead of a bare OK. The reason is read off the
innermost enclosing statement whose header did run: the ``if`` whose test was false (or true,
for its ``else``), the loop that never iterated, the ``try`` that raised nothing, the
``return`` that left first, the method that was never called.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from inplace_lsp.verify.parsed import Parsed, parse

__all__ = ["not_run"]

_MAX_SOURCE = 60  # characters of a condition quoted in a reason
_Body = list[ast.stmt]


def not_run(
    text: str,
    spec: dict[str, Any],
    flagged: Iterable[tuple[int, str]],
    lines_run: Collection[int],
    parsed: Parsed | None = None,
) -> list[dict[str, Any]]:
    """``[{"line", "code", "reason"}]`` for each flagged (line, code) of the target that is
    not in ``lines_run``, in line order; ``reason`` is "" when it cannot be told. ``parsed``:
    the text's tree, when the caller has it."""
    missed = sorted({(line, code) for line, code in flagged if line not in lines_run})
    if not missed:
        return []
    try:
        tree = parse(text, parsed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [{"line": line, "code": code, "reason": ""} for line, code in missed]
    target = _target_node(tree, spec)
    ran = frozenset(lines_run)
    reasons: dict[int, str] = {}
    found: list[dict[str, Any]] = []
    for line, code in missed:
        if line not in reasons:
            reasons[line] = _reason(text, target, line, ran, spec) if target is not None else ""
        found.append({"line": line, "code": code, "reason": reasons[line]})
    return found


def _target_node(tree: ast.Module, spec: dict[str, Any]) -> ast.stmt | None:
    name = spec.get("name")
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == name:
                return stmt
    return None


def _holds(node: ast.AST, line: int) -> bool:
    start: int | None = getattr(node, "lineno", None)
    if start is None:
        return False
    end: int = getattr(node, "end_lineno", None) or start
    return start <= line <= end


def _blocks(node: ast.stmt) -> Iterable[tuple[str, _Body]]:
    """The statement lists directly inside a compound statement, with the role of each."""
    for role in ("body", "orelse", "finalbody"):
        body = getattr(node, role, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield role, body
    for handler in getattr(node, "handlers", None) or ():
        yield "handler", handler.body
    for case in getattr(node, "cases", None) or ():
        yield "case", case.body


def _chain(node: ast.stmt, line: int) -> list[tuple[ast.stmt, str, _Body]]:
    """(compound statement, role of the block, the block) from ``node`` down to ``line``."""
    chain: list[tuple[ast.stmt, str, _Body]] = []
    current: ast.stmt | None = node
    while current is not None:
        inner: ast.stmt | None = None
        for role, body in _blocks(current):
            for stmt in body:
                if _holds(stmt, line):
                    chain.append((current, role, body))
                    inner = stmt
                    break
            if inner is not None:
                break
        current = inner
    return chain


def _reason(
    text: str, target: ast.stmt, line: int, ran: frozenset[int], spec: dict[str, Any]
) -> str:
    for owner, role, body in reversed(_chain(target, line)):
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not any(n in ran for n in range(owner.body[0].lineno, owner.end_lineno or 0)):
                return f"`{owner.name}()` was never called"
            return _left_before(body, line, ran) or _stopped_before(body, line, ran)
        left = _left_before(body, line, ran) or _stopped_before(body, line, ran)
        if left:
            return left
        if isinstance(owner, ast.Try):  # `try:` itself may have no line event
            started = any(_holds(stmt, n) for stmt in owner.body for n in ran)
        else:
            started = owner.lineno in ran
        if not started:
            continue  # the statement itself did not run: ask the one around it
        if isinstance(owner, ast.If):
            test = owner.test
            said = _was(text, test, role != "body")
            return said + _advice(test, spec, said)
        if isinstance(owner, (ast.For, ast.AsyncFor)):
            if role == "body":
                return f"`{_source(text, owner.iter)}` was empty"
            return "the loop ended with `break`"
        if isinstance(owner, ast.While):
            if role == "body":
                return f"`{_source(text, owner.test)}` was false"
            return "the loop ended with `break`"
        if isinstance(owner, ast.Try) and role == "handler":
            return "no exception was raised"
        if isinstance(owner, ast.Try) and role == "orelse":
            return "an exception was raised"
        if isinstance(owner, ast.ClassDef):
            return ""
    return ""


def _stopped_before(body: _Body, line: int, ran: frozenset[int]) -> str:
    """ "the run stopped at line N" when statements before ``line`` in ``body`` ran (the last
    of them at N) and none of them left the block: N raised, most likely."""
    last = 0
    for stmt in body:
        if _holds(stmt, line):
            break
        last = max([last, *(n for n in ran if _holds(stmt, n))])
    return f"the run stopped at line {last}" if last else ""


def _left_before(body: _Body, line: int, ran: frozenset[int]) -> str:
    """ "the `return` at line N ran first" when a statement before ``line`` in ``body`` left
    the block (return, raise, break, continue) at a line that ran."""
    for stmt in body:
        if _holds(stmt, line):
            return ""
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                if node.lineno in ran:
                    word = type(node).__name__.lower()
                    return f"the `{word}` at line {node.lineno} ran first"
    return ""


def _source(text: str, node: ast.expr) -> str:
    source = ast.get_source_segment(text, node) or ast.unparse(node)
    source = " ".join(source.split())
    return source if len(source) <= _MAX_SOURCE else source[: _MAX_SOURCE - 3] + "..."


def _none_test(test: ast.expr) -> tuple[ast.expr, bool] | None:
    """(x, True) for `x is not None`, (x, False) for `x is None`."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
    ):
        return test.left, isinstance(test.ops[0], ast.IsNot)
    return None


def _was(text: str, test: ast.expr, value: bool) -> str:
    """What the test evaluated to, in words: "`mask` was None", "`self.training` was true"."""
    none = _none_test(test)
    if none is not None:
        subject, is_not = none
        return f"`{_source(text, subject)}` was {'not None' if is_not == value else 'None'}"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return f"`{_source(text, test.operand)}` was {'false' if value else 'true'}"
    return f"`{_source(text, test)}` was {'true' if value else 'false'}"


def _parameters(spec: dict[str, Any]) -> Sequence[str]:
    return [str(name) for name in spec.get("parameters") or ()]


def _advice(test: ast.expr, spec: dict[str, Any], said: str) -> str:
    """How to make the branch run, when its test reads an argument verify chose."""
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    if not names & set(_parameters(spec)):
        return ""
    if spec.get("kind") == "function":
        hook = "example_args()"
        given = bool((spec.get("construct") or {}).get("hook"))
    else:
        hook = "example_inputs()"
        given = bool((spec.get("inputs") or {}).get("hook"))
    what = "pass one" if said.endswith("was None") else "take this branch"
    if given:
        return f"; make `{hook}` {what}"
    return f"; add an `{hook}` that {what.replace('pass', 'passes').replace('take', 'takes')}"
