"""`inplace_lsp.integrations.lightning.InplaceDetect` under a real PyTorch Lightning Trainer
on CPU: a planted step-order bug in manual optimization is named at the user's line, and a
clean model trains to the same loss and weights, bit for bit, with the callback on or off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pl = pytest.importorskip("pytorch_lightning", reason="pytorch-lightning is in the test extra")

ROOT = Path(__file__).resolve().parents[1]

GAN = textwrap.dedent(
    """\
    import sys

    import pytorch_lightning as pl
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from inplace_lsp.integrations.lightning import InplaceDetect


    class Gan(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.generator = nn.Linear(4, 2)
            self.discriminator = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))

        def training_step(self, batch, batch_idx):
            opt_g, opt_d = self.optimizers()
            (real,) = batch
            fake = self.generator(torch.randn(real.shape[0], 4))
            d_fake = self.discriminator(fake)
            d_loss = self.discriminator(real).mean() - self.discriminator(fake.detach()).mean()
            g_loss = -d_fake.mean()
            opt_d.zero_grad()
            self.manual_backward(d_loss)
            opt_d.step()  # the bug: g_loss's graph saved D's old weights
            opt_g.zero_grad()
            self.manual_backward(g_loss)
            opt_g.step()

        def configure_optimizers(self):
            return (
                torch.optim.SGD(self.generator.parameters(), lr=0.1),
                torch.optim.SGD(self.discriminator.parameters(), lr=0.1),
            )


    if __name__ == "__main__":
        torch.manual_seed(0)
        data = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
        callbacks = [InplaceDetect()] if sys.argv[1:] == ["on"] else []
        trainer = pl.Trainer(
            max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False, callbacks=callbacks,
        )
        trainer.fit(Gan(), data)
    """
)


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    env["PYTHONWARNINGS"] = "ignore"
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_step_between_two_backwards_is_named_at_the_users_line(tmp_path: Path) -> None:
    script = tmp_path / "gan.py"
    script.write_text(GAN, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    off = _run(script, "off")
    assert off.returncode == 1 and "modified by an inplace operation" in off.stderr
    assert "inplace-lsp detect" not in off.stderr
    on = _run(script, "on")
    assert on.returncode == 1, on.stderr
    lines = GAN.splitlines()
    step_line = (
        lines.index("        opt_d.step()  # the bug: g_loss's graph saved D's old weights") + 1
    )
    written = next(line for line in on.stderr.splitlines() if "written at" in line)
    assert written.startswith(f"  written at  gan.py:{step_line} by "), on.stderr
    assert "(via pytorch_lightning/" in written  # the framework's line, as context
    saved = next(line for line in on.stderr.splitlines() if "saved by" in line)
    d_fake = lines.index("        d_fake = self.discriminator(fake)") + 1
    assert saved == f"  saved by    AddmmBackward0 at gan.py:{d_fake}", on.stderr
    # v1: the first backward's AccumulateGrad had already run on D's weight
    versions = f"  versions    v1 saved by AddmmBackward0 at line {d_fake}, v2 written by add_ at "
    assert f"{versions}line {step_line}" in on.stderr.splitlines(), on.stderr
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text(encoding="utf-8"))
    (finding,) = report["findings"]
    assert finding["mutation"]["line"] == step_line
    assert report["exit_code"] == 1


class _Clean(pl.LightningModule):  # type: ignore[misc]
    """Automatic optimization; an in-place ReLU and a residual `+=` that are safe."""

    def __init__(self) -> None:
        import torch
        from torch import nn

        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 4))
        self.losses: list[float] = []

    def training_step(self, batch: object, batch_idx: int) -> object:
        (x,) = batch  # type: ignore[misc]
        out = self.body(x)
        out += x  # safe: Linear saves its input, not its output
        loss = out.pow(2).mean()
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> object:
        import torch

        return torch.optim.Adam(self.parameters(), lr=0.01)


def _fit(callbacks: list[object]) -> _Clean:
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(1)
    data = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=8)
    model = _Clean()
    trainer = pl.Trainer(
        max_epochs=2,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
    )
    trainer.fit(model, data)
    return model


def test_a_clean_model_trains_bit_for_bit_the_same_and_off_adds_nothing(tmp_path: Path) -> None:
    import torch

    from inplace_lsp.integrations.lightning import InplaceDetect

    plain = _fit([])
    on = InplaceDetect(report=tmp_path / "r.json")
    detected = _fit([on])
    assert detected.losses == plain.losses and len(plain.losses) == 8
    for a, b in zip(plain.parameters(), detected.parameters(), strict=True):
        assert torch.equal(a, b)
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["findings"] == [] and report["exit_code"] == 0
    off = InplaceDetect(enabled=False, report=tmp_path / "off.json")
    assert _fit([off]).losses == plain.losses
    assert off.steps.detector is None and not (tmp_path / "off.json").exists()


SOMETIMES = textwrap.dedent(
    """\
    import sys

    import pytorch_lightning as pl
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from inplace_lsp.integrations.lightning import InplaceDetect


    class Sometimes(pl.LightningModule):
        def __init__(self, bad_batch):
            super().__init__()
            self.bad_batch = bad_batch
            self.body = nn.Linear(2, 2)

        def training_step(self, batch, batch_idx):
            (x,) = batch
            h = torch.sigmoid(self.body(x))
            if batch_idx == self.bad_batch:  # a branch that runs on one batch only
                h.mul_(2)  # sigmoid saved its output
            return h.sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)


    if __name__ == "__main__":
        torch.manual_seed(0)
        data = DataLoader(TensorDataset(torch.randn(20, 2)), batch_size=2)
        trainer = pl.Trainer(
            max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False,
            callbacks=[InplaceDetect(every=3)],
        )
        trainer.fit(Sometimes(int(sys.argv[1])), data)
    """
)


@pytest.mark.parametrize(
    ("bad_batch", "checked"),
    [(0, True), (1, True), (2, False), (3, True), (4, False), (5, False), (6, True)],
)
def test_the_cheaper_mode_checks_the_first_two_steps_then_every_nth(
    tmp_path: Path, bad_batch: int, checked: bool
) -> None:
    """``InplaceDetect(every=3)``: batches 0, 1, 3, 6, ... run under the detector; a bug on
    another batch fails with torch's own error and a line that says how to find it."""
    script = tmp_path / "sometimes.py"
    script.write_text(SOMETIMES, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    run = _run(script, str(bad_batch))
    assert run.returncode == 1 and "modified by an inplace operation" in run.stderr, run.stderr
    mul_line = SOMETIMES.splitlines().index("            h.mul_(2)  # sigmoid saved its output")
    named = f"written at  sometimes.py:{mul_line + 1} by mul_" in run.stderr
    hint = (
        f"inplace-lsp: step {bad_batch + 1} failed with an in-place error while the detector "
        "was off (it checks the first two steps, then one in 3); rerun with every=1"
    )
    assert named is checked, run.stderr
    assert (hint in run.stderr) is not checked, run.stderr
