"""Averages attention maps over heads, of which there is one: the maps are the squeezed pieces of torch.split (a list comprehension), and `avg /= self.heads` writes into the first of them, a split view, which torch refuses, so the row edits after it never run."""
# outcome: refused-error
import torch
from torch import nn


class HeadAverage(nn.Module):
    def __init__(self, dim=6, heads=1):
        super().__init__()
        self.heads = heads
        self.score = nn.Linear(dim, dim * heads)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        maps = self.score(x).view(b, n, self.heads, d).transpose(1, 2)
        per_head = [m.squeeze(1) for m in torch.split(maps, 1, dim=1)]
        avg = per_head[0]
        avg /= self.heads  # error: IPL009
        for j in range(avg.size(0)):
            avg[j] -= avg[j].mean()
        return self.out(avg)


def run() -> None:
    torch.manual_seed(0)
    model = HeadAverage()
    model(torch.randn(2, 6, 6)).sum().backward()
