"""Attention probabilities cloned before masking in place: the saved softmax output stays untouched."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class LocalAttention(nn.Module):
    def __init__(self, dim, window):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.window = window

    def forward(self, x):
        n = x.shape[1]
        scores = self.q(x) @ self.k(x).transpose(1, 2)
        probs = F.softmax(scores, dim=-1)
        idx = torch.arange(n)
        far = (idx[None, :] - idx[:, None]).abs() > self.window
        local = probs.clone()
        local.masked_fill_(far, 0.0)
        local = local / local.sum(-1, keepdim=True)
        return local @ x


def run() -> None:
    torch.manual_seed(0)
    attn = LocalAttention(6, window=1)
    x = torch.randn(2, 5, 6)
    loss = attn(x).pow(2).mean()
    loss.backward()
