"""Twin of 147_prenorm_pairs_in_modulelist_token_iadd.py, written out of place by hand: Two ViT decoders read the same latent; each adds its position embedding to its input in place before pre-norm blocks kept as (attention, feed-forward) pairs in a ModuleList."""
import torch
import torch.nn as nn


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class Transformer(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(
                nn.ModuleList([PreNorm(dim, nn.Linear(dim, dim)), PreNorm(dim, nn.Linear(dim, dim))])
            )

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x


class Decoder(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.transformer = Transformer(dim, depth)
        self.pos = nn.Parameter(torch.zeros(1, 4, dim), requires_grad=False)

    def forward(self, token):
        token = token + self.pos
        return self.transformer(token)


def run() -> None:
    torch.manual_seed(0)
    encoder = nn.Linear(8, 8)
    decoder_a, decoder_b = Decoder(8, 1), Decoder(8, 2)
    quant = encoder(torch.randn(2, 4, 8))
    rec = decoder_a(quant) + decoder_b(quant)
    rec.sum().backward()
