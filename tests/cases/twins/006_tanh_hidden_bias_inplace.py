"""Twin of 006_tanh_hidden_bias_inplace.py, written out of place by hand: Encoder that adds a learned bias in place to a tanh output: TanhBackward0 needs that output."""
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
        h = torch.tanh(self.proj(self.embed(tokens))) + self.shift
        return self.out(h)


def run() -> None:
    torch.manual_seed(0)
    model = Encoder(vocab=20, dim=8)
    tokens = torch.randint(0, 20, (3, 5))
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 20), tokens.reshape(-1))
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Encoder(vocab=20, dim=8)
    tokens = torch.randint(0, 20, (3, 5))
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 20), tokens.reshape(-1))
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
