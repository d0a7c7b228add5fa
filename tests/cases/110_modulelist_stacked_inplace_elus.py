"""Feature stack kept in an nn.ModuleList and run in a loop; two ELU(inplace=True) in a row: the second overwrites the output the first saved for its backward."""
# outcome: inplace-error
import torch
import torch.nn as nn


class FeatureStack(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layers = nn.ModuleList(
            [
                nn.Linear(dim, dim),
                nn.ELU(inplace=True),
                nn.ELU(inplace=True),  # error: IPL003
                nn.Linear(dim, dim),
            ]
        )
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)  # saved-by
        return self.head(h)


def run() -> None:
    torch.manual_seed(0)
    model = FeatureStack(8)
    x = torch.randn(4, 8)
    model(x).sum().backward()
