"""Transformer-ish feed-forward that adds the GELU branch back into its own input in place; GELU saved that input."""
# outcome: inplace-error
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, d_model)
        self.down = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(self.norm(x))
        a = F.gelu(h)  # saved-by
        h += a  # error: IPL001
        return x + self.down(h)


def run() -> None:
    torch.manual_seed(0)
    ff = FeedForward(8)
    x = torch.randn(2, 4, 8)
    loss = ff(x).pow(2).mean()
    loss.backward()
