"""Twin of 069_gru_hidden_inplace_update.py, written out of place by hand: Hand-written GRU-like cell that updates the hidden state in place; the hidden projection saved the old state."""
import torch
import torch.nn as nn


class MinimalGRU(nn.Module):
    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.x2h = nn.Linear(d_in, 2 * d_hidden)
        self.h2h = nn.Linear(d_hidden, 2 * d_hidden)
        self.d_hidden = d_hidden

    def forward(self, x):
        batch, steps, _ = x.shape
        h = torch.zeros(batch, self.d_hidden)
        for t in range(steps):
            gates = self.x2h(x[:, t]) + self.h2h(h)
            z, c = gates.chunk(2, dim=-1)
            z, c = torch.sigmoid(z), torch.tanh(c)
            h = (1 - z) * h + z * c
        return h


def run() -> None:
    torch.manual_seed(0)
    gru = MinimalGRU(3, 4)
    x = torch.randn(2, 3, 3)
    loss = gru(x).pow(2).sum()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    gru = MinimalGRU(3, 4)
    x = torch.randn(2, 3, 3)
    loss = gru(x).pow(2).sum()
    loss.backward()
    return {name: p.grad for name, p in gru.named_parameters()}
