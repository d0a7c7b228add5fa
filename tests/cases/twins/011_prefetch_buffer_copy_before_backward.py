"""Twin of 011_prefetch_buffer_copy_before_backward.py, written out of place by hand: Training loop that prefetches the next batch into the same pinned buffer before backward; Linear saved it."""
import torch
import torch.nn as nn


def batches(n, batch_size, dim):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        yield torch.randn(batch_size, dim, generator=g), torch.randint(0, 3, (batch_size,), generator=g)


def train(model, loader, optimizer, input_buffer):
    criterion = nn.CrossEntropyLoss()
    x, y = next(loader)
    for x_next, y_next in loader:
        optimizer.zero_grad()
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        x, y = x_next, y_next


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    input_buffer = torch.empty(4, 6)
    train(model, batches(3, 4, 6), optimizer, input_buffer)


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    input_buffer = torch.empty(4, 6)
    train(model, batches(3, 4, 6), optimizer, input_buffer)
    return {
        **{name: p.grad for name, p in model.named_parameters()},
        **{f"value.{name}": p.detach().clone() for name, p in model.named_parameters()},
    }
