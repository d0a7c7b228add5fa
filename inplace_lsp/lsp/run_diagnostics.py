"""The findings of the newest `inplace-lsp run` report in the workspace folders, in a session:
the report files looked at again when they change (watched, or polled), the findings followed
through the edits of the open files (run_findings.RunFindings), and their diagnostics sent to
the client: with the analysis's in an open file, on their own in a file that is not open."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from inplace_lsp import report
from inplace_lsp.lsp.run_findings import (
    Reread,
    RunFindings,
    file_key,
    let_go,
    prefetch,
    read_gently,
    reread,
)

if TYPE_CHECKING:
    from inplace_lsp.lsp.publisher import Cells, Publisher

logger = logging.getLogger(__name__)

# The reports of `inplace-lsp run` (inplace_lsp.report): what the client is asked to watch,
# the files and their folder (a watcher may miss a file in a new folder).
REPORT_GLOBS = (f"**/{report.DIRECTORY}/last-run*.json", f"**/{report.DIRECTORY}")
POLL_S = 2.0  # how often the files are looked at when the client cannot watch them
# ... and when it watches them: a client's watcher may miss the folder (eglot watches only
# folders that held project files when the server registered, and .inplace-lsp is ignored).
WATCHED_POLL_S = 10.0
# After the folder itself appears: when to look again for a report its watcher missed.
RECHECK_S = (0.5, 2.0)
# Changed files are published a few at a time, for at most this long before the event loop
# runs again (see RunDiagnostics._changed).
PUBLISH_BATCH = 8
PUBLISH_SLICE_S = 0.01


class RunDiagnostics:
    """The run findings of a session; every method runs on the event loop thread."""

    def __init__(self, session: Publisher, folders: list[str]) -> None:
        self._session = session
        # The newest `inplace-lsp run` report, read from the workspace folders' .inplace-lsp/;
        # without folders (an editor in single-file mode), from the open files' project roots.
        self.workspace_folders = folders
        self._run = RunFindings()
        self._run_files: report.Signature | None = None  # the report files last read
        self._run_keys: dict[str, str] = {}  # open file URI -> its run_findings.file_key
        self._run_pushed: set[str] = set()  # URIs holding run diagnostics pushed apart
        # Open notebooks: URI -> (path, cells as (cell URI, version, text)), to find the cells
        # that a run's findings name (see `notebook`)
        self._notebooks: dict[str, tuple[str | None, Cells]] = {}
        self.generation = 0  # bumped when run diagnostics change (pull result ids)
        self._loads = 0  # loads begun: only the newest one's result is applied
        self._reading: asyncio.Future[Any] | None = None  # the newest load's, in a thread
        self._rereads: dict[str, int] = {}  # file key -> the newest re-read begun, in a thread
        self._pending: dict[str, None] = {}  # file keys whose run diagnostics go out next
        self._draining = False  # a _drain is scheduled

    @property
    def report_folders(self) -> list[str]:
        """Where `inplace-lsp run` reports are looked for (in `.inplace-lsp/`): the workspace
        folders, else the project root of each open file (see report.project_root)."""
        if self.workspace_folders:
            return self.workspace_folders
        folders = {
            os.path.dirname(os.path.abspath(d.path)) for d in self._session.documents() if d.path
        }
        return sorted({report.project_root(folder) for folder in folders})

    @property
    def poll_s(self) -> float:
        """How often the report files are looked at: often when the client watches no files
        for the server (or has no folders to watch them in), seldom when its watcher should
        have told already."""
        if self._session.features.watch_files and self.workspace_folders:
            return WATCHED_POLL_S
        return POLL_S

    def load(self) -> None:
        """Reads the newest run's report (at start, and when a report file changed); its
        findings replace the last run's. A report being written keeps what is shown. In the
        server the report and the files it names are read in a thread: a large one never
        holds up a keystroke; what was read is applied on the event loop, unless a newer
        load began meanwhile."""
        folders = self.report_folders
        self._run_files = files = report.signature(folders)
        self._loads += 1
        ticket = self._loads
        loop = _running_loop()
        if loop is None:  # a direct call: read here
            self._apply(ticket, lambda: _read_run(folders, files))
            return
        future = loop.run_in_executor(None, _read_run, folders, files)
        future.add_done_callback(lambda done: self._apply(ticket, done.result))
        self._reading = future

    async def settled(self, timeout_s: float = 30.0) -> None:
        """Returns when the report being read, if any, is applied (or after `timeout_s`)."""
        reading = self._reading
        if reading is not None and not reading.done():
            await asyncio.wait([reading], timeout=timeout_s)

    def _apply(
        self,
        ticket: int,
        result: Callable[[], tuple[report.Run | None, Mapping[str, Sequence[str] | None]]],
    ) -> None:
        try:
            run, lines = result()
            if ticket != self._loads:  # a newer load replaces this one
                _drop_in_a_thread(dict(lines))
                return
            if run is not None:  # None: the newest file is not readable (yet)
                changed = self._run.replace(run, lines, _drop_in_a_thread)
                for uri, key in list(self._run_keys.items()):  # cells of the last run's
                    if key not in self._run.cells and self._session.key_of(uri) != uri:
                        del self._run_keys[uri]
                        changed |= self._run.closed(key).keys
                for notebook, (path, cells) in self._notebooks.items():
                    changed |= self._bind(notebook, path, cells)
                self._changed(changed)
        except Exception:  # a report must never take the server down
            logger.exception("reading the run reports failed")

    def poll(self) -> None:
        """Every `poll_s`: reads the reports again when a file's mtime or size changed (a
        directory listing per folder otherwise)."""
        if report.signature(self.report_folders) != self._run_files:
            self.load()

    def files_changed(self, paths: Sequence[str]) -> None:
        """workspace/didChangeWatchedFiles: a report, or its folder, read again."""
        if any(report.is_report(p) or Path(p).name == report.DIRECTORY for p in paths):
            self.load()
        if any(Path(p).name == report.DIRECTORY for p in paths):
            # A new .inplace-lsp folder: a watcher may report the folder and miss the report
            # written into it at once (VS Code's does), so look again shortly.
            loop = _running_loop()
            if loop is not None:  # None: a direct call (a test's)
                for delay in RECHECK_S:
                    loop.call_later(delay, self.poll)

    def disk_changed(self, path: str) -> None:
        """A Python file changed on disk (see RunFindings.disk_changed). In the server a file
        with run findings is read again, and compared, in a thread; the newest read of a file
        is applied on the event loop."""
        key = file_key(path)
        old = self._run.lines_of(key)
        if old is None:
            return
        loop = _running_loop()
        if loop is None:  # a direct call: read here
            self._changed(self._run.disk_changed(key).keys)
            return
        self._rereads[key] = ticket = self._rereads.get(key, 0) + 1
        future = loop.run_in_executor(None, reread, key, old)
        future.add_done_callback(lambda done: self._reread(key, ticket, done))

    def _reread(self, key: str, ticket: int, done: asyncio.Future[Reread]) -> None:
        if self._rereads.get(key) != ticket:
            return  # a newer read of the file is on its way
        del self._rereads[key]
        try:
            self._changed(self._run.disk_changed(key, done.result()).keys)
        except Exception:  # a file must never take the server down
            logger.exception("reading %s again failed", key)

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The run findings in an open file."""
        key = self._run_keys.get(uri)
        if key is None:
            return []
        return self._run.diagnostics(key, self._session.features.encoding)

    def pushed_apart(self, uri: str) -> list[types.Diagnostic]:
        """The run findings in an open file, for a push of their own (Publisher.push_apart)."""
        ran = self.diagnostics(uri)
        if ran:
            self._run_pushed.add(uri)  # cleared when the file closes, if none are left then
        return ran

    def info(self) -> dict[str, Any]:
        """The newest run, for the debug info."""
        run = self._run.run
        return {"files": list(run.files), "runId": run.run_id}

    def _changed(self, keys: set[str] | frozenset[str]) -> None:
        """The client hears that the run diagnostics of these files changed: a file that is
        not open gets them pushed on their own; an open one as its analysis's go (pushed
        with them, a refresh to pull, or pushed apart). In the server a slice of the files
        at a time (PUBLISH_SLICE_S), the event loop free between two: a run naming 1,000
        files held up a hover 120 ms while they were all published in one go."""
        if not keys:
            return
        loop = _running_loop()
        if loop is None:  # a direct call: all of them now
            self._publish(keys)
            return
        self._pending.update(dict.fromkeys(sorted(keys)))
        if not self._draining:
            self._draining = True
            loop.call_soon(self._drain)

    def _drain(self) -> None:
        """Publishes pending files for PUBLISH_SLICE_S, then lets the loop run (see _changed)."""
        deadline = time.perf_counter() + PUBLISH_SLICE_S
        try:
            while self._pending and time.perf_counter() < deadline:
                slice_ = list(itertools.islice(self._pending, PUBLISH_BATCH))
                for key in slice_:
                    del self._pending[key]
                self._publish(set(slice_))
        except Exception:  # a report must never take the server down
            logger.exception("publishing the run findings failed")
        if self._pending:
            asyncio.get_running_loop().call_soon(self._drain)
        else:
            self._draining = False

    def _publish(self, keys: set[str] | frozenset[str]) -> None:
        session = self._session
        features = session.features
        self.generation += 1
        refresh = False
        pushed: set[str] = set()
        for key in sorted(keys):
            uri = self._run.uri(key)
            if not uri:  # a notebook cell's code that no open cell holds
                continue
            owner = session.key_of(uri)  # the file, or the notebook of a cell
            document = session.document(owner) if owner is not None else None
            if document is None or (owner == uri and self._run_keys.get(uri) != key):
                found = self._run.diagnostics(key, features.encoding)
                if found or uri in self._run_pushed:
                    session.client.publish(uri, None, found)
                (self._run_pushed.add if found else self._run_pushed.discard)(uri)
            elif features.verify_pushed:
                cell = document.layout.cell(uri)
                version = cell.version if cell is not None else None
                session.push_apart(uri, version)
            elif features.pull:
                refresh = True
            elif document.key not in pushed and session.scheduler.snapshot(document.key):
                pushed.add(document.key)
                session.push(document.key)
        if refresh and features.refresh:
            session.client.refresh_diagnostics()

    def notebook(self, uri: str, path: str | None, cells: Cells) -> None:
        """A notebook opened or changed: the run findings in its cells follow their text, and
        a cell that a run's finding names (`%inplace_detect` in a kernel) gets them: the cell
        whose URI is the id the kernel was given (VS Code's Jupyter extension sends the URI),
        else the cell of that notebook (or of any, when the kernel did not know the notebook)
        whose text is the text that ran."""
        self._notebooks[uri] = (path, cells)
        present = {cell_uri: (version, text) for cell_uri, version, text in cells}
        changed: set[str] = set()
        for cell_uri, key in list(self._run_keys.items()):
            if key not in self._run.cells or self._session.key_of(cell_uri) != uri:
                continue
            if cell_uri in present:
                changed |= self._run.edited(key, present[cell_uri][1]).keys
            else:  # the cell was deleted
                del self._run_keys[cell_uri]
                changed |= self._run.closed(key).keys
        changed |= self._bind(uri, path, cells)
        self._changed(changed)

    def notebook_closed(self, uri: str) -> None:
        """A notebook closed: its cells' run findings are shown nowhere until it opens again."""
        self._notebooks.pop(uri, None)
        for cell_uri, key in list(self._run_keys.items()):
            if key in self._run.cells and self._session.key_of(cell_uri) == uri:
                del self._run_keys[cell_uri]
                self._run.closed(key)

    def _bind(self, notebook: str, path: str | None, cells: Cells) -> set[str]:
        """Gives the unbound cells of the run that are in this notebook to their cells."""
        unbound = self._run.unbound_cells()
        if not unbound:
            return set()
        taken = set(self._run_keys)
        by_text: dict[str, list[tuple[str, str]]] = {}
        for cell_uri, _, text in cells:
            if cell_uri not in taken:
                by_text.setdefault(_normal(text), []).append((cell_uri, text))
        texts = {cell_uri: text for cell_uri, _, text in cells if cell_uri not in taken}
        here = file_key(path) if path is not None else None
        changed: set[str] = set()
        for key, cell in sorted(unbound.items()):
            found: tuple[str, str] | None = None
            if cell.id is not None and cell.id in texts:
                found = (cell.id, texts[cell.id])
            elif cell.notebook is None or here is None or file_key(cell.notebook) == here:
                candidates = by_text.get(_normal(cell.text))
                found = candidates.pop(0) if candidates else None
            if found is None or found[0] in taken:
                continue
            taken.add(found[0])
            self._run_keys[found[0]] = key
            changed |= self._run.opened(key, *found).keys | {key}
        return changed

    def opened(self, uri: str, version: int | None, path: str, text: str) -> None:
        """A file opened: its run findings follow the buffer from now on, and go out with
        its analysis (a client that pulls has the copy pushed while it was closed removed)."""
        session = self._session
        key = file_key(path)
        self._run_keys[uri] = key
        before = self._run.uri(key)  # the path's URI, which the editor may spell otherwise
        changed = self._run.opened(key, uri, text)
        for pushed in sorted({before, uri} & self._run_pushed):
            if pushed == uri and session.features.verify_pushed:
                continue  # still pushed apart, now from the buffer's lines
            self._run_pushed.discard(pushed)
            if pushed != uri or session.features.pull:  # a push of the analysis replaces it
                session.client.publish(pushed, None, [])
        if key in changed.keys and session.features.verify_pushed:
            session.push_apart(uri, version)
        self._changed(changed.keys - {key})  # related lines in other files moved
        if not self.workspace_folders:
            self.poll()  # a report of this file's project, not looked at yet

    def follow(
        self,
        uri: str,
        version: int | None,
        text: str,
        changes: Sequence[object] | None,
        lines: Sequence[str] | None,
    ) -> None:
        """A file changed: its run findings move with their lines, and go when a line changed.
        Moved only, a pushing client gets them with the new version's analysis, and a
        pulling one pulls after the edit anyway."""
        key = self._run_keys.get(uri)
        if key is None:
            return
        changed = self._run.edited(key, text, lines, changes)
        if not changed.keys:
            return
        session = self._session
        self.generation += 1
        if key in changed.keys:
            if session.features.verify_pushed:
                session.push_apart(uri, version)
            elif key in changed.dropped and not session.features.pull:
                if session.scheduler.snapshot(uri) is not None:
                    session.push(uri)  # now, not after the analysis (which may wait for a save)
        self._changed(changed.keys - {key})

    def closed(self, uri: str) -> None:
        """A file closed."""
        key = self._run_keys.pop(uri, None)
        if key is None:
            return
        # Its run findings again as on disk, pushed as for closed files; in the server the
        # disk is read in a thread, as for a file that changed on disk.
        in_server = _running_loop() is not None
        self._changed(self._run.closed(key, read_disk=not in_server).keys)
        if in_server:
            self.disk_changed(key)


def _read_run(
    folders: Sequence[str], files: report.Signature
) -> tuple[report.Run | None, Mapping[str, Sequence[str] | None]]:
    """The newest run and the lines of the files it names (run in a thread: no state)."""
    run = report.newest_run(folders, files)
    return run, (prefetch(run, read_gently, gentle=True) if run is not None else {})


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop of the server; None in a direct call (a test's)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _drop_in_a_thread(files: dict[str, Any]) -> None:
    """Hands a replaced run's files to a thread that frees them (`let_go`); without an event
    loop (a direct call) they are freed here."""
    loop = _running_loop()
    if loop is not None:
        loop.run_in_executor(None, let_go, files)


def _normal(text: str) -> str:
    """A cell's text as compared with the text that ran: line ends and trailing space aside."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()
