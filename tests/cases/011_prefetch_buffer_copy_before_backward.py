"""Training loop that prefetches the next batch into the same pinned buffer before backward; Linear saved it."""
# outcome: inplace-error
import torch
import torch.nn as nn


def batches(n, batch_size, dim):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        yield torch.randn(batch_size, dim, generator=g), torch.randint(0, 3, (batch_size,), generator=g)


def train(model, loader, optimizer, input_buffer):
    criterion = nn.CrossEntropyLoss()
    x0, y = next(loader)
    input_buffer.copy_(x0)
    for x_next, y_next in loader:
        optimizer.zero_grad()
        logits = model(input_buffer)  # saved-by
        loss = criterion(logits, y)
        input_buffer.copy_(x_next)  # error: IPL001
        loss.backward()
        optimizer.step()
        y = y_next


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    input_buffer = torch.empty(4, 6)
    train(model, batches(3, 4, 6), optimizer, input_buffer)
