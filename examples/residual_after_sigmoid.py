"""A gated residual block that adds the skip connection into a sigmoid output in place.

``gate = torch.sigmoid(...)`` saves its OUTPUT for backward (the sigmoid gradient is
``s * (1 - s)``), so ``gate += x`` overwrites a tensor autograd still needs.
torch REJECTS it: ``loss.backward()`` raises "one of the variables needed for gradient
computation has been modified by an inplace operation ... output 0 of Sigmoid".
The fix is the out-of-place form ``gate = gate + x``.
"""

import torch
from torch import nn


class GatedResidualBlock(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.gate_proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.gate_proj(self.norm(x)))
        gate += x  # in place on the sigmoid output: breaks backward
        return gate


class Encoder(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 2, num_classes: int = 4) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[GatedResidualBlock(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))


def main() -> None:
    torch.manual_seed(0)
    model = Encoder()
    inputs = torch.randn(8, 32)
    targets = torch.randint(0, 4, (8,))
    loss = nn.functional.cross_entropy(model(inputs), targets)
    loss.backward()
    print(f"loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
