"""Hugging Face: ``Trainer(..., callbacks=[InplaceDetectCallback()])`` for
``transformers.Trainer`` (which trains through ``accelerate``).

Each training step (the forward and backward of its micro-batches and the optimizer step)
runs under the runtime detector: when backward fails with "modified by an inplace
operation", the error names the line of the user's model (or training code) that wrote and
the op that saved the tensor, with the library's line beside it as context. The findings go to
``.inplace-lsp/last-run.json`` in the project (one file per rank), where the language server
shows them (a step that raises ends ``train()``: the report holds its finding, written when
it was found). ``InplaceDetectCallback(enabled=False)`` adds nothing to a step;
``InplaceDetectCallback(every=20)`` (the cheaper mode) checks the first two steps and then
one in 20.

A script started with ``accelerate launch`` (or ``torchrun``) can run whole under the
detector instead: ``accelerate launch -m inplace_lsp run train.py``.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from inplace_lsp.integrations import StepsCallback

__all__ = ["InplaceDetectCallback"]


class InplaceDetectCallback(StepsCallback, TrainerCallback):  # type: ignore[misc]
    """Runs each training step under ``inplace_lsp.detect()``; see the module (and
    ``StepsCallback`` for the options)."""

    COMMAND = "transformers Trainer.train"

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.leave()  # a step that raised (and was caught) did not end: it ends now
        self.steps.enter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.leave()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.finish(0)
