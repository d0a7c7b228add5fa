"""PyTorch Lightning: ``Trainer(callbacks=[InplaceDetect()])``, a drop-in replacement for
``Trainer(detect_anomaly=True)``.

Each training batch (``training_step``, the backward and the optimizer step, in automatic and
in manual optimization) runs under the runtime detector: when backward fails with "modified
by an inplace operation", the error names the line of the user's code that wrote (the
``opt_d.step()`` of a LightningModule, with the framework's line beside it as context) and
the op that saved the tensor. The findings go to ``.inplace-lsp/last-run.json`` in the
project (one file per rank under DDP: ``last-run-rank<N>.json``), where the language server
shows them. ``InplaceDetect(enabled=False)`` adds nothing to a batch; ``InplaceDetect(every=20)``
(the cheaper mode) checks the first two batches and then one in 20.

Works with ``lightning`` (``lightning.pytorch``) or ``pytorch_lightning``, whichever is
installed (``lightning`` first); the Trainer must come from the same package.
"""

from __future__ import annotations

import sys
from typing import Any

from inplace_lsp.integrations import StepsCallback

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:
    from pytorch_lightning.callbacks import Callback

__all__ = ["InplaceDetect"]


class InplaceDetect(StepsCallback, Callback):  # type: ignore[misc]  # Lightning: no types
    """Runs each training batch under ``inplace_lsp.detect()``; see the module (and
    ``StepsCallback`` for the options)."""

    COMMAND = "lightning Trainer.fit"

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, index: int) -> None:
        self.steps.enter()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, index: int
    ) -> None:
        self.steps.leave()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.steps.finish(1)
        hint = self.steps.unchecked_failure(exception)
        if hint is not None:
            print(hint, file=sys.stderr)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self.steps.finish(0)
