"""Twin of 120_mlp_extended_in_loop_then_inplace_dropout.py, written out of place by hand: the dropout makes a new tensor."""
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
        self.drop = nn.Dropout(p)
        self.out = nn.Linear(sizes[-1], 1)

    def forward(self, x):
        return self.out(self.drop(self.mlp(x)))


def run() -> None:
    torch.manual_seed(0)
    model = Head()
    model(torch.randn(5, 8)).sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Head()
    model(torch.randn(5, 8)).sum().backward()
    return {name: p.grad for name, p in model.named_parameters()}
