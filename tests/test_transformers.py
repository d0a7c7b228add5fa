"""`inplace_lsp.integrations.transformers.InplaceDetectCallback` under a real
`transformers.Trainer` (through accelerate) on CPU, with a tiny model: a planted in-place bug is
named at the model's line, and a clean model trains to the same loss and weights, bit for bit,
with the callback on or off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="transformers is in the test extra")
pytest.importorskip("accelerate", reason="transformers.Trainer needs accelerate (test extra)")

ROOT = Path(__file__).resolve().parents[1]

MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Tiny(nn.Module):
        def __init__(self, bug=False):
            super().__init__()
            torch.manual_seed(0)
            self.fc = nn.Linear(4, 4)
            self.head = nn.Linear(4, 1)
            self.bug = bug

        def forward(self, x, labels):
            h = torch.sigmoid(self.fc(x))
            if self.bug:
                h += 1  # sigmoid saved its output: backward fails
            out = self.head(h).squeeze(-1)
            return {"loss": (out - labels).pow(2).mean()}


    def data(n=16):
        g = torch.Generator().manual_seed(1)
        xs, ys = torch.randn(n, 4, generator=g), torch.randn(n, generator=g)
        return [{"x": x, "labels": y} for x, y in zip(xs, ys)]
    """
)

TRAIN = textwrap.dedent(
    """\
    import sys

    from transformers import Trainer, TrainingArguments

    from inplace_lsp.integrations.transformers import InplaceDetectCallback
    from tiny import Tiny, data

    args = TrainingArguments(
        output_dir="out", max_steps=4, per_device_train_batch_size=4, use_cpu=True,
        report_to="none", save_strategy="no", disable_tqdm=True, remove_unused_columns=False,
        logging_strategy="no",
    )
    callbacks = [InplaceDetectCallback()] if "on" in sys.argv else []
    Trainer(model=Tiny(bug="bug" in sys.argv), args=args, train_dataset=data(),
            callbacks=callbacks).train()
    """
)


def _write(folder: Path) -> None:
    (folder / "tiny.py").write_text(MODEL, encoding="utf-8")
    (folder / "train.py").write_text(TRAIN, encoding="utf-8")
    (folder / "pyproject.toml").write_text("", encoding="utf-8")


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT), str(folder), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)))
    env["PYTHONWARNINGS"] = "ignore"
    return subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_planted_bug_is_named_at_the_models_line(tmp_path: Path) -> None:
    _write(tmp_path)
    off = _run(tmp_path, "bug")
    assert off.returncode == 1 and "modified by an inplace operation" in off.stderr
    assert "inplace-lsp detect" not in off.stderr
    on = _run(tmp_path, "bug", "on")
    assert on.returncode == 1, on.stderr
    lines = MODEL.splitlines()
    written = lines.index("            h += 1  # sigmoid saved its output: backward fails") + 1
    saved = lines.index("        h = torch.sigmoid(self.fc(x))") + 1
    assert f"  written at  tiny.py:{written} by add_" in on.stderr, on.stderr
    assert f"  saved by    SigmoidBackward0 at tiny.py:{saved}" in on.stderr
    versions = f"  versions    v0 saved by SigmoidBackward0 at line {saved}, v1 written by add_ at "
    assert f"{versions}line {written}" in on.stderr.splitlines(), on.stderr
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text(encoding="utf-8"))
    (finding,) = report["findings"]
    assert (finding["mutation"]["line"], finding["saved_by"]["line"]) == (written, saved)


def _train(folder: Path, callbacks: list[Any]) -> tuple[list[float], list[Any]]:
    sys.path.insert(0, str(folder))
    try:
        import tiny  # noqa: PLC0415  # the module written for this test

        model = tiny.Tiny()
        args = transformers.TrainingArguments(
            output_dir=str(folder / "out"),
            max_steps=4,
            per_device_train_batch_size=4,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            remove_unused_columns=False,
            logging_steps=1,
        )
        trainer = transformers.Trainer(
            model=model, args=args, train_dataset=tiny.data(), callbacks=callbacks
        )
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        return losses, [p.detach().clone() for p in model.parameters()]
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("tiny", None)


def test_a_clean_model_trains_bit_for_bit_the_same_and_off_adds_nothing(tmp_path: Path) -> None:
    from inplace_lsp.integrations.transformers import InplaceDetectCallback

    _write(tmp_path)
    plain_losses, plain = _train(tmp_path, [])
    on = InplaceDetectCallback(report=tmp_path / "r.json")
    losses, weights = _train(tmp_path, [on])
    assert losses == plain_losses and len(losses) == 4
    assert all(torch.equal(a, b) for a, b in zip(plain, weights, strict=True))
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["findings"] == [] and report["exit_code"] == 0
    off = InplaceDetectCallback(enabled=False, report=tmp_path / "off.json")
    assert _train(tmp_path, [off])[0] == plain_losses
    assert off.steps.detector is None and not (tmp_path / "off.json").exists()


def test_accelerate_launch_runs_the_script_under_the_detector(tmp_path: Path) -> None:
    """The documented equivalent for a script started with `accelerate launch`."""
    _write(tmp_path)
    paths = [str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)), PYTHONWARNINGS="ignore")
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "1"]
    launch += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    done = subprocess.run(
        [*launch, "-m", "inplace_lsp", "run", "train.py", "bug"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    written = MODEL.splitlines().index(
        "            h += 1  # sigmoid saved its output: backward fails"
    )
    assert f"  written at  tiny.py:{written + 1} by add_" in done.stderr, done.stderr
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text(encoding="utf-8"))
    assert report["findings"][0]["mutation"]["line"] == written + 1
