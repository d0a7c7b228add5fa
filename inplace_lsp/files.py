"""Reading a file that a repository or a report names, without trusting it: only a regular
file (after symlinks), only inside a folder when one is given, and never more than a limit.
A FIFO, a terminal, `/dev/zero` or `/dev/stdin` (the language server's own input) is refused
without being read, and opening one never blocks."""

from __future__ import annotations

import os
import stat

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class Refused(OSError):
    """The file is not read: not a regular file (`kind` says what it is), larger than the
    limit (`size`: its size, or the limit + 1 when it grew while read), or outside the folder."""

    def __init__(self, message: str, *, kind: str | None = None, size: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.size = size


def inside(path: str, folder: str) -> bool:
    """Whether `path`, its symlinks resolved, lies in `folder` (also resolved)."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def read_regular(path: str, limit: int, folder: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; raises Refused (an
    OSError) for anything else, and OSError when it cannot be opened."""
    if folder is not None and not inside(path, folder):
        raise Refused(f"{path}: outside {folder}")
    # O_NONBLOCK: opening a FIFO without a writer returns at once (and is refused below).
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "special")
            raise Refused(f"{path}: not a regular file ({kind})", kind=kind)
        if info.st_size > limit:
            raise Refused(f"{path}: {info.st_size} bytes, more than {limit}", size=info.st_size)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(descriptor, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while being read
            raise Refused(f"{path}: more than {limit} bytes", size=size)
        return b"".join(chunks)
    finally:
        os.close(descriptor)
