"""Actor-critic network with a shared trunk and two outputs (policy logits, value)."""

# outcome: ok
# verify-inputs: float32(2, 12)
import torch
from torch import nn


class ActorCritic(nn.Module):  # verify-target
    def __init__(self, obs_dim: int, actions: int, hidden: int = 32) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh())
        self.policy = nn.Linear(hidden, actions)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(obs)
        return self.policy(features), self.value(features).squeeze(-1)


if __name__ == "__main__":
    net = ActorCritic(12, 3)
    print(net(torch.randn(4, 12)))
