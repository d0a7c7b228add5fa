"""augassign: `h op= v` on a tensor an op saved becomes `h = h op v`."""

import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.proj(x))
        # the gate is shifted; sigmoid saved g, so this must not write into it
        g -= self.bias - 1.0  # shift (this comment stays)
        return x * g


class Scale(nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(x)
        h += w * 2  # no parentheses needed
        e = torch.exp(x)
        e /= e.sum(dim=-1, keepdim=True)
        return h + e
