"""Cuts the client's byte stream into message bodies (LSP's base protocol: header lines, an
empty line, `Content-Length` bytes of body), and finds its feet again after a frame that
cannot be read.

Header names are case-insensitive and the space after the colon is optional. A frame that
cannot be read (no `Content-Length`, junk, a length too small or too large) costs only
itself: the reader skips to the next `Content-Length` header and goes on. That header cannot
occur inside a JSON body (outside a string it is no JSON token; inside one, the raw line
break that ends it is not allowed), so a body holding one declared more bytes than it had:
the next frame starts there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The header that starts a frame, wherever it is (after junk too), with its line break.
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r?\n", re.IGNORECASE)
_LINE = rb"[A-Za-z0-9_-]+[ \t]*:[^\r\n]*\r?\n"  # any header line
_LINES = re.compile(rb"(?:" + _LINE + rb")*")
_END = re.compile(rb"(?:" + _LINE + rb")*\r?\n")  # the header lines left, and the empty line
# What can still become header lines: whole ones, then the start of one.
_PARTIAL = re.compile(rb"(?:" + _LINE + rb")*(?:[A-Za-z0-9_-]+[ \t]*(?::[^\r\n]*)?)?\r?")
MAX_HEADERS = 8192  # longer "headers" still without their empty line are junk
_KEEP = 64  # bytes kept of a stretch without a header: a header split between two reads


@dataclass(frozen=True)
class Skipped:
    """Bytes that were no readable frame: how many, and why."""

    size: int
    why: str


Event = bytes | Skipped  # a message body, or bytes skipped


class FrameReader:
    """Fed the bytes as they arrive; returns the complete bodies and the stretches skipped,
    in stream order."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None  # of the body being read, once its headers are in
        self._scanned = 0  # how much of that body was searched for a next header
        self._junk = 0  # bytes skipped so far of the stretch being skipped

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events: list[Event] = []
        while self._headers(events) if self._length is None else self._body(events):
            pass
        return events

    def _headers(self, events: list[Event]) -> bool:
        """Reads one frame's headers; False when more bytes are needed."""
        buffer = self._buffer
        found = _CONTENT_LENGTH.search(buffer)
        end: re.Match[bytes] | None = None
        while found is not None:
            end = _END.match(buffer, found.end())
            # Only a header block's own lines are searched: its body may be megabytes.
            limit = end.end() if end is not None else len(buffer)
            later = _CONTENT_LENGTH.search(buffer, found.end(), limit)
            if end is not None and (later is None or later.start() >= end.end()):
                break  # a whole header block
            if later is not None:  # a broken block, or the same header again: the later one
                found = later
                continue
            if len(buffer) - found.end() < MAX_HEADERS and _PARTIAL.fullmatch(buffer, found.end()):
                return False  # the rest of the headers is still coming
            found = None  # a broken block
        if found is None or end is None:
            if len(buffer) < MAX_HEADERS and _PARTIAL.fullmatch(buffer):
                return False  # headers before Content-Length, or a part of it
            if len(buffer) > _KEEP:
                self._skip(len(buffer) - _KEEP)
            return False
        if not _LINES.fullmatch(buffer, 0, found.start()):  # other headers may come first
            self._junk += found.start()
        self._flush(events, "no Content-Length header")
        self._length, self._scanned = int(found.group(1)), 0
        del buffer[: end.end()]
        return True

    def _body(self, events: list[Event]) -> bool:
        """Reads the body whose headers were read; False when more bytes are needed."""
        buffer, length = self._buffer, self._length
        assert length is not None
        start = max(0, self._scanned - _KEEP)
        found = _CONTENT_LENGTH.search(buffer, start, min(len(buffer), length + _KEEP))
        if found is not None and found.start() < length:
            # The next frame starts inside this one: its length was too large.
            self._length = None
            self._skip(found.start())
            self._flush(events, "Content-Length larger than the body")
            return True
        if len(buffer) < length:
            self._scanned = len(buffer)
            return False
        events.append(bytes(buffer[:length]))
        del buffer[:length]
        self._length = None
        return True

    def _skip(self, size: int) -> None:
        self._junk += size
        del self._buffer[:size]

    def _flush(self, events: list[Event], why: str) -> None:
        if self._junk:
            events.append(Skipped(self._junk, why))
            self._junk = 0
