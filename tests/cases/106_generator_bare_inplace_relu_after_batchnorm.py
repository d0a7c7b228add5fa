"""Generator that rectifies BatchNorm outputs with bare in-place ReLU statements; BN saved its input, so later lines read the activated values as intended."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, latent=8, hidden=16, out=4):
        super().__init__()
        self.fc1 = nn.Linear(latent, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.fc3 = nn.Linear(hidden, hidden)
        self.bn3 = nn.BatchNorm1d(hidden)
        self.act = nn.ReLU(inplace=True)
        self.out = nn.Linear(hidden, out)

    def forward(self, z):
        h = self.bn1(self.fc1(z))
        F.relu(h, inplace=True)
        h = self.bn2(self.fc2(h))
        h.relu_()
        h = self.bn3(self.fc3(h))
        self.act(h)
        return torch.tanh(self.out(h))


def run() -> None:
    torch.manual_seed(0)
    generator = Generator()
    fake = generator(torch.randn(6, 8))
    loss = fake.pow(2).mean()
    loss.backward()
