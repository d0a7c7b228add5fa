"""Verify latency: a cold run (new interpreter, import torch) against the warm worker (fork of an
interpreter that imported torch once), and what pinpointing costs inside the run.

    python benchmarks/verify_latency.py [--runs N] [--python PATH] [--shape NAME ...]
                                        [--device cpu|cuda]

1. Same module, same spec, run N times through ``runner.run_spec``: cold (``warm=False``) and
   warm (the worker is started before timing); median wall time as the runner sees it.
   Target: warm at least 5x faster.
2. In this process, for each shape: forward + reduce + backward under
   ``set_detect_anomaly(True, check_nan=False)`` against the same under ``trace_call`` (saved
   tensor hooks + TorchFunctionMode + anomaly), median of N after a warm-up.
   Target: tracing at most 1.5x the plain anomaly-mode run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inplace_lsp.verify import runner
from inplace_lsp.verify.targets import find_target

REPO = Path(__file__).resolve().parents[1]
SHAPES = REPO / "tests" / "verify" / "shapes"
WARM_TARGET = 5.0
TRACE_TARGET = 1.5
DEFAULT_SHAPES = ("mlp", "resnet_block", "transformer_block", "gpt_tiny", "unet_tiny")


def spec_for(name: str, device: str = "cpu") -> dict[str, Any]:
    path = SHAPES / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if "# verify-target" in t)
    spec = find_target(text, line, path=str(path))
    spec["path"] = str(path)
    spec["device"] = device
    return spec


def median_of(runs: int, fn: Callable[[], float]) -> tuple[float, list[float]]:
    samples = [fn() for _ in range(runs)]
    return statistics.median(samples), samples


def cold_vs_warm(name: str, runs: int, python: str, device: str) -> tuple[float, float, float]:
    spec = spec_for(name, device)
    cold = runner.RunOptions(python=python, warm=False)
    warm = runner.RunOptions(python=python, warm=True)

    def timed(options: runner.RunOptions) -> Callable[[], float]:
        def once() -> float:
            started = time.perf_counter()
            result = runner.run_spec(spec, options)
            elapsed = time.perf_counter() - started
            if result["status"] != "ok":
                raise SystemExit(f"{name}: {result['status']}: {result['message']}")
            return elapsed

        return once

    started = time.perf_counter()
    runner.run_spec(spec, warm)  # starts the worker: not part of the warm figure
    startup = time.perf_counter() - started
    cold_median, _ = median_of(runs, timed(cold))
    warm_median, _ = median_of(runs, timed(warm))
    runner.shutdown_workers()
    return cold_median, warm_median, startup


def trace_cost(name: str, runs: int, device: str) -> tuple[float, float]:
    """(plain anomaly-mode seconds, traced seconds), medians, for one forward/backward."""
    import torch

    from inplace_lsp.verify import harness

    spec = spec_for(name, device)
    module = harness._load_user_module(spec["path"], None)
    cls = getattr(module, spec["name"])
    construct = spec["construct"]
    if construct["hook"]:
        args, kwargs = harness._split_call_args(
            harness._call_hook(construct["hook"], cls, module, None)
        )
    else:
        args = tuple(harness._materialize(v, device) for v in construct["args"])
        kwargs = {k: harness._materialize(v, device) for k, v in construct["kwargs"].items()}
    torch.manual_seed(0)
    model = cls(*args, **kwargs).to(device)
    if spec["inputs"]["hook"]:
        value = harness._call_hook(spec["inputs"]["hook"], cls, module, model)
        call_args, call_kwargs = harness._split_call_args(value)
    else:
        candidate = spec["inputs"]["candidates"][0]
        call_args = tuple(harness._materialize(v, device) for v in candidate["args"])
        call_kwargs = {k: harness._materialize(v, device) for k, v in candidate["kwargs"].items()}

    def step() -> None:
        model.zero_grad(set_to_none=True)
        loss = harness._reduce(model(*call_args, **call_kwargs))
        loss.backward()
        if device != "cpu":
            torch.cuda.synchronize()

    def plain() -> float:
        started = time.perf_counter()
        with torch.autograd.set_detect_anomaly(True, check_nan=False):
            step()
        return time.perf_counter() - started

    def traced() -> float:
        started = time.perf_counter()
        report = harness.trace_call(step, user_files=[spec["path"]])
        elapsed = time.perf_counter() - started
        assert report["status"] == "ok", report
        return elapsed

    for _ in range(3):  # warm-up: allocator, lazy imports, kernel selection
        plain()
        traced()
    # interleave so that drift (thermal, other processes) hits both equally
    plain_samples: list[float] = []
    traced_samples: list[float] = []
    for _ in range(runs):
        plain_samples.append(plain())
        traced_samples.append(traced())
    return statistics.median(plain_samples), statistics.median(traced_samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--shape", action="append", dest="shapes", metavar="NAME")
    parser.add_argument("--latency-shape", default="transformer_block", metavar="NAME")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (timed with a synchronize)")
    args = parser.parse_args(argv)
    shapes = tuple(args.shapes or DEFAULT_SHAPES)

    cold, warm, startup = cold_vs_warm(args.latency_shape, args.runs, args.python, args.device)
    speedup = cold / warm
    print(
        f"verify latency, {args.latency_shape} on {args.device}, median of {args.runs} "
        f"(python {args.python})"
    )
    print(f"  {'mode':<32} {'median':>10}")
    print(f"  {'cold (new interpreter)':<32} {cold * 1000:>8.0f} ms")
    print(f"  {'warm (forked from the worker)':<32} {warm * 1000:>8.0f} ms")
    print(f"  {'worker start (once)':<32} {startup * 1000:>8.0f} ms")
    print()

    print(f"trace cost, median of {args.runs} forward+backward, anomaly mode on in both")
    print(f"  {'shape':<20} {'plain':>10} {'traced':>10} {'ratio':>7}")
    ratios: list[float] = []
    for name in shapes:
        plain, traced = trace_cost(name, args.runs, args.device)
        ratio = traced / plain
        ratios.append(ratio)
        print(f"  {name:<20} {plain * 1000:>8.1f}ms {traced * 1000:>8.1f}ms {ratio:>6.2f}x")
    worst = max(ratios)
    print()
    warm_ok = speedup >= WARM_TARGET
    trace_ok = worst <= TRACE_TARGET
    print(
        f"summary: warm is {speedup:.1f}x faster than cold (target >= {WARM_TARGET:g}x: "
        f"{'met' if warm_ok else 'MISSED'}); tracing costs {statistics.median(ratios):.2f}x "
        f"(median), {worst:.2f}x (worst) of plain anomaly mode (target <= {TRACE_TARGET:g}x: "
        f"{'met' if trace_ok else 'MISSED'})"
    )
    return 0 if warm_ok and trace_ok else 1


if __name__ == "__main__":
    sys.exit(main())
