"""Every rule's VALID and INVALID examples run through the analyzer, the rule registry is well
formed (unique codes and names, documented), and docs/rules.md matches the classes.

Pure: no torch. Whether the examples really fail under torch is the `torch` layer's business;
here they pin what the analyzer reports.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Finding, Severity
from inplace_lsp.analysis.rules import RULES
from inplace_lsp.analysis.rules.base import Invalid, Rule

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO / "scripts" / "gen_rules_doc.py"
REPORTED = (Severity.ERROR, Severity.WARNING)

VALID_CASES = [
    pytest.param(rule, code, id=f"{rule.CODE}-valid-{i}")
    for rule in RULES
    for i, code in enumerate(rule.VALID)
]
INVALID_CASES = [
    pytest.param(rule, example, id=f"{rule.CODE}-invalid-{i}")
    for rule in RULES
    for i, example in enumerate(rule.INVALID)
]


def _describe(findings: list[Finding]) -> str:
    if not findings:
        return "  (no findings)"
    return "\n".join(
        f"  {f.span.line}:{f.span.col} {f.code} {f.severity.value}: {f.message}" for f in findings
    )


def _numbered(code: str) -> str:
    return "\n".join(f"  {n:3} | {line}" for n, line in enumerate(code.splitlines(), start=1))


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_rules_doc", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("rule", "code"), VALID_CASES)
def test_valid_example_has_no_finding(rule: type[Rule], code: str) -> None:
    findings = analyze(code, "<valid example>")
    reported = [f for f in findings if f.code == rule.CODE and f.severity in REPORTED]
    assert not reported, (
        f"{rule.CODE} VALID example is reported:\n{_numbered(code)}\n"
        f"analyzer output:\n{_describe(findings)}"
    )


@pytest.mark.parametrize(("rule", "example"), INVALID_CASES)
def test_invalid_example_is_found(rule: type[Rule], example: Invalid) -> None:
    """Exactly one finding of the rule's code, on the example's line, at its default severity."""
    findings = analyze(example.code, "<invalid example>")
    found = [(f.span.line, f.severity) for f in findings if f.code == rule.CODE]
    assert found == [(example.line, rule.DEFAULT_SEVERITY)], (
        f"{rule.CODE} INVALID example is not reported at line {example.line} as "
        f"{rule.DEFAULT_SEVERITY.value}:\n{_numbered(example.code)}\n"
        f"analyzer output:\n{_describe(findings)}"
    )


def test_every_rule_has_examples_of_both_kinds() -> None:
    missing = [rule.CODE for rule in RULES if not rule.VALID or not rule.INVALID]
    assert not missing, f"rules without a VALID or an INVALID example: {missing}"


def test_codes_are_unique_and_well_formed() -> None:
    codes = [rule.CODE for rule in RULES]
    assert len(codes) == len(set(codes)), f"duplicate codes: {codes}"
    bad = [code for code in codes if not re.fullmatch(r"IPL\d{3}", code)]
    assert not bad, f"codes not of the form IPL000: {bad}"


def test_names_are_unique_kebab_case() -> None:
    names = [rule.NAME for rule in RULES]
    assert len(names) == len(set(names)), f"duplicate names: {names}"
    bad = [name for name in names if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name)]
    assert not bad, f"names not in kebab-case: {bad}"


def test_every_rule_has_a_docstring() -> None:
    undocumented = [rule.CODE for rule in RULES if not (rule.__doc__ or "").strip()]
    assert not undocumented, f"rules without a docstring (their user docs): {undocumented}"
    # The docstring must be the rule's own, not inherited from Rule.
    inherited = [rule.CODE for rule in RULES if rule.__doc__ == Rule.__doc__]
    assert not inherited, f"rules whose docstring is the base class's: {inherited}"


def test_rules_doc_is_up_to_date() -> None:
    message = _load_generator().stale_message()
    assert message is None, message


def test_messages_spell_the_op_as_the_code_does() -> None:
    """`F.softmax`, not `torch.nn.functional.softmax`; an alias also names what it stands for."""
    text = (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.nn.functional import softmax as sm\n"
        "def f(x):\n"
        "    a = F.softmax(x, dim=-1)\n"
        "    a += 1\n"
        "    b = sm(x, dim=-1)\n"
        "    b += 1\n"
        "    c = torch.sigmoid(x)\n"
        "    c += 1\n"
        "    return a + b + c\n"
    )
    by_line = {f.line: f for f in analyze(text) if f.code == "IPL001"}
    assert by_line[6].message.startswith("F.softmax saved its output")
    assert by_line[6].related[0].message.startswith("saved by F.softmax here")
    assert by_line[8].message.startswith("sm (torch.nn.functional.softmax) saved its output")
    assert by_line[10].message.startswith("torch.sigmoid saved its output")


def test_the_accumulation_message_names_valid_python() -> None:
    """IPL004 says what to accumulate instead: `.item()` of the whole expression, valid
    Python (`(loss ** 2).item()`, not `loss ** 2.item()`)."""
    code = (
        "import torch\n"
        "def train(model, batches, optimizer):\n"
        "    total = 0.0\n"
        "    for x, y in batches:\n"
        "        loss = ((model(x) - y) ** 2).mean()\n"
        "        optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        total += loss ** 2\n"
        "    return total\n"
    )
    (finding,) = [f for f in analyze(code) if f.code == "IPL004"]
    suggested = finding.message.split("Accumulate `")[1].split("` instead")[0]
    assert suggested == "(loss ** 2).item()"
    ast.parse(suggested)
