"""clone-setitem with non-ASCII names, through a view, and under inference_mode."""

import torch
import torch.nn as nn


class Ränder(nn.Module):
    def forward(self, x: torch.Tensor, größe: int) -> torch.Tensor:
        h = torch.sigmoid(x)
        h = h.clone()
        h[:, :größe] = 0.0  # Ränder auf null
        return h


class CrossAttention(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        attn = scores.softmax(-1)
        attn = attn.clone()
        per_key = attn.transpose(1, 2)
        per_key[:, 0] = 0
        return attn.sum(-1)


class Centers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("centers", torch.randn(3, 4))

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return torch.cdist(feats, self.centers).mean()

    def update(self, feats: torch.Tensor) -> None:
        self.centers = self.centers.clone()
        with torch.inference_mode():
            for c in range(3):
                self.centers[c] -= 0.5 * (self.centers[c] - feats.mean(0))


def train_step() -> None:
    backbone = nn.Linear(4, 4)
    centers = Centers()
    feats = backbone(torch.randn(5, 4))
    loss = centers(feats)
    centers.update(feats.detach())
    loss.backward()
