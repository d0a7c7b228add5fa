"""The paths of the documents the editor names by URI."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse


def uri_to_path(uri: str) -> str | None:
    """The file-system path of a file: URI (notebook cells and untitled buffers have none)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /C:/x on Windows
        path = path[1:]
    return path


def untitled_path(uri: str, root: Path | None) -> str:
    """Where an untitled buffer's code pretends to live when verify runs it (in the workspace,
    so that its imports of workspace modules resolve); no file is written."""
    name = re.sub(r"\W", "_", unquote(urlparse(uri).path or uri)).strip("_") or "buffer"
    return str((root or Path(tempfile.gettempdir())) / f"_inplace_lsp_untitled_{name}.py")
