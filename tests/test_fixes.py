"""Quick fixes (`inplace_lsp.fixes`): codemod fixtures, fix-all validity, proof by running.

1. Fixtures, as TorchFix does: `tests/fixes/<kind>_<n>.in.py` is analysed, the fixes of all its
   findings (safe and unsafe) applied as fix-all combines them, and the result must equal
   `<kind>_<n>.out.py` byte for byte.
2. Fix-all over every file of tests/cases, examples/ and the fixtures: the result parses, it
   differs from the file exactly where the analysis offers a safe fix (a NO_FIX case stays as
   it is), its fresh analysis offers no safe fix, and a second fix-all changes nothing.
3. Proof by execution (marker `torch`): for every case whose `# outcome:` is an error
   (inplace-error, leaf-error, refused-error), the quick fixes of its Error findings are
   applied, the fixed file is imported and its `run()` must succeed; then its gradients must
   equal (`torch.allclose`) those of the hand-written out-of-place twin
   `tests/cases/twins/<case>`. Each twin defines `grads()`: seed
   (`torch.manual_seed(0)`), build and run what the case's `run()` does, return the parameter
   gradients (and input gradients, or the trained values where the run consumes its
   gradients). The test runs that one function twice: in the twin's namespace and in the fixed
   module's (`FunctionType(grads.__code__, vars(fixed))`), so both sides execute the same code,
   seeded alike, and only the module's own classes and functions differ.

4. Proof by running every fix (marker `torch`, `tests/fixproof.py`): for every case, example and
   fixture, each finding's quick fix alone and fix-all (`fixes.apply_safe_fixes`, what
   `--fix` writes) are applied and both versions run under torch with the same seed: the
   file's entry function (`run()`, `main()`), every class and function verify can build a
   call for (`inplace_lsp.verify.targets`), and the calls `SUPPLIED` below gives for those it
   cannot. Forward outputs of every module call, backward roots, the gradients of every leaf
   and the final parameters, buffers and module-level tensors must be `torch.allclose` where
   the original ran; where it failed with an autograd error, the fixed version must get
   through (unless the analysis still reports an error in it). A fix is *proven* when, in
   addition, a run executed the lines it rewrites. Every safe fix (the preferred quick fix,
   part of fix-all and `--fix`) must be proven; `test_fix_proof_summary` prints the counts
   (`pytest -rA` shows them) and the files that have nothing runnable.

Section 3 compares with what the author meant (the twin), section 4 with what the original
computed: a fix that matches the twin but changes the original's forward values (cloning a
`.detach()` alias whose source is read again, 014) is offered, but not as safe.

Failing cases without an automatic fix (the test checks that each really has none):

* 026, 048, 051 (IPL007 step-before-backward): the fix is to call `optimizer.step()` after every
  backward() that needs the old weights, or to recompute the forward pass: a reordering of
  steps, which is never automatic.
* 067 (kv cache): `write_cache()` writes the caller's cache in place and the caller reads that
  cache right after; that is the helper's job. Out of place would mean returning the new cache
  and changing every caller, so the codemod declines instead of changing what is computed.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
import types
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import libcst
import pytest

from inplace_lsp import fixes
from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Finding, FixRecipe, Severity, Span
from inplace_lsp.analysis.rules import RULES
from inplace_lsp.fixes.cstedit import stmt_span
from inplace_lsp.fixes.source import Source

try:
    from casefile import Case, discover, import_path
except ImportError:  # tests/ imported as a package
    from tests.casefile import Case, discover, import_path

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixes"
TWINS = TESTS / "cases" / "twins"
EXAMPLES = TESTS.parent / "examples"
CASES = discover()
FAILING = [case for case in CASES if case.outcome != "ok"]
KINDS = (*fixes.CODEMODS, fixes.WRAP_NO_GRAD)

# Cases whose error has no automatic fix, and why (see the module docstring).
NO_FIX = {
    "026_gan_step_before_generator_backward": "IPL007: steps are reordered by hand",
    "048_actor_critic_step_order": "IPL007: steps are reordered by hand",
    "051_multi_loss_shared_layers_step": "IPL007: steps are reordered by hand",
    "067_kv_cache_decode_loop": "the caller reads the cache the helper writes",
    "114_ema_teacher_updated_before_backward": "the EMA update itself: written out of place "
    "or on a clone, the teacher's weights would no longer change; it moves after backward()",
    "140_trainer_optimizers_on_self_step_between_backwards": "IPL007: steps are reordered by hand",
    "118_forward_chosen_in_init_slices_conv_input": "the value written reads the slice it "
    "overwrites: a clone before the statement is what the conv saves; split and cat by hand",
    "147_prenorm_pairs_in_modulelist_token_iadd": "the caller reads the tensor the forward "
    "writes: out of place, the second decoder would no longer see the first one's position "
    "embedding",
}
# Failing cases whose error fix matches the twin but is not safe: it changes what the
# original computed before it failed (section 4), so it is offered, never preferred.
NOT_PREFERRED = {
    "014_softmax_detach_threshold": "cloning the `.detach()` alias keeps the write from "
    "`probs`, which is read again: the forward values change",
}
# Findings the analysis gives no recipe yet: the recipe kind it should give.
PENDING_RECIPES: dict[str, str] = {}


# ---------------------------------------------------------------------- 1. fixtures


def _fixture_ids(path: Path) -> str:
    return path.name.removesuffix(".in.py")


FIXTURE_INPUTS = sorted(FIXTURES.glob("*.in.py"))


@pytest.mark.parametrize("path", FIXTURE_INPUTS, ids=_fixture_ids)
def test_fixture(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    findings = [f for f in analyze(text) if f.fix is not None]
    kind = path.name.rsplit("_", 1)[0].replace("_", "-")
    assert any(f.fix is not None and f.fix.kind == kind for f in findings), "nothing to fix"
    expected = path.with_name(path.name.replace(".in.py", ".out.py"))
    assert fixes.apply_fixes(text, findings) == expected.read_text(encoding="utf-8")


def test_every_kind_has_two_fixtures() -> None:
    counts = {kind: 0 for kind in KINDS}
    for path in FIXTURE_INPUTS:
        kind = path.name.rsplit("_", 1)[0].replace("_", "-")
        assert kind in counts, f"{path.name}: no codemod of kind {kind!r}"
        counts[kind] += 1
        assert path.with_name(path.name.replace(".in.py", ".out.py")).exists()
    assert min(counts.values()) >= 2, counts


# ---------------------------------------------------------------------- 2. fix-all

ALL_FILES = [
    *sorted((TESTS / "cases").glob("[0-9][0-9][0-9]_*.py")),
    *sorted(EXAMPLES.glob("*.py")),
    *FIXTURE_INPUTS,
]


def _safe(findings: list[Finding]) -> list[str]:
    return [f"{f.code}:{f.line}" for f in findings if f.fix is not None and f.fix.safe]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_all_parses_and_is_idempotent(path: Path) -> None:
    """Fix-all changes a file that has a safe fix (every NO_FIX case keeps its declined one and
    stays as it is), leaves no safe fix behind, and a second fix-all changes nothing."""
    text = path.read_text(encoding="utf-8")
    findings = analyze(text)
    safe = _safe(findings)
    once = fixes.apply_safe_fixes(text, findings)
    ast.parse(once)
    if path.stem in NO_FIX:
        assert once == text, NO_FIX[path.stem]
    else:
        assert (once != text) == bool(safe), safe
        assert _safe(analyze(once)) == []
    assert fixes.apply_safe_fixes(once, analyze(once)) == once


def _rule_examples() -> Iterator[tuple[str, str, str]]:
    for rule in RULES:
        for example in rule.INVALID:
            if example.fixed is not None:
                yield rule.CODE, example.code, example.fixed


@pytest.mark.parametrize("code,text,fixed", list(_rule_examples()))
def test_rule_examples_get_their_fix(code: str, text: str, fixed: str) -> None:
    """Each rule's INVALID example becomes its `fixed` line (Fixit's convention)."""
    findings = [f for f in analyze(text) if f.code == code and f.fix is not None]
    assert findings
    after = fixes.apply_fixes(text, findings)
    assert fixed in after.splitlines(keepends=True), after


# ---------------------------------------------------------------------- the contract


GATE = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        g = torch.sigmoid(x)
        g *= 0.5
        return g
"""


def only(text: str, code: str) -> Finding:
    (finding,) = [f for f in analyze(text) if f.code == code and f.fix is not None]
    return finding


def test_edits_are_minimal_and_in_code_points() -> None:
    text = GATE.replace("        g *= 0.5\n", '        ü = "ä"; g *= 0.5  # ½\n')
    edits = fixes.edits_for(text, only(text, "IPL001"))
    assert edits is not None
    assert edits == [fixes.Edit(Span(8, 19, 8, 21), "= g *")]  # `*=` -> `= g *`
    assert fixes.apply_edits(text, edits).splitlines()[7] == '        ü = "ä"; g = g * 0.5  # ½'


def test_a_stale_finding_has_no_fix() -> None:
    finding = only(GATE, "IPL001")
    assert fixes.edits_for(GATE.replace("g *= 0.5", "g = g * 0.5"), finding) is None
    assert fixes.edits_for(GATE, dataclasses.replace(finding, fix=None)) is None
    assert finding.fix is not None
    unknown = dataclasses.replace(finding.fix, kind="no-such-codemod")
    assert fixes.edits_for(GATE, dataclasses.replace(finding, fix=unknown)) is None


def test_line_ends_and_tabs_are_kept() -> None:
    text = GATE.replace("    ", "\t").replace("\n", "\r\n")
    fixed = fixes.apply_safe_fixes(text, analyze(text))
    assert "\t\tg = g * 0.5\r\n" in fixed
    assert "\n" not in fixed.replace("\r\n", "")


LEAF = """\
import torch


def fit(x, y, lr=0.1):
    w = torch.zeros(3, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    loss = (x @ w + b - y).pow(2).mean()
    loss.backward()
    w -= lr * w.grad
    b -= lr * b.grad
    return w, b
"""


def test_quick_fixes_one_after_the_other_share_one_block() -> None:
    """Fixing the second leaf update after the first joins the block the first made."""
    text = LEAF
    for _ in range(2):
        first = next(f for f in analyze(text) if f.code == "IPL002")
        edits = fixes.edits_for(text, first)
        assert edits is not None
        text = fixes.apply_edits(text, edits)
    assert text.count("with torch.no_grad():") == 1
    assert "    with torch.no_grad():\n        w -= lr * w.grad\n        b -= lr * b.grad\n" in text
    assert not [f for f in analyze(text) if f.code == "IPL002"]


def test_a_write_the_callers_rely_on_has_no_fix() -> None:
    text = """\
import torch
import torch.nn as nn


def center_(features):
    features -= features.mean(dim=-1, keepdim=True)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        z = torch.sigmoid(self.fc(x))
        center_(z)
        return z
"""
    finding = only(text, "IPL001")
    assert fixes.edits_for(text, finding) is None
    used_once = text.replace(
        "        center_(z)\n        return z\n", "        return center_(z)\n"
    )
    used_once = used_once.replace("keepdim=True)\n", "keepdim=True)\n    return features\n")
    fixed = fixes.apply_safe_fixes(used_once, analyze(used_once))
    assert "    features = features - features.mean(dim=-1, keepdim=True)\n" in fixed


def test_a_global_is_not_rebound() -> None:
    text = """\
import torch

BUFFER = torch.zeros(4)


def step(w):
    y = w * BUFFER
    BUFFER.add_(1.0)
    return y
"""
    for finding in analyze(text):
        if finding.fix is not None and finding.fix.kind == "method-out-of-place":
            assert fixes.edits_for(text, finding) is None


def test_noqa_edit() -> None:
    finding = only(GATE, "IPL001")
    assert fixes.noqa_edit(GATE, finding) == fixes.Edit(Span(8, 16, 8, 16), "  # noqa: IPL001")
    commented = GATE.replace("g *= 0.5", 'g *= len("#")  # noqa: E501')
    edit = fixes.noqa_edit(commented, finding)
    assert fixes.apply_edits(commented, [edit]).splitlines()[7].endswith("noqa: E501, IPL001")
    with_text = GATE.replace("g *= 0.5", "g *= 0.5  # halve it   ")
    edit = fixes.noqa_edit(with_text, finding)
    assert fixes.apply_edits(with_text, [edit]).splitlines()[7] == (
        "        g *= 0.5  # halve it  # noqa: IPL001"
    )
    bare = GATE.replace("g *= 0.5", "g *= 0.5  # noqa")
    assert fixes.apply_edits(bare, [fixes.noqa_edit(bare, finding)]) == bare


def test_inplace_off_edits_turn_off_the_whole_class() -> None:
    text = """\
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.ReLU(inplace=True)
        self.b = nn.Sequential(nn.Linear(2, 2), nn.ReLU6(inplace=True))

    def forward(self, x):
        return F.relu(self.b(self.a(x)), inplace=True)


class Other(nn.Module):
    act = nn.ReLU(inplace=True)
"""
    edits = fixes.inplace_off_edits(text, 11)
    fixed = fixes.apply_edits(text, edits)
    assert fixed.count("inplace=False") == 3
    assert "    act = nn.ReLU(inplace=True)\n" in fixed
    assert fixes.inplace_off_edits(text, 1) == []


@pytest.mark.parametrize("layout", ["functions", "one class"])
def test_a_fix_parses_only_what_it_needs(layout: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a 3,000-line file a fix parses the function around it with `ast` and the lines it
    rewrites with libcst, never the whole file (libcst alone takes ~0.5 s on all of it). The
    timing itself is for benchmarks, not for tests: ~3 ms here on a 3,000-line file."""
    if layout == "functions":
        filler = "".join(f"\n\ndef helper_{i}(x):\n    return x * {i}\n" for i in range(750))
        text = GATE.replace("\n\nclass Gate", filler + "\n\nclass Gate")
    else:
        filler = "".join(
            f"\n    def helper_{i}(self, x):\n        return x * {i}\n" for i in range(1000)
        )
        text = GATE.replace("    def forward", filler.lstrip("\n") + "\n    def forward")
    assert text.count("\n") > 3000
    finding = only(text, "IPL001")
    parsed: dict[str, list[int]] = {"ast": [], "libcst": []}
    real_cst, real_ast = libcst.parse_module, ast.parse

    def parse_module(source: str, *args: Any, **kwargs: Any) -> libcst.Module:
        parsed["libcst"].append(source.count("\n"))
        return real_cst(source, *args, **kwargs)

    def parse(source: str, *args: Any, **kwargs: Any) -> Any:
        parsed["ast"].append(str(source).count("\n"))
        return real_ast(source, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", parse_module)
    monkeypatch.setattr(ast, "parse", parse)
    assert fixes.edits_for(text, finding)
    assert parsed["libcst"] and max(parsed["libcst"]) < 10
    assert parsed["ast"] and max(parsed["ast"]) < 20, parsed


ACTIVATION = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.act = nn.ReLU(inplace=True)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        h = MAKE
        WRITE
        return self.out(h)
"""
BARE_WRITES = [
    "F.relu(h, inplace=True)",
    "h.relu_()",
    "self.act(h)",
    "h = F.relu(h, inplace=True)",
    "h = self.act(h)",
]


def _activation(make: str, write: str) -> str:
    return ACTIVATION.replace("MAKE", make).replace("WRITE", write)


@pytest.mark.parametrize("write", BARE_WRITES)
def test_reading_the_result_of_a_bare_inplace_activation_is_its_point(write: str) -> None:
    """After BatchNorm (which saved its input) `F.relu(h, inplace=True)` on its own line hands
    the activated values on through `h`: no finding, and nothing for --fix to rewrite."""
    text = _activation("self.bn(self.fc(x))", write)
    assert [
        f for f in analyze(text) if f.code == "IPL003" and f.severity is not Severity.HINT
    ] == []
    assert fixes.apply_safe_fixes(text, analyze(text)) == text


@pytest.mark.parametrize("write", ["y = F.relu(h, inplace=True)", "y = h.relu_()"])
def test_an_activation_that_changes_another_reader_is_warned_not_fixed_safely(write: str) -> None:
    text = _activation("self.bn(self.fc(x))", write).replace(
        "return self.out(h)", "return self.out(y) + h.sum()"
    )
    (finding,) = [f for f in analyze(text) if f.code == "IPL003"]
    assert finding.severity is Severity.WARNING and "`h` is read again" in finding.message
    assert finding.fix is not None and not finding.fix.safe  # its point: h should not change
    assert fixes.apply_safe_fixes(text, analyze(text)) == text
    fixed = fixes.apply_fixes(text, [finding])
    assert "y = F.relu(h, inplace=False)" in fixed or "        y = h.relu()\n" in fixed, fixed


@pytest.mark.parametrize(
    "write,fixed_line,advice,safe",
    [
        ("F.relu(h, inplace=True)", "        h = F.relu(h)\n", "Write `h = F.relu(h)`.", True),
        ("h.relu_()", "        h = h.relu()\n", "Write `h = h.relu()`.", True),
        (
            "F.leaky_relu(h, 0.2, inplace=True)",
            "        h = F.leaky_relu(h, 0.2)\n",
            "Write `h = F.leaky_relu(h, 0.2)`.",
            True,
        ),
        (
            "F.leaky_relu(h, 0.2, True)",  # `inplace` passed positionally
            "        h = F.leaky_relu(h, 0.2, False)\n",
            "Write `h = F.leaky_relu(h, 0.2, False)`.",
            True,
        ),
        ("h = self.act(h)", "        self.act = nn.ReLU(inplace=False)\n", "`inplace=False`", True),
        # inplace=False alone would throw away what the bare call passes on through h.
        (
            "self.act(h)",
            "        self.act = nn.ReLU(inplace=False)\n",
            "assign the result where the call throws it away (line 16: `h = self.act(h)`)",
            False,
        ),
    ],
)
def test_the_fix_of_an_inplace_activation_keeps_its_result(
    write: str, fixed_line: str, advice: str, safe: bool
) -> None:
    text = _activation("torch.tanh(self.fc(x))", write)
    (finding,) = [f for f in analyze(text) if f.code == "IPL003" and f.fix is not None]
    assert finding.severity is Severity.ERROR
    assert advice in finding.message, finding.message
    if "relu_" in write:
        assert "inplace" not in finding.message  # `.relu_()` has no such argument
    assert finding.fix is not None and finding.fix.safe is safe
    assert fixed_line in fixes.apply_fixes(text, [finding]).splitlines(keepends=True)


def test_inplace_false_is_not_safe_where_another_method_discards_the_result() -> None:
    """`forward` rebinds `h = self.act(h)`, but `features` calls `self.act(y)` on its own line:
    `inplace=False` would leave `y` unrectified there."""
    text = _activation("torch.tanh(self.fc(x))", "h = self.act(h)") + (
        "\n    def features(self, x):\n"
        "        y = self.bn(self.fc(x))\n"
        "        self.act(y)\n"
        "        return y\n"
    )
    (finding,) = [f for f in analyze(text) if f.code == "IPL003"]
    assert finding.fix is not None and not finding.fix.safe
    assert "(line 21: `y = self.act(y)`)" in finding.message, finding.message
    assert fixes.apply_safe_fixes(text, analyze(text)) == text


def test_a_positional_inplace_flag_of_a_module_is_found_and_fixed() -> None:
    """`nn.ReLU(True)` (torchvision's VGG writes it so) is `inplace=True`."""
    text = _activation("torch.tanh(self.fc(x))", "h = self.act(h)").replace(
        "nn.ReLU(inplace=True)", "nn.ReLU(True)"
    )
    (finding,) = [f for f in analyze(text) if f.code == "IPL003"]
    assert finding.severity is Severity.ERROR and finding.line == 11
    assert finding.fix is not None and finding.fix.safe
    fixed = fixes.apply_safe_fixes(text, analyze(text))
    assert "        self.act = nn.ReLU(False)\n" in fixed.splitlines(keepends=True)


# ---------------------------------------------------------------------- 3. proof by running


def _import(path: Path) -> ModuleType:
    return import_path(path, "_inplace_fixed")


def _with_pending_recipe(text: str, finding: Finding, kind: str) -> Finding:
    source = Source(text)
    found = source.statement(finding.span, exact=False)
    assert found is not None
    recipe = FixRecipe(kind, "pending", True, stmt_span(source, found))
    return dataclasses.replace(finding, fix=recipe)


def test_no_fix_list_is_current() -> None:
    names = {case.name for case in FAILING}
    assert set(NO_FIX) <= names and set(PENDING_RECIPES) <= names and set(NOT_PREFERRED) <= names


@pytest.fixture
def torch_module() -> Iterator[ModuleType]:
    torch = pytest.importorskip("torch")
    anomaly = torch.is_anomaly_enabled()
    try:
        yield torch
    finally:
        torch.autograd.set_detect_anomaly(anomaly)


@pytest.mark.torch
@pytest.mark.parametrize("case", FAILING, ids=lambda case: case.name)
def test_fix_makes_backward_work_with_the_twins_gradients(
    case: Case, torch_module: ModuleType, tmp_path: Path
) -> None:
    torch = torch_module
    text = case.path.read_text(encoding="utf-8")
    errors = [f for f in analyze(text) if f.severity is Severity.ERROR]
    assert errors
    if case.name in NO_FIX:
        assert all(fixes.edits_for(text, f) is None for f in errors), NO_FIX[case.name]
        return
    if case.name in PENDING_RECIPES:
        assert all(f.fix is None for f in errors), "the analysis gives a recipe now: update"
        errors = [_with_pending_recipe(text, f, PENDING_RECIPES[case.name]) for f in errors]
    for finding in errors:
        # The twin is what the author meant; section 4 decides what is safe.
        assert finding.fix is not None, finding
        assert finding.fix.safe is (case.name not in NOT_PREFERRED), NOT_PREFERRED
        assert fixes.edits_for(text, finding), finding
    fixed_text = fixes.apply_fixes(text, errors)
    assert not [f for f in analyze(fixed_text) if f.severity is Severity.ERROR]
    fixed_path = tmp_path / case.path.name
    fixed_path.write_text(fixed_text, encoding="utf-8")
    fixed = _import(fixed_path)
    fixed.run()  # backward succeeds
    twin = _import(TWINS / case.path.name)
    expected = twin.grads()
    got = types.FunctionType(twin.grads.__code__, vars(fixed))()
    assert expected.keys() == got.keys()
    assert any(value is not None for value in expected.values())
    for name, value in expected.items():
        assert (value is None) == (got[name] is None), name
        if value is not None:
            assert torch.allclose(got[name], value, atol=1e-6), name


# ---------------------------------------------------------------------- 4. proof of every fix


def _supplied() -> dict[str, dict[str, Any]]:
    """Calls for targets whose arguments verify cannot infer: file -> label -> build(module)
    giving (callable, args). They use the file's own `torch` and `nn`."""

    def linear_data(m: ModuleType) -> list[tuple[Any, Any]]:
        return [(m.torch.randn(4, 3), m.torch.randn(4, 1)) for _ in range(2)]

    def sgd(model: Any, m: ModuleType) -> Any:
        return m.torch.optim.SGD(model.parameters(), lr=0.1)

    def train(m: ModuleType) -> tuple[Any, tuple[Any, ...]]:
        model = m.nn.Linear(3, 1)
        return m.train, (model, linear_data(m), sgd(model, m))

    return {
        "augassign_1.in.py": {
            "Gate": lambda m: (m.Gate(4), (m.torch.randn(2, 4),)),
            "Scale": lambda m: (m.Scale(), (m.torch.randn(2, 4), m.torch.randn(2, 4))),
        },
        "augassign_2.in.py": {"Größe": lambda m: (m.Größe(), (m.torch.randn(2, 4),))},
        "clone_setitem_1.in.py": {"Clip": lambda m: (m.Clip(), (m.torch.randn(2, 4),))},
        "clone_setitem_2.in.py": {
            "Ränder": lambda m: (m.Ränder(), (m.torch.randn(2, 4), 2)),
            "CrossAttention": lambda m: (m.CrossAttention(), (m.torch.randn(2, 3, 3),)),
        },
        "inplace_false_1.in.py": {
            "Pooler": lambda m: (m.Pooler(4), (m.torch.randn(2, 4),)),
            "Gate": lambda m: (m.Gate(), (m.torch.randn(2, 4),)),
        },
        "method_out_of_place_1.in.py": {
            "Attention": lambda m: (
                m.Attention(4),
                (m.torch.randn(2, 3, 4), m.torch.rand(2, 3) > 0.5),
            ),
            "Cell": lambda m: (m.Cell(4), (m.torch.randn(2, 4),)),
            "contrastive": lambda m: (m.contrastive, (m.torch.randn(3, 4),)),
        },
        "method_out_of_place_2.in.py": {"Head": lambda m: (m.Head(), (m.torch.randn(2, 4),))},
        "item_1.in.py": {"train": train},
        "item_2.in.py": {"train": train},
        "remove_anomaly_2.in.py": {
            "train_step": lambda m: (m.train_step, (m.nn.Linear(3, 1), m.torch.randn(4, 3)))
        },
        "wrap_no_grad_1.in.py": {
            "fit": lambda m: (m.fit, (m.th.randn(8, 3), m.th.randn(8, 1), 2, 0.1))
        },
    }


# Files whose fix-all leaves a failing backward the analysis does not report, and why.
MISSED_ERRORS: dict[str, str] = {}


def _fixproof() -> Any:
    """tests/fixproof.py (it imports torch, so only the torch tests load it)."""
    pytest.importorskip("torch")
    try:
        return importlib.import_module("fixproof")
    except ImportError:  # tests/ imported as a package
        return importlib.import_module("tests.fixproof")


@functools.cache
def _proof(path: Path) -> Any:
    fixproof = _fixproof()
    supplied = _supplied().get(path.name, {})
    runners = [fixproof.supplied_runner(label, build) for label, build in supplied.items()]
    return fixproof.prove_file(path, runners)


@pytest.fixture
def torch_quiet(torch_module: ModuleType) -> Iterator[ModuleType]:
    threads = torch_module.get_num_threads()
    torch_module.set_num_threads(1)  # deterministic sums, and fair on a shared 2-core runner
    try:
        yield torch_module
    finally:
        torch_module.set_num_threads(threads)


def _describe(proof: Any) -> str:
    why = proof.differences or proof.still_failing or ["no run executed the rewritten lines"]
    return f"{proof.label}: " + "; ".join(why)


PROOF_TARGET = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        g = torch.sigmoid(self.fc(x))
        g = g * 0.5
        return g


def unused(x):
    return x + 1
"""


@pytest.mark.torch
@pytest.mark.parametrize(
    "old,new,verdict",
    [
        ("g = g * 0.5", "g = 0.5 * g", "proven"),
        ("g = g * 0.5", "g = g * 0.4", "forward"),  # other values
        ("g = g * 0.5", "g = (2 * g - g.detach()) * 0.5", "grads"),  # same values, 2x grads
        ("return x + 1", "return x + 2", "not run"),  # a change no run executes
    ],
)
def test_the_proof_sees_what_a_rewrite_changes(
    old: str, new: str, verdict: str, torch_quiet: ModuleType
) -> None:
    """The proof itself: a rewrite that keeps values and gradients is proven; one that changes
    either, or that no run reaches, is not."""
    fixproof = _fixproof()
    groups, _ = fixproof.candidate_runners(PROOF_TARGET)
    runs = fixproof.usable_runs(PROOF_TARGET, groups, [])
    assert [runner.name for runner, _ in runs] == ["Gate[inputs 0]"]
    proof = fixproof.prove(
        "edit", True, PROOF_TARGET, PROOF_TARGET.replace(old, new), runs, errors_left=False
    )
    assert proof.proven is (verdict == "proven"), proof
    assert proof.covered is (verdict != "not run")
    if verdict == "forward":
        assert "forward" in proof.differences[0] or "returned" in proof.differences[0]
    if verdict == "grads":
        assert "grads" in proof.differences[0], proof.differences


@pytest.mark.torch
@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_safe_fix_is_proven_by_running(path: Path, torch_quiet: ModuleType) -> None:
    result = _proof(path)
    missed = MISSED_ERRORS.get(path.name)
    for proof in result.proofs:
        if missed and proof.label == "fix-all":
            assert proof.still_failing and not proof.differences, f"update MISSED_ERRORS: {missed}"
            continue
        if proof.safe:
            assert proof.proven, f"{path.name}: safe fix not proven: {_describe(proof)}"
    if any(proof.safe for proof in result.proofs):
        assert result.runners, f"{path.name}: safe fixes but nothing runnable"


@pytest.mark.torch
def test_fix_proof_summary(torch_quiet: ModuleType) -> None:
    """Every file proved (cached from the per-file tests when they ran first); the counts."""
    results = [_proof(path) for path in ALL_FILES]
    proofs = [p for r in results for p in r.proofs]
    singles = [p for p in proofs if p.label != "fix-all"]
    safe_proven = [p for p in proofs if p.safe and p.proven]
    wholes = [p for p in proofs if p.label == "fix-all"]
    unproven_safe = [
        f"{r.path.name}: {_describe(p)}"
        for r in results
        for p in r.proofs
        if p.safe and not p.proven and not (p.label == "fix-all" and r.path.name in MISSED_ERRORS)
    ]
    unsafe_changed = [
        f"{r.path.name}: {p.label}"
        for r in results
        for p in r.proofs
        if not p.safe and p.differences
    ]
    nothing = [r.path.name for r in results if not r.runners]
    lines = [
        f"fix proof: {len(results)} files, {sum(len(r.runners) for r in results)} runners",
        f"  quick fixes applied alone: {len(singles)} ({sum(p.safe for p in singles)} safe); "
        f"proven by running: {sum(p.safe and p.proven for p in singles)} safe, "
        f"{sum(not p.safe and p.proven for p in singles)} unsafe that happen to keep the values",
        f"  fix-all (--fix) texts: {len(wholes)}, proven: {sum(p.proven for p in wholes)} "
        f"(MISSED_ERRORS: {', '.join(MISSED_ERRORS) or '-'})",
        f"  unsafe fixes that change results (offered, never preferred or in fix-all): "
        f"{len(unsafe_changed)}: {', '.join(unsafe_changed)}",
        f"  files with nothing runnable ({len(nothing)}): {', '.join(nothing) or '-'}",
    ]
    print("\n".join(lines))
    assert not unproven_safe, "\n".join(unproven_safe)
    assert safe_proven
    for r in results:
        if not r.runners:
            assert not any(p.safe for p in r.proofs), r.path.name
