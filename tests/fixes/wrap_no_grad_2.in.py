"""wrap-no-grad where torch itself is not imported, with non-ASCII text before the write."""

from torch import nn


class Pruned(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.embedding = nn.Embedding(10, 4)
        λ = 0; self.embedding.weight.zero_()  # Polsterzeile

    def forward(self, x):
        for p in self.fc.parameters(): p.clamp_(-1.0, 1.0)
        return self.fc(x)
