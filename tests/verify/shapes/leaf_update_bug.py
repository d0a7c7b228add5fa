"""Layer that updates its own parameter in forward, outside torch.no_grad(): a leaf error."""

# outcome: leaf-error
# verify-inputs: float32(2, 10)
import torch
from torch import nn


class DriftingScale(nn.Module):  # verify-target
    def __init__(self, dim: int = 10) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale.mul_(0.99)  # error: IPL002
        return self.fc(x) * self.scale
