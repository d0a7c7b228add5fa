"""Twin of 107_bare_functional_relu_after_tanh.py, written out of place by hand: Value head that rectifies a tanh output with a bare F.relu(..., inplace=True) statement; TanhBackward0 needs the unrectified output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ValueHead(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.hidden = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, 1)

    def forward(self, h):
        z = F.relu(torch.tanh(self.hidden(h)))
        return self.value(z).squeeze(-1)


def run() -> None:
    torch.manual_seed(0)
    head = ValueHead(8)
    states = torch.randn(4, 8)
    returns = torch.randn(4)
    loss = 0.5 * (head(states) - returns).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    head = ValueHead(8)
    states = torch.randn(4, 8)
    returns = torch.randn(4)
    loss = 0.5 * (head(states) - returns).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in head.named_parameters()}
