"""EfficientNet-style MBConv stem using nn.SiLU(inplace=True) right after BatchNorm2d."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBNAct(nn.Sequential):
    def __init__(self, c_in, c_out, k=3, stride=1, groups=1):
        super().__init__(
            nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.01),
            nn.SiLU(inplace=True),
        )


class MBConv(nn.Module):
    def __init__(self, c, expand=2):
        super().__init__()
        hidden = c * expand
        self.expand = ConvBNAct(c, hidden, k=1)
        self.depthwise = ConvBNAct(hidden, hidden, groups=hidden)
        self.project = nn.Sequential(nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.project(self.depthwise(self.expand(x)))


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(ConvBNAct(3, 4, stride=2), MBConv(4), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
    loss = F.cross_entropy(model(torch.randn(2, 3, 8, 8)), torch.tensor([2, 0]))
    loss.backward()
