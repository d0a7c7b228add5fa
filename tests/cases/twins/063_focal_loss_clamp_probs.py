"""Twin of 063_focal_loss_clamp_probs.py, written out of place by hand: Focal loss helper that clamps the softmax probabilities in place before taking the log."""
import torch
import torch.nn as nn


class FocalLoss(nn.Module):
    def __init__(self, gamma=2.0, eps=1e-7):
        super().__init__()
        self.gamma = gamma
        self.eps = eps

    def forward(self, logits, target):
        probs = logits.softmax(dim=-1).clamp(self.eps, 1.0 - self.eps)
        pt = probs.gather(1, target.unsqueeze(1)).squeeze(1)
        return (-(1 - pt) ** self.gamma * pt.log()).mean()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    criterion = FocalLoss()
    x, y = torch.randn(5, 6), torch.randint(0, 4, (5,))
    loss = criterion(model(x), y)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    criterion = FocalLoss()
    x, y = torch.randn(5, 6), torch.randint(0, 4, (5,))
    loss = criterion(model(x), y)
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
