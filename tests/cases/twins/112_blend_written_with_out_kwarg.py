"""Twin of 112_blend_written_with_out_kwarg.py, written out of place by hand: the blend is assigned instead of written through out=."""
import torch
import torch.nn as nn


class Blend(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.left = nn.Linear(dim, dim)
        self.right = nn.Linear(dim, dim)

    def forward(self, x):
        mixed = torch.add(self.left(x), self.right(x), alpha=0.5)
        return mixed.sum(-1)


def run() -> None:
    torch.manual_seed(0)
    model = Blend(6)
    loss = model(torch.randn(3, 6)).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Blend(6)
    loss = model(torch.randn(3, 6)).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
