"""FasterNet's partial conv: __init__ picks `self.forward = self.forward_slicing`, which writes the conv's output into a slice of the very tensor the conv saved."""
# outcome: inplace-error
import torch
from torch import nn


class PartialConv(nn.Module):
    def __init__(self, dim: int, mode: str = "slicing") -> None:
        super().__init__()
        self.part = dim // 4
        self.conv = nn.Conv2d(self.part, self.part, 3, 1, 1, bias=False)
        if mode == "slicing":
            self.forward = self.forward_slicing
        else:
            self.forward = self.forward_split_cat

    def forward_slicing(self, x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[:, : self.part] = self.conv(x[:, : self.part])  # error: IPL001  # saved-by
        return x

    def forward_split_cat(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = torch.split(x, [self.part, x.shape[1] - self.part], dim=1)
        return torch.cat((self.conv(x1), x2), 1)


def run() -> None:
    torch.manual_seed(0)
    block = PartialConv(8)
    x = torch.randn(2, 8, 5, 5, requires_grad=True)
    block(x).sum().backward()
