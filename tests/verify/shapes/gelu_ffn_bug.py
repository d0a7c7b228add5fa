"""Feed-forward block: GELU saves its input, then shifted in place (ctor args from a call)."""

# outcome: inplace-error
# verify-inputs: float32(2, 16)
import torch
import torch.nn.functional as F
from torch import nn


class FeedForward(nn.Module):  # verify-target
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        a = F.gelu(h)  # saved-by
        h += 0.1  # error: IPL001
        return self.fc2(a) + h.mean()


if __name__ == "__main__":
    block = FeedForward(16, 64)
    block(torch.randn(4, 16)).sum().backward()
