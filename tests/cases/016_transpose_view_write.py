"""Cross-attention that zeroes a key column through a transposed view of the saved softmax output."""
# outcome: inplace-error
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
        attn = scores.softmax(-1)  # saved-by
        per_key = attn.transpose(1, 2)
        per_key[:, dropped_key] = 0  # error: IPL001
        return attn @ self.v(memory)


def run() -> None:
    torch.manual_seed(0)
    layer = CrossAttention(8)
    out = layer(torch.randn(2, 3, 8), torch.randn(2, 5, 8), dropped_key=1)
    loss = out.sum()
    loss.backward()
