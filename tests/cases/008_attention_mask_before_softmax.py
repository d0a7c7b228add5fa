"""Scaled dot-product attention masking the scores in place BEFORE the softmax: nothing saved them."""
# outcome: ok
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, causal_mask):
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(x))
        v = self._split(self.v_proj(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores.masked_fill_(causal_mask, float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(x.shape)
        return self.o_proj(out)


def run() -> None:
    torch.manual_seed(0)
    n = 6
    mha = MultiHeadAttention(dim=8, heads=2)
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    x = torch.randn(2, n, 8)
    loss = mha(x, causal).pow(2).mean()
    loss.backward()
