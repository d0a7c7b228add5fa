"""Squeeze-and-excitation gate rescaling its sigmoid output in place: verify names both lines."""

# outcome: inplace-error
# verify-inputs: float32(2, 8, 32, 32)
import torch
from torch import nn


class SEGate(nn.Module):  # verify-target
    def __init__(self, channels: int, reduction: int = 4) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, channels // reduction, 1)
        self.fc2 = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.relu(self.fc1(self.pool(x)))
        s = torch.sigmoid(self.fc2(s))  # saved-by
        s *= 2.0  # error: IPL001
        return x * s


def build() -> SEGate:
    return SEGate(8)
