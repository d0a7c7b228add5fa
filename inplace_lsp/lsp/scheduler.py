"""Runs the analysis of open documents off the event loop: one worker per document at a time,
bursts coalesced to the newest version, results handed back in version order.

Each open document (a file, or a notebook's cells as one program) has a slot: the newest text
waiting, whether a worker runs, the newest result (`Snapshot`). A change while the worker
analyses replaces the waiting text, so a burst of 1,000 changes costs a few analyses, of the
newest text each. The incremental `DocumentAnalysis` of the most recently used documents is
kept (`max_live`); a document idle longer gets a fresh one on its next change (a full analysis
then), which bounds memory when hundreds of files are open.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

from inplace_lsp.analysis.engine import DocumentAnalysis, DocumentResult, Note, SyntaxProblem
from inplace_lsp.analysis.findings import Finding
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.analysis.workspace import Workspace

logger = logging.getLogger(__name__)

MAX_LIVE = 16  # documents whose incremental analysis state is kept
WORKERS = 4
# The C allocator's free pages go back to the system every this many analyses (1-3 ms each):
# an analysis frees most of what it allocated, in pieces that glibc keeps inside its heap, and
# a day of typing into a 4,128-line file grew the server 4-5 MB per 1,000 keystrokes.
TRIM_EVERY = 50


@dataclass(frozen=True)
class Snapshot:
    """One analysed version of a document: its text and the findings before settings."""

    key: str
    version: int | None
    text: str
    lines: list[str]
    findings: tuple[Finding, ...]
    syntax_errors: tuple[SyntaxProblem, ...] = ()
    duration_s: float = 0.0
    attachment: object = None  # what the submitter passed along (e.g. a notebook's layout)
    targets: tuple[tuple[str, str, int, int], ...] | None = (
        None  # verify targets (None: not parsed)
    )
    notes: tuple[Note, ...] = ()  # code given up on (too deep to analyse)
    # The same version again, with the files it imports (the first was from the file alone).
    refined: bool = False


@dataclass
class _Job:
    version: int | None
    text: str
    attachment: object = None
    refine: bool = False  # the version analysed from the file alone, now with its imports


@dataclass
class _Slot:
    key: str
    path: str | None
    pending: _Job | None = None
    last: _Job | None = None  # the newest job submitted (for a re-analysis)
    running: bool = False
    closed: bool = False
    submitted: int | None = None  # the newest version handed to the scheduler
    due: float = 0.0  # monotonic time before which a debounced job waits
    snapshot: Snapshot | None = None
    waiters: list[tuple[int | None, Future[Snapshot | None]]] = field(default_factory=list)


Publish = Callable[[Snapshot], None]


class Analysis(Protocol):
    """What the scheduler needs of an analysis (engine.DocumentAnalysis)."""

    def update(self, text: str, *, alone: bool = False) -> DocumentResult: ...


def new_analysis(
    path: str | None, workspace: Workspace | None, time_limit_s: float | None = None
) -> DocumentAnalysis:
    # Its own parse cache: the trees of a document dropped from the live set are freed.
    analysis = DocumentAnalysis(path=path, workspace=workspace)
    if time_limit_s is not None:
        analysis.time_limit_s = time_limit_s
    return analysis


def _newer(version: int | None, than: int | None) -> bool:
    return than is None or (version is not None and version >= than)


class Scheduler:
    """Analyses submitted texts in worker threads; calls `publish(snapshot)` (in a worker
    thread) for each result that no newer submitted version has overtaken."""

    def __init__(
        self,
        publish: Publish,
        *,
        workspace: Workspace | None = None,
        executor: Executor | None = None,
        max_live: int = MAX_LIVE,
        analysis_factory: Callable[[str | None, Workspace | None], Analysis] = new_analysis,
    ) -> None:
        self._publish = publish
        self.workspace = workspace
        self._executor = executor or ThreadPoolExecutor(WORKERS, "inplace-lsp-analysis")
        self._max_live = max_live
        self.analysis_factory = analysis_factory
        self._slots: dict[str, _Slot] = {}
        self._live: OrderedDict[str, Analysis] = OrderedDict()
        self._lock = threading.Lock()
        self.analyses = 0  # how many texts were analysed (tests: bursts coalesce)

    # ------------------------------------------------------------------ submitting

    def open(
        self,
        key: str,
        path: str | None,
        version: int | None,
        text: str,
        attachment: object = None,
    ) -> None:
        with self._lock:
            old = self._slots.get(key)
            if old is not None:
                old.closed = True
                self._live.pop(key, None)  # a reopened document may have changed on disk
            self._slots[key] = _Slot(key, path)
        self.submit(key, version, text, attachment=attachment)

    def submit(
        self,
        key: str,
        version: int | None,
        text: str,
        debounce_s: float = 0.0,
        attachment: object = None,
    ) -> None:
        """Queues `text` (the document at `version`) for analysis, replacing any text still
        waiting; a debounced job waits until no newer text came for `debounce_s`."""
        self._queue(key, lambda slot: _Job(version, text, attachment), debounce_s)

    def reanalyse(self, key: str) -> None:
        """Analyses the newest submitted text again (a file it imports from changed)."""
        self._queue(key, lambda slot: slot.last, 0.0)

    def _queue(self, key: str, make: Callable[[_Slot], _Job | None], debounce_s: float) -> None:
        with self._lock:
            slot = self._slots.get(key)
            if slot is None or slot.closed:
                return
            job = make(slot)
            if job is None or not _newer(job.version, slot.submitted):
                return  # an older version arriving late never replaces a newer one
            slot.pending = slot.last = job
            slot.submitted = job.version
            slot.due = time.monotonic() + debounce_s if debounce_s > 0 else 0.0
            if slot.running:
                return
            slot.running = True
        self._executor.submit(self._work, slot)

    def close(self, key: str) -> None:
        with self._lock:
            slot = self._slots.pop(key, None)
            if slot is None:
                return
            slot.closed = True
            slot.pending = None
            waiters, slot.waiters = slot.waiters, []
            self._live.pop(key, None)
        if self.workspace is not None and slot.path is not None:
            self.workspace.close_document(slot.path)
        for _, future in waiters:
            _resolve(future, None)

    def shutdown(self) -> None:
        for key in list(self._slots):
            self.close(key)
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ reading results

    def snapshot(self, key: str) -> Snapshot | None:
        slot = self._slots.get(key)
        return slot.snapshot if slot is not None else None

    def live_count(self) -> int:
        """How many documents keep their incremental analysis state."""
        return len(self._live)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._slots)

    def path(self, key: str) -> str | None:
        slot = self._slots.get(key)
        return slot.path if slot is not None else None

    def latest(self, key: str) -> Future[Snapshot | None]:
        """The result for the newest submitted version (None when the document closes first).
        Resolves at once when that result exists."""
        future: Future[Snapshot | None] = Future()
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                future.set_result(None)
                return future
            snapshot = slot.snapshot
            if snapshot is not None and _newer(snapshot.version, slot.submitted):
                future.set_result(snapshot)
                return future
            if not slot.running and slot.pending is None:
                # Nothing analysed and nothing queued (cannot happen after open); answer
                # with what there is rather than wait forever.
                future.set_result(snapshot)
                return future
            slot.waiters.append((slot.submitted, future))
        return future

    # ------------------------------------------------------------------ the worker

    def _work(self, slot: _Slot) -> None:
        while True:
            with self._lock:
                wait = slot.due - time.monotonic()
            if wait > 0 and not slot.closed:
                time.sleep(wait)
                continue
            with self._lock:
                job = slot.pending
                if job is None or slot.closed:
                    slot.running = False
                    return
                slot.pending = None
            snapshot, alone = self._analyse(slot, job)
            with self._lock:
                if slot.closed:
                    slot.running = False
                    return
                if alone and slot.pending is None:
                    # The first diagnostics came from the file alone; the files it imports
                    # are read now, and the version analysed again with them.
                    slot.pending = replace(job, refine=True)
                before = slot.snapshot
                if job.refine and before is not None and _same_findings(before, snapshot):
                    snapshot = before  # nothing to republish
                    overtaken = True
                else:
                    slot.snapshot = snapshot
                    overtaken = slot.pending is not None and not slot.pending.refine
                ready = [f for v, f in slot.waiters if _newer(snapshot.version, v)]
                slot.waiters = [(v, f) for v, f in slot.waiters if not _newer(snapshot.version, v)]
            for future in ready:
                _resolve(future, snapshot)
            if not overtaken:
                try:
                    self._publish(snapshot)
                except Exception:
                    logger.exception("publishing diagnostics of %s failed", slot.key)

    def _analyse(self, slot: _Slot, job: _Job) -> tuple[Snapshot, bool]:
        """The snapshot of the job's text, and whether it came from the file alone."""
        start = time.perf_counter()
        analysis = self._analysis(slot)
        if self.workspace is not None and slot.path is not None and job.version is not None:
            self.workspace.set_document(slot.path, job.version, job.text)
        # A document's first analysis is from the file alone: its diagnostics do not wait
        # for the files it imports to be read and modelled (seconds in a large package).
        alone = (
            self.workspace is not None
            and slot.path is not None
            and not job.refine
            and bool(getattr(analysis, "fresh", False))
        )
        try:
            result = analysis.update(job.text, alone=True) if alone else analysis.update(job.text)
            findings, errors = tuple(result.findings), tuple(result.syntax_errors)
            targets = None if errors else result.targets
            notes = result.notes
        except Exception:
            # A bug in one rule must not end the server or leave stale results published.
            logger.exception("analysis of %s (version %s) failed", slot.key, job.version)
            with self._lock:
                self._live.pop(slot.key, None)  # its caches may be inconsistent now
            findings, errors, targets, notes = (), (), None, ()
            alone = False
        self.analyses += 1
        if not self.analyses % TRIM_EVERY:
            _give_back_free_memory()
        snapshot = Snapshot(
            slot.key,
            job.version,
            job.text,
            split_lines(job.text),
            findings,
            errors,
            time.perf_counter() - start,
            job.attachment,
            targets,
            notes,
            job.refine,
        )
        return snapshot, alone

    def _analysis(self, slot: _Slot) -> Analysis:
        with self._lock:
            analysis = self._live.pop(slot.key, None)
        if analysis is None:
            analysis = self.analysis_factory(slot.path, self.workspace)
        with self._lock:
            self._live[slot.key] = analysis
            while len(self._live) > self._max_live:
                self._live.popitem(last=False)
        return analysis


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim (None elsewhere: musl, macOS, Windows)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _give_back_free_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _same_findings(a: Snapshot, b: Snapshot) -> bool:
    return (a.findings, a.syntax_errors, a.notes, a.targets) == (
        b.findings,
        b.syntax_errors,
        b.notes,
        b.targets,
    )


def _resolve(future: Future[Snapshot | None], value: Snapshot | None) -> None:
    if not future.done():
        future.set_result(value)
