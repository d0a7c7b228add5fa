"""detach-clone of a `.data` alias and a method write, with non-ASCII text on the line."""

import torch
import torch.nn as nn


class Logger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        z = y.detach().view(-1)
        größe = 2; z.mul_(größe)  # verdoppelt
        return y, z
