"""A trainer freezes the encoder it built in __init__; its step adds to the frozen encoder's sigmoid output in place."""
# outcome: ok
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.Sigmoid()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = Block(dim)
        self.dec = Block(dim)

    def forward(self, x):
        return self.dec(self.enc(x))


class Trainer:
    def __init__(self, dim=4):
        self.model = Net(dim)
        # Nothing of the encoder requires grad: its output is not saved by anything.
        self.model.enc.requires_grad_(False)
        self.opt = torch.optim.SGD(self.model.dec.parameters(), lr=0.1)

    def step(self, x):
        h = self.model.enc(x)
        h += 1
        loss = self.model.dec(h).sum()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def run() -> None:
    torch.manual_seed(0)
    Trainer().step(torch.randn(3, 4))
