"""``total_loss += loss`` in a training loop: runs, but keeps every step's graph alive.

``loss`` is a tensor attached to the autograd graph; adding it (in place or not) into a
running total that lives across iterations chains every iteration's graph onto the total,
so memory grows with the number of steps. Nothing raises: torch ACCEPTS it, and the script
finishes normally. Fix: accumulate ``loss.item()`` (or ``loss.detach()``).
"""

import torch
from torch import nn


def make_batches(steps: int, batch: int = 16) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [
        (torch.randn(batch, 10, generator=generator), torch.randn(batch, 1, generator=generator))
        for _ in range(steps)
    ]


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    total_loss = 0.0
    for inputs, targets in make_batches(steps=20):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total_loss += loss  # keeps the graph of every step reachable from total_loss
    print(f"mean loss={total_loss.item() / 20:.4f} (total_loss.grad_fn={total_loss.grad_fn})")


if __name__ == "__main__":
    main()
