"""Twin of 062_simclr_exp_sim_diag_zero.py, written out of place by hand: Contrastive loss written with explicit exp similarities whose diagonal is zeroed in place; exp saved its output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def contrastive_loss(z1, z2, tau=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = torch.exp(z @ z.t() / tau)
    sim = sim.masked_fill(torch.eye(sim.shape[0], dtype=torch.bool), 0.0)
    pos = torch.cat([sim.diagonal(n), sim.diagonal(-n)])
    return -torch.log(pos / sim.sum(dim=1)).mean()


def run() -> None:
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 4))
    x = torch.randn(3, 10)
    loss = contrastive_loss(encoder(x + 0.1), encoder(x - 0.1))
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 4))
    x = torch.randn(3, 10)
    loss = contrastive_loss(encoder(x + 0.1), encoder(x - 0.1))
    loss.backward()
    return {name: p.grad for name, p in encoder.named_parameters()}
