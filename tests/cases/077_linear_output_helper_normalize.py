"""A helper normalizes its argument in place, but the argument is a Linear output that no op saved."""
# outcome: ok
# far-apart
import torch
import torch.nn as nn


def center_(features: torch.Tensor) -> torch.Tensor:
    """Subtract the per-sample mean in place and return the same tensor."""
    features -= features.mean(dim=-1, keepdim=True)
    return features


class Projector(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out)
        self.head = nn.Linear(d_out, 1)

    def embed(self, x):
        return self.proj(x)

    def forward(self, x):
        z = self.embed(x)
        center_(z)
        return self.head(z)


def run() -> None:
    torch.manual_seed(0)
    model = Projector(5, 6)
    loss = model(torch.randn(4, 5)).pow(2).mean()
    loss.backward()
