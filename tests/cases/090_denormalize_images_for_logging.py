"""Un-normalizes the input images in place for logging between forward and backward; the first Conv2d saved them."""
# outcome: inplace-error
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
STD = torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1)


def log_images(images):
    vis = images.mul_(STD).add_(MEAN)  # error: IPL001
    return vis.clamp(0, 1).mean().item()


def train_step(model, optimizer, images, labels):
    optimizer.zero_grad()
    logits = model(images)  # saved-by
    loss = F.cross_entropy(logits, labels)
    log_images(images)
    loss.backward()
    optimizer.step()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images = (torch.rand(2, 3, 6, 6) - MEAN) / STD
    train_step(model, optimizer, images, torch.tensor([0, 1]))
