"""Writing into a ``.detach()`` alias of a tensor that ``exp`` saved for backward.

``detach()`` returns a tensor that shares storage AND the version counter with the original,
so ``stats[0] = 0`` bumps the version of ``probs``, which ``torch.exp`` saved (its gradient is
its output). torch REJECTS it: backward raises "... output 0 of Exp, is at version 1;
expected version 0". Fix: ``probs.detach().clone()``.
"""

import torch
from torch import nn


class PolicyHead(nn.Module):
    def __init__(self, obs_dim: int = 8, num_actions: int = 4) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, num_actions))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        log_probs = torch.log_softmax(self.net(obs), dim=-1)
        probs = torch.exp(log_probs)
        stats = probs.detach()  # "just for logging": shares probs' version counter
        stats[0] = 0.0          # in-place write through the alias
        return probs, stats


def main() -> None:
    torch.manual_seed(0)
    policy = PolicyHead()
    obs = torch.randn(5, 8)
    advantages = torch.randn(5, 4)
    probs, stats = policy(obs)
    print(f"mean prob of logged rows: {stats[1:].mean().item():.3f}")
    loss = -(probs * advantages).sum()
    loss.backward()


if __name__ == "__main__":
    main()
