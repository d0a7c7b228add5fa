"""Twin of 108_walrus_gate_scaled_in_place.py, written out of place by hand: Gated MLP that binds its sigmoid gate with a walrus in the condition, then scales the gate in place; SigmoidBackward0 needs the gate it saved."""
import torch
import torch.nn as nn


class GatedMLP(nn.Module):
    def __init__(self, d_model, temperature=None):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_model)
        self.up = nn.Linear(d_model, d_model)
        self.temperature = temperature

    def forward(self, x):
        if (gate := torch.sigmoid(self.gate_proj(x))) is not None and self.temperature:
            gate = gate * self.temperature
        return self.up(x) * gate


def run() -> None:
    torch.manual_seed(0)
    mlp = GatedMLP(8, temperature=0.5)
    x = torch.randn(3, 8)
    mlp(x).pow(2).mean().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    mlp = GatedMLP(8, temperature=0.5)
    x = torch.randn(3, 8)
    mlp(x).pow(2).mean().backward()
    return {name: p.grad for name, p in mlp.named_parameters()}
