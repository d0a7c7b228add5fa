"""Finds the other files of the workspace that a document imports from (`from .layers import
ConvBlock`) and keeps a module model of each, cached per file version.

Relative and package-local imports are resolved on the file system; other absolute imports go
through jedi's module search, kept to files inside the workspace root (installed libraries
are not analysed: their torch code is torch's).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from inplace_lsp import files
from inplace_lsp.analysis import model as model_mod
from inplace_lsp.analysis.blocks import ParseCache, Splitter
from inplace_lsp.analysis.frameworks import stub_model
from inplace_lsp.analysis.lines import read_python, split_lines

MAX_FILE_BYTES = 2_000_000  # larger imported files are not modelled
STAT_INTERVAL_S = 2.0


class Workspace:
    """Module models of the workspace's files, by path, invalidated when a file changes."""

    def __init__(
        self, root: str | os.PathLike[str] | None = None, *, use_jedi: bool = True
    ) -> None:
        self.root = Path(root).resolve() if root is not None else None
        # jedi finds modules in layouts the file-system search misses, at ~0.1 s a module.
        self.use_jedi = use_jedi
        self.parse_cache = ParseCache()
        self._models: dict[str, tuple[object, model_mod.ModuleModel | None]] = {}
        self._open: dict[str, tuple[int, str]] = {}  # editor buffers: path -> (version, text)
        self._files: dict[tuple[str, str], str | None] = {}  # (from dir, module) -> file
        self._keys: dict[str, str] = {}  # path as found -> resolved path
        self._stats: dict[str, tuple[float, object]] = {}  # path -> (when checked, version)
        self._lock = threading.RLock()
        self.generation = 0  # bumped whenever a modelled file changes
        self._local = threading.local()  # what this thread's analysis read (see recording)

    # ------------------------------------------------------------------ editor buffers

    def set_document(self, path: str, version: int, text: str) -> None:
        """An open editor buffer: its text wins over the file on disk."""
        with self._lock:
            key = self._key(path)
            if self._open.get(key, (None, None))[1] != text:
                self._open[key] = (version, text)
                if key in self._models:
                    self.generation += 1

    def close_document(self, path: str) -> None:
        with self._lock:
            key = self._key(path)
            if self._open.pop(key, None) is not None and key in self._models:
                self.generation += 1

    # ------------------------------------------------------------------ resolution

    def resolver_for(self, doc_path: str | None) -> Callable[[str], model_mod.ModuleModel | None]:
        directory = Path(self._key(doc_path)).parent if doc_path else None

        def resolve(qualname: str) -> model_mod.ModuleModel | None:
            module = qualname.rpartition(".")[0]
            if not module or directory is None:
                return None
            path = self.find_module(directory, module)
            return self.model_of(path) if path is not None else None

        return resolve

    def find_module(self, directory: Path, module: str) -> str | None:
        with self._lock:
            key = (str(directory), module)
            if key not in self._files:
                self._files[key] = self._find(directory, module)
            return self._files[key]

    def _find(self, directory: Path, module: str) -> str | None:
        level = len(module) - len(module.lstrip("."))
        parts = [p for p in module.lstrip(".").split(".") if p]
        # A document in the workspace imports only files whose real paths are in it too: a
        # symlink a repository commits that leads out of the workspace is not followed.
        root = self.root
        fence = root if root is not None and directory.resolve().is_relative_to(root) else None
        if level:
            base = directory
            for _ in range(level - 1):
                base = base.parent
            return _module_file(base, parts, fence)
        for base in self._search_roots(directory):
            found = _module_file(base, parts, fence)
            if found is not None:
                return found
        return self._find_with_jedi(directory, module)

    def _search_roots(self, directory: Path) -> list[Path]:
        """The document's folder, the folder above its top package, the workspace root."""
        roots = [directory]
        top = directory
        while (top / "__init__.py").exists() and top.parent != top:
            top = top.parent
        roots.append(top)
        if self.root is not None:
            roots += [self.root, self.root / "src"]
        return list(dict.fromkeys(roots))

    def _find_with_jedi(self, directory: Path, module: str) -> str | None:
        if (
            not self.use_jedi
            or self.root is None
            or _installed_elsewhere(module.split(".")[0], self.root)
        ):
            return None
        try:
            import jedi

            project = jedi.Project(str(self.root))
            script = jedi.Script(
                f"import {module}\n", path=str(directory / "__inplace_lsp__.py"), project=project
            )
            names = script.goto(1, len("import ") + len(module))
        except Exception:  # jedi is an aid here: any failure means "not found"
            return None
        for name in names:
            path = name.module_path
            if path is not None and Path(path).resolve().is_relative_to(self.root):
                return str(path)
        return None

    # ------------------------------------------------------------------ models

    def model_of(self, path: str) -> model_mod.ModuleModel | None:
        with self._lock:
            key = self._key(path)
            version = self._version(key)
            reads = getattr(self._local, "reads", None)
            if reads is not None:
                reads.setdefault(key, version)
            cached = self._models.get(key)
            if cached is not None and cached[0] == version:
                return cached[1]
            text, version = self._read(key)
            # A placeholder first: import cycles resolve to "unknown" instead of recursing.
            self._models[key] = (version, None)
            built = self._build(key, text) if text is not None else None
            self._models[key] = (version, built)
            self.generation += 1
            return built

    def _key(self, path: str) -> str:
        """The path resolved (links followed), once per path: a keystroke resolved it."""
        key = self._keys.get(path)
        if key is None:
            key = self._keys[path] = str(Path(path).resolve())
        return key

    @contextmanager
    def recording(self) -> Iterator[dict[str, object]]:
        """The files whose models this thread's analysis takes while in the block (read, or
        from this workspace's models), each with its version then, so the caller knows what
        its findings rest on: the CLI's cache, a document's findings (kept while those files
        are unchanged)."""
        outer = getattr(self._local, "reads", None)
        reads: dict[str, object] = {}
        self._local.reads = reads
        try:
            yield reads
        finally:
            self._local.reads = outer
            if outer is not None:
                outer.update((k, v) for k, v in reads.items() if k not in outer)

    def version(self, path: str) -> object:
        """What identifies the current text of a file model_of took (see _version)."""
        with self._lock:
            return self._version(path)

    def _version(self, path: str) -> object:
        """What identifies the file's current text, without reading it. Files on disk are
        looked at again at most every STAT_INTERVAL_S (or after `file_changed`)."""
        if path in self._open:
            version, text = self._open[path]
            return ("open", version, hash(text))
        now = time.monotonic()
        checked = self._stats.get(path)
        if checked is not None and now - checked[0] < STAT_INTERVAL_S:
            return checked[1]
        found: object
        try:
            stat = os.stat(path)
        except OSError:
            found = ("unreadable",)
        else:
            big = stat.st_size > MAX_FILE_BYTES
            found = ("big" if big else "disk", stat.st_mtime_ns, stat.st_size)
        self._stats[path] = (now, found)
        return found

    def file_changed(self, path: str) -> None:
        """A file changed on disk (the editor's didChangeWatchedFiles): read it again."""
        with self._lock:
            key = self._key(path)
            self._stats.pop(key, None)
            if key in self._models:
                self.generation += 1

    def _read(self, path: str) -> tuple[str | None, object]:
        if path in self._open:
            version, text = self._open[path]
            return text, ("open", version, hash(text))
        try:
            stat = os.stat(path)
            if stat.st_size > MAX_FILE_BYTES:
                return None, ("big", stat.st_mtime_ns)
            # A regular file only (a FIFO would block, /dev/zero fill memory), within the cap.
            text = read_python(path, MAX_FILE_BYTES)
        except (OSError, ValueError, SyntaxError):  # UnicodeDecodeError is a ValueError
            return None, ("unreadable",)
        return text, ("disk", stat.st_mtime_ns, stat.st_size)

    def _build(self, path: str, text: str) -> model_mod.ModuleModel:
        blocks = [
            (b.tree, b.start, "import" in b.text)
            for b in Splitter(self.parse_cache).split(text)
            if b.tree is not None
        ]
        return model_mod.build(
            blocks,
            path=path,
            lines=split_lines(text),
            resolver=self.resolver_for(path),
            stubs=stub_model,
        )

    def files(self) -> dict[str, list[str]]:
        """Lines of every modelled file (for columns of related locations in them)."""
        with self._lock:
            return {path: m.lines for path, (_, m) in self._models.items() if m is not None}


def _module_file(base: Path, parts: list[str], fence: Path | None) -> str | None:
    """The file of module `parts` in folder `base`: a regular file, whose real path lies in
    `fence` when one is given."""
    target = base.joinpath(*parts)
    candidates = [target / "__init__.py"]
    if parts:
        candidates.insert(0, target.with_suffix(".py"))
    for candidate in candidates:
        if candidate.is_file() and (fence is None or files.inside(str(candidate), str(fence))):
            return str(candidate)
    return None


@functools.cache
def _installed_elsewhere(top: str, root: Path) -> bool:
    """A stdlib or installed package outside the workspace: not ours to analyse, and jedi
    would spend a long time finding it."""
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return True
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    origin = spec.origin if spec is not None else None
    if spec is None or origin is None:
        return False
    return not Path(origin).resolve().is_relative_to(root)
