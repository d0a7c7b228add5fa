"""item with a compound value (parenthesized) and non-ASCII text before it on the line."""

import torch
from torch import nn


def train(model: nn.Module, data: list, optimizer: torch.optim.Optimizer) -> None:
    gesamt = 0.0
    for x, y in data:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        größe = len(x); gesamt += (loss * größe).item()  # Σ
    print(gesamt)
