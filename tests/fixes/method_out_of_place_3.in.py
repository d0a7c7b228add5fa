"""method-out-of-place where the tensor is shared: written through a plain alias whose source
is read again, and kept in a dict before a chained write; both are cloned before sharing."""

import torch
import torch.nn as nn


class Centered(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.fc(x))
        y = h  # the same tensor under another name
        y.sub_(0.5)
        return h * 3


class Kept(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.fc(x))
        keep = {"h": h}
        h.mul_(2).add_(1)
        return keep["h"].sum() + h.mean()
