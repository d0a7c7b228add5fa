"""benchmarks/same_findings.py, the check that a refactoring of the analysis changes no
finding: a dump of this build compares equal to itself, and any changed line of it (a message,
a span, a fix recipe, a file's notes) is a difference it counts and shows."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import same_findings  # noqa: E402


def test_a_dump_equals_itself_and_a_changed_finding_is_a_difference(tmp_path, capsys):
    dump = tmp_path / "before.txt"
    assert same_findings.main(["dump", str(dump), "--groups", "cases"]) == 0
    lines = dump.read_text(encoding="utf-8").splitlines()
    findings = [line for line in lines if "\tFinding(" in line]
    cases = len(list((HERE / "cases").rglob("*.py")))
    assert len(lines) > cases and findings  # a header line per file, and its findings
    assert same_findings.main(["compare", str(dump), str(dump)]) == 0
    assert "0 file(s) differ" in capsys.readouterr().out

    changed = tmp_path / "after.txt"
    first = findings[0]
    group, name, _ = first.split("\t", 2)
    changed.write_text(
        "\n".join(line.replace("line=", "line=1", 1) if line == first else line for line in lines)
        + "\n",
        encoding="utf-8",
    )
    assert same_findings.main(["compare", str(dump), str(changed)]) == 1
    out = capsys.readouterr().out
    assert f"{group} {name}\n  - " in out and "1 file(s) differ" in out
