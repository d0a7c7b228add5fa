"""Encoder whose Sequential (built in __init__) ends in Tanh; a post-processing method rescales that output in place."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, d_in, d_code, code_range=4.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, 16),
            nn.ReLU(),
            nn.Linear(16, d_code),
            nn.Tanh(),
        )
        self.code_range = code_range

    def _postprocess(self, code):
        code.mul_(self.code_range)  # error: IPL001
        return code

    def forward(self, x):
        code = self.net(x)  # saved-by
        return self._postprocess(code)


def run() -> None:
    torch.manual_seed(0)
    encoder = Encoder(6, 3)
    decoder = nn.Linear(3, 6)
    x = torch.randn(4, 6)
    loss = nn.functional.mse_loss(decoder(encoder(x)), x)
    loss.backward()
