"""Checks that a release tag names the version everything carries: the wheel
(`inplace_lsp.__version__`), the VS Code extension (vscode-client/package.json and its lock)
and the newest release section of CHANGELOG.md. The release workflow runs it first.

    python scripts/release_version.py v0.1.0     # exit 0, or 1 with what differs
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def versions() -> dict[str, str | None]:
    """Each place that states the version, and what it states."""
    init = (REPO / "inplace_lsp" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', init, re.MULTILINE)
    client = REPO / "vscode-client"
    package = json.loads((client / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((client / "package-lock.json").read_text(encoding="utf-8"))
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.search(r"^## (\d+\.\d+\.\d+\S*)", changelog, re.MULTILINE)
    return {
        "inplace_lsp/__init__.py": found.group(1) if found else None,
        "vscode-client/package.json": package.get("version"),
        "vscode-client/package-lock.json": lock.get("version"),
        "CHANGELOG.md (newest release)": released.group(1) if released else None,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].startswith("v"):
        print("usage: release_version.py vX.Y.Z", file=sys.stderr)
        return 2
    wanted = args[0][1:]
    wrong = {where: said for where, said in versions().items() if said != wanted}
    for where, said in wrong.items():
        print(f"{where} says {said}, the tag {args[0]}", file=sys.stderr)
    if not wrong:
        print(f"{args[0]}: every version is {wanted}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
