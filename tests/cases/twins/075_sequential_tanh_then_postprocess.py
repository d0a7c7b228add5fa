"""Twin of 075_sequential_tanh_then_postprocess.py, written out of place by hand: Encoder whose Sequential (built in __init__) ends in Tanh; a post-processing method rescales that output in place."""
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
        return code * self.code_range

    def forward(self, x):
        code = self.net(x)
        return self._postprocess(code)


def run() -> None:
    torch.manual_seed(0)
    encoder = Encoder(6, 3)
    decoder = nn.Linear(3, 6)
    x = torch.randn(4, 6)
    loss = nn.functional.mse_loss(decoder(encoder(x)), x)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    encoder = Encoder(6, 3)
    decoder = nn.Linear(3, 6)
    x = torch.randn(4, 6)
    loss = nn.functional.mse_loss(decoder(encoder(x)), x)
    loss.backward()
    return {
        **{f"encoder.{name}": p.grad for name, p in encoder.named_parameters()},
        **{f"decoder.{name}": p.grad for name, p in decoder.named_parameters()},
    }
