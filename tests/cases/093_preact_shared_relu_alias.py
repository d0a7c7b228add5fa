"""Pre-activation block whose shared ReLU(inplace=True) rectifies the block input that the shortcut still reads: no error, wrong sums."""
# outcome: ok
import torch
import torch.nn as nn


class PreActBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)  # warning: IPL003

    def forward(self, x):
        shortcut = x
        out = self.relu(x)
        out = self.conv1(self.bn1(out))
        out = self.conv2(self.relu(self.bn2(out)))
        return out + shortcut


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), PreActBlock(4), PreActBlock(4))
    loss = model(torch.randn(2, 3, 5, 5)).pow(2).mean()
    loss.backward()
