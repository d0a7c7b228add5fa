"""Emacs end to end: a real Emacs (batch) loads eglot and the SHIPPED set-up
(editors/emacs/inplace-lsp.el), starts `inplace-lsp serve` from PATH with M-x eglot, and
tests/editor_emacs/driver.el walks what a user does:

* the IPL001 diagnostic reaches Flymake, Error, at the right character columns in the buffer
  and the right raw columns in the negotiated encoding (UTF-16 on eglot 1.9); the flagged code
  sits after "é😀" on its line, so characters and UTF-16 code units differ;
* M-x inplace-lsp-verify (the shipped command) in the broken nn.Module names the in-place
  write and the line that saved the tensor; the IPL001 Error on the writing line says verify
  confirmed it (no second diagnostic there);
* M-x eglot-code-actions RET applies the preferred quick fix; C-x C-s; the diagnostic clears;
  M-x inplace-lsp-verify and the "Verify NAME" code action then say ok.

Emacs: $EMACS, else `emacs` on PATH. eglot is built in from Emacs 29; on 28 it is an ELPA
package (Debian 12: `apt install elpa-eglot`, in /usr/share/emacs/site-lisp/elpa). No Emacs
or no eglot: skipped, unless INPLACE_LSP_REQUIRE_EDITORS=1 (CI: scripts/ci_install_emacs.sh).
"""

from __future__ import annotations

import functools
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

SETUP = REPO / "editors" / "emacs" / "inplace-lsp.el"
DRIVER = Path(__file__).resolve().parent / "editor_emacs" / "driver.el"

TIMEOUT_S = 20
VERIFY_TIMEOUT_S = 120  # the first verify starts a worker that imports torch
WATCHDOG_S = 6 * TIMEOUT_S + 2 * VERIFY_TIMEOUT_S

QUICK_FIX = "Rewrite out of place (IPL001)"


# ---------------------------------------------------------------- finding Emacs and eglot

# Where Debian's Emacs looks for system-wide ELPA packages (`package-directory-list`); -Q
# drops them with the site-lisp directories.
ELPA_DIRS = (
    "/usr/local/share/emacs/{version}/site-lisp/elpa",
    "/usr/local/share/emacs/site-lisp/elpa",
    "/usr/share/emacs/{version}/site-lisp/elpa",
    "/usr/share/emacs/site-lisp/elpa",
)

PROBE = """(progn
  (require 'package)
  (setq package-directory-list (split-string (or (getenv "E2E_ELPA_DIRS") "") path-separator t))
  (package-initialize)
  (princ (format "%s\\n%s\\n" emacs-version (or (locate-library "eglot") ""))))"""


@dataclass(frozen=True)
class Emacs:
    path: str
    version: str
    eglot: str  # the library eglot loads from ("" when there is none)
    elpa_dirs: str  # os.pathsep-separated package-directory-list for -Q


def _elpa_dirs(version: str) -> str:
    dirs = [d.format(version=version) for d in ELPA_DIRS]
    return os.pathsep.join(d for d in dirs if Path(d).is_dir())


@functools.cache
def emacs() -> Emacs | str:
    """The Emacs to run, or why there is none to run."""
    binary = os.environ.get("EMACS") or shutil.which("emacs")
    if not binary:
        return "no emacs: set EMACS or put emacs on PATH"
    try:
        first = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()
        found = re.match(r"GNU Emacs (\d+(?:\.\d+)+)", first[0] if first else "")
        if not found:
            return f"{binary} --version: {first[:1]}"
        version = found[1]
        elpa = _elpa_dirs(version)
        probe = subprocess.run(
            [binary, "--batch", "-Q", "--eval", PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "E2E_ELPA_DIRS": elpa},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"{binary}: {error}"
    lines = probe.stdout.splitlines()
    eglot = lines[1] if len(lines) > 1 else ""
    if probe.returncode != 0 or not eglot:
        why = probe.stderr.strip()[-500:]
        return f"Emacs {version} ({binary}) has no eglot (Emacs 28: apt install elpa-eglot) {why}"
    return Emacs(binary, version, eglot, elpa)


def _skip_or_fail(reason: str) -> NoReturn:
    skip_or_fail(reason, "scripts/ci_install_emacs.sh")


# ---------------------------------------------------------------- one run


def _environment(tmp_path: Path, found: Emacs) -> dict[str, str]:
    env = editor_environment(tmp_path, ("EMACSLOADPATH", "EMACSNATIVELOADPATH"))
    home = tmp_path / "home"
    home.mkdir()
    env.update(
        HOME=str(home),
        E2E_SETUP=str(SETUP),
        E2E_ELPA_DIRS=found.elpa_dirs,
        E2E_TIMEOUT_S=str(TIMEOUT_S),
        E2E_VERIFY_TIMEOUT_S=str(VERIFY_TIMEOUT_S),
        E2E_WATCHDOG_S=str(WATCHDOG_S),
        E2E_VERIFY="1" if HAS_TORCH else "0",
    )
    return env


@dataclass
class Run:
    """One Emacs run of the driver: its report, and what to show when an assertion fails."""

    report: dict[str, Any]
    proc: subprocess.CompletedProcess[str]
    logs: Path

    def context(self) -> str:
        logs = self.logs.read_text(errors="replace")[-6000:] if self.logs.is_file() else ""
        shown = {k: v for k, v in self.report.items() if k != "steps"}
        return (
            f"\nemacs rc={self.proc.returncode}, steps: {timings(self.report)}\n"
            f"report: {json.dumps(shown, ensure_ascii=False, indent=1)[:8000]}\n"
            f"emacs stderr:\n{self.proc.stderr[-3000:]}\n"
            f"*EGLOT events* / server stderr tail:\n{logs or '(none)'}"
        )


def _run(found: Emacs, quick: Path, tmp_path: Path) -> Run:
    env = _environment(tmp_path, found)
    result, logs = tmp_path / "report.json", tmp_path / "eglot-buffers.txt"
    env.update(E2E_FILE=str(quick), E2E_RESULT=str(result), E2E_LOGS=str(logs))
    started = time.monotonic()
    proc = subprocess.run(
        [found.path, "--batch", "-Q", "-l", str(DRIVER)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WATCHDOG_S + 30,
    )
    elapsed = time.monotonic() - started
    report = json.loads(result.read_text(encoding="utf-8")) if result.exists() else {}
    print(
        f"\nEmacs {report.get('emacs_version')}, eglot {report.get('eglot_version')} "
        f"({report.get('position_encoding')}, {found.path}): {elapsed:.2f}s; {timings(report)}"
    )
    return Run(report, proc, logs)


def _check_diagnostics(run: Run) -> None:
    """IPL001, Error, at the character columns in Flymake and at the columns of the
    negotiated encoding in the LSP diagnostic behind it."""
    report = run.report
    [got] = [d for d in report["diagnostics"] if d["code"] == "IPL001"]
    start, end = columns(QUICK, FLAGGED_LINE, FLAGGED, "utf-32")  # characters
    assert (got["line"], got["col"], got["end_line"], got["end_col"]) == (
        FLAGGED_LINE + 1,  # Emacs counts lines from 1
        start,
        FLAGGED_LINE + 1,
        end,
    ), run.context()
    assert (got["type"], got["source"], got["severity"]) == (
        "eglot-error",
        "inplace-lsp",
        1,
    ), run.context()
    encoding = report["position_encoding"]
    if report["eglot_version"] == "1.9":
        assert encoding == "utf-16", run.context()  # 1.9 offers no positionEncodings
    start, end = columns(QUICK, FLAGGED_LINE, FLAGGED, encoding)
    assert got["range"] == {
        "start": {"line": FLAGGED_LINE, "character": start},
        "end": {"line": FLAGGED_LINE, "character": end},
    }, run.context()


def _check_quick_fix(run: Run, quick: Path) -> None:
    """M-x eglot-code-actions offers the quick fix as the menu's default; RET applies it."""
    report = run.report
    offered = {a["title"]: a for a in report["actions"]}
    fix = offered.get(QUICK_FIX)
    assert fix and fix["kind"] == "quickfix" and fix["preferred"] is True, run.context()
    if report["eglot_version"] == "1.9":  # no codeAction/resolve: the server sends the edit
        assert fix["has_edit"] is True, run.context()
    assert any(a["kind"] == "source.fixAll.inplace-lsp" for a in offered.values()), run.context()
    verify = [a for a in offered.values() if a["kind"] == "source.verify.inplace-lsp"]
    assert [a["title"] for a in verify] == [
        f"Verify {TARGET}: forward/backward under autograd (inplace-lsp)"
    ], run.context()
    assert verify[0]["command"] == "inplace-lsp.verify", run.context()
    menu = report["menus"][0]
    assert (menu["default"], menu["chosen"]) == (QUICK_FIX, QUICK_FIX), run.context()
    assert report["line_after_fix"] == QUICK_FIXED.splitlines()[FLAGGED_LINE], run.context()
    assert quick.read_text(encoding="utf-8") == QUICK_FIXED, run.context()
    assert report["diagnostics_after_save"] == [], run.context()


def _check_verify(run: Run) -> None:
    """M-x inplace-lsp-verify names the write and the saving line, then says ok after the
    fix; so does the "Verify NAME" code action."""
    report = run.report
    broken = report["verify_broken"]
    assert broken["message"] == (
        f"inplace-lsp verify: inplace-error ({TARGET}), in-place write at line "
        f"{FLAGGED_LINE + 1}, saved by SigmoidBackward0 at line {SAVED_LINE + 1}"
    ), run.context()
    assert f"{TARGET} fails: line {FLAGGED_LINE + 1} overwrites" in broken["server_message"], (
        run.context()
    )
    # One entry for the bug: the analysis's Error says verify confirmed it.
    [verified] = report["verify_confirmed"]
    assert (verified["line"], verified["severity"]) == (FLAGGED_LINE + 1, 1), run.context()
    assert (verified["code"], verified["source"]) == ("IPL001", "inplace-lsp"), run.context()
    assert f"(confirmed by verify: {TARGET} fails: line {FLAGGED_LINE + 1} " in verified["text"]
    assert report["verify_diagnostics"] == [], run.context()
    assert report["verify_fixed"]["message"] == f"inplace-lsp verify: ok ({TARGET})", run.context()
    action = report["verify_action"]
    assert (action["status"], action["target"]) == ("ok", TARGET), run.context()
    assert f"{TARGET}: forward and backward OK" in action["server_message"], run.context()


def test_emacs_eglot(tmp_path: Path) -> None:
    found = emacs()
    if isinstance(found, str):
        _skip_or_fail(found)
    quick = tmp_path / "residual_after_sigmoid.py"
    quick.write_text(QUICK, encoding="utf-8")
    run = _run(found, quick, tmp_path)
    assert run.proc.returncode == 0, f"{run.report.get('error')!r}{run.context()}"

    # eglot started the server the shipped set-up names, found on PATH.
    assert run.report["server_command"] == ["inplace-lsp", "serve"], run.context()
    assert run.report["major_mode"] == "python-mode", run.context()
    _check_diagnostics(run)
    _check_quick_fix(run, quick)
    if HAS_TORCH:
        _check_verify(run)
    else:
        print("  torch is not installed: the verify steps were skipped")
