"""Finding, Related and FixRecipe: what the analysis reports (no LSP types here)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


class Confidence(str, enum.Enum):
    DEFINITE = "definite"
    POSSIBLE = "possible"


@dataclass(frozen=True)
class Span:
    """A source range: lines 1-based, columns 0-based in Unicode code points."""

    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Related:
    """The other end of a finding, e.g. the op that saved the tensor."""

    span: Span
    message: str
    path: str | None = None  # None: the same file as the finding


@dataclass(frozen=True)
class FixRecipe:
    """How to rewrite the flagged statement; `fixes/` turns it into text edits.

    kind names the codemod (e.g. "out-of-place", "inplace-false", "wrap-no-grad");
    target_line is the 1-based line of the statement the codemod rewrites.
    """

    kind: str
    title: str
    safe: bool
    target: Span
    params: tuple[tuple[str, str], ...] = ()

    def param(self, name: str, default: str = "") -> str:
        return dict(self.params).get(name, default)


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    span: Span
    confidence: Confidence = Confidence.DEFINITE
    related: tuple[Related, ...] = ()
    fix: FixRecipe | None = None
    # Version history of the tensor's version group, for hover:
    # ("v0 saved by ...", "v1 written by ...").
    history: tuple[str, ...] = field(default=(), compare=False)

    @property
    def line(self) -> int:
        return self.span.line
