"""Twin of 129_layers_zipped_with_names_relu_after_gate.py, written out of place by hand: the ReLU makes a new tensor."""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


class Flow(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.layers = nn.ModuleList()
        self.names = []
        self.layers.append(Gate(dim))
        self.names.append("gate")
        self.layers.append(nn.ReLU())
        self.names.append("relu")

    def forward(self, x):
        for layer, name in zip(self.layers, self.names):
            x = layer(x)
        return x


def run() -> None:
    torch.manual_seed(0)
    model = Flow()
    model(torch.randn(3, 4)).sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Flow()
    model(torch.randn(3, 4)).sum().backward()
    return {name: p.grad for name, p in model.named_parameters()}
