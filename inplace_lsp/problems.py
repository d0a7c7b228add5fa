"""File problems: what keeps `check` from checking all of a file, reported as error
diagnostics with codes of their own (as ruff's E902 and syntax errors), in every output format.

They are not rules: settings, `--select` / `--ignore` and `noqa` do not turn them off (a CI job
must not pass a file it never read); `exclude` leaves a file out of the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from inplace_lsp.analysis.findings import Finding, Severity, Span


@dataclass(frozen=True)
class FileProblem:
    code: str
    name: str
    summary: str

    def at(self, message: str, line: int = 1, col: int = 0) -> Finding:
        """An error diagnostic of this kind at a point of the file (its start by default)."""
        return Finding(self.code, Severity.ERROR, message, Span(line, col, line, col))


SYNTAX_ERROR = FileProblem(
    "IPL900",
    "syntax-error",
    "A statement that Python cannot parse. It is not analysed; the rest of the file is.",
)
UNREADABLE_FILE = FileProblem(
    "IPL901",
    "unreadable-file",
    "A file that was not checked: it does not exist, cannot be read, is not a regular file, "
    "is larger than `max_file_bytes`, or is not text in the encoding Python reads it with "
    "(UTF-8, or what a byte-order mark or a PEP 263 coding line names).",
)
INVALID_NOTEBOOK = FileProblem(
    "IPL902",
    "invalid-notebook",
    "An `.ipynb` file that is not a Jupyter notebook this tool can read: empty, not JSON, "
    "without a `cells` list, nbformat 3, or with a cell that is not valid.",
)
FILE_PROBLEMS = (SYNTAX_ERROR, UNREADABLE_FILE, INVALID_NOTEBOOK)
