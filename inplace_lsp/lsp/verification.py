"""Verify in the editor: the `inplace-lsp.verify` command's arguments, the code lenses that
offer it, and a verify result as diagnostics and a one-line message.

Pure functions of texts and result objects (no pygls, no threads, no torch): the session runs
`runner.run_verify` in a worker thread and publishes what these build.
"""

from __future__ import annotations

import ast
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
from lsprotocol import types

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.lines import lines_with_ends
from inplace_lsp.lsp import convert
from inplace_lsp.verify import runner
from inplace_lsp.verify.harness import error_result
from inplace_lsp.verify.parsed import Parsed

COMMAND = "inplace-lsp.verify"
TITLE = "Verify forward/backward"
# The same command as a code action, for clients without code lenses (Helix, Emacs eglot): a
# source action, so it is not offered in VS Code's light bulb next to the quick fixes.
ACTION_KIND = "source.verify.inplace-lsp"
SOURCE = "inplace-lsp verify"
CODE = "verify"


class Progress(Protocol):
    """The editor's progress bar for one verify run (window/workDoneProgress)."""

    cancel: threading.Event  # set when the user cancels; the runner kills the process group

    async def begin(self, title: str) -> None:
        """Creates and begins the progress (nothing where the client has no progress)."""

    def report(self, message: str) -> None:
        """A step ("starting a warm worker ..."); callable from any thread."""

    def end(self, message: str) -> None:
        """The one-line outcome."""


# ---------------------------------------------------------------- arguments


def parse_arguments(arguments: Sequence[Any]) -> tuple[str, types.Position | None]:
    """[uri, position?] as the command receives them (JSON); ValueError when malformed."""
    if not arguments or not isinstance(arguments[0], str):
        raise ValueError(f"{COMMAND} expects [document uri, position?]")
    if len(arguments) > 2:
        raise ValueError(f"{COMMAND} expects at most 2 arguments, got {len(arguments)}")
    where = arguments[1] if len(arguments) > 1 else None
    if where is None:
        return arguments[0], None
    if isinstance(where, types.Position):
        return arguments[0], where
    line = where.get("line") if isinstance(where, Mapping) else None
    character = where.get("character", 0) if isinstance(where, Mapping) else None
    if (
        not isinstance(line, int)
        or not isinstance(character, int)
        or isinstance(line, bool)
        or isinstance(character, bool)
        or line < 0
        or character < 0
    ):
        raise ValueError(f'{COMMAND}: position must be {{"line": int, "character": int}}')
    return arguments[0], types.Position(line, character)


# ---------------------------------------------------------------- code lenses


@dataclass(frozen=True)
class LensTarget:
    """Something verify can run: a top-level nn.Module subclass or a function that calls
    backward()."""

    name: str
    kind: Literal["module", "function"]
    line: int  # 1-based: the `class` / `def` line
    end_line: int  # 1-based: its last line


def lens_targets(text: str, path: str | None) -> tuple[LensTarget, ...] | None:
    """The verify targets of a file, in order; None when it does not parse (the caller keeps
    the lenses it had, so they do not flicker while the user types). The server takes them
    from the analysis it already ran (`DocumentResult.targets`); this is the same, standalone."""
    result = DocumentAnalysis(path=path).update(text)
    if result.syntax_errors:
        return None
    return from_result(result.targets)


def from_result(targets: tuple[tuple[str, str, int, int], ...]) -> tuple[LensTarget, ...]:
    return tuple(
        LensTarget(name, "module" if kind == "module" else "function", line, end)
        for kind, name, line, end in targets
    )


def code_lens(uri: str, target: LensTarget, lines: Sequence[str], encoding: str) -> types.CodeLens:
    index = target.line - 1
    text = lines[index] if 0 <= index < len(lines) else ""
    where = types.Range(
        types.Position(index, 0), types.Position(index, convert.units(text, encoding))
    )
    return types.CodeLens(range=where, command=_command(uri, target))


def _command(uri: str, target: LensTarget) -> types.Command:
    """The verify command for a target: the document and the target's first line."""
    position = {"line": target.line - 1, "character": 0}
    return types.Command(title=TITLE, command=COMMAND, arguments=[uri, position])


def code_action(uri: str, targets: Sequence[LensTarget], line: int) -> types.CodeAction | None:
    """ "Verify NAME" for the innermost target around 0-based `line`, or None."""
    around = [t for t in targets if t.line - 1 <= line <= t.end_line - 1]
    if not around:
        return None
    target = max(around, key=lambda t: t.line)
    what = "forward/backward" if target.kind == "module" else "run"
    return types.CodeAction(
        title=f"Verify {target.name}: {what} under autograd (inplace-lsp)",
        kind=ACTION_KIND,
        command=_command(uri, target),
    )


# ---------------------------------------------------------------- results


def _same_file(location: Mapping[str, Any] | None, path: str) -> bool:
    if not isinstance(location, Mapping) or not location.get("path"):
        return False
    return os.path.normcase(os.path.abspath(str(location["path"]))) == os.path.normcase(
        os.path.abspath(path)
    )


def _line_range(lines: Sequence[str], line: int, encoding: str) -> types.Range:
    """The code on 1-based `line`, without its indentation and trailing blanks."""
    return convert.code_range(lines, max(line - 1, 0), encoding)


def _location(
    where: Mapping[str, Any], path: str, uri: str, lines: Sequence[str], encoding: str
) -> types.Location | None:
    line = where.get("line")
    if not isinstance(line, int) or line < 1:
        return None
    if _same_file(where, path):
        return types.Location(uri, _line_range(lines, line, encoding))
    other = str(where.get("path") or "")
    if not other or not os.path.isabs(other):
        return None
    # Another file: its line, whole (its text is not at hand here).
    return types.Location(
        Path(other).as_uri(), types.Range(types.Position(line - 1, 0), types.Position(line, 0))
    )


def _op_name(op: str) -> str:
    for suffix in ("Backward0", "Backward1", "Backward"):
        if op.endswith(suffix):
            return op[: -len(suffix)]
    return op


def diagnostics(
    result: Mapping[str, Any],
    path: str,
    uri: str,
    lines: Sequence[str],
    encoding: str,
    target_line: int | None = None,
) -> list[types.Diagnostic]:
    """A failed verify as an Error at the mutating line (related: the line that saved the
    tensor); nothing for any other status. A mutation in another file is reported at
    `target_line` (the verified class or function) with the mutation as related information.
    A flagged line that the run never reached gets an Information diagnostic saying so."""
    if result.get("status") == "ok":
        return _not_run_diagnostics(result, lines, encoding)
    if result.get("status") not in runner.FAILED:
        return []
    mutation = result.get("mutation")
    related: list[types.DiagnosticRelatedInformation] = []
    if isinstance(mutation, Mapping) and _same_file(mutation, path):
        where = _line_range(lines, int(mutation["line"]), encoding)
    else:
        where = _line_range(lines, target_line or 1, encoding)
        elsewhere = (
            _location(mutation, path, uri, lines, encoding)
            if isinstance(mutation, Mapping)
            else None
        )
        if elsewhere is not None:
            related.append(types.DiagnosticRelatedInformation(elsewhere, "the in-place write"))
    saved = result.get("saved_by")
    if isinstance(saved, Mapping):
        location = _location(saved, path, uri, lines, encoding)
        if location is not None:
            op = str(saved.get("op") or "an op")
            related.append(
                types.DiagnosticRelatedInformation(
                    location, f"saved for backward here ({op}: {_op_name(op)} needs it)"
                )
            )
    for extra in result.get("related") or []:
        if isinstance(extra, Mapping):
            location = _location(extra, path, uri, lines, encoding)
            if location is not None:
                text = convert.places_shown(str(extra.get("message") or ""), path)
                related.append(types.DiagnosticRelatedInformation(location, text))
    return [
        types.Diagnostic(
            range=where,
            message=runner.describe(result, path),
            severity=types.DiagnosticSeverity.Error,
            code=CODE,
            source=SOURCE,
            related_information=related or None,
        ),
        *_not_run_diagnostics(result, lines, encoding),
    ]


def folded(
    analysed: Sequence[types.Diagnostic], verified: Sequence[types.Diagnostic]
) -> list[types.Diagnostic]:
    """One entry per bug: a verify error on a line that an Error of the analysis names
    confirms that one (its message says so, its places join) instead of standing beside it
    in the Problems list; other verify diagnostics follow the analysis's."""
    errors = {
        d.range.start.line: i
        for i, d in enumerate(analysed)
        if d.severity == types.DiagnosticSeverity.Error
    }
    found = list(analysed)
    apart: list[types.Diagnostic] = []
    for diagnostic in verified:
        at = errors.get(diagnostic.range.start.line)
        if at is None or diagnostic.code != CODE or diagnostic.severity != found[at].severity:
            apart.append(diagnostic)
            continue
        static = found[at]
        places = [*(static.related_information or ()), *(diagnostic.related_information or ())]
        found[at] = attrs.evolve(
            static,
            message=f"{static.message} (confirmed by verify: {diagnostic.message})",
            related_information=places or None,
        )
    return found + apart


def _not_run_diagnostics(
    result: Mapping[str, Any], lines: Sequence[str], encoding: str
) -> list[types.Diagnostic]:
    """ "verify ran M but not this line (IPL001): `mask` was None; ..." at each flagged line of
    the target that did not run: its finding is neither proven nor refuted."""
    by_line: dict[int, tuple[list[str], str]] = {}
    for entry in result.get("not_run") or []:
        if isinstance(entry, Mapping) and isinstance(entry.get("line"), int):
            codes, _ = by_line.setdefault(entry["line"], ([], str(entry.get("reason") or "")))
            codes.append(str(entry.get("code") or "?"))
    found = []
    for line, (codes, reason) in sorted(by_line.items()):
        text = f"verify ran {result.get('target') or 'the target'} but not this line"
        text += f" ({', '.join(codes)})" + (f": {reason}" if reason else "")
        found.append(
            types.Diagnostic(
                range=_line_range(lines, line, encoding),
                message=text,
                severity=types.DiagnosticSeverity.Information,
                code=CODE,
                source=SOURCE,
            )
        )
    return found


def target_span(
    lines: Sequence[str], name: object, parsed: Parsed | None = None
) -> tuple[int, int] | None:
    """(first, last) 1-based lines of the top-level class or function `name` in a program
    (`parsed`: the program of `lines`, parsed, when the caller has it)."""
    try:
        tree = parsed.tree() if parsed is not None else ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == name:
                first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                return first, stmt.end_lineno or stmt.lineno
    return None


def message(result: Mapping[str, Any], path: str | None) -> tuple[str, types.MessageType]:
    """The one-line window/showMessage for a result, and its type. Timeouts and errors get
    the last line of the user's output (the exception, usually)."""
    status = result.get("status")
    line = runner.describe(result, path)
    interpreter = runner.interpreter_text(result)
    if interpreter:
        line = f"{line} [python: {interpreter}]"
    if status == "ok":
        unproven = bool(result.get("not_run"))  # "OK, but line N did not run"
        return line, types.MessageType.Warning if unproven else types.MessageType.Info
    if status in runner.FAILED:
        return line, types.MessageType.Error
    if result.get("cancelled"):
        return str(result.get("message") or "verify was cancelled"), types.MessageType.Info
    tail = [t.strip() for t in str(result.get("stderr_tail") or "").splitlines() if t.strip()]
    if tail and tail[-1] not in line:
        line = f"{line} ({tail[-1][:300]})"
    kind = types.MessageType.Warning if status == "timeout" else types.MessageType.Error
    return line, kind


# Calls a notebook's constants may make at the top level (`MEAN = torch.tensor([...])`).
_CONSTANT_CALL_ROOTS = frozenset({"torch", "math", "np", "numpy"})
NOTEBOOK_NOTE = "verify runs a notebook's imports, definitions and constants, not its other code"


def notebook_definitions(program: str) -> str:
    """A notebook's cells (one program) with only what verify should run at import: imports,
    classes, functions, and assignments of constants. Training loops, data loading and prints
    in other cells are blanked line for line, so line numbers stay those of the program."""
    return definitions(Parsed(program)).text


def notebook_program_path(notebook: str) -> str:
    """The name a notebook's program runs under: a file beside the notebook (that is never
    written), so that its imports of local modules resolve as the notebook's do."""
    stem = re.sub(r"\W", "_", Path(notebook).stem)
    return str(Path(notebook).with_name(f"_inplace_lsp_notebook_{stem}.py"))


def definitions(program: Parsed) -> Parsed:
    """`notebook_definitions` of a parsed program, parsed: its tree is the program's, less the
    top-level statements on a blanked line (what `ast.parse` of the new text gives, as the
    lines kept do not change), so that nothing parses the program again."""
    try:
        tree = program.tree()
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return program  # the run reports the syntax error at its line
    lines = lines_with_ends(program.text)
    blanked: set[int] = set()  # 0-based
    for stmt in tree.body:
        if _runs_at_import(stmt):
            continue
        for index in range(stmt.lineno - 1, stmt.end_lineno or stmt.lineno):
            if index < len(lines):
                ending = lines[index][len(lines[index].rstrip("\r\n")) :]
                lines[index] = ending or "\n"
                blanked.add(index)
    if not blanked:
        return program
    kept = [
        stmt
        for stmt in tree.body
        if blanked.isdisjoint(range(stmt.lineno - 1, stmt.end_lineno or stmt.lineno))
    ]
    return Parsed("".join(lines), ast.Module(body=kept, type_ignores=list(tree.type_ignores)))


def _runs_at_import(stmt: ast.stmt) -> bool:
    if isinstance(
        stmt, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        return all(_constant_part(node) for node in ast.walk(stmt.value))
    return False


def _constant_part(node: ast.AST) -> bool:
    if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
        return False
    if isinstance(node, ast.Call):
        root: ast.expr = node.func
        while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        return isinstance(root, ast.Name) and root.id in _CONSTANT_CALL_ROOTS
    return True


def not_run(text: str) -> dict[str, Any]:
    """The result object of a verify that could not start (same keys as the runner's)."""
    return {**error_result("inplace-lsp", text), "stderr_tail": ""}
