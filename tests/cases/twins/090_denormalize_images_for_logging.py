"""Twin of 090_denormalize_images_for_logging.py, written out of place by hand: Un-normalizes the input images in place for logging between forward and backward; the first Conv2d saved them."""
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
STD = torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1)


def log_images(images):
    vis = images * STD + MEAN
    return vis.clamp(0, 1).mean().item()


def train_step(model, optimizer, images, labels):
    optimizer.zero_grad()
    logits = model(images)
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


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images = (torch.rand(2, 3, 6, 6) - MEAN) / STD
    train_step(model, optimizer, images, torch.tensor([0, 1]))
    return {
        **{name: p.grad for name, p in model.named_parameters()},
        **{f"value.{name}": p.detach().clone() for name, p in model.named_parameters()},
    }
