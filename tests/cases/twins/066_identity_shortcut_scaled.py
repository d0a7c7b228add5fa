"""Twin of 066_identity_shortcut_scaled.py, written out of place by hand: Residual block that scales its shortcut in place; with stride 1 the shortcut is nn.Identity, i.e. the input conv1 saved."""
import torch
from torch import nn


class ScaledResBlock(nn.Module):
    def __init__(self, c_in, c_out, stride=1, res_scale=0.2):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1)
        self.act = nn.SiLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1)
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Conv2d(c_in, c_out, 1, stride)
        else:
            self.shortcut = nn.Identity()
        self.res_scale = res_scale

    def forward(self, x):
        out = self.conv2(self.act(self.conv1(x)))
        shortcut = self.shortcut(x) * (1.0 - self.res_scale)
        return out * self.res_scale + shortcut


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), ScaledResBlock(4, 4))
    x = torch.randn(2, 3, 6, 6)
    loss = model(x).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), ScaledResBlock(4, 4))
    x = torch.randn(2, 3, 6, 6)
    loss = model(x).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
