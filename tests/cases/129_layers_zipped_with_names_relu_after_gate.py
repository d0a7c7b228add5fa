"""A flow runs its layers with `for layer, name in zip(self.layers, self.names)`: a gate whose output torch.sigmoid saved, then an nn.ReLU(inplace=True), which writes into the gate's saved output."""
# outcome: inplace-error
# far-apart
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))  # saved-by


class Flow(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.layers = nn.ModuleList()
        self.names = []
        self.layers.append(Gate(dim))
        self.names.append("gate")
        self.layers.append(nn.ReLU(inplace=True))  # error: IPL003
        self.names.append("relu")

    def forward(self, x):
        for layer, name in zip(self.layers, self.names):
            x = layer(x)
        return x


def run() -> None:
    torch.manual_seed(0)
    model = Flow()
    model(torch.randn(3, 4)).sum().backward()
