"""Twin of 086_normalize_projection_then_scale.py, written out of place by hand: Metric-learning head: F.normalize reads the raw projection (saved for backward), which is then scaled in place for a second loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ArcHead(nn.Module):
    def __init__(self, d_in, d_emb, n_classes, scale=8.0):
        super().__init__()
        self.proj = nn.Linear(d_in, d_emb)
        self.centers = nn.Parameter(torch.randn(n_classes, d_emb))
        self.scale = scale

    def forward(self, x):
        emb = self.proj(x)
        unit = F.normalize(emb, dim=1)
        cos = unit @ F.normalize(self.centers, dim=1).t()
        return cos * self.scale, emb * self.scale


def run() -> None:
    torch.manual_seed(0)
    head = ArcHead(6, 4, 3)
    x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
    logits, emb = head(x)
    loss = F.cross_entropy(logits, y) + 1e-3 * emb.pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    head = ArcHead(6, 4, 3)
    x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
    logits, emb = head(x)
    loss = F.cross_entropy(logits, y) + 1e-3 * emb.pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in head.named_parameters()}
