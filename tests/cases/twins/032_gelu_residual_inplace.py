"""Twin of 032_gelu_residual_inplace.py, written out of place by hand: Transformer-ish feed-forward that adds the GELU branch back into its own input in place; GELU saved that input."""
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
        a = F.gelu(h)
        return x + self.down(h + a)


def run() -> None:
    torch.manual_seed(0)
    ff = FeedForward(8)
    x = torch.randn(2, 4, 8)
    loss = ff(x).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    ff = FeedForward(8)
    x = torch.randn(2, 4, 8)
    loss = ff(x).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in ff.named_parameters()}
