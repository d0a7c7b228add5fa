"""DALLE-pytorch's Transformer (full attention) trained for a step, at the commit that fixed issue #62: Attention masks its scores in place before the softmax, `dots.masked_fill_(~mask, mask_value)` and `dots.masked_fill_(mask, mask_value)` on the causal mask, where `dots` is `einsum(...) * self.scale` (a product by a number saves nothing); the softmax output is left alone and the residuals are out of place. Safe."""
# outcome: ok
# source: https://github.com/lucidrains/DALLE-pytorch/blob/02f055486438290733d20d200b54cd9282d2c41b/dalle_pytorch/attention.py
# repo: lucidrains/DALLE-pytorch
# category: residual
from functools import partial
from inspect import isfunction
from itertools import islice, cycle
from math import ceil

import torch
from torch import nn, einsum
import torch.nn.functional as F


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


# ---- dalle_pytorch/reversible.py (the routing and SequentialSequence; ReversibleSequence left out) ----
# for routing arguments into the functions of the reversible layer
def route_args(router, args, depth):
    routed_args = [(dict(), dict()) for _ in range(depth)]
    matched_keys = [key for key in args.keys() if key in router]

    for key in matched_keys:
        val = args[key]
        for depth, ((f_args, g_args), routes) in enumerate(zip(routed_args, router[key])):
            new_f_args, new_g_args = map(lambda route: ({key: val} if route else {}), routes)
            routed_args[depth] = ({**f_args, **new_f_args}, {**g_args, **new_g_args})
    return routed_args

class SequentialSequence(nn.Module):
    def __init__(self, layers, args_route = {}, layer_dropout = 0.):
        super().__init__()
        assert all(len(route) == len(layers) for route in args_route.values()), 'each argument route map must have the same depth as the number of sequential layers'
        self.layers = layers
        self.args_route = args_route
        self.layer_dropout = layer_dropout

    def forward(self, x, **kwargs):
        args = route_args(self.args_route, kwargs, len(self.layers))
        layers_and_args = list(zip(self.layers, args))

        for (f, g), (f_args, g_args) in layers_and_args:
            x = x + f(x, **f_args)
            x = x + g(x, **g_args)
        return x


# ---- dalle_pytorch/attention.py (full Attention; the sparse variants left out) ----
# helpers

def exists(val):
    return val is not None

def uniq(arr):
    return{el: True for el in arr}.keys()

def default(val, d):
    if exists(val):
        return val
    return d() if isfunction(d) else d

def max_neg_value(t):
    return -torch.finfo(t.dtype).max

class Attention(nn.Module):
    def __init__(self, dim, seq_len, causal = True, heads = 8, dim_head = 64, dropout = 0.):
        super().__init__()
        inner_dim = dim_head *  heads
        self.heads = heads
        self.seq_len = seq_len
        self.scale = dim_head ** -0.5

        self.causal = causal

        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias = False)
        self.to_out = nn.Sequential(
            nn.Linear(inner_dim, dim),
            nn.Dropout(dropout)
        )

    def forward(self, x, mask = None):
        b, n, _, h, device = *x.shape, self.heads, x.device
        qkv = self.to_qkv(x).chunk(3, dim = -1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = h), qkv)

        dots = torch.einsum('b h i d, b h j d -> b h i j', q, k) * self.scale
        mask_value = max_neg_value(dots)

        if exists(mask):
            mask = rearrange(mask, 'b j -> b () () j')
            dots.masked_fill_(~mask, mask_value)
            del mask

        if self.causal:
            i, j = dots.shape[-2:]
            mask = torch.ones(i, j, device = device).triu_(j - i + 1).bool()
            dots.masked_fill_(mask, mask_value)

        attn = dots.softmax(dim=-1)

        out = torch.einsum('b h i j, b h j d -> b h i d', attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        out =  self.to_out(out)
        return out


# ---- dalle_pytorch/transformer.py ----

def exists(val):
    return val is not None

def default(val, d):
    return val if exists(val) else d

def cast_tuple(val, depth = 1):
    if isinstance(val, list):
        val = tuple(val)
    return val if isinstance(val, tuple) else (val,) * depth

# classes

class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)

class GEGLU(nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim = -1)
        return x * F.gelu(gates)

class FeedForward(nn.Module):
    def __init__(self, dim, dropout = 0., mult = 4.):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, dim * mult * 2),
            GEGLU(),
            nn.Dropout(dropout),
            nn.Linear(dim * mult, dim)
        )

    def forward(self, x):
        return self.net(x)

class Transformer(nn.Module):
    def __init__(
        self,
        *,
        dim,
        depth,
        seq_len,
        reversible = False,
        causal = True,
        heads = 8,
        dim_head = 64,
        ff_mult = 4,
        attn_dropout = 0.,
        ff_dropout = 0.,
        attn_types = None,
        image_fmap_size = None,
        sparse_attn = False
    ):
        super().__init__()
        layers = nn.ModuleList([])
        sparse_layer = cast_tuple(sparse_attn, depth)

        attn_types = default(attn_types, ('full',))
        attn_types = cast_tuple(attn_types)
        attn_type_layer = islice(cycle(attn_types), depth)

        for _, sparse_attn, attn_type in zip(range(depth), sparse_layer, attn_type_layer):
            if attn_type == 'full':
                attn_class = Attention
            elif attn_type == 'sparse':
                attn_class = SparseAttention
            elif attn_type == 'axial_row':
                attn_class = partial(SparseAxialCausalAttention, seq_len = seq_len, axis = 0, image_size = image_fmap_size)
            elif attn_type == 'axial_col':
                attn_class = partial(SparseAxialCausalAttention, seq_len = seq_len, axis = 1, image_size = image_fmap_size)
            elif attn_type == 'conv_like':
                attn_class = partial(SparseConvCausalAttention, seq_len = seq_len, image_size = image_fmap_size)
            else:
                raise ValueError(f'attention type "{attn_type}" is not valid')

            layers.append(nn.ModuleList([
                PreNorm(dim, attn_class(dim, causal = causal, seq_len = seq_len, heads = heads, dim_head = dim_head, dropout = attn_dropout)),
                PreNorm(dim, FeedForward(dim, mult = ff_mult, dropout = ff_dropout))
            ]))

        execute_type = ReversibleSequence if reversible else SequentialSequence
        route_attn = ((True, False),) * depth
        attn_route_map = {'mask': route_attn}

        self.layers = execute_type(layers, args_route = attn_route_map)

    def forward(self, x, **kwargs):
        return self.layers(x, **kwargs)


if __name__ == '__main__':
    torch.manual_seed(0)
    transformer = Transformer(dim = 32, depth = 2, seq_len = 16, causal = True, heads = 4, dim_head = 8, attn_dropout = 0.1, ff_dropout = 0.1)
    optimizer = torch.optim.Adam(transformer.parameters(), lr = 3e-4)
    for step in range(2):
        x = torch.randn(2, 16, 32)
        mask = torch.ones(2, 16).bool()
        mask[1, 12:] = False
        out = transformer(x, mask = mask)
        loss = out.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
