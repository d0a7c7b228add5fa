"""Training step wrapped in torch.autograd.detect_anomaly() for debugging and shipped that way."""
# outcome: ok
import torch
from torch import nn


def train_step(model, optimizer, x, y):
    with torch.autograd.detect_anomaly():  # warning: IPL006
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 6), nn.Softplus(), nn.Linear(6, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_step(model, optimizer, torch.randn(4, 3), torch.randn(4, 1))
