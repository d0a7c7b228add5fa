"""The pre-commit hooks of `.pre-commit-hooks.yaml`, installed and run by pre-commit itself.

`pre-commit try-repo` builds the hook's environment from this checkout (pip installs the
project and its dependencies), as a user's `.pre-commit-config.yaml` entry would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def _pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (it is in the test extra)")
    return [sys.executable, "-m", "pre_commit"]


def _run(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_hook_definitions() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [h["id"] for h in hooks] == ["inplace-lsp", "inplace-lsp-fix"]
    for hook in hooks:
        assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter"]
        assert hook["entry"].split()[:2] == ["inplace-lsp", "check"]  # the console script
    assert "inplace-lsp = " in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_hooks_through_pre_commit(tmp_path: Path) -> None:
    pre_commit = _pre_commit()
    project, home = tmp_path / "project", tmp_path / "pre-commit-home"
    project.mkdir()
    shutil.copy(EXAMPLES / "residual_after_sigmoid.py", project / "model.py")
    shutil.copy(EXAMPLES / "safe_inplace_after_linear.py", project / "safe.py")
    for args in (["init", "-q"], ["add", "."]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    def hook(name: str) -> subprocess.CompletedProcess[str]:
        return _run([*pre_commit, "try-repo", str(REPO), name, "--all-files"], project, home)

    check = hook("inplace-lsp")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "model.py:22:9: IPL001 [error]" in check.stdout, check.stdout
    assert "safe.py" not in check.stdout.split("Found ")[0]

    fix = hook("inplace-lsp-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified: the hook fails
    assert "files were modified by this hook" in fix.stdout
    assert "        gate = gate + x" in (project / "model.py").read_text(encoding="utf-8")

    subprocess.run(["git", "add", "."], cwd=project, check=True, capture_output=True)
    again = hook("inplace-lsp")
    assert again.returncode == 0, again.stdout + again.stderr
