"""Twin of 054_fgsm_adversarial_update.py, written out of place by hand: Iterative FGSM attack that updates the adversarial input in place without torch.no_grad()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fgsm_attack(model, images, labels, eps=0.03, steps=2):
    x_adv = images.clone().requires_grad_(True)
    for _ in range(steps):
        loss = F.cross_entropy(model(x_adv), labels)
        grad, = torch.autograd.grad(loss, x_adv)
        x_adv = (x_adv + (eps / steps) * grad.sign()).detach().requires_grad_(True)
    return x_adv.detach()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5))
    images = torch.rand(2, 3, 2, 2)
    labels = torch.tensor([0, 4])
    adv = fgsm_attack(model, images, labels)
    loss = F.cross_entropy(model(adv), labels)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5))
    images = torch.rand(2, 3, 2, 2)
    labels = torch.tensor([0, 4])
    adv = fgsm_attack(model, images, labels)
    loss = F.cross_entropy(model(adv), labels)
    loss.backward()
    return {"adv": adv, **{name: p.grad for name, p in model.named_parameters()}}
