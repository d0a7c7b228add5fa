"""The widely copied "broken" example ``h = self.fc1(x); h += 2.0`` that is actually SAFE.

A Linear layer (addmm) saves its input and weight, not its output, so adding into ``h`` in
place overwrites nothing backward needs. torch ACCEPTS it: forward and backward run normally.
(``h = torch.sigmoid(...); h += 2.0`` would fail: see residual_after_sigmoid.py.)
"""

import torch
from torch import nn


class TwoLayerNet(nn.Module):
    def __init__(self, in_dim: int = 10, hidden: int = 20, out_dim: int = 1) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h += 2.0  # fine: addmm did not save its output
        return self.fc2(h)


def main() -> None:
    torch.manual_seed(0)
    model = TwoLayerNet()
    x = torch.randn(8, 10)
    y = torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    print(f"loss={loss.item():.4f} grad_norm={model.fc1.weight.grad.norm().item():.4f}")


if __name__ == "__main__":
    main()
