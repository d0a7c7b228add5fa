"""Twin of 039_leaky_relu_input_noise.py, written out of place by hand: Noisy-activation trick: Gaussian noise added in place to the pre-activation AFTER leaky_relu saved it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class NoisyLayer(nn.Module):
    def __init__(self, d_in: int, d_out: int, sigma: float = 0.1) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.sigma = sigma

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.fc(x)
        out = F.leaky_relu(pre, negative_slope=0.01)
        if self.training:
            pre = pre + self.sigma * torch.randn_like(pre)
        return out + 0.0 * pre


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(NoisyLayer(4, 8), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    loss = model(x).logsumexp(dim=1).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(NoisyLayer(4, 8), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    loss = model(x).logsumexp(dim=1).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
