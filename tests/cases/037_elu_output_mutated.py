"""Autoencoder that shifts the ELU output in place (ELU + 1 > 0 for a positive code): ELU saved its input only."""
# outcome: ok
import torch
from torch import nn


class PositiveAutoencoder(nn.Module):
    def __init__(self, d, code):
        super().__init__()
        self.encoder = nn.Linear(d, code)
        self.act = nn.ELU()
        self.decoder = nn.Linear(code, d)

    def encode(self, x):
        z = self.act(self.encoder(x))
        z += 1.0
        return z

    def forward(self, x):
        return self.decoder(self.encode(x))


def run() -> None:
    torch.manual_seed(0)
    ae = PositiveAutoencoder(6, 3)
    x = torch.randn(5, 6)
    loss = nn.functional.mse_loss(ae(x), x)
    loss.backward()
