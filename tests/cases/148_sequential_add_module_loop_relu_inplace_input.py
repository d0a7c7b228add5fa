"""An Xception unit builds its body with add_module in a loop; the first block starts with ReLU(inplace=True) on the unit's input, which the identity convolution saved."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, stride=stride, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = self.conv(x)  # saved-by
        return self.bn(x)


class DwsBlock(nn.Module):
    def __init__(self, cin, cout, activate):
        super().__init__()
        self.activate = activate
        if self.activate:
            self.activ = nn.ReLU(inplace=True)  # error: IPL003
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        if self.activate:
            x = self.activ(x)
        return self.bn(self.conv(x))


class Unit(nn.Module):
    def __init__(self, cin, cout, reps):
        super().__init__()
        self.identity_conv = ConvBlock(cin, cout, 1)
        self.body = nn.Sequential()
        for i in range(reps):
            self.body.add_module("block{}".format(i + 1), DwsBlock(cin if i == 0 else cout, cout, True))

    def forward(self, x):
        identity = self.identity_conv(x)
        x = self.body(x)
        return x + identity


def run() -> None:
    torch.manual_seed(0)
    stem = nn.Conv2d(3, 4, 3, padding=1)
    unit = Unit(4, 8, 2)
    unit(stem(torch.randn(2, 3, 8, 8))).sum().backward()
