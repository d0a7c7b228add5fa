"""Module whose constructor and inputs come from module-level example_args()/example_inputs()."""

# outcome: ok
# verify-inputs: float32(3, 7), float32(3, 1)
import torch
from torch import nn


def example_args() -> dict[str, int]:
    return {"features": 7, "hidden": 11}


def example_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(3, 7), torch.rand(3, 1)


class WeightedRegressor(nn.Module):  # verify-target
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ELU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return (self.net(x) * weight).mean()
