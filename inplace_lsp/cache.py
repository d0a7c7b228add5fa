"""The `check` command's cache: what checking a file found, kept per file in the user's cache
directory (as ruff keeps its own), so a run over unchanged files reads results instead of
analysing again.

An entry is keyed by the file's path and a digest of its bytes, the settings, the knowledge
table's torch version and the inplace-lsp build (its version, and the size and modification
time of its own files, so an edited checkout never reads results of other code). The findings
of a file can rest on the other files of the project it imports (a class defined there): each
entry lists the files the analysis read, with their size and modification time, and is used
only while they are unchanged.

Where: `$INPLACE_LSP_CACHE_DIR`, else the platform's user cache directory (`$XDG_CACHE_HOME` or
`~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows), under
`inplace-lsp/check/`. `inplace-lsp check --no-cache` neither reads nor writes it. A cache that
cannot be read or written is no error: the file is analysed, as without one. An entry is
loaded with a restricted unpickler (inplace-lsp's own classes only): one that names anything
else is a miss, and nothing in it runs.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import inplace_lsp
from inplace_lsp.analysis.knowledge import load as load_knowledge

ENV_DIR = "INPLACE_LSP_CACHE_DIR"
_FORMAT = 1  # bumped when what an entry holds changes


def cache_dir() -> Path:
    """The directory entries live in (not created here)."""
    given = os.environ.get(ENV_DIR)
    if given:
        return Path(given)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "inplace-lsp" / "check"


@functools.cache
def build_key() -> str:
    """What identifies the analysis itself: inplace-lsp's version, its files' sizes and
    modification times (an edited checkout is another build), the torch version of the
    knowledge table, and the entry format."""
    package = Path(inplace_lsp.__file__).parent
    files = sorted(
        (str(p.relative_to(package)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in package.rglob("*")
        if p.suffix in (".py", ".json") and p.is_file()
    )
    text = repr((_FORMAT, inplace_lsp.__version__, load_knowledge().torch_version, files))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class _Entries(pickle.Unpickler):
    """Loads what `put` stored and nothing else: a class that the stream names must be one of
    inplace-lsp's own (its results, findings, spans, enums) or a set; a function, or a class
    of another module (`os.system`, `builtins.eval`, ...), makes the load fail, so a file
    planted in the cache folder is a miss, never code that runs."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in ("set", "frozenset"):
            return super().find_class(module, name)
        if module == "inplace_lsp" or module.startswith("inplace_lsp."):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not stored in a cache entry")


def _load(handle: Any) -> Any:
    return _Entries(handle).load()


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


class CheckCache:
    """Entries of one run's settings; get() and put() never raise."""

    def __init__(self, settings_key: str, directory: Path | None = None) -> None:
        self.directory = (directory or cache_dir()) / build_key()[:16]
        self.settings_key = settings_key

    def _entry(self, path: str, data: bytes) -> tuple[Path, str]:
        absolute = os.path.abspath(path)
        digest = hashlib.blake2b(data, digest_size=16)
        digest.update(self.settings_key.encode())
        digest.update(path.encode("utf-8", "surrogateescape"))  # as given: messages name it
        name = hashlib.blake2b(absolute.encode("utf-8", "surrogateescape"), digest_size=12)
        return self.directory / f"{name.hexdigest()}.pickle", digest.hexdigest()

    def get(self, path: str, data: bytes) -> Any | None:
        """The result stored for this file's bytes, while the files it read are unchanged."""
        where, key = self._entry(path, data)
        try:
            with open(where, "rb") as handle:
                stored_key, deps, result = _load(handle)
        except Exception:  # noqa: BLE001 - missing, truncated, planted, another Python: a miss
            return None
        if stored_key != key or any(_stamp(dep) != stamp for dep, stamp in deps):
            return None
        return result

    def put(self, path: str, data: bytes, result: object, read: Iterable[str]) -> None:
        """Stores `result` for this file's bytes; `read`: the other files the analysis read."""
        where, key = self._entry(path, data)
        deps = [(dep, _stamp(dep)) for dep in sorted(set(read))]
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((key, deps, result), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, where)  # atomic: a parallel run reads the old or the new
        except Exception:  # noqa: BLE001 - a read-only or full disk: run without a cache
            try:
                os.unlink(temporary)
            except (OSError, UnboundLocalError):
                pass
