"""Stochastic depth (timm's drop_path) before a residual `+=`: the mask from x.new_empty() needs no grad, so the mul saves only the mask."""
# outcome: ok
import torch
import torch.nn as nn


def drop_path(x: torch.Tensor, drop_prob: float = 0.0, training: bool = False) -> torch.Tensor:
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    random_tensor.div_(keep_prob)
    return x * random_tensor


class Block(nn.Module):
    def __init__(self, dim: int, drop_prob: float = 0.1) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        x = self.fc1(x) + self.fc2(x)
        x = drop_path(x, self.drop_prob, self.training)
        x += identity
        return x


def run() -> None:
    torch.manual_seed(0)
    block = Block(8)
    for training in (True, False):
        block.train(training)
        block(torch.randn(4, 8, requires_grad=True)).sum().backward()
