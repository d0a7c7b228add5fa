"""Reads the expectation comments of a realistic case file in tests/cases (stdlib only).

Format (see tests/cases/README.md): line 1 a one-line docstring, line 2 `# outcome: ...`,
line 3 optionally `# far-apart`; `# error: IPL00N`, `# warning: IPL00N` and `# saved-by`
(optionally `# saved-by: IPL00N`) at the end of the lines they are about.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import itertools
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

_module_ids = itertools.count()

CASES_DIR = Path(__file__).parent / "cases"
OUTCOMES = ("ok", "inplace-error", "leaf-error", "refused-error")
# What torch 2.13 says, per outcome: a saved tensor changed (at backward), a leaf that
# requires grad written (also "a view of a leaf ..."), a write it refuses on the spot (IPL009).
OUTCOME_MESSAGES = (
    ("inplace-error", ("modified by an inplace operation",)),
    ("leaf-error", ("leaf Variable that requires grad is being used in an in-place operation",)),
    (
        "refused-error",
        (
            "Inplace update to inference tensor outside InferenceMode",
            "functions with out=... arguments don't support automatic differentiation",
            "is a view and is being modified inplace",
            "A view was created in no_grad mode and is being modified inplace",
        ),
    ),
)


def outcome_of_error(message: str) -> str | None:
    """The outcome a RuntimeError's message stands for, or None when it is none of them."""
    for outcome, texts in OUTCOME_MESSAGES:
        if any(text in message for text in texts):
            return outcome
    return None


CODES = tuple(f"IPL00{n}" for n in range(1, 10))

_CODE = r"(IPL\d{3})"
_ANNOTATIONS = {
    "outcome": re.compile(r"outcome:\s*([a-z-]+)"),
    "error": re.compile(rf"error:\s*{_CODE}"),
    "warning": re.compile(rf"warning:\s*{_CODE}"),
    "saved-by": re.compile(rf"saved-by(?::\s*{_CODE})?"),
    "far-apart": re.compile(r"far-apart"),
}


class CaseFormatError(ValueError):
    """A comment that looks like an annotation but does not parse."""


@dataclass(frozen=True)
class Case:
    path: Path
    outcome: str
    errors: dict[int, str]  # line -> rule code of the expected Error-level finding
    saved_by: dict[int, str | None]  # line -> rule code it belongs to (None: the only error)
    warnings: frozenset[tuple[int, str]]  # (line, rule code) of expected Warning findings
    far_apart: bool

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def silent(self) -> bool:
        """A write through `.data` into a saved tensor: torch runs on (outcome ok), the gradient
        is silently wrong, and the analysis warns (IPL005) where the harness sees the write."""
        return self.outcome == "ok" and bool(self.saved_by)

    @property
    def write_lines(self) -> list[int]:
        """The lines that write in place: the expected errors, or a silent case's warning."""
        if self.silent:
            return sorted(line for line, code in self.warnings if code == "IPL005")
        return sorted(self.errors)

    def saved_by_lines(self, code: str) -> list[int]:
        """The `# saved-by` lines that belong to an expected error of this rule code."""
        return sorted(line for line, owner in self.saved_by.items() if owner in (None, code))


def _comments(text: str) -> list[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]


def _annotations(comment: str) -> list[tuple[str, str | None]]:
    """(kind, value) of each `#`-separated segment of a comment that is an annotation.

    A segment is an annotation only when it is exactly one (`# error: IPL001`), so prose
    comments that mention an error do not count.
    """
    found: list[tuple[str, str | None]] = []
    for segment in comment.split("#")[1:]:
        segment = segment.strip()
        for kind, pattern in _ANNOTATIONS.items():
            match = pattern.fullmatch(segment)
            if match:
                found.append((kind, match.group(1) if match.groups() else None))
                break
        else:
            head = segment.split(":", 1)[0].strip()
            if head in _ANNOTATIONS and ":" in segment:
                raise CaseFormatError(f"malformed annotation {segment!r}")
    return found


def parse_case(path: Path, text: str | None = None) -> Case:
    if text is None:
        text = path.read_text(encoding="utf-8")
    outcome: str | None = None
    errors: dict[int, str] = {}
    saved_by: dict[int, str | None] = {}
    warnings: set[tuple[int, str]] = set()
    far_apart = False
    for line, comment in _comments(text):
        try:
            annotations = _annotations(comment)
        except CaseFormatError as exc:
            raise CaseFormatError(f"{path}:{line}: {exc}") from None
        for kind, value in annotations:
            if kind == "outcome":
                if line != 2:
                    raise CaseFormatError(f"{path}:{line}: `# outcome:` belongs on line 2")
                outcome = value
            elif kind == "far-apart":
                if line != 3:
                    raise CaseFormatError(f"{path}:{line}: `# far-apart` belongs on line 3")
                far_apart = True
            elif kind == "error":
                if line in errors:
                    raise CaseFormatError(f"{path}:{line}: two `# error:` on one line")
                errors[line] = str(value)
            elif kind == "warning":
                warnings.add((line, str(value)))
            else:
                saved_by[line] = value
    if outcome is None:
        raise CaseFormatError(f"{path}: no `# outcome:` comment on line 2")
    return Case(path, outcome, errors, saved_by, frozenset(warnings), far_apart)


def problems(case: Case) -> list[str]:
    """What is wrong with a parsed case (empty when it is well formed)."""
    found: list[str] = []
    if case.outcome not in OUTCOMES:
        found.append(f"unknown outcome {case.outcome!r}")
    codes = [*case.errors.values(), *(code for _, code in case.warnings)]
    codes += [code for code in case.saved_by.values() if code is not None]
    found += [f"unknown rule code {code}" for code in codes if code not in CODES]
    if case.outcome == "inplace-error" and (len(case.errors) != 1 or len(case.saved_by) != 1):
        found.append("an inplace-error case has exactly one `# error:` and one `# saved-by`")
    if case.outcome == "refused-error" and (
        set(case.errors.values()) != {"IPL009"} or len(case.errors) != 1 or case.saved_by
    ):
        found.append("a refused-error case has one `# error: IPL009` and no `# saved-by`")
    leaf_codes = set(case.errors.values())
    if case.outcome == "leaf-error" and (leaf_codes != {"IPL002"} or case.saved_by):
        found.append("a leaf-error case has only `# error: IPL002` lines and no `# saved-by`")
    for line, code in case.saved_by.items():
        if code is not None and code not in case.errors.values():
            found.append(f"line {line}: `# saved-by: {code}` names no expected error")
    if case.saved_by and not case.errors and not case.write_lines:
        found.append("`# saved-by` without any expected error (or IPL005 warning, in an ok case)")
    found += _shape_problems(case.path)
    return found


def _shape_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    first = tree.body[0] if tree.body else None
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.lineno == first.end_lineno == 1
    ):
        found.append("line 1 is not a one-line docstring")
    runs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run"]
    if not runs:
        found.append("no module-level `def run() -> None`")
    elif runs[0].args.args or runs[0].args.posonlyargs or runs[0].args.kwonlyargs:
        found.append("run() takes arguments")
    return found


def discover(directory: Path = CASES_DIR) -> list[Case]:
    return [parse_case(path) for path in sorted(directory.glob("[0-9][0-9][0-9]_*.py"))]


def import_path(path: Path, prefix: str) -> ModuleType:
    """Runs the file at `path` as a fresh module (a new name each time: a case and its fixed
    version, or two runs of one file, never share state)."""
    name = f"{prefix}_{path.stem.replace('.', '_')}_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module
