"""augassign where another name, a view or an attribute holds the tensor and is read after the
write: rebinding would hide the write from it, so the tensor is cloned before it is shared."""

import torch
import torch.nn as nn


class Alias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.fc(x))
        g = h  # g must see the shift below
        h += 1.0
        return g * 2


class Cached(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.fc(x))
        self.last = h
        h *= 0.5
        return self.last + 1


class Viewed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.exp(self.fc(x))
        flat = h.view(-1)
        h /= h.sum(dim=-1, keepdim=True)
        return flat.sum() + h.mean()
