"""Settings: what the user configured (pyproject.toml or the editor), and applying it to findings.

One converter (`from_wire`) reads both sources: `[tool.inplace-lsp]` tables (snake_case or
kebab-case keys) and LSP initialization options / `workspace/didChangeConfiguration`
(camelCase keys). Invalid values never raise: each is reported as a problem string and the
setting keeps its default.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar, cast

from inplace_lsp import files
from inplace_lsp.analysis import noqa
from inplace_lsp.analysis.evaluator import FUNCTION_TIME_LIMIT_S
from inplace_lsp.analysis.findings import Finding, Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

TOOL_KEY = "inplace-lsp"
ALL_CODES = ("IPL",)
# Directories nobody wants linted; user `exclude` patterns are added to these, never replace them.
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",  # Jupyter's autosaved copies of the notebooks beside it
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    "site-packages",
)

Device = Literal["auto", "cuda", "cpu"]
RunMode = Literal["onType", "onSave"]

_CODE = re.compile(r"IPL[0-9]{0,3}")
# Above this size a file is not analysed (a 20 MB file took minutes and gigabytes).
MAX_FILE_BYTES = 2_000_000
# A settings file larger than this is not read (a pyproject.toml a repository commits as a
# link to a log, or /dev/zero: is_file() passes the first, the second not at all).
MAX_SETTINGS_BYTES = 1 << 20


@dataclass(frozen=True)
class VerifySettings:
    """How `verify` runs the user's module: device, time limit, interpreter, launcher prefix."""

    device: Device = "auto"
    timeout_s: float = 120.0
    python: str | None = None  # None: the workspace venv, else the server's own interpreter
    launcher: tuple[str, ...] = ()  # e.g. ("srun", "--gres=gpu:1")
    # Where the user's code runs: a new temporary folder (what it writes, or deletes, in its
    # working directory stays there), or the project's folder (code that opens data files by
    # relative paths).
    cwd: Literal["temporary", "project"] = "temporary"
    # Names of the fields the source actually set; lets `merge` tell "set" from "default".
    explicit: frozenset[str] = field(default=frozenset(), compare=False, repr=False)


@dataclass(frozen=True)
class Settings:
    """Everything the user can set; the defaults are what an unconfigured project gets."""

    select: tuple[str, ...] = ALL_CODES  # codes or prefixes
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict, hash=False)
    strict: bool = False  # raises Hint findings to Warning
    show_hints: bool = False  # report Hints ("checked: safe") as diagnostics / CLI lines
    exclude: tuple[str, ...] = ()  # glob patterns, on top of DEFAULT_EXCLUDE
    run: RunMode = "onType"
    debounce_ms: float = 0.0  # the language server waits this long after a change (0: not)
    max_file_bytes: int = MAX_FILE_BYTES  # larger files are said to be too large, not analysed
    # A function whose analysis takes longer (seconds) is said not analysed; the rest of its
    # file is analysed.
    function_time_limit_s: float = FUNCTION_TIME_LIMIT_S
    verify: VerifySettings = field(default_factory=VerifySettings)
    explicit: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def is_selected(self, code: str) -> bool:
        """Whether findings of `code` are reported: the most specific matching prefix decides,
        and `ignore` wins a tie (select IPL + ignore IPL00 + select IPL001 -> IPL001 on)."""
        selected = _longest_prefix(self.select, code)
        return selected > 0 and selected > _longest_prefix(self.ignore, code)

    def severity_of(self, finding: Finding) -> Severity:
        """The finding's severity after `strict` and the per-code overrides (overrides win)."""
        best = max((p for p in self.severity if finding.code.startswith(p)), key=len, default="")
        if best:
            return self.severity[best]
        if self.strict and finding.severity is Severity.HINT:
            return Severity.WARNING
        return finding.severity

    def is_excluded(self, path: PurePath) -> bool:
        """Whether a walked file or directory is skipped. A pattern without a slash matches
        its name; one with a slash matches its whole path (relative to the project root,
        like .gitignore patterns relative to their file)."""
        for pattern in (*DEFAULT_EXCLUDE, *self.exclude):
            pattern = pattern.rstrip("/").removeprefix("./")
            subject = path.as_posix() if "/" in pattern else path.name
            if fnmatch.fnmatchcase(subject, pattern):
                return True
        return False


def too_large(size: int, limit: int, setting: str) -> str:
    """What the CLI and the server say of a file above `max_file_bytes` (`setting` as the
    user spells it there)."""
    return (
        f"file too large to analyse ({size / 1e6:.1f} MB > {limit / 1e6:.1f} MB, setting {setting})"
    )


def _longest_prefix(prefixes: Iterable[str], code: str) -> int:
    return max((len(p) for p in prefixes if code.startswith(p)), default=0)


# ---------------------------------------------------------------- applying settings to findings


def apply(
    findings: Iterable[Finding], settings: Settings, source_lines: Sequence[str]
) -> list[Finding]:
    """Drops unselected and `# noqa`-suppressed findings, sets each remaining one's severity.

    A finding's noqa comment goes on its first line (for a multi-line statement, the line
    where the flagged expression starts).
    """
    kept: list[Finding] = []
    for finding in findings:
        if not settings.is_selected(finding.code):
            continue
        line_index = finding.span.line - 1
        if 0 <= line_index < len(source_lines) and noqa.suppressed(
            source_lines[line_index], finding.code
        ):
            continue
        severity = settings.severity_of(finding)
        kept.append(
            finding if severity is finding.severity else replace(finding, severity=severity)
        )
    return kept


# ---------------------------------------------------------------- reading settings


class _Invalid(ValueError):
    """A setting's value is unusable; the message says what was expected."""


T = TypeVar("T")


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _codes(value: object) -> tuple[str, ...]:
    # A string is a comma-separated list (the CLI's --select IPL001,IPL003).
    items = [i for i in value.split(",") if i.strip()] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise _Invalid(f'expected a list of codes like ["IPL001"], got {_describe(value)}')
    codes: list[str] = []
    for item in items:
        code = item.strip().upper() if isinstance(item, str) else item
        if not isinstance(code, str) or not _CODE.fullmatch(code):
            raise _Invalid(f"{_describe(item)} is not a code or prefix like IPL001 or IPL")
        codes.append(code)
    return tuple(codes)


def _severity(value: object) -> Severity:
    text = value.strip().lower() if isinstance(value, str) else None
    text = "information" if text == "info" else text
    for severity in Severity:
        if severity.value == text:
            return severity
    choices = ", ".join(s.value for s in Severity)
    raise _Invalid(f"expected one of {choices}, got {_describe(value)}")


def _severity_table(value: object) -> dict[str, Severity]:
    if not isinstance(value, Mapping):
        raise _Invalid(f'expected a table like {{IPL003 = "warning"}}, got {_describe(value)}')
    table: dict[str, Severity] = {}
    for key, level in value.items():
        (code,) = _codes([key])
        try:
            table[code] = _severity(level)
        except _Invalid as exc:
            raise _Invalid(f"{code}: {exc}") from None
    return table


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"expected true or false, got {_describe(value)}")
    return value


def _patterns(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) and p for p in value):
        raise _Invalid(f"expected a list of glob patterns, got {_describe(value)}")
    return tuple(value)


def _choice(*choices: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        # "onSave", "on-save" and "on_save" are the same choice.
        wanted = re.sub(r"[-_]", "", value).lower() if isinstance(value, str) else None
        for choice in choices:
            if choice.lower() == wanted:
                return choice
        raise _Invalid(f"expected one of {', '.join(choices)}, got {_describe(value)}")

    return parse


def _timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
        raise _Invalid(f"expected a positive number of seconds, got {_describe(value)}")
    return float(value)


def _milliseconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 60_000:
        raise _Invalid(f"expected milliseconds between 0 and 60000, got {_describe(value)}")
    return float(value)


def _byte_count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _Invalid(f"expected a positive number of bytes, got {_describe(value)}")
    return value


def _python(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Invalid(f"expected a path to a Python interpreter, got {_describe(value)}")
    return value


def _launcher(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise _Invalid(f"cannot split {_describe(value)} into words: {exc}") from None
    if not isinstance(value, list | tuple) or not all(isinstance(w, str) for w in value):
        raise _Invalid(
            f'expected a command prefix like ["srun", "--gres=gpu:1"], got {_describe(value)}'
        )
    return tuple(value)


def _snake(key: str) -> str:
    """timeoutS, timeout-s and timeout_s -> timeout_s."""
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key)
    return key.replace("-", "_").lower()


@dataclass(frozen=True)
class _Table:
    """How to read one settings table: a parser per key, or a nested _Table."""

    make: Callable[..., Any]  # the dataclass built from the parsed values
    parsers: Mapping[str, Callable[[object], object] | _Table]

    def convert(self, raw: Mapping[Any, object], prefix: str, problems: list[str]) -> Any:
        values: dict[str, object] = {}
        for key, value in raw.items():
            name = _snake(str(key))
            label = prefix + str(key)  # as the user spelled it
            parser = self.parsers.get(name)
            if parser is None:
                problems.append(f"unknown setting '{label}', ignored")
            elif isinstance(parser, _Table):
                if isinstance(value, Mapping):
                    values[name] = parser.convert(value, label + ".", problems)
                else:
                    problems.append(
                        f"setting '{label}': expected a table, got {_describe(value)}; "
                        "using the default"
                    )
            else:
                try:
                    values[name] = parser(value)
                except _Invalid as exc:
                    problems.append(f"setting '{label}': {exc}; using the default")
        return self.make(**values, explicit=frozenset(values))


_SETTINGS = _Table(
    Settings,
    {
        "select": _codes,
        "ignore": _codes,
        "severity": _severity_table,
        "strict": _bool,
        "show_hints": _bool,
        "exclude": _patterns,
        "run": _choice("onType", "onSave"),
        "debounce_ms": _milliseconds,
        "max_file_bytes": _byte_count,
        "function_time_limit_s": _timeout,
        "verify": _Table(
            VerifySettings,
            {
                "device": _choice("auto", "cuda", "cpu"),
                "timeout_s": _timeout,
                "python": _python,
                "launcher": _launcher,
                "cwd": _choice("temporary", "project"),
            },
        ),
    },
)


def from_wire(options: Mapping[str, Any] | None) -> tuple[Settings, list[str]]:
    """Settings from a `[tool.inplace-lsp]` table or LSP options; unknown keys and invalid
    values become problems (the defaults stay in their place)."""
    if options is None:
        return Settings(), []
    if not isinstance(options, Mapping):
        return Settings(), [f"settings: expected a table, got {_describe(options)}; using defaults"]
    problems: list[str] = []
    settings: Settings = _SETTINGS.convert(options, "", problems)
    return settings, problems


def _is(test: Callable[[], bool]) -> bool:
    """`path.is_dir()` and the like, False where Python raises (a folder it may not enter)."""
    try:
        return test()
    except OSError:
        return False


def _read_toml(path: Path) -> dict[str, Any]:
    """A settings file's TOML: a regular file (after links) of at most MAX_SETTINGS_BYTES
    (files.Refused, an OSError, otherwise), in UTF-8."""
    return tomllib.loads(files.read_regular(str(path), MAX_SETTINGS_BYTES).decode("utf-8"))


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.inplace-lsp] table,
    else the nearest pyproject.toml at all, else None."""
    start = start.resolve()
    directory = start if _is(start.is_dir) else start.parent
    nearest: Path | None = None
    for folder in (directory, *directory.parents):
        candidate = folder / "pyproject.toml"
        if not _is(candidate.is_file):
            continue
        nearest = nearest or candidate
        try:
            data = _read_toml(candidate)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        tool = data.get("tool")
        if isinstance(tool, dict) and TOOL_KEY in tool:
            return candidate
    return nearest


def load_settings(path: Path) -> tuple[Settings, list[str]]:
    """Settings from a TOML file: a pyproject.toml's [tool.inplace-lsp] table, or, for any
    other file name (say inplace-lsp.toml), the [tool.inplace-lsp] table if present, else
    the whole file. Problems are prefixed with the file's path."""
    try:
        data = _read_toml(path)
    except OSError as exc:
        reason = exc.strerror or str(exc).removeprefix(f"{path}: ")
        return Settings(), [f"{path}: cannot read: {reason}; using defaults"]
    except UnicodeDecodeError as exc:
        return Settings(), [f"{path}: not UTF-8 (offset {exc.start}); using defaults"]
    except tomllib.TOMLDecodeError as exc:
        return Settings(), [f"{path}: invalid TOML: {exc}; using defaults"]
    tool = data.get("tool")
    table: object = tool.get(TOOL_KEY) if isinstance(tool, dict) else None
    if table is None:
        if path.name == "pyproject.toml":
            return Settings(), []
        table = data
    if not isinstance(table, dict):
        return Settings(), [f"{path}: [tool.{TOOL_KEY}] must be a table; using defaults"]
    settings, problems = from_wire(table)
    problems = _strings_for_lists(table) + problems
    return settings, [f"{path}: {problem}" for problem in problems]


# TOML settings that take a list, and how a plain string there is read all the same.
_LISTS = {"select": "comma-separated codes", "ignore": "comma-separated codes"}
_LISTS_OF_PATTERNS = {"exclude": "one pattern"}


def _strings_for_lists(table: Mapping[str, object]) -> list[str]:
    """Warnings for a string where the file should have a list (`select = "IPL001"`): it is
    accepted as the command line would read it, but said, since it is easy to mean a list."""
    problems = []
    for key, value in table.items():
        name = _snake(str(key))
        if not isinstance(value, str) or name not in _LISTS | _LISTS_OF_PATTERNS:
            continue
        if name in _LISTS:
            items = [item.strip() for item in value.split(",") if item.strip()]
        else:
            items = [value]
        wanted = "[" + ", ".join(f'"{item}"' for item in items) + "]"
        read_as = _LISTS.get(name) or _LISTS_OF_PATTERNS[name]
        problems.append(
            f"setting '{key}': expected a list like {wanted}, got a string; read as {read_as}"
        )
    return problems


def _merge_dataclass(low: T, high: T) -> T:
    low_any, high_any = cast(Any, low), cast(Any, high)
    values: dict[str, object] = {}
    for f in fields(low_any):
        if f.name == "explicit":
            continue
        low_value, high_value = getattr(low_any, f.name), getattr(high_any, f.name)
        if is_dataclass(low_value):
            values[f.name] = _merge_dataclass(low_value, high_value)
        elif f.name == "severity":  # per code: both sources' overrides, the higher on top
            values[f.name] = {**low_value, **high_value}
        elif f.name in high_any.explicit:
            values[f.name] = high_value
        else:
            values[f.name] = low_value
    explicit = low_any.explicit | high_any.explicit
    return cast(T, type(low_any)(**values, explicit=explicit))


def merge(editor: Settings, project: Settings, *, project_wins: bool = True) -> Settings:
    """Combines editor settings with the project's: for each setting the project set, its
    value wins (the other way round with project_wins=False); severity overrides combine
    per code. Settings neither source set keep their defaults."""
    return _merge_dataclass(editor, project) if project_wins else _merge_dataclass(project, editor)
