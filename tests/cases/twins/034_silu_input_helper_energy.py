"""Twin of 034_silu_input_helper_energy.py, written out of place by hand: A stats helper squares its argument with pow_() after SiLU saved that argument for backward."""
import torch
from torch import nn
import torch.nn.functional as F


def activation_energy(t: torch.Tensor) -> torch.Tensor:
    """Mean squared activation, for the activation-regularization term."""
    return t.square().mean()


class SwishMLP(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.fc_in = nn.Linear(d_in, d_hidden)
        self.fc_out = nn.Linear(d_hidden, d_in)

    def forward(self, x):
        h = self.fc_in(x)
        y = self.fc_out(F.silu(h))
        self.energy = activation_energy(h)
        return y


def run() -> None:
    torch.manual_seed(0)
    model = SwishMLP(4, 8)
    x = torch.randn(6, 4)
    recon = model(x)
    loss = F.mse_loss(recon, x) + 1e-3 * model.energy
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = SwishMLP(4, 8)
    x = torch.randn(6, 4)
    recon = model(x)
    loss = F.mse_loss(recon, x) + 1e-3 * model.energy
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
