"""Concatenates two branches, then overwrites a slice of the result in place: torch.cat saves nothing."""
# outcome: ok
import torch
from torch import nn


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Sequential(nn.Linear(4, 6), nn.Sigmoid())
        self.item = nn.Sequential(nn.Linear(5, 6), nn.Tanh())
        self.scorer = nn.Linear(12, 1)

    def forward(self, user_x, item_x, cold_start):
        u = self.user(user_x)
        v = self.item(item_x)
        joint = torch.cat([u, v], dim=1)
        joint[cold_start, :6] = 0.0
        return self.scorer(joint).squeeze(1)


def run() -> None:
    torch.manual_seed(0)
    model = TwoTower()
    cold = torch.tensor([True, False, False, True])
    clicks = torch.tensor([1.0, 0.0, 1.0, 0.0])
    logits = model(torch.randn(4, 4), torch.randn(4, 5), cold)
    loss = nn.functional.binary_cross_entropy_with_logits(logits, clicks)
    loss.backward()
