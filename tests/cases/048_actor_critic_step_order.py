"""DDPG-style update: the critic steps between computing the actor loss through it and the actor's backward."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


class Actor(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 16), nn.ReLU(), nn.Linear(16, act_dim), nn.Tanh())

    def forward(self, obs):
        return self.net(obs)


class Critic(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(obs_dim + act_dim, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, obs, act):
        return self.q(torch.cat([obs, act], dim=-1))  # saved-by


def update(actor, critic, actor_opt, critic_opt, batch, gamma=0.99):
    obs, act, rew, next_obs = batch
    with torch.no_grad():
        target = rew + gamma * critic(next_obs, actor(next_obs))

    q_pred = critic(obs, act)
    critic_loss = (q_pred - target).pow(2).mean()
    actor_loss = -critic(obs, actor(obs)).mean()

    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()  # error: IPL007

    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()


def run() -> None:
    torch.manual_seed(0)
    actor, critic = Actor(4, 2), Critic(4, 2)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    batch = (torch.randn(5, 4), torch.rand(5, 2) * 2 - 1, torch.randn(5, 1), torch.randn(5, 4))
    update(actor, critic, actor_opt, critic_opt, batch)
