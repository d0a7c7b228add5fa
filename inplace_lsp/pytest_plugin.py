"""pytest plugin (entry point ``pytest11``, off by default): ``pytest --inplace-detect`` runs
each test's setup and call under the runtime detector (``inplace_lsp.detect()``).

A test whose backward fails with the in-place error fails with both ends in its message; the
detector's warnings (writes through ``.data`` or NumPy that backward read) land in pytest's
warnings summary. The findings of the session go to ``.inplace-lsp/last-run.json`` under the
root directory (the language server shows them), or to ``--inplace-detect-report PATH``.
Importing this module imports neither torch nor the detector.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from inplace_lsp.detector import Detector


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("inplace-lsp")
    group.addoption(
        "--inplace-detect",
        action="store_true",
        default=False,
        help="run each test under the inplace-lsp runtime detector: an in-place autograd "
        "error names the line that wrote and the op that saved the tensor",
    )
    group.addoption(
        "--inplace-detect-report",
        metavar="PATH",
        default=None,
        help="where the detector's JSON report goes "
        "(default: .inplace-lsp/last-run.json under the root directory)",
    )
    group.addoption(
        "--inplace-detect-retention",
        action="store_true",
        default=False,
        help="also warn about calls that build on a graph that backward already freed",
    )


class _Session:
    """The session's findings, gathered from one detector per test phase."""

    def __init__(self, config: pytest.Config) -> None:
        from inplace_lsp.detector import Detector
        from inplace_lsp.runscript import REPORT_NAME

        self.config = config
        self.retention = bool(config.getoption("inplace_detect_retention"))
        report = config.getoption("inplace_detect_report")
        self.collector = Detector(report=Path(report) if report else config.rootpath / REPORT_NAME)
        self.collector.header["command"] = ["pytest", *config.invocation_params.args]

    def detector(self) -> Detector:
        from inplace_lsp.detector import Detector

        return Detector(retention=self.retention)

    def gather(self, detector: Detector, nodeid: str) -> None:
        for finding in detector.findings:
            self.collector.findings.append({**finding, "test": nodeid})


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("inplace_detect"):
        return
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise pytest.UsageError(f"--inplace-detect needs torch: {exc}") from None
    config.stash[_KEY] = _Session(config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_KEY, None)
    if state is not None:
        state.collector.finish(int(exitstatus))


def _under_detector(item: pytest.Item) -> Generator[None, Any, None]:
    state = item.config.stash.get(_KEY, None)
    if state is None:
        yield
        return
    detector = state.detector()
    with detector:
        outcome = yield  # the test phase; its exception stays pytest's (an old-style wrapper)
    error = outcome.excinfo[1] if outcome.excinfo is not None else None
    if error is not None:  # pytest shows the frames the error has without the detector
        from inplace_lsp.verify import tracer

        tracer.without_detector_frames(error)
        outcome.force_exception(error)  # pluggy keeps the traceback it caught beside it
    state.gather(detector, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, None]:
    yield from _under_detector(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    yield from _under_detector(item)


_KEY = pytest.StashKey[_Session]()
