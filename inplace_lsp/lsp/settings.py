"""The settings in effect for each document: the editor's (initialization options or
`workspace/configuration`) under the nearest pyproject.toml's `[tool.inplace-lsp]`, and the
debug report of which config is in effect.
"""

from __future__ import annotations

import enum
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

from inplace_lsp import __version__, config
from inplace_lsp.analysis.rules import RULES

SECTION = "inplaceLsp"  # the editor's settings section (workspace/configuration)


def unwrap(raw: object) -> object:
    """Editor settings arrive as the section itself or wrapped in it ({"inplaceLsp": {...}},
    what `workspace/didChangeConfiguration` carries for most clients)."""
    if isinstance(raw, Mapping) and SECTION in raw:
        return raw[SECTION]
    return raw


@dataclass(frozen=True)
class Effective:
    """The settings for one document and where they came from."""

    settings: config.Settings
    pyproject: Path | None


class SettingsStore:
    """Editor settings, project files by folder, and their merge; safe to read from any thread."""

    def __init__(self) -> None:
        self.editor = config.Settings()
        self._nearest: dict[Path, Path | None] = {}  # folder -> its pyproject.toml
        self._by_path: dict[str, Path | None] = {}  # a document's path -> the same
        self._projects: dict[Path, tuple[config.Settings, list[str]]] = {}
        self._reported: set[Path] = set()
        self._merged: dict[Path, config.Settings] = {}  # valid for the current generation
        self._lock = threading.Lock()
        self.generation = 0  # bumped whenever any source changes

    def set_editor(self, raw: object) -> list[str]:
        """Replaces the editor settings; returns the problems (each replaced by its default)."""
        raw = unwrap(raw)
        problems: list[str]
        if raw is None:
            settings, problems = config.Settings(), []
        elif isinstance(raw, Mapping):
            settings, problems = config.from_wire(raw)
        else:
            settings, problems = config.from_wire(None)
            problems = [f"settings: expected an object, got {type(raw).__name__}; using defaults"]
        with self._lock:
            self.editor = settings
            self._merged.clear()
            self.generation += 1
        return problems

    def pyproject_changed(self) -> None:
        """A pyproject.toml was created, changed or deleted: read the files again."""
        with self._lock:
            self._nearest.clear()
            self._by_path.clear()
            self._projects.clear()
            self._reported.clear()
            self._merged.clear()
            self.generation += 1

    def for_path(self, path: str | None) -> Effective:
        pyproject = self._pyproject(path)
        if pyproject is None:
            return Effective(self.editor, None)
        merged = self._merged.get(pyproject)
        if merged is None:
            project, _ = self._project(pyproject)
            merged = config.merge(self.editor, project)
            with self._lock:
                self._merged[pyproject] = merged
        return Effective(merged, pyproject)

    def new_problems(self, path: str | None) -> list[str]:
        """Problems of the project file that `path` uses, the first time they are asked for
        (so a broken pyproject.toml is reported once, not on every keystroke)."""
        pyproject = self._pyproject(path)
        if pyproject is None:
            return []
        _, problems = self._project(pyproject)
        with self._lock:
            if pyproject in self._reported:
                return []
            self._reported.add(pyproject)
        return problems

    def _pyproject(self, path: str | None) -> Path | None:
        if path is None:
            return None
        with self._lock:  # asked on every keystroke
            if path in self._by_path:
                return self._by_path[path]
        folder = Path(os.path.abspath(path)).parent
        with self._lock:
            known = folder in self._nearest
            found = self._nearest.get(folder)
        if not known:
            found = config.find_pyproject(folder)
        with self._lock:
            self._nearest[folder] = self._by_path[path] = found
        return found

    def _project(self, pyproject: Path) -> tuple[config.Settings, list[str]]:
        with self._lock:
            known = self._projects.get(pyproject)
        if known is None:
            known = config.load_settings(pyproject)
            with self._lock:
                self._projects[pyproject] = known
        return known


# ---------------------------------------------------------------- debug info


def _plain(value: object) -> object:
    """Settings as JSON-ready values (tuples as lists, enums as their values)."""
    if isinstance(value, enum.Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.name != "explicit"
        }
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list | frozenset | set):
        return [_plain(v) for v in value]
    return value


def debug_info(
    effective: Effective,
    *,
    document: str | None,
    position_encoding: str,
    pull_diagnostics: bool,
    open_documents: int,
    analyses_run: int,
) -> dict[str, Any]:
    """What Ruff's "show debug info" answers: which version, which interpreter, which config,
    which rules, which settings."""
    settings = effective.settings
    return {
        "version": __version__,
        "python": sys.executable,
        "pythonVersion": sys.version.split()[0],
        "document": document,
        "configFile": str(effective.pyproject) if effective.pyproject else None,
        "enabledRules": [rule.CODE for rule in RULES if settings.is_selected(rule.CODE)],
        "settings": _plain(settings),
        "positionEncoding": position_encoding,
        "diagnostics": "pull" if pull_diagnostics else "push",
        "openDocuments": open_documents,
        "analysesRun": analyses_run,
    }


def format_debug_info(info: Mapping[str, Any]) -> str:
    lines = [f"inplace-lsp {info['version']} debug info"]
    lines += [f"  {key}: {value}" for key, value in info.items() if key != "version"]
    return "\n".join(lines)
