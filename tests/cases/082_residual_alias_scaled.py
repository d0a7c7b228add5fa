"""Keeps `skip = h` (an alias, not a copy) and then scales h in place: no autograd error, but skip changed too."""
# outcome: ok
import torch
import torch.nn as nn


class DenseFusion(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        h = self.fc1(x)
        skip = h
        h *= 0.5  # warning: IPL008
        return self.fc2(torch.cat([h, skip], dim=-1))


def run() -> None:
    torch.manual_seed(0)
    model = DenseFusion(4)
    loss = model(torch.randn(3, 4)).sum()
    loss.backward()
