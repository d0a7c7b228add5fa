"""A flow step's coupling network starts with a Conv2d subclass whose forward calls `super().forward(x)` and ends with one that keeps nn.Conv2d's forward; the step adds the network's output for the first half of z to the second half in place, bumping the version of the tensor whose first half the convolution saved."""
# outcome: inplace-error
import torch
from torch import nn


class Conv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size=3):
        super().__init__(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.weight.data.normal_(mean=0.0, std=0.05)

    def forward(self, input):
        return super().forward(input)  # saved-by


class ZeroConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels):
        super().__init__(in_channels, out_channels, 3, padding=1)
        self.weight.data.zero_()
        self.bias.data.zero_()


class Coupling(nn.Module):
    def __init__(self, channels=4, hidden=8):
        super().__init__()
        self.net = nn.Sequential(
            Conv2d(channels // 2, hidden), nn.ReLU(), ZeroConv2d(hidden, channels // 2)
        )

    def forward(self, z):
        c = z.size(1)
        z1, z2 = z[:, : c // 2], z[:, c // 2 :]
        z2 += self.net(z1)  # error: IPL001
        return torch.cat((z1, z2), dim=1)


def run() -> None:
    torch.manual_seed(0)
    model = Coupling()
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    model(x * 1.0).sum().backward()
