"""torchvision-style BasicBlock: ReLU(inplace=True) after BatchNorm and `out += identity` are safe."""
# outcome: ok
import torch
import torch.nn as nn


def conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None) -> None:
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

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


def run() -> None:
    torch.manual_seed(0)
    stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
    blocks = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
    head = nn.Linear(8, 5)
    images = torch.randn(2, 3, 8, 8)
    feats = blocks(stem(images))
    logits = head(feats.mean(dim=(2, 3)))
    loss = nn.functional.cross_entropy(logits, torch.tensor([1, 3]))
    loss.backward()
