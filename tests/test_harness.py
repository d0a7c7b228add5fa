"""Runtime truth for the verify harness: trace_call names the exact mutating and saving lines.

Every case runs real torch. Expected lines are found through ``# @name`` marker comments in
this file, so the tests do not depend on line arithmetic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from inplace_lsp.verify import harness  # noqa: E402
from inplace_lsp.verify.harness import trace_call  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    # anomaly mode reports each failing backward node as a UserWarning; expected here
    pytest.mark.filterwarnings("ignore:Error detected in:UserWarning"),
    pytest.mark.filterwarnings("ignore:Failed to initialize NumPy:UserWarning"),
]

THIS_FILE = os.path.normcase(os.path.abspath(__file__))
HARNESS_FILE = Path(harness.__file__).resolve()
_SOURCE = Path(__file__).read_text().splitlines()


def line_of(marker: str) -> int:
    """1-based line of the only line ending with ``# @marker``."""
    hits = [i + 1 for i, text in enumerate(_SOURCE) if text.rstrip().endswith(f"# @{marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def at(marker: str) -> dict[str, object]:
    return {"path": THIS_FILE, "line": line_of(marker)}


def saved_at(marker: str, op: str) -> dict[str, object]:
    return {"path": THIS_FILE, "line": line_of(marker), "op": op}


def assert_json_shape(report: dict[str, Any]) -> None:
    assert set(report) - {"silent"} == {
        "status",
        "mutation",
        "saved_by",
        "related",
        "message",
        "exception",
        "duration_s",
    }
    assert json.loads(json.dumps(report)) == report
    assert isinstance(report["duration_s"], float)


# --------------------------------------------------------------------------- pinpointing


def sigmoid_then_iadd() -> None:
    x = torch.randn(4, 3, requires_grad=True)
    h = torch.sigmoid(x)  # @sig-save
    h += 1  # @sig-iadd
    h.sum().backward()


def test_iadd_on_sigmoid_output() -> None:
    report = trace_call(sigmoid_then_iadd)
    assert_json_shape(report)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("sig-iadd")
    assert report["saved_by"] == saved_at("sig-save", "SigmoidBackward0")
    assert report["related"] == []
    assert "modified by an inplace operation" in report["exception"]


def method_add_on_exp_output() -> None:
    x = torch.randn(5, requires_grad=True)
    y = x.exp()  # @exp-save
    y.add_(1)  # @exp-add
    y.sum().backward()


def test_method_add_() -> None:
    report = trace_call(method_add_on_exp_output)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("exp-add")
    assert report["saved_by"] == saved_at("exp-save", "ExpBackward0")


def slice_assign_on_tanh_output() -> None:
    x = torch.randn(4, 6, requires_grad=True)
    h = torch.tanh(x)  # @tanh-save
    h[:, :2] = torch.zeros(4, 2)  # @tanh-slice
    h.sum().backward()


def test_slice_assignment() -> None:
    report = trace_call(slice_assign_on_tanh_output)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("tanh-slice")
    assert report["saved_by"] == saved_at("tanh-save", "TanhBackward0")


def write_through_view() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    h = x.exp()  # @view-save
    row = h[0]
    row.mul_(2)  # @view-write
    h.sum().backward()


def test_write_through_a_view_is_caught() -> None:
    report = trace_call(write_through_view)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("view-write")
    assert report["saved_by"] == saved_at("view-save", "ExpBackward0")


def write_through_detach() -> None:
    x = torch.randn(3, requires_grad=True)
    y = x.exp()  # @detach-save
    z = y.detach()
    z[0] = 0  # @detach-write
    y.sum().backward()


def test_write_through_detach_alias() -> None:
    report = trace_call(write_through_detach)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("detach-write")
    assert report["saved_by"] == saved_at("detach-save", "ExpBackward0")


def out_kwarg_into_saved() -> None:
    x = torch.randn(3, requires_grad=True)
    c = torch.randn(3)
    y = x * c  # @out-save
    torch.add(torch.ones(3), torch.ones(3), out=c)  # @out-write
    y.sum().backward()


def test_out_keyword() -> None:
    report = trace_call(out_kwarg_into_saved)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("out-write")
    assert report["saved_by"] == saved_at("out-save", "MulBackward0")


def write_into_linear_input() -> None:
    fc = nn.Linear(4, 2)
    batch = torch.randn(8, 4)  # does not require grad, but Linear saves it for the weight
    out = fc(batch)  # @lin-save
    batch.mul_(0.5)  # @lin-write
    out.sum().backward()


def test_write_into_batch_saved_by_linear() -> None:
    report = trace_call(write_into_linear_input)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("lin-write")
    assert report["saved_by"] == saved_at("lin-save", "AddmmBackward0")


def positional_inplace_dropout() -> None:
    x = torch.randn(6, 6, requires_grad=True)
    h = torch.sigmoid(x)  # @drop-save
    F.dropout(h, 0.5, True, True)  # @drop-write
    h.sum().backward()


def test_positional_inplace_argument() -> None:
    report = trace_call(positional_inplace_dropout)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("drop-write")
    assert report["saved_by"] == saved_at("drop-save", "SigmoidBackward0")


class GatedBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)  # @relu-ctor

    def forward(self, x: Any) -> Any:
        gate = torch.sigmoid(self.fc(x))  # @relu-save
        return self.act(gate)  # @relu-call


def inplace_module_on_saved() -> None:
    block = GatedBlock()
    block(torch.randn(2, 4)).sum().backward()


def test_inplace_module_points_at_constructor() -> None:
    report = trace_call(inplace_module_on_saved)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("relu-ctor")
    assert report["saved_by"] == saved_at("relu-save", "SigmoidBackward0")
    assert report["related"] == [{**at("relu-call"), "message": "called here"}]


def inplace_module_in_sequential() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid(), nn.ReLU(inplace=True))  # @seq-ctor
    out = model(torch.randn(2, 3))  # @seq-call
    out.sum().backward()


def test_inplace_module_inside_sequential() -> None:
    report = trace_call(inplace_module_in_sequential)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("seq-ctor")
    # Sigmoid runs inside torch's Sequential: the innermost user line is the model call.
    assert report["saved_by"] == saved_at("seq-call", "SigmoidBackward0")
    assert report["related"] == [{**at("seq-call"), "message": "called here"}]


def functional_relu_inplace() -> None:
    x = torch.randn(5, requires_grad=True)
    h = torch.sigmoid(x)  # @frelu-save
    F.relu(h, inplace=True)  # @frelu-write
    h.sum().backward()


def test_functional_relu_inplace_is_its_own_line() -> None:
    report = trace_call(functional_relu_inplace)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("frelu-write")
    assert report["saved_by"] == saved_at("frelu-save", "SigmoidBackward0")
    assert report["related"] == []


def make_step_before_backward(optimizer_kwargs: dict[str, Any], sgd: bool) -> Any:
    def run() -> None:
        torch.manual_seed(0)
        disc = nn.Linear(3, 1)
        if sgd:
            opt = torch.optim.SGD(disc.parameters(), lr=0.1, momentum=0.9, **optimizer_kwargs)
        else:
            opt = torch.optim.Adam(disc.parameters(), lr=0.1, **optimizer_kwargs)
        fake = torch.randn(4, 3, requires_grad=True)
        g_loss = disc(fake).sum()  # @step-save
        d_loss = disc(fake.detach()).pow(2).sum()
        d_loss.backward()
        opt.step()  # @step-write
        g_loss.backward()

    return run


@pytest.mark.parametrize(
    ("kwargs", "sgd"),
    [
        ({}, False),
        ({"foreach": False}, False),
        ({"foreach": True}, False),
        ({"foreach": True}, True),
        ({"foreach": False}, True),
    ],
    ids=["adam", "adam-loop", "adam-foreach", "sgd-foreach", "sgd-loop"],
)
def test_optimizer_step_before_backward(kwargs: dict[str, Any], sgd: bool) -> None:
    report = trace_call(make_step_before_backward(kwargs, sgd))
    assert report["status"] == "inplace-error", report
    assert report["mutation"] == at("step-write")
    assert report["saved_by"] == saved_at("step-save", "AddmmBackward0")


def test_fused_optimizer_step_is_silent_in_torch_and_a_warning_here() -> None:
    """Fused Adam writes the weights without bumping their version: torch raises nothing and
    the generator gradient silently uses the new weights. The harness agrees on "ok" and
    names the step line in ``related``."""
    report = trace_call(make_step_before_backward({"fused": True}, sgd=False))
    assert report["status"] == "ok"
    assert report["mutation"] is None
    messages = [r for r in report["related"] if r["line"] == line_of("step-write")]
    assert messages and all("_fused_adam_" in r["message"] for r in messages)
    assert all(r["path"] == THIS_FILE for r in messages)


class SaveInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad * x


def custom_function_save() -> None:
    x = torch.randn(3, requires_grad=True)
    h = x * 1
    y = SaveInput.apply(h)  # @fn-save
    h += 1  # @fn-write
    y.sum().backward()


def test_custom_autograd_function() -> None:
    report = trace_call(custom_function_save)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("fn-write")
    assert report["saved_by"] == saved_at("fn-save", "SaveInputBackward")


# --------------------------------------------------------------------------- returned outputs


def returns_output_without_backward() -> Any:
    x = torch.randn(3, requires_grad=True)
    h = torch.sigmoid(x)  # @ret-save
    h += 1  # @ret-write
    return {"logits": h, "aux": (x * 2, 3)}


def test_output_is_reduced_and_backpropagated() -> None:
    report = trace_call(returns_output_without_backward)
    assert report["status"] == "inplace-error"
    assert report["mutation"] == at("ret-write")
    assert report["saved_by"] == saved_at("ret-save", "SigmoidBackward0")


def test_returned_tuple_gets_gradients() -> None:
    weight = torch.randn(3, requires_grad=True)

    def forward_only() -> Any:
        return [weight * 2, (weight.exp(),)]

    report = trace_call(forward_only)
    assert report["status"] == "ok"
    assert weight.grad is not None
    assert torch.allclose(weight.grad, 2 + weight.detach().exp())


def test_no_second_backward_when_fn_did_it() -> None:
    weight = torch.randn(3, requires_grad=True)

    def trains() -> Any:
        out = weight.exp()
        out.sum().backward()
        return out

    report = trace_call(trains)
    assert report["status"] == "ok", report
    assert torch.allclose(weight.grad, weight.detach().exp())


def test_tracing_does_not_change_gradients() -> None:
    """Double backward and checkpointing (which installs its own saved-tensor hooks) give
    bit-identical gradients with and without tracing."""
    from torch.utils.checkpoint import checkpoint

    def make() -> tuple[Any, Any]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        return model, torch.randn(5, 4, requires_grad=True)

    def run(model: Any, x: Any) -> None:
        y = model(x)
        (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        z = checkpoint(lambda t: torch.sigmoid(model(t)), x, use_reentrant=False).sum()
        (y.pow(2).mean() + g.pow(2).sum() + z).backward()

    plain_model, plain_x = make()
    run(plain_model, plain_x)
    traced_model, traced_x = make()
    assert trace_call(lambda: run(traced_model, traced_x))["status"] == "ok"
    assert torch.equal(plain_x.grad, traced_x.grad)
    for plain, traced in zip(plain_model.parameters(), traced_model.parameters(), strict=True):
        assert torch.equal(plain.grad, traced.grad)


# --------------------------------------------------------------------------- ok cases


def linear_then_iadd() -> None:
    fc1, fc2 = nn.Linear(4, 8), nn.Linear(8, 1)
    h = fc1(torch.randn(2, 4))
    h += 2
    fc2(h).sum().backward()


def batchnorm_then_iadd() -> None:
    conv, bn = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
    x = torch.randn(2, 3, 5, 5)
    out = bn(conv(x))
    out += conv(x)
    out = F.relu(out, inplace=True)
    out.sum().backward()


@pytest.mark.parametrize("fn", [linear_then_iadd, batchnorm_then_iadd])
def test_safe_inplace_is_ok(fn: Any) -> None:
    report = trace_call(fn)
    assert_json_shape(report)
    assert report["status"] == "ok", report
    assert report["mutation"] is None
    assert report["saved_by"] is None
    assert report["related"] == []
    assert report["exception"] is None


def unreached_saved_tensor() -> None:
    x = torch.randn(3, requires_grad=True)
    side = torch.sigmoid(x)  # @side-save
    side += 1  # @side-write
    (x * 2).sum().backward()


def test_bump_backward_never_reaches_is_a_related_warning() -> None:
    report = trace_call(unreached_saved_tensor)
    assert report["status"] == "ok"
    assert report["mutation"] is None and report["saved_by"] is None
    assert len(report["related"]) == 1
    warning = report["related"][0]
    assert {"path": warning["path"], "line": warning["line"]} == at("side-write")
    assert "SigmoidBackward0" in warning["message"]
    assert f":{line_of('side-save')}" in warning["message"]


# --------------------------------------------------------------------------- other statuses


def leaf_update() -> None:
    w = torch.randn(3, requires_grad=True)
    w -= 1  # @leaf-write


def test_leaf_error() -> None:
    report = trace_call(leaf_update)
    assert report["status"] == "leaf-error"
    assert report["mutation"] == at("leaf-write")
    assert report["saved_by"] is None
    assert "a leaf Variable that requires grad" in report["exception"]


def raises_value_error() -> None:
    raise ValueError("bad shape\nsecond line")  # @raise


def test_generic_exception_is_error() -> None:
    report = trace_call(raises_value_error)
    assert_json_shape(report)
    assert report["status"] == "error"
    assert report["message"] == "bad shape"
    assert report["exception"] == "ValueError: bad shape\nsecond line"
    assert report["mutation"] is None and report["saved_by"] is None
    assert report["related"] == [{**at("raise"), "message": "raised here"}]


def test_anomaly_flag() -> None:
    seen: list[bool] = []

    def probe() -> None:
        seen.append(torch.is_anomaly_enabled())
        sigmoid_then_iadd()

    with_anomaly = trace_call(probe)
    without = trace_call(probe, anomaly=False)
    assert seen == [True, False]
    assert "Good luck!" in with_anomaly["exception"]
    assert "enable anomaly detection" in without["exception"]
    assert not torch.is_anomaly_enabled()


def test_error_text_matches_torch() -> None:
    """The harness re-does torch's version check (hooks switch it off): same words."""

    def input_saved_then_written() -> None:
        x = torch.randn(3, 4, requires_grad=True)
        h = x * 1
        y = h * x
        h[0] += 1
        y.sum().backward()

    for fn in (sigmoid_then_iadd, input_saved_then_written, write_into_linear_input):
        with pytest.raises(RuntimeError) as real:
            with torch.autograd.set_detect_anomaly(True, check_nan=False):
                fn()
        report = trace_call(fn)
        assert report["exception"] == f"RuntimeError: {real.value}"


def test_user_files_restricts_frames() -> None:
    report = trace_call(sigmoid_then_iadd, user_files=[__file__])
    assert report["mutation"] == at("sig-iadd")
    elsewhere = trace_call(sigmoid_then_iadd, user_files=["/nonexistent/model.py"])
    assert elsewhere["status"] == "inplace-error"
    assert elsewhere["mutation"] is None and elsewhere["saved_by"] is None


# --------------------------------------------------------------------------- no leaks


def _global_state() -> tuple[object, ...]:
    from torch.nn.modules import module as module_mod

    return (
        nn.Module.__init__,
        torch._C._len_torch_function_stack(),
        torch.is_anomaly_enabled(),
        torch.is_anomaly_check_nan_enabled(),
        len(module_mod._global_forward_hooks),
        len(module_mod._global_forward_pre_hooks),
        torch.is_grad_enabled(),
    )


def _engine_checks_versions() -> bool:
    """True when no saved-tensor hooks are left installed (they disable torch's check)."""
    x = torch.randn(3, requires_grad=True)
    h = torch.sigmoid(x)
    h += 1
    try:
        h.sum().backward()
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize(
    "fn", [sigmoid_then_iadd, inplace_module_on_saved, leaf_update, raises_value_error]
)
def test_nothing_left_patched(fn: Any) -> None:
    before = _global_state()
    first = trace_call(fn)
    second = trace_call(fn)
    assert _global_state() == before
    assert _engine_checks_versions()
    assert {k: v for k, v in first.items() if k != "duration_s"} == {
        k: v for k, v in second.items() if k != "duration_s"
    }


def test_nothing_left_patched_when_fn_exits_inside_no_grad() -> None:
    def bails() -> None:
        with torch.no_grad():
            raise SystemExit(3)

    before = _global_state()
    report = trace_call(bails)
    assert report["status"] == "error"
    assert _global_state() == before


# --------------------------------------------------------------------------- as a script


def test_main_prints_one_json_line(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    target.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            print("noise on stdout while importing")
            ACT = nn.ReLU(inplace=True)  # constructed at import time


            def train():
                print("noise on stdout while training")
                x = torch.randn(3, requires_grad=True)
                h = torch.sigmoid(x)
                ACT(h)
                h.sum().backward()
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(HARNESS_FILE), str(target), "train"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    report = json.loads(lines[0])
    path = os.path.normcase(str(target.resolve()))
    assert report["status"] == "inplace-error"
    assert report["mutation"] == {"path": path, "line": 6}
    assert report["saved_by"] == {"path": path, "line": 12, "op": "SigmoidBackward0"}
    assert report["related"] == [{"path": path, "line": 13, "message": "called here"}]


def test_main_usage_error() -> None:
    assert harness.main([]) == 2


# --------------------------------------------------------------------------- `.data` writes


def data_write_on_saved_output() -> None:
    x = torch.randn(4, requires_grad=True)
    y = x.exp()  # @data-save
    y.data.mul_(2)  # @data-write
    y.sum().backward()


def data_view_write_on_saved_output() -> None:
    x = torch.randn(4, requires_grad=True)
    y = x.exp()  # @data-view-save
    y.data.view(2, 2)[0] = 1  # @data-view-write
    y.sum().backward()


def data_write_backward_does_not_use() -> None:
    x = torch.randn(4, requires_grad=True)
    y = x.exp()  # @data-unused-save
    z = y.detach() * 1  # a copy that backward never reads
    y.data.add_(1)  # @data-unused-write
    (z + x).sum().backward()


def data_write_elsewhere_in_the_storage() -> None:
    buffer = torch.randn(8, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    y = buffer * 2
    kept = y[:4] * w  # saves the view y[:4]: the first half of y's memory
    y.data[4:].zero_()  # the second half
    kept.sum().backward()


@pytest.mark.parametrize(
    ("fn", "write", "save"),
    [
        (data_write_on_saved_output, "data-write", "data-save"),
        (data_view_write_on_saved_output, "data-view-write", "data-view-save"),
    ],
)
def test_a_data_write_that_backward_reads_is_a_silent_inplace_error(
    fn: Any, write: str, save: str
) -> None:
    """torch raises nothing (`.data` has its own version counter) and the gradient is wrong;
    the harness sees the write into the saved tensor's memory and says so instead of ok."""
    report = trace_call(fn)
    assert_json_shape(report)
    assert (report["status"], report.get("silent")) == ("inplace-error", True), report
    assert report["mutation"] == at(write)
    assert report["saved_by"] == saved_at(save, "ExpBackward0")
    assert "silently wrong" in report["message"] and report["exception"] is None


def test_a_data_write_that_backward_does_not_read_is_a_warning() -> None:
    report = trace_call(data_write_backward_does_not_use)
    assert (report["status"], report.get("silent")) == ("ok", None), report
    (warning,) = report["related"]
    assert warning["line"] == line_of("data-unused-write")
    assert "`.data`" in warning["message"] and "did not use it" in warning["message"]


def test_a_data_write_beside_a_saved_tensor_is_ok() -> None:
    report = trace_call(data_write_elsewhere_in_the_storage)
    assert (report["status"], report["related"]) == ("ok", []), report


# --------------------------------------------------------------------------- lines run


def branchy(a: int, mask: object = None) -> int:
    b = a + 1  # @cov-first
    if mask is not None:  # @cov-if
        b = b * 2  # @cov-masked
    return b  # @cov-last


@pytest.mark.parametrize(
    "monitoring",
    [
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+"
            ),
        ),
        False,
    ],
    ids=["sys.monitoring", "settrace"],
)
def test_lines_run_records_the_target_file_only(monitoring: bool) -> None:
    first, last = line_of("cov-first"), line_of("cov-last")
    recorder = harness._LinesRun(__file__, first, last, monitoring=monitoring)
    with recorder:
        branchy(1)
        branchy(2)  # twice: each line once
    assert recorder.lines() == [first, line_of("cov-if"), last]
    with harness._LinesRun(__file__, first, last, monitoring=monitoring) as again:
        branchy(1, mask=True)  # a second run in the same process sees every line again
    assert again.lines() == [first, line_of("cov-if"), line_of("cov-masked"), last]
    assert sys.gettrace() is None or monitoring is False


def test_trace_call_reports_lines_run_when_asked() -> None:
    first, last = line_of("cov-first"), line_of("cov-last")

    def run() -> None:
        x = torch.randn(3, requires_grad=True)
        branchy(1)
        x.exp().sum().backward()

    report = trace_call(run, coverage=(__file__, first, last, [line_of("cov-masked")]))
    assert report["lines_run"] == [first, line_of("cov-if"), last]
    assert "lines_run" not in trace_call(run)


def test_settrace_stops_once_every_watched_line_ran() -> None:
    """A trace function slows every frame: it goes as soon as the watched lines ran."""
    first, last = line_of("cov-first"), line_of("cov-last")
    with harness._LinesRun(__file__, first, last, monitoring=False, watch=[first]) as recorder:
        branchy(1)
        assert sys.gettrace() is None
        branchy(1, mask=True)  # not recorded any more
    assert recorder.lines() == [first]


def test_lines_run_is_unknown_when_the_users_code_takes_the_tracer() -> None:
    first, last = line_of("cov-first"), line_of("cov-last")
    with harness._LinesRun(__file__, first, last, monitoring=False, watch=[last]) as recorder:
        sys.settrace(None)  # a user's own debugger set-up, say
        branchy(1)
    assert recorder.lines() is None  # never "did not run" for lines it could not see


def test_warnings_lose_the_harness_frames_and_location(capsys: pytest.CaptureFixture[str]) -> None:
    forward = (
        "Error detected in MulBackward0. Traceback of forward call that caused the error:\n"
        f'  File "{HARNESS_FILE}", line 10, in run\n'
        "    output = model(x)\n"
        f'  File "{THIS_FILE}", line 3, in forward\n'
        "    h = x * 2\n"
    )

    def plain(message: Any, category: Any, filename: str, lineno: int, *rest: Any) -> None:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, ""))

    with warnings.catch_warnings():  # as outside pytest: shown on stderr
        warnings.simplefilter("always")
        warnings.showwarning = plain
        with harness._t.own_frames_hidden():
            warnings.warn_explicit(forward, UserWarning, "/torch/graph.py", 9)
            warnings.warn_explicit("from backward()", UserWarning, str(HARNESS_FILE), 12)
    err = capsys.readouterr().err
    assert str(HARNESS_FILE) not in err, err
    assert f'File "{THIS_FILE}", line 3, in forward\n    h = x * 2' in err
    assert "/torch/graph.py:9: UserWarning: Error detected in MulBackward0" in err
    assert "UserWarning: from backward()" in err


def sparse_saved_and_data_written() -> None:
    indices = torch.tensor([[0, 1], [1, 0]])
    sparse = torch.sparse_coo_tensor(indices, torch.ones(2), (2, 2), requires_grad=True)
    w = torch.randn(2, 2, requires_grad=True)
    out = torch.sparse.mm(sparse, w)  # saves a sparse tensor: it has no storage to compare
    w.data.mul_(1)  # a `.data` alias in play, so writes are matched by storage
    out.sum().backward()


def test_tensors_without_storage_do_not_break_the_run() -> None:
    report = trace_call(sparse_saved_and_data_written)
    assert report["status"] in ("ok", "inplace-error"), report
    assert report["exception"] is None or "storage" not in report["exception"], report
