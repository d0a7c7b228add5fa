"""Learned channel scaling y = h * w (both need grad, so mul saves h), then h is reused as a residual in place."""
# outcome: inplace-error
import torch
from torch import nn


class ScaledBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.channel_scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = self.fc(x)
        y = h * self.channel_scale  # saved-by
        h += x  # error: IPL001
        return y + h


def run() -> None:
    torch.manual_seed(0)
    block = ScaledBlock(4)
    x = torch.randn(3, 4)
    loss = block(x).sum()
    loss.backward()
