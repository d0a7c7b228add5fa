"""Iterative FGSM attack that updates the adversarial input in place without torch.no_grad()."""
# outcome: leaf-error
import torch
import torch.nn as nn
import torch.nn.functional as F


def fgsm_attack(model, images, labels, eps=0.03, steps=2):
    x_adv = images.clone().requires_grad_(True)
    for _ in range(steps):
        loss = F.cross_entropy(model(x_adv), labels)
        grad, = torch.autograd.grad(loss, x_adv)
        x_adv += (eps / steps) * grad.sign()  # error: IPL002
    return x_adv.detach()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5))
    images = torch.rand(2, 3, 2, 2)
    labels = torch.tensor([0, 4])
    adv = fgsm_attack(model, images, labels)
    loss = F.cross_entropy(model(adv), labels)
    loss.backward()
