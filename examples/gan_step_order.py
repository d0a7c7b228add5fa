"""GAN step order bug: the discriminator's ``optimizer.step()`` runs before the generator loss
is back-propagated through the SAME discriminator forward.

``g_loss`` was built from ``discriminator(fake)``, whose Linear layers saved the
discriminator's weights. ``d_optimizer.step()`` then updates those weights in place, so
``g_loss.backward()`` finds them at a newer version. torch REJECTS it: "... modified by an
inplace operation: [torch.FloatTensor [32, 1]], which is output 0 of AsStrided, is at
version 2; expected version 1" (the transposed weight of D's last Linear layer).
Fix: call ``g_loss.backward()`` before ``d_optimizer.step()``, or recompute
``discriminator(fake)`` after the step.
"""

import torch
from torch import nn


def make_generator(latent: int = 8, out: int = 2) -> nn.Module:
    return nn.Sequential(nn.Linear(latent, 32), nn.LeakyReLU(0.2), nn.Linear(32, out))


def make_discriminator(dim: int = 2) -> nn.Module:
    return nn.Sequential(nn.Linear(dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))


def main() -> None:
    torch.manual_seed(0)
    generator, discriminator = make_generator(), make_discriminator()
    g_optimizer = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    d_optimizer = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()

    real = torch.randn(16, 2) * 0.5 + 1.0
    fake = generator(torch.randn(16, 8))
    d_fake = discriminator(fake)

    d_loss = bce(discriminator(real), torch.ones(16, 1)) + bce(
        discriminator(fake.detach()), torch.zeros(16, 1)
    )
    g_loss = bce(d_fake, torch.ones(16, 1))  # graph goes through D's current weights

    d_optimizer.zero_grad()
    d_loss.backward()
    d_optimizer.step()  # updates D's weights in place

    g_optimizer.zero_grad()
    g_loss.backward()  # needs D's old weights: raises
    g_optimizer.step()
    print(f"d_loss={d_loss.item():.4f} g_loss={g_loss.item():.4f}")


if __name__ == "__main__":
    main()
