"""Twin of 049_wgan_clip_outside_no_grad.py, written out of place by hand: WGAN critic weight clipping written as p.clamp_() on the parameters, outside torch.no_grad()."""
import torch
import torch.nn as nn

CLIP = 0.01


def critic_step(critic, optimizer, real, fake):
    optimizer.zero_grad()
    loss = critic(fake).mean() - critic(real).mean()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for p in critic.parameters():
            p.copy_(p.clamp(-CLIP, CLIP))
    return loss.item()


def run() -> None:
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    optimizer = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    critic_step(critic, optimizer, torch.randn(6, 4), torch.randn(6, 4))


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    optimizer = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    critic_step(critic, optimizer, torch.randn(6, 4), torch.randn(6, 4))
    return {
        **{name: p.grad for name, p in critic.named_parameters()},
        **{f"value.{name}": p.detach().clone() for name, p in critic.named_parameters()},
    }
