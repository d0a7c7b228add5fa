"""Low-rank layer built from raw nn.Parameters and `@`: no nn.Linear to read the width from."""

# outcome: ok
# verify-inputs: float32(2, 48)
import torch
from torch import nn


class LowRank(nn.Module):  # verify-target
    def __init__(self, dim: int = 48, rank: int = 4) -> None:
        super().__init__()
        self.down = nn.Parameter(torch.randn(dim, rank) / dim**0.5)
        self.up = nn.Parameter(torch.zeros(rank, dim))
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.scale * (x @ self.down) @ self.up
