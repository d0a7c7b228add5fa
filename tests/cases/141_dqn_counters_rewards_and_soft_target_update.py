"""A DQN loop as CleanRL writes it: `global_step += args.num_envs`, `clipfracs += [loss.item()]`, `episode_reward += reward` from the environment, and a soft update of the target network, which only runs under no_grad."""
# outcome: ok
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class QNetwork(nn.Module):
    def __init__(self, n_actions: int = 2):
        super().__init__()
        self.network = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, n_actions))

    def forward(self, x):
        return self.network(x)


class Env:
    """A stand-in for a gym environment: observations, rewards and flags as NumPy values."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        return self.rng.standard_normal((1, 4)).astype(np.float32), {}

    def step(self, actions):
        obs = self.rng.standard_normal((1, 4)).astype(np.float32)
        return obs, np.ones(1, dtype=np.float32), np.zeros(1, bool), np.zeros(1, bool), {}


def run() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=1)
    parser.add_argument("--tau", type=float, default=0.5)
    args = parser.parse_args([])
    torch.manual_seed(0)
    env = Env()
    q_network = QNetwork()
    optimizer = optim.Adam(q_network.parameters(), lr=1e-3)
    target_network = QNetwork()
    target_network.load_state_dict(q_network.state_dict())
    obs, _ = env.reset()
    global_step = 0
    episode_reward = 0
    clipfracs = []
    for _ in range(3):
        global_step += args.num_envs
        actions = np.array([int(global_step % 2)])
        next_obs, rewards, terminations, truncations, infos = env.step(actions)
        episode_reward += rewards
        with torch.no_grad():
            target_max, _ = target_network(torch.Tensor(next_obs)).max(dim=1)
            td_target = torch.Tensor(rewards).flatten() + 0.99 * target_max
        chosen = torch.LongTensor(actions).view(-1, 1)
        old_val = q_network(torch.Tensor(obs)).gather(1, chosen).squeeze(1)
        loss = F.mse_loss(td_target, old_val)
        clipfracs += [loss.item()]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        for target_param, q_param in zip(target_network.parameters(), q_network.parameters()):
            target_param.data.copy_(
                args.tau * q_param.data + (1.0 - args.tau) * target_param.data
            )
        obs = next_obs
