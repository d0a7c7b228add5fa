"""Twin of 015_exp_view_clamp.py, written out of place by hand: Poisson rate model that clamps the exp rates through a flattened view; the view shares exp's saved output."""
import torch
from torch import nn


class PoissonHead(nn.Module):
    def __init__(self, d_in: int, n_out: int, max_rate: float = 50.0) -> None:
        super().__init__()
        self.linear = nn.Linear(d_in, n_out)
        self.max_rate = max_rate

    def forward(self, x):
        return torch.exp(self.linear(x)).clamp(max=self.max_rate)


def run() -> None:
    torch.manual_seed(0)
    head = PoissonHead(4, 3)
    x = torch.randn(5, 4)
    counts = torch.poisson(torch.full((5, 3), 2.0))
    rate = head(x)
    loss = nn.functional.poisson_nll_loss(rate, counts, log_input=False)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    head = PoissonHead(4, 3)
    x = torch.randn(5, 4)
    counts = torch.poisson(torch.full((5, 3), 2.0))
    rate = head(x)
    loss = nn.functional.poisson_nll_loss(rate, counts, log_input=False)
    loss.backward()
    return {name: p.grad for name, p in head.named_parameters()}
