"""SwiGLU-style block that rescales the SiLU output in place: SiLU saved its input, so this is safe."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden, out_scale=0.5):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.out_scale = out_scale

    def forward(self, x):
        gate = F.silu(self.w1(x))
        gate.mul_(self.out_scale)
        return self.w2(gate * self.w3(x))


def run() -> None:
    torch.manual_seed(0)
    ffn = SwiGLU(8, 12)
    x = torch.randn(2, 5, 8)
    loss = ffn(x).square().mean()
    loss.backward()
