"""SimCLR NT-Xent loss masking self-similarity on the logits in place: matmul and division by a scalar do not save their output."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class ProjectionHead(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_in), nn.ReLU(inplace=True), nn.Linear(d_in, d_out))

    def forward(self, h):
        return F.normalize(self.net(h), dim=1)


def nt_xent(z1, z2, temperature=0.5):
    n = z1.shape[0]
    z = torch.cat([z1, z2], dim=0)
    logits = z @ z.t() / temperature
    logits.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(logits, targets)


def run() -> None:
    torch.manual_seed(0)
    encoder = nn.Linear(10, 8)
    head = ProjectionHead(8, 4)
    x = torch.randn(4, 10)
    view1 = x + 0.1 * torch.randn_like(x)
    view2 = x + 0.1 * torch.randn_like(x)
    loss = nt_xent(head(encoder(view1)), head(encoder(view2)))
    loss.backward()
