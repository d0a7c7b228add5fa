"""Twin of 001_sigmoid_gate_scaled.py, written out of place by hand: Gated residual unit: the sigmoid gate is halved in place after it was computed."""
import torch
import torch.nn as nn


class GatedResidual(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.value = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = 0.5 * torch.sigmoid(self.gate(x))
        return x + g * self.value(x)


def run() -> None:
    torch.manual_seed(0)
    model = GatedResidual(8)
    x = torch.randn(4, 8)
    loss = model(x).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = GatedResidual(8)
    x = torch.randn(4, 8)
    loss = model(x).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
