"""PyTorch Lightning: ``Trainer(callbacks=[InplaceDetect()])``, a drop-in replacement for
``Trainer(detect_anomaly=True)``.

Each training batch (``training_step``, the backward and the optimizer step, in automatic and
in manual optimization) runs under the runtime detector: when backward fails with "modified
by an inplace operation", the error names the line of the user's code that wrote (the
``opt_d.step()`` of a LightningModule, with the framework's line beside it as context) and
the op that saved the tensor. The findings go to ``.inplace-lsp/last-run.json`` in the
project (one file per rank under DDP: ``last-run-rank<N>.json``), where the language server
shows them. ``InplaceDetect(enabled=False)`` adds nothing to a batch.

Works with ``lightning`` (``lightning.pytorch``) or ``pytorch_lightning``, whichever is
installed (``lightning`` first); the Trainer must come from the same package.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from inplace_lsp.detector import Detector
from inplace_lsp.report import DIRECTORY, NAME, project_root

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:
    from pytorch_lightning.callbacks import Callback

__all__ = ["InplaceDetect"]


class InplaceDetect(Callback):  # type: ignore[misc]  # Lightning ships no type for subclasses
    """Runs each training batch under ``inplace_lsp.detect()``; see the module."""

    def __init__(
        self,
        *,
        enabled: bool = True,
        silent: bool = True,
        retention: bool = False,
        report: str | os.PathLike[str] | None = None,
    ) -> None:
        """``silent`` also warns about writes through ``.data`` or NumPy that backward read;
        ``retention`` about graphs kept alive across backwards; ``report`` is where the
        findings go (default: ``.inplace-lsp/last-run.json`` in the project of the working
        directory)."""
        self.enabled = enabled
        self.silent = silent
        self.retention = retention
        self.report_path = report
        self.detector: Detector | None = None
        self._inside = False

    def _detector(self) -> Detector:
        if self.detector is None:
            path = self.report_path or Path(project_root(os.getcwd())) / DIRECTORY / NAME
            self.detector = Detector(
                silent=self.silent,
                retention=self.retention,
                report=path,
                header={"command": ["lightning", "Trainer.fit"]},
            )
        return self.detector

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        if not self.enabled or self._inside:
            return
        detector = self._detector()
        report, detector.report = detector.report, None  # written at the end, not per batch
        try:
            detector.__enter__()
        finally:
            detector.report = report
        self._inside = True

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._leave()

    def _leave(self) -> None:
        if not self._inside or self.detector is None:
            return
        self._inside = False
        report, self.detector.report = self.detector.report, None
        try:
            self.detector.__exit__(None, None, None)
        finally:
            self.detector.report = report

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._leave()
        if self.detector is not None:
            self.detector.finish(1)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self._leave()
        if self.detector is not None:
            self.detector.finish(0)
