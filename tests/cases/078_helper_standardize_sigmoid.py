"""A module-level helper removes the batch mean from its argument in place; the caller passes a sigmoid output."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


def remove_batch_mean_(t):
    mean = t.mean(dim=0, keepdim=True)
    t.sub_(mean)  # error: IPL001
    return t


class AttributeHead(nn.Module):
    def __init__(self, d_in, n_attr):
        super().__init__()
        self.fc = nn.Linear(d_in, n_attr)
        self.out = nn.Linear(n_attr, 1)

    def forward(self, x):
        attrs = torch.sigmoid(self.fc(x))  # saved-by
        return self.out(remove_batch_mean_(attrs))


def run() -> None:
    torch.manual_seed(0)
    model = AttributeHead(6, 4)
    loss = model(torch.randn(5, 6)).square().mean()
    loss.backward()
