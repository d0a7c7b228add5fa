"""Training code written for a framework (data/frameworks/*.pyi): a LightningModule in manual
optimization and a Hugging Face Trainer whose compute_loss the user overrides. Each program is
analysed as the user wrote it and run under torch through the stand-in of
tests/realworld/standins (the part of the API these call, behaving as the framework does), put
before the installed packages (the real frameworks the test extra installs run
tests/test_lightning.py and tests/test_transformers.py).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Severity

STANDINS = Path(__file__).resolve().parent / "realworld" / "standins"

LIGHTNING_GAN = """\
import torch
import torch.nn as nn
import pytorch_lightning as pl


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G, self.D = nn.Linear(4, 4), nn.Linear(4, 1)

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.G.parameters())
        opt_d = torch.optim.Adam(self.D.parameters())
        return opt_g, opt_d

    def training_step(self, batch, batch_idx):
        opt_g, opt_d = self.optimizers()
        fake = self.G(batch)
        d_loss = self.D(fake.detach()).mean()
        g_loss = -self.D(fake).mean()
        self.manual_backward(d_loss)
        opt_d.step()
        self.manual_backward(g_loss)
        opt_g.step()


if __name__ == "__main__":
    torch.manual_seed(0)
    pl.Trainer(max_epochs=1).fit(GAN(), [torch.randn(8, 4) for _ in range(2)])
"""

# The order the Lightning docs show for a GAN: each loss backwarded and stepped in turn, D's
# loss computed after G's step.
LIGHTNING_GAN_FIXED = LIGHTNING_GAN.replace(
    """        fake = self.G(batch)
        d_loss = self.D(fake.detach()).mean()
        g_loss = -self.D(fake).mean()
        self.manual_backward(d_loss)
        opt_d.step()
        self.manual_backward(g_loss)
        opt_g.step()
""",
    """        fake = self.G(batch)
        g_loss = -self.D(fake).mean()
        self.manual_backward(g_loss)
        opt_g.step()
        opt_d.zero_grad()
        d_loss = self.D(fake.detach()).mean()
        self.manual_backward(d_loss)
        opt_d.step()
""",
)

HF_COMPUTE_LOSS = """\
import torch
import torch.nn as nn
from transformers import Trainer, TrainingArguments


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


class ShiftedLossTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        scores = torch.sigmoid(model(inputs["x"]))
        scores -= 0.5
        loss = (scores ** 2).mean()
        return (loss, scores) if return_outputs else loss


if __name__ == "__main__":
    torch.manual_seed(0)
    data = [{"x": torch.randn(4)} for _ in range(4)]
    trainer = ShiftedLossTrainer(model=Regressor(), args=TrainingArguments(), train_dataset=data)
    trainer.train()
"""


def _errors(text: str) -> list[tuple[int, str]]:
    return [(f.span.line, f.code) for f in analyze(text) if f.severity is Severity.ERROR]


def _line_of(text: str, code: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.strip() == code)


def _run(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(text, encoding="utf-8")
    runner = textwrap.dedent(
        f"""
        import runpy, sys
        sys.path.insert(0, {str(STANDINS)!r})
        runpy.run_path({str(script)!r}, run_name="__main__")
        """
    )
    return subprocess.run(
        [sys.executable, "-c", runner], capture_output=True, text=True, timeout=120, check=False
    )


def test_lightning_manual_optimization_step_between_backwards() -> None:
    """`opt_d.step()` between `self.manual_backward(d_loss)` and the backward of `g_loss`,
    whose graph saved D's weights: IPL007 on the step, as in a plain loop."""
    assert _errors(LIGHTNING_GAN) == [(_line_of(LIGHTNING_GAN, "opt_d.step()"), "IPL007")]
    assert _errors(LIGHTNING_GAN_FIXED) == []


def test_hugging_face_compute_loss_override_is_backpropagated() -> None:
    """The loss a Trainer's compute_loss returns is what transformers backpropagates: the
    sigmoid output it shifted in place is read by that backward."""
    assert _errors(HF_COMPUTE_LOSS) == [(_line_of(HF_COMPUTE_LOSS, "scores -= 0.5"), "IPL001")]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("text", "error"),
    [
        (LIGHTNING_GAN, "modified by an inplace operation"),
        (LIGHTNING_GAN_FIXED, None),
        (HF_COMPUTE_LOSS, "modified by an inplace operation"),
    ],
    ids=["lightning-gan", "lightning-gan-fixed", "hf-compute-loss"],
)
def test_what_the_framework_does(text: str, error: str | None, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    ran = _run(text, tmp_path)
    if error is None:
        assert ran.returncode == 0, ran.stderr
    else:
        assert ran.returncode != 0 and error in ran.stderr, ran.stderr
