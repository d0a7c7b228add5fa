"""Twin of 070_se_block_inplace_scale_after_relu.py, written out of place by hand: Squeeze-and-excitation that rescales the ReLU feature map in place; ReluBackward0 saved that map."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SEConvBlock(nn.Module):
    def __init__(self, c, reduction=2):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.fc1 = nn.Linear(c, c // reduction)
        self.fc2 = nn.Linear(c // reduction, c)

    def forward(self, x):
        out = F.relu(self.bn(self.conv(x)))
        s = out.mean(dim=(2, 3))
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        return out * s[:, :, None, None]


def run() -> None:
    torch.manual_seed(0)
    block = SEConvBlock(4)
    x = torch.randn(2, 4, 5, 5)
    loss = block(x).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    block = SEConvBlock(4)
    x = torch.randn(2, 4, 5, 5)
    loss = block(x).mean()
    loss.backward()
    return {name: p.grad for name, p in block.named_parameters()}
