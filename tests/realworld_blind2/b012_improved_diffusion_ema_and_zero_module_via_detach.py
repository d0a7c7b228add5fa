"""improved-diffusion: zero_module zeroes a block's output convolution through p.detach().zero_(), and the trainer keeps deep-copied EMA parameter lists updated with targ.detach().mul_(rate).add_(src)."""
# outcome: ok
# source: https://github.com/openai/improved-diffusion/blob/main/improved_diffusion/nn.py
# repo: openai/improved-diffusion
# category: leaf
import copy
import math

import torch as th
import torch.nn as nn


# ---- improved_diffusion/nn.py ----
class SiLU(nn.Module):
    def forward(self, x):
        return x * th.sigmoid(x)


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


def conv_nd(dims, *args, **kwargs):
    if dims == 1:
        return nn.Conv1d(*args, **kwargs)
    elif dims == 2:
        return nn.Conv2d(*args, **kwargs)
    elif dims == 3:
        return nn.Conv3d(*args, **kwargs)
    raise ValueError(f"unsupported dimensions: {dims}")


def linear(*args, **kwargs):
    return nn.Linear(*args, **kwargs)


def update_ema(target_params, source_params, rate=0.99):
    """
    Update target parameters to be closer to those of source parameters using
    an exponential moving average.
    """
    for targ, src in zip(target_params, source_params):
        targ.detach().mul_(rate).add_(src, alpha=1 - rate)


def zero_module(module):
    """
    Zero out the parameters of a module and return it.
    """
    for p in module.parameters():
        p.detach().zero_()
    return module


def mean_flat(tensor):
    return tensor.mean(dim=list(range(1, len(tensor.shape))))


def normalization(channels):
    return GroupNorm32(4, channels)


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = th.exp(
        -math.log(max_period) * th.arange(start=0, end=half, dtype=th.float32) / half
    ).to(device=timesteps.device)
    args = timesteps[:, None].float() * freqs[None]
    embedding = th.cat([th.cos(args), th.sin(args)], dim=-1)
    if dim % 2:
        embedding = th.cat([embedding, th.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


# ---- improved_diffusion/unet.py (ResBlock, the part used here) ----
class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels, dropout, out_channels=None, dims=2):
        super().__init__()
        self.channels = channels
        self.emb_channels = emb_channels
        self.out_channels = out_channels or channels

        self.in_layers = nn.Sequential(
            normalization(channels),
            SiLU(),
            conv_nd(dims, channels, self.out_channels, 3, padding=1),
        )
        self.emb_layers = nn.Sequential(
            SiLU(),
            linear(emb_channels, self.out_channels),
        )
        self.out_layers = nn.Sequential(
            normalization(self.out_channels),
            SiLU(),
            nn.Dropout(p=dropout),
            zero_module(
                conv_nd(dims, self.out_channels, self.out_channels, 3, padding=1)
            ),
        )
        self.skip_connection = nn.Identity()

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        h = h + emb_out
        h = self.out_layers(h)
        return self.skip_connection(x) + h


class TinyUNet(nn.Module):
    def __init__(self, ch=8, emb=16):
        super().__init__()
        self.ch = ch
        self.time_embed = nn.Sequential(linear(ch, emb), SiLU(), linear(emb, emb))
        self.inp = conv_nd(2, 3, ch, 3, padding=1)
        self.blocks = nn.ModuleList([ResBlock(ch, emb, 0.1), ResBlock(ch, emb, 0.1)])
        self.out = nn.Sequential(normalization(ch), SiLU(), zero_module(conv_nd(2, ch, 3, 3, padding=1)))

    def forward(self, x, timesteps):
        emb = self.time_embed(timestep_embedding(timesteps, self.ch))
        h = self.inp(x)
        for block in self.blocks:
            h = block(h, emb)
        return self.out(h)


# ---- improved_diffusion/train_util.py (the EMA bookkeeping) ----
class TrainLoop:
    def __init__(self, model, lr, ema_rate):
        self.model = model
        self.lr = lr
        self.ema_rate = (
            [ema_rate]
            if isinstance(ema_rate, float)
            else [float(x) for x in ema_rate.split(",")]
        )
        self.model_params = list(self.model.parameters())
        self.master_params = self.model_params
        self.opt = th.optim.AdamW(self.master_params, lr=self.lr, weight_decay=0.0)
        self.ema_params = [
            copy.deepcopy(self.master_params) for _ in range(len(self.ema_rate))
        ]

    def run_step(self, batch):
        self.opt.zero_grad()
        t = th.randint(0, 1000, (batch.shape[0],))
        noise = th.randn_like(batch)
        x_t = batch + noise
        loss = mean_flat((noise - self.model(x_t, t)) ** 2).mean()
        loss.backward()
        self.opt.step()
        self._update_ema()
        return loss

    def _update_ema(self):
        for rate, params in zip(self.ema_rate, self.ema_params):
            update_ema(params, self.master_params, rate=rate)


if __name__ == "__main__":
    loop = TrainLoop(TinyUNet(), lr=1e-4, ema_rate="0.9999,0.99")
    for step in range(3):
        print(step, loop.run_step(th.randn(2, 3, 8, 8)).item())
