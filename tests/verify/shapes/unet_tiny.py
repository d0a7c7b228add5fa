"""Two-level U-Net whose blocks come from a module-level helper returning nn.Sequential."""

# outcome: ok
# verify-inputs: float32(2, 3, 32, 32)
import torch
from torch import nn


def double_conv(in_ch: int, out_ch: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, 3, padding=1),
        nn.BatchNorm2d(out_ch),
        nn.ReLU(inplace=True),
        nn.Conv2d(out_ch, out_ch, 3, padding=1),
        nn.BatchNorm2d(out_ch),
        nn.ReLU(inplace=True),
    )


class TinyUNet(nn.Module):  # verify-target
    def __init__(self, in_channels: int = 3, base: int = 8, classes: int = 2) -> None:
        super().__init__()
        self.down1 = double_conv(in_channels, base)
        self.down2 = double_conv(base, base * 2)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.merge = double_conv(base * 2, base)
        self.out = nn.Conv2d(base, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.down1(x)
        deep = self.down2(self.pool(skip))
        merged = self.merge(torch.cat([self.up(deep), skip], dim=1))
        return self.out(merged)
