"""The module-level imports of a document: under which name it imports torch (or `no_grad`,
or `os`), and the edit that adds a missing `import` where the imports are.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from inplace_lsp.analysis.findings import Span
from inplace_lsp.fixes.source import Edit, Source

_IMPORT = re.compile(r"^(?:import|from)[ \t]", re.MULTILINE)


@dataclass(frozen=True)
class Imports:
    modules: dict[str, str]  # module imported as a whole -> the name it is bound to
    names: dict[str, str]  # "torch.no_grad" -> the name it is bound to
    first_line: int | None  # first import of the document (not `from __future__`)
    after_header: int  # first line after the docstring and `from __future__` imports


def scan(source: Source) -> Imports:
    """The imports written at column 0 (found by a regex, each parsed on its own)."""
    modules: dict[str, str] = {}
    names: dict[str, str] = {}
    first_line: int | None = None
    after_header = _after_docstring(source)
    for match in _IMPORT.finditer(source.text):
        number, _ = source.position(match.start())
        stmt = _parse_import(source, number)
        if stmt is None:
            continue
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            after_header = max(after_header, number + (stmt.end_lineno or 1) - stmt.lineno + 1)
            continue
        if first_line is None:
            first_line = number
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    modules[alias.name] = alias.asname
                else:
                    top = alias.name.split(".")[0]
                    modules.setdefault(top, top)
        elif stmt.module and not stmt.level:
            for alias in stmt.names:
                names[f"{stmt.module}.{alias.name}"] = alias.asname or alias.name
    return Imports(modules, names, first_line, after_header)


def _parse_import(source: Source, number: int) -> ast.Import | ast.ImportFrom | None:
    try:
        tree = ast.parse(source.line(number))
        stmt: ast.stmt | None = tree.body[0] if tree.body else None
    except SyntaxError:  # continues on the next lines, `from x import (a,\n b)`
        found = source.statement(Span(number, 0, number, 0), exact=False)
        stmt = found.stmt if found is not None and found.line(found.stmt) == number else None
    return stmt if isinstance(stmt, (ast.Import, ast.ImportFrom)) else None


def _after_docstring(source: Source) -> int:
    """The first line after the module docstring (1 when there is none)."""
    for number in range(1, source.line_count + 1):
        text = source.line(number)
        if not text.strip() or text.startswith("#"):
            continue
        if text[0] in "'\"rRbBuU":
            found = source.statement(Span(number, 0, number, 0), exact=False)
            if found is not None and isinstance(found.stmt, ast.Expr):
                return found.end_line(found.stmt) + 1
        return 1
    return 1


def add_import(source: Source, imports: Imports, statement: str) -> Edit:
    line = imports.first_line if imports.first_line is not None else imports.after_header
    line = min(line, source.line_count)
    if line == source.line_count and source.line(line):
        # no line end after the last line: start a new one
        return Edit(
            Span(line, len(source.line(line)), line, len(source.line(line))),
            source.newline() + statement,
        )
    return Edit(Span(line, 0, line, 0), statement + source.newline())


def no_grad_call(source: Source) -> tuple[str, list[Edit]]:
    """`torch.no_grad()` as this document can write it (`th.no_grad()`, `no_grad()`)."""
    imports = scan(source)
    if "torch" in imports.modules:
        return f"{imports.modules['torch']}.no_grad()", []
    direct = imports.names.get("torch.no_grad") or imports.names.get("torch.autograd.no_grad")
    if direct is not None:
        return f"{direct}()", []
    return "torch.no_grad()", [add_import(source, imports, "import torch")]
