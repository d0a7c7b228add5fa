"""Magnitude pruning that re-applies the mask to the weight in place inside forward (a leaf that requires grad)."""
# outcome: leaf-error
import torch
import torch.nn as nn


class PrunedLinear(nn.Module):
    def __init__(self, d_in, d_out, sparsity=0.5):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        with torch.no_grad():
            threshold = self.fc.weight.abs().flatten().kthvalue(int(sparsity * self.fc.weight.numel())).values
        self.register_buffer("mask", (self.fc.weight.abs() > threshold).float())

    def forward(self, x):
        self.fc.weight.mul_(self.mask)  # error: IPL002
        return self.fc(x)


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(PrunedLinear(6, 4), nn.ReLU(), nn.Linear(4, 1))
    loss = model(torch.randn(3, 6)).mean()
    loss.backward()
