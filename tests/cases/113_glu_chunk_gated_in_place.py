"""Gated linear unit that splits its projection with chunk and multiplies the value half by the gate in place; torch forbids writing into the views chunk returns."""
# outcome: refused-error
import torch
import torch.nn as nn


class GLU(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        value.mul_(torch.sigmoid(gate))  # error: IPL009
        return self.out(value)


def run() -> None:
    torch.manual_seed(0)
    model = GLU(8)
    loss = model(torch.randn(5, 8)).pow(2).mean()
    loss.backward()
