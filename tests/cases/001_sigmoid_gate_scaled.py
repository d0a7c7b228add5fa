"""Gated residual unit: the sigmoid gate is halved in place after it was computed."""
# outcome: inplace-error
import torch
import torch.nn as nn


class GatedResidual(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.value = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.gate(x))  # saved-by
        # SigmoidBackward0 needs its output g; the halving below overwrites it.
        g *= 0.5  # error: IPL001
        return x + g * self.value(x)


def run() -> None:
    torch.manual_seed(0)
    model = GatedResidual(8)
    x = torch.randn(4, 8)
    loss = model(x).pow(2).mean()
    loss.backward()
