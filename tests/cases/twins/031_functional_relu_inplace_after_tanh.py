"""Twin of 031_functional_relu_inplace_after_tanh.py, written out of place by hand: Policy network that applies F.relu(..., inplace=True) to a tanh output to keep actions non-negative."""
import torch
from torch import nn
from torch.nn import functional as F


class Policy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=16):
        super().__init__()
        self.l1 = nn.Linear(obs_dim, hidden)
        self.l2 = nn.Linear(hidden, act_dim)

    def forward(self, obs):
        h = F.relu(self.l1(obs))
        a = torch.tanh(self.l2(h))
        return F.relu(a)


def run() -> None:
    torch.manual_seed(0)
    policy = Policy(5, 2)
    obs = torch.randn(4, 5)
    advantages = torch.randn(4, 1)
    loss = -(policy(obs) * advantages).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    policy = Policy(5, 2)
    obs = torch.randn(4, 5)
    advantages = torch.randn(4, 1)
    loss = -(policy(obs) * advantages).mean()
    loss.backward()
    return {name: p.grad for name, p in policy.named_parameters()}
