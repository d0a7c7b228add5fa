"""The `remove-anomaly` codemod (unsafe): anomaly detection only when an environment variable
asks for it. `torch.autograd.set_detect_anomaly(True)` as a statement goes under
`if os.environ.get("INPLACE_LSP_DETECT_ANOMALY"):`; `with torch.autograd.detect_anomaly():`
becomes `with torch.autograd.set_detect_anomaly(bool(os.environ.get(...))):`. Adds `import os`.
"""

from __future__ import annotations

import ast

import libcst as cst

from inplace_lsp.analysis.findings import Finding
from inplace_lsp.fixes.cstedit import find_expression, find_statement, stmt_span
from inplace_lsp.fixes.imports import add_import, scan
from inplace_lsp.fixes.source import Edit, Located, Source, region_for

ENV_VAR = "INPLACE_LSP_DETECT_ANOMALY"


def remove_anomaly(source: Source, finding: Finding) -> list[Edit] | None:
    if finding.fix is None:
        return None
    found = source.statement(finding.fix.target, exact=False)
    if found is None:
        return None
    imports = scan(source)
    os_name = imports.modules.get("os")
    extra: list[Edit] = []
    if os_name is None:
        os_name = "os"
        extra.append(add_import(source, imports, "import os"))
    flag = f'{os_name}.environ.get("{ENV_VAR}")'
    stmt = found.stmt
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        edits = _guard_statement(source, found, flag)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        edits = _mode_argument(source, found, finding, flag)
    else:
        edits = None
    return None if edits is None else [*extra, *edits]


def _guard_statement(source: Source, found: Located, flag: str) -> list[Edit] | None:
    region = region_for(source, found)
    if region is None:
        return None
    node = find_statement(region, stmt_span(source, found))
    if not isinstance(node, cst.Expr):
        return None
    line = next(
        (s for s in region.body if isinstance(s, cst.SimpleStatementLine) and node in s.body),
        None,
    )
    if line is None or len(line.body) != 1:
        return None  # shares its line with other statements: left to the user
    guard = cst.If(
        test=cst.parse_expression(flag),
        body=cst.IndentedBlock(
            body=[line.with_changes(leading_lines=[])], indent=source.indent_unit()
        ),
        leading_lines=line.leading_lines,
    )
    return region.replace(line, guard)


def _mode_argument(
    source: Source, found: Located, finding: Finding, flag: str
) -> list[Edit] | None:
    assert finding.fix is not None
    region = region_for(source, found)
    if region is None:
        return None
    call = find_expression(region, finding.fix.target, cst.Call)
    if not isinstance(call, cst.Call):
        return None
    mode = cst.Arg(value=cst.parse_expression(f"bool({flag})"))
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if name == "set_detect_anomaly":
        args = [a for a in call.args if a.keyword is None or a.keyword.value != "mode"]
        if args and args[0].keyword is None:
            args = args[1:]  # the positional mode
        new_call = call.with_changes(args=[mode.with_changes(comma=_comma(args)), *args])
    elif name == "detect_anomaly" and isinstance(func, cst.Attribute):
        new_func = func.with_changes(attr=cst.Name("set_detect_anomaly"))
        args = list(call.args)
        new_call = call.with_changes(
            func=new_func, args=[mode.with_changes(comma=_comma(args)), *args]
        )
    else:
        return None
    return region.replace(call, new_call)


def _comma(rest: list[cst.Arg]) -> cst.Comma | cst.MaybeSentinel:
    return (
        cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if rest else cst.MaybeSentinel.DEFAULT
    )
