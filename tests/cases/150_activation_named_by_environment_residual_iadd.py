"""A residual block takes its activation's name from the environment (nn.Identity unless set) and adds the shortcut to the activation's output in place: safe for Identity, an autograd error for Sigmoid."""
# outcome: ok
import os

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = getattr(nn, os.environ.get("BLOCK_ACTIVATION", "Identity"))()

    def forward(self, x):
        h = self.act(self.fc(x))
        # Whether this breaks backward depends on the layer the name picks.
        h += x  # warning: IPL001
        return h


def run() -> None:
    torch.manual_seed(0)
    Block(4)(torch.randn(3, 4)).sum().backward()
