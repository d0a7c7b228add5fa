"""Shared features modified in place between two heads that both consume them.

The classification head is a Linear layer, and Linear saves its INPUT for the weight
gradient. Applying the dropout-style mask with ``features.mul_(mask)`` before the regression
head overwrites what the classification head saved. torch REJECTS it: backward raises
"... modified by an inplace operation ... output 0 of Mul" (torch names the tensor's grad_fn
AFTER the write, i.e. the ``mul_`` itself, not the head that saved it). Fix:
``features = features * mask``.
"""

import torch
from torch import nn


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim: int = 20, feat_dim: int = 64) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_dim, feat_dim), nn.ReLU())
        self.cls_head = nn.Linear(feat_dim, 5)
        self.reg_head = nn.Linear(feat_dim, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.backbone(x)
        logits = self.cls_head(features)  # saves `features`
        if self.training:
            mask = (torch.rand_like(features) > 0.1).float()
            features.mul_(mask)  # in place on the tensor cls_head saved
        value = self.reg_head(features)
        return logits, value


def main() -> None:
    torch.manual_seed(0)
    model = MultiTaskNet()
    x = torch.randn(16, 20)
    labels = torch.randint(0, 5, (16,))
    targets = torch.randn(16, 1)
    logits, value = model(x)
    loss = nn.functional.cross_entropy(logits, labels) + nn.functional.mse_loss(value, targets)
    loss.backward()
    print(f"loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
