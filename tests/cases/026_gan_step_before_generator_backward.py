"""GAN step that reuses D(fake) for the generator loss after the discriminator's optimizer.step() changed D's weights."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn

LATENT = 4


def build_models():
    generator = nn.Sequential(nn.Linear(LATENT, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
    discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    return generator, discriminator


def train_step(generator, discriminator, opt_g, opt_d, real):
    criterion = nn.BCEWithLogitsLoss()
    batch = real.shape[0]
    ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)

    fake = generator(torch.randn(batch, LATENT))
    scores = discriminator(torch.cat([real, fake]))  # saved-by
    d_real, d_fake = scores.split(batch)

    # discriminator update
    d_loss = criterion(d_real, ones) + criterion(d_fake, zeros)
    opt_d.zero_grad()
    d_loss.backward(retain_graph=True)
    opt_d.step()  # error: IPL007

    # generator update, reusing d_fake from before the step
    g_loss = criterion(d_fake, ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    return d_loss.item(), g_loss.item()


def run() -> None:
    torch.manual_seed(0)
    generator, discriminator = build_models()
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    train_step(generator, discriminator, opt_g, opt_d, torch.randn(6, 8))
