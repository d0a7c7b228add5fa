"""The README's set-up snippets are the shipped, tested files, character for character."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
FENCES = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.M | re.S)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in (REPO / "editors" / "neovim").glob("*.lua"))
)
def test_neovim_setups_in_the_readme_are_the_tested_files(name: str) -> None:
    shipped = (REPO / "editors" / "neovim" / name).read_text(encoding="utf-8")
    assert ("lua", shipped) in FENCES, f"README.md has no ```lua block equal to {name}"
    assert f"(editors/neovim/{name})" in README or f'"editors/neovim/{name}"' in README


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "editors" / "emacs").glob("*.el")))
def test_emacs_setups_in_the_readme_are_the_tested_files(name: str) -> None:
    shipped = (REPO / "editors" / "emacs" / name).read_text(encoding="utf-8")
    assert ("elisp", shipped) in FENCES, f"README.md has no ```elisp block equal to {name}"
    assert f"(editors/emacs/{name})" in README


def test_pre_commit_hook_ids_in_the_readme_exist() -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    mentioned = set(re.findall(r"- id: ([\w-]+)", README))
    assert mentioned and all(f"- id: {hook}\n" in hooks for hook in mentioned)


def test_the_readme_test_command_says_why_tests_skip(tmp_path: Path) -> None:
    """`python -m pytest` with the project's configuration prints each skip's reason."""
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n\n@pytest.mark.skip(reason='needs Neovim: run the install script')\n"
        "def test_editor():\n    pass\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(REPO / "pyproject.toml"),
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_skips.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "1 skipped" in result.stdout, result.stdout + result.stderr
    assert "needs Neovim: run the install script" in result.stdout
