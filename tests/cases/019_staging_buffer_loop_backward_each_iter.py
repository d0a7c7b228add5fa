"""Online learner reusing one staging buffer, but each step calls backward before the buffer is overwritten."""
# outcome: ok
import torch
import torch.nn as nn


def online_train(model, stream, lr=0.05):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    frame = torch.empty(stream.shape[1], stream.shape[2])
    losses = []
    for t in range(stream.shape[0]):
        frame.copy_(stream[t])
        optimizer.zero_grad()
        pred = model(frame)
        loss = pred.pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    stream = torch.randn(3, 5, 4)
    online_train(model, stream)
