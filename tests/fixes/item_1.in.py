"""item (unsafe): `total += loss` keeps every graph alive; accumulate `loss.item()`."""

import torch
from torch import nn


def train(model: nn.Module, data: list, optimizer: torch.optim.Optimizer) -> float:
    running = 0.0
    for x, y in data:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss  # for the log (this comment stays)
    print(running)
    return 0.0
