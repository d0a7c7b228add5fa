"""Hugging Face transformers' Trainer, as the analysis reads it: `training_step` runs
`compute_loss` and backward() on its loss (through accelerate), `compute_loss` calls the model
on the batch and takes its loss. A subclass that overrides either is trained through these.

Read by inplace_lsp.analysis.frameworks for these imports. Not code to run.
"""

__stands_for__ = ("transformers",)
__backpropagated__ = ("compute_loss",)
__drivers__ = ("training_step",)

import torch

class Trainer:
    def __init__(
        self,
        model=None,
        args=None,
        data_collator=None,
        train_dataset=None,
        eval_dataset=None,
        **kwargs,
    ):
        self.model = model
        self.args = args

    def compute_loss(
        self, model: torch.nn.Module, inputs, return_outputs=False, num_items_in_batch=None
    ):
        outputs = model(**inputs)
        loss = outputs["loss"]
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model: torch.nn.Module, inputs, num_items_in_batch=None):
        model.train()
        loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
        loss.backward()
        return loss.detach()

    def log(self, logs, *args, **kwargs):
        pass
