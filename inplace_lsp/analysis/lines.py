"""Lines as the LSP spec and Python's tokenizer count them: a line ends at `\\n`, `\\r\\n` or
`\\r` and nowhere else. `str.splitlines` also breaks at `\\f`, `\\v`, `\\x1c`-`\\x1e`, `\\x85`,
U+2028 and U+2029, which Python source (and every editor's line numbers) treat as ordinary
characters: a form feed in a comment would put everything below it one line off. Every module
that numbers lines (blocks, rules, fixes, conversion, the CLI, verify) splits with these.
"""

from __future__ import annotations

import io
import os
import re
import tokenize

from inplace_lsp import files

LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_WITH_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their line breaks; a final break starts an empty line
    (so `split_lines(text)[n - 1]` is line n of any position in the text)."""
    if "\r" not in text:
        return text.split("\n")  # the common case, several times faster than the regex
    return LINE_BREAK.split(text)


# What str.splitlines breaks at besides \n and \r.
_OTHER_CHARACTERS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def lines_with_ends(text: str) -> list[str]:
    """The lines of `text` with their line breaks ("" gives no line; a text not ending in a
    break ends with a line without one), as str.splitlines(keepends=True) would give them if
    it broke lines where LSP does."""
    # Eight substring searches are several times faster than one regex search of the text.
    if not any(char in text for char in _OTHER_CHARACTERS):
        return text.splitlines(True)  # the common case, in C
    return _LINE_WITH_END.findall(text)


def line_breaks(text: str) -> int:
    """How many line breaks `text` holds (`\r\n` is one)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def line_count(text: str) -> int:
    """How many lines `lines_with_ends(text)` has."""
    if not text:
        return 0
    return line_breaks(text) + (0 if text[-1] in "\r\n" else 1)


def decode_source(data: bytes) -> tuple[str, str]:
    """Python source bytes as Python reads them: the encoding a byte-order mark or a PEP 263
    cookie (`# -*- coding: latin-1 -*-`) names on the first two lines, UTF-8 otherwise.
    Returns the text (without the mark) and the encoding that writes it back as it was
    ("utf-8-sig" where the mark was). Raises SyntaxError for a cookie Python refuses (an
    unknown encoding, a mark with a cookie naming another) and UnicodeDecodeError for bytes
    the encoding cannot decode, as Python does."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        data.decode("utf-8")  # first lines that are not UTF-8: say which byte
        raise
    return data.decode(encoding), encoding


def read_python(path: str | os.PathLike[str], limit: int = 1 << 30) -> str:
    """The text of a Python file as Python reads it (see decode_source); raises OSError
    (files.Refused for a file that is not regular, as a FIFO or /dev/zero, or is larger than
    `limit` bytes), UnicodeDecodeError or SyntaxError."""
    return decode_source(files.read_regular(os.fspath(path), limit))[0]
