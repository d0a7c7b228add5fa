"""wrap-no-grad: consecutive leaf updates share ONE block; torch imported under an alias."""

import torch as th


def fit(x: th.Tensor, y: th.Tensor, steps: int = 3, lr: float = 0.1) -> th.Tensor:
    w = th.zeros(x.shape[1], 1, requires_grad=True)
    b = th.zeros(1, requires_grad=True)
    for _ in range(steps):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        # manual SGD step (this comment stays above the block)
        with th.no_grad():
            w -= lr * w.grad  # weights
            # bias too
            b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
    return w
