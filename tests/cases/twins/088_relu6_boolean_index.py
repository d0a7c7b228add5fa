"""Twin of 088_relu6_boolean_index.py, written out of place by hand: Manual ReLU6: clip the ReLU output above 6 with a boolean-mask assignment; ReluBackward0 saved that output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class QuantFriendlyMLP(nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        h = F.relu(self.fc1(x) * 4.0)
        h = h.clamp(max=6.0)
        return self.fc2(h)


def run() -> None:
    torch.manual_seed(0)
    model = QuantFriendlyMLP(4, 8, 2)
    loss = F.cross_entropy(model(torch.randn(6, 4)), torch.tensor([0, 1, 0, 1, 1, 0]))
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = QuantFriendlyMLP(4, 8, 2)
    loss = F.cross_entropy(model(torch.randn(6, 4)), torch.tensor([0, 1, 0, 1, 1, 0]))
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
