"""Twin of 009_relu_output_slice_zeroed.py, written out of place by hand: Feature MLP that zeroes the first two ReLU channels in place; ReluBackward0 saved that output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeatureMLP(nn.Module):
    def __init__(self, d_in, d_hidden, n_reserved=2):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, 1)
        self.n_reserved = n_reserved

    def forward(self, x):
        h = F.relu(self.fc1(x))
        reserved = torch.zeros_like(h[:, : self.n_reserved])
        h = torch.cat([reserved, h[:, self.n_reserved :]], dim=1)
        return self.fc2(h).squeeze(-1)


def run() -> None:
    torch.manual_seed(0)
    model = FeatureMLP(6, 12)
    x, y = torch.randn(5, 6), torch.randn(5)
    loss = F.mse_loss(model(x), y)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = FeatureMLP(6, 12)
    x, y = torch.randn(5, 6), torch.randn(5)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
