"""Twin of 052_custom_init_normal_inplace.py, written out of place by hand: Custom layer that initializes its Parameter with .normal_() in __init__ without torch.no_grad()."""
import math

import torch
import torch.nn as nn


class FactorizedLinear(nn.Module):
    def __init__(self, d_in, d_out, rank):
        super().__init__()
        self.u = nn.Parameter(torch.empty(d_in, rank))
        self.v = nn.Parameter(torch.empty(rank, d_out))
        self.reset_parameters()

    def reset_parameters(self):
        std = 1.0 / math.sqrt(self.u.shape[0])
        nn.init.normal_(self.u, 0.0, std)
        nn.init.normal_(self.v, 0.0, std)

    def forward(self, x):
        return x @ self.u @ self.v


def run() -> None:
    torch.manual_seed(0)
    layer = FactorizedLinear(6, 4, rank=2)
    loss = layer(torch.randn(3, 6)).sum()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    layer = FactorizedLinear(6, 4, rank=2)
    loss = layer(torch.randn(3, 6)).sum()
    loss.backward()
    return {
        **{name: p.grad for name, p in layer.named_parameters()},
        **{f"value.{name}": p.detach().clone() for name, p in layer.named_parameters()},
    }
