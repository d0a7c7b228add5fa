"""Twin of 113_glu_chunk_gated_in_place.py, written out of place by hand: the gated value is a new tensor."""
import torch
import torch.nn as nn


class GLU(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        value = value.mul(torch.sigmoid(gate))
        return self.out(value)


def run() -> None:
    torch.manual_seed(0)
    model = GLU(8)
    loss = model(torch.randn(5, 8)).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = GLU(8)
    loss = model(torch.randn(5, 8)).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
