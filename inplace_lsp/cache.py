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
JSON: loading it builds only the dataclasses and enums the caller lists, from their fields, so
an entry planted in the cache folder runs nothing; one that names anything else, or is not the
JSON `put` writes, is a miss.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import inplace_lsp
from inplace_lsp import files
from inplace_lsp.analysis.knowledge import load as load_knowledge

ENV_DIR = "INPLACE_LSP_CACHE_DIR"
_FORMAT = 2  # bumped when what an entry holds changes
# An entry larger than this, or not a regular file (a FIFO would block), is a miss.
MAX_ENTRY_BYTES = 64 << 20


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


class _Bad(ValueError):
    """An entry that is not what `put` wrote."""


def _encode(value: Any) -> Any:
    """`value` as JSON data: a dataclass or enum is tagged with its class's name, a tuple or a
    set with its kind, so that `_decode` gives back equal objects; anything else raises."""
    if isinstance(value, enum.Enum):  # first: Severity is a str too
        return {"e": type(value).__qualname__, "v": value.value}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"c": type(value).__qualname__, "f": fields}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, tuple):
        return {"t": [_encode(item) for item in value]}
    if isinstance(value, (set, frozenset)):
        return {"s": sorted((_encode(item) for item in value), key=repr)}
    raise TypeError(f"a {type(value).__name__} is not stored in a cache entry")


def _decode(data: Any, kinds: dict[str, type]) -> Any:
    """The object `_encode` made `data` of, built only of `kinds` (by name), plain values,
    lists, tuples and sets; anything else raises _Bad."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [_decode(item, kinds) for item in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise _Bad("not an entry")
    if len(data) == 1:
        ((tag, items),) = data.items()
        if tag not in ("t", "s") or not isinstance(items, list):
            raise _Bad("not an entry")
        decoded = [_decode(item, kinds) for item in items]
        return tuple(decoded) if tag == "t" else set(decoded)
    kind = kinds.get(data.get("e") or data.get("c") or "")
    if kind is None:
        raise _Bad("a class that is not stored in a cache entry")
    if "e" in data:
        if not issubclass(kind, enum.Enum):
            raise _Bad("not an enum")
        return kind(data["v"])
    fields = data.get("f")
    names = {f.name for f in dataclasses.fields(kind) if f.init}
    if not isinstance(fields, dict) or fields.keys() != names:
        raise _Bad(f"not the fields of {kind.__qualname__}")
    return kind(**{name: _decode(value, kinds) for name, value in fields.items()})


def _stamp_of(stored: Any) -> tuple[int, int] | None:
    """A stamp as JSON gives it back (a list, or null)."""
    return None if stored is None else (int(stored[0]), int(stored[1]))


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


class CheckCache:
    """Entries of one run's settings; get() and put() never raise."""

    def __init__(
        self, settings_key: str, kinds: Sequence[type], directory: Path | None = None
    ) -> None:
        """`kinds`: the dataclasses and enums a stored result is made of (and all it may be
        made of when loaded)."""
        self.directory = (directory or cache_dir()) / build_key()[:16]
        self.settings_key = settings_key
        self.kinds = {kind.__qualname__: kind for kind in kinds}
        if not all(dataclasses.is_dataclass(k) or issubclass(k, enum.Enum) for k in kinds):
            raise TypeError("a cache entry holds dataclasses and enums only")

    def _entry(self, path: str, data: bytes) -> tuple[Path, str]:
        absolute = os.path.abspath(path)
        digest = hashlib.blake2b(data, digest_size=16)
        digest.update(self.settings_key.encode())
        digest.update(path.encode("utf-8", "surrogateescape"))  # as given: messages name it
        name = hashlib.blake2b(absolute.encode("utf-8", "surrogateescape"), digest_size=12)
        return self.directory / f"{name.hexdigest()}.json", digest.hexdigest()

    def get(self, path: str, data: bytes) -> Any | None:
        """The result stored for this file's bytes, while the files it read are unchanged."""
        where, key = self._entry(path, data)
        try:
            stored = json.loads(files.read_regular(str(where), MAX_ENTRY_BYTES))
            stored_key, deps, result = stored["key"], stored["read"], stored["result"]
            if stored_key != key or any(_stamp(dep) != _stamp_of(s) for dep, s in deps):
                return None
            return _decode(result, self.kinds)
        except Exception:  # noqa: BLE001 - missing, truncated, planted, edited by hand: a miss
            return None

    def put(self, path: str, data: bytes, result: object, read: Iterable[str]) -> None:
        """Stores `result` for this file's bytes; `read`: the other files the analysis read."""
        where, key = self._entry(path, data)
        deps = [(dep, _stamp(dep)) for dep in sorted(set(read))]
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"key": key, "read": deps, "result": _encode(result)}, handle)
            os.replace(temporary, where)  # atomic: a parallel run reads the old or the new
        except Exception:  # noqa: BLE001 - a read-only or full disk: run without a cache
            try:
                os.unlink(temporary)
            except (OSError, UnboundLocalError):
                pass
