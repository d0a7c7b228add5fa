"""Twin of 023_manual_sgd_outside_no_grad.py, written out of place by hand: Hand-written linear regression with a manual SGD update that forgot torch.no_grad()."""
import torch


def fit(x, y, steps=3, lr=0.1):
    w = torch.zeros(x.shape[1], 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for _ in range(steps):
        pred = x @ w + b
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w.sub_(lr * w.grad)
            b.sub_(lr * b.grad)
        w.grad = None
        b.grad = None
    return w, b


def run() -> None:
    torch.manual_seed(0)
    x = torch.randn(16, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    fit(x, y)


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(16, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    w, b = fit(x, y)
    return {"w": w.detach(), "b": b.detach()}
