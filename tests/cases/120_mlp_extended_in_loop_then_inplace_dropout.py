"""A head whose MLP is built by a loop that extends a list with [Linear, BatchNorm, shared ReLU(inplace=True)], then a Dropout(inplace=True) on the MLP's output: the dropout overwrites what the last ReLU saved."""
# outcome: inplace-error
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, sizes=(8, 16, 4), p=0.2):
        super().__init__()
        act = nn.ReLU(inplace=True)
        layers = []
        for i in range(len(sizes) - 1):
            layers.extend([nn.Linear(sizes[i], sizes[i + 1]), nn.BatchNorm1d(sizes[i + 1]), act])
        self.mlp = nn.Sequential(*layers)
        self.drop = nn.Dropout(p, inplace=True)  # error: IPL003
        self.out = nn.Linear(sizes[-1], 1)

    def forward(self, x):
        return self.out(self.drop(self.mlp(x)))  # saved-by


def run() -> None:
    torch.manual_seed(0)
    model = Head()
    model(torch.randn(5, 8)).sum().backward()
