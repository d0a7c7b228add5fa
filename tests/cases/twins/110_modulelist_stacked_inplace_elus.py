"""Twin of 110_modulelist_stacked_inplace_elus.py, written out of place by hand: Feature stack kept in an nn.ModuleList and run in a loop; two ELU(inplace=True) in a row: the second overwrites the output the first saved for its backward."""
import torch
import torch.nn as nn


class FeatureStack(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layers = nn.ModuleList(
            [
                nn.Linear(dim, dim),
                nn.ELU(inplace=True),
                nn.ELU(),
                nn.Linear(dim, dim),
            ]
        )
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


def run() -> None:
    torch.manual_seed(0)
    model = FeatureStack(8)
    x = torch.randn(4, 8)
    model(x).sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = FeatureStack(8)
    x = torch.randn(4, 8)
    model(x).sum().backward()
    return {name: p.grad for name, p in model.named_parameters()}
