"""PGD attack that steps and projects the adversarial input in place under torch.no_grad()."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


def pgd_attack(model, images, labels, eps=0.03, alpha=0.01, steps=3):
    delta = torch.zeros_like(images, requires_grad=True)
    for _ in range(steps):
        loss = F.cross_entropy(model(images + delta), labels)
        loss.backward()
        with torch.no_grad():
            delta += alpha * delta.grad.sign()
            delta.clamp_(-eps, eps)
            delta.grad.zero_()
    return (images + delta).detach()


def adversarial_training_step(model, optimizer, images, labels):
    adv = pgd_attack(model, images, labels)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(adv), labels)
    loss.backward()
    optimizer.step()
    return loss.item()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 5))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    adversarial_training_step(model, optimizer, torch.rand(2, 3, 2, 2), torch.tensor([0, 4]))
