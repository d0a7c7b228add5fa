"""Input embeddings made leaves by the caller (`requires_grad_()` for input gradients) get the position table added in place only when the dataclass config asks for it; this config does not, so nothing writes into them."""
# outcome: ok
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class EmbedConfig:
    dim: int = 4
    max_len: int = 8
    type_vocab: int = 0
    position_biased: bool = False


def add_positions(embeds, positions, cfg):
    out = embeds
    if getattr(cfg, "position_biased", True):
        out += positions
    if cfg.type_vocab > 0:
        out += positions * 0.5
    return out


class Embeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.pos = nn.Embedding(cfg.max_len, cfg.dim)
        self.norm = nn.LayerNorm(cfg.dim)

    def forward(self, embeds):
        positions = self.pos(torch.arange(embeds.shape[1]))
        return self.norm(add_positions(embeds, positions, self.cfg))


def run() -> None:
    torch.manual_seed(0)
    model = Embeddings(EmbedConfig(4, max_len=8))
    embeds = torch.randn(2, 5, 4).requires_grad_()
    model(embeds).sum().backward()
