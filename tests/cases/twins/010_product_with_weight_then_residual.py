"""Twin of 010_product_with_weight_then_residual.py, written out of place by hand: Learned channel scaling y = h * w (both need grad, so mul saves h), then h is reused as a residual in place."""
import torch
from torch import nn


class ScaledBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.channel_scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = self.fc(x)
        y = h * self.channel_scale
        return y + h + x


def run() -> None:
    torch.manual_seed(0)
    block = ScaledBlock(4)
    x = torch.randn(3, 4)
    loss = block(x).sum()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    block = ScaledBlock(4)
    x = torch.randn(3, 4)
    loss = block(x).sum()
    loss.backward()
    return {name: p.grad for name, p in block.named_parameters()}
