"""Runs the `run()` of tests/cases files, as a user's script would: `python case_driver.py
CASE` (its errors propagate), or `python case_driver.py --record OUT CASE...` (each case's
module outputs, losses and gradients saved with torch.save, to compare a run under the
detector with a plain one)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import torch


def load(path: str) -> Any:
    name = "case_" + Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tensors(value: object) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors(item)]
    return []


def record(path: str) -> dict[str, list[torch.Tensor | None]]:
    """What one case computed: every module output, every loss, every gradient."""
    outputs: list[torch.Tensor | None] = []
    losses: list[torch.Tensor | None] = []
    params: dict[int, torch.Tensor] = {}

    def hook(module: torch.nn.Module, args: object, output: object) -> None:
        outputs.extend(t.detach().clone() for t in tensors(output))
        for parameter in module.parameters():
            params.setdefault(id(parameter), parameter)

    # torch.autograd.backward, not Tensor.backward: torch looks the method up again when it
    # hands a call to a TorchFunctionMode (the detector's), so a wrapper there runs twice.
    original_backward = torch.autograd.backward
    original_grad = torch.autograd.grad

    def backward(roots: Any, *args: Any, **kwargs: Any) -> Any:
        losses.extend(t.detach().clone() for t in tensors(roots))
        return original_backward(roots, *args, **kwargs)

    inside: list[bool] = []

    def grad(*args: Any, **kwargs: Any) -> Any:
        # Under a TorchFunctionMode torch hands the call to the mode, which calls this same
        # public function again: only the outer call records.
        if inside:
            return original_grad(*args, **kwargs)
        inside.append(True)
        try:
            result = original_grad(*args, **kwargs)
        finally:
            inside.pop()
        losses.extend(t.detach().clone() for t in tensors(result))
        return result

    module = load(path)
    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    torch.autograd.backward = backward
    torch.autograd.grad = grad
    try:
        module.run()
    finally:
        handle.remove()
        torch.autograd.backward = original_backward
        torch.autograd.grad = original_grad
    grads = [p.grad.detach().clone() if p.grad is not None else None for p in params.values()]
    return {"outputs": outputs, "losses": losses, "grads": grads}


def main(argv: list[str]) -> None:
    if argv[:1] == ["--record"]:
        out, cases = argv[1], argv[2:]
        torch.save({Path(case).stem: record(case) for case in cases}, out)
    else:
        load(argv[0]).run()


if __name__ == "__main__":
    main(sys.argv[1:])
