"""method-out-of-place with non-ASCII text before the call, an assignment, a helper."""

import torch
import torch.nn as nn

MEAN = 0.5


def denormalize(images: torch.Tensor) -> float:
    vis = images.mul(2.0).add(MEAN)  # für das Log
    return vis.mean().item()


def step() -> torch.Tensor:
    model = nn.Linear(4, 2)
    images = torch.randn(3, 4)
    logits = model(images)
    denormalize(images)
    loss = logits.sum()
    loss.backward()
    return loss


class Head(nn.Module):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        z = torch.tanh(h)
        naïve = "ReLU danach"; z = z.relu()  # ✓ keeps this comment
        return z * 2
