"""The command line: output formats, exit codes, settings, noqa, file walking, bad input.

Format and exit-code tests run `cli.main` in this process with `engine.analyze` replaced by a
fake that reports a finding for each `#! CODE severity` marker; a few smoke tests run
`python -m inplace_lsp` in a subprocess (there the real engine runs).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from generated import with_slow_function
from test_workspace import make_package

from inplace_lsp import cli, config, fixes
from inplace_lsp.analysis import engine
from inplace_lsp.analysis.findings import Finding, FixRecipe, Related, Severity, Span
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.config import Settings

REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"#! (?P<code>IPL\d+) (?P<severity>\w+)(?P<fixable> fixable)?")


def fake_analyze(text: str, path: str | None = None) -> list[Finding]:
    """A finding per `#! CODE severity [fixable]` marker, on the code before the marker,
    with the previous line as the related `saved by` location."""
    findings = []
    for number, line in enumerate(split_lines(text), start=1):
        match = MARKER.search(line)
        if not match:
            continue
        col = len(line) - len(line.lstrip())
        end = len(line[: match.start()].rstrip())
        span = Span(number, col, number, end)
        fix = None
        if match.group("fixable"):
            fix = FixRecipe("out-of-place", "Rewrite out of place", True, span)
        findings.append(
            Finding(
                match.group("code"),
                Severity(match.group("severity")),
                f"{match.group('code')}: h is modified in place",
                span,
                related=(
                    Related(Span(max(1, number - 1), 4, max(1, number - 1), 17), "saved here"),
                ),
                fix=fix,
            )
        )
    return findings


def patch_analyzer(
    monkeypatch: pytest.MonkeyPatch, analyze: Callable[[str, str | None], list[Finding]]
) -> None:
    """Replaces the analyzer the CLI calls with one returning these findings."""

    def analyze_document(
        text: str, path: str | None = None, *, time_limit_s: float | None = None
    ) -> engine.DocumentResult:
        return engine.DocumentResult(analyze(text, path), [], 0)

    monkeypatch.setattr(engine, "analyze_document", analyze_document)

    def fixes_for(
        text: str, findings: Sequence[Finding], budget_s: float | None = None
    ) -> list[fixes.Fix | None]:
        """The fake findings' recipes apply as they say (the real codemods: test_fixes.py)."""
        return [fixes.Fix([], f.fix.safe) if f.fix is not None else None for f in findings]

    monkeypatch.setattr(fixes, "fixes_for", fixes_for)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory (its own pyproject.toml), the current directory."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    patch_analyzer(monkeypatch, fake_analyze)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


MODEL = """import torch
h = torch.sigmoid(x)
h += 1  #! IPL001 error fixable
g = h.exp()
g.add_(1)  #! IPL008 warning
"""


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------- formats


def test_text_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "model.py", MODEL)
    write(project / "clean.py", "import torch\n")
    code, out, err = run_main(capsys, "check")
    assert code == 1
    assert err == ""
    assert out == (
        "model.py:3:1: IPL001 [error] IPL001: h is modified in place\n"
        "  model.py:2:5: saved here\n"
        "model.py:5:1: IPL008 [warning] IPL008: h is modified in place\n"
        "  model.py:4:5: saved here\n"
        "Found 2 problems (1 error, 1 warning) in 1 of 2 files.\n"
    )


def test_text_summary_when_clean(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "clean.py", "import torch\n")
    assert run_main(capsys, "check") == (0, "All checks passed: 1 file.\n", "")


def test_text_summary_counts_hints(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "a.py", "import torch\nx += 1  #! IPL001 hint\ny += 1  #! IPL004 hint\n")
    code, out, _ = run_main(capsys, "check", "--show-hints")
    assert code == 0
    # Hints are writes checked and found safe, not problems (issue 40: they were counted so).
    assert out.endswith("All checks passed: 1 file (2 hints: writes checked and found safe).\n")
    write(project / "b.py", "import torch\nx += 1  #! IPL001 error\n")
    assert run_main(capsys, "check", "--show-hints")[1].endswith(
        "Found 1 problem (1 error, 0 warnings) in 1 of 2 files; 2 hints (checked: safe).\n"
    )
    (project / "b.py").unlink()
    assert run_main(capsys, "check") == (0, "All checks passed: 1 file.\n", "")
    write(project / "pyproject.toml", "[tool.inplace-lsp]\nshow_hints = true\n")
    assert run_main(capsys, "check")[1] == out


def test_json_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "model.py", MODEL)
    code, out, _ = run_main(capsys, "check", "--format", "json", "model.py")
    assert code == 1
    records = json.loads(out)
    assert records[0] == {
        "path": "model.py",
        "cell": None,  # a notebook cell's number; a .py file has none
        "line": 3,
        "column": 1,
        "end_line": 3,
        "end_column": 7,
        "code": "IPL001",
        "severity": "error",
        "message": "IPL001: h is modified in place",
        "related": [
            {"path": "model.py", "cell": None, "line": 2, "column": 5, "message": "saved here"}
        ],
        "fixable": True,
        "fix": {"applicability": "safe", "reason": ""},
    }
    assert [(r["code"], r["severity"], r["fixable"], r["fix"]) for r in records] == [
        ("IPL001", "error", True, {"applicability": "safe", "reason": ""}),
        ("IPL008", "warning", False, None),
    ]


def test_json_columns_count_code_points(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "u.py", "import torch\n    h += 1  #! IPL001 error\n")
    write(project / "bom.py", "\ufeffh += 1  #! IPL001 error  torch\n")
    _, out, _ = run_main(capsys, "check", "--format", "json")
    records = {r["path"]: r for r in json.loads(out)}
    assert (records["u.py"]["column"], records["u.py"]["end_column"]) == (5, 11)
    assert (records["bom.py"]["column"], records["bom.py"]["end_column"]) == (1, 7)


def test_json_related_in_another_file(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(text: str, path: str | None = None) -> list[Finding]:
        saved = Related(Span(7, 8, 7, 20), "saved by torch.tanh here", "models/layers.py")
        return [Finding("IPL001", Severity.ERROR, "m", Span(1, 0, 1, 1), related=(saved,))]

    patch_analyzer(monkeypatch, analyze)
    write(project / "a.py", "import torch\n")
    _, out, _ = run_main(capsys, "check", "--format", "json")
    assert json.loads(out)[0]["related"] == [
        {
            "path": "models/layers.py",
            "cell": None,
            "line": 7,
            "column": 9,
            "message": "saved by torch.tanh here",
        }
    ]


def test_json_empty_is_an_empty_array(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "clean.py", "import torch\n")
    code, out, _ = run_main(capsys, "check", "--format", "json")
    assert (code, json.loads(out)) == (0, [])


def test_github_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "model.py", MODEL)
    write(project / "a,b:c.py", "import torch\nx += 1  #! IPL004 information\n")
    code, out, _ = run_main(capsys, "check", "--format", "github")
    assert code == 1
    assert out.splitlines() == [
        "::notice file=a%2Cb%3Ac.py,line=2,col=1,endLine=2,endColumn=7,title=IPL004::"
        "IPL004: h is modified in place%0Aa,b:c.py:1:5: saved here",
        "::error file=model.py,line=3,col=1,endLine=3,endColumn=7,title=IPL001::"
        "IPL001: h is modified in place%0Amodel.py:2:5: saved here",
        "::warning file=model.py,line=5,col=1,endLine=5,endColumn=10,title=IPL008::"
        "IPL008: h is modified in place%0Amodel.py:4:5: saved here",
    ]


def test_github_escapes_messages(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(text: str, path: str | None = None) -> list[Finding]:
        return [Finding("IPL001", Severity.ERROR, "100% sure\r\nreally", Span(1, 0, 1, 1))]

    patch_analyzer(monkeypatch, analyze)
    write(project / "a.py", "import torch\n")
    _, out, _ = run_main(capsys, "check", "--format", "github")
    properties = "file=a.py,line=1,col=1,endLine=1,endColumn=2,title=IPL001"
    assert out == f"::error {properties}::100%25 sure%0D%0Areally\n"


def test_sarif_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "sub dir" / "model.py", MODEL)
    code, out, _ = run_main(capsys, "check", "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    assert "sarif-2.1.0" in log["$schema"]
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "inplace-lsp"
    assert {"version", "rules"} <= driver.keys()
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert [f"IPL00{i}" for i in range(1, 10)] == rule_ids[:9]
    for rule in driver["rules"]:
        assert {"id", "name", "shortDescription", "help"} <= rule.keys()
        assert rule["shortDescription"]["text"]
        assert rule["help"]["text"].endswith(f"See docs/rules.md#{rule['id'].lower()}.")
    # No web address: this project publishes no page (a URL would lead nowhere).
    assert "http" not in json.dumps(driver).replace(log["$schema"], "")
    assert run["columnKind"] == "unicodeCodePoints"
    first, second = run["results"]
    assert first["ruleId"] == "IPL001"
    assert driver["rules"][first["ruleIndex"]]["id"] == "IPL001"
    assert (first["level"], second["level"]) == ("error", "warning")
    assert first["message"] == {"text": "IPL001: h is modified in place"}
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "sub%20dir/model.py"
    assert location["region"] == {"startLine": 3, "startColumn": 1, "endLine": 3, "endColumn": 7}
    (related,) = first["relatedLocations"]
    assert related["id"] == 0
    assert related["message"] == {"text": "saved here"}
    assert related["physicalLocation"]["region"]["startLine"] == 2


def test_sarif_levels_for_hints_and_unknown_codes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(project / "a.py", "import torch\nx += 1  #! IPL099 hint\n")
    _, out, _ = run_main(capsys, "check", "--format", "sarif", "--show-hints")
    run = json.loads(out)["runs"][0]
    (result,) = run["results"]
    assert result["level"] == "note"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "IPL099"


def test_rule_infos_come_from_the_registry() -> None:
    infos = cli.rule_infos()
    assert [f"IPL00{i}" for i in range(1, 10)] == sorted(infos)[:9]
    assert infos["IPL001"].name == "inplace-on-saved"
    assert sorted(infos)[9:] == ["IPL900", "IPL901", "IPL902"]
    assert all(info.summary and "\n" not in info.summary for info in infos.values())


# ---------------------------------------------------------------- settings, noqa, exit codes


def test_warnings_only_exit_zero(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "a.py", "import torch\nx += 1  #! IPL008 warning\n")
    assert run_main(capsys, "check")[0] == 0


def test_select_and_ignore_flags(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "model.py", MODEL)
    code, out, _ = run_main(capsys, "check", "--ignore", "IPL001", "--format", "json")
    assert (code, [r["code"] for r in json.loads(out)]) == (0, ["IPL008"])
    code, out, _ = run_main(capsys, "check", "--select", "ipl001", "--format", "json")
    assert (code, [r["code"] for r in json.loads(out)]) == (1, ["IPL001"])


def test_bad_select_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "check", "--select", "E501")
    assert code == 2
    assert "usage: inplace-lsp check" in err
    assert "--select" in err


def test_pyproject_settings_apply(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(
        project / "pyproject.toml",
        '[tool.inplace-lsp]\nseverity = { IPL001 = "warning" }\nexclude = ["skipped"]\n',
    )
    write(project / "model.py", MODEL)
    write(project / "skipped" / "bad.py", "import torch\nx += 1  #! IPL002 error\n")
    code, out, _ = run_main(capsys, "check", "--format", "json")
    assert code == 0
    assert [(r["path"], r["severity"]) for r in json.loads(out)] == [
        ("model.py", "warning"),
        ("model.py", "warning"),
    ]


def test_config_flag_and_its_problems(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "settings.toml", 'ignore = ["IPL008"]\nstrict = "maybe"\n')
    write(project / "model.py", MODEL)
    code, out, err = run_main(capsys, "check", "--config", "settings.toml", "--format", "json")
    assert code == 1
    assert [r["code"] for r in json.loads(out)] == ["IPL001"]
    assert err == (
        "warning: settings.toml: setting 'strict': expected true or false, got 'maybe'; "
        "using the default\n"
    )
    code, _, err = run_main(capsys, "check", "--config", "absent.toml")
    assert code == 2 and "absent.toml: no such file" in err


def test_noqa_in_the_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(
        project / "a.py",
        "import torch\n"
        "x += 1  #! IPL001 error  # noqa: IPL001\n"
        "x += 1  #! IPL001 error  # noqa: E501\n"
        "x += 1  #! IPL001 error  # noqa\n",
    )
    code, out, _ = run_main(capsys, "check", "--format", "json")
    assert (code, [r["line"] for r in json.loads(out)]) == (1, [3])


def test_internal_error_in_one_file(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(text: str, path: str | None = None) -> list[Finding]:
        if path == "boom.py":
            raise ValueError("no such op")
        return fake_analyze(text, path)

    patch_analyzer(monkeypatch, analyze)
    write(project / "boom.py", "import torch\n")
    write(project / "model.py", MODEL)
    code, out, err = run_main(capsys, "check")
    assert code == 2
    assert err == "boom.py: internal error: ValueError: no such op (please report)\n"
    assert "model.py:3:1: IPL001" in out
    assert "Traceback" not in out + err


def test_recursion_error_is_reported_per_file(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(text: str, path: str | None = None) -> list[Finding]:
        raise RecursionError("maximum recursion depth exceeded")

    patch_analyzer(monkeypatch, analyze)
    write(project / "deep.py", "import torch\nx = " + "(" * 5000 + ")" * 5000 + "\n")
    code, _, err = run_main(capsys, "check")
    assert code == 2
    assert err == "deep.py: too deeply nested to analyze (RecursionError)\n"


def test_syntax_error_from_the_engine_is_not_internal(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(text: str, path: str | None = None) -> list[Finding]:
        raise SyntaxError("invalid syntax", (path, 2, 5, "x = = 1", 2, 6))

    patch_analyzer(monkeypatch, analyze)
    write(project / "bad.py", "import torch\nx = = 1\n")
    code, out, err = run_main(capsys, "check")
    assert (code, err) == (1, "")
    assert out == (
        "bad.py:2:5: IPL900 [error] syntax error: invalid syntax (the file was not analysed)\n"
        "Found 1 problem (1 error, 0 warnings) in 1 of 1 file.\n"
    )


def test_keyboard_interrupt_exits_130(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def analyze(text: str, path: str | None = None) -> list[Finding]:
        raise KeyboardInterrupt

    patch_analyzer(monkeypatch, analyze)
    write(project / "a.py", "import torch\n")
    assert run_main(capsys, "check") == (130, "", "inplace-lsp: interrupted\n")


def test_a_missing_path_is_an_error_diagnostic_and_the_others_are_checked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(project / "model.py", MODEL)
    code, out, err = run_main(capsys, "check", "nope.py", "model.py")
    assert (code, err) == (1, "")
    assert "model.py:3:1" in out
    assert "nope.py:1:1: IPL901 [error] not checked: no such file or directory\n" in out
    code, out, err = run_main(capsys, "check", "nope.py")
    assert (code, err) == (1, "")
    assert out.endswith("Found 1 problem (1 error, 0 warnings) in 1 of 1 file.\n")


def test_a_directory_that_cannot_be_listed_is_a_diagnostic_and_the_others_are_checked(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory given, or met in the walk, that cannot be listed (EACCES: simulated, as the
    tests may run as root, whom permissions do not stop) is an IPL901 diagnostic; Python's
    PermissionError on entering it is no internal error; the other paths are checked."""
    write(project / "model.py", MODEL)
    write(project / "locked" / "inner.py", MODEL)
    write(project / "pkg" / "ok.py", MODEL)
    write(project / "pkg" / "shut" / "x.py", MODEL)
    real_scandir, real_is_dir = os.scandir, Path.is_dir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.path.normpath(os.fspath(path))) in ("locked", "shut"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def is_dir(self: Path) -> bool:
        if "locked" in self.parts:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "is_dir", is_dir)
    code, out, err = run_main(capsys, "check", "locked", "model.py", "pkg")
    assert code == 1 and "internal error" not in err, err
    denied = "IPL901 [error] not checked: cannot list the directory: Permission denied"
    assert f"locked:1:1: {denied}\n" in out
    assert f"{os.path.join('pkg', 'shut')}:1:1: {denied}\n" in out
    assert "model.py:3:1" in out and f"{os.path.join('pkg', 'ok.py')}:3:1" in out
    assert out.splitlines()[-1].endswith("in 4 of 4 files.")


def test_a_file_name_with_a_line_break_does_not_split_the_text_output(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(project / "a\nb\u2028é.py", MODEL)
    code, out, _ = run_main(capsys, "check")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("a\\nb\\u2028é.py:3:1: IPL001 [error]"), out
    assert len(lines) == 5 and lines[-1].startswith("Found 2 problems"), out


def test_a_file_python_cannot_decode_is_an_error_and_a_coding_line_is_honoured(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "latin.py").write_bytes(b"import torch\n# caf\xe9\n")
    write(project / "clean.py", "import torch\n")
    code, out, err = run_main(capsys, "check")
    assert (code, err) == (1, "")
    assert out == (
        "latin.py:2:1: IPL901 [error] not checked: not UTF-8 text (byte 0xe9 at offset 18) (no "
        "coding line names another encoding; Python cannot read it either)\n"
        "Found 1 problem (1 error, 0 warnings) in 1 of 2 files.\n"
    )
    # With its PEP 263 line Python runs it, and so the file is checked (its bug found).
    (project / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nw += 1  # caf\xe9 #! IPL002 error\n"
    )
    code, out, err = run_main(capsys, "check")
    assert (code, err) == (1, "")
    assert out.startswith("latin.py:3:1: IPL002 [error]")
    assert out.endswith("Found 1 problem (1 error, 0 warnings) in 1 of 2 files.\n")


def test_ten_megabyte_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "pyproject.toml", "[tool.inplace-lsp]\nmax_file_bytes = 20_000_000\n")
    body = "x = torch.zeros(3)\n" * (10 * 1024 * 1024 // 19)
    write(project / "big.py", "import torch\n" + body + "x += 1  #! IPL008 warning\n")
    code, out, _ = run_main(capsys, "check", "--format", "json")
    assert code == 0
    assert [r["line"] for r in json.loads(out)] == [len(body) // 19 + 2]


# ---------------------------------------------------------------- --fix


def test_fix_calls_the_fixer(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def apply_safe_fixes(text: str, findings: list[Finding]) -> str:
        calls.append([f.code for f in findings])
        return text.replace("h += 1  #! IPL001 error fixable", "h = h + 1")

    monkeypatch.setattr(fixes, "apply_safe_fixes", apply_safe_fixes)
    model = write(project / "model.py", MODEL)
    code, out, _ = run_main(capsys, "check", "--fix")
    assert calls == [["IPL001"]]  # only the safe-fixable finding
    assert code == 0
    assert "h = h + 1\n" in model.read_text(encoding="utf-8")
    assert out.splitlines()[-2:] == [
        "Fixed 1 problem.",
        "Found 1 problem (0 errors, 1 warning) in 1 of 1 file.",
    ]


def test_fix_leaves_a_file_saved_while_it_ran_as_the_user_saved_it(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor saves the file while `--fix` computes its fix: the save wins, the fix is not
    written (and not counted), and a message says to run again."""
    saved = MODEL.replace("g = h.exp()", "g = h.exp()  # the user's edit")

    def apply_safe_fixes(text: str, findings: list[Finding]) -> str:
        (project / "model.py").write_text(saved, encoding="utf-8")  # the concurrent save
        return text.replace("h += 1  #! IPL001 error fixable", "h = h + 1")

    monkeypatch.setattr(fixes, "apply_safe_fixes", apply_safe_fixes)
    model = write(project / "model.py", MODEL)
    code, out, err = run_main(capsys, "check", "--fix")
    assert model.read_text(encoding="utf-8") == saved
    assert "model.py: changed since it was read: not fixed (run again)" in err
    assert code == 1 and "Fixed" not in out
    assert not [p for p in project.iterdir() if p.name.endswith(".fix")]  # no temporary left


def test_fix_writes_atomically_keeping_the_mode_and_skips_a_read_only_file(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        fixes,
        "apply_safe_fixes",
        lambda text, found: text.replace("h += 1  #! IPL001 error fixable", "h = h + 1"),
    )
    model = write(project / "model.py", MODEL)
    model.chmod(0o750)
    code, out, _ = run_main(capsys, "check", "--fix", "model.py")
    assert "h = h + 1" in model.read_text(encoding="utf-8") and "Fixed 1 problem." in out
    assert (model.stat().st_mode & 0o777) == 0o750
    write(project / "model.py", MODEL)
    model.chmod(0o444)
    code, out, err = run_main(capsys, "check", "--fix", "model.py")
    assert model.read_text(encoding="utf-8") == MODEL
    assert "model.py: read-only: not fixed" in err and "internal error" not in err
    assert code == 1 and "in 1 of 1 file" in out


def _fix_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        fixes,
        "apply_safe_fixes",
        lambda text, found: text.replace("h += 1  #! IPL001 error fixable", "h = h + 1"),
    )


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown: root only")
@pytest.mark.parametrize("rename", ["kept by the rename", "owner not given: in place"])
def test_fix_keeps_the_owner_group_mode_and_hard_links(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rename: str
) -> None:
    """`check --fix` as root (a container on a mounted checkout) on a user's file: the fixed
    file is still the user's, with its group and mode (it became root's, mode 600 unreadable
    to its owner); a hard link to it sees the fix (the rename split the two names)."""
    _fix_plainly(monkeypatch)
    if rename != "kept by the rename":
        monkeypatch.setattr(os, "fchown", _refuse_fchown)
    nobody = 65534
    model = write(project / "model.py", MODEL)
    os.chown(model, nobody, nobody)
    model.chmod(0o640)
    linked = write(project / "linked.py", MODEL)
    os.chown(linked, nobody, nobody)
    other_name = project / "elsewhere.txt"
    os.link(linked, other_name)
    code, out, err = run_main(capsys, "check", "--fix", "model.py", "linked.py")
    assert "Fixed 2 problems." in out, (out, err)
    info = model.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (nobody, nobody, 0o640)
    assert "h = h + 1" in model.read_text(encoding="utf-8")
    assert other_name.read_text(encoding="utf-8") == linked.read_text(encoding="utf-8")
    assert "h = h + 1" in other_name.read_text(encoding="utf-8")
    assert linked.stat().st_ino == other_name.stat().st_ino and linked.stat().st_nlink == 2
    assert (linked.stat().st_uid, linked.stat().st_gid) == (nobody, nobody)
    assert not [p for p in project.iterdir() if p.name.endswith(".fix")]


def _refuse_fchown(descriptor: int, uid: int, gid: int) -> None:
    raise PermissionError(1, "Operation not permitted")


def test_fix_does_not_write_through_a_symlink_leading_out_of_the_project(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A symlink committed into the project that leads to a file outside it is checked but
    not written through; one leading inside the project is (the link stays a link)."""
    _fix_plainly(monkeypatch)
    outside = write(tmp_path_factory.mktemp("elsewhere") / "shared.py", MODEL)
    (project / "escape.py").symlink_to(outside)
    inside = write(project / "real" / "inner.py", MODEL)
    (project / "inner_link.py").symlink_to(inside)
    code, out, err = run_main(capsys, "check", "--fix", "escape.py", "inner_link.py")
    assert outside.read_text(encoding="utf-8") == MODEL
    assert f"escape.py: leads out of the project (to {outside}): not fixed" in err
    assert "h = h + 1" in inside.read_text(encoding="utf-8")
    assert (project / "inner_link.py").is_symlink()
    assert "Fixed 1 problem." in out


# ---------------------------------------------------------------- many files


def needs_fork() -> None:
    # Under "fork" the workers inherit the monkeypatched engine; other start methods re-import.
    if multiprocessing.get_start_method() != "fork":
        pytest.skip("worker processes only see the fake analyzer under the 'fork' start method")


def test_parallel_matches_sequential(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_fork()
    paths = [
        str(write(project / f"m{i:03}.py", MODEL if i % 3 else "import torch\n")) for i in range(60)
    ]
    settings = Settings()
    sequential = cli.check_files(paths, settings, jobs=1)
    monkeypatch.setattr(cli, "PARALLEL_MIN_FILES", 10)
    parallel = cli.check_files(paths, settings, jobs=2)
    assert [(r.path, r.findings, r.checked) for r in parallel] == [
        (r.path, r.findings, r.checked) for r in sequential
    ]


def test_worker_crash_is_reported(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_fork()
    parent = os.getpid()

    def analyze(text: str, path: str | None = None) -> list[Finding]:
        if path is not None and path.endswith("crash.py") and os.getpid() != parent:
            os._exit(70)  # what a segfault in a C extension looks like to the pool
        return fake_analyze(text, path)

    patch_analyzer(monkeypatch, analyze)
    monkeypatch.setattr(cli, "PARALLEL_MIN_FILES", 10)
    paths = [str(write(project / f"m{i:03}.py", MODEL)) for i in range(30)]
    paths.insert(7, str(write(project / "crash.py", "import torch\n")))
    results = cli.check_files(paths, Settings(), jobs=2)
    crashed = [r for r in results if r.failed]
    assert [r.path for r in crashed] == [str(project / "crash.py")]
    assert "worker process checking it crashed (please report)" in crashed[0].messages[0]
    assert all(len(r.findings) == 2 and r.checked for r in results if not r.failed)


# ---------------------------------------------------------------- subprocess smoke tests


def run_cli_bytes(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """`python -m inplace_lsp` with a timeout (a hang fails the test instead of the suite)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "inplace_lsp", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=timeout,
    )


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = run_cli_bytes(*args, cwd=cwd, timeout=120)
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


@pytest.mark.parametrize(
    "args",
    [(), ("check", "--format", "xml"), ("lint",), ("check", "--select", "nope")],
)
def test_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "usage: inplace-lsp" in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_missing_file_exit_2(tmp_path: Path) -> None:
    # verify itself is tested in tests/test_verify.py
    result = run_cli("verify", "m.py:3", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "m.py: no such file\n"


def test_verify_file_colon_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path / "m.py", "import torch\n")
    result = run_cli("verify", "m.py:abc", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.endswith(
        "error: m.py:abc: expected FILE or FILE:LINE, and 'abc' is not a line number\n"
    )


@pytest.mark.parametrize("address", ["2087", "localhost:", ":2087", "host:port", "h:70000"])
def test_serve_tcp_address_is_checked(tmp_path: Path, address: str) -> None:
    result = run_cli("serve", "--tcp", address, cwd=tmp_path)
    assert result.returncode == 2
    assert "expected HOST:PORT" in result.stderr


@pytest.mark.parametrize("flags", [[], ["--stdio"]], ids=["default", "--stdio"])
def test_serve_stdio_ends_when_the_client_goes(tmp_path: Path, flags: list[str]) -> None:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    result = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "serve", *flags],
        cwd=tmp_path,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0
    assert result.stdout == ""


def test_subprocess_walk_exclude_skip_and_non_utf8(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.inplace-lsp]\nexclude = ["generated"]\n')
    write(tmp_path / "pkg" / "model.py", "import torch\n")
    write(tmp_path / "pkg" / "util.py", "import os\n")  # never mentions torch: skipped
    write(tmp_path / "pkg" / "notes.txt", "torch\n")  # not a .py file
    write(tmp_path / "pkg" / "generated" / "big.py", "import torch\n")
    write(tmp_path / ".venv" / "lib" / "site.py", "import torch\n")
    write(tmp_path / "build" / "lib" / "model.py", "import torch\n")
    (tmp_path / "pkg" / "latin1.py").write_bytes(b"import torch\ns = '\xff'\n")
    result = run_cli("check", cwd=tmp_path)
    assert result.stderr == ""
    assert result.stdout == (
        f"{os.path.join('pkg', 'latin1.py')}:2:1: IPL901 [error] not checked: not UTF-8 text "
        "(byte 0xff at offset 18) (no coding line names another encoding; Python cannot read "
        "it either)\n"
        "Found 1 problem (1 error, 0 warnings) in 1 of 3 files (1 without torch).\n"
    )
    assert result.returncode == 1
    # A file named on the command line is checked even inside an excluded directory.
    result = run_cli("check", "build/lib/model.py", "pkg/util.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        0,
        "All checks passed: 2 files (1 without torch).\n",
    )


def test_every_file_is_accounted_for_and_one_that_was_not_checked_fails_the_run(
    tmp_path: Path,
) -> None:
    """Issue 25's directory: each file that could not be checked is an error diagnostic."""
    write(tmp_path / "good.py", "import torch\nx = torch.zeros(3)\ny = x * 2\n")
    (tmp_path / "cookie.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\n"
        b"w = torch.zeros(3, requires_grad=True)\nw += 1\n"
    )
    (tmp_path / "no_cookie.py").write_bytes(b"import torch\nname = 'caf\xe9'\n")
    write(tmp_path / "syntax.py", "import torch\nx = = 1\nw = torch.zeros(3, requires_grad=True)\n")
    write(tmp_path / "empty.ipynb", "")
    write(tmp_path / "invalid.ipynb", '{"cells": [')
    result = run_cli("check", ".", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert [line.split(" [")[0] for line in lines[:-1]] == [
        "cookie.py:5:1: IPL002",
        "empty.ipynb:1:1: IPL902",
        "invalid.ipynb:1:1: IPL902",
        "no_cookie.py:2:1: IPL901",
        "syntax.py:2:5: IPL900",
    ]
    assert lines[-1] == "Found 5 problems (5 errors, 0 warnings) in 5 of 6 files."
    assert (result.returncode, result.stderr) == (1, "")
    for form in ("json", "github", "sarif"):
        out = run_cli("check", ".", "--format", form, cwd=tmp_path)
        assert out.returncode == 1, form
        for code in ("IPL900", "IPL901", "IPL902"):
            assert code in out.stdout, (form, code)
    sarif = json.loads(run_cli("check", ".", "--format", "sarif", cwd=tmp_path).stdout)
    rules = {rule["id"]: rule["name"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["IPL901"] == "unreadable-file"
    # --select / --ignore do not hide them: a CI job must not pass a file it never read.
    ignored = run_cli("check", ".", "--ignore", "IPL900,IPL901,IPL902", cwd=tmp_path)
    assert ignored.returncode == 1 and "IPL901" in ignored.stdout


def test_fix_writes_a_file_back_in_the_encoding_its_coding_line_names(tmp_path: Path) -> None:
    source = (
        "# -*- coding: latin-1 -*-\nimport torch\n"
        "def f(x):\n"
        "    y = torch.sigmoid(x)  # café\n"
        "    y.mul_(2)\n"
        "    return y\n"
        "f(torch.ones(3, requires_grad=True)).sum().backward()\n"
    )
    (tmp_path / "m.py").write_bytes(source.encode("latin-1"))
    result = run_cli("check", "--fix", "m.py", cwd=tmp_path)
    assert "Fixed 1 problem." in result.stdout, result.stdout + result.stderr
    fixed = (tmp_path / "m.py").read_bytes()
    assert b"caf\xe9" in fixed and b"y = y.mul(2)" in fixed
    assert fixed.decode("latin-1").replace("y = y.mul(2)", "y.mul_(2)") == source


def test_a_related_location_in_another_file_has_the_main_paths_style(tmp_path: Path) -> None:
    make_package(tmp_path)  # pkg/model.py's `g += 1` (line 13) on pkg/layers.py's sigmoid
    relative = run_cli("check", os.path.join("pkg", "model.py"), cwd=tmp_path).stdout
    # The message names the file of the line it cites (line 11 of model.py is another line).
    assert "saved its output for backward (line 11 of layers.py)" in relative
    assert f"\n  {os.path.join('pkg', 'layers.py')}:11:16: saved by torch.sigmoid" in relative
    inside = run_cli("check", "model.py", cwd=tmp_path / "pkg").stdout
    assert "\n  layers.py:11:16: saved by" in inside
    absolute = run_cli("check", str(tmp_path / "pkg" / "model.py"), cwd=tmp_path).stdout
    assert f"\n  {tmp_path / 'pkg' / 'layers.py'}:11:16: saved by" in absolute
    records = json.loads(run_cli("check", "--format", "json", "pkg", cwd=tmp_path).stdout)
    assert [r["path"] for r in records[0]["related"]] == [os.path.join("pkg", "layers.py")]


def test_subprocess_json_on_real_engine(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "import torch\nx = torch.zeros(3)\n")
    result = run_cli("check", "--format", "json", "a.py", cwd=tmp_path)
    assert result.returncode in (0, 1)
    assert isinstance(json.loads(result.stdout), list)


# ---------------------------------------------------------------- issue 10: hostile input


def test_summary_says_what_was_skipped_and_why(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "latin.py").write_bytes(b"import torch\n# caf\xe9\n")
    (project / "latin2.py").write_bytes(b"import torch\n# \xff\n")
    write(project / "big.py", "import torch\n" + "x = 1\n" * 100)
    write(project / "pyproject.toml", "[tool.inplace-lsp]\nmax_file_bytes = 500\n")
    write(project / "model.py", MODEL)
    write(project / "util.py", "import os\n")
    write(project / "r.ipynb", '{"cells": [], "metadata": {"language_info": {"name": "R"}}}')
    code, out, err = run_main(capsys, "check")
    assert code == 1
    assert (
        "big.py:1:1: IPL901 [error] not checked: file too large to analyse (0.0 MB > 0.0 MB, "
        "setting max_file_bytes)\n" in out
    )
    assert out.splitlines()[-1] == (
        "Found 5 problems (4 errors, 1 warning) in 4 of 6 files "
        "(1 without torch; 1 skipped: not a Python notebook)."
    )


def test_a_file_above_max_file_bytes_is_not_read_whole(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project / "pyproject.toml", "[tool.inplace-lsp]\nmax_file_bytes = 1000\n")
    write(project / "big.py", "import torch\n" + "x = torch.zeros(3)\n" * 100)
    analysed: list[str] = []
    patch_analyzer(monkeypatch, lambda text, path: analysed.append(text) or [])
    code, out, err = run_main(capsys, "check", "big.py")
    assert (code, analysed, err) == (1, [], "")
    assert out == (
        "big.py:1:1: IPL901 [error] not checked: file too large to analyse (0.0 MB > 0.0 MB, "
        "setting max_file_bytes)\nFound 1 problem (1 error, 0 warnings) in 1 of 1 file.\n"
    )


def test_nothing_selected_and_every_file_excluded_are_said(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(project / "model.py", MODEL)
    code, out, err = run_main(capsys, "check", "--select", "")
    assert code == 0
    assert err.startswith("warning: nothing selected")
    write(project / "pyproject.toml", '[tool.inplace-lsp]\nexclude = ["*"]\n')
    code, out, err = run_main(capsys, "check")
    assert (code, out) == (0, "All checks passed: 0 files.\n")
    assert (
        err
        == "warning: every file excluded (1 file matched the exclude patterns): nothing to check\n"
    )
    write(project / "pyproject.toml", '[tool.inplace-lsp]\nselect = "IPL008"\n')
    code, out, err = run_main(capsys, "check")
    assert "setting 'select': expected a list like [\"IPL008\"], got a string" in err
    assert "IPL008" in out and "IPL001" not in out  # the string is still read


def _remove_nested(top: Path) -> None:
    """Removes top/d/d/.../d one level at a time (shutil.rmtree, and so pytest's clean-up of
    old temporary directories, recurses once per level and would fail on it)."""
    while (top / "d").exists():
        if (top / "d" / "d").exists():
            (top / "d" / "d").rename(top / "next")
        for leftover in (top / "d").iterdir():
            leftover.unlink()
        (top / "d").rmdir()
        if (top / "next").exists():
            (top / "next").rename(top / "d")


def test_a_directory_nested_a_thousand_deep_is_walked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Built with dir_fd: os.makedirs itself recurses once per level.
    fd = os.open(project, os.O_RDONLY)
    try:
        for _ in range(1000):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("m.py", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as stream:
            stream.write(MODEL)
        os.close(fd)
        write(project / "top.py", MODEL)
        code, out, err = run_main(capsys, "check", "--format", "json")
        assert (code, err) == (1, "")
        paths = [r["path"] for r in json.loads(out)]
        assert paths.count(os.path.join(*["d"] * 1000, "m.py")) == 2
        assert paths.count("top.py") == 2
    finally:
        _remove_nested(project)


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@needs_fifo
def test_fifos_and_device_links_are_skipped_not_read(tmp_path: Path) -> None:
    write(tmp_path / "model.py", "import torch\n")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "sub").mkdir()
    (tmp_path / "linked.py").symlink_to("sub")  # a directory link: not followed, not said
    walked = run_cli_bytes("check", cwd=tmp_path)
    assert walked.stdout.decode().splitlines() == [
        "pipe.py:1:1: IPL901 [error] not checked: not a regular file (a FIFO)",
        "zero.py:1:1: IPL901 [error] not checked: not a regular file (a character device)",
        "Found 2 problems (2 errors, 0 warnings) in 2 of 3 files.",
    ]
    assert (walked.returncode, walked.stderr) == (1, b"")
    named = run_cli_bytes("check", "pipe.py", "zero.py", cwd=tmp_path)
    assert named.stdout.endswith(b"Found 2 problems (2 errors, 0 warnings) in 2 of 2 files.\n")
    verified = run_cli_bytes("verify", "pipe.py", cwd=tmp_path)
    assert (verified.returncode, verified.stderr) == (
        2,
        b"pipe.py: not a regular file (a FIFO)\n",
    )


def test_sarif_escapes_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.py")
    try:
        (tmp_path / name).write_text(
            "import torch\nx = torch.ones(3, requires_grad=True)\nx.add_(1)\n"
        )
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system takes only UTF-8 names")
    result = run_cli_bytes("check", "--format", "sarif", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    (finding,) = log["runs"][0]["results"]
    assert finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "caf%E9.py"
    absolute = run_cli_bytes("check", "--format", "sarif", str(tmp_path / name), cwd=tmp_path)
    uri = json.loads(absolute.stdout)["runs"][0]["results"][0]["locations"][0]
    assert uri["physicalLocation"]["artifactLocation"]["uri"].endswith("/caf%E9.py")


def test_a_function_too_deep_to_analyse_is_said_and_counted(tmp_path: Path) -> None:
    write(
        tmp_path / "deep.py",
        "import torch\n\n\ndef deep(x):\n    h = torch.sigmoid(x)\n    h.mul_(2)\n"
        "    return h" + ".clone()" * 400 + "\n",
    )
    result = run_cli_bytes("check", "deep.py", cwd=tmp_path)
    assert result.stderr.decode().startswith(
        "deep.py:4:1: note: function `deep` is too deep to analyse"
    )
    assert result.stdout == b"All checks passed: 1 file (1 function not analysed).\n"


def test_a_function_over_the_time_limit_is_said_and_counted_and_the_rest_checked(
    tmp_path: Path,
) -> None:
    write(tmp_path / "pyproject.toml", "[tool.inplace-lsp]\nfunction_time_limit_s = 0.1\n")
    write(tmp_path / "gen.py", with_slow_function(600))
    result = run_cli_bytes("check", "--no-cache", "gen.py", cwd=tmp_path)
    assert result.returncode == 0  # (warnings only)
    assert result.stderr.decode() == (
        "gen.py:4:1: note: function `slow` is not analysed: its analysis took longer than "
        "0.1 s (setting function_time_limit_s); the rest of the file is analysed\n"
    )
    out = result.stdout.decode()
    assert [line.split(" [")[0] for line in out.splitlines() if " IPL" in line] == [
        "gen.py:2412:5: IPL001",
        "gen.py:2419:5: IPL001",
    ]
    assert out.endswith("in 1 of 1 file (1 function not analysed).\n")


# ---------------------------------------------------------------- cache

HELPER = """import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.Sigmoid()

    def forward(self, x):
        return self.act(x)
"""
USER = """import torch
from helpers import Gate


def forward(x):
    gate = Gate()
    y = gate(x * 2)
    y += 1
    return y


forward(torch.randn(3, requires_grad=True)).sum().backward()
"""


@pytest.fixture
def cached_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A project whose model imports a helper of another file, a cache directory of its own,
    and the list of files the real analyzer analysed."""
    project = tmp_path / "project"
    write(project / "pyproject.toml", '[project]\nname = "demo"\n')
    write(project / "helpers.py", HELPER)
    write(project / "model.py", USER)
    monkeypatch.chdir(project)
    monkeypatch.setenv("INPLACE_LSP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(engine, "_DEFAULT_WORKSPACE", None)
    analysed: list[str] = []
    real = engine.analyze_document

    def counting(
        text: str, path: str | None = None, *, time_limit_s: float | None = None
    ) -> engine.DocumentResult:
        analysed.append(Path(path or "").name)
        return real(text, path, time_limit_s=time_limit_s)

    monkeypatch.setattr(engine, "analyze_document", counting)
    return tmp_path / "cache", analysed


def test_an_unchanged_file_is_read_from_the_cache(
    cached_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    cache, analysed = cached_project
    first = run_main(capsys, "check", "model.py")
    assert first[0] == 1 and "model.py:8:5: IPL001 [error]" in first[1]
    assert analysed == ["model.py"]
    assert any(cache.rglob("*.json"))
    assert run_main(capsys, "check", "model.py") == first
    assert analysed == ["model.py"]  # the second run analysed nothing


def test_a_changed_import_or_file_or_setting_is_analysed_again(
    cached_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The model's finding rests on helpers.py (its Sigmoid saved the output that model.py
    writes): when it changes, the model's cached result is not used (an Identity saves
    nothing: the finding goes); so for the file itself and for other settings."""
    _, analysed = cached_project
    assert run_main(capsys, "check", "model.py")[0] == 1
    Path("helpers.py").write_text(HELPER.replace("Sigmoid", "Identity"), encoding="utf-8")
    engine._DEFAULT_WORKSPACE = None  # a new run is a new process: files are read again
    code, out, _ = run_main(capsys, "check", "model.py")
    assert code == 0 and "IPL001" not in out and analysed == ["model.py", "model.py"]
    Path("model.py").write_text(USER + "\n", encoding="utf-8")
    run_main(capsys, "check", "model.py")
    run_main(capsys, "check", "--select", "IPL002", "model.py")
    assert len(analysed) == 4


def test_no_cache_neither_reads_nor_writes_it(
    cached_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    cache, analysed = cached_project
    run_main(capsys, "check", "--no-cache", "model.py")
    run_main(capsys, "check", "--no-cache", "model.py")
    assert analysed == ["model.py", "model.py"] and not cache.exists()


def test_a_broken_cache_is_no_error(
    cached_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    cache, analysed = cached_project
    first = run_main(capsys, "check", "model.py")
    entries = list(cache.rglob("*.json"))
    assert entries
    for entry in entries:
        entry.write_bytes(b'{"key": "truncat')
    assert run_main(capsys, "check", "model.py") == first
    assert analysed == ["model.py", "model.py"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs: POSIX")
def test_a_cache_entry_that_is_a_fifo_is_a_miss(
    cached_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """An entry replaced by a FIFO is a miss (opening it to read blocked the run forever)."""
    import threading

    from inplace_lsp.cache import CheckCache

    cache, _ = cached_project
    run_main(capsys, "check", "model.py")
    (entry,) = cache.rglob("*.json")
    entry.unlink()
    os.mkfifo(entry)
    store = CheckCache(repr(config.Settings()), cli._CACHED_KINDS, cache)
    got: list[object] = []
    reader = threading.Thread(
        target=lambda: got.append(store.get("model.py", Path("model.py").read_bytes())),
        daemon=True,
    )
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading the cache blocked"
    assert got == [None]


class _Planted:
    """What an attacker's pickle holds: loading it calls a function of its choosing."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


def test_a_planted_cache_entry_is_a_miss_and_runs_nothing(
    cached_project: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An entry replaced by a pickle whose loading would call a function (as `os.system`
    would), or by JSON naming a function, a class the result is not made of, or fields the
    class does not have, is a miss: the file is analysed again, with the same output, and
    nothing ran."""
    import pickle

    cache, analysed = cached_project
    first = run_main(capsys, "check", "model.py")
    marker = tmp_path / "ran"
    (entry,) = cache.rglob("*.json")
    stored = json.loads(entry.read_text(encoding="utf-8"))
    assert stored["result"]["c"] == "FileResult"

    def planted(result: object) -> bytes:
        return json.dumps({**stored, "result": result}).encode()

    fields = stored["result"]["f"]
    plants = [
        pickle.dumps((stored["key"], [], _Planted(marker))),
        planted({"c": "mkdir", "f": {"path": str(marker)}}),
        planted({"c": "Path", "f": {}}),
        planted({"c": "FileResult", "f": {**fields, "extra": 1}}),
        planted({"e": "FileResult", "v": str(marker)}),
        planted({"c": "FileResult", "f": {**fields, "layout": {"x": [str(marker)]}}}),
    ]
    for plant in plants:
        entry.write_bytes(plant)
        assert run_main(capsys, "check", "model.py") == first
    assert analysed == ["model.py"] * (1 + len(plants))
    assert not marker.exists()
    # What the tampering replaced is written again and read as before.
    assert run_main(capsys, "check", "model.py") == first
    assert len(analysed) == 1 + len(plants)
