"""Sparsifies attention weights through a .detach() alias; detach shares the version counter with the softmax output."""
# outcome: inplace-error
import torch
import torch.nn as nn
import torch.nn.functional as F


class SparseAttentionPool(nn.Module):
    def __init__(self, dim, threshold=0.15):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.threshold = threshold

    def forward(self, x):
        probs = F.softmax(self.score(x).squeeze(-1), dim=1)  # saved-by
        weights = probs.detach()
        weights[weights < self.threshold] = 0.0  # error: IPL005
        return (probs.unsqueeze(-1) * x).sum(dim=1)


def run() -> None:
    torch.manual_seed(0)
    pool = SparseAttentionPool(8)
    x = torch.randn(2, 7, 8)
    pooled = pool(x)
    loss = pooled.pow(2).sum()
    loss.backward()
