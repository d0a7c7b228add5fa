"""Top-k pooling that rescales the top-k VALUES in place: topk saves only its indices, so the values are free to change."""
# outcome: ok
import torch
import torch.nn as nn


class TopKPool(nn.Module):
    def __init__(self, dim: int, k: int) -> None:
        super().__init__()
        self.score = nn.Linear(dim, dim)
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, _ = self.score(x).topk(self.k, dim=-1)
        values *= 0.5
        return values.sum(-1)


def run() -> None:
    torch.manual_seed(0)
    pool = TopKPool(8, 3)
    loss = pool(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
