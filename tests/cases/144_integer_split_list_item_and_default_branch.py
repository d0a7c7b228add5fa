"""Three look-alikes a library has: an integer tensor's split piece written in place, a list item replaced by torch.cat, and an in-place branch under a constructor flag whose only call site keeps the default."""
# outcome: ok
import torch
import torch.nn as nn


class Pooler(nn.Module):
    def __init__(self, dim: int = 4, inplace_scale: bool = False):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.inplace_scale = inplace_scale

    def forward(self, x, lengths):
        starts, ends = lengths.split(1, dim=1)
        ends += 1
        h = torch.tanh(self.proj(x))
        if self.inplace_scale:
            h *= 2
        else:
            h = h * 2
        chunks = [h[:, :2], h[:, 2:]]
        for i in range(len(chunks)):
            chunks[i] = torch.cat([chunks[i], ends.float()], dim=1)
        return torch.cat(chunks, dim=1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = Pooler()

    def forward(self, x, lengths):
        return self.pool(x, lengths)


def run() -> None:
    torch.manual_seed(0)
    model = Model()
    x = torch.randn(2, 4, requires_grad=True)
    lengths = torch.tensor([[0, 3], [1, 2]])
    model(x, lengths).sum().backward()
