"""The analysis over every .py file of torchvision and timm (known-good PyTorch code): no
exception, no syntax error where `ast.parse` accepts the file, and no Error-level finding
beyond an allow-list of bugs proven by running them.

The sources are downloaded once into a cache outside the repository (benchmarks/_sources.py);
without network the tests skip, unless INPLACE_LSP_REQUIRE_REALCODE=1 makes that a failure.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.findings import Finding, Severity

pytestmark = pytest.mark.realcode

REPO = Path(__file__).resolve().parents[1]
REQUIRE_ENV = "INPLACE_LSP_REQUIRE_REALCODE"

# (path inside the wheel, line, code) of Error findings that are real autograd bugs.
# Every entry needs a comment saying how it was proven by running it.
ALLOWED_ERRORS: frozenset[tuple[str, int, str]] = frozenset(
    {
        # Proven by running (torch 2.13 CPU): the same statements, `x = x0.clone();
        # x[:, :4] = conv(x[:, :4]); x.sum().backward()` with nn.Conv2d(4, 4, 3, 1, 1),
        # raise "one of the variables needed for gradient computation has been modified by an
        # inplace operation", also when x0 does not require grad (Conv2d saves its input for
        # the weight's gradient). timm comments this forward "only for inference".
        ("timm/models/fasternet.py", 55, "IPL001"),
    }
)


@dataclass
class RealcodeRun:
    files: int = 0
    errors: dict[tuple[str, int, str], Finding] = field(default_factory=dict)
    crashes: list[str] = field(default_factory=list)
    bad_splits: list[str] = field(default_factory=list)


def _load_sources() -> ModuleType:
    path = REPO / "benchmarks" / "_sources.py"
    spec = importlib.util.spec_from_file_location("inplace_lsp_bench_sources", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def realcode() -> RealcodeRun:
    sources = _load_sources()
    try:
        paths: list[Path] = sources.python_files()
    except sources.SourcesUnavailable as exc:
        reason = (
            f"torchvision/timm sources unavailable: {exc} "
            f"(set {REQUIRE_ENV}=1 to make this a failure)"
        )
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    run = RealcodeRun()
    for path in paths:
        relative = "/".join(path.parts[-len(path.relative_to(_wheel_root(path)).parts) :])
        text = path.read_text(encoding="utf-8")
        run.files += 1
        try:
            result = DocumentAnalysis().update(text)
        except Exception as exc:  # the point of the test: report every file that crashes
            run.crashes.append(f"{relative}: {type(exc).__name__}: {exc}")
            continue
        if result.syntax_errors and _parses(text):
            first = result.syntax_errors[0]
            run.bad_splits.append(f"{relative}:{first.line}: {first.message}")
        for finding in result.findings:
            if finding.severity is Severity.ERROR:
                run.errors[(relative, finding.span.line, finding.code)] = finding
    return run


def _wheel_root(path: Path) -> Path:
    """The `<name>-<version>` cache directory the file was unpacked into."""
    for parent in path.parents:
        if (parent / ".complete").is_file():
            return parent
    return path.parent


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def test_sources_are_there(realcode: RealcodeRun) -> None:
    assert realcode.files > 400, f"only {realcode.files} files: is the download complete?"


def test_no_exception(realcode: RealcodeRun) -> None:
    assert not realcode.crashes, "the analysis raised on:\n" + "\n".join(realcode.crashes)


def test_no_syntax_error_where_the_file_parses(realcode: RealcodeRun) -> None:
    assert not realcode.bad_splits, (
        "syntax errors reported in files that ast.parse accepts (block splitting):\n"
        + "\n".join(realcode.bad_splits)
    )


def test_error_findings_are_the_proven_ones(realcode: RealcodeRun) -> None:
    found = set(realcode.errors)
    unexpected = sorted(found - ALLOWED_ERRORS)
    gone = sorted(ALLOWED_ERRORS - found)
    lines = [
        f"{path}:{line}: {code} {realcode.errors[(path, line, code)].message}"
        for path, line, code in unexpected
    ]
    lines += [
        f"{path}:{line}: {code} allow-listed but no longer found" for path, line, code in gone
    ]
    assert not lines, (
        "Error-level findings on known-good code differ from ALLOWED_ERRORS "
        "(false positives, or an allow-list to update):\n" + "\n".join(lines)
    )


@pytest.mark.torch
def test_fasternet_slicing_forward_fails_backward() -> None:
    """The allow-listed finding, proven: FasterNet's `forward_slicing` pattern (clone, then
    write a convolution of a slice back into that slice) breaks backward, because Conv2d saved
    the slice it read (a view sharing the clone's version counter)."""
    torch = pytest.importorskip("torch")
    conv = torch.nn.Conv2d(4, 4, 3, 1, 1)
    x0 = torch.randn(2, 8, 5, 5)
    x = x0.clone()
    x[:, :4, :, :] = conv(x[:, :4, :, :])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()
