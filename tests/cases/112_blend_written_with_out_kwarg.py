"""Mixing layer that preallocates its output and fills it with torch.add(..., out=...) while the two branches require grad."""
# outcome: refused-error
import torch
import torch.nn as nn


class Blend(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.left = nn.Linear(dim, dim)
        self.right = nn.Linear(dim, dim)

    def forward(self, x):
        mixed = torch.empty(x.shape[0], x.shape[1])
        torch.add(self.left(x), self.right(x), alpha=0.5, out=mixed)  # error: IPL009
        return mixed.sum(-1)


def run() -> None:
    torch.manual_seed(0)
    model = Blend(6)
    loss = model(torch.randn(3, 6)).pow(2).mean()
    loss.backward()
