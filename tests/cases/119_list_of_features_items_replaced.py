"""A feature pyramid's forward takes `features: list[torch.Tensor]` and replaces each item with its upsampled map; the list changes, no tensor does."""
# outcome: ok
import torch
from torch import nn


class FeatureUpsample(nn.Module):
    def __init__(self, dims: int = 4, levels: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.ConvTranspose2d(dims, dims, kernel_size=2, stride=2) for _ in range(levels)
        )

    def forward(self, features: list[torch.Tensor]) -> list[torch.Tensor]:
        features[0] = self.blocks[0](features[0])
        for i in range(1, len(self.blocks)):
            features[i] = self.blocks[i](features[i])
        return features


def run() -> None:
    torch.manual_seed(0)
    model = FeatureUpsample()
    features = [torch.randn(1, 4, 3, 3, requires_grad=True) for _ in range(3)]
    out = model(list(features))
    sum(o.sum() for o in out).backward()
