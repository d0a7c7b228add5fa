"""What ``inplace_lsp.detect()`` costs a training step, beside anomaly mode, in one run.

    python benchmarks/detect_overhead.py [--models NAME ...] [--device cpu|cuda]
                                         [--precision fp32|bf16|fp16 ...] [--every N]
                                         [--batch N] [--repeat N] [--threads N] [--json PATH]
                                         [--check] [--profile]

One training step (forward, loss, backward, ``SGD.step()``, ``zero_grad()``) of each model,
under three conditions, and a fourth with ``--every N``:

* plain: nothing;
* anomaly: ``with torch.autograd.set_detect_anomaly(True):`` around the step (``check_nan``
  left at its default, True, as users get it: every backward node's outputs are checked for
  NaN, and every node keeps the formatted stack of the line that created it);
* detector: ``with inplace_lsp.detect():`` around the step (defaults: saved-tensor hooks and a
  TorchFunctionMode that records what each op saved and which line wrote in place);
* sampled (``--every N``): the cheaper mode, as ``InplaceDetect(every=N)`` runs it: the
  detector on the first two steps and then one in N, timed over whole rounds of N steps.

Models: resnet18 (ResNet-18 as torchvision writes it: BasicBlock, [2, 2, 2, 2],
``ReLU(inplace=True)``, BatchNorm, ``out += identity``; input 8x3x224x224, ``--batch`` changes
the 8; cross-entropy over 1000 classes), gpt (two pre-LayerNorm blocks: causal 8-head
self-attention written with matmuls, ``masked_fill`` and softmax, a GELU MLP of 4x width,
residual adds; d_model 512, sequence 256, batch 8; loss: the output's mean square), lstm (an
``nn.LSTMCell(256, 512)`` stepped in a Python loop over 100 time steps, batch 32, a linear head
on the last hidden state: the per-op case; ``nn.LSTM`` over the sequence is a single op and
would hide the per-op cost), mlp (Linear 64->128->128->10 with ReLU, batch 32: so small that
per-op overhead is all there is; one timed repetition is 200 steps); and the realistic pair
for a GPU: resnet50 (torchvision's ResNet-50, Bottleneck, [3, 4, 6, 3]; batch 128 on CUDA, 2 on
a CPU) and gpt2 (two GPT-2-small blocks: d_model 768, 12 heads, 1,024 tokens; batch 16 on CUDA,
1 on a CPU). A CPU runs the first four by default, CUDA all six. ``--precision``: each model
in each of fp32, bf16 (``torch.autocast`` around forward and loss) and fp16 (autocast and a
``torch.amp.GradScaler``; CUDA only).

After a warm-up (2 steps per condition; 20 for mlp), the conditions alternate within each
repetition (plain, anomaly, detector, plain, ...) so that drift weighs on all three. Times are
medians of ``--repeat`` repetitions, timed with ``time.perf_counter`` (on CUDA with a
``torch.cuda.synchronize()`` before and after the timed region, never inside the step); ratios
are medians of each repetition's ratios. Each step enters and leaves its condition, so that
cost is in the figures. "noise" is the widest half interquartile range of a condition's samples
over their median. The defaults take about 2 minutes on an idle 2-core CPU.

A second table counts, in one plain step, the torch calls a TorchFunctionMode sees and the
tensors autograd saves, and charges all of the detector's extra time to the calls.
``--profile`` adds, per model, the detector's time split between the tracer's methods (per
saved tensor: pack, unpack; per call: after, scan) and a cProfile.

Targets: the detector faster than anomaly mode on every model; on a CPU at most 1.2x plain on
resnet18, gpt, lstm, resnet50 and gpt2; on CUDA at most 1.1x plain on every model (the table
says whether the detector, and the cheaper mode, stay within it).
Outside the timing, one step under the detector is checked against a plain one
from the same weights: the same loss, gradients, updated parameters and buffers (bitwise; on
CUDA within rtol 1e-6 when not bitwise). Exit status 0 (this is a measurement) unless
``--check``: then 1 when a target is missed or the detector changed a result. A shared machine
makes the default thread count noisy (other processes take the cores torch's threads wait for):
``--threads 1`` there.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import io
import json
import math
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

import inplace_lsp
from inplace_lsp.integrations import Steps

CONDITIONS = ("plain", "anomaly", "detector")
ANOMALY_TARGET = 1.0  # detector / anomaly below this, on every model
DETECTOR_TARGET = 1.2  # detector / plain at most this on a CPU, where the model has the target
CUDA_TARGET = 1.1  # detector / plain at most this on a CUDA device, on every model
WARMUP = 2
LossOf = Callable[[nn.Module], torch.Tensor]


# --------------------------------------------------------------------------- the models


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock, op for op."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    """torchvision's ResNet Bottleneck (ResNet-50), op for op."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * self.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision.models.resnet18 / resnet50(weights=None), written out (torchvision may be
    absent): ``ResNet(BasicBlock, (2, 2, 2, 2))``, ``ResNet(Bottleneck, (3, 4, 6, 3))``."""

    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        depths: tuple[int, int, int, int],
        num_classes: int = 1000,
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        layers: list[nn.Module] = []
        inplanes = 64
        for planes, stride, depth in zip((64, 128, 256, 512), (1, 2, 2, 2), depths, strict=True):
            blocks = [block(inplanes, planes, stride)]
            inplanes = planes * block.expansion
            blocks += [block(inplanes, planes) for _ in range(depth - 1)]
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class CausalSelfAttention(nn.Module):
    future: torch.Tensor  # True above the diagonal: the positions a token must not see

    def __init__(self, d_model: int, heads: int, context: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        future = torch.triu(torch.ones(context, context, dtype=torch.bool), diagonal=1)
        self.register_buffer("future", future, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(width // self.heads)
        future = self.future[:length, :length]
        weights = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(batch, length, width)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d_model: int, heads: int, context: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, context)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPTStack(nn.Module):
    def __init__(self, blocks: int = 2, d_model: int = 512, heads: int = 8, context: int = 256):
        super().__init__()
        self.blocks = nn.Sequential(*(GPTBlock(d_model, heads, context) for _ in range(blocks)))
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln_f(self.blocks(x))


class LSTMLoop(nn.Module):
    """An LSTMCell stepped in Python: a few dozen ops per time step, each seen by the mode."""

    def __init__(self, inputs: int = 256, hidden: int = 512, classes: int = 10) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(inputs, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, sequence: torch.Tensor) -> torch.Tensor:
        h = sequence.new_zeros(sequence.shape[1], self.cell.hidden_size)
        c = torch.zeros_like(h)
        for x in sequence:
            h, c = self.cell(x, (h, c))
        return self.head(h)


def _classify(model: nn.Module, batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    model = model.to(device)
    images = torch.randn(batch, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (batch,), device=device)
    return model, lambda m: F.cross_entropy(m(images), labels)


def _resnet18(batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    return _classify(ResNet(BasicBlock, (2, 2, 2, 2)), batch, device)


def _resnet50(batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    return _classify(ResNet(Bottleneck, (3, 4, 6, 3)), batch, device)


def _gpt(batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    model = GPTStack().to(device)
    tokens = torch.randn(batch, 256, 512, device=device)
    return model, lambda m: m(tokens).pow(2).mean()


def _gpt2(batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    model = GPTStack(blocks=2, d_model=768, heads=12, context=1024).to(device)
    tokens = torch.randn(batch, 1024, 768, device=device)
    return model, lambda m: m(tokens).pow(2).mean()


def _lstm(batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    model = LSTMLoop().to(device)
    sequence = torch.randn(100, batch, 256, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    return model, lambda m: F.cross_entropy(m(sequence), labels)


def _mlp(batch: int, device: torch.device) -> tuple[nn.Module, LossOf]:
    model = nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
    ).to(device)
    features = torch.randn(batch, 64, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    return model, lambda m: F.cross_entropy(m(features), labels)


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    build: Callable[[int, torch.device], tuple[nn.Module, LossOf]]
    batch: int
    repeat: int  # timed repetitions (the median is reported)
    steps: int  # training steps in one timed repetition
    target: float | None  # detector / plain at most this on a CPU (None: only "below anomaly")
    cuda_batch: int = 0  # the batch on a CUDA device (0: ``batch``)


WORKLOADS = {
    w.name: w
    for w in (
        Workload("resnet18", "ResNet-18", _resnet18, 8, 20, 1, DETECTOR_TARGET),
        Workload("gpt", "GPT block x2", _gpt, 8, 20, 1, DETECTOR_TARGET),
        Workload("lstm", "LSTMCell x100", _lstm, 32, 30, 1, DETECTOR_TARGET),
        Workload("mlp", "MLP 64-128-128-10", _mlp, 32, 30, 200, None),
        Workload("resnet50", "ResNet-50", _resnet50, 2, 10, 1, DETECTOR_TARGET, cuda_batch=128),
        Workload("gpt2", "GPT-2 block x2", _gpt2, 1, 10, 1, DETECTOR_TARGET, cuda_batch=16),
    )
}
CPU_MODELS = ("resnet18", "gpt", "lstm", "mlp")  # the default on a CPU; on CUDA: all


# --------------------------------------------------------------------------- measuring


PRECISIONS = ("fp32", "bf16", "fp16")


class Training:
    """One model's training step in one precision: fp32; bf16 (``torch.autocast`` around the
    forward and the loss); fp16 (autocast and a ``torch.amp.GradScaler``, CUDA only)."""

    def __init__(
        self, model: nn.Module, loss_of: LossOf, precision: str, device: torch.device
    ) -> None:
        self.model, self.loss_of, self.precision, self.device = model, loss_of, precision, device
        self.optimizer = self.new_optimizer()
        self.scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None

    def new_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)

    def loss(self) -> torch.Tensor:
        if self.precision == "fp32":
            return self.loss_of(self.model)
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        with torch.autocast(self.device.type, dtype=dtype):
            return self.loss_of(self.model)

    def backward(self, loss: torch.Tensor) -> None:
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def update(self, optimizer: torch.optim.Optimizer) -> None:
        if self.scaler is None:
            optimizer.step()
        else:
            self.scaler.step(optimizer)
            self.scaler.update()
        optimizer.zero_grad()

    def step(self) -> None:
        self.backward(self.loss())
        self.update(self.optimizer)


class Sampled:
    """The cheaper mode as the framework callbacks run it (``InplaceDetect(every=N)``): the
    detector on the first two steps and then one in N, each step entered and left."""

    def __init__(self, every: int) -> None:
        self.steps = Steps(
            enabled=True, silent=True, retention=False, report=None, command="", every=every
        )

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        self.steps.enter()
        try:
            yield
        finally:
            self.steps.leave()


def condition(name: str, sampled: Sampled | None = None) -> AbstractContextManager[object]:
    if name == "anomaly":
        return torch.autograd.set_detect_anomaly(True)
    if name == "detector":
        return inplace_lsp.detect()
    if name == "sampled":
        assert sampled is not None
        return sampled.step()
    return contextlib.nullcontext()


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_ms(
    name: str,
    steps: int,
    step: Callable[[], None],
    device: torch.device,
    sampled: Sampled | None = None,
) -> float:
    """Milliseconds per step of ``steps`` steps, each inside condition ``name``."""
    _synchronize(device)
    started = time.perf_counter()
    for _ in range(steps):
        with condition(name, sampled):
            step()
    _synchronize(device)
    return (time.perf_counter() - started) * 1e3 / steps


@dataclass
class Sameness:
    """One step under the detector against a plain one from the same weights and inputs."""

    verdict: str  # "bitwise", "within rtol 1e-6" or "DIFFERENT"
    compared: int  # tensors compared: the loss, the gradients, the parameters and buffers after
    differing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict != "DIFFERENT"


def _one_step(training: Training, under: str) -> dict[str, torch.Tensor]:
    """The loss, the gradients, the updated parameters and buffers of one step, by name."""
    model = training.model
    optimizer = training.new_optimizer()
    if training.scaler is not None:
        training.scaler = torch.amp.GradScaler(training.device.type)
    with condition(under):
        loss = training.loss()
        training.backward(loss)
        found = {"loss": loss.detach().clone()}
        found |= {
            f"grad {n}": p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
        }
        training.update(optimizer)
    found |= {f"param {n}": p.detach().clone() for n, p in model.named_parameters()}
    found |= {f"buffer {n}": b.clone() for n, b in model.named_buffers()}
    return found


def same_results(training: Training) -> Sameness:
    model = training.model
    state = copy.deepcopy(model.state_dict())
    plain = _one_step(training, "plain")
    model.load_state_dict(state)
    traced = _one_step(training, "detector")
    model.load_state_dict(state)
    if training.scaler is not None:
        training.scaler = torch.amp.GradScaler(training.device.type)
    differing = sorted(k for k in plain if k not in traced or not torch.equal(plain[k], traced[k]))
    if not differing and plain.keys() == traced.keys():
        return Sameness("bitwise", len(plain))
    far = [
        k
        for k in differing
        if k not in traced or not torch.allclose(plain[k], traced[k], rtol=1e-6, atol=0.0)
    ]
    verdict = "DIFFERENT" if far or plain.keys() != traced.keys() else "within rtol 1e-6"
    return Sameness(verdict, len(plain), far or differing)


class _CallCounter(TorchFunctionMode):
    """Counts the torch calls a TorchFunctionMode sees (what the detector's mode intercepts)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(
        self,
        func: Callable[..., object],
        types: Sequence[type],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> object:
        self.calls += 1
        return func(*args, **(kwargs or {}))


def count_per_step(step: Callable[[], None]) -> tuple[int, int]:
    """(torch calls, tensors saved for backward) in one plain step."""
    saved = 0

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        nonlocal saved
        saved += 1
        return tensor

    counter = _CallCounter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), counter:
        step()
    return counter.calls, saved


# The tracer's methods that run for each saved tensor (pack at the save, unpack when backward
# reads it) and for each torch call (after; scan, inside it, after a call that may write).
SPLIT = ("pack", "unpack", "after", "scan")


@dataclass
class Split:
    """Where the detector's time goes: seconds and calls of each tracer method over ``steps``
    detector steps (what is left of the detector's extra time is the mode's own dispatch, the
    hooks' calls from C++ into Python, and entering and leaving ``detect()``)."""

    seconds: dict[str, float]
    calls: dict[str, int]
    steps: int

    def us_each(self, name: str) -> float:
        return self.seconds[name] * 1e6 / max(self.calls[name], 1)

    def ms_per_step(self, name: str) -> float:
        return self.seconds[name] * 1e3 / self.steps

    @property
    def methods_ms(self) -> float:
        return sum(self.ms_per_step(n) for n in ("pack", "unpack", "after"))  # scan: in after

    def as_json(self) -> dict[str, Any]:
        return {
            name: {
                "calls_per_step": self.calls[name] / self.steps,
                "us_each": self.us_each(name),
                "ms_per_step": self.ms_per_step(name),
            }
            for name in SPLIT
        }


@contextlib.contextmanager
def _timing_tracer(split: Split) -> Iterator[None]:
    """Wrap the tracer's methods with a clock (a diagnostic only: it adds ~0.2 us a call)."""
    from inplace_lsp.verify.tracer import Tracer

    originals = {name: getattr(Tracer, name) for name in SPLIT}

    def clocked(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                split.seconds[name] += time.perf_counter() - started
                split.calls[name] += 1

        return run

    for name, method in originals.items():
        setattr(Tracer, name, clocked(name, method))
    try:
        yield
    finally:
        for name, method in originals.items():
            setattr(Tracer, name, method)


def split_detector(step: Callable[[], None], steps: int) -> Split:
    """Time spent in each tracer method over ``steps`` detector steps."""
    split = Split(dict.fromkeys(SPLIT, 0.0), dict.fromkeys(SPLIT, 0), steps)
    with _timing_tracer(split):  # before detect(): it binds pack and unpack when entered
        for _ in range(steps):
            with inplace_lsp.detect():
                step()
    return split


def profile_detector(step: Callable[[], None], steps: int, lines: int = 14) -> str:
    """cProfile of ``steps`` steps under the detector: the functions with the most own time."""
    profile = cProfile.Profile()
    for _ in range(steps):
        with inplace_lsp.detect():
            profile.enable()
            step()
            profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(lines)
    text = out.getvalue()
    return text[text.index("   ncalls") :].rstrip() if "   ncalls" in text else text


@dataclass
class Result:
    workload: Workload
    precision: str
    batch: int
    repeat: int
    samples: dict[str, list[float]]  # condition -> ms per step of each repetition
    calls: int
    saved: int
    sameness: Sameness
    target: float | None  # detector / plain at most this (None: only "below anomaly")
    every: int = 0  # the cheaper mode's N, when it was measured ("sampled")
    split: Split | None = None
    profile: str | None = None

    @property
    def title(self) -> str:
        return self.workload.title + ("" if self.precision == "fp32" else f" {self.precision}")

    @property
    def key(self) -> str:
        return self.workload.name + ("" if self.precision == "fp32" else f"-{self.precision}")

    def ms(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def spread(self, name: str) -> float:
        """Half the interquartile range of a condition's samples over their median: the noise."""
        samples = self.samples[name]
        if len(samples) < 2:
            return 0.0
        low, _, high = statistics.quantiles(samples, n=4)
        return (high - low) / 2 / self.ms(name)

    def ratio(self, name: str, reference: str) -> float:
        """The median of the repetitions' ratios: the conditions of one repetition ran back to
        back, so load that changes between repetitions cancels out of each ratio."""
        pairs = zip(self.samples[name], self.samples[reference], strict=True)
        return statistics.median(a / b for a, b in pairs)

    @property
    def anomaly_ratio(self) -> float:
        return self.ratio("anomaly", "plain")

    @property
    def detector_ratio(self) -> float:
        return self.ratio("detector", "plain")

    @property
    def sampled_ratio(self) -> float | None:
        return self.ratio("sampled", "plain") if "sampled" in self.samples else None

    @property
    def below_anomaly(self) -> bool:
        return self.ratio("detector", "anomaly") < ANOMALY_TARGET

    @property
    def within_target(self) -> bool | None:
        return None if self.target is None else self.detector_ratio <= self.target

    @property
    def sampled_within_target(self) -> bool | None:
        sampled = self.sampled_ratio
        return None if self.target is None or sampled is None else sampled <= self.target

    @property
    def met(self) -> bool:
        return self.below_anomaly and self.within_target is not False and self.sameness.ok

    @property
    def extra_ms(self) -> float:
        """The detector's extra time per step: the median of the repetitions' differences."""
        pairs = zip(self.samples["detector"], self.samples["plain"], strict=True)
        return statistics.median(a - b for a, b in pairs)

    def per_call_us(self) -> float:
        """The detector's extra time per torch call, in microseconds (all of it charged there)."""
        return self.extra_ms * 1e3 / max(self.calls, 1)

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "precision": self.precision,
            "batch": self.batch,
            "repeat": self.repeat,
            "steps_per_repeat": self.workload.steps,
            "ms_per_step": {name: self.ms(name) for name in self.samples},
            "samples_ms": self.samples,
            "noise": {name: self.spread(name) for name in self.samples},
            "anomaly_ratio": self.anomaly_ratio,
            "detector_ratio": self.detector_ratio,
            "detector_to_anomaly_ratio": self.ratio("detector", "anomaly"),
            "sampled_every": self.every or None,
            "sampled_ratio": self.sampled_ratio,
            "torch_calls_per_step": self.calls,
            "saved_tensors_per_step": self.saved,
            "detector_extra_ms_per_step": self.extra_ms,
            "detector_extra_us_per_call": self.per_call_us(),
            "targets": {
                "detector_below_anomaly": self.below_anomaly,
                "detector_max_ratio": self.target,
                "detector_within_ratio": self.within_target,
                "sampled_within_ratio": self.sampled_within_target,
            },
            "same_results": {
                "verdict": self.sameness.verdict,
                "ok": self.sameness.ok,
                "tensors_compared": self.sameness.compared,
                "differing": self.sameness.differing,
            },
            "detector_split": None if self.split is None else self.split.as_json(),
            "met": self.met,
        }


def measure(
    workload: Workload,
    device: torch.device,
    batch: int,
    repeat: int,
    *,
    precision: str = "fp32",
    every: int = 0,
    profile: bool = False,
) -> Result:
    torch.manual_seed(0)
    model, loss_of = workload.build(batch, device)
    model.train()
    training = Training(model, loss_of, precision, device)
    sameness = same_results(training)
    step = training.step
    calls, saved = count_per_step(step)
    names = CONDITIONS + (("sampled",) if every > 1 else ())
    sampled = Sampled(every) if every > 1 else None
    steps = {name: workload.steps for name in names}
    if sampled is not None:  # whole rounds of N steps: each repetition holds the same checks
        steps["sampled"] = every * max(1, workload.steps // every)
    for name in names:  # allocator, lazy imports, kernel selection, the tracer's caches
        timed_ms(name, max(WARMUP, min(steps[name], 20)), step, device, sampled)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeat):
        for name in names:
            samples[name].append(timed_ms(name, steps[name], step, device, sampled))
    target = CUDA_TARGET if device.type == "cuda" else workload.target
    result = Result(
        workload, precision, batch, repeat, samples, calls, saved, sameness, target, every
    )
    if profile:
        result.split = split_detector(step, max(workload.steps, 3))
        result.profile = profile_detector(step, workload.steps)
    return result


# --------------------------------------------------------------------------- reporting


def machine(device: torch.device) -> dict[str, Any]:
    found: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": str(device),
    }
    if device.type == "cuda":
        found["device_name"] = torch.cuda.get_device_name(device)
        found["cuda"] = torch.version.cuda
    return found


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "MISSED")


def _split_text(r: Result) -> str:
    split = r.split
    assert split is not None
    extra = r.extra_ms
    after = split.ms_per_step("after") - split.ms_per_step("scan")  # scan runs inside after
    rest = extra - split.methods_ms
    per_step = split.calls["pack"] / split.steps, split.calls["scan"] / split.steps
    return (
        f"the detector's extra {extra:.2f} ms/step (median of the repetitions) =\n"
        f"    pack    {split.ms_per_step('pack'):8.2f} ms  {split.us_each('pack'):6.1f} us x "
        f"{per_step[0]:.0f} saved tensors\n"
        f"    unpack  {split.ms_per_step('unpack'):8.2f} ms  {split.us_each('unpack'):6.1f} us x "
        f"{split.calls['unpack'] / split.steps:.0f}\n"
        f"    after   {after:8.2f} ms  {after * 1e3 / max(r.calls, 1):6.1f} us x {r.calls} torch "
        "calls (without scan)\n"
        f"    scan    {split.ms_per_step('scan'):8.2f} ms  {split.us_each('scan'):6.1f} us x "
        f"{per_step[1]:.0f} calls that may write\n"
        f"    rest    {rest:8.2f} ms  {rest * 1e3 / max(r.calls, 1):6.1f} us x {r.calls} torch "
        "calls (the mode's dispatch, C++ -> Python for the hooks, entering and leaving; "
        "within the noise)"
    )


def report(results: Sequence[Result], facts: dict[str, Any]) -> None:
    print(
        f"detect overhead on {facts['device']} ({facts['cpu_count']} CPUs, "
        f"{facts['torch_threads']} torch threads, torch {facts['torch']}); ms per training "
        "step, median; ratios: the median of each repetition's"
    )
    every = max(r.every for r in results)
    sampled_head = f"{'every ' + str(every):>10}{'ratio':>7}" if every else ""
    print(
        f"{'model':<24}{'batch':>6}{'reps':>7}{'plain':>10}{'anomaly':>10}{'ratio':>7}"
        f"{'detector':>10}{'ratio':>7}{sampled_head}{'noise':>7}  {'< anomaly':<10}"
        f"{'target':<14}{'same results'}"
    )
    for r in results:
        reps = f"{r.repeat}x{r.workload.steps}" if r.workload.steps > 1 else str(r.repeat)
        noise = 100 * max(r.spread(name) for name in r.samples)
        sampled = ""
        if every:
            sampled = f"{r.ms('sampled'):>10.2f}{r.sampled_ratio:>6.2f}x" if r.every else " " * 17
        target = "-" if r.target is None else f"<= {r.target:.2f}x {_mark(r.within_target)}"
        print(
            f"{r.title:<24}{r.batch:>6}{reps:>7}{r.ms('plain'):>10.2f}"
            f"{r.ms('anomaly'):>10.2f}{r.anomaly_ratio:>6.2f}x{r.ms('detector'):>10.2f}"
            f"{r.detector_ratio:>6.2f}x{sampled}{noise:>6.0f}%  {_mark(r.below_anomaly):<10}"
            f"{target:<14}{r.sameness.verdict}"
        )
    if every:
        print(
            f"every {every}: the cheaper mode (InplaceDetect(every={every})): the detector on "
            f"the first two steps and then one in {every}, over whole rounds of {every} steps; "
            "within target: "
            + ", ".join(f"{r.key} {_mark(r.sampled_within_target)}" for r in results)
        )
    print()
    print(f"{'model':<24}{'torch calls':>12}{'saved':>8}{'detector extra / call':>24}")
    for r in results:
        print(f"{r.title:<24}{r.calls:>12}{r.saved:>8}{r.per_call_us():>21.1f} us")
    for r in results:
        if r.sameness.differing:
            print(f"{r.title}: differs in {', '.join(r.sameness.differing[:8])}")
        if r.split is not None:
            print(f"\n{r.title}: {_split_text(r)}")
        if r.profile:
            steps = f"{r.workload.steps} steps" if r.workload.steps > 1 else "one step"
            print(f"cProfile of {steps} under the detector (own time):\n{r.profile}")
    missed = [r.key for r in results if not r.met]
    worst = max(results, key=lambda r: r.detector_ratio)
    print(
        f"\nsummary: the detector costs {statistics.median(r.detector_ratio for r in results):.2f}x"
        f" plain (median), {worst.detector_ratio:.2f}x worst ({worst.key}); anomaly "
        f"mode {statistics.median(r.anomaly_ratio for r in results):.2f}x; results unchanged on "
        f"{sum(r.sameness.ok for r in results)}/{len(results)} models; "
        + (f"targets missed on {', '.join(missed)}" if missed else "every target met")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--models",
        nargs="*",
        choices=list(WORKLOADS),
        help=f"default: {' '.join(CPU_MODELS)} on a CPU, all on CUDA",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument(
        "--precision",
        nargs="*",
        choices=PRECISIONS,
        default=["fp32"],
        help="each model in each (bf16: autocast; fp16: autocast and GradScaler, CUDA only)",
    )
    parser.add_argument(
        "--every",
        type=int,
        default=0,
        help="also measure the cheaper mode: the detector on the first two steps and then "
        "one in N (as InplaceDetect(every=N) runs it)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        help="batch size of every model chosen (defaults: "
        + ", ".join(
            f"{w.name} {w.batch}" + (f" ({w.cuda_batch} on CUDA)" if w.cuda_batch else "")
            for w in WORKLOADS.values()
        )
        + ")",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        help="timed repetitions per condition (defaults: "
        + ", ".join(f"{w.name} {w.repeat}" for w in WORKLOADS.values())
        + ")",
    )
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a target is missed or the detector changed a result",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="per model: the detector's time by tracer method, and a cProfile",
    )
    parser.add_argument(
        "--threads", type=int, help="torch.set_num_threads (default: torch's own choice)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("detect_overhead: --device cuda, but this torch sees no CUDA device", file=sys.stderr)
        return 2
    if "fp16" in args.precision and device.type != "cuda":
        print("detect_overhead: --precision fp16 needs --device cuda", file=sys.stderr)
        return 2
    facts = machine(device)
    models = args.models or (list(WORKLOADS) if device.type == "cuda" else list(CPU_MODELS))
    results = []
    for name in models:
        workload = WORKLOADS[name]
        batch = args.batch or (device.type == "cuda" and workload.cuda_batch) or workload.batch
        for precision in args.precision:
            started = time.perf_counter()
            result = measure(
                workload,
                device,
                batch,
                args.repeat or workload.repeat,
                precision=precision,
                every=args.every,
                profile=args.profile,
            )
            results.append(result)
            print(
                f"  {result.key}: {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    report(results, facts)
    if args.json:
        payload = {
            "machine": facts,
            "targets": {
                "detector_below_anomaly": True,
                "detector_max_ratio": CUDA_TARGET if device.type == "cuda" else DETECTOR_TARGET,
            },
            "models": {r.key: r.as_json() for r in results},
            "met": all(r.met for r in results),
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 1 if args.check and not all(r.met for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
