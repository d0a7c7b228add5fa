"""Elman RNN that writes each hidden state into a preallocated zeros output buffer: the buffer is never saved."""
# outcome: ok
import torch
import torch.nn as nn


class ElmanRNN(nn.Module):
    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.ih = nn.Linear(d_in, d_hidden)
        self.hh = nn.Linear(d_hidden, d_hidden, bias=False)
        self.d_hidden = d_hidden

    def forward(self, x, h0=None):
        batch, steps, _ = x.shape
        h = x.new_zeros(batch, self.d_hidden) if h0 is None else h0
        outputs = torch.zeros(batch, steps, self.d_hidden)
        for t in range(steps):
            h = torch.tanh(self.ih(x[:, t]) + self.hh(h))
            outputs[:, t] = h
        return outputs, h


def run() -> None:
    torch.manual_seed(0)
    rnn = ElmanRNN(3, 5)
    readout = nn.Linear(5, 1)
    x = torch.randn(2, 4, 3)
    outputs, last = rnn(x)
    loss = readout(outputs).pow(2).mean() + last.abs().mean()
    loss.backward()
