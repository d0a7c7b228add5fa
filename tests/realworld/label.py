"""Labels real-world cases by running them: the outcome under plain torch, and the guilty lines
the runtime detector names (the write and the save; for a graph used after backward freed it,
the line that used it).

    python tests/realworld/label.py CASE.py ...          # print what each case does
    python tests/realworld/label.py --check CASE.py ...  # also compare with its annotations

Each case runs as a script (`__name__ == "__main__"`, `sys.argv[0]` its path) in a fresh
subprocess, twice: plainly (the truth torch gives) and under `inplace_lsp.detect(retention=True)`
(the lines). `run_cases` runs many cases in one subprocess (the test suite), resetting the
global torch state between them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STANDINS = HERE / "standins"
_STANDIN_NAMES = frozenset(p.name for p in STANDINS.iterdir() if p.is_dir())
TIMEOUT_S = 120

OUTCOME_TEXTS = (
    ("inplace-error", "modified by an inplace operation"),
    ("leaf-error", "leaf Variable that requires grad is being used in an in-place operation"),
    ("leaf-error", "a view of a leaf Variable that requires grad is being used in an in-place"),
    ("retention-error", "backward through the graph a second time"),
    ("refused-error", "Inplace update to inference tensor outside InferenceMode"),
    ("refused-error", "is a view and is being modified inplace"),
    ("refused-error", "A view was created in no_grad mode and is being modified inplace"),
)


def outcome_of(message: str | None) -> str:
    if message is None:
        return "ok"
    for outcome, text in OUTCOME_TEXTS:
        if text in message:
            return outcome
    return "crash"


def _run_one(path: Path, detected: bool) -> dict[str, Any]:
    """Runs one case in this process (the subprocess of `run_cases`)."""
    import runpy
    import warnings

    import torch

    # What a case may patch for its own run (ddpg-naf's `nn.LayerNorm = LayerNorm`), put back
    # after it: the next case in this process meets torch as it is.
    patchable = (torch, torch.nn, torch.nn.functional, torch.nn.init, torch.Tensor)
    attributes = [(owner, dict(vars(owner))) for owner in patchable]
    anomaly = torch.is_anomaly_enabled()
    dtype = torch.get_default_dtype()
    grad = torch.is_grad_enabled()
    argv, cwd, path_before = list(sys.argv), os.getcwd(), list(sys.path)
    message: str | None = None
    findings: list[dict[str, Any]] = []
    detector = None
    try:
        with tempfile.TemporaryDirectory(prefix="realworld-") as work:
            os.chdir(work)  # a case that writes files writes them here
            sys.argv = [str(path)]
            # As `python case.py` sets it: the script's folder first; then the stand-ins, the
            # frameworks as the case's user met them (a newer installed version, as the test
            # extra has for the callbacks' tests, may have changed the API the case calls).
            sys.path[:] = [str(path.parent), str(STANDINS), *path_before]
            torch.manual_seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if detected:
                        import inplace_lsp

                        detector = inplace_lsp.detect(retention=True)
                        with detector:
                            runpy.run_path(str(path), run_name="__main__")
                    else:
                        runpy.run_path(str(path), run_name="__main__")
                except SystemExit as exc:
                    if exc.code not in (None, 0):
                        message = f"SystemExit: {exc.code}"
                except BaseException as exc:  # noqa: BLE001 - the case's own failure is data
                    message = f"{type(exc).__name__}: {exc}"
    finally:
        os.chdir(cwd)
        sys.argv = argv
        sys.path[:] = path_before
        for name in [m for m in sys.modules if m.split(".")[0] in _STANDIN_NAMES]:
            del sys.modules[name]  # each case imports the frameworks afresh
        for owner, before in attributes:
            for name, value in before.items():
                if vars(owner).get(name) is not value:
                    setattr(owner, name, value)
        torch.autograd.set_detect_anomaly(anomaly)
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
    if detector is not None:
        for finding in detector.findings:
            findings.append(
                {
                    "kind": finding["kind"],
                    "severity": finding["severity"],
                    "mutation": _line(finding.get("mutation"), path),
                    "saved_by": _line(finding.get("saved_by"), path),
                    "call_site": _line(finding.get("call_site"), path),
                }
            )
    first = message.splitlines()[0] if message else None
    return {"outcome": outcome_of(message), "message": first, "findings": findings}


def _line(place: dict[str, Any] | None, path: Path) -> int | None:
    """The line of a detector place when it is in the case file (None elsewhere)."""
    if not place:
        return None
    if Path(place["path"]).resolve() != path.resolve():
        return None
    return int(place["line"])


def _framework_frames_are_not_the_users() -> None:
    """The stand-ins play installed frameworks: their frames are a library's, as a framework's
    under site-packages are (the detector names the case's own line, the stand-in's beside it)."""
    from inplace_lsp.verify import tracer

    classify = tracer.UserFrames._classify
    prefix = tracer.norm(str(STANDINS)) + os.sep

    def _classify(self: tracer.UserFrames, filename: str) -> int:
        if tracer.norm(filename).startswith(prefix):
            return tracer._LIBRARY
        return classify(self, filename)

    tracer.UserFrames._classify = _classify  # type: ignore[method-assign]


def _worker(paths: list[str]) -> None:
    _framework_frames_are_not_the_users()
    results = {}
    for name in paths:
        path = Path(name).resolve()
        results[name] = {"plain": _run_one(path, False), "detected": _run_one(path, True)}
    print("\n@@RESULTS@@" + json.dumps(results))


def run_cases(paths: list[Path], timeout: float = TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """{path: {"plain": ..., "detected": ...}} for each case, from one subprocess."""
    if not paths:
        return {}
    repo = HERE.parent.parent
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=timeout * len(paths),
        env=env,
        check=False,
    )
    marker = done.stdout.rfind("@@RESULTS@@")
    if marker < 0:
        raise RuntimeError(
            f"the case runner failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    found: dict[str, dict[str, Any]] = json.loads(done.stdout[marker + len("@@RESULTS@@") :])
    return found


def neutralized(path: Path, lines: list[int], into: Path) -> Path:
    """A copy of a case with the statements on `lines` replaced by `pass` (the guilty lines
    the detector named, taken away; an `inplace=True` turned off), to see which line it names
    next."""
    text = path.read_text(encoding="utf-8").splitlines()
    for line in lines:
        code = text[line - 1]
        if "inplace=True" in code:
            # a layer in a list (`nn.Dropout(inplace=True),` in an nn.Sequential): it stays,
            # out of place
            text[line - 1] = code.replace("inplace=True", "inplace=False")
            continue
        text[line - 1] = code[: len(code) - len(code.lstrip())] + "pass"
    copy = into / path.name
    copy.write_text("\n".join(text) + "\n", encoding="utf-8")
    return copy


def check(case: Any, result: dict[str, Any]) -> list[str]:
    """What a case's annotations say that its runs do not (empty: they agree)."""
    problems: list[str] = []
    plain, detected = result["plain"], result["detected"]
    if plain["outcome"] != case.outcome:
        problems.append(
            f"outcome is {plain['outcome']} ({plain['message']}), annotated {case.outcome}"
        )
    if detected["outcome"] != plain["outcome"]:
        problems.append(f"under the detector the outcome is {detected['outcome']}")
    errors = [f for f in detected["findings"] if f["severity"] == "error"]
    if case.outcome == "inplace-error":
        lines = {(f["mutation"], f["saved_by"]) for f in errors if f["kind"] == "inplace-error"}
        if not any(w in case.errors and s in case.saved_by for w, s in lines):
            want = (sorted(case.errors), sorted(case.saved_by))
            problems.append(
                f"the detector names (write, save) {sorted(lines, key=str)}, annotated {want}"
            )
    elif case.outcome == "leaf-error":
        lines = {f["mutation"] for f in errors if f["kind"] == "leaf-error"}
        if not lines & set(case.errors):
            problems.append(
                f"the detector names the leaf write at {sorted(lines, key=str)}, "
                f"annotated {sorted(case.errors)}"
            )
    elif case.outcome == "retention-error":
        lines = {f["mutation"] for f in detected["findings"] if f["kind"] == "graph-retention"}
        if not lines & set(case.errors):
            problems.append(
                f"the detector names the reuse at {sorted(lines, key=str)}, "
                f"annotated {sorted(case.errors)}"
            )
    elif case.outcome == "ok" and errors:
        problems.append(f"an ok case, but the detector reports {errors}")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        _worker(argv[1:])
        return 0
    checking = argv[:1] == ["--check"]
    paths = [Path(p) for p in (argv[1:] if checking else argv)]
    if not paths:
        print(__doc__)
        return 2
    sys.path.insert(0, str(HERE))
    from corpus import parse

    failed = 0
    for path in paths:
        result = run_cases([path])[str(path)]
        print(f"== {path}")
        print(json.dumps(result, indent=1))
        if checking:
            problems = check(parse(path), result)
            for problem in problems:
                print(f"   MISMATCH: {problem}")
            failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
