"""inplace-false in functional calls, with non-ASCII text before the call on the same line."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Policy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(5, 2)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        a = torch.tanh(self.l1(obs))
        größe = "ä"; a = F.relu(a, inplace=False)  # nicht negativ
        b = torch.sigmoid(a)
        return F.leaky_relu(b, 0.2, False) + F.leaky_relu(b, negative_slope=0.2, inplace=False)
