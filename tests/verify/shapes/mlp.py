"""Plain MLP classifier, every constructor argument has a default."""

# outcome: ok
# verify-inputs: float32(2, 20)
import torch
from torch import nn


class MLP(nn.Module):  # verify-target
    def __init__(self, in_features: int = 20, hidden: int = 64, classes: int = 5) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.act = nn.ReLU(inplace=True)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))
