"""Twin of 099_embedding_padding_row_zeroed.py, written out of place by hand: Word embedding whose padding row is zeroed by index assignment in __init__ without torch.no_grad()."""
import torch
import torch.nn as nn


class WordEncoder(nn.Module):
    def __init__(self, vocab_size, dim, pad_idx=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        nn.init.normal_(self.embedding.weight, std=dim**-0.5)
        nn.init.zeros_(self.embedding.weight[pad_idx])
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, tokens):
        out, _ = self.rnn(self.embedding(tokens))
        return out[:, -1]


def run() -> None:
    torch.manual_seed(0)
    enc = WordEncoder(12, 4)
    loss = enc(torch.tensor([[3, 4, 0], [5, 0, 0]])).pow(2).sum()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    enc = WordEncoder(12, 4)
    loss = enc(torch.tensor([[3, 4, 0], [5, 0, 0]])).pow(2).sum()
    loss.backward()
    return {
        **{name: p.grad for name, p in enc.named_parameters()},
        **{f"value.{name}": p.detach().clone() for name, p in enc.named_parameters()},
    }
