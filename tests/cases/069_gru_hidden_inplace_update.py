"""Hand-written GRU-like cell that updates the hidden state in place; the hidden projection saved the old state."""
# outcome: inplace-error
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
            gates = self.x2h(x[:, t]) + self.h2h(h)  # saved-by
            z, c = gates.chunk(2, dim=-1)
            z, c = torch.sigmoid(z), torch.tanh(c)
            h.mul_(1 - z).add_(z * c)  # error: IPL001
        return h


def run() -> None:
    torch.manual_seed(0)
    gru = MinimalGRU(3, 4)
    x = torch.randn(2, 3, 3)
    loss = gru(x).pow(2).sum()
    loss.backward()
