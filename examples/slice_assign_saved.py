"""Slice assignment into a tensor that ``torch.tanh`` saved for backward.

``hidden = torch.tanh(...)`` saves its output (the gradient is ``1 - tanh**2``); writing the
positional code into its first channels with ``hidden[:, :, :d] = ...`` is an in-place
write through a view, which bumps the version of the whole tensor.
torch REJECTS it: backward raises "... modified by an inplace operation ... output 0 of Tanh".
Fix: build the result out of place, ``torch.cat([pos, hidden[..., d:]], dim=-1)``.
"""

import math

import torch
from torch import nn


def sinusoidal_code(length: int, dim: int) -> torch.Tensor:
    position = torch.arange(length).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    code = torch.zeros(length, dim)
    code[:, 0::2] = torch.sin(position * freq)
    code[:, 1::2] = torch.cos(position * freq)
    return code


class TokenEncoder(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, pos_dim: int = 8) -> None:
        super().__init__()
        self.pos_dim = pos_dim
        self.embedding = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.proj(self.embedding(ids)))
        pos = sinusoidal_code(ids.shape[1], self.pos_dim)
        hidden[:, :, : self.pos_dim] = pos  # in-place write into tanh's saved output
        return self.out(hidden)


def main() -> None:
    torch.manual_seed(0)
    model = TokenEncoder()
    ids = torch.randint(0, 100, (2, 12))
    logits = model(ids)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 100), ids.reshape(-1))
    loss.backward()
    print(f"loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
