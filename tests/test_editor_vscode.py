"""The VS Code extension in a real VS Code: runs the node end-to-end test
(vscode-client/e2e/vscode.e2e.test.mjs: code-server with the packaged platform .vsix, the
server bundled in it, headless Chromium) with this interpreter as the user's, and keeps its
screenshots in test-artifacts/vscode/.

`bash scripts/ci_install_vscode_e2e.sh` installs the tools. Without them the test skips, unless
INPLACE_LSP_REQUIRE_EDITORS=1 (CI) makes that a failure. INPLACE_LSP_E2E_PIP=1 adds the
"Install inplace-lsp into it" step, which pip-installs this checkout into a fresh venv (pip
must reach an index for the dependencies).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from editor_support import REPO, skip_or_fail

pytestmark = [pytest.mark.editor]

CLIENT = REPO / "vscode-client"
E2E = CLIENT / "e2e"
TEST_FILE = E2E / "vscode.e2e.test.mjs"
CODE_SERVER = REPO / ".vscode-e2e" / "cs" / "node_modules" / ".bin" / "code-server"
SHOT_DIR = REPO / "test-artifacts" / "vscode"
TIMEOUT_S = 300


def _vsix() -> Path:
    """The platform package scripts/ci_install_vscode_e2e.sh makes (the server bundled)."""
    version = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))["version"]
    arch = "arm64" if platform.machine() in ("aarch64", "arm64") else "x64"
    return CLIENT / f"inplace-lsp-linux-{arch}-{version}.vsix"


def _newer(product: Path, sources: list[Path]) -> bool:
    return product.exists() and product.stat().st_mtime >= max(s.stat().st_mtime for s in sources)


def _packaged() -> bool:
    """The .vsix is newer than the extension's sources and the bundled server's archive, and
    that archive is newer than the server's sources (else it tests old code)."""
    archive = CLIENT / "bundled" / "libs.zip"
    extension = [CLIENT / "package.json", CLIENT / "bundled" / "tool" / "serve.py"]
    server = [REPO / "pyproject.toml", *(REPO / "inplace_lsp").rglob("*.py")]
    return _newer(_vsix(), [*extension, *(CLIENT / "src").rglob("*.ts"), archive]) and _newer(
        archive, server
    )


def _missing() -> list[str]:
    """What the test needs and this machine lacks, in words."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    needs = {
        "node": shutil.which("node") is not None,
        f"code-server ({CODE_SERVER.relative_to(REPO)})": CODE_SERVER.exists(),
        f"chromium ({chromium})": Path(chromium).exists(),
        f"{_vsix().relative_to(REPO)} packaged from the current sources, the server bundled": (
            _packaged()
        ),
        f"playwright-core ({(E2E / 'node_modules').relative_to(REPO)})": (
            E2E / "node_modules" / "playwright-core"
        ).is_dir(),
        f"torch for {sys.executable} (verify runs the example)": (
            importlib.util.find_spec("torch") is not None
        ),
    }
    return [what for what, present in needs.items() if not present]


def _stop(process: subprocess.Popen[str]) -> None:
    """Ends node and its Chromium; the test file's SIGTERM handler ends code-server's group."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def test_extension_in_code_server() -> None:
    missing = _missing()
    if missing:
        reason = f"VS Code e2e tooling missing: {', '.join(missing)}"
        skip_or_fail(reason, "scripts/ci_install_vscode_e2e.sh")
    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    for old in SHOT_DIR.glob("*.png"):
        old.unlink()  # only this run's screenshots, so a missing one is noticed
    env = {
        **os.environ,
        # not resolved: a venv's python is a symlink, and resolving it loses the venv
        "INPLACE_LSP_PYTHON": os.path.abspath(sys.executable),
        "CODE_SERVER": str(CODE_SERVER),
        "INPLACE_LSP_VSIX": str(_vsix()),
        "SHOT_DIR": str(SHOT_DIR),
    }
    command = ["node", "--test", "--test-reporter=spec", TEST_FILE.name]
    # Its own session, so that a timeout ends node, its test process and Chromium together.
    process = subprocess.Popen(
        command,
        cwd=E2E,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _stop(process)
        output, _ = process.communicate()
        print(output)
        pytest.fail(f"the VS Code e2e test took over {TIMEOUT_S} s:\n{output[-12000:]}")
    print(output)
    if process.returncode != 0:
        pytest.fail(
            f"the VS Code e2e test failed (exit {process.returncode}); "
            f"screenshots in {SHOT_DIR.relative_to(REPO)}:\n{output[-12000:]}"
        )
    shots = [
        "bundled-quickfix.png",
        "diagnostic.png",
        "notebook.png",
        "verify.png",
        "run-findings.png",
        "notebook-run.png",
        "no-server.png",
    ]
    if os.environ.get("INPLACE_LSP_E2E_PIP") == "1":
        shots.append("installed.png")
    for shot in shots:
        assert (SHOT_DIR / shot).stat().st_size > 0, f"no screenshot {shot}"
