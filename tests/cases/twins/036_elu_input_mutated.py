"""Twin of 036_elu_input_mutated.py, written out of place by hand: Critic whose hidden pre-activation is clipped in place after nn.ELU saved it (ELU saves its input)."""
import torch
import torch.nn as nn


class Critic(nn.Module):
    def __init__(self, state_dim, hidden=16):
        super().__init__()
        self.fc1 = nn.Linear(state_dim, hidden)
        self.act = nn.ELU()
        self.fc2 = nn.Linear(hidden, 1)
        self.clip = 3.0

    def forward(self, state):
        pre = self.fc1(state)
        h = self.act(pre)
        clipped = torch.clamp(pre, -self.clip, self.clip)
        return self.fc2(h) + 0.1 * clipped.mean(dim=1, keepdim=True)


def run() -> None:
    torch.manual_seed(0)
    critic = Critic(5)
    states, targets = torch.randn(4, 5), torch.randn(4, 1)
    loss = nn.functional.huber_loss(critic(states), targets)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    critic = Critic(5)
    states, targets = torch.randn(4, 5), torch.randn(4, 1)
    loss = nn.functional.huber_loss(critic(states), targets)
    loss.backward()
    return {name: p.grad for name, p in critic.named_parameters()}
