"""Audio classifier: Conv1d over (batch, channels, time), BatchNorm1d, global pooling, Linear."""

# outcome: ok
# verify-inputs: float32(2, 40, 32)
import torch
from torch import nn


class AudioNet(nn.Module):  # verify-target
    def __init__(self, mel_bins: int = 40, classes: int = 12) -> None:
        super().__init__()
        self.conv = nn.Conv1d(mel_bins, 64, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm1d(64)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, spectrogram: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn(self.conv(spectrogram)))
        return self.fc(self.pool(h).squeeze(-1))
