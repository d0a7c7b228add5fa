"""Sequence encoder on a GRU with the default (seq, batch, feature) layout, returning a tuple."""

# outcome: ok
# verify-inputs: float32(8, 2, 10)
import torch
from torch import nn


class GRUEncoder(nn.Module):  # verify-target
    def __init__(self, input_size: int = 10, hidden: int = 20, layers: int = 2) -> None:
        super().__init__()
        self.gru = nn.GRU(input_size, hidden, num_layers=layers)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        output, hidden = self.gru(x)
        return self.proj(output), hidden
