"""Detector-style head returning a dict: float outputs plus integer predictions."""

# outcome: ok
# verify-inputs: float32(2, 24)
import torch
from torch import nn


class MultiOutput(nn.Module):  # verify-target
    def __init__(self, dim: int = 24, classes: int = 6) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.SiLU())
        self.classes = nn.Linear(dim, classes)
        self.boxes = nn.Linear(dim, 4)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.encoder(x)
        logits = self.classes(h)
        return {
            "logits": logits,
            "boxes": torch.sigmoid(self.boxes(h)),
            "labels": logits.argmax(dim=-1),
            "aux": [h.mean(), (h.std(),)],
        }
