"""Multi-task model with a two-layer shared trunk: stepping after task A's backward changes weights task B's graph saved."""
# outcome: inplace-error
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU())
        self.head_a = nn.Linear(12, 3)
        self.head_b = nn.Linear(12, 1)

    def forward(self, x):
        z = self.trunk(x)  # saved-by
        return self.head_a(z), self.head_b(z).squeeze(-1)


def run() -> None:
    torch.manual_seed(0)
    model = MultiTask()
    trunk_opt = torch.optim.SGD(model.trunk.parameters(), lr=0.1, momentum=0.9)
    heads_opt = torch.optim.SGD([*model.head_a.parameters(), *model.head_b.parameters()], lr=0.1)
    x = torch.randn(5, 6)
    y_cls, y_reg = torch.randint(0, 3, (5,)), torch.randn(5)

    out_a, out_b = model(x)
    loss_a = F.cross_entropy(out_a, y_cls)
    loss_b = F.mse_loss(out_b, y_reg)

    trunk_opt.zero_grad()
    heads_opt.zero_grad()
    loss_a.backward(retain_graph=True)
    trunk_opt.step()  # error: IPL007
    loss_b.backward()
    heads_opt.step()
