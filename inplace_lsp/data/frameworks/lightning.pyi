"""PyTorch Lightning, as the analysis reads it: what a LightningModule's own methods do to the
training state (a LightningModule is an nn.Module; `self.optimizers()` gives what
`configure_optimizers()` returns; `self.manual_backward(loss)` is `loss.backward()`), and what
the trainer runs around `training_step` in automatic optimization.

Read by inplace_lsp.analysis.frameworks for these imports. Not code to run.
"""

__stands_for__ = ("pytorch_lightning", "lightning.pytorch", "lightning")
__backpropagated__ = ("training_step",)
__drivers__ = ()

import torch

class LightningModule(torch.nn.Module):
    def optimizers(self, use_pl_optimizer=True):
        return self.configure_optimizers()

    def lr_schedulers(self):
        return None

    def manual_backward(self, loss, *args, **kwargs):
        loss.backward(*args, **kwargs)

    def toggle_optimizer(self, optimizer):
        pass

    def untoggle_optimizer(self, optimizer):
        pass

    def log(self, *args, **kwargs):
        pass

    def log_dict(self, *args, **kwargs):
        pass

    def save_hyperparameters(self, *args, **kwargs):
        pass

    def clip_gradients(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        pass

class LightningDataModule:
    pass
