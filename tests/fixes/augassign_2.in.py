"""augassign with non-ASCII text before the write on the same line, and a one-line `if`."""

import torch
import torch.nn as nn


class Größe(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        σ = torch.sigmoid(x)
        étiquette = "σ halbiert"; σ *= 0.5  # ½ (Kommentar bleibt)
        τ = torch.tanh(x)
        if étiquette: τ += x ** 2 if x.numel() else x
        return σ + τ
