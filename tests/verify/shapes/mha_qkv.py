"""Cross-attention with separate query, key and value inputs of different widths (seq-first)."""

# outcome: ok
# verify-inputs: float32(8, 2, 32), float32(8, 2, 16), float32(8, 2, 24)
import torch
from torch import nn


class CrossAttention(nn.Module):  # verify-target
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, kdim=16, vdim=24)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        out, weights = self.attn(query, key, value)
        return out
