"""Whether two builds say the same thing: every finding, fix recipe, note and problem of
`inplace-lsp check` (the CLI's code path, with the workspace and worker processes) on the
project's own cases, the differential benchmark's programs and the library and
training-code corpora, written to a file by one build and compared with another's.

    python benchmarks/same_findings.py dump OUT [--groups NAME ...] [--differential N]
    python benchmarks/same_findings.py compare BEFORE AFTER [--show K]

A refactoring of the analysis must leave every line of the dump as it was (issue 41, item 6);
`compare` counts, per group, the files and findings that are the same and lists the first
differences, and exits 1 when there is one. To dump an older build, run the script with that
build first on the path: `PYTHONPATH=<worktree of it> python benchmarks/same_findings.py dump`.

Groups: `realworld` (tests/realworld), `cases` (tests/cases), `differential` (N programs of
tests/differential/generator.py with seed 0, and N reshaped ones), each library corpus of
_sources.CORPORA and each training corpus of _sources.TRAINING (cached or downloaded as for the
other benchmarks; a corpus that cannot be had is left out and said so).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import _sources

from inplace_lsp import cli, config
from inplace_lsp.analysis.findings import Finding

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from differential.generator import generate  # noqa: E402

OWN = ("realworld", "cases")


def _plain(finding: Finding) -> str:
    """A finding as text, without its history (the analysis's working notes)."""
    return repr(dataclasses.replace(finding, history=()))


def _files(group: str, differential: int, scratch: Path) -> list[Path]:
    if group in OWN:
        return sorted(p for p in (REPO / "tests" / group).rglob("*.py"))
    if group == "differential":
        out = scratch / "differential"
        out.mkdir()
        paths = []
        for shapes in (False, True):
            for i, program in enumerate(generate(differential, 0, shapes=shapes)):
                path = out / f"{'shaped' if shapes else 'plain'}_{i:04d}.py"
                path.write_text(program.text, encoding="utf-8")
                paths.append(path)
        return paths
    if group in _sources.CORPORA:
        return _sources.corpus_files([group])[group]
    return _sources.training_files([group])[group]


def _lines(group: str, paths: Sequence[Path], root: Path) -> Iterator[str]:
    results = cli.check_files([str(p) for p in paths], config.Settings(), cli.Fixing.REPORT)
    for path, result in zip(paths, results, strict=True):
        head = f"{group}\t{path.relative_to(root)}\t"
        yield head + json.dumps(
            {"checked": result.checked, "notes": result.notes, "fixes": result.fixes}
        )
        for finding in result.findings:
            yield head + _plain(finding)
        for problem in result.problems:
            yield head + "problem " + _plain(problem)


def dump(out: Path, groups: Sequence[str], differential: int) -> int:
    with out.open("w", encoding="utf-8") as sink, tempfile.TemporaryDirectory() as scratch:
        for group in groups:
            try:
                paths = _files(group, differential, Path(scratch))
            except _sources.SourcesUnavailable as exc:
                print(f"{group}: left out, sources unavailable: {exc}")
                continue
            root = Path(os.path.commonpath([p.parent for p in paths])) if paths else REPO
            start = time.perf_counter()
            count = 0
            for line in _lines(group, paths, root):
                sink.write(line.replace("\n", "\\n") + "\n")
                count += 1
            seconds = time.perf_counter() - start
            print(f"{group}: {len(paths)} files, {count} lines, {seconds:.0f} s")
    return 0


def _read(path: Path) -> dict[str, dict[str, list[str]]]:
    groups: dict[str, dict[str, list[str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        group, name, rest = line.split("\t", 2)
        groups.setdefault(group, {}).setdefault(name, []).append(rest)
    return groups


def compare(before_path: Path, after_path: Path, show: int) -> int:
    before, after = _read(before_path), _read(after_path)
    differences: list[str] = []
    print(f"{'group':<22}{'files':>7}{'same':>7}{'findings':>10}{'same':>7}")
    for group in sorted(before.keys() | after.keys()):
        old, new = before.get(group, {}), after.get(group, {})
        names = old.keys() | new.keys()
        same_files = sum(old.get(n) == new.get(n) for n in names)
        # (each file's first line is its header, not a finding)
        count = sum(len(lines) - 1 for lines in old.values())
        same = sum(len(lines) - 1 for name, lines in old.items() if new.get(name) == lines)
        print(f"{group:<22}{len(names):>7}{same_files:>7}{count:>10}{same:>7}")
        for name in sorted(names):
            a, b = old.get(name, []), new.get(name, [])
            if a != b:
                gone = [x for x in a if x not in b]
                came = [x for x in b if x not in a]
                differences.append(
                    f"{group} {name}\n"
                    + "".join(f"  - {x[:300]}\n" for x in gone)
                    + "".join(f"  + {x[:300]}\n" for x in came)
                )
    for text in differences[:show]:
        print(text, end="")
    print(f"{len(differences)} file(s) differ")
    return 1 if differences else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump", help="write this build's findings")
    dumping.add_argument("out", type=Path)
    dumping.add_argument(
        "--groups",
        nargs="+",
        default=[*OWN, "differential", *_sources.CORPORA, *_sources.TRAINING],
    )
    dumping.add_argument(
        "--differential", type=int, default=300, help="programs of each kind (plain, reshaped)"
    )
    comparing = commands.add_parser("compare", help="compare two dumps")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    comparing.add_argument("--show", type=int, default=20, help="differences to list")
    args = parser.parse_args(argv)
    if args.command == "dump":
        return dump(args.out, args.groups, args.differential)
    return compare(args.before, args.after, args.show)


if __name__ == "__main__":
    sys.exit(main())
