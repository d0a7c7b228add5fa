"""V-MPO-style agent: the policy loss method is chosen once by a flag and kept in an attribute; it squeezes the softmax of advantages in place, which computed under no_grad need no grad."""
# outcome: ok
import torch
from torch import nn


class Agent:
    def __init__(self, state_dim: int, use_topk: bool) -> None:
        self.actor = nn.Sequential(nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, 1))
        self.critic = nn.Linear(state_dim, 1)
        self.eta = nn.Parameter(torch.ones(1))
        self.optim = torch.optim.Adam(
            [*self.actor.parameters(), *self.critic.parameters(), self.eta], lr=1e-3
        )
        self.calc_pi_loss = self.calc_pi_loss_topk if use_topk else self.calc_pi_loss_all

    def calc_pi_loss_all(self, states, advs_detached):
        eta_detached = self.eta.detach().clamp_min(1e-8)
        psi = nn.functional.softmax(advs_detached / eta_detached, dim=0).squeeze_()
        return -(psi * self.actor(states).squeeze(-1)).sum()

    def calc_pi_loss_topk(self, states, advs_detached):
        eta_detached = self.eta.detach().clamp_min(1e-8)
        top, idx = torch.topk(advs_detached, advs_detached.numel() // 2, dim=0, sorted=False)
        psi = nn.functional.softmax(top / eta_detached, dim=0).squeeze_()
        return -(psi * self.actor(states).squeeze(-1)[idx.squeeze(-1)]).sum()

    def update(self, states, rewards):
        with torch.no_grad():
            advs = rewards - self.critic(states)
            advs = (advs - advs.mean()) / (advs.std() + 1e-7)
        pi_loss = self.calc_pi_loss(states, advs)
        critic_loss = (self.critic(states) - rewards).pow(2).mean()
        self.optim.zero_grad()
        (pi_loss + critic_loss).backward()
        self.optim.step()


def run() -> None:
    torch.manual_seed(0)
    states, rewards = torch.randn(8, 4), torch.randn(8, 1)
    for use_topk in (False, True):
        agent = Agent(4, use_topk)
        agent.update(states, rewards)
        agent.update(states, rewards)
