"""Classifier head whose old in-place bias update was left below a `return`, and a guard whose clean-up sits after its `raise`: neither line ever runs."""
# outcome: ok
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, d_model, classes):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, classes)
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        h = torch.sigmoid(self.proj(x))
        if not torch.isfinite(h).all():
            raise FloatingPointError("non-finite activations")
            h.nan_to_num_(0.0)
        return self.out(h + self.bias)
        # the old version, kept for reference
        h += self.bias
        return self.out(h)


def train_step(head, x, y, opt):
    logits = head(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()
    loss *= 0.0


def run() -> None:
    torch.manual_seed(0)
    head = Head(8, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(2):
        train_step(head, torch.randn(4, 8), torch.randint(0, 3, (4,)), opt)
