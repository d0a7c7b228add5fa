"""Multi-task model stepping the one-Linear trunk between two backwards: no saved tensor is a trunk weight (its input needs no grad)."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(6, 12)
        self.head_a = nn.Linear(12, 3)
        self.head_b = nn.Linear(12, 1)

    def forward(self, x):
        z = F.relu(self.trunk(x))
        return self.head_a(z), self.head_b(z).squeeze(-1)


def run() -> None:
    torch.manual_seed(0)
    model = MultiTask()
    optimizer = torch.optim.SGD(model.trunk.parameters(), lr=0.1)
    head_optimizer = torch.optim.SGD(list(model.head_a.parameters()) + list(model.head_b.parameters()), lr=0.1)
    x = torch.randn(5, 6)
    y_cls, y_reg = torch.randint(0, 3, (5,)), torch.randn(5)

    out_a, out_b = model(x)
    loss_a = F.cross_entropy(out_a, y_cls)
    loss_b = F.mse_loss(out_b, y_reg)

    optimizer.zero_grad()
    loss_a.backward(retain_graph=True)
    optimizer.step()
    loss_b.backward()
    head_optimizer.step()
