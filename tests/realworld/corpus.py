"""Reads the header and the expectation comments of a real-world case (tests/realworld/*.py).

Header (README.md): line 1 a one-line docstring, then `# outcome:`, `# source:` (the thread's
URL), `# repo:` (owner/name of the repository whose code it is), `# category:` and, for a bug
and its fix, `# twin:` (the other file). The lines: `# error: IPL00N`, `# saved-by`,
`# warning: IPL00N` at the end of the lines they are about, as in tests/cases.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from casefile import CODES, _annotations, _comments  # noqa: E402

HERE = Path(__file__).resolve().parent
OUTCOMES = ("ok", "inplace-error", "leaf-error", "retention-error", "refused-error")
CATEGORIES = ("trainer", "iteration", "residual", "leaf", "retention")
_HEADER = re.compile(r"#\s*(outcome|source|repo|category|twin):\s*(\S.*?)\s*$")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")


class CorpusFormatError(ValueError):
    """A case whose header or annotations do not parse."""


@dataclass(frozen=True)
class Case:
    path: Path
    outcome: str
    source: str
    repo: str
    category: str
    twin: str | None
    errors: dict[int, str]  # line -> rule code of the expected Error-level finding
    saved_by: dict[int, str | None]
    warnings: frozenset[tuple[int, str]]

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def bug(self) -> bool:
        return self.outcome != "ok"


def parse(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    header: dict[str, str] = {}
    for line in text.splitlines()[1:8]:
        match = _HEADER.fullmatch(line.strip())
        if match:
            header[match.group(1)] = match.group(2)
        elif line.startswith("#"):
            continue
        else:
            break
    errors: dict[int, str] = {}
    saved_by: dict[int, str | None] = {}
    warnings: set[tuple[int, str]] = set()
    for line, comment in _comments(text):
        for kind, value in _annotations(comment):
            if kind == "error":
                errors[line] = str(value)
            elif kind == "warning":
                warnings.add((line, str(value)))
            elif kind == "saved-by":
                saved_by[line] = value
    missing = [key for key in ("outcome", "source", "repo", "category") if key not in header]
    if missing:
        raise CorpusFormatError(f"{path}: no `# {missing[0]}:` in the header")
    return Case(
        path,
        header["outcome"],
        header["source"],
        header["repo"],
        header["category"],
        header.get("twin"),
        errors,
        saved_by,
        frozenset(warnings),
    )


def problems(case: Case) -> list[str]:
    found: list[str] = []
    if case.outcome not in OUTCOMES:
        found.append(f"unknown outcome {case.outcome!r}")
    if case.category not in CATEGORIES:
        found.append(f"unknown category {case.category!r}")
    if not case.source.startswith("https://"):
        found.append("the source is not an https URL")
    if not _REPO.fullmatch(case.repo):
        found.append(f"repo {case.repo!r} is not owner/name")
    codes = [*case.errors.values(), *(code for _, code in case.warnings)]
    found += [f"unknown rule code {code}" for code in codes if code not in CODES]
    if case.bug and not case.errors:
        found.append("a failing case marks its guilty line with `# error: IPL00N`")
    if case.outcome == "ok" and case.errors:
        found.append("an ok case has no `# error:` line")
    if case.outcome == "inplace-error" and len(case.saved_by) != 1:
        found.append("an inplace-error case has exactly one `# saved-by`")
    if case.twin is not None and not (case.path.parent / case.twin).is_file():
        found.append(f"its twin {case.twin} does not exist")
    return found


# nnn_slug.py (nnnn_slug.py past 999); the blind split's bnnn_slug.py
_CASE_NAME = re.compile(r"b?\d{3,4}_.+\.py")


def discover(directory: Path = HERE) -> list[Case]:
    return [parse(p) for p in sorted(directory.glob("*.py")) if _CASE_NAME.fullmatch(p.name)]
