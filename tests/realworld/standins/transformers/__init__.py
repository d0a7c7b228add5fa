"""Stand-in for transformers' Trainer (see ../README.md): train() runs training_step, which
runs compute_loss and backward, then the optimizer steps, as transformers.Trainer does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass
class TrainingArguments:
    output_dir: str = "out"
    num_train_epochs: int = 1
    max_steps: int = -1
    learning_rate: float = 5e-5
    per_device_train_batch_size: int = 2
    gradient_accumulation_steps: int = 1


class Trainer:
    def __init__(
        self,
        model: nn.Module | None = None,
        args: TrainingArguments | None = None,
        train_dataset: Any = None,
        data_collator: Any = None,
        **kwargs: Any,
    ) -> None:
        self.model = model
        self.args = args or TrainingArguments()
        self.train_dataset = train_dataset
        self.data_collator = data_collator
        self.optimizer: torch.optim.Optimizer | None = None

    def create_optimizer(self) -> torch.optim.Optimizer:
        if self.optimizer is None:
            assert self.model is not None
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.args.learning_rate)
        return self.optimizer

    def compute_loss(
        self, model: nn.Module, inputs: dict[str, Any], return_outputs: bool = False, **kwargs: Any
    ) -> Any:
        outputs = model(**inputs)
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs[0]
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model: nn.Module, inputs: dict[str, Any], *args: Any) -> torch.Tensor:
        model.train()
        loss = self.compute_loss(model, inputs)
        loss.backward()
        return loss.detach()

    def train(self) -> None:
        assert self.model is not None
        optimizer = self.create_optimizer()
        steps = 0
        for _ in range(self.args.num_train_epochs):
            for batch in self.train_dataset:
                inputs = self.data_collator([batch]) if self.data_collator else batch
                self.training_step(self.model, inputs)
                optimizer.step()
                optimizer.zero_grad()
                steps += 1
                if 0 <= self.args.max_steps <= steps:
                    return
