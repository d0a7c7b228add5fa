"""Twin of 014_softmax_detach_threshold.py, written out of place by hand: Sparsifies attention weights through a .detach() alias; detach shares the version counter with the softmax output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SparseAttentionPool(nn.Module):
    def __init__(self, dim, threshold=0.15):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.threshold = threshold

    def forward(self, x):
        probs = F.softmax(self.score(x).squeeze(-1), dim=1)
        detached = probs.detach()
        weights = torch.where(detached < self.threshold, 0.0, detached)
        return (probs.unsqueeze(-1) * x).sum(dim=1)


def run() -> None:
    torch.manual_seed(0)
    pool = SparseAttentionPool(8)
    x = torch.randn(2, 7, 8)
    pooled = pool(x)
    loss = pooled.pow(2).sum()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    pool = SparseAttentionPool(8)
    x = torch.randn(2, 7, 8)
    pooled = pool(x)
    loss = pooled.pow(2).sum()
    loss.backward()
    return {name: p.grad for name, p in pool.named_parameters()}
