"""Settings: TOML and wire conversion, invalid values, merge precedence, apply, noqa."""

from __future__ import annotations

import os
from pathlib import Path, PurePath
from typing import Any

import pytest

from inplace_lsp import config
from inplace_lsp.analysis.findings import Finding, Severity, Span
from inplace_lsp.analysis.noqa import suppressed
from inplace_lsp.config import Settings, VerifySettings, apply, from_wire, merge


def finding(code: str, severity: Severity = Severity.ERROR, line: int = 1) -> Finding:
    return Finding(code, severity, f"{code} message", Span(line, 0, line, 5))


# ---------------------------------------------------------------- conversion


def test_defaults() -> None:
    settings = Settings()
    assert settings.select == ("IPL",)
    assert settings.ignore == ()
    assert dict(settings.severity) == {}
    assert settings.strict is False
    assert settings.run == "onType"
    assert settings.verify == VerifySettings("auto", 120.0, None, ())
    assert settings.is_excluded(PurePath(".venv"))
    assert hash(settings) == hash(Settings())  # usable as a cache key


WIRE = {
    "select": ["IPL00"],
    "ignore": ["IPL003"],
    "severity": {"IPL003": "warning", "IPL008": "Hint"},
    "strict": True,
    "exclude": ["tests/cases/*"],
    "run": "onSave",
    "verify": {
        "device": "cuda",
        "timeoutS": 30,
        "python": "/usr/bin/python3",
        "launcher": ["srun", "--gres=gpu:1"],
    },
}
EXPECTED = Settings(
    select=("IPL00",),
    ignore=("IPL003",),
    severity={"IPL003": Severity.WARNING, "IPL008": Severity.HINT},
    strict=True,
    exclude=("tests/cases/*",),
    run="onSave",
    verify=VerifySettings("cuda", 30.0, "/usr/bin/python3", ("srun", "--gres=gpu:1")),
)


def test_from_wire_camel_case() -> None:
    settings, problems = from_wire(WIRE)
    assert problems == []
    assert settings == EXPECTED


def test_toml_snake_and_kebab_keys_read_the_same(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        """
[project]
name = "demo"

[tool.inplace-lsp]
select = ["IPL00"]
ignore = ["IPL003"]
severity = { IPL003 = "warning", IPL008 = "Hint" }
strict = true
exclude = ["tests/cases/*"]
run = "on-save"

[tool.inplace-lsp.verify]
device = "cuda"
timeout-s = 30
python = "/usr/bin/python3"
launcher = "srun --gres=gpu:1"
""",
        encoding="utf-8",
    )
    settings, problems = config.load_settings(pyproject)
    assert problems == []
    assert settings == EXPECTED
    assert settings.explicit == {
        "select",
        "ignore",
        "severity",
        "strict",
        "exclude",
        "run",
        "verify",
    }
    assert settings.verify.explicit == {"device", "timeout_s", "python", "launcher"}


def test_codes_are_normalised() -> None:
    settings, problems = from_wire({"select": "ipl001, IPL003,", "ignore": [" ipl0 "]})
    assert problems == []
    assert settings.select == ("IPL001", "IPL003")
    assert settings.ignore == ("IPL0",)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"select": ["E501"]}, "'E501' is not a code"),
        ({"select": 3}, "expected a list of codes"),
        ({"ignore": [None]}, "None is not a code"),
        ({"severity": {"IPL003": "fatal"}}, "IPL003: expected one of error, warning"),
        ({"severity": {"XYZ": "error"}}, "'XYZ' is not a code"),
        ({"severity": "error"}, "expected a table"),
        ({"strict": "yes"}, "expected true or false"),
        ({"exclude": [1]}, "expected a list of glob patterns"),
        ({"run": "always"}, "expected one of onType, onSave"),
        ({"verify": {"device": "tpu"}}, "'verify.device': expected one of auto, cuda, cpu"),
        ({"verify": {"timeoutS": -1}}, "'verify.timeoutS': expected a positive number"),
        ({"verify": {"timeout_s": True}}, "expected a positive number"),
        ({"verify": {"python": 3}}, "expected a path to a Python interpreter"),
        ({"verify": {"launcher": [1, 2]}}, "expected a command prefix"),
        ({"verify": {"launcher": "srun 'unclosed"}}, "cannot split"),
        ({"verify": "cuda"}, "'verify': expected a table"),
    ],
)
def test_invalid_values_become_problems_and_defaults(
    options: dict[str, Any], fragment: str
) -> None:
    settings, problems = from_wire(options)
    assert len(problems) == 1, problems
    assert fragment in problems[0]
    assert "using the default" in problems[0]
    assert settings == Settings()


def test_one_invalid_value_keeps_the_valid_ones() -> None:
    settings, problems = from_wire({"strict": 1, "ignore": ["IPL008"], "verify": {"device": "x"}})
    assert len(problems) == 2
    assert settings.ignore == ("IPL008",)
    assert settings.strict is False
    assert settings.verify.device == "auto"


def test_unknown_keys_are_reported_with_the_users_spelling() -> None:
    settings, problems = from_wire({"selectt": ["IPL001"], "verify": {"gpuCount": 2}})
    assert problems == [
        "unknown setting 'selectt', ignored",
        "unknown setting 'verify.gpuCount', ignored",
    ]
    assert settings == Settings()


@pytest.mark.parametrize("options", [None, {}, [1, 2], "select"])
def test_non_table_options_never_raise(options: Any) -> None:
    settings, problems = from_wire(options)
    assert settings == Settings()
    assert len(problems) == (1 if isinstance(options, list | str) else 0)


def test_python_empty_string_means_unset() -> None:
    settings, problems = from_wire({"verify": {"python": ""}})
    assert problems == []
    assert settings.verify.python is None


# ---------------------------------------------------------------- files


def test_load_settings_problems_name_the_file(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.inplace-lsp]\nstrict = "no"\n', encoding="utf-8")
    settings, problems = config.load_settings(pyproject)
    assert settings == Settings()
    assert problems == [
        f"{pyproject}: setting 'strict': expected true or false, got 'no'; using the default"
    ]


def test_pyproject_without_our_table_is_defaults(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert config.load_settings(pyproject) == (Settings(), [])


def test_invalid_toml_and_missing_file_are_problems(tmp_path: Path) -> None:
    broken = tmp_path / "pyproject.toml"
    broken.write_text("[tool.inplace-lsp\nselect = [", encoding="utf-8")
    settings, problems = config.load_settings(broken)
    assert settings == Settings()
    assert len(problems) == 1 and "invalid TOML" in problems[0]
    settings, problems = config.load_settings(tmp_path / "absent.toml")
    assert settings == Settings()
    assert len(problems) == 1 and "cannot read" in problems[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs: POSIX")
def test_a_settings_file_that_is_a_fifo_or_huge_is_not_read(tmp_path: Path) -> None:
    """A settings file a repository commits as a FIFO, or as a link to a large file, is not
    read (a FIFO blocked the read forever; a 2 GB log was read whole): a warning, and the
    defaults."""
    import threading

    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.log"
    with open(big, "wb") as stream:
        stream.truncate(config.MAX_SETTINGS_BYTES + 1)  # sparse: no disk used
    linked = tmp_path / "linked.toml"
    linked.symlink_to(big)
    said: dict[str, tuple[Settings, list[str]]] = {}

    def load() -> None:
        for path in (fifo, linked):
            said[path.name] = config.load_settings(path)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert said["fifo.toml"] == (
        Settings(),
        [f"{fifo}: cannot read: not a regular file (a FIFO); using defaults"],
    )
    settings, problems = said["linked.toml"]
    assert settings == Settings() and len(problems) == 1
    assert problems[0].startswith(f"{linked}: cannot read: {config.MAX_SETTINGS_BYTES + 1} bytes")


def test_table_must_be_a_table(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool]\ninplace-lsp = "strict"\n', encoding="utf-8")
    settings, problems = config.load_settings(pyproject)
    assert settings == Settings()
    assert len(problems) == 1 and "must be a table" in problems[0]


def test_standalone_settings_file(tmp_path: Path) -> None:
    own = tmp_path / "inplace-lsp.toml"
    own.write_text('ignore = ["IPL004"]\n', encoding="utf-8")
    settings, problems = config.load_settings(own)
    assert problems == []
    assert settings.ignore == ("IPL004",)


def test_find_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.inplace-lsp]\nstrict = true\n", encoding="utf-8"
    )
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "pyproject.toml").write_text('[project]\nname = "pkg"\n', encoding="utf-8")
    module = package / "sub" / "model.py"
    module.write_text("import torch\n", encoding="utf-8")
    # The nearest file that configures us wins over a nearer one that does not.
    assert config.find_pyproject(module) == tmp_path / "pyproject.toml"
    assert config.find_pyproject(package / "sub") == tmp_path / "pyproject.toml"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "top"\n', encoding="utf-8")
    # None configures us: the nearest pyproject.toml.
    assert config.find_pyproject(module) == package / "pyproject.toml"


def test_find_pyproject_skips_broken_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.inplace-lsp]\n", encoding="utf-8")
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "pyproject.toml").write_text("[[[", encoding="utf-8")
    assert config.find_pyproject(tmp_path / "inner") == tmp_path / "pyproject.toml"


# ---------------------------------------------------------------- merge


def test_merge_project_wins_where_it_set_something() -> None:
    editor, _ = from_wire(
        {"strict": True, "ignore": ["IPL008"], "verify": {"device": "cpu", "timeoutS": 10}}
    )
    project, _ = from_wire({"ignore": ["IPL004"], "verify": {"device": "cuda"}})
    merged = merge(editor, project)
    assert merged.ignore == ("IPL004",)  # set by both: the project's
    assert merged.strict is True  # set by the editor only
    assert merged.verify.device == "cuda"
    assert merged.verify.timeout_s == 10.0
    assert merged.select == ("IPL",)  # set by neither


def test_merge_editor_wins_when_asked() -> None:
    editor, _ = from_wire({"ignore": ["IPL008"]})
    project, _ = from_wire({"ignore": ["IPL004"], "strict": True})
    merged = merge(editor, project, project_wins=False)
    assert merged.ignore == ("IPL008",)
    assert merged.strict is True


def test_merge_severity_overrides_combine_per_code() -> None:
    editor, _ = from_wire({"severity": {"IPL003": "hint", "IPL004": "error"}})
    project, _ = from_wire({"severity": {"IPL003": "warning"}})
    merged = merge(editor, project)
    assert dict(merged.severity) == {"IPL003": Severity.WARNING, "IPL004": Severity.ERROR}


def test_merge_of_defaults_is_defaults() -> None:
    assert merge(Settings(), Settings()) == Settings()


# ---------------------------------------------------------------- apply


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


ALL = [finding(f"IPL00{i}") for i in range(1, 10)]
LINES = ["x += 1"]


@pytest.mark.parametrize(
    ("select", "ignore", "expected"),
    [
        (("IPL",), (), [f"IPL00{i}" for i in range(1, 10)]),
        (("IPL001", "IPL003"), (), ["IPL001", "IPL003"]),
        (("IPL",), ("IPL003", "IPL00"), []),
        (("IPL", "IPL001"), ("IPL00",), ["IPL001"]),  # the more specific select wins
        (("IPL001",), ("IPL001",), []),  # a tie: ignore wins
        ((), (), []),
    ],
)
def test_select_and_ignore(
    select: tuple[str, ...], ignore: tuple[str, ...], expected: list[str]
) -> None:
    assert codes(apply(ALL, Settings(select=select, ignore=ignore), LINES)) == expected


def test_severity_override_by_code_or_prefix() -> None:
    settings = Settings(severity={"IPL00": Severity.INFORMATION, "IPL003": Severity.WARNING})
    result = apply([finding("IPL001"), finding("IPL003")], settings, LINES)
    assert [f.severity for f in result] == [Severity.INFORMATION, Severity.WARNING]


def test_strict_raises_hints_to_warnings() -> None:
    hint = finding("IPL001", Severity.HINT)
    assert apply([hint], Settings(), LINES)[0].severity is Severity.HINT
    assert apply([hint], Settings(strict=True), LINES)[0].severity is Severity.WARNING
    # An explicit override is the user's last word, strict or not.
    explicit = Settings(strict=True, severity={"IPL001": Severity.HINT})
    assert apply([hint], explicit, LINES)[0].severity is Severity.HINT


def test_apply_keeps_unchanged_findings_identical() -> None:
    original = finding("IPL001")
    assert apply([original], Settings(), LINES)[0] is original


def test_apply_noqa_on_the_findings_first_line() -> None:
    lines = ["h = torch.sigmoid(x)", "h += 1  # noqa: IPL001", "h.add_(1)"]
    findings = [finding("IPL001", line=2), finding("IPL008", line=2), finding("IPL001", line=3)]
    kept = apply(findings, Settings(), lines)
    assert [(f.code, f.line) for f in kept] == [("IPL008", 2), ("IPL001", 3)]


def test_apply_tolerates_lines_out_of_range() -> None:
    assert codes(apply([finding("IPL001", line=99)], Settings(), LINES)) == ["IPL001"]


# ---------------------------------------------------------------- noqa


@pytest.mark.parametrize(
    ("line", "code", "expected"),
    [
        ("h += 1", "IPL001", False),
        ("h += 1  # noqa", "IPL001", True),
        ("h += 1  #noqa", "IPL001", True),
        ("h += 1  # NOQA", "IPL001", True),
        ("h += 1  # noqa because sigmoid is not in the graph here", "IPL001", True),
        ("h += 1  # noqa:", "IPL001", True),
        ("h += 1  # noqa: IPL001", "IPL001", True),
        ("h += 1  # noqa:IPL001", "IPL001", True),
        ("h += 1  # noqa: ipl001", "IPL001", True),
        ("h += 1  # noqa: IPL001,IPL003", "IPL003", True),
        ("h += 1  # noqa: IPL001, IPL003", "IPL003", True),
        ("h += 1  # noqa: IPL001 IPL003", "IPL003", True),
        ("h += 1  # noqa: IPL001", "IPL003", False),
        ("h += 1  # noqa: IPL00", "IPL003", True),  # a prefix, as flake8 reads it
        ("h += 1  # noqa: E501", "IPL001", False),
        ("h += 1  # noqa: E501,W291", "IPL001", False),
        ("h += 1  # type: ignore  # noqa: IPL001", "IPL001", True),
        ("h += 1  # noqa: E501 trailing words IPL001", "IPL001", False),
        ("h += 1  # noqa : IPL001", "IPL001", True),
    ],
)
def test_noqa(line: str, code: str, expected: bool) -> None:
    assert suppressed(line, code) is expected


# ---------------------------------------------------------------- exclude


@pytest.mark.parametrize(
    ("path", "patterns", "expected"),
    [
        ("src/model.py", (), False),
        ("venv", (), True),
        ("a/b/node_modules", (), True),
        ("pkg.egg-info", (), True),
        ("src/model_pb2.py", ("*_pb2.py",), True),
        ("tests/cases", ("tests/cases",), True),
        ("tests/cases/x.py", ("tests/cases/*",), True),
        ("other/tests/cases/x.py", ("tests/cases/*",), False),  # slash patterns are anchored
        ("tests/cases", ("./tests/cases/",), True),
        ("generated", ("generated",), True),
    ],
)
def test_is_excluded(path: str, patterns: tuple[str, ...], expected: bool) -> None:
    assert Settings(exclude=patterns).is_excluded(PurePath(path)) is expected


# ---------------------------------------------------------------- issue 10: limits, lists


def test_max_file_bytes_default_and_spellings(tmp_path: Path) -> None:
    assert Settings().max_file_bytes == 2_000_000
    assert from_wire({"maxFileBytes": 5000}) == (Settings(max_file_bytes=5000), [])
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.inplace-lsp]\nmax-file-bytes = 10_000_000\n", encoding="utf-8")
    assert config.load_settings(pyproject)[0].max_file_bytes == 10_000_000


@pytest.mark.parametrize("value", [0, -1, "2MB", True, 1.5, None])
def test_max_file_bytes_must_be_a_positive_integer(value: object) -> None:
    settings, problems = from_wire({"maxFileBytes": value})
    assert settings.max_file_bytes == 2_000_000
    assert len(problems) == 1
    assert "'maxFileBytes': expected a positive number of bytes" in problems[0]


def test_a_string_where_the_file_wants_a_list_is_read_but_said(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[tool.inplace-lsp]\nselect = "IPL001,IPL003"\nexclude = "gen"\nignore = ["IPL008"]\n',
        encoding="utf-8",
    )
    settings, problems = config.load_settings(pyproject)
    assert (settings.select, settings.exclude, settings.ignore) == (
        ("IPL001", "IPL003"),
        ("gen",),
        ("IPL008",),
    )
    assert problems == [
        f'{pyproject}: setting \'select\': expected a list like ["IPL001", "IPL003"], got '
        "a string; read as comma-separated codes",
        f"{pyproject}: setting 'exclude': expected a list like [\"gen\"], got a string; "
        "read as one pattern",
    ]
    # The command line's --select takes comma-separated text: no warning there.
    assert from_wire({"select": "IPL001,IPL003"})[1] == []
