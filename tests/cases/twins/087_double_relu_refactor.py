"""Twin of 087_double_relu_refactor.py, written out of place by hand: Refactoring leftover: forward already applies F.relu, then the shared self.relu = nn.ReLU(inplace=True) rectifies its saved output again."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        return out


def run() -> None:
    torch.manual_seed(0)
    block = ConvBlock(3, 4)
    loss = block(torch.randn(2, 3, 5, 5)).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    block = ConvBlock(3, 4)
    loss = block(torch.randn(2, 3, 5, 5)).mean()
    loss.backward()
    return {name: p.grad for name, p in block.named_parameters()}
