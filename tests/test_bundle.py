"""The server the VS Code extension bundles (scripts/bundle_server.py, then
vscode-client/bundled/tool/serve.py), run as the extension runs it: by an interpreter that has
no inplace-lsp, no pip and none of the dependencies (a new virtual environment, `-E`).

The bundle is made for this machine's platform and this Python only (the release makes every
supported Python; tests/test_editor_vscode.py packages and runs that one).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_protocol import Server

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[1]
SERVE = REPO / "vscode-client" / "bundled" / "tool" / "serve.py"
PYTHON = "{}.{}".format(*sys.version_info[:2])
TARGET = "linux-arm64" if platform.machine() in ("aarch64", "arm64") else "linux-x64"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libs.zip and manifest.json for this Python, in a folder of their own."""
    if sys.platform != "linux":
        pytest.skip("bundles are made here for Linux only")
    out = tmp_path_factory.mktemp("made")
    command = [sys.executable, str(REPO / "scripts" / "bundle_server.py"), "--target", TARGET]
    done = subprocess.run(
        [*command, "--python", PYTHON, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Each step says what it does and how long it took (a silent minute looked hung).
    mark = "bundle_server: "
    said = [line[len(mark) :] for line in done.stderr.splitlines() if line.startswith(mark)]
    assert said[0] == "building the wheel of this checkout ...", done.stderr
    assert said[1].startswith("building the wheel of this checkout: "), done.stderr
    assert said[2].startswith(f"Python {PYTHON} (1 of 1): pip installs the wheel and its ")
    assert said[-1].startswith("writing ") and said[-1].endswith(" s"), done.stderr
    assert len(said) == 6, done.stderr  # the wheel, one Python, the archive: begun and done
    return out


@pytest.fixture
def bundled(made: Path, tmp_path: Path) -> Path:
    """An extension's `bundled` folder: serve.py beside the archive, nothing unpacked yet."""
    folder = tmp_path / "ext" / "bundled"
    (folder / "tool").mkdir(parents=True)
    shutil.copy(SERVE, folder / "tool" / "serve.py")
    for name in ("libs.zip", "manifest.json"):
        shutil.copy(made / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A new virtual environment without pip: nothing but the standard library."""
    venv = tmp_path_factory.mktemp("bare")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return [str(venv / "bin" / "python"), "-E"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["INPLACE_LSP_CACHE_DIR"] = str(tmp_path / "check-cache")
    return env


def _serve(
    python: list[str], bundled: Path, *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*python, str(bundled / "tool" / "serve.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
        env=_env(cwd),
    )


def test_the_manifest_says_what_is_bundled(made: Path) -> None:
    manifest = json.loads((made / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["pythons"] == [PYTHON] and manifest["target"] == TARGET
    assert {"inplace_lsp", "pygls", "lsprotocol", "jedi", "parso", "cattrs"} <= set(
        manifest["common"]
    )
    assert "libcst" in manifest["native"]["cp" + PYTHON.replace(".", "")]  # native code


def test_an_interpreter_without_inplace_lsp_runs_the_bundled_server(
    bare: list[str], bundled: Path, tmp_path: Path
) -> None:
    where = _serve(bare, bundled, "--where", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert where.stdout == str(bundled / "libs" / "common" / "inplace_lsp" / "__init__.py")
    # Only what this Python needs was unpacked, each folder marked complete.
    unpacked = sorted(p.name for p in (bundled / "libs").iterdir())
    assert unpacked == ["common", "cp" + PYTHON.replace(".", "")]
    assert all((bundled / "libs" / name / ".unpacked").is_file() for name in unpacked)
    marker = (bundled / "libs" / "common" / ".unpacked").stat().st_mtime_ns
    # The CLI through it finds what this checkout finds.
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    args = ["check", "--format", "json", "--no-cache", "examples"]
    theirs = _serve(bare, bundled, *args, cwd=tmp_path)
    ours = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert theirs.returncode == ours.returncode == 1, theirs.stderr
    assert json.loads(theirs.stdout) == json.loads(ours.stdout)
    assert (bundled / "libs" / "common" / ".unpacked").stat().st_mtime_ns == marker  # once


def test_a_native_part_that_does_not_load_fails_the_check(
    bare: list[str], bundled: Path, tmp_path: Path
) -> None:
    """The check loads libcst's extension module: one built for another machine is the
    check's failure (the extension then tries another Python), not the server's later."""
    assert _serve(bare, bundled, "--where", cwd=tmp_path).returncode == 0  # unpacks
    (native,) = (bundled / "libs" / ("cp" + PYTHON.replace(".", "")) / "libcst").glob("native.*")
    native.write_bytes(b"not an extension module")
    done = _serve(bare, bundled, "--where", cwd=tmp_path)
    assert done.returncode == 1
    assert "ImportError" in done.stderr.strip().splitlines()[-1], done.stderr


def test_the_bundled_server_serves(bare: list[str], bundled: Path, tmp_path: Path) -> None:
    server = Server(tmp_path, [*bare, str(bundled / "tool" / "serve.py"), "serve"], _env(tmp_path))
    try:
        server.initialize()
        text = (REPO / "examples" / "residual_after_sigmoid.py").read_text(encoding="utf-8")
        found = server.open_and_wait((tmp_path / "model.py").as_uri(), text)
        assert [d["code"] for d in found] == ["IPL001"]
        assert server.stop() == 0
    finally:
        server.close()


def test_where_the_extension_cannot_write_it_unpacks_into_the_cache(
    bare: list[str], bundled: Path, tmp_path: Path
) -> None:
    (bundled / "libs").write_text("not a folder")  # as a read-only extension folder would fail
    where = _serve(bare, bundled, "--where", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    archive_id = json.loads((bundled / "manifest.json").read_text(encoding="utf-8"))["id"]
    cache = tmp_path / "cache" / "inplace-lsp" / f"bundled-{archive_id}"
    assert where.stdout == str(cache / "common" / "inplace_lsp" / "__init__.py")


def test_a_python_without_a_bundled_build_exits_3_saying_so(
    bare: list[str], bundled: Path, tmp_path: Path
) -> None:
    manifest = json.loads((bundled / "manifest.json").read_text(encoding="utf-8"))
    manifest["pythons"] = ["3.99"]
    (bundled / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    done = _serve(bare, bundled, "--where", cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.startswith(f"inplace-lsp (bundled): Python {PYTHON} is not supported")
    assert not (bundled / "libs").exists()  # nothing unpacked


def test_a_broken_archive_is_an_error_that_leaves_nothing_half_unpacked(
    bare: list[str], bundled: Path, tmp_path: Path
) -> None:
    archive = bundled / "libs.zip"
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    done = _serve(bare, bundled, "--where", cwd=tmp_path)
    assert done.returncode == 1
    assert "inplace-lsp (bundled): cannot unpack the server" in done.stderr
    for root in (bundled / "libs", tmp_path / "cache" / "inplace-lsp"):
        if root.exists():
            assert not any(
                p.name in ("common", f"cp{PYTHON.replace('.', '')}") for p in root.rglob("*")
            )


def test_the_bundled_jedi_finds_a_module_of_the_workspace(
    bare: list[str], bundled: Path, tmp_path: Path
) -> None:
    """jedi, bundled without its stubs of third-party packages, still says where a module of
    the workspace is (what the server asks it)."""
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "helpers.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    assert _serve(bare, bundled, "--where", cwd=tmp_path).returncode == 0  # unpacks
    libs = bundled / "libs"
    code = (
        "import sys; from pathlib import Path; "
        f"sys.path[0:0] = [{str(libs / ('cp' + PYTHON.replace('.', '')))!r}, "
        f"{str(libs / 'common')!r}]; "
        "from inplace_lsp.analysis.workspace import Workspace; "
        f"print(Workspace({str(project)!r})._find_with_jedi(Path({str(project / 'app')!r}), "
        "'helpers'))"
    )
    done = subprocess.run(
        [*bare, "-c", code], capture_output=True, text=True, check=False, env=_env(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(project / "helpers.py")


def test_a_bundle_for_another_platform_takes_that_platforms_wheels(tmp_path: Path) -> None:
    """What the release makes on Linux for Windows: libcst's Windows build, no Linux code."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bundle_server.py"), "--target", "win32-x64"]
        + ["--python", PYTHON, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    names = zipfile.ZipFile(tmp_path / "libs.zip").namelist()
    tag = "cp" + PYTHON.replace(".", "")
    assert f"{tag}/libcst/native.{tag}-win_amd64.pyd" in names
    assert not [n for n in names if n.endswith(".so")]


# What a clone does not have: the names .gitignore ignores, wherever they are.
GITIGNORED = (
    "__pycache__",
    "*.pyc",
    "*.egg-info",
    ".venv",
    "venv",
    "build",
    "dist",
    ".*_cache",
    ".cache",
    "node_modules",
    "*.vsix",
    "test-artifacts",
    ".vscode-e2e",
    ".inplace-lsp",
    "libs",
    "libs.zip",
    "manifest.json",
)


def test_the_wheel_step_builds_in_a_checkout_that_pip_install_left_a_build_folder_in(
    tmp_path: Path,
) -> None:
    """The README's VS Code build after its Quick start: `pip install .` leaves a `build/`
    folder in the checkout's root. Run from that root by an interpreter with pip alone (no
    `build` package), the folder passed for the `build` package (`python -m build`: "No module
    named build.__main__"), and setuptools puts the stale files of `build/lib` into a wheel
    built in the checkout. The script's wheel step builds the package's own files."""
    clone = tmp_path / "clone"
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(".git", *GITIGNORED))
    stale = clone / "build" / "lib" / "inplace_lsp" / "stale_module.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("STALE = True\n", encoding="utf-8")
    (clone / "build" / "bdist.linux-x86_64").mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, *args], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )

    shadowed = run("-m", "build", "--version")  # what the script used to run
    assert shadowed.returncode != 0 and "build.__main__" in shadowed.stderr, shadowed.stderr
    out = tmp_path / "wheel"
    out.mkdir()
    step = "import sys; sys.path.insert(0, 'scripts'); import bundle_server, pathlib; "
    step += "print(bundle_server.build_wheel(pathlib.Path(sys.argv[1])).name)"
    done = run("-c", step, str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    wheel = out / done.stdout.strip()
    packaged = {
        name
        for name in zipfile.ZipFile(wheel).namelist()
        if not name.split("/")[0].endswith(".dist-info")
    }
    package = clone / "inplace_lsp"
    assert packaged == {p.relative_to(clone).as_posix() for p in package.rglob("*") if p.is_file()}
    assert not (clone / "build" / "lib" / "inplace_lsp" / "cli.py").exists()  # not built there
