"""`inplace-lsp check` on Jupyter notebooks: the code cells as one program, positions per cell
in every format, `--fix` writing the cells back, bad notebooks, discovery, noqa.

The analyzer is the real one here. The notebook's bugs are established by running its cells
under torch, in order, in one namespace (as "Run All" does, going on after a failing cell).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from inplace_lsp import cli, fixes, notebook
from inplace_lsp.analysis.findings import Finding

try:
    from test_cli import run_cli
except ImportError:  # tests/ imported as a package
    from tests.test_cli import run_cli

REPO = Path(__file__).resolve().parents[1]


# Looked up, not imported: importing torch here would only slow the other tests down.
skip_without_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)


def code_cell(source: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"code-{len(source)}",
        "metadata": {},
        "outputs": outputs or [],
        "source": source.splitlines(keepends=True),
    }


def markdown_cell(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": "md", "metadata": {}, "source": [source]}


STREAM = [{"name": "stdout", "output_type": "stream", "text": ["torch 2\n"]}]

# Cell 3 writes into what torch.sigmoid saved in cell 2; cell 5 has its bug inside itself.
CELLS = [
    markdown_cell("# Two in-place bugs"),
    code_cell(
        "%matplotlib inline\n"
        "import torch\n"
        "\n"
        "w = torch.randn(4, 4, requires_grad=True)\n"
        "x = torch.randn(3, 4)\n"
        "h = torch.sigmoid(x @ w)",
        STREAM,
    ),
    code_cell("h.mul_(2)\nh.sum().backward()"),
    markdown_cell("## Second part"),
    code_cell("a = torch.randn(3, requires_grad=True)\nb = a.exp()\nb.add_(1)\nb.sum().backward()"),
]
METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def notebook_text(cells: list[dict[str, Any]], indent: int | None = 1) -> str:
    content = {"cells": cells, "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5}
    # As nbformat writes it: sorted keys, one-space indent, non-ASCII kept, final newline.
    return json.dumps(content, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# Runs each code cell (magics masked) in one namespace, going on after a failing cell, and
# prints the numbers of the cells whose backward() hit the in-place error.
RUN_ALL = """
import json, sys, traceback
from inplace_lsp import notebook
nb = notebook.read_notebook(open(sys.argv[1], encoding="utf-8").read())
namespace, failed = {}, []
for cell in nb.code_cells:
    try:
        exec(compile(notebook.mask_magics(cell.source), f"cell {cell.number}", "exec"), namespace)
    except RuntimeError as exc:
        if "modified by an inplace operation" not in str(exc):
            raise
        failed.append(cell.number)
print(json.dumps(failed))
"""


def cells_failing_under_torch(path: Path) -> list[int]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-c", RUN_ALL, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    failed: list[int] = json.loads(result.stdout)
    return failed


# ---------------------------------------------------------------- findings per cell


def test_notebook_findings_name_their_cells(tmp_path: Path) -> None:
    write(tmp_path / "nb.ipynb", notebook_text(CELLS))
    result = run_cli("check", "nb.ipynb", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == ""
    # Across cells: saved in cell 2, written in cell 3; the message names the other cell.
    assert lines[0].startswith("nb.ipynb:cell 3:1:1: IPL001 [error] torch.sigmoid saved")
    assert "(line 6 of cell 2)" in lines[0]
    assert lines[1].startswith("  nb.ipynb:cell 2:6:5: saved by torch.sigmoid")
    assert lines[2].startswith("  nb.ipynb:cell 3:2:1: ")
    # Inside one cell: the cell's own lines, no "of cell".
    assert lines[3].startswith("nb.ipynb:cell 5:3:1: IPL001 [error] .exp saved")
    assert "(line 2)" in lines[3]
    assert lines[4].startswith("  nb.ipynb:cell 5:2:5: saved by .exp")
    assert lines[-1] == "Found 2 problems (2 errors, 0 warnings) in 1 of 1 file."


@pytest.mark.torch
@skip_without_torch
def test_the_notebook_findings_are_true_under_torch(tmp_path: Path) -> None:
    path = write(tmp_path / "nb.ipynb", notebook_text(CELLS))
    result = run_cli("check", "--format", "json", "nb.ipynb", cwd=tmp_path)
    flagged = sorted({record["cell"] for record in json.loads(result.stdout)})
    assert flagged == cells_failing_under_torch(path) == [3, 5]


def test_json_and_sarif_carry_the_cell(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "nb.ipynb", notebook_text(CELLS))
    code, out, _ = run_main(capsys, "check", "--format", "json", "nb.ipynb")
    first = json.loads(out)[0]
    assert code == 1
    assert (first["path"], first["cell"], first["line"], first["column"]) == ("nb.ipynb", 3, 1, 1)
    assert (first["end_line"], first["end_column"]) == (1, 10)
    saved = first["related"][0]
    assert (saved["cell"], saved["line"], saved["column"]) == (2, 6, 5)

    _, out, _ = run_main(capsys, "check", "--format", "sarif", "nb.ipynb")
    sarif = json.loads(out)["runs"][0]["results"][0]
    region = sarif["locations"][0]["physicalLocation"]["region"]
    assert region == {
        "startLine": 1,
        "startColumn": 1,
        "endLine": 1,
        "endColumn": 10,
        "properties": {"cell": 3},
    }
    related = sarif["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uri"] == "nb.ipynb"
    assert related["region"]["startLine"] == 6 and related["region"]["properties"] == {"cell": 2}

    _, out, _ = run_main(capsys, "check", "--format", "github", "nb.ipynb")
    first_line = out.splitlines()[0]
    # No line=: GitHub would count it in the notebook's JSON.
    assert first_line.startswith(
        "::error file=nb.ipynb,title=IPL001 (cell 3%2C line 1%2C column 1)::"
    )
    assert "%0Anb.ipynb:cell 2:6:5: saved by torch.sigmoid" in first_line


def test_a_cached_notebook_result_reads_back_the_same(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook's result (its cells' layout, the findings' related places, fixes and
    histories) goes through the cache's JSON and comes back equal: the second run analyses
    nothing and prints the same, in every format."""
    from inplace_lsp.analysis import engine

    monkeypatch.setenv("INPLACE_LSP_CACHE_DIR", str(tmp_path / "cache"))
    write(project / "nb.ipynb", notebook_text(CELLS))
    analysed: list[str | None] = []
    real = engine.analyze_document

    def counting(text: str, path: str | None = None, **options: Any) -> Any:
        analysed.append(path)
        return real(text, path, **options)

    monkeypatch.setattr(engine, "analyze_document", counting)
    for format in ("json", "text", "sarif"):
        fresh = run_main(capsys, "check", "--no-cache", "--format", format, "nb.ipynb")
        assert fresh[0] == 1
        run_main(capsys, "check", "--format", format, "nb.ipynb")  # fills the cache
        analysed.clear()
        assert run_main(capsys, "check", "--format", format, "nb.ipynb") == fresh
        assert analysed == []
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1


def test_noqa_in_a_cell(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cells = [*CELLS]
    cells[2] = code_cell("h.mul_(2)  # noqa: IPL001\nh.sum().backward()")
    write(project / "nb.ipynb", notebook_text(cells))
    code, out, _ = run_main(capsys, "check", "nb.ipynb")
    assert code == 1
    assert "cell 3:" not in out and "nb.ipynb:cell 5:3:1: IPL001" in out


# ---------------------------------------------------------------- --fix


@pytest.mark.torch
@skip_without_torch
def test_fix_rewrites_the_cells_and_keeps_the_rest(tmp_path: Path) -> None:
    original = notebook_text(CELLS)
    path = write(tmp_path / "nb.ipynb", original)
    result = run_cli("check", "--fix", "nb.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "Fixed 2 problems.\nAll checks passed: 1 file.\n"
    fixed = path.read_text(encoding="utf-8")
    before, after = json.loads(original), json.loads(fixed)
    assert after["metadata"] == before["metadata"]
    assert [c["cell_type"] for c in after["cells"]] == [c["cell_type"] for c in before["cells"]]
    for number in (1, 2, 4):  # markdown, and the code cell with outputs and a magic: untouched
        assert after["cells"][number - 1] == before["cells"][number - 1]
    assert after["cells"][2]["source"] == ["h = h.mul(2)\n", "h.sum().backward()"]
    assert after["cells"][4]["source"][2] == "b = b.add(1)\n"
    # Only the two changed lines differ: the file keeps nbformat's layout (indent 1).
    changed = [
        (old, new)
        for old, new in zip(original.splitlines(), fixed.splitlines(), strict=True)
        if old != new
    ]
    assert changed == [
        ('    "h.mul_(2)\\n",', '    "h = h.mul(2)\\n",'),
        ('    "b.add_(1)\\n",', '    "b = b.add(1)\\n",'),
    ]
    # The fixed notebook runs: no cell hits the in-place error any more.
    assert cells_failing_under_torch(path) == []
    # A second --fix changes nothing.
    again = run_cli("check", "--fix", "nb.ipynb", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "All checks passed: 1 file.\n")
    assert path.read_text(encoding="utf-8") == fixed


def test_fix_keeps_magics_string_sources_and_two_space_indent(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = [
        {**code_cell(""), "source": "import torch\n%load_ext autoreload\nw = torch.ones(2)\n"},
        {
            **code_cell(""),
            "source": "!ls\nx = torch.randn(3, requires_grad=True)\ny = x.exp()\n"
            "y[0] = 0\ny.sum().backward()",
        },
    ]
    path = write(project / "nb.ipynb", notebook_text(cells, indent=2))
    code, out, _ = run_main(capsys, "check", "--fix", "nb.ipynb")
    assert (code, out) == (0, "Fixed 1 problem.\nAll checks passed: 1 file.\n")
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "cells": [\n    {\n')
    sources = [cell["source"] for cell in json.loads(text)["cells"]]
    assert sources[0] == cells[0]["source"]
    assert sources[1] == (
        "!ls\nx = torch.randn(3, requires_grad=True)\ny = x.exp()\n"
        "y = y.clone()\ny[0] = 0\ny.sum().backward()"
    )


def test_a_program_whose_fix_crossed_a_cell_boundary_is_not_split() -> None:
    nb = notebook.read_notebook(notebook_text([code_cell("a = 1\n"), code_cell("b = 2\n")]))
    program, layout = nb.program("nb.ipynb")
    assert [(c.first_line, c.line_count) for c in layout.cells] == [(1, 1), (3, 1)]
    assert notebook.split_program(nb, program) == {}
    assert notebook.split_program(nb, program.replace("b = 2", "b = 3")) == {2: "b = 3\n"}
    indented = program.replace(notebook.CELL_SEPARATOR, "    " + notebook.CELL_SEPARATOR)
    assert notebook.split_program(nb, indented) is None
    assert notebook.split_program(nb, program.replace(notebook.CELL_SEPARATOR + "\n", "")) is None


def test_an_unchanged_notebook_writes_back_byte_for_byte() -> None:
    for indent in (1, 2, None):
        text = notebook_text(CELLS, indent=indent)
        assert notebook.write_notebook(notebook.read_notebook(text), {}) == text
    escaped = json.dumps({"cells": [markdown_cell("é")], "metadata": {}}, indent=1)
    assert notebook.write_notebook(notebook.read_notebook(escaped), {}) == escaped
    windows = notebook_text(CELLS).replace("\n", "\r\n")  # inside strings: still `\n`
    assert notebook.write_notebook(notebook.read_notebook(windows), {}) == windows


# ---------------------------------------------------------------- bad notebooks, discovery


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("import torch\nx = {'cells': [", "invalid JSON at line 1, column 1"),
        ('["torch"]\n', "the JSON has no `cells` list"),
        ('{"worksheets": [], "torch": 1}\n', "nbformat 3 notebook"),
        ('{"cells": [{"cell_type": "code", "source": 3}], "torch": 1}', "cell 1: `source`"),
        (
            '{"nbformat": 4, "cells": [], "metadata": ' + "[" * 1000 + "]" * 1000 + "}",
            "its JSON is nested too deep to read",
        ),
    ],
    ids=["invalid-json", "no-cells", "nbformat-3", "bad-source", "nested-1000-deep"],
)
def test_a_bad_notebook_is_reported_and_the_others_checked(
    project: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    write(project / "bad.ipynb", content)
    write(project / "nb.ipynb", notebook_text(CELLS))
    code, out, err = run_main(capsys, "check", "bad.ipynb", "nb.ipynb")
    assert (code, err) == (1, "")
    assert out.startswith("bad.ipynb:1:1: IPL902 [error] not checked: ") and message in out
    assert out.endswith("Found 3 problems (3 errors, 0 warnings) in 2 of 2 files.\n")


@pytest.mark.parametrize("content", ["", "\n  \n"], ids=["empty", "blank"])
def test_an_empty_notebook_is_reported(
    project: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    write(project / "empty.ipynb", content)
    code, out, err = run_main(capsys, "check", ".")
    assert (code, err) == (1, "")
    assert out == (
        "empty.ipynb:1:1: IPL902 [error] not checked: an empty file, not a Jupyter notebook\n"
        "Found 1 problem (1 error, 0 warnings) in 1 of 1 file.\n"
    )


def test_check_dot_finds_notebooks_and_skips_checkpoints(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(project / "pyproject.toml", '[tool.inplace-lsp]\nexclude = ["scratch"]\n')
    write(project / "notebooks" / "nb.ipynb", notebook_text(CELLS))
    write(
        project / "notebooks" / ".ipynb_checkpoints" / "nb-checkpoint.ipynb", notebook_text(CELLS)
    )
    write(project / "scratch" / "old.ipynb", notebook_text(CELLS))
    no_torch = [code_cell("import numpy as np\nx = np.zeros(3)\nx += 1")]
    write(project / "plain.ipynb", notebook_text(no_torch))  # skipped like a .py file
    # torch only in an output: the code never uses it, so there is nothing to check
    write(project / "output.ipynb", notebook_text([code_cell("print(1)", STREAM)]))
    r_kernel = json.loads(notebook_text([code_cell("library(torch)")]))
    r_kernel["metadata"] = {"language_info": {"name": "R"}}
    write(project / "r.ipynb", json.dumps(r_kernel))
    code, out, err = run_main(capsys, "check", ".")
    assert (code, err) == (1, "r.ipynb: not a Python notebook (r), skipped\n")
    *findings, summary = [line for line in out.splitlines() if not line.startswith(" ")]
    assert {line.split(":", 1)[0] for line in findings} == {os.path.join("notebooks", "nb.ipynb")}
    assert summary == (
        "Found 2 problems (2 errors, 0 warnings) in 1 of 4 files "
        "(2 without torch; 1 skipped: not a Python notebook)."
    )


def test_a_fix_that_would_cross_cells_is_left_out(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = fixes.apply_safe_fixes
    crossing = notebook.CELL_SEPARATOR

    def fixer(text: str, findings: Sequence[Finding]) -> str:
        """The real fixes; the one in cell 3 also indents the boundary before it, as a
        `with` block over the end of one cell and the start of the next would."""
        fixed = real(text, findings)
        if any(f.message.startswith("torch.sigmoid") for f in findings):
            fixed = fixed.replace(crossing, "    " + crossing, 1)
        return fixed

    monkeypatch.setattr(fixes, "apply_safe_fixes", fixer)
    path = write(project / "nb.ipynb", notebook_text(CELLS))
    code, out, err = run_main(capsys, "check", "--fix", "nb.ipynb")
    assert err == "nb.ipynb: 1 of 2 safe fixes not applied: they would change two cells at once\n"
    assert code == 1 and out.startswith("nb.ipynb:cell 3:1:1: IPL001")
    assert "Fixed 1 problem." in out
    sources = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]
    assert sources[2] == "h.mul_(2)\nh.sum().backward()"  # left as it was
    assert "b = b.add(1)\n" in sources[4]
