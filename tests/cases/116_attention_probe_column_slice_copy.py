"""Attention layer whose probe flattens the first keys' probabilities for a statistic; reshape() of that column slice copies (it is not contiguous), so sharpening the flat copy in place leaves the saved softmax output alone."""
# outcome: ok
import torch
import torch.nn as nn


class ProbedAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qk = nn.Linear(dim, 2 * dim)
        self.value = nn.Linear(dim, dim)
        self.sharpness = None

    def forward(self, x):
        q, k = self.qk(x).split(x.shape[-1], dim=-1)
        probs = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        first_keys = probs[:, :, :2].reshape(-1)
        first_keys.pow_(2)
        self.sharpness = first_keys.mean().detach()
        return probs @ self.value(x)


def run() -> None:
    torch.manual_seed(0)
    layer = ProbedAttention(8)
    layer(torch.randn(2, 5, 8)).pow(2).mean().backward()
