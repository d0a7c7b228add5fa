"""Manual SGD that updates a leaf parameter in place outside ``torch.no_grad()``.

``w`` is a leaf that requires grad; ``w -= lr * w.grad`` is an in-place op autograd would
have to record on a leaf, which it refuses. torch REJECTS it, at the update line itself:
"a leaf Variable that requires grad is being used in an in-place operation."
Fix: wrap the update in ``with torch.no_grad():`` (not ``.data``, not ``w = w - ...``).
"""

import torch


def main() -> None:
    torch.manual_seed(0)
    true_w = torch.tensor([2.0, -3.0, 0.5])
    x = torch.randn(64, 3)
    y = x @ true_w + 0.1 * torch.randn(64)

    w = torch.zeros(3, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr = 0.1
    for _step in range(5):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad  # in-place update of a leaf that requires grad
        b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
    print(f"w={w.tolist()}")


if __name__ == "__main__":
    main()
