"""The gate is called with a keyword (`gate(x, scale=0.5)`); its forward scales the sigmoid output in place only when `scale` is given, which this call does."""
# outcome: inplace-error
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, scale=None):
        h = torch.sigmoid(self.fc(x))  # saved-by
        if scale is not None:
            h *= scale  # error: IPL001
        return h


def run() -> None:
    torch.manual_seed(0)
    gate = Gate()
    gate(torch.randn(3, 4), scale=0.5).sum().backward()
