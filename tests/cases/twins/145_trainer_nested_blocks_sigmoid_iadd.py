"""Twin of 145_trainer_nested_blocks_sigmoid_iadd.py, written out of place by hand: A trainer builds its model of nested blocks in __init__; its step adds to the encoder's sigmoid output in place."""
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
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, x):
        h = self.model.enc(x)
        h = h + 1
        loss = self.model.dec(h).sum()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def run() -> None:
    torch.manual_seed(0)
    Trainer().step(torch.randn(3, 4))


def grads() -> dict[str, torch.Tensor]:
    # the gradients the one step left on the parameters
    torch.manual_seed(0)
    trainer = Trainer()
    trainer.step(torch.randn(3, 4))
    return {name: p.grad for name, p in trainer.model.named_parameters()}
