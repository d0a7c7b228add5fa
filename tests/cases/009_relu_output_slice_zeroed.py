"""Feature MLP that zeroes the first two ReLU channels in place; ReluBackward0 saved that output."""
# outcome: inplace-error
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
        h = F.relu(self.fc1(x))  # saved-by
        h[:, : self.n_reserved] = 0.0  # error: IPL001
        return self.fc2(h).squeeze(-1)


def run() -> None:
    torch.manual_seed(0)
    model = FeatureMLP(6, 12)
    x, y = torch.randn(5, 6), torch.randn(5)
    loss = F.mse_loss(model(x), y)
    loss.backward()
