"""CDC (conditional diffusion compression) epsilon-param Unet: ResnetBlock does `h = self.block1(x)`, whose Block ends in nn.ReLU, then `h += self.mlp(time_emb)[:, :, None, None]` adds the time embedding into that ReLU output in place, the tensor ReluBackward saved."""
# outcome: inplace-error
# source: https://github.com/buggyyang/CDC_compression/issues/1
# repo: buggyyang/CDC_compression
# category: residual
# twin: 966_cdc_compression_resnet_block_time_emb_iadd_fixed.py
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange
from inspect import isfunction


# ---- epsilonparam/modules/utils.py ----
def exists(x):
    return x is not None


def default(val, d):
    if exists(val):
        return val
    return d() if isfunction(d) else d


# ---- epsilonparam/modules/network_components.py ----
class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, *args, **kwargs):
        return self.fn(x, *args, **kwargs) + x



class Upsample(nn.Module):
    def __init__(self, dim_in, dim_out=None):
        super().__init__()
        if dim_out is None:
            dim_out = dim_in
        self.conv = nn.ConvTranspose2d(dim_in, dim_out, 4, 2, 1)

    def forward(self, x):
        return self.conv(x)


class Downsample(nn.Module):
    def __init__(self, dim_in, dim_out=None):
        super().__init__()
        if dim_out is None:
            dim_out = dim_in
        self.conv = nn.Conv2d(dim_in, dim_out, 3, 2, 1)

    def forward(self, x):
        return self.conv(x)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(1, dim, 1, 1))
        self.b = nn.Parameter(torch.zeros(1, dim, 1, 1))

    def forward(self, x):
        var = torch.var(x, dim=1, unbiased=False, keepdim=True)
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) / (var + self.eps).sqrt() * self.g + self.b


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = LayerNorm(dim)

    def forward(self, x):
        x = self.norm(x)
        return self.fn(x)


# building block modules


class Block(nn.Module):
    def __init__(self, dim, dim_out, large=False):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim_out, 7 if large else 3, padding=3 if large else 1), LayerNorm(dim_out), nn.ReLU()
        )

    def forward(self, x):
        return self.block(x)  # saved-by


class ResnetBlock(nn.Module):
    def __init__(self, dim, dim_out, time_emb_dim=None, large=False):
        super().__init__()
        self.mlp = (
            nn.Sequential(nn.LeakyReLU(0.2), nn.Linear(time_emb_dim, dim_out))
            if exists(time_emb_dim)
            else None
        )

        self.block1 = Block(dim, dim_out, large)
        self.block2 = Block(dim_out, dim_out)
        self.res_conv = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

    def forward(self, x, time_emb=None):
        h = self.block1(x)

        if exists(time_emb):
            h += self.mlp(time_emb)[:, :, None, None]  # error: IPL001

        h = self.block2(h)
        return h + self.res_conv(x)


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=1, dim_head=None):
        super().__init__()
        if dim_head is None:
            dim_head = dim
        self.scale = dim_head ** -0.5
        self.heads = heads
        hidden_dim = dim_head * heads
        self.to_qkv = nn.Conv2d(dim, hidden_dim * 3, 1, bias=False)
        self.to_out = nn.Conv2d(hidden_dim, dim, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        qkv = self.to_qkv(x).chunk(3, dim=1)
        q, k, v = map(lambda t: rearrange(t, "b (h c) x y -> b h c (x y)", h=self.heads), qkv)
        q = q * self.scale

        k = k.softmax(dim=-1)
        context = torch.einsum("b h d n, b h e n -> b h d e", k, v)

        out = torch.einsum("b h d e, b h d n -> b h e n", context, q)
        out = rearrange(out, "b h c (x y) -> b (h c) x y", h=self.heads, x=h, y=w)
        return self.to_out(out)


# ---- epsilonparam/modules/unet.py ----
class Unet(nn.Module):
    def __init__(
        self,
        dim,
        out_dim=None,
        dim_mults=(1, 2, 4, 8),
        context_dim_mults=(1, 2, 3, 3),
        channels=3,
        context_channels=3,
        with_time_emb=True,
    ):
        super().__init__()
        self.channels = channels

        dims = [channels, *map(lambda m: dim * m, dim_mults)]
        context_dims = [context_channels, *map(lambda m: dim * m, context_dim_mults)]
        in_out = list(zip(dims[:-1], dims[1:]))

        if with_time_emb:
            time_dim = dim
            # self.time_mlp = nn.Sequential(
            #     SinusoidalPosEmb(dim), nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim)
            # )
            self.time_mlp = nn.Sequential(nn.Linear(1, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))
        else:
            time_dim = None
            self.time_mlp = None

        self.downs = nn.ModuleList([])
        self.ups = nn.ModuleList([])
        num_resolutions = len(in_out)

        for ind, (dim_in, dim_out) in enumerate(in_out):
            is_last = ind >= (num_resolutions - 1)

            self.downs.append(
                nn.ModuleList(
                    [
                        ResnetBlock(
                                dim_in + context_dims[ind]
                                if (not is_last) and (ind < (len(context_dims) - 1))
                                else dim_in,
                                dim_out,
                                time_dim,
                                True if ind == 0 else False
                            ),
                        ResnetBlock(dim_out, dim_out, time_dim),
                        Residual(PreNorm(dim_out, LinearAttention(dim_out))),
                        # nn.Identity(),
                        Downsample(dim_out) if not is_last else nn.Identity(),
                    ]
                )
            )

        mid_dim = dims[-1]
        self.mid_block1 = ResnetBlock(mid_dim, mid_dim, time_dim)
        self.mid_attn = Residual(PreNorm(mid_dim, LinearAttention(mid_dim)))
        # self.mid_attn = nn.Identity()
        self.mid_block2 = ResnetBlock(mid_dim, mid_dim, time_dim)

        for ind, (dim_in, dim_out) in enumerate(reversed(in_out[1:])):
            is_last = ind >= (num_resolutions - 1)

            self.ups.append(
                nn.ModuleList(
                    [
                        ResnetBlock(dim_out * 2, dim_in, time_dim),
                        ResnetBlock(dim_in, dim_in, time_dim),
                        Residual(PreNorm(dim_in, LinearAttention(dim_in))),
                        # nn.Identity(),
                        Upsample(dim_in) if not is_last else nn.Identity(),
                    ]
                )
            )

        out_dim = default(out_dim, channels)
        self.final_conv = nn.Sequential(LayerNorm(dim), nn.Conv2d(dim, out_dim, 7, padding=3))

    def encode(self, x, t, context):
        h = []
        for idx, (backbone, backbone2, attn, downsample) in enumerate(self.downs):
            x = torch.cat([x, context[idx]], dim=1) if idx < len(context) else x
            x = backbone(x, t)
            x = backbone2(x, t)
            x = attn(x)
            h.append(x)
            x = downsample(x)

        x = self.mid_block1(x, t)
        return x, h

    def decode(self, x, h, t):
        x = self.mid_attn(x)
        x = self.mid_block2(x, t)

        for backbone, backbone2, attn, upsample in self.ups:
            x = torch.cat((x, h.pop()), dim=1)
            x = backbone(x, t)
            x = backbone2(x, t)
            x = attn(x)
            x = upsample(x)
        return self.final_conv(x)

    def forward(self, x, time=None, context=None):
        t = self.time_mlp(time) if exists(self.time_mlp) else None

        x, h = self.encode(x, t, context)
        return self.decode(x, h, t)


if __name__ == "__main__":
    # a few denoising steps on random images and a random context (sizes shrunk; the
    # compressor that produces the context is left out)
    denoise_fn = Unet(dim=8, channels=3, context_channels=3, dim_mults=(1, 2), context_dim_mults=(1, 2))
    optimizer = torch.optim.Adam(denoise_fn.parameters(), lr=1e-4)
    num_timesteps = 20
    betas = torch.linspace(1e-4, 2e-2, num_timesteps)
    alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
    for step in range(2):
        x_start = torch.randn(2, 3, 16, 16)
        context = [torch.randn(2, 3, 16, 16)]
        t = torch.randint(0, num_timesteps, (2,))
        noise = torch.randn_like(x_start)
        a = alphas_cumprod[t][:, None, None, None]
        x_noisy = a.sqrt() * x_start + (1 - a).sqrt() * noise
        fx = denoise_fn(x_noisy, t.float().unsqueeze(-1) / num_timesteps, context=context)
        loss = F.mse_loss(fx, noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
