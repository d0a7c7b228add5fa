"""A flow step picks its mixing from a class-level table of lambdas (`Step.mixers[self.mixer](self, z)`) and builds its gate through a namespace class (`class layers: Gate = Gate`); the gate's output, which torch.sigmoid saved, is then doubled in place."""
# outcome: inplace-error
# far-apart
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return torch.sigmoid(self.proj(x))  # saved-by


class layers:
    Gate = Gate


class Step(nn.Module):
    mixers = {"gate": lambda obj, z: obj.gate(z), "none": lambda obj, z: z}

    def __init__(self, channels=4, mixer="gate"):
        super().__init__()
        self.mixer = mixer
        self.gate = layers.Gate(channels)

    def forward(self, z):
        g = Step.mixers[self.mixer](self, z)
        g *= 2.0  # error: IPL001
        return g * z


def run() -> None:
    torch.manual_seed(0)
    model = Step()
    model(torch.randn(2, 4, 3, 3)).sum().backward()
