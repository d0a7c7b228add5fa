"""BERT-style intermediate layer that adds a bias to the GELU OUTPUT in place: GELU saves its input, not its output."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class Intermediate(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.dense = nn.Linear(hidden, intermediate, bias=False)
        self.bias = nn.Parameter(torch.zeros(intermediate))
        self.output = nn.Linear(intermediate, hidden)

    def forward(self, hidden_states):
        a = F.gelu(self.dense(hidden_states))
        a += self.bias
        return self.output(a)


def run() -> None:
    torch.manual_seed(0)
    layer = Intermediate(8, 16)
    hidden_states = torch.randn(2, 3, 8)
    loss = layer(hidden_states).sum()
    loss.backward()
    assert layer.bias.grad is not None
