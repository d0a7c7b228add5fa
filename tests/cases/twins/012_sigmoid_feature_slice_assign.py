"""Twin of 012_sigmoid_feature_slice_assign.py, written out of place by hand: Writes positional features into the first columns of a sigmoid-squashed feature map (slice assignment)."""
import torch
from torch import nn


class FeatureMixer(nn.Module):
    def __init__(self, d_in: int, d_feat: int, d_pos: int) -> None:
        super().__init__()
        self.d_pos = d_pos
        self.proj = nn.Linear(d_in, d_feat)
        self.pos = nn.Parameter(torch.randn(1, d_pos) * 0.02)
        self.head = nn.Linear(d_feat, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feat = torch.sigmoid(self.proj(x))
        feat = torch.cat([self.pos.expand(x.shape[0], -1), feat[:, self.d_pos :]], dim=1)
        return self.head(feat)


def run() -> None:
    torch.manual_seed(0)
    model = FeatureMixer(5, 8, 3)
    loss = model(torch.randn(4, 5)).abs().mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = FeatureMixer(5, 8, 3)
    loss = model(torch.randn(4, 5)).abs().mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
