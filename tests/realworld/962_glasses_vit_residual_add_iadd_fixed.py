"""glasses ViT, fixed as the maintainer's commit for the issue does: ResidualAdd adds the branch out of place, `x = x + out`."""
# outcome: ok
# source: https://github.com/FrancescoSaverioZuppichini/glasses/issues/207
# repo: FrancescoSaverioZuppichini/glasses
# category: residual
# twin: 961_glasses_vit_residual_add_iadd.py
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, List

import torch
import torch.nn.functional as F
from einops import rearrange, repeat
from einops.layers.torch import Rearrange, Reduce
from torch import Tensor, nn


# ---- glasses/nn/blocks/__init__.py ----
class Lambda(nn.Module):
    def __init__(self, lambd: Callable[[Tensor], Tensor]):
        """An utility Module, it allows custom function to be passed"""
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return self.lambd(x)


# ---- glasses/models/base/__init__.py (the parts ViT uses; no torchsummary, no storage hooks) ----
class VisionModule(nn.Module):
    """Base vision module, all models should subclass it."""


class Encoder(nn.Module):
    """Base encoder class, it allows to access the inner features."""

    def __init__(self):
        super().__init__()
        self.storage = None

    @property
    def stages(self):
        return self.layers[:-1]

    @property
    def features_widths(self):
        return self.widths[:-1]


# ---- glasses/models/classification/vit/__init__.py ----
class ViTTokens(nn.Module):
    def __init__(self, emb_size: int):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, emb_size))

    def forward(self, x: Tensor) -> List[Tensor]:
        b = x.shape[0]
        tokens = []
        for token in self.parameters():
            # for each token repeat itself over the batch dimension
            tokens.append(repeat(token, '() n e -> b n e', b=b))
        return tokens

    def __len__(self):
        return len(list(self.parameters()))


class PatchEmbedding(nn.Module):
    def __init__(self, in_channels: int = 3, patch_size: int = 16, emb_size: int = 768, img_size: int = 224, tokens: nn.Module = ViTTokens):
        self.patch_size = patch_size
        super().__init__()
        self.projection = nn.Sequential(
            # using a conv layer instead of a linear one -> performance gains
            nn.Conv2d(in_channels, emb_size,
                      kernel_size=patch_size, stride=patch_size),
            Rearrange('b e (h) (w) -> b (h w) e'),
        )
        self.tokens = tokens(emb_size)
        self.positions = nn.Parameter(torch.randn(
            (img_size // patch_size) ** 2 + len(self.tokens), emb_size))

    def forward(self, x: Tensor) -> Tensor:
        x = self.projection(x)
        # get the tokens
        tokens = self.tokens(x)
        # prepend the tokens to the input
        x = torch.cat([*tokens, x], dim=1)
        # add position embedding
        x += self.positions
        return x


class MultiHeadAttention(nn.Module):
    def __init__(self, emb_size: int = 768, num_heads: int = 12, att_drop_p: float = 0., projection_drop_p: float = 0., qkv_bias: bool = False):
        super().__init__()
        self.emb_size = emb_size
        self.num_heads = num_heads
        # fuse the queries, keys and values in one matrix
        self.qkv = nn.Linear(emb_size, emb_size * 3, bias=qkv_bias)
        self.att_drop = nn.Dropout(att_drop_p)
        self.projection = nn.Sequential(
            nn.Linear(emb_size, emb_size),
            nn.Dropout(projection_drop_p)
        )

        self.scaling = (self.emb_size // num_heads) ** -0.5

    def forward(self, x: Tensor, mask: Tensor = None) -> Tensor:
        # split keys, queries and values in num_heads
        qkv = rearrange(
            self.qkv(x), "b n (qkv h d) -> (qkv) b h n d", h=self.num_heads, qkv=3)

        queries, keys, values = qkv[0], qkv[1], qkv[2]
        # sum up over the last axis
        energy = torch.einsum('bhqd, bhkd -> bhqk',
                              queries, keys) * self.scaling
        if mask is not None:
            fill_value = torch.finfo(torch.float32).min
            energy.mask_fill(~mask, fill_value)

        att = F.softmax(energy, dim=-1)
        att = self.att_drop(att)
        # sum up over the third axis
        out = torch.einsum('bhal, bhlv -> bhav ', att, values)
        out = rearrange(out, "b h n d -> b n (h d)")
        out = self.projection(out)
        return out

# TODO move it to blocks


class ResidualAdd(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, **kwargs):
        out = self.fn(x, **kwargs)
        x = x + out
        return x


class FeedForwardBlock(nn.Sequential):
    def __init__(self, emb_size: int, expansion: int = 4, drop_p: float = 0., activation: nn.Module = nn.GELU):
        super().__init__(
            nn.Linear(emb_size, expansion * emb_size),
            activation(),
            nn.Dropout(drop_p),
            nn.Linear(expansion * emb_size, emb_size),
            nn.Dropout(drop_p)
        )


class TransformerEncoderBlock(nn.Sequential):
    def __init__(self,
                 emb_size: int = 768,
                 forward_expansion: int = 4,
                 forward_drop_p: float = 0.,
                 activation: nn.Module = nn.GELU,
                 ** kwargs):
        super().__init__(
            ResidualAdd(nn.Sequential(
                nn.LayerNorm(emb_size),
                MultiHeadAttention(emb_size, **kwargs)
            )),
            ResidualAdd(
                nn.Sequential(
                    nn.LayerNorm(emb_size),
                    FeedForwardBlock(
                        emb_size, expansion=forward_expansion, drop_p=forward_drop_p, activation=activation)),
            )
        )


class TransformerEncoder(Encoder):
    def __init__(self, depth: int = 12, emb_size: int = 786, block: nn.Module = TransformerEncoderBlock,  **kwargs):
        super().__init__()
        self.widths = [emb_size] * depth
        self.layers = nn.ModuleList([block(emb_size, **kwargs)
                                     for _ in range(depth)])
        self.norm = nn.LayerNorm(emb_size)
    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        return x


class ViTClassificationHead(nn.Sequential):
    POLICIES = ['token', 'mean']

    def __init__(self, emb_size: int = 768, n_classes: int = 1000, policy: str = 'token'):
        assert policy in self.POLICIES, f"Only policies {','.join(self.POLICIES)} are supported"

        super().__init__(OrderedDict({
            'pool': Reduce('b n e -> b e', reduction='mean') if policy == 'mean' else Lambda(lambda x: x[:, 0]),
            'fc': nn.Linear(emb_size, n_classes)
        }))


class ViT(nn.Sequential, VisionModule):
    def __init__(self,
                 in_channels: int = 3,
                 patch_size: int = 16,
                 emb_size: int = 768,
                 img_size: int = 224,
                 tokens: nn.Module = ViTTokens,
                 depth: int = 12,
                 n_classes: int = 1000,
                 **kwargs):
        super().__init__(OrderedDict({
            'embedding': PatchEmbedding(in_channels, patch_size, emb_size, img_size, tokens),
            'encoder': TransformerEncoder(depth, emb_size, **kwargs),
            'head': ViTClassificationHead(emb_size, n_classes)
        }))

    @classmethod
    def vit_small_patch16_224(cls, **kwargs):
        return cls(depth=8, num_heads=8, forward_expansion=3, **kwargs)


if __name__ == '__main__':
    # a tiny ViT (the vit_small_patch16_224 recipe shrunk) trained for two steps on random images
    model = ViT(in_channels=3, patch_size=4, emb_size=16, img_size=16, depth=2, n_classes=10,
                num_heads=2, forward_expansion=2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    model.train()
    for step in range(2):
        x = torch.randn(4, 3, 16, 16)
        y = torch.randint(0, 10, (4,))
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
