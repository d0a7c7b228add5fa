"""Multi-agent double-Q learner: the online Q-values are copied with `.clone().detach()` and the copy's unavailable actions are masked in place before the argmax picks the target actions."""
# outcome: ok
import torch
import torch.nn.functional as F
from torch import nn


class AgentNet(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.fc = nn.Linear(obs_dim, 16)
        self.out = nn.Linear(16, n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.fc(obs)))


def td_loss(agent, target_agent, obs, actions, rewards, avail_actions, gamma=0.99):
    mac_out = torch.stack([agent(obs[:, t]) for t in range(obs.shape[1])], dim=1)
    chosen = torch.gather(mac_out[:, :-1], dim=3, index=actions).squeeze(3)
    with torch.no_grad():
        target_out = torch.stack([target_agent(obs[:, t]) for t in range(obs.shape[1])], dim=1)
        mac_out_detach = mac_out.clone().detach()
        mac_out_detach[avail_actions == 0] = -9999999
        cur_max_actions = mac_out_detach.max(dim=3, keepdim=True)[1]
        target_max = torch.gather(target_out, 3, cur_max_actions).squeeze(3)
        targets = rewards + gamma * target_max[:, 1:]
    return ((chosen - targets) ** 2).mean()


def run() -> None:
    torch.manual_seed(0)
    agent, target_agent = AgentNet(5, 3), AgentNet(5, 3)
    optimizer = torch.optim.Adam(agent.parameters(), lr=1e-3)
    obs = torch.randn(2, 4, 2, 5)
    actions = torch.randint(0, 3, (2, 3, 2, 1))
    rewards = torch.randn(2, 3, 2)
    avail_actions = torch.randint(0, 2, (2, 4, 2, 3))
    avail_actions[..., 0] = 1
    loss = td_loss(agent, target_agent, obs, actions, rewards, avail_actions)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
