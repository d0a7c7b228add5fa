"""MobileNetV3-style block: nn.Hardswish(inplace=True) after BatchNorm and a Hardsigmoid squeeze-excite."""
# outcome: ok
import torch
from torch import nn


class SqueezeExcitation(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.relu = nn.ReLU(inplace=True)
        self.scale_act = nn.Hardsigmoid(inplace=True)

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.scale_act(self.fc2(self.relu(self.fc1(scale))))
        return scale * x


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.act = nn.Hardswish(inplace=True)
        self.se = SqueezeExcitation(c, 2)

    def forward(self, x):
        return x + self.se(self.act(self.bn(self.conv(x))))


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), Block(4), Block(4))
    loss = model(torch.randn(2, 3, 6, 6)).abs().mean()
    loss.backward()
