"""Twin of 056_pruning_mask_in_forward.py, written out of place by hand: Magnitude pruning that re-applies the mask to the weight in place inside forward (a leaf that requires grad)."""
import torch
import torch.nn as nn


class PrunedLinear(nn.Module):
    def __init__(self, d_in, d_out, sparsity=0.5):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        with torch.no_grad():
            threshold = self.fc.weight.abs().flatten().kthvalue(int(sparsity * self.fc.weight.numel())).values
        self.register_buffer("mask", (self.fc.weight.abs() > threshold).float())

    @torch.no_grad()
    def _apply_mask(self):
        self.fc.weight.mul_(self.mask)

    def forward(self, x):
        self._apply_mask()
        return self.fc(x)


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(PrunedLinear(6, 4), nn.ReLU(), nn.Linear(4, 1))
    loss = model(torch.randn(3, 6)).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(PrunedLinear(6, 4), nn.ReLU(), nn.Linear(4, 1))
    loss = model(torch.randn(3, 6)).mean()
    loss.backward()
    return {
        **{name: p.grad for name, p in model.named_parameters()},
        **{f"value.{name}": p.detach().clone() for name, p in model.named_parameters()},
    }
