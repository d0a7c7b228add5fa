"""remove-anomaly on a `with detect_anomaly()` block, `os` already imported, non-ASCII text."""

import os

import torch
from torch import nn


def train_step(model: nn.Module, x: torch.Tensor) -> float:
    print(os.getpid(), "→ Schritt")
    with torch.autograd.set_detect_anomaly(bool(os.environ.get("INPLACE_LSP_DETECT_ANOMALY")), check_nan=False):  # Anomalie
        loss = model(x).sum()
        loss.backward()
    return loss.item()
