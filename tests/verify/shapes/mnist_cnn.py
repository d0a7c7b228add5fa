"""MNIST CNN: a Linear after two poolings only accepts 28x28 images (32 is tried first)."""

# outcome: ok
# verify-inputs: float32(2, 1, 28, 28)
import torch
from torch import nn


class MnistNet(nn.Module):  # verify-target
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(64 * 7 * 7, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images).flatten(1))
