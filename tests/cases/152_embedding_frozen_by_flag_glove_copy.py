"""A Tree-LSTM freezes its embedding when a flag says so, and the script copies pretrained vectors into the embedding's weight outside no_grad: fine while frozen, a leaf error when the flag is off."""
# outcome: ok
import os

import torch
import torch.nn as nn


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size, in_dim, freeze):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim)
        if freeze:
            self.emb.weight.requires_grad = False
        self.out = nn.Linear(in_dim, 2)

    def forward(self, tokens):
        return self.out(self.emb(tokens).mean(0))


def run() -> None:
    torch.manual_seed(0)
    freeze = os.environ.get("FREEZE_EMBED", "1") == "1"
    model = SimilarityTreeLSTM(10, 4, freeze)
    emb = torch.zeros(10, 4)
    emb.normal_(0, 0.05)
    model.emb.weight.copy_(emb)  # warning: IPL002
    model(torch.tensor([1, 2, 3])).sum().backward()
