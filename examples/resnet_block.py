"""A torchvision-style ResNet ``BasicBlock``: ``ReLU(inplace=True)`` after BatchNorm and
``out += identity``. Looks like the in-place bug, but is SAFE.

BatchNorm saves its input, not its output, so the in-place ReLU on the BN output and the
in-place residual add overwrite nothing that backward needs. torch ACCEPTS it: forward and
backward run normally (this is exactly what torchvision's ResNet does).
"""

import torch
from torch import nn


def conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        BasicBlock(16, 16),
        BasicBlock(16, 32, stride=2, downsample=nn.Sequential(
            nn.Conv2d(16, 32, 1, stride=2, bias=False), nn.BatchNorm2d(32))),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )
    images = torch.randn(4, 3, 32, 32)
    labels = torch.randint(0, 10, (4,))
    loss = nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    print(f"loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
