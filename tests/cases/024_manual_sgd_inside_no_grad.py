"""Hand-written logistic regression with a correct manual SGD update inside torch.no_grad()."""
# outcome: ok
import torch
import torch.nn.functional as F


def fit(x, y, steps=5, lr=0.5):
    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros((), requires_grad=True)
    for _ in range(steps):
        logits = x @ w + b
        loss = F.binary_cross_entropy_with_logits(logits, y)
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
    return w, b


def run() -> None:
    torch.manual_seed(0)
    x = torch.randn(20, 4)
    y = (x[:, 0] > 0).float()
    fit(x, y)
