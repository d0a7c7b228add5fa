"""WGAN critic weight clipping the way the original code does it, through p.data, after the step."""
# outcome: ok
import torch
import torch.nn as nn

CLIP = 0.01


def critic_step(critic, optimizer, real, fake):
    optimizer.zero_grad()
    loss = critic(fake).mean() - critic(real).mean()
    loss.backward()
    optimizer.step()
    for p in critic.parameters():
        p.data.clamp_(-CLIP, CLIP)
    return loss.item()


def run() -> None:
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    optimizer = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    for _ in range(2):
        critic_step(critic, optimizer, torch.randn(6, 4), torch.randn(6, 4))
