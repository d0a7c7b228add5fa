"""OpenAI consistency_models: ResBlock zeroes its last conv at construction with `zero_module` (`p.detach().zero_()` on each parameter), runs through the gradient-checkpoint CheckpointFunction (`x.detach().requires_grad_(True)`, `view_as` shallow copies), and the train loop keeps deep-copied EMA parameter lists updated with `targ.detach().mul_(rate).add_(src, alpha=1 - rate)` after each step; a few denoising steps of a small ResBlock net on random images."""
# outcome: ok
# source: https://github.com/openai/consistency_models/blob/main/cm/nn.py
# repo: openai/consistency_models
# category: residual
import copy
import math
from abc import abstractmethod

import torch as th
import torch.nn as nn


# ---- cm/nn.py ----
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
    for targ, src in zip(target_params, source_params):
        targ.detach().mul_(rate).add_(src, alpha=1 - rate)


def zero_module(module):
    for p in module.parameters():
        p.detach().zero_()
    return module


def mean_flat(tensor):
    return tensor.mean(dim=list(range(1, len(tensor.shape))))


def normalization(channels):
    return GroupNorm32(32, channels)


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


# ---- cm/unet.py (TimestepBlock, TimestepEmbedSequential, ResBlock without up/down) ----
class TimestepBlock(nn.Module):
    @abstractmethod
    def forward(self, x, emb):
        """
        Apply the module to `x` given `emb` timestep embeddings.
        """


class TimestepEmbedSequential(nn.Sequential, TimestepBlock):
    def forward(self, x, emb):
        for layer in self:
            if isinstance(layer, TimestepBlock):
                x = layer(x, emb)
            else:
                x = layer(x)
        return x


class ResBlock(TimestepBlock):
    def __init__(
        self,
        channels,
        emb_channels,
        dropout,
        out_channels=None,
        use_conv=False,
        use_scale_shift_norm=False,
        dims=2,
        use_checkpoint=False,
    ):
        super().__init__()
        self.channels = channels
        self.emb_channels = emb_channels
        self.dropout = dropout
        self.out_channels = out_channels or channels
        self.use_conv = use_conv
        self.use_checkpoint = use_checkpoint
        self.use_scale_shift_norm = use_scale_shift_norm

        self.in_layers = nn.Sequential(
            normalization(channels),
            nn.SiLU(),
            conv_nd(dims, channels, self.out_channels, 3, padding=1),
        )

        self.emb_layers = nn.Sequential(
            nn.SiLU(),
            linear(
                emb_channels,
                2 * self.out_channels if use_scale_shift_norm else self.out_channels,
            ),
        )
        self.out_layers = nn.Sequential(
            normalization(self.out_channels),
            nn.SiLU(),
            nn.Dropout(p=dropout),
            zero_module(
                conv_nd(dims, self.out_channels, self.out_channels, 3, padding=1)
            ),
        )

        if self.out_channels == channels:
            self.skip_connection = nn.Identity()
        elif use_conv:
            self.skip_connection = conv_nd(
                dims, channels, self.out_channels, 3, padding=1
            )
        else:
            self.skip_connection = conv_nd(dims, channels, self.out_channels, 1)

    def forward(self, x, emb):
        return checkpoint(
            self._forward, (x, emb), self.parameters(), self.use_checkpoint
        )

    def _forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        if self.use_scale_shift_norm:
            out_norm, out_rest = self.out_layers[0], self.out_layers[1:]
            scale, shift = th.chunk(emb_out, 2, dim=1)
            h = out_norm(h) * (1 + scale) + shift
            h = out_rest(h)
        else:
            h = h + emb_out
            h = self.out_layers(h)
        return self.skip_connection(x) + h


# ---- a small UNetModel-shaped net: time embedding, input conv, two ResBlocks, zeroed output conv ----
class SmallUNet(nn.Module):
    def __init__(self, in_channels=3, model_channels=32, use_checkpoint=True, use_scale_shift_norm=True):
        super().__init__()
        self.model_channels = model_channels
        time_embed_dim = model_channels * 4
        self.time_embed = nn.Sequential(
            linear(model_channels, time_embed_dim),
            nn.SiLU(),
            linear(time_embed_dim, time_embed_dim),
        )
        self.blocks = TimestepEmbedSequential(
            conv_nd(2, in_channels, model_channels, 3, padding=1),
            ResBlock(model_channels, time_embed_dim, 0.1, use_checkpoint=use_checkpoint,
                     use_scale_shift_norm=use_scale_shift_norm),
            ResBlock(model_channels, time_embed_dim, 0.1, use_checkpoint=use_checkpoint,
                     use_scale_shift_norm=use_scale_shift_norm),
        )
        self.out = nn.Sequential(
            normalization(model_channels),
            nn.SiLU(),
            zero_module(conv_nd(2, model_channels, in_channels, 3, padding=1)),
        )

    def forward(self, x, timesteps):
        emb = self.time_embed(timestep_embedding(timesteps, self.model_channels))
        return self.out(self.blocks(x, emb))


# ---- cm/train_util.py TrainLoop, cut to run_step / forward_backward / _update_ema (fp32 MixedPrecisionTrainer) ----
class TrainLoop:
    def __init__(self, model, batch_size, lr, ema_rate):
        self.model = model
        self.batch_size = batch_size
        self.ema_rate = (
            [ema_rate]
            if isinstance(ema_rate, float)
            else [float(x) for x in ema_rate.split(",")]
        )
        self.master_params = list(self.model.parameters())
        self.opt = th.optim.RAdam(self.master_params, lr=lr)
        self.ema_params = [
            copy.deepcopy(self.master_params)
            for _ in range(len(self.ema_rate))
        ]
        self.step = 0

    def run_step(self, batch):
        loss = self.forward_backward(batch)
        self.opt.step()
        self._update_ema()
        self.step += 1
        return loss

    def forward_backward(self, batch):
        self.opt.zero_grad()
        t = th.randint(0, 1000, (batch.shape[0],))
        noise = th.randn_like(batch)
        sigma = (t.float() / 1000.0).view(-1, 1, 1, 1)
        x_t = batch + sigma * noise
        model_output = self.model(x_t, t)
        loss = mean_flat((model_output - noise) ** 2).mean()
        loss.backward()
        return loss

    def _update_ema(self):
        for rate, params in zip(self.ema_rate, self.ema_params):
            update_ema(params, self.master_params, rate=rate)


if __name__ == "__main__":
    th.manual_seed(0)
    model = SmallUNet()
    trainer = TrainLoop(model, batch_size=2, lr=1e-4, ema_rate="0.999,0.9999")
    for _ in range(3):
        batch = th.randn(2, 3, 8, 8)
        loss = trainer.run_step(batch)
        print(trainer.step, loss.item())
