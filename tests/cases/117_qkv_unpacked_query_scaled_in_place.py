"""Self-attention that unpacks its fused qkv projection with `q, k, v = qkv` and scales the query in place; unpacking a tensor unbinds it, and torch refuses in-place writes into those views."""
# outcome: refused-error
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.scale = (dim // heads) ** -0.5

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv
        q *= self.scale  # error: IPL009
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.proj(out)


def run() -> None:
    torch.manual_seed(0)
    layer = SelfAttention(8)
    layer(torch.randn(2, 5, 8)).pow(2).mean().backward()
