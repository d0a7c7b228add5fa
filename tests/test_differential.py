"""Differential test: generated programs labelled by torch, the analyzer scored against them.

The sample test runs a fixed-seed sample through the oracle (torch, in worker subprocesses)
and the analyzer and holds error-level precision and recall to thresholds set a little below
what the analyzer scored when they were set, so a regression fails it. The unit tests check
the scorer on hand-made findings and the oracle on two hand-written programs.
"""

from __future__ import annotations

import random
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

try:
    from differential.generator import Program, generate
    from differential.oracle import Label, classify, label_programs, write_programs
    from differential.reshape import reshape
    from differential.scorer import Finding, analyzer_findings, naive_findings, score
except ImportError:  # tests/ imported as a package
    from tests.differential.generator import Program, generate
    from tests.differential.oracle import Label, classify, label_programs, write_programs
    from tests.differential.reshape import reshape
    from tests.differential.scorer import Finding, analyzer_findings, naive_findings, score

# Not the benchmark's default seed (12345): the thresholds must not be tuned on what the
# benchmark reports.
TEST_SEED = 20261201
SAMPLE = 400
MAX_OTHER_RATE = 0.02
MIN_LABEL_SHARE = 0.25  # each of `error` and `ok`
# Measured at the commit that set them (seed 20261201, 400 programs): 181 error / 219 ok / 0
# other; analyzer precision 1.000 (193/193 findings), recall 0.994 (180/181); 1.000 / 1.000
# (194/194, 181/181) once tensor unpacking was modelled as unbind. Before IPL009
# (refused writes), views of leaves and the `.data` Warning: 0.994 / 0.927 (on the generator's
# smaller pool of then); at c7a945e, the start of issue 11's work: 0.810 / 0.621. The
# thresholds are issue 11's targets; raise them as the analyzer improves.
MIN_PRECISION = 0.99
MIN_RECALL = 0.97


def _program(index: int, features: tuple[str, ...], text: str = "x = 1\n") -> Program:
    return Program(index=index, seed=0, scenario="hand", text=text, features=features)


def test_scorer_counts_findings_on_guilty_and_related_lines() -> None:
    programs = [
        _program(0, ("f:a",)),  # error, found through a related line
        _program(1, ("f:a", "f:b")),  # error, finding on an innocent line: missed + FP
        _program(2, ("f:b",)),  # ok, one finding: FP
        _program(3, ("f:b",)),  # ok, no finding
        _program(4, ("f:a",)),  # other: excluded
    ]
    labels = [
        Label("error", "version", write_lines=[7], save_lines=[5]),
        Label("error", "leaf", write_lines=[9]),
        Label("ok"),
        Label("ok"),
        Label("other", "TypeError"),
    ]
    findings = {
        "p0": [Finding(12, frozenset({5}), "IPL001")],
        "p1": [Finding(3, frozenset(), "IPL002")],
        "p2": [Finding(4, frozenset(), "IPL001")],
        "p3": [],
        "p4": [Finding(1, frozenset(), "IPL001")],
    }
    report = score(programs, labels, list(findings), lambda _text, path: findings[path])
    assert report.other == 1
    s = report.overall
    assert (s.programs, s.error_programs, s.found) == (4, 2, 1)
    assert (s.true_findings, s.findings) == (1, 3)
    assert s.precision == pytest.approx(1 / 3)
    assert s.recall == pytest.approx(0.5)
    a, b = report.by_feature["f:a"], report.by_feature["f:b"]
    assert (a.error_programs, a.found, a.true_findings, a.findings) == (2, 1, 1, 2)
    assert (b.error_programs, b.found, b.true_findings, b.findings) == (1, 0, 0, 2)
    assert [v.path for v in report.misses] == ["p1"]
    assert [v.path for v in report.false_positive_programs] == ["p1", "p2"]


def test_reshape_moves_code_and_keeps_the_computation() -> None:
    """A reshaped program defines the same names and computes the same value."""
    text = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def __init__(self, dim=8):
                super().__init__()
                self.fc1 = nn.Linear(dim, dim)
                self.head = nn.Linear(dim, 1)

            def forward(self, x):
                h = F.relu(self.fc1(x))
                h = torch.sigmoid(h) * 2
                s = h.sum(dim=-1, keepdim=True)
                h = h + s
                return self.head(h)


        def main():
            torch.manual_seed(0)
            model = Net()
            x = torch.ones(2, 8)
            total = 0.0
            for step in range(2):
                out = model(x)
                total += out.detach().sum().item()
            return total
        """
    )
    namespace: dict[str, object] = {}
    exec(compile(text, "<original>", "exec"), namespace)
    main = namespace["main"]
    assert callable(main)
    expected = main() if _torch_available() else None
    seen: set[str] = set()
    for k in range(40):
        shaped, features = reshape(text, random.Random(k))
        seen.update(features)
        compile(shaped, "<reshaped>", "exec")
        if expected is not None:
            ns: dict[str, object] = {}
            exec(compile(shaped, "<reshaped>", "exec"), ns)
            fn = ns["main"]
            assert callable(fn)
            assert fn() == pytest.approx(expected), shaped
    # Every kind of reshape was drawn in 40 tries.
    for kind in ("extract:method", "extract:base", "extract:template", "extract:function"):
        assert f"shape:{kind}" in seen, seen
    for kind in ("layers:moduledict", "layers:modulelist", "layers:getattr", "trainer"):
        assert f"shape:{kind}" in seen, seen
    assert "shape:trainer:train_step" in seen
    assert "shape:spelling" in seen
    assert {f for f in seen if f.startswith("shape:imports:")} >= {
        "shape:imports:th",
        "shape:imports:from_nn",
        "shape:imports:full",
        "shape:imports:direct",
    }, seen


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_naive_baseline_flags_in_place_syntax_only() -> None:
    text = textwrap.dedent(
        """\
        import torch
        y = torch.ones(3)
        y += 1
        y[0] = 2.0
        y.add_(1)
        z = torch.relu(y)
        a = torch.nn.ReLU(inplace=True)
        y.__setitem__(0, 1.0)
        y = y + 1
        """
    )
    assert [f.line for f in naive_findings(text)] == [3, 4, 5, 7]


def test_classify_knows_torch_in_place_messages() -> None:
    assert (
        classify(
            "one of the variables needed for gradient computation has been modified "
            "by an inplace operation: [torch.FloatTensor [3]]"
        )
        == "version"
    )
    assert (
        classify(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
        == "leaf_view"
    )
    assert (
        classify("a leaf Variable that requires grad is being used in an in-place operation.")
        == "leaf"
    )
    assert classify("Trying to backward through the graph a second time") is None


@pytest.mark.torch
def test_oracle_labels_and_locates(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    broken = textwrap.dedent(
        """\
        import torch


        def main():
            x = torch.randn(3, requires_grad=True)
            y = torch.sigmoid(x)
            y.mul_(2.0)
            y.sum().backward()


        main()
        """
    )
    leaf = "import torch\nw = torch.zeros(2, requires_grad=True)\nw -= 1.0\n"
    fine = "import torch\nx = torch.randn(3, requires_grad=True)\ny = x + 1\ny += 1\n"
    fine += "y.sum().backward()\n"
    crash = "import torch\nraise ValueError('generator bug')\n"
    dies = "import os\nos._exit(3)\n"
    hangs = "while True:\n    pass\n"
    texts = [broken, leaf, fine, crash, dies, hangs, broken]
    pairs = [(str(tmp_path / f"p{i}.py"), t) for i, t in enumerate(texts)]
    labels = label_programs(pairs, jobs=1, python=sys.executable, timeout_s=5.0)
    assert [label.outcome for label in labels] == [
        "error",
        "error",
        "ok",
        "other",
        "other",
        "other",
        "error",  # after a replaced worker
    ]
    assert (labels[0].kind, labels[0].write_lines, labels[0].save_lines) == ("version", [7], [6])
    assert (labels[1].kind, labels[1].write_lines) == ("leaf", [3])
    assert [label.kind for label in labels[3:6]] == ["ValueError", "WorkerDied", "Timeout"]
    assert labels[6].guilty_lines == {6, 7}


@pytest.mark.torch
@pytest.mark.parametrize("shapes", [False, True], ids=["generated", "reshaped"])
def test_generated_sample_scores_above_thresholds(tmp_path: Path, shapes: bool) -> None:
    """Reshaped (reshape.py: helpers in base classes and subclasses, layer containers, a
    trainer class), the same programs must score as well: the verdict must not depend on the
    code's shape. Measured when the reshapes were added (seeds 51-53, 600 programs each):
    1.000 / 1.000 for every reshape."""
    pytest.importorskip("torch")
    programs = generate(SAMPLE, TEST_SEED, shapes=shapes)
    pairs = write_programs(programs, tmp_path)
    labels = label_programs(pairs, jobs=2, python=sys.executable)
    outcomes = Counter(label.outcome for label in labels)
    others = [label.message for label in labels if label.outcome == "other"]
    assert outcomes["other"] / SAMPLE <= MAX_OTHER_RATE, others
    assert outcomes["error"] >= MIN_LABEL_SHARE * SAMPLE, outcomes
    assert outcomes["ok"] >= MIN_LABEL_SHARE * SAMPLE, outcomes
    assert all(label.located for label in labels if label.outcome == "error")
    paths = [path for path, _ in pairs]
    ours = score(programs, labels, paths, analyzer_findings).overall
    naive = score(programs, labels, paths, naive_findings).overall
    summary = (
        f"analyzer precision {ours.precision:.3f} recall {ours.recall:.3f}; "
        f"naive {naive.precision:.3f} / {naive.recall:.3f}; {dict(outcomes)}"
    )
    assert ours.precision >= MIN_PRECISION, summary
    assert ours.recall >= MIN_RECALL, summary
    assert ours.precision > naive.precision, summary
