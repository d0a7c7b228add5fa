"""What docs/rules.md and the messages claim, run under the real torch.

The rules' VALID and INVALID examples, which docs/rules.md shows:
what the docs call valid runs forward and backward, and an INVALID example the analysis calls
an error fails with torch's in-place, leaf or refused-write error.

Each example is executed as a module; then every nn.Module subclass it defines is built with no
arguments (or those of its `example_args()`, as verify builds it) and called on the input
verify synthesizes for it (`torch.randn(2, 4)` where verify cannot tell), and every function
is called on `torch.randn(2, 4)` tensors; inputs require grad, the output is summed and
backpropagated. Examples whose functions need other arguments (a
model, a data loader) are run as far as their module-level code goes and listed in
`NOT_CALLABLE`, so none is skipped silently.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Severity
from inplace_lsp.analysis.rules import RULES
from inplace_lsp.analysis.rules.ipl007_step_before_backward import StepBeforeBackward
from inplace_lsp.verify import targets

try:
    from casefile import outcome_of_error
except ImportError:  # tests/ imported as a package
    from tests.casefile import outcome_of_error

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# Functions of examples that take things other than tensors, and why they are not called.
NOT_CALLABLE = {("IPL004", "train"): "takes a model, a data loader and an optimizer"}


def _examples() -> Iterator[Any]:
    for rule in RULES:
        for i, code in enumerate(rule.VALID):
            yield pytest.param(rule.CODE, "valid", code, id=f"{rule.CODE}-valid-{i}")
        for i, example in enumerate(rule.INVALID):
            yield pytest.param(rule.CODE, "invalid", example.code, id=f"{rule.CODE}-invalid-{i}")


def _backward(output: Any) -> None:
    tensors = output if isinstance(output, (tuple, list)) else (output,)
    total = sum(t.sum() for t in tensors if isinstance(t, torch.Tensor) and t.requires_grad)
    if isinstance(total, torch.Tensor):
        total.backward()


def _input_shape(code: str, line: int) -> list[int]:
    try:
        spec = targets.find_target(code, line)
    except targets.VerifyError:
        return [2, 4]
    for candidate in spec["inputs"]["candidates"]:
        args = candidate["args"]
        if len(args) == 1 and args[0].get("tensor") == "randn":
            return [int(n) for n in args[0]["shape"]]
    return [2, 4]


def _outcome(code: str, rule: str) -> str:
    """ "ok" or an error outcome of tests/casefile.py: what running the example does."""
    namespace: dict[str, Any] = {"__name__": f"example_{rule}"}
    anomaly = torch.is_anomaly_enabled()
    try:
        exec(compile(code, f"<{rule} example>", "exec"), namespace)
        for name, value in list(namespace.items()):
            if getattr(value, "__module__", None) != namespace["__name__"]:
                continue
            if (rule, name) in NOT_CALLABLE:
                continue
            if inspect.isclass(value) and issubclass(value, torch.nn.Module):
                shape = _input_shape(code, _definitions(code)[name])
                # Built as verify builds it: with example_args() where the class has one.
                made = value(*value.example_args()) if hasattr(value, "example_args") else value()
                _backward(made(torch.randn(shape, requires_grad=True)))
            elif inspect.isfunction(value):
                count = len(inspect.signature(value).parameters)
                _backward(value(*(torch.randn(2, 4, requires_grad=True) for _ in range(count))))
    except RuntimeError as exc:
        outcome = outcome_of_error(str(exc))
        if outcome is None:
            raise
        return outcome
    finally:
        torch.autograd.set_detect_anomaly(anomaly)
    return "ok"


@pytest.mark.parametrize(("rule", "kind", "code"), list(_examples()))
def test_example_does_what_the_docs_say(rule: str, kind: str, code: str) -> None:
    outcome = _outcome(code, rule)
    if kind == "valid":
        assert outcome == "ok"
        return
    severities = {f.severity for f in analyze(code) if f.code == rule}
    if Severity.ERROR in severities:
        assert outcome != "ok", "an Error finding on code that runs"


def test_not_callable_list_is_current() -> None:
    names = {
        (rule.CODE, name)
        for rule in RULES
        for code in (*rule.VALID, *(e.code for e in rule.INVALID))
        for name in _definitions(code)
    }
    assert set(NOT_CALLABLE) <= names


def _definitions(code: str) -> dict[str, int]:
    """Top-level classes and functions of an example, with their lines."""
    return {
        n.name: n.lineno
        for n in ast.parse(code).body
        if isinstance(n, (ast.ClassDef, ast.FunctionDef))
    }


GAN = """\
import torch
import torch.nn as nn

def step(order):
    torch.manual_seed(0)
    g = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    d = nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    opt_g = torch.optim.SGD(g.parameters(), lr=0.5)
    opt_d = torch.optim.SGD(d.parameters(), lr=0.5)
    bce = nn.BCEWithLogitsLoss()
    real, fake = torch.randn(6, 3), g(torch.randn(6, 4))
    d_fake = d(fake)
    d_loss = bce(d(real), torch.ones(6, 1)) + bce(d(fake.detach()), torch.zeros(6, 1))
    g_loss = bce(d_fake, torch.ones(6, 1))
    opt_d.zero_grad()
    d_loss.backward()
    if order == "as written":
        opt_d.step()  # the IPL007 line
    elif order == "step moved after the other backward":
        g_loss.backward()
        opt_d.step()
    elif order == "recomputed after the step":
        opt_d.step()
        g_loss = bce(d(fake), torch.ones(6, 1))
    if order != "step moved after the other backward":
        opt_g.zero_grad()
        g_loss.backward()
    opt_g.step()
    return [p.detach().clone() for p in d.parameters()]
"""


def test_step_before_backward_advice() -> None:
    """IPL007's message: recomputing the call that built the graph after the step runs and
    trains the discriminator on its own loss only; moving the step after the generator's
    backward() (what the rule's documentation says not to do with two optimizers) runs too,
    but mixes the generator's loss into the discriminator's step."""
    (finding,) = [f for f in analyze(GAN) if f.code == "IPL007"]
    assert finding.message.endswith("Recompute `d(fake)` after this step.")
    assert len(finding.message) <= 200  # two lines of an editor's hover
    assert "do not move the step after the other backward()" in " ".join(
        (StepBeforeBackward.__doc__ or "").split()
    )
    namespace: dict[str, Any] = {}
    exec(compile(GAN, "<gan>", "exec"), namespace)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        namespace["step"]("as written")
    recomputed = namespace["step"]("recomputed after the step")
    moved = namespace["step"]("step moved after the other backward")
    difference = max((a - b).abs().max().item() for a, b in zip(recomputed, moved, strict=True))
    assert difference > 1e-3, "moving the step would not change the discriminator's weights"
