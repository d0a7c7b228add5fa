"""Temporal conv over (batch, time, features) input: transposed before the Conv1d."""

# outcome: ok
# verify-inputs: float32(2, 32, 6)
import torch
from torch import nn


class TemporalConv(nn.Module):  # verify-target
    def __init__(self, features: int = 6, channels: int = 16) -> None:
        super().__init__()
        self.conv = nn.Conv1d(features, channels, kernel_size=5, padding=2)
        self.norm = nn.LayerNorm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x.transpose(1, 2))
        return self.norm(h.transpose(1, 2))
