"""What the real-editor tests (Neovim, Emacs) share: the example they open, columns in each
LSP position encoding, the server on PATH, and skip-or-fail.

The example is the shipped `examples/residual_after_sigmoid.py` with non-ASCII text before the
flagged op on its line, so that UTF-8, UTF-16 and character columns all differ there.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
REQUIRE = os.environ.get("INPLACE_LSP_REQUIRE_EDITORS") == "1"
HAS_TORCH = importlib.util.find_spec("torch") is not None

EXAMPLE = (REPO / "examples" / "residual_after_sigmoid.py").read_text(encoding="utf-8")
PREFIX = '        note = "é😀"; '
FLAGGED = "gate += x"
QUICK = EXAMPLE.replace(f"        {FLAGGED}", f"{PREFIX}{FLAGGED}", 1)
QUICK_FIXED = QUICK.replace(f"{PREFIX}{FLAGGED}", f"{PREFIX}gate = gate + x")
assert QUICK != EXAMPLE and QUICK_FIXED != QUICK
TARGET = "GatedResidualBlock"


def line_of(text: str, needle: str) -> int:
    """0-based line of the first line holding `needle`."""
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


FLAGGED_LINE = line_of(QUICK, PREFIX + FLAGGED)  # the docstring mentions it too
SAVED_LINE = line_of(QUICK, "        gate = torch.sigmoid")


def units(text: str, encoding: str) -> int:
    """Length of `text` in an LSP position encoding's code units (else: characters)."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def columns(text: str, line: int, needle: str, encoding: str) -> tuple[int, int]:
    source = text.splitlines()[line]
    start = source.index(needle)
    return units(source[:start], encoding), units(source[: start + len(needle)], encoding)


def skip_or_fail(reason: str, installer: str) -> NoReturn:
    """Skip; in CI (INPLACE_LSP_REQUIRE_EDITORS=1) a missing editor is a failure."""
    if REQUIRE:
        pytest.fail(f"{reason} (INPLACE_LSP_REQUIRE_EDITORS=1; {installer})")
    pytest.skip(reason)


def server_bin(tmp_path: Path) -> Path:
    """A directory whose `inplace-lsp` runs this interpreter: the venv's own console script
    (as a user installs it), else a shim."""
    python = Path(sys.executable).absolute()  # not resolved: a venv's python is a symlink
    if (python.parent / "inplace-lsp").is_file():
        return python.parent
    shim = tmp_path / "bin"
    shim.mkdir()
    script = shim / "inplace-lsp"
    script.write_text(f'#!/bin/sh\nexec "{python}" -m inplace_lsp "$@"\n')
    script.chmod(0o755)
    return shim


def editor_environment(tmp_path: Path, drop: tuple[str, ...]) -> dict[str, str]:
    """The environment an editor runs in: `inplace-lsp` of this interpreter first on PATH, this
    checkout importable; verify runs the server's interpreter (it has torch), not an activated
    venv's, and the `drop` variables of a surrounding editor session do not leak in."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "CONDA_PREFIX", *drop)
    }
    env.update(
        PATH=os.pathsep.join([str(server_bin(tmp_path)), env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
    )
    return env


def timings(report: dict[str, Any]) -> str:
    """The driver's steps as "name seconds-since-the-previous-step"."""
    previous, parts = 0.0, []
    for step in report.get("steps", []):
        parts.append(f"{step['name']} {(step['ms'] - previous) / 1000:.2f}s")
        previous = step["ms"]
    return ", ".join(parts)
