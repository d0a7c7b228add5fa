"""clone-setitem: a slice write into a saved tensor gets `x = x.clone()` first."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FeatureMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.fc2 = nn.Linear(12, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc1(x))

        # zero the reserved channels (this comment stays above the write)
        h = h.clone()
        h[:, :2] = 0.0  # trailing comment stays
        return self.fc2(h)


class Clip(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = torch.softmax(x, dim=-1)
        p = p.clone()
        p[:, 0] += 1.0
        return p
