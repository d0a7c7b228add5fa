"""What a release publishes, built and installed the way a user gets it.

`python -m build` makes the sdist, then the wheel from the sdist (so the sdist holds all the
wheel needs); `twine check --strict` reads their metadata as PyPI would. The wheel is then
installed from its file alone into a new virtual environment (its dependencies, and torch for
verify, from the package index), and run from a folder outside this checkout: `check` on the
examples, `serve` through initialize, a diagnostic and shutdown, and `verify` on an example.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_protocol import Server

import inplace_lsp

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
EXAMPLE = "residual_after_sigmoid.py"  # line 22 writes the sigmoid's output (line 21)
TORCH = "torch==2.13.0"  # the test extra's pin: pip takes the CPU build from local disk
TIMEOUT_S = 900


def _run(args: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )
    return done


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    try:
        import build  # noqa: F401
    except ImportError:
        pytest.skip("build is not installed (it is in the test extra)")
    _ok(_run([sys.executable, "-m", "build", "--outdir", out, REPO]))
    return out


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def test_the_versions_are_one() -> None:
    """The wheel's version (inplace_lsp.__version__), the extension's and the changelog's
    newest release agree, as the release workflow requires of a tag."""
    version = inplace_lsp.__version__
    script = REPO / "scripts" / "release_version.py"
    agreed = _ok(_run([sys.executable, script, f"v{version}"]))
    assert agreed.stdout.strip() == f"v{version}: every version is {version}"
    wrong = _run([sys.executable, script, "v99.0.0"])
    assert wrong.returncode == 1
    assert len(wrong.stderr.strip().splitlines()) == 4, wrong.stderr  # each place says so
    cli = _ok(_run([sys.executable, "-m", "inplace_lsp", "--version"]))
    assert cli.stdout.strip() == f"inplace-lsp {version}"


def test_sdist_and_wheel_pass_twine_check(dist: Path) -> None:
    sdist, wheel = _one(dist, "*.tar.gz"), _one(dist, "*.whl")
    assert wheel.name == f"inplace_lsp-{inplace_lsp.__version__}-py3-none-any.whl"
    _ok(_run([sys.executable, "-m", "twine", "check", "--strict", sdist, wheel]))


def test_the_wheel_holds_the_package_and_nothing_else(dist: Path) -> None:
    names = zipfile.ZipFile(_one(dist, "*.whl")).namelist()
    assert "inplace_lsp/data/autograd.json" in names  # the knowledge table
    assert "inplace_lsp/data/rules.md" in names  # the page diagnostics link to
    assert "inplace_lsp/py.typed" in names
    assert {n.split("/")[0] for n in names} == {
        "inplace_lsp",
        f"inplace_lsp-{inplace_lsp.__version__}.dist-info",
    }
    info = f"inplace_lsp-{inplace_lsp.__version__}.dist-info"
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        metadata = wheel.read(f"{info}/METADATA").decode()
    assert "inplace-lsp = inplace_lsp.cli:entry" in entry_points
    assert "License-Expression: MIT" in metadata
    assert f"{info}/licenses/LICENSE" in names


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A new virtual environment with the wheel (from its file) and torch; its bin folder and
    an environment that does not reach this checkout."""
    venv = tmp_path_factory.mktemp("venv")
    _ok(_run([sys.executable, "-m", "venv", venv]))
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    _ok(_run([python, "-m", "pip", "install", "--quiet", _one(dist, "*.whl"), TORCH]))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["INPLACE_LSP_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    return bin_dir, env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    return tmp_path


def test_the_installed_wheel_imports_from_its_environment(
    installed: tuple[Path, dict[str, str]], project: Path
) -> None:
    bin_dir, env = installed
    where = _ok(
        _run(
            [bin_dir / "python", "-c", "import inplace_lsp; print(inplace_lsp.__file__)"],
            cwd=project,
            env=env,
        )
    )
    assert Path(where.stdout.strip()).is_relative_to(bin_dir.parent), where.stdout
    version = _ok(_run([bin_dir / "inplace-lsp", "--version"], cwd=project, env=env))
    assert version.stdout.strip() == f"inplace-lsp {inplace_lsp.__version__}"


def test_the_installed_wheel_checks_the_examples_as_the_checkout_does(
    installed: tuple[Path, dict[str, str]], project: Path
) -> None:
    bin_dir, env = installed
    args = ["check", "--format", "json", "--no-cache", "examples"]
    theirs = _run([bin_dir / "inplace-lsp", *args], cwd=project, env=env)
    ours = _run([sys.executable, "-m", "inplace_lsp", *args], cwd=project)
    assert theirs.returncode == ours.returncode == 1, theirs.stderr  # the examples have errors
    found = json.loads(theirs.stdout)
    assert found == json.loads(ours.stdout)
    codes = {f["code"] for f in found}
    assert {"IPL001", "IPL003"} <= codes, codes


def test_the_installed_wheel_serves(installed: tuple[Path, dict[str, str]], project: Path) -> None:
    """initialize, a file's diagnostic, shutdown, exit 0."""
    bin_dir, env = installed
    server = Server(project, [str(bin_dir / "inplace-lsp"), "serve"], env)
    try:
        server.initialize()
        model = project / "examples" / EXAMPLE
        found = server.open_and_wait(model.as_uri(), model.read_text(encoding="utf-8"))
        assert [d["code"] for d in found] == ["IPL001"]
        assert found[0]["range"]["start"]["line"] == 21  # line 22, 0-based
        assert server.stop() == 0
    finally:
        server.close()


def test_the_installed_wheel_verifies(
    installed: tuple[Path, dict[str, str]], project: Path
) -> None:
    """verify runs the example under the environment's torch and names both lines."""
    bin_dir, env = installed
    done = _run(
        [
            bin_dir / "inplace-lsp",
            "verify",
            "--device",
            "cpu",
            "examples/residual_after_sigmoid.py",
        ],
        cwd=project,
        env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the example fails backward
    assert "line 22 overwrites the output of torch.sigmoid saved at line 21" in done.stdout
