"""Data pipeline that normalizes and flips the batch in place before the forward pass (nothing saved it yet)."""
# outcome: ok
import torch
from torch import nn
import torch.nn.functional as F

MEAN = torch.tensor([0.5, 0.4, 0.3]).view(1, 3, 1, 1)
STD = torch.tensor([0.2, 0.2, 0.2]).view(1, 3, 1, 1)


def preprocess_(images, flip_mask):
    images.sub_(MEAN).div_(STD)
    images[flip_mask] = images[flip_mask].flip(-1)
    return images


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        images = torch.rand(4, 3, 6, 6)
        preprocess_(images, torch.tensor([True, False, True, False]))
        loss = F.cross_entropy(model(images), torch.tensor([0, 1, 2, 1]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
