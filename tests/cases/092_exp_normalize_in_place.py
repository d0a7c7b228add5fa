"""Mixture-of-softmaxes written by hand: exp weights normalized in place with /=; ExpBackward0 saved the exp output."""
# outcome: inplace-error
import torch
import torch.nn as nn


class MixtureWeights(nn.Module):
    def __init__(self, dim, n_components):
        super().__init__()
        self.logits = nn.Linear(dim, n_components)
        self.means = nn.Linear(dim, n_components)

    def forward(self, x):
        w = self.logits(x).exp()  # saved-by
        w /= w.sum(dim=-1, keepdim=True)  # error: IPL001
        return (w * self.means(x)).sum(-1)


def run() -> None:
    torch.manual_seed(0)
    model = MixtureWeights(4, 3)
    x, y = torch.randn(5, 4), torch.randn(5)
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
