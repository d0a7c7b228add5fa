"""Multiplying by a Python scalar saves nothing, so updating the input in place afterwards is fine."""
# outcome: ok
import torch
import torch.nn as nn


class ScaledSkip(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        scaled = h * 2
        h += 1
        return scaled + h


def run() -> None:
    torch.manual_seed(0)
    m = ScaledSkip(4)
    x = torch.randn(2, 4)
    loss = m(x).sum()
    loss.backward()
