"""Twin of 117_qkv_unpacked_query_scaled_in_place.py, written out of place by hand: the query is scaled into a new tensor."""
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
        q = q * self.scale
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.proj(out)


def run() -> None:
    torch.manual_seed(0)
    layer = SelfAttention(8)
    layer(torch.randn(2, 5, 8)).pow(2).mean().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    layer = SelfAttention(8)
    layer(torch.randn(2, 5, 8)).pow(2).mean().backward()
    return {name: p.grad for name, p in layer.named_parameters()}
