"""The widely copied "broken" example h = fc1(x); h += 2.0; fc2(h): Linear saves its input, not its output."""
# outcome: ok
import torch
from torch import nn


class TwoLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        h = self.fc1(x)
        h += 2.0
        out = self.fc2(h)
        return out


def run() -> None:
    torch.manual_seed(0)
    model = TwoLayer()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 10)
    y = torch.randint(0, 2, (8,))
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
