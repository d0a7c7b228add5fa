"""A GAN Trainer keeps both models and their optimizers on self and steps D between the discriminator's backward and the generator's, whose graph saved D's weights."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.G, self.D = nn.Linear(4, 4), nn.Linear(4, 1)
        self.opt_g = torch.optim.Adam(self.G.parameters())
        self.opt_d = torch.optim.Adam(self.D.parameters())

    def train_step(self, z):
        fake = self.G(z)
        d_loss = self.D(fake.detach()).mean()
        g_loss = -self.D(fake).mean()  # saved-by
        d_loss.backward()
        self.opt_d.step()  # error: IPL007
        g_loss.backward()
        self.opt_g.step()


def run() -> None:
    torch.manual_seed(0)
    Trainer().train_step(torch.randn(8, 4))
