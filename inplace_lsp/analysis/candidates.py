"""Cheap text tests that decide which code is worth interpreting: code that never writes in
place (nor steps an optimizer, nor calls backward, nor turns anomaly mode on) cannot produce a
finding, and most code of a model zoo is such code.

The tests are conservative (a match in a comment or string counts) and built from `str.find`
scans, which run in C, rather than one big regular expression.
"""

from __future__ import annotations

import re

_AUGMENTED = ("+=", "-=", "*=", "/=", "@=", "%=", "&=", "|=", "^=", "<<=", ">>=")
_WORDS = (".step(", "anomaly", "detach", "backward")
# `x[...] = v` at the start of a statement (matched at a line's start or after a `;`), or
# after the colon of a one-line `if c: x[i] = v` (not an annotation: `x: Dict[str, int] = {}`).
_SUBSCRIPT_STORE = re.compile(
    r"(?:[ \t]*(?:if|elif|else|for|while|with|try)\b[^\n]*:)?"
    r"[ \t]*([^\W\d][\w.]*)[ \t]*(?:\[[^\]\n]*\][ \t]*)+=[^=]"
)
_CONTAINER_STARTS = ("{", "[", "dict(", "OrderedDict(", "defaultdict(", "list(", "collections.")
_COPY_CALL = re.compile(r"\w+\.copy\(\)")
_BRACKET_ASSIGN = re.compile(r"\][ \t]*=[^=]")  # what every subscript store has: a quick test
# `F.leaky_relu(x, 0.2, True)`, `nn.ReLU(True)`: `inplace` passed positionally, last.
_POSITIONAL_TRUE = re.compile(r"[(,][ \t]*True[ \t]*\)")


def _occurrences(text: str, needle: str) -> list[int]:
    found: list[int] = []
    at = text.find(needle)
    while at != -1:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _inplace_call(text: str, in_init: bool) -> bool:
    """`name_(`: an in-place method or function (`x.add_(`, `torch.relu_(`). In __init__ only
    method calls count, and not `nn.init.*_(` (which runs under no_grad)."""
    for at in _occurrences(text, "_("):
        if at == 0 or not text[at - 1].isalnum():
            continue  # `__init__(`, `_(`
        if not in_init:
            return True
        start = at
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        if start > 0 and text[start - 1] == "." and not text[: start - 1].endswith("init"):
            return True
    return False


def _out_argument(text: str) -> bool:
    """`f(x, out=y)`."""
    for at in _occurrences(text, "out"):
        end = at + 3
        while end < len(text) and text[end] in " \t":
            end += 1
        if not text.startswith("=", end) or text.startswith("==", end):
            continue
        start = at - 1
        while start >= 0 and text[start] in " \t\n":
            start -= 1
        if start >= 0 and text[start] in "(,":
            return True
    return False


def _data_attribute(text: str) -> bool:
    return any(
        at + 5 >= len(text) or not (text[at + 5].isalnum() or text[at + 5] == "_")
        for at in _occurrences(text, ".data")
    )


def _self_augmented(text: str) -> bool:
    """`self.w -= ...` (a parameter written in __init__)."""
    for op in _AUGMENTED:
        for at in _occurrences(text, op):
            line_start = text.rfind("\n", 0, at) + 1
            if text[line_start:at].lstrip().startswith("self."):
                return True
    return False


def _subscript_store(text: str) -> bool:
    """`x[...] = v` into something this code does not build as a dict or list."""
    if "]" not in text:
        return False
    # Only the lines that hold `] =` are matched (an unanchored pattern tried at every
    # character of the text costs more than the whole rest of the text tests).
    stores: set[str] = set()
    line_ends: set[int] = set()
    for hit in _BRACKET_ASSIGN.finditer(text):
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.start())
        end = len(text) if end == -1 else end + 1
        if end in line_ends:
            continue
        line_ends.add(end)
        for part in text[start:end].split(";"):
            found = _SUBSCRIPT_STORE.match(part)
            if found is not None:
                stores.add(found.group(1))
    # No name is excluded for what it says (`attn_map[:, 0] = 0` writes a tensor); only a
    # name this code builds as a dict or list is.
    return any(name.startswith("self.") or not _built_as_container(text, name) for name in stores)


def _built_as_container(text: str, name: str) -> bool:
    """`name = {...}` / `name: Dict[...] = dict(...)` / `name = [...]` somewhere in text."""
    for at in _occurrences(text, name):
        if at > 0 and (text[at - 1].isalnum() or text[at - 1] in "_."):
            continue
        rest = text[at + len(name) : text.find("\n", at) if "\n" in text[at:] else len(text)]
        if rest.lstrip().startswith(":"):  # an annotation: the value comes after its `=`
            rest = rest[rest.find("=") :] if "=" in rest else ""
        rest = rest.lstrip()
        if rest.startswith("=") and not rest.startswith("=="):
            value = rest[1:].lstrip()
            if value.startswith(_CONTAINER_STARTS) or _COPY_CALL.match(value):
                return True
    return False


def is_candidate(text: str, *, in_init: bool = False) -> bool:
    """Whether code can produce a finding. In `__init__` modules are built, not called:
    `inplace=True` and `layers += [...]` write nothing there."""
    if any(word in text for word in _WORDS) or _data_attribute(text):
        return True
    if in_init:
        return _inplace_call(text, True) or _self_augmented(text) or _subscript_store(text)
    return (
        "inplace" in text
        or ("True" in text and _POSITIONAL_TRUE.search(text) is not None)
        or any(op in text for op in _AUGMENTED)  # str.find scans: faster than one regex
        or _inplace_call(text, False)
        or _out_argument(text)
        or _subscript_store(text)
    )
