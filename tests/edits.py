"""Edits of a source text for tests of incremental analysis."""

from __future__ import annotations

import ast
import random


def parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


_SWAPS = (
    ("inplace=True", "inplace=False"),
    ("inplace=False", "inplace=True"),
    ("torch.sigmoid", "torch.relu"),
    ("torch.tanh", "torch.exp"),
    ("nn.Module", "object"),
    ("self.", "self._"),
    (" += ", " = 1 + "),
    ("def forward", "def forwarx"),
    ("return ", "return 2 * "),
    ("with torch.no_grad():", "if True:"),
)


def semantic_edits(text: str, rng: random.Random, count: int = 30) -> list[str]:
    """Edits that keep the text valid Python and change what it means: a flag, an op, a
    base class, a name, a line dropped or doubled, a blank line."""
    lines = text.splitlines(keepends=True)
    versions: list[str] = []
    for _ in range(count * 3):
        i = rng.randrange(len(lines))
        new = list(lines)
        action = rng.choice(["swap", "swap", "drop", "dup", "blank"])
        if action == "swap":
            old, replacement = rng.choice(_SWAPS)
            if old not in new[i]:
                continue
            new[i] = new[i].replace(old, replacement, 1)
        elif action == "drop":
            del new[i]
        elif action == "dup":
            new.insert(i, new[i])
        else:
            new.insert(i, "\n")
        version = "".join(new)
        if not parses(version):
            continue
        lines = new
        versions.append(version)
        if len(versions) == count:
            break
    return versions
