"""Twin of 016_transpose_view_write.py, written out of place by hand: Cross-attention that zeroes a key column through a transposed view of the saved softmax output."""
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, queries, memory, dropped_key: int):
        scores = self.q(queries) @ self.k(memory).transpose(1, 2)
        attn = scores.softmax(-1)
        attn = attn.index_fill(2, torch.tensor([dropped_key]), 0.0)
        return attn @ self.v(memory)


def run() -> None:
    torch.manual_seed(0)
    layer = CrossAttention(8)
    out = layer(torch.randn(2, 3, 8), torch.randn(2, 5, 8), dropped_key=1)
    loss = out.sum()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    layer = CrossAttention(8)
    out = layer(torch.randn(2, 3, 8), torch.randn(2, 5, 8), dropped_key=1)
    loss = out.sum()
    loss.backward()
    return {name: p.grad for name, p in layer.named_parameters()}
