"""Twin of 115_embedding_pad_row_zeroed_through_view.py, written by hand: the padding row is zeroed under torch.no_grad()."""
import torch
import torch.nn as nn


class PaddedEmbedding(nn.Module):
    def __init__(self, vocab, dim, pad_idx=0):
        super().__init__()
        self.table = nn.Embedding(vocab, dim)
        self.pad_idx = pad_idx

    def forward(self, ids):
        pad_row = self.table.weight[self.pad_idx]
        with torch.no_grad():
            pad_row.zero_()
        return self.table(ids)


def run() -> None:
    torch.manual_seed(0)
    embedding = PaddedEmbedding(10, 4)
    ids = torch.tensor([[1, 0, 3]])
    embedding(ids).pow(2).mean().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    embedding = PaddedEmbedding(10, 4)
    ids = torch.tensor([[1, 0, 3]])
    embedding(ids).pow(2).mean().backward()
    return {name: p.grad for name, p in embedding.named_parameters()}
