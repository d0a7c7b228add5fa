"""Twin of 020_no_grad_clamp_probs.py, written out of place by hand: BCE on sigmoid probabilities clamped "for numerical stability" under no_grad: the version still moves."""
import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-6


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def bce_from_probs(logits, targets):
    probs = torch.sigmoid(logits)
    # clamp the values, let the gradient through as if unclamped
    probs = probs + (probs.clamp(EPS, 1 - EPS) - probs).detach()
    return F.binary_cross_entropy(probs, targets)


def run() -> None:
    torch.manual_seed(0)
    model = Classifier()
    x = torch.randn(8, 5)
    y = (torch.rand(8) > 0.5).float()
    loss = bce_from_probs(model(x), y)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Classifier()
    x = torch.randn(8, 5)
    y = (torch.rand(8) > 0.5).float()
    loss = bce_from_probs(model(x), y)
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
