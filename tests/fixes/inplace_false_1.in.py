"""inplace-false: `inplace=True` -> `inplace=False` in a constructor spread over lines."""

import torch
import torch.nn as nn


class Pooler(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.pooler = nn.Sequential(
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            # dropout right after tanh (this comment stays)
            nn.Dropout(0.1, inplace=True),  # was in place
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pooler(x)


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU(inplace = True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(torch.sigmoid(x))
