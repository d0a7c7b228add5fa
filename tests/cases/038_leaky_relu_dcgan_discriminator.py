"""DCGAN discriminator: Conv2d -> BatchNorm2d -> LeakyReLU(0.2, inplace=True) is safe everywhere."""
# outcome: ok
import torch
import torch.nn as nn

ndf = 4
nc = 3


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def run() -> None:
    torch.manual_seed(0)
    netD = Discriminator()
    criterion = nn.BCELoss()
    real = torch.randn(2, nc, 16, 16)
    label = torch.full((2,), 1.0)
    errD = criterion(netD(real), label)
    errD.backward()
