"""Stand-in for pytorch_lightning (see ../README.md): LightningModule, Trainer, seed_everything."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def seed_everything(seed: int = 0, workers: bool = False) -> int:
    torch.manual_seed(seed)
    return seed


class _Opt:
    """What `self.optimizers()` gives in Lightning: the optimizer, wrapped (step/zero_grad)."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer

    def step(self, closure: Any = None) -> Any:
        return self.optimizer.step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups


class LightningModule(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self._automatic_optimization = True
        self._optimizers: list[torch.optim.Optimizer] = []
        self._toggled: dict[torch.nn.Parameter, bool] = {}
        self.trainer: Trainer | None = None
        self.current_epoch = 0
        self.global_step = 0

    @property
    def automatic_optimization(self) -> bool:
        return self._automatic_optimization

    @automatic_optimization.setter
    def automatic_optimization(self, value: bool) -> None:
        self._automatic_optimization = value

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def save_hyperparameters(self, *args: Any, **kwargs: Any) -> None:
        return None

    def log(self, *args: Any, **kwargs: Any) -> None:
        return None

    def log_dict(self, *args: Any, **kwargs: Any) -> None:
        return None

    def optimizers(self) -> Any:
        wrapped = [_Opt(o) for o in self._optimizers]
        return wrapped[0] if len(wrapped) == 1 else wrapped

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        loss.backward(*args, **kwargs)

    def toggle_optimizer(self, optimizer: Any) -> None:
        """As Lightning does: only this optimizer's parameters require grad until untoggled."""
        optimizer = getattr(optimizer, "optimizer", optimizer)
        mine = {id(p) for g in optimizer.param_groups for p in g["params"]}
        for other in self._optimizers:
            for group in other.param_groups:
                for p in group["params"]:
                    if id(p) not in mine and p not in self._toggled:
                        self._toggled[p] = p.requires_grad
                        p.requires_grad = False

    def untoggle_optimizer(self, optimizer: Any = None) -> None:
        for p, flag in self._toggled.items():
            p.requires_grad = flag
        self._toggled = {}

    def configure_optimizers(self) -> Any:
        raise NotImplementedError


def _optimizers_of(configured: Any) -> list[torch.optim.Optimizer]:
    if isinstance(configured, torch.optim.Optimizer):
        return [configured]
    if isinstance(configured, dict):
        return [configured["optimizer"]]
    if isinstance(configured, (list, tuple)):
        if len(configured) == 2 and isinstance(configured[0], (list, tuple)):
            configured = configured[0]  # ([optimizers], [schedulers])
        return [o for c in configured for o in _optimizers_of(c)]
    raise TypeError(f"configure_optimizers returned {type(configured).__name__}")


class Trainer:
    def __init__(self, max_epochs: int = 1, max_steps: int = -1, **kwargs: Any) -> None:
        self.max_epochs = max_epochs
        self.max_steps = max_steps

    def fit(self, model: LightningModule, train_dataloaders: Any = None, **kwargs: Any) -> None:
        loader = train_dataloaders if train_dataloaders is not None else kwargs.get("datamodule")
        if loader is None and hasattr(model, "train_dataloader"):
            loader = model.train_dataloader()
        elif hasattr(loader, "train_dataloader"):
            loader = loader.train_dataloader()
        model.trainer = self
        model._optimizers = _optimizers_of(model.configure_optimizers())
        model.train()
        for epoch in range(self.max_epochs):
            model.current_epoch = epoch
            for index, batch in enumerate(loader):
                if 0 <= self.max_steps <= model.global_step:
                    return
                if model.automatic_optimization:
                    optimizer = model._optimizers[0]
                    optimizer.zero_grad()
                    out = model.training_step(batch, index)
                    loss = out["loss"] if isinstance(out, dict) else out
                    if loss is not None:
                        loss.backward()
                        optimizer.step()
                else:
                    model.training_step(batch, index)
                model.global_step += 1
