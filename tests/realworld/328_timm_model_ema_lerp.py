"""timm's ModelEmaV2 / ModelEmaV3: EMA weights kept with `ema_v.copy_(update_fn(ema_v, model_v))` and `torch._foreach_lerp_` / `ema_v.lerp_(...)` under no_grad after each optimizer step (train.py's `model_ema.update(model, step=num_updates)`), EMA model validated."""
# outcome: ok
# source: https://github.com/huggingface/pytorch-image-models/blob/main/timm/utils/model_ema.py
# repo: huggingface/pytorch-image-models
# category: trainer
import logging
from collections import OrderedDict
from copy import deepcopy
from typing import Optional

import torch
import torch.nn as nn

_logger = logging.getLogger(__name__)


# ---- timm/utils/model_ema.py ----
class ModelEmaV2(nn.Module):
    """ Model Exponential Moving Average V2

    Keep a moving average of everything in the model state_dict (parameters and buffers).
    V2 of this module is simpler, it does not match params/buffers based on name but simply
    iterates in order. It works with torchscript (JIT of full model).
    """
    def __init__(self, model, decay=0.9999, device=None):
        super().__init__()
        # make a copy of the model for accumulating moving average of weights
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.device = device  # perform ema on different device from model if set
        if self.device is not None:
            self.module.to(device=device)

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if self.device is not None:
                    model_v = model_v.to(device=self.device)
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)

    def set(self, model):
        self._update(model, update_fn=lambda e, m: m)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


class ModelEmaV3(nn.Module):
    """ Model Exponential Moving Average V3

    Keep a moving average of everything in the model state_dict (parameters and buffers).
    V3 of this module leverages for_each and in-place operations for faster performance.
    """
    def __init__(
            self,
            model,
            decay: float = 0.9999,
            min_decay: float = 0.0,
            update_after_step: int = 0,
            use_warmup: bool = False,
            warmup_gamma: float = 1.0,
            warmup_power: float = 2/3,
            device: Optional[torch.device] = None,
            foreach: bool = True,
            exclude_buffers: bool = False,
    ):
        super().__init__()
        # make a copy of the model for accumulating moving average of weights
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.min_decay = min_decay
        self.update_after_step = update_after_step
        self.use_warmup = use_warmup
        self.warmup_gamma = warmup_gamma
        self.warmup_power = warmup_power
        self.foreach = foreach
        self.device = device  # perform ema on different device from model if set
        self.exclude_buffers = exclude_buffers
        if self.device is not None and device != next(model.parameters()).device:
            self.foreach = False  # cannot use foreach methods with different devices
            self.module.to(device=device)

    def get_decay(self, step: Optional[int] = None) -> float:
        """
        Compute the decay factor for the exponential moving average.
        """
        if step is None:
            return self.decay

        step = max(0, step - self.update_after_step - 1)
        if step <= 0:
            return 0.0

        if self.use_warmup:
            decay = 1 - (1 + step / self.warmup_gamma) ** -self.warmup_power
            decay = max(min(decay, self.decay), self.min_decay)
        else:
            decay = self.decay

        return decay

    @torch.no_grad()
    def update(self, model, step: Optional[int] = None):
        decay = self.get_decay(step)
        if self.exclude_buffers:
            self.apply_update_no_buffers_(model, decay)
        else:
            self.apply_update_(model, decay)

    def apply_update_(self, model, decay: float):
        # interpolate parameters and buffers
        if self.foreach:
            ema_lerp_values = []
            model_lerp_values = []
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if ema_v.is_floating_point():
                    ema_lerp_values.append(ema_v)
                    model_lerp_values.append(model_v)
                else:
                    ema_v.copy_(model_v)

            if hasattr(torch, '_foreach_lerp_'):
                torch._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - decay)
            else:
                torch._foreach_mul_(ema_lerp_values, scalar=decay)
                torch._foreach_add_(ema_lerp_values, model_lerp_values, alpha=1. - decay)
        else:
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if ema_v.is_floating_point():
                    ema_v.lerp_(model_v.to(device=self.device), weight=1. - decay)
                else:
                    ema_v.copy_(model_v.to(device=self.device))

    def apply_update_no_buffers_(self, model, decay: float):
        # interpolate parameters, copy buffers
        ema_params = tuple(self.module.parameters())
        model_params = tuple(model.parameters())
        if self.foreach:
            if hasattr(torch, '_foreach_lerp_'):
                torch._foreach_lerp_(ema_params, model_params, weight=1. - decay)
            else:
                torch._foreach_mul_(ema_params, scalar=decay)
                torch._foreach_add_(ema_params, model_params, alpha=1 - decay)
        else:
            for ema_p, model_p in zip(ema_params, model_params):
                ema_p.lerp_(model_p.to(device=self.device), weight=1. - decay)

        for ema_b, model_b in zip(self.module.buffers(), model.buffers()):
            ema_b.copy_(model_b.to(device=self.device))

    @torch.no_grad()
    def set(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            ema_v.copy_(model_v.to(device=self.device))

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


# ---- timm/utils/clip_grad.py ----
def dispatch_clip_grad(parameters, value: float, mode: str = 'norm', norm_type: float = 2.0):
    """ Dispatch to gradient clipping method
    """
    if mode == 'norm':
        torch.nn.utils.clip_grad_norm_(parameters, value, norm_type=norm_type)
    elif mode == 'value':
        torch.nn.utils.clip_grad_value_(parameters, value)
    else:
        assert False, f"Unknown clip mode ({mode})."


# ---- train.py (train_one_epoch / validate, shrunk; a small convnet instead of a timm model) ----
def train_one_epoch(epoch, model, loader, optimizer, loss_fn, clip_grad=None, clip_mode='norm', model_ema=None):
    model.train()
    num_batches_per_epoch = len(loader)
    num_updates = epoch * num_batches_per_epoch
    losses = []
    for batch_idx, (input, target) in enumerate(loader):
        output = model(input)
        loss = loss_fn(output, target)
        losses.append(loss.item())

        optimizer.zero_grad()
        loss.backward()
        if clip_grad is not None:
            dispatch_clip_grad(model.parameters(), value=clip_grad, mode=clip_mode)
        optimizer.step()

        num_updates += 1
        if model_ema is not None:
            if isinstance(model_ema, ModelEmaV3):
                model_ema.update(model, step=num_updates)
            else:
                model_ema.update(model)
    return OrderedDict([('loss', sum(losses) / len(losses))])


def validate(model, loader, loss_fn):
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for input, target in loader:
            output = model(input)
            loss_sum += loss_fn(output, target).item() * input.size(0)
            correct += (output.argmax(1) == target).sum().item()
            total += input.size(0)
    return OrderedDict([('loss', loss_sum / total), ('top1', 100. * correct / total)])


if __name__ == '__main__':
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(16, 3, 16, 16), torch.randint(0, 5, (16,)))
    loader_train = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
    loader_eval = torch.utils.data.DataLoader(data, batch_size=8)
    loss_fn = nn.CrossEntropyLoss()
    for ema_cls, kwargs in ((ModelEmaV2, dict(decay=0.99)), (ModelEmaV3, dict(decay=0.99, use_warmup=True)),
                            (ModelEmaV3, dict(decay=0.99, foreach=False, device=torch.device('cpu'))),
                            (ModelEmaV3, dict(decay=0.99, exclude_buffers=True))):
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        model_ema = ema_cls(model, **kwargs)
        for epoch in range(2):
            train_metrics = train_one_epoch(epoch, model, loader_train, optimizer, loss_fn,
                                            clip_grad=1.0, model_ema=model_ema)
            eval_metrics = validate(model, loader_eval, loss_fn)
            ema_eval_metrics = validate(model_ema, loader_eval, loss_fn)
            print(ema_cls.__name__, epoch, train_metrics, eval_metrics, ema_eval_metrics)
