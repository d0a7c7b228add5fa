"""Twin of 007_softmax_attention_mask_after.py, written out of place by hand: Self-attention that zeroes padded keys with masked_fill_ AFTER the softmax (its output is saved)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = F.softmax(scores, dim=-1).masked_fill(pad_mask[:, None, :], 0.0)
        return self.proj(torch.matmul(attn, v))


def run() -> None:
    torch.manual_seed(0)
    layer = SelfAttention(8)
    x = torch.randn(2, 5, 8)
    pad_mask = torch.tensor([[False, False, False, True, True], [False] * 5])
    out = layer(x, pad_mask)
    loss = out.mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    layer = SelfAttention(8)
    x = torch.randn(2, 5, 8)
    pad_mask = torch.tensor([[False, False, False, True, True], [False] * 5])
    out = layer(x, pad_mask)
    loss = out.mean()
    loss.backward()
    return {name: p.grad for name, p in layer.named_parameters()}
