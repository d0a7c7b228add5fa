"""Encoder with a padding mask: inputs come from the class's example_inputs() hook."""

# outcome: ok
# verify-inputs: float32(2, 16, 64), bool(2, 16)
import torch
from torch import nn


class MaskedEncoder(nn.Module):  # verify-target
    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, torch.Tensor]:
        mask = torch.zeros(2, 16, dtype=torch.bool)
        mask[:, 12:] = True
        return torch.randn(2, 16, 64), mask

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(x, src_key_padding_mask=padding_mask)
