"""Transformer input: token embeddings scaled by sqrt(d_model) and shifted by positions in place (Embedding saves only indices)."""
# outcome: ok
import math

import torch
from torch import nn


class TokenAndPosition(nn.Module):
    def __init__(self, vocab_size, d_model, max_len=32):
        super().__init__()
        self.d_model = d_model
        self.tok = nn.Embedding(vocab_size, d_model)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, tokens):
        x = self.tok(tokens)
        x *= math.sqrt(self.d_model)
        x += self.pe[: tokens.shape[1]]
        return x


def run() -> None:
    torch.manual_seed(0)
    embed = TokenAndPosition(50, 8)
    encoder = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    tokens = torch.randint(0, 50, (2, 6))
    loss = encoder(embed(tokens)).pow(2).mean()
    loss.backward()
