"""Twin of 128_gate_scaled_when_called_with_keyword.py, written out of place by hand: the scaled gate is a new tensor."""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, scale=None):
        h = torch.sigmoid(self.fc(x))
        if scale is not None:
            h = h * scale
        return h


def run() -> None:
    torch.manual_seed(0)
    gate = Gate()
    gate(torch.randn(3, 4), scale=0.5).sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    gate = Gate()
    gate(torch.randn(3, 4), scale=0.5).sum().backward()
    return {name: p.grad for name, p in gate.named_parameters()}
