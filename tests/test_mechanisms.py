"""Semantics the analysis carries into code shaped unlike its corpus (issue 39), each checked
against what torch does when the program runs: a train.py whose losses come back in a dict from
a helper of another file, guards on `requires_grad` and grad mode, paths of one branch that no
run takes together, layers the analysis cannot read (a Warning that names them), and parameters
frozen on some paths only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from inplace_lsp.analysis.engine import DocumentAnalysis, analyze
from inplace_lsp.analysis.findings import Finding, Severity
from inplace_lsp.analysis.workspace import Workspace

MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return {"out": torch.sigmoid(self.fc(x)), "aux": self.fc(x)}


def compute_losses(outputs):
    return {"main": outputs["out"].sum(), "aux": outputs["aux"].pow(2).sum()}
"""

TRAIN = """\
import torch
from model import Net, compute_losses

net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(2):
    outputs = net(torch.randn(2, 4))
    outputs["out"] += 1
    losses = compute_losses(outputs)
    loss = losses["main"] + losses["aux"]
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

GUARDS = """\
import torch
import torch.nn as nn


class Swish(nn.Module):
    def forward(self, x):
        if x.requires_grad:
            return x * torch.sigmoid(x)
        return x.mul_(torch.sigmoid(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = Swish()

    def forward(self, x):
        return self.act(torch.tanh(self.fc(x)))


def scale(x):
    if torch.is_grad_enabled():
        return x * 2
    return x.mul_(2)


def swish_(x):
    if not x.requires_grad:
        return x.mul_(torch.sigmoid(x))
    return x * torch.sigmoid(x)


Net()(torch.randn(2, 4)).sum().backward()
with torch.no_grad():
    Net()(torch.randn(2, 4))
y = torch.tanh(torch.randn(3, requires_grad=True))
scale(y).sum().backward()
swish_(torch.tanh(torch.randn(3, requires_grad=True))).sum().backward()
"""


def _run(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, script.name],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _errors(findings: list[Finding]) -> set[int]:
    return {f.span.line for f in findings if f.severity is Severity.ERROR}


@pytest.mark.torch
def test_losses_in_a_dict_from_a_helper_of_another_file(tmp_path: Path) -> None:
    """The write into the dict the forward returned is an Error with the sigmoid in model.py
    as its save, though the loss reaches backward() through `compute_losses` of that file."""
    pytest.importorskip("torch")
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    train = tmp_path / "train.py"
    train.write_text(TRAIN, encoding="utf-8")
    ran = _run(train)
    assert "modified by an inplace operation" in ran.stderr, ran.stderr
    workspace = Workspace(tmp_path, use_jedi=False)
    analysis = DocumentAnalysis(path=str(train), workspace=workspace)
    findings = analysis.update(TRAIN).findings
    (error,) = [f for f in findings if f.severity is Severity.ERROR]
    assert error.span.line == 8 and error.code == "IPL001", findings
    assert any(r.path == str(tmp_path / "model.py") and r.span.line == 11 for r in error.related)


@pytest.mark.torch
def test_a_requires_grad_guard_is_judged_in_the_mode_it_runs_in(tmp_path: Path) -> None:
    """An in-place branch taken only where nothing records (`if x.requires_grad:` / else,
    `torch.is_grad_enabled()`, an early return) is no finding: torch runs it."""
    pytest.importorskip("torch")
    script = tmp_path / "guards.py"
    script.write_text(GUARDS, encoding="utf-8")
    ran = _run(script)
    assert ran.returncode == 0, ran.stderr
    findings = analyze(GUARDS, str(script))
    assert not [f for f in findings if f.severity in (Severity.ERROR, Severity.WARNING)], findings


def test_the_unguarded_write_is_still_an_error() -> None:
    """Without the guard, the same write into tanh's output is the Error torch raises."""
    text = GUARDS.replace(
        "        if x.requires_grad:\n            return x * torch.sigmoid(x)\n", "", 1
    )
    line = text.splitlines().index("        return x.mul_(torch.sigmoid(x))") + 1
    assert line in _errors(analyze(text, "unguarded.py"))


def test_a_layer_the_analysis_cannot_read_is_a_warning_that_names_it() -> None:
    """`self.act` built by a function of a package that is not there: what `h += x` does rests
    on whether that layer keeps its output, and the Warning says so; no Hint says safe."""
    text = textwrap.dedent(
        """\
        import torch.nn as nn
        from activations import make_act


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.act = make_act("silu")

            def forward(self, x):
                h = self.act(self.fc(x))
                h += x
                return h
        """
    )
    findings = analyze(text, "block.py")
    (warning,) = [f for f in findings if f.severity is Severity.WARNING]
    assert warning.span.line == 13 and warning.code == "IPL001"
    assert "`self.act` may keep its output" in warning.message
    assert "fails if `self.act` keeps it" in warning.message
    assert not [f for f in findings if f.severity is Severity.HINT]
    known = text.replace('make_act("silu")', "nn.Identity()")
    assert not [f for f in analyze(known, "block.py") if f.severity is not Severity.HINT]


def test_a_layer_of_unknown_name_in_a_sequential_is_kept_in_its_place() -> None:
    """`getattr(nn, name)()` of a name the analysis does not know, collected with the conv
    into an nn.Sequential: the write after it is a Warning, not "checked: safe"."""
    text = textwrap.dedent(
        """\
        import torch.nn as nn
        from config import ACTIVATION


        class Block(nn.Module):
            def __init__(self, activation):
                super().__init__()
                self.block = nn.Sequential(nn.Conv2d(3, 3, 1), getattr(nn, activation)())

            def forward(self, x):
                y = self.block(x)
                y += x
                return y


        block = Block(ACTIVATION)
        """
    )
    findings = analyze(text, "block.py")
    assert [(f.span.line, f.severity) for f in findings if f.span.line == 12] == [
        (12, Severity.WARNING)
    ], findings
    assert "a layer of `self.block`" in next(f.message for f in findings if f.span.line == 12)


def test_a_parameter_frozen_on_some_paths_is_a_warning_on_its_write() -> None:
    """`if freeze: emb.weight.requires_grad = False` with `freeze` from the command line:
    the later `copy_` into the weight raises where it still requires grad."""
    text = textwrap.dedent(
        """\
        import sys
        import torch
        import torch.nn as nn


        class M(nn.Module):
            def __init__(self, freeze):
                super().__init__()
                self.emb = nn.Embedding(10, 4)
                if freeze:
                    self.emb.weight.requires_grad = False


        model = M(len(sys.argv) > 1)
        model.emb.weight.copy_(torch.zeros(10, 4))
        """
    )
    findings = analyze(text, "m.py")
    (warning,) = [f for f in findings if f.code == "IPL002"]
    assert warning.severity is Severity.WARNING and warning.span.line == 15
    assert "turns off on some paths only" in warning.message
    frozen = text.replace("M(len(sys.argv) > 1)", "M(True)")
    assert not [f for f in analyze(frozen, "m.py") if f.code == "IPL002"]
    trained = text.replace("M(len(sys.argv) > 1)", "M(False)")
    assert [f.severity for f in analyze(trained, "m.py") if f.code == "IPL002"] == [Severity.ERROR]


def test_a_parameter_frozen_and_written_on_the_same_path_is_no_finding() -> None:
    """transformers' `prune_linear_layer`: inside `if layer.bias is not None:` the bias is
    frozen, copied into and unfrozen; no path writes it while it requires grad."""
    text = textwrap.dedent(
        """\
        import torch.nn as nn


        def prune_linear_layer(layer, index):
            b = layer.bias[index].detach().clone()
            new_layer = nn.Linear(layer.in_features, len(index))
            if layer.bias is not None:
                new_layer.bias.requires_grad = False
                new_layer.bias.copy_(b.contiguous())
                new_layer.bias.requires_grad = True
            return new_layer
        """
    )
    assert not [f for f in analyze(text, "prune.py") if f.code == "IPL002"]
    unfrozen = text.replace("        new_layer.bias.requires_grad = False\n", "")
    assert [f.severity for f in analyze(unfrozen, "prune.py") if f.code == "IPL002"] == [
        Severity.ERROR
    ]
