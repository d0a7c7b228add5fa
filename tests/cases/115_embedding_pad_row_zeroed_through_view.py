"""Token embedding that zeroes its padding row in forward through a view of the weight; a view of a leaf that requires grad cannot be written while autograd records."""
# outcome: leaf-error
import torch
import torch.nn as nn


class PaddedEmbedding(nn.Module):
    def __init__(self, vocab, dim, pad_idx=0):
        super().__init__()
        self.table = nn.Embedding(vocab, dim)
        self.pad_idx = pad_idx

    def forward(self, ids):
        pad_row = self.table.weight[self.pad_idx]
        pad_row.zero_()  # error: IPL002
        return self.table(ids)


def run() -> None:
    torch.manual_seed(0)
    embedding = PaddedEmbedding(10, 4)
    ids = torch.tensor([[1, 0, 3]])
    embedding(ids).pow(2).mean().backward()
