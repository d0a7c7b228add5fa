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


def _run(script: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, script.name, *argv],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _errors(findings: list[Finding]) -> set[int]:
    return {f.span.line for f in findings if f.severity is Severity.ERROR}


MODIFIED = "modified by an inplace operation"
SECOND_TIME = "backward through the graph a second time"


def _ran_and_found(
    text: str, script: Path, error: str
) -> tuple[bool, list[tuple[str, Severity, int]]]:
    """Whether torch stops with `error` running `text` as `script`, and what the analysis
    finds there but Hints, as (code, severity, line)."""
    script.write_text(text, encoding="utf-8")
    failed = error in _run(script).stderr
    found: list[tuple[str, Severity, int]] = [
        (f.code, f.severity, f.span.line)
        for f in analyze(text, str(script))
        if f.severity is not Severity.HINT
    ]
    return failed, found


def _as_torch_says(text: str, script: Path, error: str, code: str, line: int) -> bool:
    """Whether torch stops with `error` running `text`; the analysis says so with one Error
    (`code` at `line`) and nothing else but Hints, or, where torch runs, says nothing."""
    broken, found = _ran_and_found(text, script, error)
    assert found == ([(code, Severity.ERROR, line)] if broken else [])
    return broken


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


# Each: a program torch breaks on the line marked `# error`, and its fix (the `# fix:` lines'
# replacements), which torch runs. The analysis must give the marked line an Error and the fix
# none.
BROKEN_AND_FIXED = {
    "layers set and looked up by a spelled name": (
        """\
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self, n=2):
                super().__init__()
                self.n = n
                for i in range(n):
                    setattr(self, f"layer{i}", nn.Linear(4, 4))

            def forward(self, x):
                for i in range(self.n):
                    x = torch.sigmoid(getattr(self, f"layer{i}")(x))
                    x *= 2  # error
                return x


        Net()(torch.randn(2, 4)).sum().backward()
        """,
        ("x *= 2  # error", "x = x * 2"),
        "modified by an inplace operation",
    ),
    "tensors wrapped in Variable, as torch < 0.4 code does": (
        """\
        import torch
        from torch.autograd import Variable

        x = Variable(torch.randn(3, 4), requires_grad=True)
        w = Variable(torch.randn(4, 2), requires_grad=True)
        y = torch.sigmoid(x.mm(w))
        y[y > 0.5] = 1.0  # error
        y.sum().backward()
        """,
        ("y[y > 0.5] = 1.0  # error", "y = y.masked_fill(y > 0.5, 1.0)"),
        "modified by an inplace operation",
    ),
    "a script that drives a trainer subclass": (
        """\
        import torch
        import torch.nn as nn


        class BaseTrainer:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

            def train_step(self, x, y):
                loss = self.compute_loss(x, y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()


        class MyTrainer(BaseTrainer):
            def compute_loss(self, x, y):
                out = torch.sigmoid(self.model(x))
                out += 0.1  # error
                return (out - y).pow(2).mean()


        trainer = MyTrainer(nn.Linear(3, 1))
        trainer.train_step(torch.randn(4, 3), torch.randn(4, 1))
        """,
        ("out += 0.1  # error", "out = out + 0.1"),
        "modified by an inplace operation",
    ),
    "layers of a Sequential given by name": (
        """\
        from collections import OrderedDict

        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    OrderedDict([("fc1", nn.Linear(4, 4)), ("act", nn.Tanh())])
                )
                self.head = nn.Linear(4, 1)

            def forward(self, x):
                h = self.features(x)
                h[:, 0] = 0  # error
                return self.head(h)


        Net()(torch.randn(2, 4)).sum().backward()
        """,
        ("h[:, 0] = 0  # error", "h = torch.cat([torch.zeros_like(h[:, :1]), h[:, 1:]], 1)"),
        "modified by an inplace operation",
    ),
    "grad mode set off by a call, not a with": (
        """\
        import torch
        import torch.nn as nn

        net = nn.Linear(3, 3)
        torch.set_grad_enabled(True)
        net.weight.mul_(0.5)  # error
        torch.set_grad_enabled(True)
        net(torch.randn(2, 3)).sum().backward()
        """,
        ("torch.set_grad_enabled(True)\nnet.weight", "torch.set_grad_enabled(False)\nnet.weight"),
        "leaf Variable that requires grad",
    ),
    "a layer looked up by a spelled name": (
        """\
        import torch
        import torch.nn as nn


        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.n_layers = 2
                self.fc0 = nn.Linear(4, 4)
                self.fc1 = nn.Linear(4, 4)

            def forward(self, x):
                for i in range(self.n_layers):
                    x = torch.sigmoid(getattr(self, "fc%d" % i)(x))
                    x *= 2  # error
                return x


        MLP()(torch.randn(2, 4)).sum().backward()
        """,
        ("x *= 2  # error", "x = x * 2"),
        "modified by an inplace operation",
    ),
    "a subclass of a torch.nn layer writes its own weight": (
        """\
        import torch
        import torch.nn as nn


        class WSConv2d(nn.Conv2d):
            def forward(self, x):
                w = self.weight
                w.sub_(w.mean(dim=(1, 2, 3), keepdim=True))  # error
                return nn.functional.conv2d(x, w, self.bias)


        conv = WSConv2d(3, 4, 3)
        conv(torch.randn(1, 3, 8, 8)).sum().backward()
        """,
        (
            "w.sub_(w.mean(dim=(1, 2, 3), keepdim=True))",
            "w = w - w.mean(dim=(1, 2, 3), keepdim=True)",
        ),
        "leaf Variable",
    ),
    "an RNN parameter named by an f-string": (
        """\
        import torch
        import torch.nn as nn


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(4, 8, num_layers=2)
                for i in range(self.rnn.num_layers):
                    getattr(self.rnn, f"bias_hh_l{i}").chunk(4)[1].fill_(1)  # error

            def forward(self, x):
                return self.rnn(x)[0]


        Encoder()(torch.randn(5, 2, 4)).sum().backward()
        """,
        (
            "        for i in range(self.rnn.num_layers):",
            "        with torch.no_grad():\n          for i in range(self.rnn.num_layers):",
        ),
        "is a view and is being modified inplace",
    ),
    "a model built by name from a class namespace and an untaken wrapper": (
        """\
        import torch
        import torch.nn as nn


        class D(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.fc = nn.Linear(n, 1)

            def forward(self, x):
                return self.fc(x)


        class backbone:
            D = D


        class GAN(nn.Module):
            def __init__(self, params, dist_model=False):
                super().__init__()
                self.g = nn.Linear(4, 4)
                self.d = backbone.__dict__[params["d"]](**params["d_params"])
                if dist_model:
                    self.d = nn.parallel.DistributedDataParallel(self.d)
                self.og = torch.optim.Adam(self.g.parameters())
                self.od = torch.optim.Adam(self.d.parameters())

            def step(self, z):
                fake = self.g(z)
                d_loss = self.d(fake.detach()).mean()
                g_loss = -self.d(fake).mean()
                self.od.zero_grad()
                d_loss.backward()
                self.od.step()  # error
                self.og.zero_grad()
                g_loss.backward()
                self.og.step()


        GAN({"d": "D", "d_params": {"n": 4}}).step(torch.randn(3, 4))
        """,
        ("self.og.zero_grad()", "g_loss = -self.d(fake).mean()\n        self.og.zero_grad()"),
        "modified by an inplace operation",
    ),
    "losses in a dict rewritten key by key": (
        """\
        import torch
        import torch.nn as nn

        G, D = nn.Linear(4, 4), nn.Linear(4, 1)
        opt_g = torch.optim.Adam(G.parameters())
        opt_d = torch.optim.Adam(D.parameters())


        def forward(x):
            fake = G(x)
            return {"d": D(fake.detach()).mean(), "g": -D(fake).mean()}


        losses = forward(torch.randn(3, 4))
        for k in losses.keys():
            losses[k] = torch.mean(losses[k])
        opt_d.zero_grad()
        losses["d"].backward()
        opt_d.step()  # error
        opt_g.zero_grad()
        losses["g"].backward()
        opt_g.step()
        """,
        ('"g": -D(fake).mean()', '"g": -D(fake.detach()).mean() * G(x).mean()'),
        "modified by an inplace operation",
    ),
    "an activation built from a config dict (mmcv's ConvModule)": (
        """\
        import torch
        import torch.nn as nn


        class ConvModule(nn.Module):
            def __init__(self, cin, cout, act_cfg=dict(type="ReLU"), inplace=True):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout, 3, padding=1)
                act_cfg_ = act_cfg.copy()
                act_cfg_.setdefault("inplace", inplace)
                self.activate = getattr(nn, act_cfg_.pop("type"))(**act_cfg_)

            def forward(self, x):
                return self.activate(self.conv(x))


        class Neck(nn.Module):
            def __init__(self, act_cfg=dict(type="ReLU")):
                super().__init__()
                self.lateral = ConvModule(3, 4, act_cfg=act_cfg, inplace=False)
                self.top = ConvModule(3, 4, act_cfg=act_cfg, inplace=False)

            def forward(self, x):
                h = self.lateral(x)
                h += self.top(x)  # error
                return h


        neck = Neck(act_cfg=dict(type="ReLU"))
        losses = dict(loss_cls=neck(torch.randn(1, 3, 8, 8)).pow(2).mean())
        sum(losses.values()).backward()
        """,
        ("h += self.top(x)", "h = h + self.top(x)"),
        "modified by an inplace operation",
    ),
    "a save on each path of a flag, then the step before the backward that needs it": (
        """\
        import sys

        import torch
        import torch.nn as nn

        G, D = nn.Linear(4, 4), nn.Linear(4, 1)
        opt_g = torch.optim.Adam(G.parameters())
        opt_d = torch.optim.Adam(D.parameters())
        relativistic = len(sys.argv) > 1
        fake = G(torch.randn(3, 4))
        if relativistic:
            fake_score = D(fake) - D(torch.randn(3, 4)).mean()
        else:
            fake_score = D(fake)
        opt_d.zero_grad()
        fake_score.mean().backward(retain_graph=True)
        opt_d.step()  # error
        g_loss = -fake_score.mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        """,
        ("g_loss = -fake_score.mean()", "g_loss = -D(fake).mean()"),
        "modified by an inplace operation",
    ),
    "classes given to a namespace class at module level (a script's `model.Generator`)": (
        """\
        import torch
        import torch.nn as nn


        class model:
            pass


        class Discriminator(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 1)

            def forward(self, x):
                return self.fc(x)


        model.Discriminator = Discriminator
        G = nn.Linear(4, 4)
        model_d = model.Discriminator()
        opt_d = torch.optim.Adam(model_d.parameters())
        fake_tex = model_d(G(torch.randn(3, 4)))
        fake_tex.mean().backward(retain_graph=True)
        opt_d.step()  # error
        (-fake_tex.mean()).backward()
        """,
        ("(-fake_tex.mean()).backward()", "(-model_d(G(torch.randn(3, 4))).mean()).backward()"),
        "modified by an inplace operation",
    ),
    "a module that defines `__call__` instead of forward": (
        """\
        import torch
        import torch.nn as nn


        class USAM(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(1)
                self.relu = nn.ReLU()

            def __call__(self, x):
                att = self.relu(self.bn(x.sum(1, keepdim=True)))
                att[:, :, :, 0] = 0  # error
                return x + att * x


        USAM()(torch.randn(2, 3, 4, 4)).sum().backward()
        """,
        ("att[:, :, :, 0] = 0", "att = att.clone(); att[:, :, :, 0] = 0"),
        "modified by an inplace operation",
    ),
    "optimizers reached through a DataParallel's `.module`": (
        """\
        import torch
        import torch.nn as nn


        class GAN(nn.Module):
            def __init__(self):
                super().__init__()
                self.G, self.D = nn.Linear(4, 4), nn.Linear(4, 1)
                self.optimizer_D = torch.optim.Adam(self.D.parameters())
                self.optimizer_G = torch.optim.Adam(self.G.parameters())

            def forward(self, z):
                fake = self.G(z)
                return self.D(fake.detach()).mean(), -self.D(fake).mean()


        model = nn.DataParallel(GAN())
        loss_D, loss_G = model(torch.randn(3, 4))
        model.module.optimizer_D.zero_grad()
        loss_D.backward()
        model.module.optimizer_D.step()  # error
        model.module.optimizer_G.zero_grad()
        loss_G.backward()
        model.module.optimizer_G.step()
        """,
        ("loss_G.backward()", "model(torch.randn(3, 4))[1].backward()"),
        "modified by an inplace operation",
    ),
    "a value that requires grad written into a split's output": (
        """\
        import torch

        codebook = torch.randn(4, 3, requires_grad=True)
        distances = torch.zeros(4, 2)
        parts = torch.split(distances, 1, 1)
        for j in range(2):
            for k in range(4):
                parts[j][k] = torch.norm(codebook[k] - 1.0)  # error
        distances.sum().backward()
        """,
        ("parts[j][k] = ", "distances[k, j] = "),
        "modified inplace",
    ),
    "an in-place write into the output of a layer with a full backward hook (Grad-CAM)": (
        """\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))

            def forward(self, x):
                out = F.relu(self.features(x), inplace=True)  # error
                return out.mean()


        gradients = []
        model = Net()
        model.features[-1].register_full_backward_hook(lambda m, gi, go: gradients.append(go[0]))
        model(torch.randn(1, 3, 8, 8)).backward()
        """,
        ("inplace=True", "inplace=False"),
        "is a view and is being modified inplace",
    ),
    "a forward hook that makes a frozen embedding's output a leaf that requires grad": (
        """\
        import torch
        import torch.nn as nn

        emb = nn.Embedding(10, 4)
        emb.weight.requires_grad_(False)


        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)


        emb.register_forward_hook(make_inputs_require_grads)
        head = nn.Linear(4, 1)
        embeds = emb(torch.tensor([1, 2]))
        embeds += 1.0  # error
        head(embeds).sum().backward()
        """,
        ("embeds += 1.0", "embeds = embeds + 1.0"),
        "leaf Variable that requires grad",
    ),
    "saves on each path of a flag; the step and the backward under conditions of their own": (
        """\
        import sys

        import torch
        import torch.nn as nn

        G, D = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        opt_g = torch.optim.Adam(G.parameters())
        opt_d = torch.optim.Adam(D.parameters())
        ragan = len(sys.argv) > 1
        disc_freq = gen_freq = 1
        for iteration in range(1, 3):
            fake = G(torch.randn(3, 4))
            if ragan:
                fake_score = D(fake) - D(torch.randn(3, 4)).mean()
            else:
                fake_score = D(fake)
            if iteration % disc_freq == 0:
                opt_d.zero_grad()
                fake_score.mean().backward(retain_graph=True)
                opt_d.step()  # error
            if iteration % gen_freq == 0:
                g_loss = -fake_score.mean()
                opt_g.zero_grad()
                g_loss.backward()
                opt_g.step()
        """,
        ("g_loss = -fake_score.mean()", "g_loss = -D(fake).mean()"),
        "modified by an inplace operation",
    ),
    "an optimizer over a list of parameters built with += (two tiers, one step between)": (
        """\
        import torch
        import torch.nn as nn

        dim_reduction = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        attention = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1))
        u_classifier = nn.Linear(8, 2)
        trainable_parameters = []
        trainable_parameters += list(dim_reduction.parameters())
        trainable_parameters += list(attention.parameters())
        optimizer0 = torch.optim.Adam(trainable_parameters)
        optimizer1 = torch.optim.Adam(u_classifier.parameters())
        feats = dim_reduction(torch.randn(5, 4))
        weights = torch.softmax(attention(feats), dim=0)
        pseudo = (feats * weights).sum(0, keepdim=True)
        loss0 = weights.pow(2).sum()
        optimizer0.zero_grad()
        loss0.backward(retain_graph=True)
        optimizer0.step()  # error
        loss1 = u_classifier(pseudo).logsumexp(1).mean()
        optimizer1.zero_grad()
        loss1.backward()
        optimizer1.step()
        """,
        ("u_classifier(pseudo)", "u_classifier(pseudo.detach())"),
        "modified by an inplace operation",
    ),
    "masked_fill_ on an LSTM's output (float32: mkldnn's layer keeps it for backward)": (
        """\
        import torch
        import torch.nn as nn


        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(4, 4, batch_first=True)

            def forward(self, x, lengths):
                out, _ = self.rnn(x)
                mask = torch.arange(x.size(1))[None, :] >= lengths[:, None]
                out.masked_fill_(mask.unsqueeze(-1), 0.0)  # error
                return out


        Tagger()(torch.randn(2, 3, 4), torch.tensor([3, 2])).sum().backward()
        """,
        ("out.masked_fill_(", "out = out.masked_fill("),
        "modified by an inplace operation",
    ),
    "layers made by functools.partial (timm's act_layer / norm_layer defaults)": (
        """\
        from functools import partial

        import torch
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(
                self,
                dim,
                norm_layer=partial(nn.LayerNorm, eps=1e-6),
                act_layer=partial(nn.ReLU, inplace=True),  # error
            ):
                super().__init__()
                self.fc = nn.Linear(dim, dim)
                self.act = act_layer()
                self.norm = norm_layer(dim)

            def forward(self, x):
                return self.norm(self.act(torch.sigmoid(self.fc(x))))


        Block(4)(torch.randn(2, 4)).sum().backward()
        """,
        ("partial(nn.ReLU, inplace=True)", "partial(nn.ReLU, inplace=False)"),
        "modified by an inplace operation",
    ),
    "losses returned in a list, mapped and zipped with their names into a dict": (
        """\
        import torch
        import torch.nn as nn


        class Pix2Pix(nn.Module):
            def __init__(self):
                super().__init__()
                self.netG = nn.Linear(4, 4)
                self.netD = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
                self.loss_names = ["G_GAN", "D_real", "D_fake"]
                self.optimizer_D = torch.optim.Adam(self.netD.parameters())
                self.optimizer_G = torch.optim.Adam(self.netG.parameters())

            def forward(self, x, real):
                fake = self.netG(x)
                loss_D_fake = self.netD(fake.detach()).mean()
                loss_D_real = -self.netD(real).mean()
                loss_G_GAN = -self.netD(fake).mean()
                return [loss_G_GAN, loss_D_real, loss_D_fake]


        model = Pix2Pix()
        for _ in range(2):
            losses = model(torch.randn(3, 4), torch.randn(3, 4))
            losses = [torch.mean(x) if not isinstance(x, int) else x for x in losses]
            loss_dict = dict(zip(model.loss_names, losses))
            loss_D = (loss_dict["D_fake"] + loss_dict["D_real"]) * 0.5
            model.optimizer_D.zero_grad()
            loss_D.backward()
            model.optimizer_D.step()  # error
            model.optimizer_G.zero_grad()
            loss_dict["G_GAN"].backward()
            model.optimizer_G.step()
        """,
        (
            "model.optimizer_D.step()  # error\n"
            "    model.optimizer_G.zero_grad()\n"
            '    loss_dict["G_GAN"].backward()\n',
            "model.optimizer_G.zero_grad()\n"
            '    loss_dict["G_GAN"].backward()\n'
            "    model.optimizer_D.step()\n",
        ),
        "modified by an inplace operation",
    ),
}

# YOLO's Detect head: its inference branch decodes boxes in place, and `self.training |=
# self.export` reads a flag of the class body.
DETECT = """\
import torch
import torch.nn as nn


class Detect(nn.Module):
    export = False

    def __init__(self):
        super().__init__()
        self.m = nn.Conv2d(3, 6, 1)

    def forward(self, x):
        x = self.m(x)
        self.training |= self.export
        if not self.training:
            y = x.sigmoid()
            y[:, 0:2] = y[:, 0:2] * 2.0 - 0.5
            return y
        return x
"""


@pytest.mark.torch
def test_an_inference_branch_is_judged_in_the_mode_the_model_runs_in(tmp_path: Path) -> None:
    """Trained in train mode and evaluated under no_grad, the in-place decode runs; where the
    file says how the model runs, nothing is said; where it does not (the forward alone), the
    write is a Warning naming the eval-mode branch, not an Error."""
    pytest.importorskip("torch")
    script = tmp_path / "detect.py"
    run = DETECT + textwrap.dedent(
        """\

        model = Detect()
        for _ in range(2):
            model(torch.randn(1, 3, 4, 4)).sum().backward()
        model.eval()
        with torch.no_grad():
            model(torch.randn(1, 3, 4, 4))
        """
    )
    script.write_text(run, encoding="utf-8")
    ran = _run(script)
    assert ran.returncode == 0, ran.stderr
    assert not [f for f in analyze(run, str(script)) if f.code == "IPL001"]
    # The forward alone runs in training mode by assumption: the branch is not taken.
    assert not [f for f in analyze(DETECT, "detect.py") if f.code == "IPL001"]
    # Where the mode is not known, the write rests on it: a Warning that names the branch.
    # (`torch.onnx.is_in_onnx_export()` is known: never while the program runs eagerly)
    exported = DETECT.replace("import torch\n", "import os\nimport torch\n", 1).replace(
        "\n\n\nclass", "\n\nclass", 1
    )
    exported = exported.replace(
        "self.training |= self.export", 'self.training &= "EXPORT" not in os.environ'
    )
    (alone,) = [f for f in analyze(exported, "detect.py") if f.code == "IPL001"]
    assert alone.severity is Severity.WARNING and alone.span.line == 17
    assert "eval mode" in alone.message and "`if not self.training:` (line 15)" in alone.message


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(BROKEN_AND_FIXED))
def test_the_shape_is_an_error_and_its_fix_none(tmp_path: Path, name: str) -> None:
    """Mechanisms from real code: torch's run says the program breaks on the marked line and
    its fix runs; the analysis says the same."""
    pytest.importorskip("torch")
    program, (old, new), raised = BROKEN_AND_FIXED[name]
    text = textwrap.dedent(program)
    fixed = text.replace(old, new)
    assert fixed != text
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.endswith("# error"))
    broken_script, fixed_script = tmp_path / "broken.py", tmp_path / "fixed.py"
    broken_script.write_text(text, encoding="utf-8")
    fixed_script.write_text(fixed, encoding="utf-8")
    assert raised in _run(broken_script).stderr
    ran = _run(fixed_script)
    assert ran.returncode == 0, ran.stderr
    assert line in _errors(analyze(text, str(broken_script)))
    assert not _errors(analyze(fixed, str(fixed_script)))


LOAD_TOKENS = """\
import torch
import torch.nn as nn


def load_tokens(pipe, vectors):
    for i, vector in enumerate(vectors):
        pipe.text_encoder.token_embedding.weight[i] = vector
"""


@pytest.mark.torch
def test_a_write_into_what_its_name_says_is_a_parameter_is_a_warning(tmp_path: Path) -> None:
    """`pipe.text_encoder.token_embedding.weight[i] = v` in a helper given an object the
    analysis cannot read: a Warning that names the attribute (torch raises where it is a
    parameter that requires grad); under no_grad, nothing."""
    pytest.importorskip("torch")
    script = tmp_path / "tokens.py"
    script.write_text(
        LOAD_TOKENS
        + textwrap.dedent(
            """\

            class Pipe:
                pass


            pipe = Pipe()
            pipe.text_encoder = nn.Module()
            pipe.text_encoder.token_embedding = nn.Embedding(4, 2)
            load_tokens(pipe, torch.randn(2, 2))
            """
        ),
        encoding="utf-8",
    )
    assert "leaf Variable that requires grad" in _run(script).stderr
    (found,) = [f for f in analyze(LOAD_TOKENS, "tokens.py") if f.code == "IPL002"]
    assert found.severity is Severity.WARNING and found.span.line == 7
    assert "`pipe.text_encoder.token_embedding.weight`" in found.message
    guarded = LOAD_TOKENS.replace(
        "    for i, vector", "    with torch.no_grad():\n      for i, vector"
    ).replace("        pipe.text", "          pipe.text")
    assert not [f for f in analyze(guarded, "tokens.py") if f.code == "IPL002"]
    # YOLO's _initialize_biases: through a view of the attribute, the same.
    biases = textwrap.dedent(
        """\
        import math


        def initialize_biases(m):
            for mi, s in zip(m.m, m.stride):
                b = mi.bias.view(3, -1)
                b[:, 4] += math.log(8 / (640 / s) ** 2)
        """
    )
    (found,) = [f for f in analyze(biases, "yolo.py") if f.code == "IPL002"]
    assert found.severity is Severity.WARNING and "`mi.bias`" in found.message


CONV_BLOCK = """\
import sys

import torch
import torch.nn as nn


class Conv2dBlock(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4) if norm == "bn" else None
        self.activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.conv(x)
        if self.norm:
            x = self.norm(x)
        x = self.activation(x)
        return x


Conv2dBlock(sys.argv[1])(torch.randn(1, 3, 8, 8)).sum().backward()
"""


@pytest.mark.torch
def test_a_write_after_a_branch_meets_only_the_saves_of_its_own_path(tmp_path: Path) -> None:
    """MUNIT's Conv2dBlock: the in-place ReLU writes the norm's output where the norm ran and
    the conv's output where it did not; the norm saved the conv's output only on the first
    path, so no run breaks (torch runs both), and nothing is said."""
    pytest.importorskip("torch")
    script = tmp_path / "block.py"
    script.write_text(CONV_BLOCK, encoding="utf-8")
    for norm in ("bn", "none"):
        ran = subprocess.run(
            [sys.executable, script.name, norm],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
    found = analyze(CONV_BLOCK, str(script))
    assert not [f for f in found if f.severity in (Severity.ERROR, Severity.WARNING)], found
    # A save of what the write meets on its own path (tanh keeps its output) still breaks.
    saved = CONV_BLOCK.replace("x = self.norm(x)", "x = torch.tanh(self.norm(x))")
    script.write_text(saved, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, script.name, "bn"], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert "modified by an inplace operation" in ran.stderr
    assert [f.code for f in analyze(saved, "block.py") if f.severity is not Severity.HINT]


INIT_WEIGHTS = """\
import math

import torch
import torch.nn as nn
from transformers import PreTrainedModel


class MambaPreTrainedModel(PreTrainedModel):
    def _init_weights(self, module):
        p = module.out_proj.weight
        p /= math.sqrt(2)
"""


@pytest.mark.torch
def test_init_weights_of_a_pretrained_model_runs_under_no_grad(tmp_path: Path) -> None:
    """transformers runs `_init_weights` under torch.no_grad() (PreTrainedModel's
    `_initialize_weights`): its in-place scaling is no finding. The same method of a plain
    module, applied in `__init__`, runs with grad on, and torch refuses the write."""
    pytest.importorskip("torch")
    assert not [f for f in analyze(INIT_WEIGHTS, "mamba.py") if f.code == "IPL002"]
    plain = INIT_WEIGHTS.replace("from transformers import PreTrainedModel\n", "").replace(
        "class MambaPreTrainedModel(PreTrainedModel):",
        "class Mixer(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.out_proj = nn.Linear(4, 4)\n"
        "        self.apply(self._init_weights)\n",
    ).replace("        p = module.out_proj", "        if not hasattr(module, 'out_proj'):\n"
              "            return\n        p = module.out_proj")  # fmt: skip
    script = tmp_path / "mixer.py"
    script.write_text(plain + "\nMixer()\n", encoding="utf-8")
    assert "leaf Variable that requires grad" in _run(script).stderr
    assert [f for f in analyze(plain + "\nMixer()\n", str(script)) if f.code == "IPL002"]


# pix2pix's generator step: the discriminator is frozen with a helper before it judges the
# fake; a frozen nn.Linear keeps its weight for backward, not its input.
FROZEN_CRITIC = """\
import sys
import torch
import torch.nn as nn


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


netG = nn.Linear(4, 4)
netD = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
FREEZE
fake = netG(torch.randn(3, 4)) * 2.0
pred_fake = netD(fake)
fake.clamp_(-1.0, 1.0)
pred_fake.mean().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    ("freeze", "raises"),
    [
        ("set_requires_grad(netD, False)", False),
        ("set_requires_grad(netD, True)", True),
        ("set_requires_grad(netD, len(sys.argv) < 2)", True),
        ("if len(sys.argv) > 1: netD.requires_grad_(False)", True),
    ],
)
def test_a_frozen_layer_keeps_no_input_for_backward(
    tmp_path: Path, freeze: str, raises: bool
) -> None:
    """Frozen, the discriminator's first Linear saves only its weight: the clamp into the fake
    it read runs, and the write is checked safe. Trainable, or frozen by a flag the analysis
    cannot read or on some paths only (the command line), it saves the fake: torch breaks on
    the run that does not freeze it, and the write is an Error, never a Hint."""
    pytest.importorskip("torch")
    text = FROZEN_CRITIC.replace("FREEZE", freeze)
    script = tmp_path / "pix2pix.py"
    script.write_text(text, encoding="utf-8")
    ran = _run(script)
    assert ("modified by an inplace operation" in ran.stderr) is raises, ran.stderr
    (write,) = [f for f in analyze(text, str(script)) if f.span.line == 20]
    assert write.severity is (Severity.ERROR if raises else Severity.HINT)


# A training script whose file also holds a variant it never builds (pytorch_refinenet's
# "improved" pooling block, left beside the one the script trains).
VARIANTS = """\
import torch
import torch.nn as nn


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        x = self.relu(x)
        return x + self.conv(x)


class PoolImproved(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        x = self.relu(x)
        x += self.conv(x)
        return x


def train():
    net = Pool()
    net(torch.randn(1, 2, 4, 4)).sum().backward()


if __name__ == "__main__":
    train()
"""


@pytest.mark.torch
def test_an_error_in_a_class_the_training_script_never_runs_is_a_warning(tmp_path: Path) -> None:
    """The script trains `Pool` and runs: the write of `PoolImproved`, which nothing the
    script reaches mentions, is a Warning that says the script does not run it. Trained
    instead, the variant breaks backward, and the write is an Error."""
    pytest.importorskip("torch")
    script = tmp_path / "refinenet.py"
    script.write_text(VARIANTS, encoding="utf-8")
    assert _run(script).returncode == 0
    (write,) = [f for f in analyze(VARIANTS, str(script)) if f.span.line == 24]
    assert write.severity is Severity.WARNING
    assert "training script never runs `PoolImproved`" in write.message
    used = VARIANTS.replace("net = Pool()", "net = PoolImproved()")
    script.write_text(used, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert 24 in _errors(analyze(used, str(script)))
    # A library file (no script that trains) keeps the Error: any caller may run it.
    library = VARIANTS.split("\n\ndef train")[0] + "\n"
    assert 24 in _errors(analyze(library, "refinenet.py"))


# A GAN step written compactly: statements share lines (`;`), and the two lines that begin
# with one (the models' and the generator's step) must not be read as each other.
COMPACT_GAN = """\
import torch, torch.nn as nn
G = nn.Linear(2, 2); D = nn.Linear(2, 1)
oG, oD = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
fake = G(torch.randn(3, 2))
g_loss = -D(fake).mean()
d_loss = D(fake.detach()).mean() - D(torch.randn(3, 2)).mean()
oD.zero_grad(); d_loss.backward(); oD.step()
oG.zero_grad(); g_loss.backward(); oG.step()
"""


@pytest.mark.torch
def test_statements_that_share_a_line_are_each_run(tmp_path: Path) -> None:
    """The discriminator's step changes the weights `D(fake)` saved for the generator's
    backward, on a line that also holds its backward: torch breaks, and the step is an
    Error. Stepped after the generator's backward, it runs, and nothing is said."""
    pytest.importorskip("torch")
    script = tmp_path / "gan.py"
    script.write_text(COMPACT_GAN, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    (step,) = [f for f in analyze(COMPACT_GAN, str(script)) if f.code == "IPL007"]
    assert step.severity is Severity.ERROR and step.span.line == 7
    d_step = "oD.zero_grad(); d_loss.backward(); oD.step()\n"
    g_step = "oG.zero_grad(); g_loss.backward(); oG.step()\n"
    fixed = COMPACT_GAN.replace(d_step + g_step, g_step + d_step)
    script.write_text(fixed, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not _errors(analyze(fixed, str(script)))


@pytest.mark.torch
def test_a_step_before_any_backward_changes_no_weight(tmp_path: Path) -> None:
    """In a script no parameter holds a gradient before its first backward(), and
    optimizer.step() skips those: the step runs before the backward of the graph that saved
    the weights, and torch is fine. Given gradients first, the step writes them."""
    pytest.importorskip("torch")
    text = textwrap.dedent(
        """\
        import torch
        import torch.nn as nn

        D = nn.Linear(2, 1)
        opt = torch.optim.SGD(D.parameters(), lr=0.1)
        loss = D(torch.randn(3, 2, requires_grad=True)).mean()
        opt.step()
        loss.backward()
        """
    )
    script = tmp_path / "step.py"
    script.write_text(text, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not _errors(analyze(text, str(script)))
    graded = text.replace(
        "opt.step()", "for p in D.parameters():\n    p.grad = torch.ones_like(p)\nopt.step()"
    )
    script.write_text(graded, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert 9 in _errors(analyze(graded, str(script)))


# The transfer-learning tutorial's loop: one pass per phase, grad mode on in training only.
PHASES = """\
import torch
import torch.nn as nn

model = nn.Linear(3, 3)
for phase in PHASES:
    with torch.set_grad_enabled(phase == "train"):
        out = model(torch.randn(2, 3))
        if phase == "train":
            out.sum().backward()
        else:
            model.weight.mul_(1.0)
"""


@pytest.mark.torch
def test_grad_mode_set_by_a_flag_is_judged_per_phase(tmp_path: Path) -> None:
    """Over the phases `["train", "val"]` the write into the weight runs in the val phase,
    with grad mode off: torch is fine, and nothing is said. With a phase the analysis
    cannot read, grad mode is on in some runs only: a Warning that names the context."""
    pytest.importorskip("torch")
    text = PHASES.replace("PHASES", '["train", "val"]')
    script = tmp_path / "phases.py"
    script.write_text(text, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not [f for f in analyze(text, str(script)) if f.code == "IPL002"]
    unknown = "import sys\n" + PHASES.replace("PHASES", "sys.argv[1:]")
    (write,) = [f for f in analyze(unknown, "phases.py") if f.code == "IPL002"]
    assert write.severity is Severity.WARNING
    assert "`torch.set_grad_enabled(phase == 'train')` (line 7)" in write.message
    script.write_text(unknown, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, script.name, "val"], cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr


# A running total backwarded every step: the second step's backward goes through the first
# step's graph, which the first backward freed.
TOTAL_BACKWARD = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for _ in range(3):
    loss = model(torch.randn(5, 4)).pow(2).mean()
    total += loss
    opt.zero_grad()
    total.backward()
    opt.step()
"""


@pytest.mark.torch
def test_a_graph_built_on_after_backward_freed_it_is_a_retention_error(tmp_path: Path) -> None:
    """torch raises "Trying to backward through the graph a second time" at the second
    step: the accumulation that builds on the freed graph is an Error naming both
    backward() calls. Backwarding the step's loss and keeping a number runs, and is no
    finding; a model fed a tensor of the freed graph through a method of the file is an
    Error at the op of that method that builds on it (the RNN call, where torch fails)."""
    pytest.importorskip("torch")
    script = tmp_path / "total.py"
    script.write_text(TOTAL_BACKWARD, encoding="utf-8")
    assert "backward through the graph a second time" in _run(script).stderr
    (kept,) = [f for f in analyze(TOTAL_BACKWARD, str(script)) if f.code == "IPL004"]
    assert kept.severity is Severity.ERROR and kept.span.line == 9
    assert "backward() at line 11 freed" in kept.message
    fixed = TOTAL_BACKWARD.replace("total += loss", "total += loss.item()").replace(
        "total.backward()", "loss.backward()"
    )
    script.write_text(fixed, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not [f for f in analyze(fixed, str(script)) if f.code == "IPL004"]
    stateful = textwrap.dedent(
        """\
        import torch
        import torch.nn as nn


        class RNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.RNN(1, 4, batch_first=True)

            def forward(self, x, h):
                out, h = self.rnn(x, h)
                return out.sum(), h


        model = RNN()
        h = None
        for _ in range(2):
            loss, h = model(torch.randn(1, 3, 1), h)
            loss.backward()
        """
    )
    script.write_text(stateful, encoding="utf-8")
    assert "backward through the graph a second time" in _run(script).stderr
    (call,) = [f for f in analyze(stateful, str(script)) if f.code == "IPL004"]
    assert call.severity is Severity.ERROR and call.span.line == 11


# VAE-GAN's trainer: which nets train this step is decided once; the step of one branch and
# the backward() of another never run together.
EXCLUSIVE = """\
import sys

import torch
import torch.nn as nn

net1, net2 = nn.Linear(4, 4), nn.Linear(4, 1)
opt = torch.optim.SGD(net2.parameters(), lr=0.1)
train_dis = len(sys.argv) > 1
train_dec = True
for _ in range(2):
    out = net2(net1(torch.randn(3, 4))).sum()
    out.backward(retain_graph=True)
    if train_dec and train_dis == True:
        opt.step()
    if train_dec == True and train_dis == False:
        out.backward()
"""


@pytest.mark.torch
def test_a_step_and_a_backward_under_conditions_that_exclude_each_other(tmp_path: Path) -> None:
    """The step under `train_dis == True`, the backward() under `train_dis == False`: torch
    runs both configurations; the finding rests on the conditions (a Warning naming the
    backward's), not an Error. Under one test taken the same way around both, it fails."""
    pytest.importorskip("torch")
    script = tmp_path / "vaegan.py"
    script.write_text(EXCLUSIVE, encoding="utf-8")
    assert _run(script).returncode == 0
    assert _run(script, "dis").returncode == 0
    (step,) = [f for f in analyze(EXCLUSIVE, str(script)) if f.code == "IPL007"]
    assert step.severity is Severity.WARNING and step.span.line == 14
    assert "`if train_dec == True and train_dis == False:` (line 15) is true" in step.message
    same = EXCLUSIVE.replace("train_dec == True and train_dis == False", "train_dis == True")
    script.write_text(same, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script, "dis").stderr
    assert 14 in _errors(analyze(same, str(script)))


# An actor-critic agent's target network, frozen parameter by parameter in `__init__` and
# updated in place by a method the training loop calls later.
TARGET_NET = """\
import copy

import torch
import torch.nn as nn


class Agent:
    def __init__(self):
        self.q = nn.Linear(4, 2)
        self.q_target = copy.deepcopy(self.q)
        for p in self.q_target.parameters():
            p.requires_grad = False
        self.opt = torch.optim.Adam(self.q.parameters())

    def soft_update(self, tau=0.01):
        for tp, p in zip(self.q_target.parameters(), self.q.parameters()):
            tp.mul_(1 - tau)
            tp.add_(tau * p.data)

    def learn(self):
        loss = (self.q(torch.randn(3, 4)) - self.q_target(torch.randn(3, 4))).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.soft_update()


agent = Agent()
for _ in range(2):
    agent.learn()
"""


@pytest.mark.torch
def test_parameters_frozen_one_by_one_in_init_stay_frozen_for_later_methods(
    tmp_path: Path,
) -> None:
    """The loop over a module's parameters that turns requires_grad off freezes the module
    as requires_grad_(False) does: the object keeps it for every method that runs later.
    Frozen on the paths of a condition on the parameter's name only, a write into one of
    them rests on that (a Warning)."""
    pytest.importorskip("torch")
    script = tmp_path / "agent.py"
    script.write_text(TARGET_NET, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not [f for f in analyze(TARGET_NET, str(script)) if f.code == "IPL002"]
    unfrozen = TARGET_NET.replace("p.requires_grad = False", "pass")
    script.write_text(unfrozen, encoding="utf-8")
    assert "leaf Variable that requires grad" in _run(script).stderr
    assert 17 in _errors(analyze(unfrozen, str(script)))
    by_name = TARGET_NET.replace(
        "for p in self.q_target.parameters():\n            p.requires_grad = False",
        'for n, p in self.q_target.named_parameters():\n            if "bias" in n:\n'
        "                p.requires_grad = False",
    )
    script.write_text(by_name, encoding="utf-8")
    assert "leaf Variable that requires grad" in _run(script).stderr
    writes = [f for f in analyze(by_name, str(script)) if f.code == "IPL002"]
    assert writes and all(f.severity is Severity.WARNING for f in writes)
    assert "turns off on some paths only" in writes[0].message


# Canny edge detection's magnitude: `grad_mag` is sqrt's output (saved), written twice.
TWICE = """\
import torch

gx = torch.randn(2, 3, requires_grad=True)
grad_mag = torch.sqrt(gx**2 + 1)
grad_mag += torch.sqrt(gx**2 + 2)
grad_mag += torch.sqrt(gx**2 + 3)
grad_mag.sum().backward()
"""


@pytest.mark.torch
def test_a_second_write_into_a_saved_tensor_is_no_hint(tmp_path: Path) -> None:
    """The first `+=` makes sqrt's save stale; the second writes the same tensor again: with
    the first removed torch fails on it, so it is not "checked: safe"."""
    pytest.importorskip("torch")
    script = tmp_path / "canny.py"
    script.write_text(TWICE, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    second = TWICE.replace("grad_mag += torch.sqrt(gx**2 + 2)", "pass")
    script.write_text(second, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    findings = analyze(TWICE, str(script))
    assert 5 in _errors(findings)
    assert not [f for f in findings if f.span.line == 6 and f.severity is Severity.HINT]
    assert 6 in _errors(analyze(second, str(script)))


HELD_CONTEXT = """\
import contextlib
import sys

import torch
import torch.nn as nn

model = nn.Linear(4, 2)
no_grad = torch.no_grad()
with no_grad:
    model.bias.zero_()
frozen = len(sys.argv) > 1
with torch.no_grad() if frozen else contextlib.nullcontext():
    model.weight.mul_(0.5)
model(torch.randn(3, 4)).sum().backward()
"""


@pytest.mark.torch
def test_a_grad_context_held_in_a_name_or_chosen_by_a_condition(tmp_path: Path) -> None:
    """`with no_grad:` of `no_grad = torch.no_grad()` turns grad mode off as the call would;
    `with torch.no_grad() if frozen else nullcontext():` only on some runs: a write into a
    parameter under it rests on that (a Warning that names the context), where torch raises
    in one configuration and not in the other."""
    pytest.importorskip("torch")
    script = tmp_path / "held.py"
    script.write_text(HELD_CONTEXT, encoding="utf-8")
    assert "leaf Variable that requires grad" in _run(script).stderr
    assert _run(script, "frozen").returncode == 0
    leaf = [f for f in analyze(HELD_CONTEXT, str(script)) if f.code == "IPL002"]
    assert [(f.span.line, f.severity) for f in leaf] == [(13, Severity.WARNING)]
    assert "`torch.no_grad() if frozen else contex...` (line 12)" in leaf[0].message


# torchvision's `_rgb_to_hsv`: the pieces of an unbind written in place, one chain after
# another; whether torch refuses rests on one unknown (does the image require grad?).
HSV = """\
import torch


def rgb_to_hsv(image):
    maxc = image.amax(dim=-3)
    rc, gc, bc = (maxc.unsqueeze(dim=-3) - image).unbind(dim=-3)
    hr = bc.sub_(gc).mul_(2.0)
    hb = gc.add_(4.0).sub_(rc)
    return hr.add_(hb)
"""


@pytest.mark.torch
def test_writes_that_rest_on_a_refusal_already_reported_add_nothing(tmp_path: Path) -> None:
    """torch refuses the first write into an unbind's output when the image requires grad,
    and nothing after it runs; when it does not, none is refused: one Warning, not seven."""
    pytest.importorskip("torch")
    script = tmp_path / "hsv.py"
    script.write_text(
        HSV + "import sys\nrgb_to_hsv(torch.rand(3, 4, 4, requires_grad=len(sys.argv) > 1))\n",
        encoding="utf-8",
    )
    assert _run(script).returncode == 0
    assert "is a view and is being modified inplace" in _run(script, "grad").stderr
    refused = [f for f in analyze(HSV, "hsv.py") if f.code == "IPL009"]
    assert [(f.span.line, f.severity) for f in refused] == [(7, Severity.WARNING)]
    assert "`image`" in refused[0].message


# MAE-DFER's messenger tokens: `rearrange(x[:, 0], "(b n) c -> b n c")` (a reshape of a
# slice, a permute, a reshape) is a view of x where the strides allow, and they do.
TOKENS = """\
import torch
import torch.nn as nn

norm = nn.LayerNorm(4)
x = nn.Linear(4, 4)(torch.randn(6, 3, 4))
m = x[:, 0].reshape(2, 3, 4).permute(1, 0, 2).reshape(3, 2, 4)
m = m + torch.tanh(norm(m))
x[:, 0] = m.reshape(6, 4)
x.sum().backward()
"""


@pytest.mark.torch
def test_a_reshape_of_a_permuted_slice_may_be_a_view(tmp_path: Path) -> None:
    """A reshape of a non-contiguous tensor is a view where its strides allow, a copy
    otherwise: not "checked: safe" but a Warning that names it (torch fails here)."""
    pytest.importorskip("torch")
    script = tmp_path / "tokens.py"
    script.write_text(TOKENS, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    (write,) = [f for f in analyze(TOKENS, str(script)) if f.span.line == 8]
    assert write.severity is Severity.WARNING
    assert "if `.reshape()` returns a view" in write.message


# WGAN-GP: the generator steps, then the gradient penalty differentiates the critic's output
# with respect to the interpolates only; InfoMaxVAE: the discriminator's loss backwarded with
# `inputs=list(D.parameters())` after the VAE's step.
TOWARDS = """\
import torch
import torch.nn as nn

G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters())
opt_d = torch.optim.Adam(D.parameters())
fake = G(torch.randn(3, 2))
real = torch.randn(3, 4)
opt_g.zero_grad()
(-D(fake).mean()).backward(retain_graph=True)
opt_g.step()
alpha = torch.rand(3, 1)
interp = alpha * real + (1 - alpha) * fake
penalty = torch.autograd.grad(D(interp).sum(), interp, create_graph=True)[0].norm()
d_loss = D(fake).mean() + penalty
opt_d.zero_grad()
d_loss.backward(inputs=list(D.parameters()))
opt_d.step()
"""


@pytest.mark.torch
def test_a_backward_to_given_inputs_runs_only_the_nodes_on_a_path_to_them(
    tmp_path: Path,
) -> None:
    """autograd.grad(out, interp) never runs what made `interp` (the generator, stepped
    since): no finding. backward(inputs=D's parameters) runs the generator's nodes only if
    a path to D goes through them: a Warning that says so. Without `inputs=`, torch fails."""
    pytest.importorskip("torch")
    script = tmp_path / "towards.py"
    script.write_text(TOWARDS, encoding="utf-8")
    assert _run(script).returncode == 0
    steps = [f for f in analyze(TOWARDS, str(script)) if f.code == "IPL007"]
    assert [(f.span.line, f.severity) for f in steps] == [(12, Severity.WARNING)]
    assert "the backward() to its `inputs`" in steps[0].message
    everything = TOWARDS.replace("backward(inputs=list(D.parameters()))", "backward()")
    script.write_text(everything, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert 12 in _errors(analyze(everything, str(script)))


# A GAN's two losses, the generator's backwarded first: zero_grad() left the critic's
# parameters at None and that backward() never reaches them, so the critic's step skips them
# all (torch runs it); where the first loss goes through the critic, its step writes them.
UNREACHED = """\
import torch
import torch.nn as nn

D = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
G = nn.Linear(2, 4)
opt_d = torch.optim.Adam(D.parameters())
opt_g = torch.optim.Adam(G.parameters())
for _ in range(2):
    fake = G(torch.randn(3, 2))
    opt_d.zero_grad()
    loss_g = -D(fake).mean()
    loss_x = G(torch.randn(3, 2)).pow(2).mean()
    loss_x.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
"""


@pytest.mark.torch
def test_a_step_after_a_backward_that_did_not_reach_its_parameters(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "gan.py"
    script.write_text(UNREACHED, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not _errors(analyze(UNREACHED, str(script)))
    through = UNREACHED.replace("G(torch.randn(3, 2)).pow", "D(G(torch.randn(3, 2))).pow")
    script.write_text(through, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert 14 in _errors(analyze(through, str(script)))
    # A call the analysis does not follow may reach the critic: no longer known to skip it.
    hidden = through.replace(
        "loss_x = D(G(torch.randn(3, 2))).pow(2).mean()",
        "loss_x = mystery(G(torch.randn(3, 2)), D)",
    )
    assert 14 in _errors(analyze(hidden, str(script)))


# A layer given a reshape of a transposed tensor (a view or a copy: the strides decide): only
# its save of that input rests on which; its weights are its own, and a step before the
# backward() that needs them breaks it whatever the reshape returned.
MAYBE_INPUT = """\
import torch
import torch.nn as nn

net = nn.Linear(4, 4)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(2, 2, 4, requires_grad=True).transpose(0, 1)
out = net(x.reshape(4, 4))
loss1 = out.sum()
loss2 = (out**2).sum()
loss1.backward(retain_graph=True)
opt.step()
loss2.backward()
"""


@pytest.mark.torch
def test_a_layers_weights_are_saved_whatever_its_input_is(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "step.py"
    script.write_text(MAYBE_INPUT, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert 11 in _errors(analyze(MAYBE_INPUT, str(script)))


# A conv's output given to a LayerNorm through einops, then written in place.
PATCHES = """\
import torch
import torch.nn as nn
import einops

conv = nn.Conv2d(3, 8, 3, padding=1)
norm = nn.LayerNorm(8)
feat = conv(torch.randn(2, 3, 4, 4))
tokens = norm(einops.rearrange(feat, "PATTERN"))
feat += 1
tokens.sum().backward()
"""


# einops.rearrange is torch's reshape and permute: a view of its input wherever it merges no
# axes (MAE-DFER's messenger tokens, `(b n) c -> b n c` of a slice) or merges adjacent axes in
# order of a contiguous tensor (`b c h w -> b (h w) c`); merging axes it reorders gives a copy
# unless their sizes allow a view: a Warning that names it. Each checked by a run.
EINOPS = {
    "messenger": (
        """\
        import torch
        import torch.nn as nn
        from einops import rearrange


        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.norm = nn.LayerNorm(dim)
                self.attn = nn.Linear(dim, dim)

            def forward(self, x, b):
                tokens = rearrange(x[:, 0], "(b n) c -> b n c", b=b)
                tokens = tokens + self.attn(self.norm(tokens))
                x[:, 0] = rearrange(tokens, "b n c -> (b n) c")
                return x


        x = torch.randn(4, 3, 8, requires_grad=True) * 1
        Block(8)(x, 2).sum().backward()
        """,
        15,
        Severity.ERROR,
    ),
    **{
        name: (PATCHES.replace("PATTERN", pattern), 9, severity)
        for name, pattern, severity in (
            ("patches", "b c h w -> b (h w) c", Severity.ERROR),
            ("channels last", "b c h w -> b h w c", Severity.ERROR),
            ("transposed patches", "b c h w -> b (w h) c", Severity.WARNING),
        )
    },
}


@pytest.mark.torch
@pytest.mark.parametrize("name", EINOPS)
def test_einops_rearrange_is_a_view_where_torch_makes_one(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("einops")
    source, line, severity = EINOPS[name]
    text = textwrap.dedent(source)
    script = tmp_path / "arrange.py"
    script.write_text(text, encoding="utf-8")
    broke = "modified by an inplace operation" in _run(script).stderr
    assert broke is (severity is Severity.ERROR)
    (finding,) = [f for f in analyze(text, str(script)) if f.span.line == line]
    assert finding.severity is severity
    if severity is Severity.WARNING:
        assert "if `rearrange()` returns a view" in finding.message


# A training script that never calls a method of its model's class: the write into the
# embedding's weight there raises wherever it runs, but this program does not run it (torch
# is fine), so it is no proven Error; called from the script, it is.
UNCALLED = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)

    def reinit(self):
        self.emb.weight[0] = 0

    def forward(self, x):
        return self.emb(x)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(2):
    loss = net(torch.tensor([1, 2])).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.torch
def test_a_method_the_script_never_calls_is_no_proven_error(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(UNCALLED, encoding="utf-8")
    assert _run(script).returncode == 0
    (write,) = [f for f in analyze(UNCALLED, str(script)) if f.span.line == 11]
    assert write.severity is Severity.WARNING
    assert "`self.emb.weight` is a leaf that requires grad" in write.message
    assert "never runs `Net.reinit`" in write.message
    called = UNCALLED.replace("net = Net()\n", "net = Net()\nnet.reinit()\n")
    script.write_text(called, encoding="utf-8")
    assert "leaf Variable that requires grad" in _run(script).stderr
    assert 11 in _errors(analyze(called, str(script)))


# `range()` gives Python ints whatever its bounds: a factorial kept in one across a loop
# (diffusers' UniPC scheduler, `factorial_i *= i + 1`) is no tensor a product saved.
RANGE = """\
import torch


def coefficients(h, order):
    h_phi_k = torch.expm1(-h) / -h - 1
    factorial_i = 1
    b = []
    for i in range(1, order + 1):
        b.append(h_phi_k * factorial_i / h)
        factorial_i *= i + 1
        h_phi_k = h_phi_k / h - 1 / factorial_i
    return torch.stack(b)


h = torch.tensor(0.5, requires_grad=True)
coefficients(h, 3).sum().backward()
"""


@pytest.mark.torch
def test_a_counter_over_range_stays_a_python_int(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "sched.py"
    script.write_text(RANGE, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not [f for f in analyze(RANGE, str(script)) if f.span.line == 10]


# `x += self.fn(x)` in a residual wrapper whose `fn` is a LayerNorm (it keeps its input): the
# wrapper built inside an nn.Sequential subclass's `super().__init__(...)`, inside a plain
# nn.Sequential, or as the blocks of a ModuleList made from a class given as an argument
# (the "ViT from scratch" shape); an OrderedDict of named children too. Torch fails on each.
RESIDUAL_ADD = """\
import torch
import torch.nn as nn
from collections import OrderedDict


class ResidualAdd(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        out = self.fn(x)
        x += out
        return x


class Block(nn.Sequential):
    def __init__(self, emb):
        super().__init__(ResidualAdd(nn.Sequential(nn.LayerNorm(emb), nn.Linear(emb, emb))))


class Encoder(nn.Module):
    def __init__(self, depth=2, emb=8, block=Block):
        super().__init__()
        self.layers = nn.ModuleList([block(emb) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


model = MODEL
model(torch.randn(2, 4)).sum().backward()
"""
CONTAINERS = {
    "sequential subclass": "nn.Sequential(nn.Linear(4, 8), Block(8))",
    "plain sequential": "nn.Sequential(nn.Linear(4, 8), ResidualAdd(nn.LayerNorm(8)))",
    "blocks from a class argument": "nn.Sequential(nn.Linear(4, 8), Encoder())",
    "ordered dict": 'nn.Sequential(OrderedDict({"embed": nn.Linear(4, 8), "block": Block(8)}))',
}


@pytest.mark.torch
@pytest.mark.parametrize("name", CONTAINERS)
def test_residual_writes_through_containers_of_objects(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = RESIDUAL_ADD.replace("MODEL", CONTAINERS[name])
    script = tmp_path / "vit.py"
    script.write_text(text, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert 13 in _errors(analyze(text, str(script)))


# `if init_values > 0: self.gamma = nn.Parameter(...)` / `else: self.gamma = None`: for
# this object's arguments the attribute is None, and forward takes its `is None` branch.
GAMMA = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, init_values=0.0):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        if init_values > 0:
            self.gamma_1 = nn.Parameter(init_values * torch.ones(dim))
        else:
            self.gamma_0, self.gamma_1 = None, None

    def forward(self, x):
        if self.gamma_1 is None:
            y = torch.sigmoid(self.fc(x))
            y += 1
        else:
            y = self.fc(x) * self.gamma_1
        return y


Block(4, INIT)(torch.randn(2, 4)).sum().backward()
"""


@pytest.mark.torch
def test_a_parameter_made_on_one_branch_of_init_only(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "gamma.py"
    for init, fails in (("0.0", True), ("0.1", False)):
        text = GAMMA.replace("INIT", init)
        script.write_text(text, encoding="utf-8")
        assert ("modified by an inplace operation" in _run(script).stderr) is fails
        assert (17 in _errors(analyze(text, str(script)))) is fails


# SPQ's retrieval: distances of a codebook the analysis cannot read written into the split
# views of a zeros tensor. Torch refuses it when they require grad (a Warning that says so);
# `.detach()`ed, they never do.
SPLIT_WRITE = """\
import torch


def distances(codebook, query, books):
    rows = codebook.shape[0]
    out = torch.zeros(rows, books)
    pieces = torch.split(out, 1, 1)
    for j in range(books):
        for k in range(rows):
            pieces[j][k] = torch.norm(query - codebook[k], 2)
    return out


head = Head()
print(distances(head.codebook, torch.randn(3), 2))
"""


def test_a_write_into_a_split_view_of_values_that_may_require_grad() -> None:
    (write,) = [f for f in analyze(SPLIT_WRITE, "spq.py") if f.span.line == 10]
    assert write.code == "IPL009" and write.severity is Severity.WARNING
    assert "torch raises here if `head.codebook` requires grad" in write.message
    detached = SPLIT_WRITE.replace("query - codebook[k], 2)", "query - codebook[k], 2).detach()")
    assert not [f for f in analyze(detached, "spq.py") if f.span.line == 10]


# Where the analysis cannot tell which module runs, nothing it gave is "checked: safe":
# `nn.Upsample(...) if flag else nn.Sigmoid()` (the Sigmoid keeps its output), and a tower
# whose layers are added on exclusive arms of an `if` in a loop over levels (SOTR's mask head:
# level 0's tower ends in a ReLU, the others' in an Upsample). Torch fails on each.
CHOSEN = {
    "flag": (
        """\
        import torch
        import torch.nn as nn


        class M(nn.Module):
            def __init__(self, flag):
                super().__init__()
                self.act = nn.Upsample(scale_factor=2) if flag else nn.Sigmoid()

            def forward(self, x):
                y = self.act(x)
                y += 1
                return y


        M(len([]) > 0)(torch.randn(1, 2, 4, requires_grad=True)).sum().backward()
        """,
        12,
    ),
    "levels": (
        """\
        import torch
        import torch.nn as nn


        class Head(nn.Module):
            def __init__(self, levels):
                super().__init__()
                self.towers = nn.ModuleList()
                for i in range(levels):
                    tower = nn.Sequential()
                    if i == 0:
                        tower.add_module("conv", nn.Conv2d(2, 2, 3, padding=1))
                        tower.add_module("act", nn.ReLU())
                        self.towers.append(tower)
                        continue
                    tower.add_module("conv", nn.Conv2d(2, 2, 3, padding=1))
                    tower.add_module("up", nn.Upsample(scale_factor=2 ** i))
                    self.towers.append(tower)

            def forward(self, features):
                total = self.towers[0](features[0])
                for i in range(1, len(features)):
                    total += self.towers[i](features[i])
                return total


        feats = [torch.randn(1, 2, 8, 8), torch.randn(1, 2, 4, 4)]
        Head(2)(feats).sum().backward()
        """,
        23,
    ),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", CHOSEN)
def test_no_hint_where_which_module_runs_is_not_known(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    source, line = CHOSEN[name]
    text = textwrap.dedent(source)
    script = tmp_path / "chosen.py"
    script.write_text(text, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    found = [f for f in analyze(text, str(script)) if f.span.line == line]
    assert found and all(f.severity is not Severity.HINT for f in found)


# SOLOv2's and SOTR's mask feature heads: the levels a loop over `range(self.start_level,
# self.end_level + 1)` builds, level 0 on its own branch (its layers gathered in a `list()`).
# With the constructor's levels known the loop runs each pass with its number, so
# `self.levels[0]` is the level that ends in the activation: an Error where it is a ReLU (it
# keeps its output), nothing where it is Identity.
LEVELS = """\
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, start_level, end_level):
        super().__init__()
        self.start_level, self.end_level = start_level, end_level
        self.levels = nn.ModuleList()
        for i in range(self.start_level, self.end_level + 1):
            level = nn.Sequential()
            if i == 0:
                tower = list()
                tower.append(nn.Conv2d(2, 2, 1))
                tower.append(LAST)
                level.add_module("tower", nn.Sequential(*tower))
                self.levels.append(level)
                continue
            level.add_module("conv", nn.Conv2d(2, 2, 1))
            level.add_module("up", nn.Upsample(scale_factor=2**i))
            self.levels.append(level)

    def forward(self, feats):
        out = self.levels[0](feats[0])
        for i in range(1, len(feats)):
            out += self.levels[i](feats[i])
        return out


feats = [torch.randn(1, 2, 8 >> i, 8 >> i) for i in range(3)]
Head(0, 2)(feats).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("last", ["nn.ReLU()", "nn.Identity()"])
def test_a_loop_over_levels_the_constructor_was_given(last: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = LEVELS.replace("LAST", last)
    script = tmp_path / "head.py"
    script.write_text(text, encoding="utf-8")
    fails = "modified by an inplace operation" in _run(script).stderr
    findings = analyze(text, str(script))
    assert fails == (last == "nn.ReLU()")
    if fails:
        assert _errors(findings) == {26}, findings
    else:
        assert not [f for f in findings if f.severity in (Severity.ERROR, Severity.WARNING)]


# synthtorch's U-Net: each block's dropout comes from a helper method, `nn.Dropout3d(self.p,
# inplace=True)` kept in a local and put last in an nn.Sequential after an in-place ReLU on an
# InstanceNorm3d's output. The dropout overwrites what the ReLU saved where p > 0; with p == 0
# it gives its input back untouched, and the ReLU on the norm's output is safe either way.
DROPOUT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
        self.block = self._conv_act(2, 2)

    def _dropout(self):
        d = nn.Dropout3d(self.p, inplace=True)
        return d

    def _conv_act(self, i, o):
        act = nn.ReLU(inplace=True)
        norm = nn.InstanceNorm3d(o, affine=True)
        return nn.Sequential(nn.Conv3d(i, o, 1), norm, act, self._dropout())

    def forward(self, x):
        return self.block(x)


Net(P)(torch.randn(2, 2, 2, 2, 2)).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("p", ["0.1", "0.0"])
def test_a_dropout_a_helper_method_built(p: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = DROPOUT.replace("P)(", f"{p})(")
    script = tmp_path / "unet.py"
    script.write_text(text, encoding="utf-8")
    fails = "modified by an inplace operation" in _run(script).stderr
    assert fails == (p != "0.0")
    findings = analyze(text, str(script))
    assert _errors(findings) == ({12} if fails else set()), findings
    assert not [f for f in findings if f.severity is Severity.WARNING], findings


# An RNN whose hidden state the model keeps on `self` from one batch to the next, not
# detached: the second backward() goes through the graph the first one freed, and torch
# fails at the RNN call inside forward (where the runtime detector points), not at the loss.
# A positional code cached on `self` in the first forward (made of Python floats and a tensor
# that never requires grad) holds no graph: no finding.
STATEFUL = """\
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 4, 1, batch_first=True)
        self.fc = nn.Linear(4, 3)
        self.hidden = None
        self.pos = None

    def forward(self, x):
        if self.hidden is None:
            self.hidden = torch.zeros(1, x.size(0), 4)
            self.pos = (torch.arange(5.0) / 5 * 2 * math.pi).sin()[None, :, None]
        out, self.hidden = self.rnn(x + self.pos, HIDDEN)
        return self.fc(out)


model = Model()
opt = torch.optim.Adam(model.parameters())
for epoch in range(1, 3 + 1):
    opt.zero_grad()
    loss = model(torch.randn(2, 5, 3)).pow(2).mean()
    loss.backward()
    opt.step()
"""


@pytest.mark.torch
@pytest.mark.parametrize("hidden", ["self.hidden", "self.hidden.detach()"])
def test_state_carried_into_the_next_batch_inside_forward(hidden: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = STATEFUL.replace("HIDDEN", hidden)
    script = tmp_path / "stateful.py"
    script.write_text(text, encoding="utf-8")
    fails = "backward through the graph a second time" in _run(script).stderr
    assert fails == (hidden == "self.hidden")
    findings = [f for f in analyze(text, str(script)) if f.severity is not Severity.HINT]
    if fails:
        (error,) = findings
        assert (error.code, error.severity, error.span.line) == ("IPL004", Severity.ERROR, 19)
    else:
        assert not findings


# mlcolvar's FeedForward: per-layer options parsed by a helper (`hasattr(options, "__iter__")
# and not isinstance(options, str)`; a single name repeated `n_layers - 1` times, then None),
# so each layer's activation and dropout rate are known: the in-place dropout after a ReLU
# overwrites what the ReLU saved (an Error on its constructor), and nothing without inplace.
OPTIONS = """\
import torch
import torch.nn as nn


def parse_options(options, n_layers):
    if hasattr(options, "__iter__") and not isinstance(options, str):
        return options
    options_list = [options for _ in range(n_layers - 1)]
    options_list.append(None)
    return options_list


def get_activation(name):
    if name == "relu":
        return nn.ReLU(True)
    return None


class FeedForward(nn.Module):
    def __init__(self, layers, activation="relu", dropout=None):
        super().__init__()
        n_layers = len(layers) - 1
        activations = parse_options(activation, n_layers)
        dropouts = parse_options(dropout, n_layers)
        modules = []
        for i in range(len(layers) - 1):
            modules.append(nn.Linear(layers[i], layers[i + 1]))
            if activations[i] is not None:
                modules.append(get_activation(activations[i]))
            if dropouts[i] is not None:
                modules.append(nn.Dropout(p=dropouts[i], inplace=INPLACE))
        self.nn = nn.Sequential(*modules)

    def forward(self, x):
        return self.nn(x)


model = FeedForward([6, 4, 3, 1], dropout=[0.2, 0.4, 0.6])
model(torch.randn(5, 6)).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("inplace", ["True", "False"])
def test_options_a_helper_parsed_by_type(inplace: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = OPTIONS.replace("INPLACE", inplace)
    script = tmp_path / "feedforward.py"
    script.write_text(text, encoding="utf-8")
    fails = "modified by an inplace operation" in _run(script).stderr
    assert fails == (inplace == "True")
    findings = [f for f in analyze(text, str(script)) if f.severity is not Severity.HINT]
    assert [(f.span.line, f.severity) for f in findings] == (
        [(31, Severity.ERROR)] if fails else []
    )


# EfficientDet's BiFPN: each fusion module normalises its ReLU'd weights in place and writes
# the fused levels into the list it was given; the neck feeds the list through a stack of
# them and the loss iterates what comes back. The backward() reaches the ReLU's output
# through those items: an Error on the in-place division.
FUSED = """\
import torch
import torch.nn as nn


class Fuse(nn.Module):
    def __init__(self, levels):
        super().__init__()
        self.w = nn.Parameter(torch.ones(2, levels))
        self.relu = nn.ReLU()

    def forward(self, inputs):
        w = self.relu(self.w)
        w /= torch.sum(w, dim=0) + 1e-4
        path = inputs
        for i in range(len(inputs) - 1, 0, -1):
            path[i - 1] = w[0, i - 1] * path[i - 1] + w[1, i - 1] * path[i]
        return path


class Neck(nn.Module):
    def __init__(self, levels, stack):
        super().__init__()
        self.stack = nn.ModuleList([Fuse(levels) for _ in range(stack)])
        self.lateral = nn.ModuleList([nn.Linear(2, 2) for _ in range(levels)])

    def forward(self, feats):
        outs = [lateral(feats[i]) for i, lateral in enumerate(self.lateral)]
        for fuse in self.stack:
            outs = fuse(outs)
        outs.append(outs[-1] * 2)
        return tuple(outs)


neck = Neck(levels=3, stack=2)
outs = neck([torch.randn(2), torch.randn(2), torch.randn(2)])
loss = sum(o.pow(2).mean() for o in outs)
loss.backward()
"""


@pytest.mark.torch
def test_items_a_callee_wrote_into_the_callers_list(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "bifpn.py"
    script.write_text(FUSED, encoding="utf-8")
    assert "modified by an inplace operation" in _run(script).stderr
    assert _errors(analyze(FUSED, str(script))) == {13}


# nn.Dropout(p=0) gives its input back (the same tensor), so a write into its output is a
# write into what the ReLU before it saved; with p > 0 it makes a new tensor.
DROPOUT_ZERO = """\
import torch
import torch.nn as nn

x = torch.randn(3, requires_grad=True)
y = nn.Sequential(nn.ReLU(), nn.Dropout(P))(x * 2)
y += 1
y.sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("p", ["0.0", "0.5"])
def test_a_dropout_of_zero_gives_its_input_back(p: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = DROPOUT_ZERO.replace("(P)", f"({p})")
    script = tmp_path / "dropout.py"
    script.write_text(text, encoding="utf-8")
    fails = "modified by an inplace operation" in _run(script).stderr
    assert fails == (p == "0.0")
    findings = [f for f in analyze(text, str(script)) if f.severity is not Severity.HINT]
    assert [(f.span.line, f.severity) for f in findings] == ([(6, Severity.ERROR)] if fails else [])


# fast-transformers' recurrent linear attention: each step returns its state `[S, Z]` in a
# list the encoder fills at `memory[i]` (a list as long as its ModuleList), and the next step
# adds into that state in place, after the batch-size check that raises. The previous step's
# einsum saved it: an Error on both writes. The maintainers' fix writes out of place when
# `K.grad_fn is not None` (here always), in place only for inference: nothing to report.
RECURRENT = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def forward(self, key, value, memory=None):
        K = torch.nn.functional.elu(key) + 1
        N, D = K.shape
        if memory is None:
            S, Z = key.new_zeros((N, D, value.shape[1])), key.new_zeros((N, D))
        else:
            S, Z = memory
        if len(S) != N:
            raise ValueError("The batch size changed during iteration")
        UPDATE
        V = torch.einsum("nd,ndm->nm", K, S) / torch.einsum("nd,nd->n", K, Z)[:, None]
        return V, [S, Z]


class Encoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.proj = nn.Linear(4, 4)

    def forward(self, x, memory=None):
        if memory is None:
            memory = [None] * len(self.layers)
        for i, layer in enumerate(self.layers):
            x, m = layer(self.proj(x), x, memory[i])
            memory[i] = m
        return x, memory


encoder = Encoder([Attention() for _ in range(2)])
memory = None
outs = []
for t in range(3):
    y, memory = encoder(torch.randn(2, 4), memory)
    outs.append(y)
torch.stack(outs).sum().backward()
"""
RECURRENT_STATE = {
    "in place": (
        """\
        Z += K
        S += torch.einsum("nd,nm->ndm", K, value)""",
        {15, 16},
    ),
    "fixed": (
        """\
        if K.grad_fn is not None or value.grad_fn is not None:
            Z = Z + K
            S = S + torch.einsum("nd,nm->ndm", K, value)
        else:
            Z += K
            S += torch.einsum("nd,nm->ndm", K, value)""",
        set(),
    ),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", RECURRENT_STATE)
def test_state_a_step_returns_and_the_next_writes(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    update, errors = RECURRENT_STATE[name]
    text = RECURRENT.replace("        UPDATE", update)
    script = tmp_path / "recurrent.py"
    script.write_text(text, encoding="utf-8")
    assert ("modified by an inplace operation" in _run(script).stderr) == bool(errors)
    findings = [f for f in analyze(text, str(script)) if f.severity is not Severity.HINT]
    assert {f.span.line for f in findings if f.severity is Severity.ERROR} == errors
    assert len(findings) == len(errors), findings


# MUNIT's Conv2dBlock: `if activation == "relu": self.activation = nn.ReLU()` / `else:
# self.activation = None`, then `if self.activation:` in forward. Where the constructor's
# argument decides, so does the test (a module is true): the ReLU's saved output written by
# `x += 1` is an Error with it and nothing without it; where the argument is not known, the
# test is not either (a Warning, as torch fails with one and runs with the other).
PRESENT = """\
import sys
import torch
import torch.nn as nn


class B(nn.Module):
    def __init__(self, flag):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)
        self.norm = nn.BatchNorm2d(2) if flag else None
        if flag:
            self.act = nn.ReLU()
        else:
            self.act = None
    def forward(self, x):
        x = self.conv(x)
        if self.norm:
            x = self.norm(x)
        if self.act:
            x = self.act(x)
        x += 1
        return x
B(FLAG)(torch.randn(2, 2, 2, 2)).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("flag", ["True", "False", "len(sys.argv) > 1"])
def test_if_a_module_attribute_the_constructor_built(flag: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = PRESENT.replace("FLAG", flag)
    script = tmp_path / "block.py"
    script.write_text(text, encoding="utf-8")
    runs = {argv: "modified by an inplace" in _run(script, *argv).stderr for argv in ((), ("1",))}
    found = [(f.span.line, f.severity) for f in analyze(text, str(script))]
    found = [(line, severity) for line, severity in found if severity is not Severity.HINT]
    if all(runs.values()):
        assert found == [(21, Severity.ERROR)]
    elif not any(runs.values()):
        assert found == []
    else:
        assert found == [(21, Severity.WARNING)]


# fairseq's MultiheadAttention: `qkv_same = query.data_ptr() == key.data_ptr() ==
# value.data_ptr()` chooses the self-attention branch, which chunks one projection into q, k
# and v; `q *= self.scaling` then writes into a view torch made with chunk, and torch refuses
# it. Called with one tensor for all three, the test is true (the same object), so the
# refusal is an Error; written out of place, nothing.
SAME_STORAGE = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.scaling = dim**-0.5

    def forward(self, query, key, value):
        qkv_same = query.data_ptr() == key.data_ptr() == value.data_ptr()
        if qkv_same:
            q, k, v = self.in_proj(query).chunk(3, dim=-1)
        else:
            q = self.in_proj(query)[..., :4]
            k, v = self.in_proj(key)[..., 4:8], self.in_proj(value)[..., 8:]
        SCALE
        return torch.softmax(q @ k.transpose(0, 1), dim=-1) @ v


x = torch.randn(3, 4)
Attention(4)(x, x, x).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("scale", ["q *= self.scaling", "q = q * self.scaling"])
def test_a_data_ptr_test_of_one_tensor_passed_three_times(scale: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = SAME_STORAGE.replace("SCALE", scale)
    script = tmp_path / "attention.py"
    script.write_text(text, encoding="utf-8")
    refused = "is a view and is being modified inplace" in _run(script).stderr
    assert refused == ("*=" in scale)
    found = [f for f in analyze(text, str(script)) if f.severity is not Severity.HINT]
    assert [(f.code, f.severity, f.span.line) for f in found] == (
        [("IPL009", Severity.ERROR, 18)] if refused else []
    )


# `self.gate = None` set once in `__init__`: `if self.gate:` takes its else path, as Python
# does; the write on the other path never runs (torch runs the program).
NONE_TEST = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gate = None

    def forward(self, x):
        y = torch.sigmoid(self.fc(x))
        if self.gate:
            y.mul_(2)
        return y


Net()(torch.randn(2, 4)).sum().backward()
"""


@pytest.mark.torch
def test_an_if_on_an_attribute_known_to_be_none(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "gate.py"
    script.write_text(NONE_TEST, encoding="utf-8")
    assert _run(script).returncode == 0
    assert not [f for f in analyze(NONE_TEST, str(script)) if f.severity is not Severity.HINT]


# A training loop inside a function (Dive-into-DL's RNN from scratch, its parameters in an
# nn.ParameterList unpacked by the step): the hidden state one batch's backward() went
# through, fed to the next batch, is the retention torch refuses; detached, it runs.
LOOP_IN_A_FUNCTION = """\
import torch
from torch import nn


def get_params():
    W_xh = nn.Parameter(torch.randn(3, 3))
    W_hh = nn.Parameter(torch.randn(3, 3))
    return nn.ParameterList([W_xh, W_hh])


def rnn(inputs, state, params):
    W_xh, W_hh = params
    H, = state
    outputs = []
    for X in inputs:
        H = torch.tanh(torch.matmul(X, W_xh) + torch.matmul(H, W_hh))
        outputs.append(H)
    return outputs, (H,)


def train(rnn, get_params):
    params = get_params()
    state = (torch.zeros(2, 3),)
    for step in range(3):
        CARRY
        inputs = [torch.randn(2, 3) for _ in range(2)]
        outputs, state = rnn(inputs, state, params)
        loss = torch.cat(outputs, dim=0).sum()
        loss.backward()


train(rnn, get_params)
"""


@pytest.mark.torch
@pytest.mark.parametrize("carry", ["pass", "state = tuple(s.detach() for s in state)"])
def test_a_hidden_state_carried_by_a_loop_in_a_function(carry: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = LOOP_IN_A_FUNCTION.replace("CARRY", carry)
    freed, found = _ran_and_found(text, tmp_path / "rnn.py", SECOND_TIME)
    assert freed == (carry == "pass")
    assert found == ([("IPL004", Severity.ERROR, 16)] if freed else [])


# A model class defined inside the training function (SPQ's quantization head): the class is
# known where the function builds it, so what its forward writes is judged as torch runs it.
LOCAL_CLASS = """\
import torch
import torch.nn as nn


def train():
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = torch.sigmoid(self.fc(x))
            WRITE
            return y

    head = Head()
    head(torch.randn(2, 4)).sum().backward()


train()
"""


@pytest.mark.torch
@pytest.mark.parametrize("write", ["y += 1", "y = y + 1"])
def test_a_class_a_function_defines(write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = LOCAL_CLASS.replace("WRITE", write)
    broken, found = _ran_and_found(text, tmp_path / "train.py", MODIFIED)
    assert broken == ("+=" in write)
    assert found == ([("IPL001", Severity.ERROR, 13)] if broken else [])


# lucidrains' helpers decide which module __init__ builds (`nn.Linear(dim_in, dim) if
# exists(dim_in) else nn.Identity()`, x-transformers' ContinuousTransformerWrapper): a function
# of the file that returns one expression is called with the constructor's constants.
HELPER_CHOOSES = """\
import torch
import torch.nn as nn


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


class Wrapper(nn.Module):
    def __init__(self, dim, dim_in=None):
        super().__init__()
        self.project_in = nn.Linear(dim_in, dim) if exists(dim_in) else nn.Identity()
        self.pos = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        x = self.project_in(x)
        x += self.pos
        return x


class Model(nn.Module):
    def __init__(self, dim_in=DIM_IN):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.wrap = Wrapper(4, dim_in=default(dim_in, None))

    def forward(self, x):
        return self.wrap(torch.sigmoid(self.fc(x)))


Model()(torch.randn(2, 4)).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("dim_in", ["None", "4"])
def test_a_helper_of_the_file_decides_what_init_builds(dim_in: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = HELPER_CHOOSES.replace("DIM_IN", dim_in)
    broken, found = _ran_and_found(text, tmp_path / "wrapper.py", MODIFIED)
    assert broken == (dim_in == "None")
    assert found == ([("IPL001", Severity.ERROR, 21)] if broken else [])


# A layer class a decorator factory makes from the torch layer it is given (second.pytorch's
# change_default_args, VoxelNet 995): `Linear(4, 4)` is an nn.Linear, which saves its input.
FACTORY_LAYER = """\
import torch
import torch.nn as nn


def change_default_args(**kwargs):
    def layer_wrapper(layer_class):
        class DefaultArgLayer(layer_class):
            def __init__(self, *args, **kw):
                for key, val in kwargs.items():
                    kw.setdefault(key, val)
                super().__init__(*args, **kw)

        return DefaultArgLayer

    return layer_wrapper


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        Linear = change_default_args(bias=False)(nn.Linear)
        self.fc = Linear(4, 4)

    def forward(self, x):
        h = x * 2
        out = self.fc(h)
        WRITE
        return out + h


Net()(torch.randn(2, 4, requires_grad=True)).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("write", ["h += 1", "h = h + 1"])
def test_a_layer_class_a_decorator_factory_makes(write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = FACTORY_LAYER.replace("WRITE", write)
    broken, found = _ran_and_found(text, tmp_path / "net.py", MODIFIED)
    assert broken == ("+=" in write)
    assert found == ([("IPL001", Severity.ERROR, 27)] if broken else [])


# A recurrent state kept in a NamedTuple (norse's LIFState): its fields are what it was built
# from, so the next step reading `state.h` builds on the graph the last backward() freed.
NAMED_TUPLE_STATE = """\
from typing import NamedTuple

import torch
import torch.nn as nn


class State(NamedTuple):
    h: torch.Tensor
    c: torch.Tensor


def step(x, state, w):
    h = torch.tanh(x @ w + state.h)
    return State(h, state.c + h)


w = nn.Parameter(torch.randn(3, 3))
s = State(torch.zeros(2, 3), torch.zeros(2, 3))
for i in range(3):
    CARRY
    s = step(torch.randn(2, 3), s, w)
    s.h.sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("carry", ["pass", "s = State(s.h.detach(), s.c.detach())"])
def test_a_state_kept_in_a_named_tuple(carry: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = NAMED_TUPLE_STATE.replace("CARRY", carry)
    freed, found = _ran_and_found(text, tmp_path / "state.py", SECOND_TIME)
    assert freed == (carry == "pass")
    assert found == ([("IPL004", Severity.ERROR, 13)] if freed else [])


# SSD's forward walks its backbone's and its extra layers' `_modules` by name and normalises
# the tap named in a list (uoip/SSD-variants, 1017): the names are the attributes' and the
# OrderedDict's keys, so the L2Norm call runs on that pass, and its `x /=` is judged there.
NAMED_LAYERS = """\
import itertools
from collections import OrderedDict

import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)


class L2Norm(nn.Module):
    def forward(self, x):
        WRITE
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = Base()
        self.extra = nn.Sequential(OrderedDict([("extra1", nn.Conv2d(4, 4, 1))]))
        self.taps = ["conv1", "extra1"]
        self.norm = L2Norm()

    def forward(self, x):
        outs = []
        for name, m in itertools.chain(self.base._modules.items(), self.extra._modules.items()):
            x = m(x)
            if name in self.taps:
                outs.append(self.norm(x) if name == "conv1" else x)
        return outs[0].mean() + outs[1].mean()


Net()(torch.randn(1, 3, 8, 8)).backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "write",
    [
        "x /= x.pow(2).sum(dim=1, keepdim=True).sqrt() + 1e-10",
        "x = x / (x.pow(2).sum(dim=1, keepdim=True).sqrt() + 1e-10)",
    ],
)
def test_layers_walked_by_their_names(write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = NAMED_LAYERS.replace("WRITE", write)
    broken, found = _ran_and_found(text, tmp_path / "ssd.py", MODIFIED)
    assert broken == ("/=" in write)
    assert found == ([("IPL001", Severity.ERROR, 18)] if broken else [])


# pytorch-auto-drive's SCNN passes messages row by row in place: each row's conv saves the
# row above, a view of the same tensor, and the next row's `add_` writes that tensor (blind
# split 1, b044). A write into a view is a write into its base, and gives the base the graph
# of what it added: the backward() from the base goes through those convs.
SPATIAL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpatialConv(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv_d = nn.Conv2d(c, c, (1, 3), padding=(0, 1))

    def forward(self, x):
        output = x
        for i in range(1, output.shape[2]):
            WRITE
        return output


stem = nn.Conv2d(3, 4, 1)
SpatialConv()(stem(torch.randn(1, 3, 5, 5))).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "write",
    [
        "output[:, :, i:i + 1, :].add_(F.relu(self.conv_d(output[:, :, i - 1:i, :])))",
        "output[:, :, i].add_(F.relu(self.conv_d(output[:, :, i - 1:i, :]))[:, :, 0])",
        "output = torch.cat([output[:, :, :i], output[:, :, i:i + 1] + "
        "F.relu(self.conv_d(output[:, :, i - 1:i])), output[:, :, i + 1:]], dim=2)",
    ],
    ids=["slice-add_", "select-add_", "cat"],
)
def test_a_write_into_a_view_is_a_write_into_its_base(write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = SPATIAL.replace("WRITE", write)
    broken = _as_torch_says(text, tmp_path / "scnn.py", MODIFIED, "IPL001", 14)
    assert broken == ("add_" in write)


# The same SCNN guards its export path with `if is_tracing():` (blind split 1, b044/b045):
# torch is never tracing, scripting or compiling while the program runs eagerly, so only the
# eager branch is judged.
TRACING = """\
import torch
import torch.nn as nn


def is_tracing():
    if torch.__version__ >= "1.7.0":
        return torch.jit.is_tracing()
    return torch._C._get_tracing_state() is not None


class Gate(nn.Module):
    def forward(self, x):
        y = torch.sigmoid(x)
        if TEST:
            y.mul_(2)
        else:
            y = y * 2
        return y


Gate()(torch.randn(3, requires_grad=True)).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "test",
    [
        "is_tracing()",
        "not is_tracing()",
        "torch.jit.is_scripting()",
        "torch.compiler.is_compiling()",
    ],
)
def test_branches_on_tracing_and_scripting(test: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = TRACING.replace("TEST", test)
    broken = _as_torch_says(text, tmp_path / "gate.py", MODIFIED, "IPL001", 15)
    assert broken == test.startswith("not ")


# A style transfer (blind split 1, b042/b043) computes the content image's features once,
# through a VGG it froze, from an image whose grad the analysis does not know (its stand-in
# transforms made it; here `torch.load` does), and compares every step's output with them. A
# frozen layer saves nothing for an input that does not require grad: no Error says the
# first backward freed what the next one needs. Not frozen, the features carry the VGG's
# graph into every step, and the second backward goes through what the first freed.
FROZEN_FEATURES = """\
import io

import torch
import torch.nn as nn

vgg = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
FREEZE
net = nn.Conv2d(3, 3, 1)
opt = torch.optim.Adam(net.parameters())
buf = io.BytesIO()
torch.save(torch.rand(1, 3, 8, 8), buf)
buf.seek(0)
content = torch.load(buf)
content_features = vgg(content)
for step in range(2):
    loss = ((vgg(net(content)) - content_features) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "freeze", ["for p in vgg.parameters():\n    p.requires_grad_(False)", "pass"]
)
def test_a_frozen_layer_of_an_input_of_unknown_grad(freeze: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = FROZEN_FEATURES.replace("FREEZE", freeze)
    freed, found = _ran_and_found(text, tmp_path / "style.py", SECOND_TIME)
    assert freed == (freeze == "pass")
    severities = [severity for code, severity, _ in found if code == "IPL004"]
    # (frozen: whether the image requires grad is what is not known, a Warning at most)
    assert severities == [Severity.ERROR] if freed else Severity.ERROR not in severities


# torchmodels' BaseRNN zeroes the LSTM's outputs past each length in place (blind split 1,
# b017), on an input whose grad the analysis does not know (there: masked with a helper it
# did not resolve; here: read with `torch.load`): an LSTM saves its output for its weights'
# gradients whatever its input, so the write is an Error.
RNN_MASK = """\
import io

import torch
import torch.nn as nn


def mask(lens, max_len):
    return lens.unsqueeze(1) > torch.arange(max_len).unsqueeze(0)


class utils:
    mask = staticmethod(mask)


class BaseRNN(nn.Module):
    def forward_cell(self, x, h0):
        raise NotImplementedError()

    def forward(self, x, lens=None, h=None):
        mask = None
        if lens is not None:
            mask = utils.mask(lens, x.size(1))
            x = x.masked_fill(~mask.unsqueeze(-1), 0)
        o, c, h = self.forward_cell(x, h)
        if lens is not None:
            WRITE
        return o, c, h


class LSTM(BaseRNN):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4, batch_first=True)

    def forward_cell(self, x, h0):
        o, (h, c) = self.lstm(x, h0)
        return o, c[-1], h[-1]


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = LSTM()
        self.out = nn.Linear(4, 3)

    def forward(self, x, lens):
        o, c, h = self.rnn(x, lens)
        return self.out(o)


buf = io.BytesIO()
torch.save(torch.randn(2, 5, 4), buf)
buf.seek(0)
Tagger()(torch.load(buf), torch.tensor([3, 5])).sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "write", ["o.masked_fill_(~mask.unsqueeze(-1), 0)", "o = o.masked_fill(~mask.unsqueeze(-1), 0)"]
)
def test_what_a_layer_saves_whatever_its_input(write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = RNN_MASK.replace("WRITE", write)
    broken = _as_torch_says(text, tmp_path / "tagger.py", MODIFIED, "IPL001", 26)
    assert broken == ("_(" in write)


# H3DNet's refine head hands its dict of outputs to a helper that fills it under keys it
# spells (`'objectness_scores' + mode`), and the training loop reads the loss terms from it
# (blind split 1, b058): what a callee put into a caller's dict is in it, by some key.
DICT_FILLED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def decode_scores(net, end_points, mode=""):
    end_points["objectness_scores" + mode] = net[:, 0:2]
    end_points["center" + mode] = net[:, 2:5]
    return end_points


class Refine(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(8, 8, 1)
        self.conv2 = nn.Conv1d(8, 5, 1)

    def forward(self, feature, end_points):
        net = F.relu(self.conv1(feature))
        WRITE
        net = self.conv2(net)
        return decode_scores(net, end_points, mode="opt")


head = Refine()
end_points = head(torch.randn(2, 8, 16), {})
loss = end_points["objectness_scoresopt"].pow(2).mean() + end_points["centeropt"].abs().mean()
loss.backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("write", ["net += feature", "net = net + feature"])
def test_a_dict_a_callee_fills(write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = DICT_FILLED.replace("WRITE", write)
    broken = _as_torch_says(text, tmp_path / "refine.py", MODIFIED, "IPL001", 20)
    assert broken == ("+=" in write)


# TQC's Mlp keeps its layers in a plain list and registers each with
# `self.add_module(f'fc{i}', fc)` (blind split 1, b052): they are the module's own, and the
# optimizer built on `critic.parameters()` steps them.
ADDED_MODULES = """\
import torch
import torch.nn as nn


class Mlp(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.fcs = []
        for i, size in enumerate(sizes):
            fc = nn.Linear(4, size)
            self.add_module(f"fc{i}", fc)
            self.fcs.append(fc)

    def forward(self, x):
        for fc in self.fcs:
            x = torch.relu(fc(x))
        return x


critic = Mlp([4, 4])
opt = torch.optim.Adam(critic.parameters())
x = torch.randn(3, 4)
critic_loss = critic(x).sum()
actor_loss = critic(x).pow(2).sum()
opt.zero_grad()
critic_loss.backward()
ORDER
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "order", ["opt.step()\nactor_loss.backward()", "actor_loss.backward()\nopt.step()"]
)
def test_modules_added_under_a_computed_name(order: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = ADDED_MODULES.replace("ORDER", order)
    broken = _as_torch_says(text, tmp_path / "tqc.py", MODIFIED, "IPL007", 27)
    assert broken == order.startswith("opt.step")


# Namespaces of the file: a class that holds classes (`class transforms: class Compose:`, as
# cases stand in for a library's module) and functions bound in a class body
# (`class utils: mask = staticmethod(mask)`): what they are is what Python finds.
NAMESPACES = """\
import torch


def scale(x):
    WRITE
    return x


class utils:
    scale = staticmethod(scale)


class ops:
    class Scale:
        def __call__(self, x):
            return utils.scale(x)


w = torch.randn(3, requires_grad=True)
y = torch.sigmoid(w)
CALL
y.sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize("call", ["utils.scale(y)", "ops.Scale()(y)"])
@pytest.mark.parametrize("write", ["x.mul_(2)", "x = x * 2"])
def test_classes_and_functions_held_by_a_class(call: str, write: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    text = NAMESPACES.replace("WRITE", write).replace("CALL", call)
    broken = _as_torch_says(text, tmp_path / "spaces.py", MODIFIED, "IPL001", 5)
    assert broken == ("_(" in write)


# A dtype however the file imported torch: `.to(th.float64)` after `import torch as th` copies
# a float32 tensor as `.to(torch.float64)` does (found by the differential benchmark's import
# reshape: the write into the copy was an Error).
DTYPE_SPELLINGS = """\
IMPORT


w = th.randn(4, 8, requires_grad=True)
out = th.logsumexp(w, dim=-1)
block = out.to(DTYPE)
block.clamp_(min=-1.0, max=1.0)
out.sum().backward()
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "spelling",
    [
        ("import torch as th", "th.float64"),
        ("import torch as th\nfrom torch import float64", "float64"),
        ("import torch as th", "dtype=th.double"),
        ("import torch as th", "th.float32"),
    ],
    ids=["alias", "from-import", "keyword", "same-dtype"],
)
def test_a_dtype_however_torch_was_imported(spelling: tuple[str, str], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    imports, dtype = spelling
    text = DTYPE_SPELLINGS.replace("IMPORT", imports).replace("DTYPE", dtype)
    line = 7 + imports.count("\n")
    broken = _as_torch_says(text, tmp_path / "dtype.py", MODIFIED, "IPL001", line)
    assert broken == dtype.endswith("float32")
