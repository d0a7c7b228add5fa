"""Tiny GPT: token + position embeddings, a ModuleList of local Blocks, weight-tied head."""

# outcome: ok
# verify-inputs: int64(2, 8)
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):  # verify-target
    def __init__(self, vocab: int = 128, dim: int = 32, heads: int = 4, depth: int = 2) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(64, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        batch, steps = idx.shape
        positions = torch.arange(steps, device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        mask = torch.triu(torch.ones(steps, steps, dtype=torch.bool, device=idx.device), 1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))
