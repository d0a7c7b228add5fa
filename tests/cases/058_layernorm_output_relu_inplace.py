"""Pre-activation MLP block: LayerNorm -> ReLU(inplace=True); LayerNorm saves its input, not its output."""
# outcome: ok
import torch
import torch.nn as nn


class ResidualMLPBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.act = nn.ReLU(inplace=True)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.act(self.norm(x))
        h = self.fc2(self.act(self.fc1(h)))
        return x + h


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), ResidualMLPBlock(8, 16), ResidualMLPBlock(8, 16), nn.Linear(8, 2))
    loss = nn.functional.cross_entropy(model(torch.randn(4, 5)), torch.tensor([0, 1, 1, 0]))
    loss.backward()
