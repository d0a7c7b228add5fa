"""Layer caching a weight penalty for the next call: fine once, broken across a training step."""

# outcome: ok
# verify-inputs: float32(2, 8)
import torch
from torch import nn


class CachedPenalty(nn.Module):  # verify-target
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.previous: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc(x)
        penalty = self.fc.weight.pow(2).sum()  # train-step: saved-by
        if self.previous is not None:
            out = out + self.previous
        self.previous = penalty
        return out
