"""A VGG-style stage builds its body with add_module in a loop: conv, BatchNorm, ReLU(inplace=True) on the BatchNorm output, which nothing saved."""
# outcome: ok
# far-apart
import torch
import torch.nn as nn


class Stage(nn.Module):
    def __init__(self, cin, cout, reps):
        super().__init__()
        self.body = nn.Sequential()
        for i in range(reps):
            self.body.add_module("conv{}".format(i + 1), nn.Conv2d(cin if i == 0 else cout, cout, 3, padding=1))
            self.body.add_module("bn{}".format(i + 1), nn.BatchNorm2d(cout))
            self.body.add_module("relu{}".format(i + 1), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.body(x) + x.mean()


def run() -> None:
    torch.manual_seed(0)
    Stage(3, 4, 2)(torch.randn(2, 3, 8, 8)).sum().backward()
