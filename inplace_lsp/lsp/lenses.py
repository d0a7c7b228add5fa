"""The code lenses of a session: the verify targets of each document's newest analysed
version, found in the scheduler's worker thread (the session's scheduler callback) and cached
here until the client asks for them (textDocument/codeLens); the verify code action offers the
same."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lsprotocol import types

from inplace_lsp.lsp import verification
from inplace_lsp.lsp.scheduler import Snapshot
from inplace_lsp.lsp.verification import LensTarget
from inplace_lsp.notebook import Layout

if TYPE_CHECKING:
    from inplace_lsp.lsp.publisher import Publisher


class Lenses:
    """The session's code lenses; every method runs on the event loop thread."""

    def __init__(self, session: Publisher) -> None:
        self._session = session
        # The code lenses of the newest snapshot (written by the scheduler's worker threads).
        self._lenses: dict[str, tuple[Snapshot, tuple[LensTarget, ...]]] = {}

    def targets(self, key: str) -> tuple[LensTarget, ...]:
        """The cached lenses of the document `key` (none before its first analysis)."""
        cached = self._lenses.get(key)
        return cached[1] if cached else ()

    def closed(self, key: str) -> None:
        self._lenses.pop(key, None)

    def store(self, snapshot: Snapshot, lenses: tuple[LensTarget, ...] | None) -> None:
        """Caches a version's lenses (None: it does not parse; the previous ones stay) and
        asks the client to fetch them again when they moved."""
        before = self._lenses.get(snapshot.key)
        if lenses is None:
            lenses = before[1] if before is not None else ()
        self._lenses[snapshot.key] = (snapshot, lenses)
        if before is not None and before[1] != lenses and self._session.features.code_lens_refresh:
            self._session.client.refresh_code_lenses()

    async def code_lenses(self, uri: str) -> list[types.CodeLens]:
        """A "Verify forward/backward" lens above each nn.Module subclass and each top-level
        function that calls backward(), in the newest analysed version of a file."""
        session = self._session
        key = session.key_of(uri)
        if key is None:
            return []
        await asyncio.wrap_future(session.scheduler.latest(key))
        snapshot = session.scheduler.snapshot(key)
        if snapshot is None:
            return []
        cached = self._lenses.get(key)
        if cached is None or cached[0] is not snapshot:  # its callback has not run yet
            self.store(snapshot, await asyncio.to_thread(lens_targets, snapshot))
            cached = self._lenses[key]
        targets, lines = in_document(snapshot, uri, cached[1])
        encoding = session.features.encoding
        return [verification.code_lens(uri, t, lines, encoding) for t in targets]


def lens_targets(snapshot: Snapshot) -> tuple[LensTarget, ...] | None:
    """The verify targets of an analysed file or notebook (lines of the program: the joined
    cells); None if it does not parse."""
    if snapshot.targets is None:
        return None
    return verification.from_result(snapshot.targets)


def in_document(
    snapshot: Snapshot, uri: str, targets: Sequence[LensTarget]
) -> tuple[list[LensTarget], Sequence[str]]:
    """The targets that start in the document `uri` (a file, or one cell of a notebook), in
    its own lines, and those lines."""
    layout = snapshot.attachment
    if not isinstance(layout, Layout) or not layout.is_notebook:
        return list(targets), snapshot.lines
    cell = layout.cell(uri)
    if cell is None:
        return [], []
    shift = cell.first_line - 1
    inside = [
        replace(t, line=t.line - shift, end_line=min(t.end_line, shift + cell.line_count) - shift)
        for t in targets
        if cell.holds(t.line)
    ]
    return inside, layout.lines_of(cell, snapshot.lines)
