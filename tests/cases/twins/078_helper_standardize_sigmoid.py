"""Twin of 078_helper_standardize_sigmoid.py, written out of place by hand: A module-level helper removes the batch mean from its argument in place; the caller passes a sigmoid output."""
import torch
import torch.nn as nn


def remove_batch_mean_(t):
    return t - t.mean(dim=0, keepdim=True)


class AttributeHead(nn.Module):
    def __init__(self, d_in, n_attr):
        super().__init__()
        self.fc = nn.Linear(d_in, n_attr)
        self.out = nn.Linear(n_attr, 1)

    def forward(self, x):
        attrs = torch.sigmoid(self.fc(x))
        return self.out(remove_batch_mean_(attrs))


def run() -> None:
    torch.manual_seed(0)
    model = AttributeHead(6, 4)
    loss = model(torch.randn(5, 6)).square().mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = AttributeHead(6, 4)
    loss = model(torch.randn(5, 6)).square().mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
