"""Twin of 085_pow_activation_penalty_then_noise.py, written out of place by hand: Activation regularization pow(2) computed on h, then Gaussian noise injected into h in place; pow saved h."""
import torch
import torch.nn as nn


class RegularizedEncoder(nn.Module):
    def __init__(self, d_in, d_hidden, noise=0.1):
        super().__init__()
        self.fc = nn.Linear(d_in, d_hidden)
        self.dec = nn.Linear(d_hidden, d_in)
        self.noise = noise
        self.act_penalty = torch.tensor(0.0)

    def forward(self, x):
        h = self.fc(x)
        self.act_penalty = h.pow(2).mean()
        noisy = h + self.noise * torch.randn_like(h)
        return self.dec(noisy)


def run() -> None:
    torch.manual_seed(0)
    model = RegularizedEncoder(5, 3)
    x = torch.randn(4, 5)
    loss = nn.functional.mse_loss(model(x), x) + 0.01 * model.act_penalty
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = RegularizedEncoder(5, 3)
    x = torch.randn(4, 5)
    loss = nn.functional.mse_loss(model(x), x) + 0.01 * model.act_penalty
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
