"""The same GAN step with the post's detach (the discriminator loss sees gz.detach()) and the standard reordering: the generator loss is computed from a fresh d(gz) after the discriminator has stepped."""
# outcome: ok
# source: https://php.bkmy88.com/faq/1575425.html
# repo: php.bkmy88.com/1575425
# category: trainer
# twin: 502_php_gan_loss_nonsaturating_d_step_before_g_backward.py
# The post shows loss_nonsaturating (its first lines kept below) and describes the training step;
# the two networks and the rest of the loss are written here to fit: small MLPs, g with a z_dim,
# and BCE on d's outputs.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, z_dim=8, x_dim=16):
        super().__init__()
        self.z_dim = z_dim
        self.net = nn.Sequential(nn.Linear(z_dim, 32), nn.ReLU(), nn.Linear(32, x_dim))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, x_dim=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(x_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def loss_nonsaturating(d, g, x_real, *, device):
    z = torch.randn(x_real.shape[0], g.z_dim, device=device)
    gz = g(z)
    dgz = F.sigmoid(d(gz.detach()))
    dx = d(x_real)

    real_label = torch.ones(x_real.shape[0], device=device)
    fake_label = torch.zeros(x_real.shape[0], device=device)

    bce_loss = F.binary_cross_entropy
    d_loss = bce_loss(F.sigmoid(dx), real_label) + bce_loss(dgz, fake_label)
    return d_loss, gz


def loss_generator(d, gz, *, device):
    real_label = torch.ones(gz.shape[0], device=device)
    return F.binary_cross_entropy(F.sigmoid(d(gz)), real_label)


def train(d, g, loader, d_optimizer, g_optimizer, device):
    for x_real in loader:
        x_real = x_real.to(device)
        d_loss, gz = loss_nonsaturating(d, g, x_real, device=device)

        d_optimizer.zero_grad()
        d_loss.backward()
        d_optimizer.step()

        g_loss = loss_generator(d, gz, device=device)
        g_optimizer.zero_grad()
        g_loss.backward()
        g_optimizer.step()
        print(d_loss.item(), g_loss.item())


if __name__ == "__main__":
    device = torch.device("cpu")
    g = Generator().to(device)
    d = Discriminator().to(device)
    d_optimizer = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    g_optimizer = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    loader = [torch.randn(4, 16) for _ in range(3)]
    train(d, g, loader, d_optimizer, g_optimizer, device)
