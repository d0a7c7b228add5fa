"""Epoch loop that sums the loss tensor for logging: no error, but every iteration's graph stays alive."""
# outcome: ok
import torch
from torch import nn


def train_epoch(model, data, optimizer):
    criterion = nn.MSELoss()
    running_loss = 0.0
    for x, y in data:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss  # warning: IPL004
    return running_loss / len(data)


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(4)]
    train_epoch(model, data, optimizer)
