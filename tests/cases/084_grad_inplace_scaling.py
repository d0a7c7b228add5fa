"""Gradient surgery between backward and step: scaling p.grad in place touches no saved tensor."""
# outcome: ok
import torch
from torch import nn


def scale_gradients_(model, factor):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(factor)


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        loss = model(torch.randn(3, 4)).pow(2).mean()
        loss.backward()
        scale_gradients_(model, 0.5)
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.1)
        optimizer.step()
