"""improved-diffusion gradient checkpointing: CheckpointFunction runs a ResBlock under no_grad in forward, then in backward re-runs it on detach().requires_grad_() copies and calls autograd.grad on the recomputed graph."""
# outcome: ok
# source: https://github.com/openai/improved-diffusion/blob/main/improved_diffusion/nn.py
# repo: openai/improved-diffusion
# category: retention
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


def checkpoint(func, inputs, params, flag):
    """
    Evaluate a function without caching intermediate activations, allowing for
    reduced memory at the expense of extra compute in the backward pass.
    """
    if flag:
        args = tuple(inputs) + tuple(params)
        return CheckpointFunction.apply(func, len(inputs), *args)
    else:
        return func(*inputs)


class CheckpointFunction(th.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with th.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with th.enable_grad():
            # Fixes a bug where the first op in run_function modifies the
            # Tensor storage in place, which is not allowed for detach()'d
            # Tensors.
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
            output_tensors = ctx.run_function(*shallow_copies)
        input_grads = th.autograd.grad(
            output_tensors,
            ctx.input_tensors + ctx.input_params,
            output_grads,
            allow_unused=True,
        )
        del ctx.input_tensors
        del ctx.input_params
        del output_tensors
        return (None, None) + input_grads


# ---- improved_diffusion/unet.py (ResBlock, the part used here) ----
class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels, dropout, out_channels=None, dims=2, use_checkpoint=False):
        super().__init__()
        self.use_checkpoint = use_checkpoint
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
        return checkpoint(
            self._forward, (x, emb), self.parameters(), self.use_checkpoint
        )

    def _forward(self, x, emb):
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
        self.blocks = nn.ModuleList([ResBlock(ch, emb, 0.1, use_checkpoint=True), ResBlock(ch, emb, 0.1, use_checkpoint=True)])
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
    loop = TrainLoop(TinyUNet(), lr=1e-4, ema_rate="0.9999")
    for step in range(3):
        print(step, loop.run_step(th.randn(2, 3, 8, 8)).item())
