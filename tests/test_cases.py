"""Realistic case files (tests/cases/*.py) checked against torch, the harness and the analyzer.

The expectation comments in each case are the truth established by running it under torch;
the runtime tests below keep them honest, the analyzer test holds the analysis to them.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

try:
    from casefile import Case, discover, outcome_of_error, problems
except ImportError:  # tests/ imported as a package
    from tests.casefile import Case, discover, outcome_of_error, problems

CASES = discover()
_module_ids = itertools.count()


def _ids(case: Case) -> str:
    return case.name


def _import_case(case: Case) -> ModuleType:
    """A fresh module object for the case file (a unique name, so cases never share state)."""
    name = f"_inplace_case_{case.name}_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, case.path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def _outcome_of(run: Callable[[], None]) -> str:
    try:
        run()
    except RuntimeError as exc:
        outcome = outcome_of_error(str(exc))
        if outcome is None:
            raise
        return outcome
    return "ok"


@pytest.fixture
def torch_state() -> Iterator[ModuleType]:
    """torch, with the global anomaly mode restored afterwards (some cases leave it on)."""
    torch = pytest.importorskip("torch")
    anomaly = torch.is_anomaly_enabled()
    try:
        yield torch
    finally:
        torch.autograd.set_detect_anomaly(anomaly)


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_runtime_outcome(case: Case, torch_state: ModuleType) -> None:
    """run() does under torch what the `# outcome:` comment says."""
    module = _import_case(case)
    assert _outcome_of(module.run) == case.outcome


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.filterwarnings("ignore:Error detected in")  # the harness runs under anomaly mode
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_harness_names_both_lines(case: Case, torch_state: ModuleType) -> None:
    """The verify harness reports the outcome, and for an autograd error both ends of it."""
    harness = pytest.importorskip(
        "inplace_lsp.verify.harness",
        reason="inplace_lsp.verify.harness (trace_call) is not importable yet",
    )
    module = _import_case(case)
    result = harness.trace_call(module.run, user_files=[str(case.path)])
    silent = case.silent  # torch raises nothing; the harness sees the `.data` write
    if case.outcome == "refused-error":
        # torch raises at the write itself: the harness reports the error where it was raised.
        (error_line,) = case.errors
        assert result["status"] == "error", result
        raised = [r for r in result["related"] if r["message"] == "raised here"]
        assert [r["line"] for r in raised] == [error_line], result
        return
    assert result["status"] == ("inplace-error" if silent else case.outcome), result
    assert bool(result.get("silent")) == silent, result
    if case.outcome == "leaf-error" and result.get("mutation") is not None:
        # every leaf write is an expected error; torch stops at the first one in file order
        assert result["mutation"]["line"] == min(case.errors), result
    if result["status"] != "inplace-error":
        return
    (error_line,) = case.write_lines
    (saved_line,) = case.saved_by
    assert result["mutation"] is not None, result
    assert result["saved_by"] is not None, result
    assert result["mutation"]["line"] == error_line, result
    assert result["saved_by"]["line"] == saved_line, result


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_analyzer_findings(case: Case) -> None:
    """The analysis (pure, no torch) reports exactly the expected errors, each with its save."""
    from inplace_lsp.analysis.engine import analyze

    findings = analyze(case.path.read_text(encoding="utf-8"), str(case.path))
    shown = "\n".join(
        f"  {f.line}: {f.code} {f.severity.value} {f.message} "
        f"related={[r.span.line for r in f.related]}"
        for f in findings
    )
    errors = {(f.line, f.code) for f in findings if f.severity.value == "error"}
    assert errors == set(case.errors.items()), f"findings:\n{shown}"
    for line, code in case.errors.items():
        for saved_line in case.saved_by_lines(code):
            assert any(
                f.line == line and any(r.span.line == saved_line for r in f.related)
                for f in findings
            ), f"no finding at line {line} relates to the save at line {saved_line}:\n{shown}"
    # A Hint ("checked: safe") is a proof: never on a line torch names breaking backward.
    hinted = {f.line for f in findings if f.severity.value == "hint"}
    assert not hinted & set(case.errors), f"a Hint on a guilty line:\n{shown}"
    for line, code in sorted(case.warnings):
        assert any(
            f.line == line and f.code == code and f.severity.value == "warning" for f in findings
        ), f"expected warning {code} at line {line}:\n{shown}"


def test_case_collection() -> None:
    """The collection is well formed and keeps its mix: a third safe, ten far apart."""
    assert len(CASES) >= 60
    malformed = {case.name: found for case in CASES if (found := problems(case))}
    assert not malformed
    ok = sum(case.outcome == "ok" for case in CASES)
    assert 3 * ok >= len(CASES), f"only {ok} of {len(CASES)} cases are safe"
    assert sum(case.outcome == "inplace-error" for case in CASES) >= 10
    assert sum(case.outcome == "leaf-error" for case in CASES) >= 3
    assert sum(case.outcome == "refused-error" for case in CASES) >= 3
    assert sum(case.far_apart for case in CASES) >= 10
    assert len({case.name.split("_", 1)[0] for case in CASES}) == len(CASES), "duplicate numbers"
    # pytest would collect a case (and its twin, under the same module name) as a test module
    collected = [c.name for c in CASES if c.name.startswith("test_") or c.name.endswith("_test")]
    assert not collected, collected
