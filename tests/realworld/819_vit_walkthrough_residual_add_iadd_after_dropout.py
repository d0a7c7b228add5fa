"""The ViT walkthrough in FrancescoSaverioZuppichini/ViT trained for a step: PatchEmbedding adds the position embedding in place after torch.cat (`x += self.positions`), and ResidualAdd adds the residual in place onto the block output (`x = self.fn(x, **kwargs); x += res`), where fn ends in a Dropout whose output nothing saved. Safe."""
# outcome: ok
# source: https://github.com/FrancescoSaverioZuppichini/ViT/blob/5c448827c34c3092848336cf6ae2df4fee7612dc/README.md
# repo: FrancescoSaverioZuppichini/ViT
# category: residual
import torch
import torch.nn.functional as F
from torch import nn
from torch import Tensor


# ---- stand-in for einops.rearrange / einops.repeat (einops is not installed here) ----
def _parse(side):
    groups, cur, depth = [], None, False
    for tok in side.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
            cur, depth = [], True
        elif tok == ")":
            groups.append(cur)
            cur, depth = None, False
        elif depth:
            cur.append(tok)
        else:
            groups.append([tok])
    return groups


def _sizes(left, shape, axes_lengths):
    sizes = dict(axes_lengths)
    for group, dim in zip(left, shape):
        known, unknown = 1, None
        for name in group:
            if name == "1":
                continue
            if name in sizes:
                known *= sizes[name]
            else:
                unknown = name
        if unknown is not None:
            sizes[unknown] = dim // known
    return sizes


def _group_shape(right, sizes):
    shape = []
    for group in right:
        n = 1
        for name in group:
            n *= 1 if name == "1" else sizes[name]
        shape.append(n)
    return shape


def rearrange(tensor, pattern, **axes_lengths):
    left, right = [_parse(s) for s in pattern.split("->")]
    sizes = _sizes(left, tensor.shape, axes_lengths)
    elementary = [name for group in left for name in group if name != "1"]
    x = tensor.reshape([sizes[name] for name in elementary])
    order = [name for group in right for name in group if name != "1"]
    x = x.permute([elementary.index(name) for name in order])
    return x.reshape(_group_shape(right, sizes))


def repeat(tensor, pattern, **axes_lengths):
    left, right = [_parse(s) for s in pattern.split("->")]
    sizes = _sizes(left, tensor.shape, axes_lengths)
    elementary = [name for group in left for name in group if name != "1"]
    x = tensor.reshape([sizes[name] for name in elementary])
    order = [name for group in right for name in group if name != "1"]
    x = x.permute([elementary.index(name) for name in order if name in elementary])
    for i, name in enumerate(order):
        if name not in elementary:
            x = x.unsqueeze(i)
    x = x.expand([sizes[name] for name in order])
    return x.reshape(_group_shape(right, sizes))


class Rearrange(nn.Module):
    def __init__(self, pattern, **axes_lengths):
        super().__init__()
        self.pattern = pattern
        self.axes_lengths = axes_lengths

    def forward(self, x):
        return rearrange(x, self.pattern, **self.axes_lengths)


class Reduce(nn.Module):
    def __init__(self, pattern, reduction):
        super().__init__()
        left, right = [_parse(s) for s in pattern.split("->")]
        kept = [g[0] for g in right]
        self.dims = [i for i, g in enumerate(left) if g[0] not in kept]
        self.reduction = reduction

    def forward(self, x):
        return getattr(x, self.reduction)(dim=self.dims)


# ---- README.md: the final version of each block ----
class PatchEmbedding(nn.Module):
    def __init__(self, in_channels: int = 3, patch_size: int = 16, emb_size: int = 768, img_size: int = 224):
        self.patch_size = patch_size
        super().__init__()
        self.projection = nn.Sequential(
            # using a conv layer instead of a linear one -> performance gains
            nn.Conv2d(in_channels, emb_size, kernel_size=patch_size, stride=patch_size),
            Rearrange('b e (h) (w) -> b (h w) e'),
        )
        self.cls_token = nn.Parameter(torch.randn(1,1, emb_size))
        self.positions = nn.Parameter(torch.randn((img_size // patch_size) **2 + 1, emb_size))

        
    def forward(self, x: Tensor) -> Tensor:
        b, _, _, _ = x.shape
        x = self.projection(x)
        cls_tokens = repeat(self.cls_token, '() n e -> b n e', b=b)
        # prepend the cls token to the input
        x = torch.cat([cls_tokens, x], dim=1)
        # add position embedding
        x += self.positions
        return x


class MultiHeadAttention(nn.Module):
    def __init__(self, emb_size: int = 768, num_heads: int = 8, dropout: float = 0):
        super().__init__()
        self.emb_size = emb_size
        self.num_heads = num_heads
        # fuse the queries, keys and values in one matrix
        self.qkv = nn.Linear(emb_size, emb_size * 3)
        self.att_drop = nn.Dropout(dropout)
        self.projection = nn.Linear(emb_size, emb_size)
        
    def forward(self, x : Tensor, mask: Tensor = None) -> Tensor:
        # split keys, queries and values in num_heads
        qkv = rearrange(self.qkv(x), "b n (h d qkv) -> (qkv) b h n d", h=self.num_heads, qkv=3)
        queries, keys, values = qkv[0], qkv[1], qkv[2]
        # sum up over the last axis
        energy = torch.einsum('bhqd, bhkd -> bhqk', queries, keys) # batch, num_heads, query_len, key_len
        if mask is not None:
            fill_value = torch.finfo(torch.float32).min
            energy.mask_fill(~mask, fill_value)
            
        scaling = self.emb_size ** (1/2)
        att = F.softmax(energy, dim=-1) / scaling
        att = self.att_drop(att)
        # sum up over the third axis
        out = torch.einsum('bhal, bhlv -> bhav ', att, values)
        out = rearrange(out, "b h n d -> b n (h d)")
        out = self.projection(out)
        return out


class ResidualAdd(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        
    def forward(self, x, **kwargs):
        res = x
        x = self.fn(x, **kwargs)
        x += res
        return x


class FeedForwardBlock(nn.Sequential):
    def __init__(self, emb_size: int, expansion: int = 4, drop_p: float = 0.):
        super().__init__(
            nn.Linear(emb_size, expansion * emb_size),
            nn.GELU(),
            nn.Dropout(drop_p),
            nn.Linear(expansion * emb_size, emb_size),
        )


class TransformerEncoderBlock(nn.Sequential):
    def __init__(self,
                 emb_size: int = 768,
                 drop_p: float = 0.,
                 forward_expansion: int = 4,
                 forward_drop_p: float = 0.,
                 ** kwargs):
        super().__init__(
            ResidualAdd(nn.Sequential(
                nn.LayerNorm(emb_size),
                MultiHeadAttention(emb_size, **kwargs),
                nn.Dropout(drop_p)
            )),
            ResidualAdd(nn.Sequential(
                nn.LayerNorm(emb_size),
                FeedForwardBlock(
                    emb_size, expansion=forward_expansion, drop_p=forward_drop_p),
                nn.Dropout(drop_p)
            )
            ))


class TransformerEncoder(nn.Sequential):
    def __init__(self, depth: int = 12, **kwargs):
        super().__init__(*[TransformerEncoderBlock(**kwargs) for _ in range(depth)])


class ClassificationHead(nn.Sequential):
    def __init__(self, emb_size: int = 768, n_classes: int = 1000):
        super().__init__(
            Reduce('b n e -> b e', reduction='mean'),
            nn.LayerNorm(emb_size), 
            nn.Linear(emb_size, n_classes))


class ViT(nn.Sequential):
    def __init__(self,     
                in_channels: int = 3,
                patch_size: int = 16,
                emb_size: int = 768,
                img_size: int = 224,
                depth: int = 12,
                n_classes: int = 1000,
                **kwargs):
        super().__init__(
            PatchEmbedding(in_channels, patch_size, emb_size, img_size),
            TransformerEncoder(depth, emb_size=emb_size, **kwargs),
            ClassificationHead(emb_size, n_classes)
        )


if __name__ == '__main__':
    # a training step on random 32x32 images (the walkthrough only runs a forward on cat.jpg); sizes shrunk
    torch.manual_seed(0)
    model = ViT(patch_size=8, emb_size=32, img_size=32, depth=2, n_classes=10, drop_p=0.1, forward_drop_p=0.1, num_heads=4)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    x = torch.rand(2, 3, 32, 32)
    out = model(x)
    loss = F.cross_entropy(out, torch.randint(0, 10, (2,)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(out.shape, loss.item())
