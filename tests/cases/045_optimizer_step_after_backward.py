"""The textbook training loop: zero_grad, forward, backward, then optimizer.step()."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, sizes=(4, 16, 16, 3)):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = torch.sigmoid(layer(x))
        return self.layers[-1](x)


def train(model, loader, epochs=2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    model.train()
    for _ in range(epochs):
        for data, target in loader:
            optimizer.zero_grad()
            output = model(data)
            loss = F.cross_entropy(output, target)
            loss.backward()
            optimizer.step()


def run() -> None:
    torch.manual_seed(0)
    loader = [(torch.randn(4, 4), torch.randint(0, 3, (4,))) for _ in range(3)]
    train(MLP(), loader)
