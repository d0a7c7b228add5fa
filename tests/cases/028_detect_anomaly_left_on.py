"""Training script that turned anomaly detection on while debugging and never turned it off."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def main(epochs=2):
    torch.autograd.set_detect_anomaly(True)  # warning: IPL006
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def run() -> None:
    torch.manual_seed(0)
    main()
