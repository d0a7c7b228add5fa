"""Value head that rectifies a tanh output with a bare F.relu(..., inplace=True) statement; TanhBackward0 needs the unrectified output."""
# outcome: inplace-error
import torch
import torch.nn as nn
import torch.nn.functional as F


class ValueHead(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.hidden = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, 1)

    def forward(self, h):
        z = torch.tanh(self.hidden(h))  # saved-by
        F.relu(z, inplace=True)  # error: IPL003
        return self.value(z).squeeze(-1)


def run() -> None:
    torch.manual_seed(0)
    head = ValueHead(8)
    states = torch.randn(4, 8)
    returns = torch.randn(4)
    loss = 0.5 * (head(states) - returns).pow(2).mean()
    loss.backward()
