"""Hand-written linear regression with a manual SGD update that forgot torch.no_grad()."""
# outcome: leaf-error
import torch


def fit(x, y, steps=3, lr=0.1):
    w = torch.zeros(x.shape[1], 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for _ in range(steps):
        pred = x @ w + b
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad  # error: IPL002
        b -= lr * b.grad  # error: IPL002
        w.grad.zero_()
        b.grad.zero_()
    return w, b


def run() -> None:
    torch.manual_seed(0)
    x = torch.randn(16, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    fit(x, y)
