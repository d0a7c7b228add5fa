"""Same scorer as the eval saliency case, trained in train() mode: Dropout returns a fresh tensor there."""
# outcome: ok
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.drop = nn.Dropout(p=0.3)
        self.fc2 = nn.Linear(d_hidden, 1)
        self.temperature = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.fc1(x))
        h = self.drop(h)
        h.mul_(self.temperature)
        return self.fc2(h)


def run() -> None:
    torch.manual_seed(0)
    model = Scorer(6, 10)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 6), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
