"""Twin of 092_exp_normalize_in_place.py, written out of place by hand: Mixture-of-softmaxes written by hand: exp weights normalized in place with /=; ExpBackward0 saved the exp output."""
import torch
import torch.nn as nn


class MixtureWeights(nn.Module):
    def __init__(self, dim, n_components):
        super().__init__()
        self.logits = nn.Linear(dim, n_components)
        self.means = nn.Linear(dim, n_components)

    def forward(self, x):
        w = torch.softmax(self.logits(x), dim=-1)
        return (w * self.means(x)).sum(-1)


def run() -> None:
    torch.manual_seed(0)
    model = MixtureWeights(4, 3)
    x, y = torch.randn(5, 4), torch.randn(5)
    loss = (model(x) - y).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = MixtureWeights(4, 3)
    x, y = torch.randn(5, 4), torch.randn(5)
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
