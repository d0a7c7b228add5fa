"""Noisy-activation trick: Gaussian noise added in place to the pre-activation AFTER leaky_relu saved it."""
# outcome: inplace-error
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
        out = F.leaky_relu(pre, negative_slope=0.01)  # saved-by
        if self.training:
            pre.add_(torch.randn_like(pre) * self.sigma)  # error: IPL001
        return out + 0.0 * pre


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(NoisyLayer(4, 8), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    loss = model(x).logsumexp(dim=1).mean()
    loss.backward()
