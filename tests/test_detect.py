"""The runtime detector: inplace_lsp.detect(), `inplace-lsp run`, the pytest plugin.

Ground truth is the run: every in-place error case of tests/cases is run through
`inplace-lsp run` on a small script calling its run(), and must name the lines its comments
name; every ok case must compute the same outputs and gradients as without the detector.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import inplace_lsp  # noqa: E402
from inplace_lsp.detector import InplaceWarning  # noqa: E402

try:
    from casefile import Case, discover
except ImportError:
    from tests.casefile import Case, discover

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).parent / "detect" / "case_driver.py"
CASES = discover()
# The cases whose run() the detector must explain: torch's in-place and leaf errors, and the
# `.data` writes torch runs through with wrong gradients.
EXPLAINED = [c for c in CASES if c.outcome in ("inplace-error", "leaf-error") or c.silent]
CLEAN = [c for c in CASES if c.outcome == "ok" and not c.silent]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONWARNINGS"] = "ignore::UserWarning:torch"  # numpy-less torch: not our business
    env.update(extra)
    return env


def _run(
    args: list[str], cwd: Path | None = None, timeout: float = 180, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        # (a suite started in the background of a shell ignores SIGINT, and its children
        # would too: the Ctrl-C tests need python's own handling of it)
        preexec_fn=_default_sigint if os.name == "posix" else None,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _detected(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "inplace_lsp", "run", *args], cwd=cwd, **env)


def _report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --------------------------------------------------------------------------- every case


@pytest.fixture(scope="module")
def case_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each explained case through `inplace-lsp run case_driver.py CASE` (in parallel)."""
    base = tmp_path_factory.mktemp("case-runs")

    def one(case: Case) -> tuple[str, Any]:
        report = base / f"{case.name}.json"
        done = _detected("--report", str(report), str(DRIVER), str(case.path), cwd=base)
        return case.name, (done, _report(report) if report.exists() else None)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(pool.map(one, EXPLAINED))


@pytest.mark.parametrize("case", EXPLAINED, ids=lambda c: c.name)
def test_run_names_both_ends_of_every_error_case(case: Case, case_runs: dict[str, Any]) -> None:
    done, report = case_runs[case.name]
    assert report is not None, done.stderr
    findings = report["findings"]
    assert report["exit_code"] == done.returncode
    if case.silent:  # torch runs on; the detector warns where the `.data` write happened
        assert done.returncode == 0, done.stderr
        (finding,) = findings
        assert (finding["severity"], finding["kind"]) == ("warning", "silent-write")
        assert finding["mutation"]["line"] == case.write_lines[0]
        assert finding["saved_by"]["line"] == min(case.saved_by)
        assert "InplaceWarning" in done.stderr
        return
    assert done.returncode == 1, done.stderr
    (finding,) = [f for f in findings if f["severity"] == "error"]
    assert "inplace-lsp detect:" in done.stderr and "written at" in done.stderr
    if case.outcome == "leaf-error":
        assert finding["kind"] == "leaf-error"
        assert finding["mutation"]["line"] == min(case.errors), finding  # torch stops there
        return
    (error_line,) = case.write_lines
    (saved_line,) = case.saved_by
    assert finding["kind"] == "inplace-error"
    assert finding["mutation"]["path"] == os.path.normcase(str(case.path))
    assert finding["mutation"]["line"] == error_line, finding
    assert finding["saved_by"]["line"] == saved_line, finding
    assert finding["tensor"]["dtype"].startswith("torch.")
    assert [v["event"] for v in finding["versions"]][:2] == ["saved", "written"]
    # The traceback is Python's: torch's message first, then both ends, no frame of ours
    # before the user's.
    message = done.stderr[done.stderr.index("RuntimeError: one of the variables") :]
    assert message.index("modified by an inplace operation") < message.index("written at")
    assert f":{error_line}" in message and f":{saved_line}" in message
    assert 'runscript.py"' not in done.stderr and "<frozen runpy>" not in done.stderr


def test_ok_cases_run_clean_and_unchanged(tmp_path: Path) -> None:
    """The same outputs, losses and gradients, bit for bit, with and without the detector."""
    paths = [str(c.path) for c in CLEAN]
    plain, detected = tmp_path / "plain.pt", tmp_path / "detected.pt"
    report = tmp_path / "report.json"
    first = _run([sys.executable, str(DRIVER), "--record", str(plain), *paths], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = _detected(
        "--report", str(report), str(DRIVER), "--record", str(detected), *paths, cwd=tmp_path
    )
    assert second.returncode == 0, second.stderr
    assert _report(report)["findings"] == []
    want, got = torch.load(plain), torch.load(detected)
    assert sorted(want) == sorted(got) == sorted(c.name for c in CLEAN)
    for name in want:
        for key in ("outputs", "losses", "grads"):
            a, b = want[name][key], got[name][key]
            assert len(a) == len(b), (name, key)
            for x, y in zip(a, b, strict=True):
                assert (x is None) == (y is None), (name, key)
                assert x is None or torch.equal(x, y), (name, key)
        assert want[name]["losses"] or want[name]["grads"], name  # it did compute something


# --------------------------------------------------------------------------- the API


class _Gate(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.fc(x))  # SAVE
        return self.act(g)  # CALL


def _line(marker: str, path: str = __file__) -> int:
    for number, text in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(marker)


def _failing_step() -> None:
    x = torch.randn(3, 5, requires_grad=True)
    y = x.exp()  # EXP
    y.add_(1)  # WRITE
    y.sum().backward()


def _error_text(fn: Callable[[], object]) -> str:
    with pytest.raises(RuntimeError) as caught:
        fn()
    return str(caught.value)


def test_error_keeps_torch_message_first_then_both_ends() -> None:
    plain = _error_text(_failing_step)
    detected = _error_text(inplace_lsp.detect(_failing_step))
    assert detected.startswith(plain)  # torch's own text, unchanged (its type too)
    added = detected[len(plain) :]
    here = os.path.basename(__file__)
    assert f"{here}:{_line('WRITE')} by add_" in added
    assert "y.add_(1)" in added
    assert "saved by    ExpBackward0 at" in added and f":{_line('EXP')}" in added
    assert "y = x.exp()" in added
    assert "torch.float32 [3, 5] on cpu" in added
    assert f"v0 saved by ExpBackward0 at line {_line('EXP')}" in added
    assert f"v1 written by add_ at line {_line('WRITE')}" in added


def test_inplace_module_names_its_constructor_and_call_site() -> None:
    def inside() -> None:
        model = _Gate()
        model(torch.randn(2, 4)).sum().backward()

    built = _Gate()  # constructed before the detector started: found in __init__'s source

    def outside() -> None:
        built(torch.randn(2, 4)).sum().backward()

    for fn in (inside, outside):
        with inplace_lsp.detect() as detector:
            text = _error_text(fn)
        (finding,) = detector.findings
        assert finding["mutation"]["source"] == "self.act = torch.nn.ReLU(inplace=True)", text
        assert finding["call_site"]["line"] == _line("CALL")
        assert finding["saved_by"]["line"] == _line("SAVE")
        assert "in ReLU(inplace=True) constructed here" in text


def test_report_file_and_decorator_forms(tmp_path: Path) -> None:
    report = tmp_path / "out" / "findings.json"

    @inplace_lsp.detect(report=report)
    def step() -> None:
        _failing_step()

    with pytest.raises(RuntimeError):
        step()
    data = _report(report)
    assert data["tool"] == "inplace-lsp run" and data["format"] == 1
    (finding,) = data["findings"]
    assert finding["mutation"] == {
        "path": os.path.normcase(__file__),
        "line": _line("WRITE"),
        "source": "y.add_(1)  # WRITE",
    }
    assert finding["saved_by"]["op"] == "ExpBackward0"
    assert finding["tensor"] == {"shape": [3, 5], "dtype": "torch.float32", "device": "cpu"}
    with pytest.raises(RuntimeError):  # a second call: the same finding, counted
        step()
    assert _report(report)["findings"][0]["count"] == 2


def test_nested_detectors_trace_once() -> None:
    with inplace_lsp.detect() as outer:
        with inplace_lsp.detect() as inner:
            text = _error_text(_failing_step)
    assert text.count("inplace-lsp detect:") == 1
    assert len(outer.findings) == 1 and inner.findings == []
    assert inner.errors == outer.errors


def test_code_that_runs_is_left_alone() -> None:
    """Same values and gradients, and not a warning (retention checks on too)."""

    def step() -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.ReLU(inplace=True), torch.nn.Linear(8, 1)
        )
        h = model(torch.randn(3, 4))
        h += 1  # the last Linear does not save its output
        loss = h.pow(2).sum()
        loss.backward()
        return loss.detach(), model[0].weight.grad.clone()

    plain = step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with inplace_lsp.detect(retention=True) as detector:
            detected = step()
    assert all(torch.equal(a, b) for a, b in zip(plain, detected, strict=True))
    assert detector.findings == []


def test_leaf_error_names_the_write_and_where_the_leaf_came_from() -> None:
    def raw() -> None:
        w = torch.zeros(3, requires_grad=True)  # LEAF
        w += 1  # LEAF-WRITE

    def parameter() -> None:
        layer = torch.nn.Linear(2, 2)  # LAYER
        layer.weight.mul_(2)  # PARAM-WRITE

    with inplace_lsp.detect() as detector:
        raw_text = _error_text(raw)
        param_text = _error_text(parameter)
    assert "a leaf Variable that requires grad" in raw_text
    assert "created at  " in raw_text and f":{_line('LEAF')}" in raw_text
    assert "parameter `weight` of Linear constructed at" in param_text
    assert f":{_line('LAYER')}" in param_text
    lines = [(f["kind"], f["mutation"]["line"]) for f in detector.findings]
    assert lines == [("leaf-error", _line("LEAF-WRITE")), ("leaf-error", _line("PARAM-WRITE"))]


def test_silent_writes_are_warnings() -> None:
    def through_data() -> None:
        x = torch.randn(3, requires_grad=True)
        y = x.exp()  # DATA-SAVE
        y.data.mul_(2)  # DATA-WRITE
        y.sum().backward()

    def through_numpy() -> None:
        pytest.importorskip("numpy")
        x = torch.randn(3, requires_grad=True)
        y = x.exp()  # NP-SAVE
        array = y.detach().numpy()  # NP-SHARE
        array *= 2
        y.sum().backward()

    for fn, write, save in (
        (through_data, "DATA-WRITE", "DATA-SAVE"),
        (through_numpy, "NP-SHARE", "NP-SAVE"),
    ):
        with pytest.warns(InplaceWarning, match="silently wrong"):
            with inplace_lsp.detect() as detector:
                fn()
        (finding,) = detector.findings
        assert (finding["severity"], finding["kind"]) == ("warning", "silent-write")
        assert finding["mutation"]["line"] == _line(write)
        assert finding["saved_by"]["line"] == _line(save)


def test_numpy_write_that_backward_does_not_read_is_quiet() -> None:
    pytest.importorskip("numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with inplace_lsp.detect() as detector:
            x = torch.randn(3, requires_grad=True)
            y = x * 2  # saves nothing of y
            array = y.detach().numpy()
            array *= 2
            y.sum().backward()
    assert detector.findings == []


def test_retention_warnings() -> None:
    lin = torch.nn.Linear(3, 1)
    with pytest.warns(InplaceWarning) as recorded:
        with inplace_lsp.detect(retention=True) as detector:
            total = torch.zeros(())
            for _ in range(3):
                loss = lin(torch.randn(2, 3)).pow(2).mean()
                total = total + loss  # ACCUMULATE
                loss.backward()
            # detached metrics and GAN-style detach()/argmax are not retention
            fake = lin(torch.randn(2, 3))
            d_loss = fake.detach().pow(2).mean() + lin(torch.randn(2, 3)).mean()
            d_loss.backward()
            (fake.argmax() == 0).sum()
            lin(torch.randn(2, 3)).sum().backward()
    kinds = [(f["kind"], f["mutation"]["line"]) for f in detector.findings]
    assert kinds == [("graph-retention", _line("ACCUMULATE"))]
    assert "loss.item()" in detector.findings[0]["message"]
    assert len(recorded) == 1


def test_second_backward_error_names_the_reused_tensor() -> None:
    cell = torch.nn.RNNCell(3, 3)

    def loop() -> None:
        h = torch.zeros(1, 3)
        for _ in range(2):
            h = cell(torch.randn(1, 3), h)  # REUSE
            h.sum().backward()

    for retention in (False, True):  # the failure is explained with or without the flag
        with warnings.catch_warnings():
            warnings.simplefilter("error", InplaceWarning)  # an error, not a warning too
            with inplace_lsp.detect(retention=retention) as detector:
                text = _error_text(loop)
        assert "backward through the graph a second time" in text
        assert "inplace-lsp detect: calls that built on a graph" in text
        assert f":{_line('REUSE')}" in text
        found = [(f["kind"], f["severity"], f["mutation"]["line"]) for f in detector.findings]
        assert found == [("graph-retention", "error", _line("REUSE"))]


_VALUE_READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "cpu", "numpy")


@pytest.fixture
def value_reads() -> Iterator[list[str]]:
    """Calls of Tensor methods that read values (a CUDA sync) made by the tool's own code."""
    seen: list[str] = []
    originals = {name: getattr(torch.Tensor, name) for name in _VALUE_READS}

    def wrap(name: str, method: Any) -> Any:
        def read(self: Any, *args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename
            if os.path.normcase(caller).startswith(os.path.normcase(str(ROOT / "inplace_lsp"))):
                seen.append(f"{name} from {caller}")
            return method(self, *args, **kwargs)

        return read

    for name, method in originals.items():
        setattr(torch.Tensor, name, wrap(name, method))
    try:
        yield seen
    finally:
        for name, method in originals.items():
            setattr(torch.Tensor, name, method)


def test_the_detector_reads_no_tensor_values(value_reads: list[str]) -> None:
    """On CUDA a value read synchronises the device: the tracer reads versions, addresses,
    shapes and strides only (a training loop with writes, an error and a warning)."""
    model = _Gate()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with inplace_lsp.detect(retention=True):
        for _ in range(2):
            loss = torch.nn.functional.linear(torch.randn(2, 4), model.fc.weight).pow(2).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        with pytest.raises(RuntimeError):
            model(torch.randn(2, 4)).sum().backward()
    assert value_reads == []


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_no_device_synchronisation_on_cuda() -> None:
    model = _Gate().cuda()
    x = torch.randn(8, 4, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        with inplace_lsp.detect():
            text = _error_text(lambda: model(x).sum().backward())
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert "modified by an inplace operation" in text and "on cuda:0" in text


# --------------------------------------------------------------------------- inplace-lsp run


SHOW = """\
import json, sys
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__}))
"""


def test_run_gives_the_script_its_own_argv_and_path(tmp_path: Path) -> None:
    script = tmp_path / "show.py"
    script.write_text(SHOW, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")  # the report stays here
    args = ["a", "--report", "x", "-m", "y"]
    plain = _run([sys.executable, str(script), *args], cwd=tmp_path)
    for prefix in ([], ["--"], ["--no-report", "--"]):
        done = _detected(*prefix, str(script), *args, cwd=tmp_path)
        assert done.returncode == plain.returncode == 0, done.stderr
        assert json.loads(done.stdout) == json.loads(plain.stdout)
        assert plain.stderr == ""
        assert done.stderr == f"{NOTHING_RAN}\n"  # what the detector watched
    console = Path(sys.executable).with_name("inplace-lsp")  # the installed console script
    if console.exists():
        done = _run([str(console), "run", str(script), *args], cwd=tmp_path)
        assert json.loads(done.stdout) == json.loads(plain.stdout), done.stderr


def test_run_module_as_python_m_does(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "show.py").write_text(SHOW, encoding="utf-8")
    plain = _run([sys.executable, "-m", "pkg.show", "1", "-x"], cwd=tmp_path)
    done = _detected("-m", "pkg.show", "1", "-x", cwd=tmp_path)
    assert done.returncode == plain.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(plain.stdout)
    attached = _detected("-mpkg.show", "1", "-x", cwd=tmp_path)
    assert json.loads(attached.stdout) == json.loads(plain.stdout)


BAD_SCRIPTS = {
    "own-exception": """
        import torch
        def load(path):
            raise ValueError(f"no such dataset: {path}")
        load("data/")
    """,
    "exit-3": """
        import sys, torch
        x = torch.ones(2, requires_grad=True)
        print("before", float((x * 2).sum()))
        sys.exit(3)
    """,
    "exit-message": """
        import sys
        sys.exit("configuration error: lr missing")
    """,
    "no-backward": """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(inplace=True))
        out = model(torch.ones(1, 3))
        out += 1
        print("inference", out.shape)
    """,
    "dataloader-workers": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        if __name__ == "__main__":
            torch.manual_seed(0)
            data = TensorDataset(torch.arange(16.0).reshape(8, 2), torch.arange(8.0))
            model = torch.nn.Linear(2, 1)
            total = 0.0
            for x, y in DataLoader(data, batch_size=2, num_workers=2):
                loss = (model(x).squeeze(1) - y).pow(2).mean()
                loss.backward()
                total += loss.item()
            print("trained", round(total, 4), model.weight.grad.shape)
    """,
}


@pytest.mark.parametrize("name", sorted(BAD_SCRIPTS))
def test_bad_scripts_behave_as_without_the_detector(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(BAD_SCRIPTS[name]), encoding="utf-8")
    report = tmp_path / "r.json"
    plain = _run([sys.executable, str(script)], cwd=tmp_path)
    done = _detected("--report", str(report), str(script), cwd=tmp_path)
    assert done.returncode == plain.returncode, (done.stderr, plain.stderr)
    assert done.stdout == plain.stdout
    # The same traceback, no frame of the tool's; a clean run ends with what it watched.
    assert done.stderr.startswith(plain.stderr), done.stderr
    watched = done.stderr[len(plain.stderr) :]
    if plain.returncode == 0:
        assert re.fullmatch(CLEAN_RUN, watched), watched
    else:
        assert watched == ""
    data = _report(report)
    assert data["findings"] == [] and data["exit_code"] == plain.returncode
    assert data["finished"] is not None


INTERRUPTED = {
    "plain": "",
    "its own excepthook": (
        "def hook(kind, value, tb):\n"
        "    print('hook:', kind.__name__, traceback.extract_tb(tb)[0].filename, file=sys.stderr)\n"
        "sys.excepthook = hook\n"
    ),
}


@pytest.mark.parametrize("name", sorted(INTERRUPTED))
def test_ctrl_c_shows_what_python_shows(name: str, tmp_path: Path) -> None:
    """Ctrl-C in the script: the traceback from its first frame (none of the tool's), the
    script's excepthook if it set one, python's ending (killed by SIGINT after the atexit
    handlers); the report says 130, the shell's code for it."""
    script = tmp_path / "interrupted.py"
    script.write_text(
        "import atexit, os, signal, sys, time, traceback\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        f"{INTERRUPTED[name]}"
        "def train():\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(5)\n"
        "train()\n",
        encoding="utf-8",
    )
    report = tmp_path / "r.json"
    plain = _run([sys.executable, str(script)], cwd=tmp_path)
    done = _detected("--report", str(report), str(script), cwd=tmp_path)
    assert plain.returncode == done.returncode == -2, (done.stderr, plain.stderr)
    assert done.stdout == plain.stdout == "atexit ran\n"
    assert done.stderr == plain.stderr  # the same traceback, no frame of the tool's
    assert ("hook: KeyboardInterrupt" in plain.stderr) == (name != "plain"), plain.stderr
    assert _report(report)["exit_code"] == 130


# The line a clean run that called no backward() ends with (on stderr), and any clean run's.
NOTHING_RAN = "inplace-lsp run: no backward() ran: nothing for the detector to check"
CLEAN_RUN = (
    rf"(inplace-lsp run: no in-place problem in \d+ backward calls?|{re.escape(NOTHING_RAN)})\n"
)

SEES = """\
# -*- coding: latin-1 -*-
import json, os, sys, warnings
warnings.warn("shown with its source line, as python shows it")
print(json.dumps({
    "argv": sys.argv, "file": __file__, "loader": type(__loader__).__name__,
    "spec": repr(__spec__), "path0": sys.path[0], "cached": repr(globals().get("__cached__")),
    "main": sys.modules["__main__"].__dict__ is globals(), "caf\xe9": len("caf\xe9"),
}))
"""


def test_the_script_sees_what_python_script_gives_it(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "sees.py").write_bytes(SEES.encode("latin-1"))
    plain = _run([sys.executable, os.path.join("sub", "sees.py"), "a", "-b"], cwd=tmp_path)
    done = _detected("--no-report", os.path.join("sub", "sees.py"), "a", "-b", cwd=tmp_path)
    assert plain.returncode == done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(plain.stdout)
    assert json.loads(plain.stdout)["argv"] == [os.path.join("sub", "sees.py"), "a", "-b"]
    assert done.stderr == plain.stderr + f"{NOTHING_RAN}\n"
    assert not (tmp_path / "sub" / "__pycache__").exists()  # python compiles no .pyc of it


def _frames(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith('File "')]


def test_a_traceback_has_the_frames_python_gives_it_and_no_more(tmp_path: Path) -> None:
    (tmp_path / "bw.py").write_text(
        "import torch\n"
        "def step(x):\n"
        "    y = torch.sigmoid(x)\n"
        "    y.mul_(2)\n"
        "    y.sum().backward()\n"
        "step(torch.ones(3, requires_grad=True))\n",
        encoding="utf-8",
    )
    plain = _run([sys.executable, "bw.py"], cwd=tmp_path)
    done = _detected("--no-report", "bw.py", cwd=tmp_path)
    assert plain.returncode == done.returncode == 1
    assert "handle_torch_function" not in done.stderr and "inplace_lsp" not in done.stderr
    assert _frames(done.stderr) == _frames(plain.stderr)
    assert "written at  bw.py:4 by mul_" in done.stderr


def test_the_versions_name_the_file_of_each_line_when_they_are_in_two(tmp_path: Path) -> None:
    (tmp_path / "layers.py").write_text(
        "import torch\n\ndef gate(x):\n    return torch.sigmoid(x)\n", encoding="utf-8"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom layers import gate\n\n"
        "y = gate(torch.ones(3, requires_grad=True))\ny += 1\ny.sum().backward()\n",
        encoding="utf-8",
    )
    done = _detected("--no-report", "train.py", cwd=tmp_path)
    assert done.returncode == 1
    assert (
        "  versions    v0 saved by SigmoidBackward0 at layers.py:4, v1 written by add_ at "
        "train.py:5\n" in done.stderr
    ), done.stderr
    (tmp_path / "one.py").write_text(
        "import torch\ny = torch.sigmoid(torch.ones(3, requires_grad=True))\ny += 1\n"
        "y.sum().backward()\n",
        encoding="utf-8",
    )
    one = _detected("--no-report", "one.py", cwd=tmp_path)
    assert "versions    v0 saved by SigmoidBackward0 at line 2, v1 written by add_ at line 3" in (
        one.stderr
    )


def test_the_users_line_is_named_with_the_installed_packages_line_beside_it(
    tmp_path: Path,
) -> None:
    """A framework (an installed package: site-packages) between the user's line and the op:
    the user's line is named, the framework's as context ("via")."""
    package = tmp_path / "lib" / "site-packages" / "fakelight"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "loop.py").write_text(
        "def step(optimizer):\n    return optimizer.step()\n\n\n"
        "def train(model, optimizer, x):\n"
        "    out = model(x)\n"
        "    first, second = out.sum(), out.pow(2).sum()\n"
        "    first.backward(retain_graph=True)\n"
        "    optimizer.step()\n"
        "    second.backward()\n",
        encoding="utf-8",
    )
    head = (
        "import sys\nsys.path.insert(0, 'lib/site-packages')\nimport torch\n"
        "from fakelight.loop import step, train\n"
        "d = torch.nn.Linear(2, 1)\nopt = torch.optim.Adam(d.parameters())\n"
    )
    (tmp_path / "user.py").write_text(
        head + "out = d(torch.randn(4, 2, requires_grad=True))\n"
        "first, second = out.sum(), out.pow(2).sum()\n"
        "first.backward(retain_graph=True)\n"
        "step(opt)\n"
        "second.backward()\n",
        encoding="utf-8",
    )
    report = tmp_path / "r.json"
    done = _detected("--report", str(report), "user.py", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "  written at  user.py:10 by addcdiv_ (via fakelight/loop.py:2)\n" in done.stderr
    (finding,) = _report(report)["findings"]
    assert finding["mutation"]["line"] == 10
    assert finding["mutation"]["via"]["line"] == 2
    # The whole loop inside the package: the user's line is the call into it.
    (tmp_path / "inside.py").write_text(
        head + "train(d, opt, torch.randn(4, 2, requires_grad=True))\n", encoding="utf-8"
    )
    inside = _detected("--no-report", "inside.py", cwd=tmp_path)
    assert inside.returncode == 1
    assert "  written at  inside.py:7 by addcdiv_ (via fakelight/loop.py:9)\n" in inside.stderr
    # No line of the user's on the stack (the package's own entry point): its line is named.
    (package / "main.py").write_text(
        head.replace("import sys\nsys.path.insert(0, 'lib/site-packages')\n", "")
        + "train(d, opt, torch.randn(4, 2, requires_grad=True))\n",
        encoding="utf-8",
    )
    installed = str(tmp_path / "lib" / "site-packages")
    alone = _detected(
        "--no-report",
        "-m",
        "fakelight.main",
        cwd=tmp_path,
        PYTHONPATH=f"{ROOT}{os.pathsep}{installed}",
    )
    assert alone.returncode == 1
    assert "loop.py:9 by addcdiv_\n" in alone.stderr and "(via" not in alone.stderr


def test_pytest_shows_the_failing_frames_it_shows_without_the_detector(tmp_path: Path) -> None:
    (tmp_path / "test_model.py").write_text(PYTEST_FILE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_model.py"]
    off, on = _run(base, cwd=tmp_path), _run([*base, "--inplace-detect"], cwd=tmp_path)
    assert off.returncode == on.returncode == 1

    def where(out: str) -> list[str]:  # the frames pytest lists: "path:line: in name" lines
        return re.findall(r"^\S+:\d+: (?:in \w+|\w+Error)$", out, flags=re.M)

    assert where(on.stdout) == where(off.stdout) and where(off.stdout)
    assert "tracer.py" not in on.stdout and "handle_torch_function" not in on.stdout


def test_report_goes_to_the_project_and_a_caught_error_is_still_reported(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "scripts").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname='p'\n", encoding="utf-8")
    script = project / "scripts" / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            x = torch.randn(3, requires_grad=True)
            y = x.sigmoid()
            y.mul_(2)
            try:
                y.sum().backward()
            except RuntimeError:
                print("caught, carrying on")
            """
        ),
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _detected(str(script), cwd=elsewhere)
    assert done.returncode == 0 and done.stdout == "caught, carrying on\n"
    report = _report(project / ".inplace-lsp" / "last-run.json")
    (finding,) = report["findings"]
    assert finding["mutation"]["line"] == 5 and finding["saved_by"]["line"] == 4
    assert report["exit_code"] == 0 and report["command"] == [str(script)]
    assert "inplace-lsp run: " + finding["message"] in done.stderr  # the script hid it
    assert "1 error(s), 0 warning(s)" in done.stderr


def test_run_usage_errors(tmp_path: Path) -> None:
    assert _detected(cwd=tmp_path).returncode == 2
    missing = _detected(str(tmp_path / "nope.py"), cwd=tmp_path)
    assert missing.returncode == 2 and "can't open file" in missing.stderr
    assert _detected("--frobnicate", "x.py", cwd=tmp_path).returncode == 2
    helped = _detected("--help", cwd=tmp_path)
    assert helped.returncode == 0 and "-m MODULE" in helped.stdout
    listed = _run([sys.executable, "-m", "inplace_lsp", "--help"], cwd=tmp_path)
    assert "run a script under the runtime in-place detector" in listed.stdout


TORCHRUN_SCRIPT = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
x = torch.randn(3, requires_grad=True)
y = x.tanh()
y += dist.get_rank()
failed = False
try:
    y.sum().backward()
except RuntimeError:
    failed = True
dist.barrier()  # both ranks report before either exits
dist.destroy_process_group()
raise SystemExit(3 if failed else 0)
"""


def test_torchrun_writes_one_report_per_rank(tmp_path: Path) -> None:
    script = tmp_path / "ddp.py"
    script.write_text(TORCHRUN_SCRIPT, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    done = _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node=2",
            "--standalone",
            "-m",
            "inplace_lsp",
            "run",
            str(script),
        ],
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode != 0  # both ranks failed
    reports = [_report(tmp_path / ".inplace-lsp" / f"last-run-rank{r}.json") for r in (0, 1)]
    assert not (tmp_path / ".inplace-lsp" / "last-run.json").exists()
    assert reports[0]["run_id"] == reports[1]["run_id"]
    for rank, report in enumerate(reports):
        assert (report["rank"], report["world_size"]) == (rank, 2)
        (finding,) = report["findings"]
        assert finding["message"].startswith(f"[rank {rank}] ")
        assert (finding["mutation"]["line"], finding["saved_by"]["line"]) == (9, 8)
    assert "inplace-lsp run: [rank 1] " in done.stderr


README_ANOMALY = (
    "import runpy, torch; torch.autograd.set_detect_anomaly(True); "
    "runpy.run_path('examples/relu_inplace_reused.py', run_name='__main__')"
)


def test_the_docs_show_what_anomaly_mode_and_the_detector_print(tmp_path: Path) -> None:
    """Each line of the outputs docs/runtime-detector.md shows (anomaly mode's and the
    detector's), and of the detector's the README shows, is printed, in that order, by the
    real runs (`...` stands for lines left out; the site-packages folder is shown as `...`)."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "relu_inplace_reused.py", tmp_path / "examples")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    runs = {
        "anomaly": _run([sys.executable, "-c", README_ANOMALY], cwd=tmp_path),
        "detector": _detected("examples/relu_inplace_reused.py", cwd=tmp_path),
    }
    pages = {
        page: (ROOT / page).read_text(encoding="utf-8")
        for page in ("docs/runtime-detector.md", "README.md")
    }
    packages = os.path.dirname(os.path.dirname(torch.__file__))
    shown_in = {"anomaly": ["docs/runtime-detector.md"], "detector": list(pages)}
    for name, done in runs.items():
        assert done.returncode == 1, done.stderr
        printed = (done.stdout + done.stderr).replace(packages, "...").splitlines()
        for page in shown_in[name]:
            block = re.search(
                rf"^<!-- the output of the {name} run, [^\n]*-->\n```text\n(.*?)^```",
                pages[page],
                flags=re.M | re.S,
            )
            assert block is not None, (page, name)
            shown = [line for line in block.group(1).splitlines() if line != "..."]
            position = 0
            for line in shown:
                if line.startswith("$ "):
                    continue
                assert line in printed[position:], (page, name, line, printed)
                position = printed.index(line, position) + 1


# --------------------------------------------------------------------------- pytest plugin


PYTEST_FILE = """
import torch

def test_breaks():
    x = torch.randn(3, requires_grad=True)
    y = x.exp()
    y[0] = 0
    y.sum().backward()

def test_fine():
    x = torch.randn(3, requires_grad=True)
    (x * 2).sum().backward()
"""


def test_pytest_plugin_is_off_by_default_and_names_the_write(tmp_path: Path) -> None:
    (tmp_path / "test_model.py").write_text(PYTEST_FILE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_model.py"]
    off = _run(base, cwd=tmp_path)
    assert off.returncode == 1 and "inplace-lsp detect:" not in off.stdout
    assert not (tmp_path / ".inplace-lsp").exists()
    on = _run([*base, "--inplace-detect"], cwd=tmp_path)
    assert on.returncode == 1 and "1 failed, 1 passed" in on.stdout
    assert "inplace-lsp detect:" in on.stdout and "test_model.py:7" in on.stdout
    report = _report(tmp_path / ".inplace-lsp" / "last-run.json")
    (finding,) = report["findings"]
    assert finding["test"] == "test_model.py::test_breaks"
    assert (finding["mutation"]["line"], finding["saved_by"]["line"]) == (7, 6)
    assert report["exit_code"] == 1


def test_the_detector_imports_only_torch_and_the_standard_library() -> None:
    code = (
        "import sys, inplace_lsp\n"
        "with inplace_lsp.detect():\n"
        "    pass\n"
        "import inplace_lsp.runscript, inplace_lsp.pytest_plugin\n"
        "ours = {'inplace_lsp', 'torch', 'pytest', '_pytest', 'pluggy', 'iniconfig', 'packaging'}\n"
        "stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names)\n"
        "others = {m.split('.')[0] for m in sys.modules} - stdlib - ours\n"
        "print(sorted(m for m in others if not m.startswith('_')))\n"
    )
    done = _run([sys.executable, "-c", code])
    assert done.returncode == 0, done.stderr
    # torch's own dependencies (numpy when present, sympy, ...) are torch's business
    imported = set(json.loads(done.stdout.replace("'", '"')))
    assert not imported & {"pygls", "lsprotocol", "libcst", "jedi", "cattrs", "attrs"}, imported


def test_compiled_code_runs_as_without_the_detector() -> None:
    """torch.compile traces the mode's handler: it hands the graph the call alone (no
    warning about what dynamo cannot trace, the same values)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sigmoid())
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(2, 4)
    want = model(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with inplace_lsp.detect() as detector:
            got = compiled(x)
            got.sum().backward()
    assert torch.equal(want, got) and detector.findings == []


def test_detectors_in_two_threads_leave_torch_as_it_was() -> None:
    import threading

    original = torch.nn.Module.__init__
    first_in, second_done = threading.Event(), threading.Event()

    def first() -> None:
        with inplace_lsp.detect():
            first_in.set()
            second_done.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with inplace_lsp.detect():  # enters after the first, leaves before it
        pass
    second_done.set()
    thread.join(10)
    assert torch.nn.Module.__init__ is original


def test_an_exception_whose_str_raises_is_summarised_without_an_internal_error(
    tmp_path: Path,
) -> None:
    """The script caught the in-place error, then raised an exception whose `__str__` raises:
    python's own output and exit code, then the detector's summary; no traceback of its own."""
    (tmp_path / "odd.py").write_text(
        "import torch\n"
        "class Odd(Exception):\n"
        "    def __str__(self):\n"
        "        raise ValueError('no text')\n"
        "y = torch.sigmoid(torch.ones(3, requires_grad=True))\n"
        "y.mul_(2)\n"
        "try:\n"
        "    y.sum().backward()\n"
        "except RuntimeError:\n"
        "    pass\n"
        "raise Odd()\n",
        encoding="utf-8",
    )
    plain = _run([sys.executable, "odd.py"], cwd=tmp_path)
    done = _detected("--no-report", "odd.py", cwd=tmp_path)
    assert plain.returncode == done.returncode == 1, done.stderr
    assert done.stderr.startswith(plain.stderr), done.stderr
    assert "inplace_lsp" not in done.stderr and "runscript" not in done.stderr
    assert done.stderr.splitlines()[-1] == "inplace-lsp run: 1 error(s), 0 warning(s)"


THREE_FINDINGS = (
    "import os, torch\n"
    "os.chdir(os.environ.get('MOVE_TO', '.'))\n"
    "for _ in range(3):\n"
    "    y = torch.sigmoid(torch.ones(3, requires_grad=True))\n"
    "    y.mul_(2)\n"
    "    try:\n"
    "        y.sum().backward()\n"
    "    except RuntimeError:\n"
    "        pass\n"
    "y = torch.exp(torch.ones(3, requires_grad=True))\n"
    "y.add_(1)\n"
    "try:\n"
    "    y.sum().backward()\n"
    "except RuntimeError:\n"
    "    pass\n"
)


def test_report_is_resolved_before_the_script_changes_directory(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "three.py").write_text(THREE_FINDINGS, encoding="utf-8")
    done = _detected("--report", "rel.json", "three.py", cwd=tmp_path, MOVE_TO="elsewhere")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rel.json").exists() and not (tmp_path / "elsewhere" / "rel.json").exists()
    # (named absolutely: the working directory the script left it in is another)
    assert done.stderr.splitlines()[-1].endswith(f"; report: {tmp_path / 'rel.json'}")


def test_a_report_folder_linked_out_of_the_project_is_not_written_through(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A cloned repository's `.inplace-lsp` is a symlink to another folder: nothing is
    written there, and the run says so once."""
    outside = tmp_path_factory.mktemp("outside")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / ".inplace-lsp").symlink_to(outside, target_is_directory=True)
    (tmp_path / "three.py").write_text(THREE_FINDINGS, encoding="utf-8")
    done = _detected("three.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(outside.iterdir()) == []
    assert done.stderr.count("leads out of the project") == 1, done.stderr
    assert done.stderr.splitlines()[-1] == "inplace-lsp run: 2 error(s), 0 warning(s)"


def test_a_report_that_cannot_be_written_is_said_once_and_not_named(tmp_path: Path) -> None:
    """`.inplace-lsp` is a file, not a folder: each finding would rewrite the report; the
    failure is said once, and the summary does not name a report that is not there."""
    (tmp_path / ".inplace-lsp").write_text("", encoding="utf-8")
    (tmp_path / "three.py").write_text(THREE_FINDINGS, encoding="utf-8")
    done = _detected("three.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write the report") == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "inplace-lsp run: 2 error(s), 0 warning(s); report: not written"
    )


def test_a_scripts_own_torch_function_mode_does_not_move_the_lines(tmp_path: Path) -> None:
    """The script runs its code under a TorchFunctionMode of its own (a logger, say): the
    lines named are the script's lines that wrote and saved, not its mode's `return func(...)`."""
    (tmp_path / "mode.py").write_text(
        "import torch\n"
        "from torch.overrides import TorchFunctionMode\n"
        "class Logging(TorchFunctionMode):\n"
        "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
        "        return func(*args, **(kwargs or {}))\n"
        "with Logging():\n"
        "    x = torch.ones(3, requires_grad=True)\n"
        "    y = torch.sigmoid(x)\n"
        "    y.mul_(2)\n"
        "    y.sum().backward()\n",
        encoding="utf-8",
    )
    done = _detected("--no-report", "mode.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "  written at  mode.py:9 by mul_" in done.stderr.splitlines(), done.stderr
    assert "  saved by    SigmoidBackward0 at mode.py:8" in done.stderr.splitlines()


def _view_made_under_no_grad() -> float:
    weight = torch.ones(4, requires_grad=True)
    (weight * 2).sum().backward()
    image = weight.clone()
    with torch.no_grad():
        channel = image[:2]  # a view made under no_grad ...
    image.mul_(2)  # ... whose base is written with grad on: torch refuses its grad_fn
    with torch.no_grad():
        return float(torch.add(channel, 1).sum())


def test_a_view_whose_grad_fn_torch_refuses_runs_as_it_does_plainly() -> None:
    """The style-transfer postprocess under no_grad (Modern Computer Vision with PyTorch):
    reading grad_fn of such a view raises in torch; the detector, which reads the grad_fn of
    each call's arguments after a backward(), must not make the program fail."""
    plain = _view_made_under_no_grad()
    with inplace_lsp.detect(retention=True) as detector:
        assert _view_made_under_no_grad() == plain
    assert not detector.findings
