"""The runtime detector inside training frameworks: ``integrations.lightning`` (a Trainer
callback) and ``integrations.transformers`` (a ``transformers.Trainer`` callback). Each imports
its framework; this module imports only the detector."""

from __future__ import annotations

import os
from pathlib import Path

from inplace_lsp.detector import Detector
from inplace_lsp.report import DIRECTORY, NAME, project_root
from inplace_lsp.verify import tracer


class Steps:
    """The detector entered for each training step and left after it, over a whole run: one
    report (per rank), written when a finding appears and when the run ends, not per step.

    ``every`` (the cheaper mode): the first two steps run under the detector (a bug that needs
    the state one step leaves, such as a recurrent hidden state, fails in the second), then
    one step in ``every``; the others run as without it."""

    def __init__(
        self,
        *,
        enabled: bool,
        silent: bool,
        retention: bool,
        report: str | os.PathLike[str] | None,
        command: str,
        every: int = 1,
    ) -> None:
        if every < 1:
            raise ValueError(f"every must be 1 or more, not {every}")
        self.enabled = enabled
        self.every = every
        self._options = (silent, retention, report, command)
        self.detector: Detector | None = None  # made at the first step (None while off)
        self._inside = False
        self.started = 0  # steps begun
        self.checked = False  # whether the last step begun ran under the detector

    def _made(self) -> Detector:
        if self.detector is None:
            silent, retention, report, command = self._options
            self.detector = Detector(
                silent=silent,
                retention=retention,
                report=report or Path(project_root(os.getcwd())) / DIRECTORY / NAME,
                header={"command": [command]},
            )
        return self.detector

    def enter(self) -> None:
        if not self.enabled or self._inside:
            return
        number = self.started
        self.started += 1
        self.checked = number < 2 or number % self.every == 0
        if not self.checked:
            return
        self._made().__enter__()
        self._inside = True

    def unchecked_failure(self, error: BaseException) -> str | None:
        """What to tell a user whose step failed with torch's in-place error while the
        detector skipped that step (``every`` > 1); None otherwise."""
        if self.checked or not self.enabled:
            return None
        if "modified by an inplace operation" not in tracer.error_text(error):
            return None
        return (
            f"inplace-lsp: step {self.started} failed with an in-place error while the detector "
            f"was off (it checks the first two steps, then one in {self.every}); rerun with "
            "every=1 to name the line that wrote"
        )

    def leave(self) -> None:
        if not self._inside or self.detector is None:
            return
        self._inside = False
        report, self.detector.report = self.detector.report, None  # no report per step's end
        try:
            self.detector.__exit__(None, None, None)
        finally:
            self.detector.report = report

    def finish(self, exit_code: int) -> None:
        """The run ended (1: with an exception): the report's last version."""
        self.leave()
        if self.detector is not None:
            self.detector.finish(exit_code)


class StepsCallback:
    """The options of a framework's callback (before the framework's base class in its
    bases): ``enabled=False`` adds nothing to a step; ``silent`` also warns about writes
    through ``.data`` or NumPy that backward read; ``retention`` about graphs kept alive
    across backwards; ``report`` is where the findings go (default:
    ``.inplace-lsp/last-run.json`` in the project of the working directory); ``every=N`` is
    the cheaper mode: the detector checks the first two steps and then one in N, and the
    steps between cost nothing."""

    COMMAND = ""  # what the report's header says ran

    def __init__(
        self,
        *,
        enabled: bool = True,
        silent: bool = True,
        retention: bool = False,
        report: str | os.PathLike[str] | None = None,
        every: int = 1,
    ) -> None:
        super().__init__()
        self.steps = Steps(
            enabled=enabled,
            silent=silent,
            retention=retention,
            report=report,
            command=self.COMMAND,
            every=every,
        )
