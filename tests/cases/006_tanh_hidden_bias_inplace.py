"""Encoder that adds a learned bias in place to a tanh output: TanhBackward0 needs that output."""
# outcome: inplace-error
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.shift = nn.Parameter(torch.zeros(dim))
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = torch.tanh(self.proj(self.embed(tokens)))  # saved-by
        h += self.shift  # error: IPL001
        return self.out(h)


def run() -> None:
    torch.manual_seed(0)
    model = Encoder(vocab=20, dim=8)
    tokens = torch.randint(0, 20, (3, 5))
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 20), tokens.reshape(-1))
    loss.backward()
