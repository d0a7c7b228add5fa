"""Custom layer initialized with nn.init.* functions, which run under no_grad internally."""
# outcome: ok
import math

import torch
import torch.nn as nn


class FactorizedLinear(nn.Module):
    def __init__(self, d_in, d_out, rank):
        super().__init__()
        self.u = nn.Parameter(torch.empty(d_in, rank))
        self.v = nn.Parameter(torch.empty(rank, d_out))
        self.bias = nn.Parameter(torch.empty(d_out))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.u, a=math.sqrt(5))
        nn.init.normal_(self.v, std=0.02)
        nn.init.zeros_(self.bias)

    def forward(self, x):
        return x @ self.u @ self.v + self.bias


def run() -> None:
    torch.manual_seed(0)
    layer = FactorizedLinear(6, 4, rank=2)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    loss = layer(torch.randn(3, 6)).pow(2).mean()
    loss.backward()
    optimizer.step()
