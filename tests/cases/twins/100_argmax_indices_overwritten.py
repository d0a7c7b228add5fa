"""Twin of 100_argmax_indices_overwritten.py, written out of place by hand: Hard-negative mining that rewrites the indices returned by max(dim): max saved those indices for its backward."""
import torch
import torch.nn as nn


class Miner(nn.Module):
    def __init__(self, dim: int, n_classes: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, n_classes)

    def forward(self, x: torch.Tensor, ignore: torch.Tensor) -> torch.Tensor:
        scores, best = self.proj(x).max(dim=1)
        best = best.masked_fill(ignore, 0)
        return scores.mean()


def run() -> None:
    torch.manual_seed(0)
    miner = Miner(6, 4)
    x = torch.randn(5, 6)
    ignore = torch.tensor([True, False, False, True, False])
    loss = miner(x, ignore)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    miner = Miner(6, 4)
    x = torch.randn(5, 6)
    ignore = torch.tensor([True, False, False, True, False])
    loss = miner(x, ignore)
    loss.backward()
    return {name: p.grad for name, p in miner.named_parameters()}
