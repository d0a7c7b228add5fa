"""Twin of 029_relu_inplace_module_after_sigmoid.py, written out of place by hand: Gate module whose ReLU(inplace=True), built in __init__, is applied in forward to a sigmoid output."""
import torch
from torch import nn


class PositiveGate(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden)
        self.value = nn.Linear(dim, hidden)
        self.act = nn.ReLU()
        self.out = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.gate(x))
        g = self.act(g)
        return self.out(g * self.value(x))


def run() -> None:
    torch.manual_seed(0)
    gate = PositiveGate(6, 12)
    x = torch.randn(3, 6)
    loss = (gate(x) - x).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    gate = PositiveGate(6, 12)
    x = torch.randn(3, 6)
    loss = (gate(x) - x).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in gate.named_parameters()}
