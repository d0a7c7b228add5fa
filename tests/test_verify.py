"""Verify end to end: target inference, the harness in a worker or a fresh interpreter, limits.

Tests marked ``torch`` run real torch in subprocesses (a warm worker shared by the whole file;
the tests that need a fresh one say so). The others only read source text.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inplace_lsp.config import Settings, VerifySettings, from_wire
from inplace_lsp.verify import coverage, runner, walk
from inplace_lsp.verify.runner import RunOptions, describe_lines, run_verify
from inplace_lsp.verify.spec import MAX_COMBOS, SPATIAL
from inplace_lsp.verify.targets import VerifyError, find_target

try:
    from casefile import Case, discover
except ImportError:  # tests/ imported as a package
    from tests.casefile import Case, discover

REPO = Path(__file__).resolve().parents[1]
SHAPES = sorted((Path(__file__).parent / "verify" / "shapes").glob("*.py"))
CASES = discover()
SETTINGS = VerifySettings(python=sys.executable, timeout_s=120.0)

needs_torch = pytest.mark.torch


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


skip_without_torch = pytest.mark.skipif(not _has_torch(), reason="torch is not installed")
# What `device = "auto"` picks in the worker: the tests pass on a CUDA machine too.
AUTO_DEVICE = "cuda:0" if _has_cuda() else "cpu"


@pytest.fixture(scope="module", autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    runner.shutdown_workers()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def line_of(text: str, marker: str) -> int:
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def norm(path: Path | str) -> str:
    return os.path.normcase(os.path.abspath(path))


def first_shape(text: str, line: int | None = None) -> list[int]:
    spec = find_target(text, line)
    first = spec["inputs"]["candidates"][0]["args"][0]
    return list(first["shape"])


# =========================================================================== targets (no torch)

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"


def module(init: str, forward: str, args: str = "x") -> str:
    body = textwrap.indent(textwrap.dedent(init).strip(), " " * 8)
    fwd = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    return (
        HEADER
        + "class M(nn.Module):\n"
        + "    def __init__(self, dim=16):\n"
        + "        super().__init__()\n"
        + body
        + f"\n\n    def forward(self, {args}):\n"
        + fwd
        + "\n"
    )


@pytest.mark.parametrize(
    ("init", "forward", "shape"),
    [
        ("self.fc = nn.Linear(dim, 4)", "return self.fc(x)", [2, 16]),
        ("self.fc = nn.Linear(dim, 4)", "b, t, c = x.shape\nreturn self.fc(x)", [2, 8, 16]),
        ("self.conv = nn.Conv2d(3, dim, 3)", "return self.conv(x)", [2, 3, 32, 32]),
        ("self.conv = nn.Conv1d(dim, 8, 3)", "return self.conv(x)", [2, 16, 32]),
        ("self.conv = nn.Conv3d(2, 8, 3)", "return self.conv(x)", [2, 2, 16, 16, 16]),
        ("self.emb = nn.Embedding(100, dim)", "return self.emb(x)", [2, 8]),
        ("self.rnn = nn.LSTM(dim, 32, batch_first=True)", "return self.rnn(x)[0]", [2, 8, 16]),
        ("self.rnn = nn.GRU(dim, 32)", "return self.rnn(x)[0]", [8, 2, 16]),
        ("self.rnn = nn.RNN(input_size=5, hidden_size=7)", "return self.rnn(x)[0]", [8, 2, 5]),
        ("self.norm = nn.LayerNorm(dim)", "return self.norm(x)", [2, 8, 16]),
        ("self.norm = nn.LayerNorm([4, 5])", "return self.norm(x)", [2, 4, 5]),
        ("self.bn = nn.BatchNorm1d(dim)", "return self.bn(x)", [2, 16]),
        ("self.bn = nn.BatchNorm2d(dim)", "return self.bn(x)", [2, 16, 32, 32]),
        ("self.gn = nn.GroupNorm(4, dim)", "return self.gn(x)", [2, 16, 8, 8]),
        (
            "self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)",
            "return self.attn(x, x, x)[0]",
            [2, 8, 16],
        ),
        ("self.attn = nn.MultiheadAttention(dim, 4)", "return self.attn(x, x, x)[0]", [8, 2, 16]),
        (
            "self.layer = nn.TransformerEncoderLayer(dim, 4, batch_first=True)",
            "return self.layer(x)",
            [2, 8, 16],
        ),
        (
            "layer = nn.TransformerEncoderLayer(d_model=dim, nhead=2)\n"
            "self.enc = nn.TransformerEncoder(layer, 2)",
            "return self.enc(x)",
            [8, 2, 16],
        ),
        (
            "self.net = nn.Sequential(nn.Dropout(0.1), nn.Flatten(), nn.Linear(12, dim))",
            "return self.net(x)",
            [2, 12],
        ),
        (
            "self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in range(3))",
            "for blk in self.blocks:\n    x = blk(x)\nreturn x",
            [2, 16],
        ),
        (
            "self.fc = nn.Linear(dim * 2, 1)",
            "x = torch.relu(x.float())\nreturn self.fc(x)",
            [2, 32],
        ),
        ("self.conv = nn.Conv1d(6, 8, 3)", "return self.conv(x.permute(0, 2, 1))", [2, 32, 6]),
        ("self.conv = nn.Conv1d(6, 8, 3)", "return self.conv(x.transpose(1, 2))", [2, 32, 6]),
        ("self.fc = nn.Linear(4, 4)", "b, t, c = x.shape\nreturn self.fc(x[:, -1])", [2, 8, 4]),
        ("self.w = nn.Parameter(torch.randn(dim, 3))", "return x @ self.w", [2, 16]),
        ("self.w = nn.Parameter(torch.randn(5, dim))", "return F.linear(x, self.w)", [2, 16]),
        ("self.gamma = nn.Parameter(torch.ones(dim))", "return x * self.gamma", [2, 16]),
        ("self.fc = nn.Linear(dim, 2)", "return self._head(x)", [2, 16]),
        # statements that hold others, in __init__ and in forward (verify/walk.py)
        (
            "match dim:\n    case 16:\n        self.fc = nn.Linear(dim, 3)\n"
            "    case _:\n        self.fc = nn.Linear(4, 3)",
            "return self.fc(x)",
            [2, 16],
        ),
        (
            "try:\n    import apex\nexcept ImportError:\n    self.fc = nn.Linear(dim, 3)",
            "return self.fc(x)",
            [2, 16],
        ),
        (
            "n = 0\nwhile n < 1:\n    self.fc = nn.Linear(dim, 2)\n    n += 1",
            "return self.fc(x)",
            [2, 16],
        ),
        (
            "self.fc = nn.Linear(6, 2)",
            "match x.dim():\n    case 2:\n        return self.fc(x)\nreturn x",
            [2, 6],
        ),
        (
            "self.fc = nn.Linear(6, 2)",
            "try:\n    pass\nexcept RuntimeError:\n    return self.fc(x)\nreturn x",
            [2, 6],
        ),
    ],
)
def test_input_synthesis(init: str, forward: str, shape: list[int]) -> None:
    text = module(init, forward)
    if "self._head" in forward:
        text += "\n    def _head(self, h):\n        return self.fc(h.tanh())\n"
    assert first_shape(text, 5) == shape


def test_verify_reads_every_statement_kind_and_names_one_it_does_not() -> None:
    for kind in ast.stmt.__subclasses__():  # those of this Python
        node = kind(**{name: [] for name in kind._fields})
        node.lineno = 1
        walk.parts(node)  # raises for a kind no reader knows

    class Odd(ast.stmt):
        pass

    odd = Odd()
    odd.lineno = 3
    assert walk.STRICT  # (the suite's conftest sets INPLACE_LSP_STRICT=1)
    with pytest.raises(walk.UnhandledStatement, match="line 3: no reader for Odd"):
        walk.parts(odd)


def test_local_submodule_class_is_followed_with_its_arguments() -> None:
    text = HEADER + textwrap.dedent(
        """
        class Stem(nn.Module):
            def __init__(self, channels, width):
                super().__init__()
                self.conv = nn.Conv2d(channels, width, 3)

            def forward(self, images):
                return self.conv(images)


        class Net(nn.Module):
            def __init__(self, channels=5):
                super().__init__()
                self.stem = Stem(channels, 8)
                self.head = nn.Linear(8, 2)

            def forward(self, x):
                return self.head(self.stem(x).mean((2, 3)))
        """
    )
    spec = find_target(text, line_of(text, "class Net"))
    assert spec["kind"] == "module" and spec["name"] == "Net"
    assert spec["inputs"]["candidates"][0]["args"][0]["shape"] == [2, 5, 32, 32]
    # every spatial size is a candidate the harness may try
    sizes = [c["args"][0]["shape"][-1] for c in spec["inputs"]["candidates"]]
    assert sizes == list(SPATIAL[2])


def test_embedding_indices_stay_within_num_embeddings() -> None:
    spec = find_target(module("self.emb = nn.Embedding(37, dim)", "return self.emb(x)"), 5)
    (candidate,) = spec["inputs"]["candidates"]
    assert candidate["args"] == [{"tensor": "randint", "high": 37, "shape": [2, 8]}]


def test_multiple_inputs_and_keyword_only() -> None:
    text = module(
        "self.q = nn.Linear(dim, dim)\nself.kv = nn.Linear(8, dim)",
        "return self.q(x) + self.kv(memory).mean(1, keepdim=True)",
        args="x, memory, *, scale=1.0",
    )
    spec = find_target(text, 5)
    first = spec["inputs"]["candidates"][0]
    assert [a["shape"] for a in first["args"]] == [[2, 16], [2, 8]]
    assert len(spec["inputs"]["candidates"]) <= MAX_COMBOS


def test_enclosing_line_picks_class_method_or_function() -> None:
    text = HEADER + textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 1)

            def forward(self, x):
                return self.fc(x)  # inside-forward


        def train():  # train-def
            net = Net()
            net(torch.randn(4, 3)).sum().backward()


        def helper(a, b=2):
            return a * b
        """
    )
    spec = find_target(text, line_of(text, "inside-forward"))
    assert (spec["kind"], spec["name"]) == ("module", "Net")
    assert spec["line"] == line_of(text, "class Net")
    assert spec["construct"] == {"hook": None, "args": [], "kwargs": {}, "source": "defaults"}
    spec = find_target(text, line_of(text, "train-def") + 1)
    assert (spec["kind"], spec["name"], spec["calls_backward"]) == ("function", "train", True)
    with pytest.raises(VerifyError, match=r"cannot call helper\(a, b\): no value for a"):
        find_target(text, line_of(text, "def helper") + 1)
    # no line: the file's own entry point that calls backward()
    assert find_target(text, None)["name"] == "train"
    assert json.loads(json.dumps(spec)) == spec


def test_no_line_picks_the_outermost_module() -> None:
    text = HEADER + textwrap.dedent(
        """
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.Sequential(Block(), Block())

            def forward(self, x):
                return self.blocks(x)
        """
    )
    spec = find_target(text)
    assert spec["name"] == "Model"
    assert spec["inputs"]["candidates"][0]["args"][0]["shape"] == [2, 4]


def test_constructor_arguments_from_a_literal_call_or_a_hook() -> None:
    text = module("self.fc = nn.Linear(dim, 3)", "return self.fc(x)")
    text = text.replace("def __init__(self, dim=16)", "def __init__(self, dim, act=None)")
    with pytest.raises(VerifyError) as error:
        find_target(text, 5)
    assert str(error.value) == (
        "VerifyError: cannot construct M: __init__(dim, act) has no default for dim; add "
        "`def example_args(): return (16,)` to the class (a dict gives keyword arguments)"
    )
    called = text + "\n\nmodel = M(12, act='relu')\n"
    spec = find_target(called, 5)
    assert spec["construct"]["args"] == [{"value": 12}]
    assert spec["construct"]["kwargs"] == {"act": {"value": "relu"}}
    assert spec["construct"]["source"] == f"the call at line {len(called.splitlines())}"
    assert spec["inputs"]["candidates"][0]["args"][0]["shape"] == [2, 12]
    hooked = text.replace(
        "    def forward",
        "    @classmethod\n    def example_args(cls):\n        return (6,)\n\n    def forward",
    )
    spec = find_target(hooked, 5)
    assert spec["construct"]["hook"] == {"scope": "class", "name": "example_args"}
    assert spec["inputs"]["candidates"][0]["args"][0]["shape"] == [2, 6]
    supplied = find_target(text, 5, constructor_args={"dim": 9})
    assert supplied["construct"]["source"] == "settings"
    assert supplied["inputs"]["candidates"][0]["args"][0]["shape"] == [2, 9]


# A function target that takes tensors: the shapes come from its body (`x @ w` with a fresh
# `w`, an Embedding it calls, a module-level model whose forward feeds a Linear).
FUNCTION_TARGET = """
import torch
import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 2)

    def forward(self, h):
        return self.fc(h)


head = Head()


def train_step(x, tokens, steps):
    w = torch.randn(3, 5, requires_grad=True)
    emb = nn.Embedding(10, 5)
    for _ in range(steps):
        h = torch.sigmoid(x @ w)  # save
        h.mul_(2)  # write
        head(h + emb(tokens).mean(1)).sum().backward()


def through_head(x):
    return head(x).sum()


def opaque(logits, target):
    return F.cross_entropy(logits, target)


def long_loop(x):
    lin = nn.Linear(4, 2)
    for _ in range(10**12):  # only the first iteration is followed, never listed
        lin(x).sum().backward()


def apply_rotary(x, cos, sin, mask):
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat((-x2, x1), dim=-1)
    out = x * cos + rotated * sin
    out[mask] = 0
    return out


def pool(features, lengths, dim, width):
    return features.sum(dim).view(-1, width) / lengths
"""
_EXAMPLE_ARGS = re.compile(r"`(def example_args\(\): return .*?)` to the module")


def example_args_hint(text: str, name: str) -> str:
    with pytest.raises(VerifyError) as error:
        find_target(text, line_of(text, f"def {name}(") + 1)
    message = str(error.value)
    found = _EXAMPLE_ARGS.search(message)
    assert found is not None, message
    return found.group(1)


def test_function_hint_gives_tensors_of_the_shapes_the_body_implies() -> None:
    text = textwrap.dedent(FUNCTION_TARGET)
    assert example_args_hint(text, "train_step") == (
        "def example_args(): return (torch.randn(2, 3), torch.randint(0, 10, (2, 8)), 16)"
    )
    assert example_args_hint(text, "through_head") == (
        "def example_args(): return (torch.randn(2, 5),)"
    )
    assert example_args_hint(text, "long_loop") == "def example_args(): return (torch.randn(2, 4),)"
    with pytest.raises(VerifyError) as error:
        find_target(text, line_of(text, "def opaque(") + 1)
    assert "verify cannot tell from the body of opaque what shape `logits`, `target`" in str(
        error.value
    )
    assert "return (torch.randn(...), torch.randn(...))` to the module and replace each `...`" in (
        str(error.value)
    )
    # What meets a tensor in arithmetic is a tensor (`x * cos`, `rotated * sin` where
    # `rotated = torch.cat(...)`), and so is a `lengths` divided into one, though its name
    # reads as an optional None; a dimension (`.sum(dim)`) is -1, which always exists; a
    # size stays a count (was: `(torch.randn(...), 16, 16, None)`, ints for tensors).
    assert example_args_hint(text, "apply_rotary") == (
        "def example_args(): return (torch.randn(...), torch.randn(...), torch.randn(...), None)"
    )
    assert example_args_hint(text, "pool") == (
        "def example_args(): return (torch.randn(...), torch.randn(...), -1, 16)"
    )


@needs_torch
@skip_without_torch
def test_the_suggested_example_args_make_verify_run(tmp_path: Path) -> None:
    """Pasted into the file as the message says, the hint runs: before, `(16, 16, 16,)` raised
    "unsupported operand type(s) for @" inside train_step."""
    text = textwrap.dedent(FUNCTION_TARGET)
    hook = example_args_hint(text, "train_step")
    source = write(tmp_path / "step.py", text + "\n\n" + hook + "\n")
    text = source.read_text()
    result = run_verify(str(source), None, line_of(text, "def train_step(") + 1, SETTINGS)
    assert result["status"] == "inplace-error", result
    assert result["mutation"]["line"] == line_of(text, "# write")
    assert result["saved_by"]["line"] == line_of(text, "# save")


def test_constructor_arguments_from_a_parent_modules_defaults() -> None:
    """`Block(dim)` inside `Parent.__init__(self, dim=24, heads=2 * 2)`: dim is 24 there; a
    call naming a parameter without a default does not count."""
    text = HEADER + textwrap.dedent(
        """
        class Block(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.fc = nn.Linear(dim, dim * heads)

            def forward(self, x):
                return self.fc(x)


        def build(width):
            return Block(width, 1)


        class Parent(nn.Module):
            def __init__(self, dim=24, heads=2 * 2, depth=2):
                super().__init__()
                self.blocks = nn.ModuleList([Block(dim, heads=heads) for _ in range(depth)])
        """
    )
    spec = find_target(text, line_of(text, "return self.fc"))
    assert spec["name"] == "Block"
    assert spec["construct"]["args"] == [{"value": 24}]
    assert spec["construct"]["kwargs"] == {"heads": {"value": 4}}
    assert spec["construct"]["source"] == f"the call at line {line_of(text, 'Block(dim')}"
    assert spec["inputs"]["candidates"][0]["args"][0]["shape"] == [2, 24]


def test_message_when_the_input_cannot_be_inferred() -> None:
    text = HEADER + textwrap.dedent(
        """
        from mylib import make_backbone


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.backbone = make_backbone(64)
                self.proj = nn.Linear(64, 64)

            def forward(self, x, mask):
                return self.proj(self.backbone(x)) * mask
        """
    )
    with pytest.raises(VerifyError) as error:
        find_target(text, line_of(text, "class Encoder"))
    message = str(error.value)
    assert message.startswith("VerifyError: cannot infer the input of Encoder.forward(x, mask): ")
    assert "`x` first goes into `make_backbone(64)`" in message
    assert "no layer with a known input shape consumes `mask`" in message
    assert message.endswith(
        "add `def example_inputs(): return (torch.randn(2, 8, 16), None)` to the class"
    )
    hooked = text.replace(
        "    def forward",
        "    @staticmethod\n    def example_inputs():\n        return torch.randn(2, 64), None\n\n"
        "    def forward",
    )
    spec = find_target(hooked, line_of(hooked, "class Encoder"))
    assert spec["inputs"]["hook"] == {"scope": "class", "name": "example_inputs"}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("def f(:\n", 1, "cannot parse <text>: line 1"),
        ("class Plain:\n    x = 1\n", 2, "class Plain, which is not an nn.Module subclass"),
        ("x = 1\n", None, "nothing to verify in <text>"),
        ("async def go():\n    pass\n", 2, "go is async"),
    ],
)
def test_target_errors(text: str, line: int | None, message: str) -> None:
    with pytest.raises(VerifyError, match=re.escape(message)):
        find_target(text, line)


def test_every_shape_fixture_has_a_json_spec() -> None:
    for path in SHAPES:
        text = path.read_text(encoding="utf-8")
        spec = find_target(text, line_of(text, "# verify-target"), path=str(path))
        assert json.loads(json.dumps(spec)) == spec
        assert spec["kind"] == "module"


def test_targets_and_runner_import_neither_torch_nor_pygls() -> None:
    code = (
        "import sys, inplace_lsp.verify.runner, inplace_lsp.verify.targets, inplace_lsp.cli;"
        "print(sorted(m for m in ('torch', 'pygls') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


# =========================================================================== runner (no torch)


def fake_venv(root: Path) -> str:
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    return str(python)


def test_find_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    project = tmp_path / "project"
    source = write(project / "pkg" / "model.py", "import torch\n")
    (project / "pyproject.toml").write_text("")
    assert runner.find_interpreter(str(source)) == runner.Interpreter(
        sys.executable, "the interpreter inplace-lsp runs in"
    )
    conda = fake_venv(tmp_path / "conda")
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path / "conda"))
    assert runner.find_interpreter(str(source)).path == conda
    active = fake_venv(tmp_path / "active")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "active"))
    assert runner.find_interpreter(str(source)) == runner.Interpreter(
        active, "the activated environment $VIRTUAL_ENV"
    )
    workspace = fake_venv(project / ".venv")
    assert runner.find_interpreter(str(source)) == runner.Interpreter(
        workspace, "the project's .venv"
    )
    assert runner.find_interpreter(str(source), root=str(project)).path == workspace
    configured = VerifySettings(python="tools/py")
    chosen = runner.find_interpreter(str(source), configured, root=str(project))
    assert chosen == runner.Interpreter(str(project / "tools" / "py"), "setting verify.python")
    as_dir = VerifySettings(python=str(tmp_path / "conda"))
    assert runner.find_interpreter(str(source), as_dir).path == conda


def test_preload_modules(tmp_path: Path) -> None:
    write(tmp_path / "helpers.py", "")
    text = textwrap.dedent(
        """
        from __future__ import annotations
        import os, json
        import torch.nn as nn
        import numpy as np
        from einops import rearrange
        from helpers import util
        from . import sibling
        try:
            import timm.layers
        except ImportError:
            timm = None
        """
    )
    found = runner.preload_modules(text, str(tmp_path / "model.py"))
    assert found == {"numpy", "einops", "timm.layers"}


def test_describe() -> None:
    ok = {"status": "ok", "target": "ResidualBlock", "device": "cpu", "duration_s": 0.4123}
    assert runner.describe(ok) == "ResidualBlock: forward and backward OK on cpu in 0.41 s"
    failing = {
        "status": "inplace-error",
        "target": "ResidualBlock",
        "mutation": {"path": "/p/model.py", "line": 14},
        "saved_by": {"path": "/p/model.py", "line": 12, "op": "SigmoidBackward0"},
        "related": [],
    }
    assert runner.describe(failing, "/p/model.py") == (
        "ResidualBlock fails: line 14 overwrites the output of torch.sigmoid saved at line 12"
    )
    assert runner.describe_lines(failing, "/p/model.py")[1:] == [
        "  /p/model.py:14: in-place write",
        "  /p/model.py:12: saved by SigmoidBackward0",
    ]
    other = {**failing, "saved_by": {"path": "/p/lib.py", "line": 3, "op": "MulBackward0"}}
    assert runner.describe(other, "/p/model.py") == (
        "ResidualBlock fails: line 14 overwrites a tensor that MulBackward0 saved at /p/lib.py:3"
    )
    leaf = {"status": "leaf-error", "target": "f", "mutation": {"path": "/p/m.py", "line": 3}}
    assert runner.describe(leaf, "/p/m.py").startswith("f fails: line 3 writes in place into a")
    fell_back = {
        **ok,
        "fallback": {
            "device": "cuda:0",
            "exception": "RuntimeError: Expected all tensors to be on the same device\nmore",
        },
    }
    assert runner.describe(fell_back) == (
        "ResidualBlock: forward and backward OK on cpu in 0.41 s [on cuda:0 it raised "
        "RuntimeError: Expected all tensors to be on the same device; ran again on cpu]"
    )
    silent = {**failing, "silent": True}
    assert runner.describe(silent, "/p/model.py") == (
        "ResidualBlock computes wrong gradients: line 14 writes through `.data` into the output "
        "of torch.sigmoid saved at line 12; torch raised nothing and backward used the new values"
    )
    unproven = {
        **ok,
        "not_run": [
            {"line": 9, "code": "IPL001", "reason": "`mask` was None"},
            {"line": 9, "code": "IPL003", "reason": "`mask` was None"},
            {"line": 20, "code": "IPL005", "reason": ""},
        ],
    }
    assert runner.describe(unproven) == (
        "ResidualBlock: forward and backward OK on cpu in 0.41 s, but line 9 (IPL001, IPL003) "
        "did not run: `mask` was None; and line 20 (IPL005) did not run"
    )
    assert runner.describe_lines({**failing, "not_run": unproven["not_run"][2:]}, "/p/m.py")[
        -1
    ] == ("  /p/m.py:20: IPL005 did not run")


def test_missing_interpreter_is_an_error_result(tmp_path: Path) -> None:
    source = write(tmp_path / "m.py", "import torch\ndef run():\n    torch.ones(1).backward()\n")
    result = run_verify(str(source), None, 2, VerifySettings(python=str(tmp_path / "nope")))
    assert result["status"] == "error"
    assert "nope (setting verify.python) does not exist" in result["message"]


def test_a_line_outside_any_class_or_function_or_past_the_end_is_a_clear_error(
    tmp_path: Path,
) -> None:
    source = write(tmp_path / "m.py", MODULE_AT_IMPORT)
    for line, start in ((1, "line 1 of "), (999, "line 999 is past the end of ")):
        result = run_verify(str(source), None, line, Settings())
        assert result["status"] == "error"
        message = result["message"]
        assert message.startswith(f"VerifyError: {start}"), message
        assert "give a line inside one of: class Net (line 5), train() (line 13)" in message
    assert "(17 lines)" in run_verify(str(source), None, 999, Settings())["message"]


MODULE_AT_IMPORT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

def train():
    pass

if __name__ == "__main__":
    train()
"""


def test_the_result_names_the_module_level_code_that_importing_the_file_ran(
    tmp_path: Path,
) -> None:
    source = write(
        tmp_path / "m.py",
        MODULE_AT_IMPORT.replace(
            "if __name__",
            'for epoch in range(3):\n    raise RuntimeError("at import")\nif __name__',
        ),
    )
    result = run_verify(str(source), None, 10, Settings())
    assert result["status"] == "error" and "cannot import" in result["message"]
    assert result["module_code"] == {"path": str(source), "line": 16}
    assert f"  {source}:16: importing the file ran its module-level code" in "\n".join(
        describe_lines(result, str(source))
    )
    # Under the `__main__` guard nothing runs at import: nothing is said.
    source.write_text(MODULE_AT_IMPORT)
    result = run_verify(str(source), None, 10, Settings())
    assert "module_code" not in result


def test_verify_error_becomes_a_result(tmp_path: Path) -> None:
    source = write(tmp_path / "m.py", "import torch\nx = 1\n")
    result = run_verify(str(source), None, None, Settings())
    assert result["status"] == "error"
    assert result["message"].startswith("VerifyError: nothing to verify in ")
    result = run_verify(str(source), None, 2, Settings())
    assert result["message"].endswith(
        "m.py is outside any class or function: verify runs the nn.Module class or the "
        "function around the line it is given; this file has no nn.Module subclass and no "
        "function to run"
    )


# =========================================================================== runs (torch)


def case_run_line(case: Case) -> int:
    return line_of(case.path.read_text(encoding="utf-8"), "def run(")


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_verify_cases(case: Case) -> None:
    """verify pointed at every case's run(): the outcome, and both lines of in-place errors."""
    result = run_verify(str(case.path), None, case_run_line(case), SETTINGS)
    silent = case.silent  # torch raises nothing; the harness sees the `.data` write
    if case.outcome == "refused-error":  # torch raised at the write: where, is the answer
        assert result["status"] == "error", result
        raised = [r["line"] for r in result["related"] if r["message"] == "raised here"]
        assert raised == list(case.errors), result
        return
    assert result["status"] == ("inplace-error" if silent else case.outcome), result
    assert bool(result.get("silent")) == silent, result
    assert result["not_run"] == [], result  # run() runs every flagged line it holds
    assert result["mode"] == "warm"
    if result.get("fallback"):  # failed on CUDA for another reason (mixed devices): CPU rerun
        assert result["fallback"]["device"] == AUTO_DEVICE != "cpu" == result["device"]
    else:
        assert result["device"] == AUTO_DEVICE
    assert result["target"] == "run" and result["kind"] == "function"
    if case.outcome == "leaf-error" and result["mutation"] is not None:
        assert result["mutation"]["line"] == min(case.errors), result
    if result["status"] != "inplace-error":
        return
    (error_line,) = case.write_lines
    (saved_line,) = case.saved_by
    assert result["mutation"] == {"path": norm(case.path), "line": error_line}, result
    assert result["saved_by"]["line"] == saved_line, result
    assert result["saved_by"]["path"] == norm(case.path)


def shape_expectations(text: str) -> tuple[str, str, int | None, int | None]:
    outcome = re.search(r"# outcome: (\S+)", text)
    inputs = re.search(r"# verify-inputs: (.+)", text)
    assert outcome and inputs
    errors = [i + 1 for i, t in enumerate(text.splitlines()) if re.search(r"# error: IPL", t)]
    saved = [i + 1 for i, t in enumerate(text.splitlines()) if t.rstrip().endswith("  # saved-by")]
    return (
        outcome.group(1),
        inputs.group(1).strip(),
        errors[0] if errors else None,
        saved[0] if saved else None,
    )


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("path", SHAPES, ids=lambda p: p.stem)
def test_shapes(path: Path) -> None:
    """Realistic module shapes, pointed at the class: constructed, fed, run, judged."""
    text = path.read_text(encoding="utf-8")
    outcome, inputs, error_line, saved_line = shape_expectations(text)
    result = run_verify(str(path), text, line_of(text, "# verify-target"), SETTINGS)
    assert result["status"] == outcome, result
    assert result["inputs"] == inputs
    assert result["kind"] == "module"
    if outcome == "ok":
        assert result["mutation"] is None and result["saved_by"] is None
        assert runner.describe(result).startswith(f"{result['target']}: forward and backward OK")
    if error_line is not None:
        assert result["mutation"] == {"path": norm(path), "line": error_line}
    if saved_line is not None:
        assert result["saved_by"]["line"] == saved_line


@needs_torch
@skip_without_torch
def test_train_step_shows_a_graph_kept_across_steps() -> None:
    path = next(p for p in SHAPES if p.stem == "cached_penalty")
    text = path.read_text(encoding="utf-8")
    line = line_of(text, "# verify-target")
    assert run_verify(str(path), text, line, SETTINGS)["status"] == "ok"
    result = run_verify(str(path), text, line, SETTINGS, train_step=True)
    assert result["status"] == "inplace-error"
    assert result["train_step"] is True
    assert result["saved_by"] == {
        "path": norm(path),
        "line": line_of(text, "train-step: saved-by"),
        "op": "PowBackward0",
    }
    assert "optimizer.step()" in result["message"]


@needs_torch
@skip_without_torch
def test_function_returning_a_tensor_is_reduced_and_backpropagated(tmp_path: Path) -> None:
    source = write(
        tmp_path / "loss.py",
        """
        import torch


        def compute():
            w = torch.randn(3, requires_grad=True)
            h = torch.exp(w)  # save
            h.add_(1)  # write
            return {"loss": h, "count": 3}
        """,
    )
    text = source.read_text()
    result = run_verify(str(source), None, 5, SETTINGS)
    assert result["status"] == "inplace-error"
    assert result["mutation"]["line"] == line_of(text, "# write")
    assert result["saved_by"]["line"] == line_of(text, "# save")


@needs_torch
@skip_without_torch
def test_editor_buffer_is_what_runs(tmp_path: Path) -> None:
    """The unsaved buffer runs under the file's path: its lines, not the disk's."""
    disk = """
        import torch


        def run():
            x = torch.randn(3, requires_grad=True)
            torch.sigmoid(x).sum().backward()
        """
    source = write(tmp_path / "model.py", disk)
    buffer = textwrap.dedent(
        """
        import torch


        def run():
            x = torch.randn(3, requires_grad=True)
            h = torch.sigmoid(x)  # save
            h += 1  # write
            h.sum().backward()
        """
    ).lstrip("\n")
    result = run_verify(str(source), buffer, 4, SETTINGS)
    assert result["status"] == "inplace-error"
    assert result["mutation"] == {"path": norm(source), "line": line_of(buffer, "# write")}
    assert result["saved_by"]["line"] == line_of(buffer, "# save")


@needs_torch
@skip_without_torch
def test_package_relative_imports(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "__init__.py", "")
    write(
        tmp_path / "pkg" / "layers.py",
        """
        from torch import nn


        def make(dim):
            return nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        """,
    )
    source = write(
        tmp_path / "pkg" / "model.py",
        """
        import torch
        from torch import nn

        from .layers import make


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(5, 5)
                self.body = make(5)

            def forward(self, x):
                return self.body(self.fc(x))
        """,
    )
    result = run_verify(str(source), None, 7, SETTINGS)
    assert result["status"] == "ok", result
    assert result["inputs"] == "float32(2, 5)"


HANG = """
import os
import shutil
import subprocess
import sys

import torch
from torch import nn


class Hang(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x = self.fc(x)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.path.join(os.path.dirname(__file__), "pids"), "a") as pids:
            pids.write(f"{os.getpid()} {child.pid}\\n")
        while True:
            pass
"""


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _wait_dead(pids: list[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(_dead(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _torch_import_seconds() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch"], check=True, timeout=120)
    return time.monotonic() - started


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_hang_times_out_and_kills_the_process_group(tmp_path: Path, warm: bool) -> None:
    pid_file = tmp_path / "pids"
    source = write(tmp_path / "hang.py", HANG)
    if warm:  # start the worker outside the timed part
        run_verify(str(source), "import torch\ndef run():\n    pass\n", 2, SETTINGS)
    # A cold run imports torch inside the time limit: leave room for that (4 s on a GPU machine).
    limit = 3 if warm else 3 + math.ceil(2 * _torch_import_seconds())
    settings = VerifySettings(python=sys.executable, timeout_s=float(limit))
    started = time.monotonic()
    result = run_verify(str(source), None, 10, settings, warm=warm)
    elapsed = time.monotonic() - started
    assert result["status"] == "timeout", result
    assert result["message"] == (
        f"Hang did not finish within {limit} s; verify killed its process group "
        "(raise verify.timeout_s if it is just slow)"
    )
    assert elapsed < limit + 4.0
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) == 2
    assert _wait_dead(pids), pids  # the job and the process it started
    if warm:  # the worker itself survives and takes the next job
        (worker,) = runner.workers()
        ok = run_verify(str(source), "import torch\ndef run():\n    pass\n", 2, SETTINGS)
        assert ok["status"] == "ok" and ok["worker_pid"] == worker.pid


@needs_torch
@skip_without_torch
def test_cancellation_kills_the_job(tmp_path: Path) -> None:
    source = write(tmp_path / "hang.py", HANG)
    run_verify(str(source), "import torch\ndef run():\n    pass\n", 2, SETTINGS)  # warm up
    cancel = threading.Event()
    timer = threading.Timer(1.0, cancel.set)
    timer.start()
    started = time.monotonic()
    try:
        result = run_verify(str(source), None, 10, SETTINGS, cancel)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5.0
    assert result["status"] == "error" and result["cancelled"] is True
    assert result["message"] == "verify was cancelled; its process group was killed"
    assert _wait_dead([int(p) for p in (tmp_path / "pids").read_text().split()])
    # a callable works as well, and an already-cancelled request never starts
    assert run_verify(str(source), None, 10, SETTINGS, lambda: True)["cancelled"] is True


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_abort_at_import(tmp_path: Path, warm: bool) -> None:
    source = write(
        tmp_path / "crash.py",
        """
        import os
        import sys

        import torch

        print("about to abort", file=sys.stderr, flush=True)
        os.abort()


        def run():
            torch.ones(1, requires_grad=True).sum().backward()
        """,
    )
    result = run_verify(str(source), None, 10, SETTINGS, warm=warm)
    assert result["status"] == "error"
    assert result["mode"] == ("warm" if warm else "cold")
    assert "killed by SIGABRT (signal 6) without a report" in result["message"]
    assert "about to abort" in result["stderr_tail"]


@needs_torch
@skip_without_torch
def test_exception_at_import(tmp_path: Path) -> None:
    text = """
        import torch

        raise RuntimeError("boom at import")  # raise


        def run():
            pass
        """
    source = write(tmp_path / "broken.py", text)
    result = run_verify(str(source), None, 7, SETTINGS)
    assert result["status"] == "error"
    assert result["message"] == f"cannot import {source}: RuntimeError: boom at import"
    assert result["related"] == [
        {"path": norm(source), "line": 3, "message": "raised here"},
    ]
    assert "Traceback" in result["stderr_tail"] and "boom at import" in result["stderr_tail"]


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_huge_output_is_truncated(tmp_path: Path, warm: bool) -> None:
    source = write(
        tmp_path / "chatty.py",
        """
        import sys

        import torch


        def run():
            chunk = "x" * (1 << 20) + "\\n"
            for _ in range(25):
                sys.stdout.write(chunk)
                sys.stderr.write(chunk)
            print("the end")
            torch.ones(2, requires_grad=True).sum().backward()
        """,
    )
    if warm:
        run_verify(str(source), "import torch\ndef run():\n    pass\n", 2, SETTINGS)
    tracemalloc.start()
    try:
        result = run_verify(str(source), None, 6, SETTINGS, warm=warm)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["status"] == "ok", result["message"]
    assert result["output_bytes"] >= 50 * (1 << 20)
    assert result["output_truncated"] is True
    assert len(result["stderr_tail"]) <= runner.STDERR_TAIL_CHARS + 3
    assert "the end" in result["stderr_tail"]
    assert peak < 8 * (1 << 20), peak  # the 50 MB never sat in this process


@needs_torch
@skip_without_torch
def test_memory_limit_on_cpu(tmp_path: Path) -> None:
    source = write(
        tmp_path / "greedy.py",
        """
        import torch


        def run():
            big = torch.ones(1 << 30)  # 4 GiB
            big.requires_grad_(True)
            big.sum().backward()
        """,
    )
    text = source.read_text()
    spec = find_target(text, 5, path=str(source))
    spec["device"] = "cpu"  # the limit applies to CPU runs only
    options = RunOptions(python=sys.executable, memory_mb=1536, timeout_s=60)
    result = runner.run_spec(spec, options)
    assert result["status"] == "error"
    assert "alloc" in result["message"].lower(), result["message"]


@pytest.fixture(scope="module")
def torchless_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    target = tmp_path_factory.mktemp("venv") / "env"
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        subprocess.run(
            [base, "-m", "venv", "--without-pip", str(target)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot create a virtual environment: {exc}")
    python = target / "bin" / "python"
    if not python.exists():
        pytest.skip("the virtual environment has no bin/python")
    probe = subprocess.run([str(python), "-c", "import torch"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the base interpreter provides torch to its venvs")
    return str(python)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_missing_torch_in_the_target_interpreter(
    tmp_path: Path, torchless_python: str, warm: bool
) -> None:
    source = write(tmp_path / "m.py", "import torch\n\ndef run():\n    pass\n")
    settings = VerifySettings(python=torchless_python)
    result = run_verify(str(source), None, 3, settings, warm=warm)
    assert result["status"] == "error"
    assert result["message"] == f"torch is not installed in {torchless_python}: pip install torch"
    assert result["mode"] == ("warm" if warm else "cold")


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_launcher_prefix(tmp_path: Path, warm: bool) -> None:
    record = tmp_path / "launched"
    launcher = tmp_path / "launch.sh"
    # like srun: records its arguments, drops its own --options, runs the rest
    launcher.write_text(
        f'#!/bin/sh\necho "$@" >> "{record}"\n'
        'while [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n'
    )
    launcher.chmod(0o755)
    source = write(
        tmp_path / "m.py",
        "import torch\n\ndef run():\n    torch.ones(2, requires_grad=True).sum().backward()\n",
    )
    settings = VerifySettings(python=sys.executable, launcher=(str(launcher), "--gres=gpu:1"))
    result = run_verify(str(source), None, 3, settings, warm=warm if warm else None)
    assert result["status"] == "ok", result
    assert result["mode"] == ("warm" if warm else "cold")  # a launcher means cold by default
    words = record.read_text().split()
    assert words[0] == "--gres=gpu:1" and words[1] == sys.executable
    assert words[2] == str(runner.WORKER_PATH if warm else runner.HARNESS_PATH)
    if warm:
        runner.shutdown_workers()


@needs_torch
@skip_without_torch
def test_warm_worker_is_reused_and_faster(tmp_path: Path) -> None:
    source = write(
        tmp_path / "m.py",
        "import torch\n\ndef run():\n    torch.ones(2, requires_grad=True).sum().backward()\n",
    )
    runner.shutdown_workers()
    first = run_verify(str(source), None, 3, SETTINGS)
    second = run_verify(str(source), None, 3, SETTINGS)
    assert first["status"] == second["status"] == "ok"
    assert first["worker_pid"] == second["worker_pid"]
    assert second["wall_s"] * 3 < first["wall_s"], (first["wall_s"], second["wall_s"])


@needs_torch
@skip_without_torch
def test_worker_restarts_after_it_dies(tmp_path: Path) -> None:
    source = write(
        tmp_path / "m.py",
        "import torch\n\ndef run():\n    torch.ones(2, requires_grad=True).sum().backward()\n",
    )
    first = run_verify(str(source), None, 3, SETTINGS)
    os.kill(first["worker_pid"], signal.SIGKILL)
    assert _wait_dead([first["worker_pid"]])
    second = run_verify(str(source), None, 3, SETTINGS)
    assert second["status"] == "ok" and second["mode"] == "warm"
    assert second["worker_pid"] != first["worker_pid"]


@needs_torch
@skip_without_torch
def test_worker_restarts_when_the_imports_change(tmp_path: Path) -> None:
    plain = write(tmp_path / "a.py", "import torch\n\ndef run():\n    pass\n")
    more = write(
        tmp_path / "b.py", "import packaging.version\nimport torch\n\ndef run():\n    pass\n"
    )
    runner.shutdown_workers()
    first = run_verify(str(plain), None, 3, SETTINGS)
    second = run_verify(str(more), None, 4, SETTINGS)
    third = run_verify(str(plain), None, 3, SETTINGS)
    assert first["worker_pid"] != second["worker_pid"] == third["worker_pid"]
    (worker,) = runner.workers()
    assert "packaging.version" in worker.hello["preloaded"]


@needs_torch
@skip_without_torch
@pytest.mark.skipif(_has_cuda(), reason="checks the message when CUDA is missing")
def test_cuda_requested_without_cuda(tmp_path: Path) -> None:
    source = write(tmp_path / "m.py", "import torch\n\ndef run():\n    pass\n")
    result = run_verify(str(source), None, 3, SETTINGS, device="cuda")
    assert result["status"] == "error"
    assert result["message"].startswith("CUDA was requested but torch.cuda.is_available() is")


@needs_torch
@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs CUDA (torch.cuda.is_available() is False)")
@pytest.mark.parametrize("name", ["se_gate_bug", "transformer_block"])
def test_gpu_runs_report_the_device_and_the_same_lines(name: str) -> None:
    path = next(p for p in SHAPES if p.stem == name)
    text = path.read_text(encoding="utf-8")
    outcome, inputs, error_line, saved_line = shape_expectations(text)
    result = run_verify(str(path), text, line_of(text, "# verify-target"), SETTINGS)
    assert result["device"] == "cuda:0"
    assert result["status"] == outcome and result["inputs"] == inputs
    assert runner.describe(result).endswith(" s") or outcome != "ok"
    if error_line is not None:
        assert result["mutation"]["line"] == error_line
        assert result["saved_by"]["line"] == saved_line


MIXED_DEVICES = """
import torch

SCALE = torch.tensor([2.0, 3.0])  # made at import: on the CPU


def run():
    x = torch.ones(2, requires_grad=True)  # under verify's cuda default device
    (x * SCALE).sum().backward()
"""


@needs_torch
@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs CUDA (torch.cuda.is_available() is False)")
def test_gpu_auto_falls_back_to_cpu_when_the_code_mixes_devices(tmp_path: Path) -> None:
    source = write(tmp_path / "mixed.py", MIXED_DEVICES)
    auto = run_verify(str(source), None, 8, SETTINGS)
    assert (auto["status"], auto["device"]) == ("ok", "cpu"), auto
    assert auto["fallback"]["device"] == "cuda:0"
    assert "device" in auto["fallback"]["exception"]
    assert "; ran again on cpu]" in runner.describe(auto)
    asked = run_verify(str(source), None, 8, SETTINGS, device="cuda")  # no fallback when asked
    assert (asked["status"], asked["device"], asked.get("fallback")) == ("error", "cuda:0", None)


# =========================================================================== CLI


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "verify", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_torch
@skip_without_torch
def test_cli_text_and_exit_codes(tmp_path: Path) -> None:
    path = next(p for p in SHAPES if p.stem == "se_gate_bug")
    text = path.read_text(encoding="utf-8")
    result = run_cli(f"{path}:{line_of(text, 'def forward')}", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"SEGate fails: line {line_of(text, '# error:')} overwrites the output of torch.sigmoid "
        f"saved at line {line_of(text, '# saved-by')}"
    )
    assert lines[1] == f"  {norm(path)}:{line_of(text, '# error:')}: in-place write"
    assert lines[2] == f"  {norm(path)}:{line_of(text, '# saved-by')}: saved by SigmoidBackward0"
    # A file given relative: every location (and the JSON's) is relative too, as `check`'s.
    shutil.copy(path, tmp_path / "gate.py")
    relative = run_cli(f"gate.py:{line_of(text, 'def forward')}", "--device", "cpu", cwd=tmp_path)
    assert relative.stdout.splitlines()[1:3] == [
        f"  gate.py:{line_of(text, '# error:')}: in-place write",
        f"  gate.py:{line_of(text, '# saved-by')}: saved by SigmoidBackward0",
    ]
    report = json.loads(
        run_cli("gate.py", "--device", "cpu", "--format", "json", cwd=tmp_path).stdout
    )
    assert (report["mutation"]["path"], report["saved_by"]["path"]) == ("gate.py", "gate.py")
    assert str(tmp_path) not in json.dumps(report["mutation"])


@needs_torch
@skip_without_torch
def test_cli_json_ok(tmp_path: Path) -> None:
    path = next(p for p in SHAPES if p.stem == "mlp")
    result = run_cli(str(path), "--format", "json", "--timeout", "100", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {"status", "target", "device", "mutation", "saved_by", "message", "duration_s"} <= set(
        report
    )
    assert (report["status"], report["target"], report["device"]) == ("ok", "MLP", AUTO_DEVICE)
    assert report["mode"] == "cold"


def test_cli_errors_exit_2(tmp_path: Path) -> None:
    missing = run_cli("m.py:3", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (2, "m.py: no such file\n")
    write(tmp_path / "plain.py", "import torch\nx = 1\n")
    nothing = run_cli("plain.py", cwd=tmp_path)
    assert nothing.returncode == 2
    assert nothing.stdout.startswith("plain.py: error: VerifyError: nothing to verify in ")
    usage = run_cli("plain.py:0", cwd=tmp_path)
    assert usage.returncode == 2 and "lines are numbered from 1" in usage.stderr
    bad_timeout = run_cli("plain.py", "--timeout", "-1", cwd=tmp_path)
    assert bad_timeout.returncode == 2 and "--timeout" in bad_timeout.stderr


@needs_torch
@skip_without_torch
def test_the_users_own_modules_are_fresh_in_every_job(tmp_path: Path) -> None:
    """The warm worker never keeps the user's code: an edit to an imported helper shows."""
    write(tmp_path / "helpers.py", "def act(h):\n    return h * 2\n")
    source = write(
        tmp_path / "model.py",
        """
        import torch

        from helpers import act


        def run():
            x = torch.randn(3, requires_grad=True)
            h = torch.tanh(x)
            act(h).sum().backward()
        """,
    )
    assert runner.preload_modules(source.read_text(), str(source)) == frozenset()
    first = run_verify(str(source), None, 6, SETTINGS)
    assert first["status"] == "ok", first
    write(tmp_path / "helpers.py", "def act(h):\n    h.mul_(2)  # write\n    return h\n")
    second = run_verify(str(source), None, 6, SETTINGS)
    assert second["status"] == "inplace-error", second
    assert second["worker_pid"] == first["worker_pid"]
    assert second["mutation"] == {"path": norm(tmp_path / "helpers.py"), "line": 2}


# =========================================================================== lines that did not run

MASKED = """
import torch
from torch import nn


class MaskedPool(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, pad_mask=None):
        h = torch.sigmoid(self.fc(x))
        if pad_mask is not None:
            h *= pad_mask  # flagged
        return h.sum(dim=1)
"""


@needs_torch
@skip_without_torch
def test_a_flagged_line_that_did_not_run_is_named_not_ok(tmp_path: Path) -> None:
    """The bug sits under `if pad_mask is not None:`; the synthesized inputs leave pad_mask
    None, so forward and backward pass without ever running it: the result must say so."""
    source = write(tmp_path / "masked.py", MASKED)
    text = source.read_text()
    flagged = line_of(text, "# flagged")
    result = run_verify(str(source), None, line_of(text, "class MaskedPool"), SETTINGS)
    assert result["status"] == "ok", result  # what torch did: nothing raised
    reason = "`pad_mask` was None; add an `example_inputs()` that passes one"
    assert result["not_run"] == [{"line": flagged, "code": "IPL001", "reason": reason}]
    assert result["message"].endswith(f"but line {flagged} (IPL001) did not run: {reason}")
    assert runner.describe(result, str(source)).endswith(
        f", but line {flagged} (IPL001) did not run: {reason}"
    )
    # With inputs that take the branch, the line runs and verify proves the bug.
    hooked = text.replace(
        "    def forward",
        "    @staticmethod\n    def example_inputs():\n"
        "        return torch.randn(2, 16), torch.ones(2, 16)\n\n    def forward",
    )
    proven = run_verify(str(source), hooked, line_of(hooked, "class MaskedPool"), SETTINGS)
    assert proven["status"] == "inplace-error", proven
    assert proven["mutation"]["line"] == line_of(hooked, "# flagged")
    assert proven["not_run"] == []


def test_cli_says_which_flagged_line_did_not_run(tmp_path: Path) -> None:
    source = write(tmp_path / "masked.py", MASKED)
    line = line_of(source.read_text(), "# flagged")
    out = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "verify", f"{source}:5", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if not _has_torch():
        pytest.skip("torch is not installed")
    result = json.loads(out.stdout)
    assert out.returncode == 0, out.stderr
    assert [entry["line"] for entry in result["not_run"]] == [line]
    text = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "verify", f"{source}:5"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert f"but line {line} (IPL001) did not run: `pad_mask` was None" in text.stdout


def _reasons(source: str, ran: list[int], spec: dict[str, Any] | None = None) -> dict[int, str]:
    text = textwrap.dedent(source).lstrip("\n")
    flagged = [(i + 1, "IPL001") for i, t in enumerate(text.splitlines()) if "# flagged" in t]
    found = coverage.not_run(text, spec or {"name": "f", "kind": "function"}, flagged, ran)
    return {entry["line"]: entry["reason"] for entry in found}


def test_not_run_reasons() -> None:
    """The reason is read off the innermost statement around the line that did run."""
    branches = """
        def f(x, mask=None, training=True):
            if mask is not None:
                x += 1  # flagged
            if not training:
                x += 2  # flagged
            elif x.sum() > 0:
                x += 3  # flagged
            else:
                x += 4  # flagged
            for item in []:
                x += 5  # flagged
            try:
                x = x * 1
            except ValueError:
                x += 6  # flagged
            return x
        """
    spec = {"name": "f", "kind": "function", "parameters": ["x", "mask", "training"]}
    assert _reasons(branches, [2, 4, 6, 10, 12, 13, 16], spec) == {
        3: "`mask` was None; add an `example_args()` that passes one",
        5: "`training` was true; add an `example_args()` that takes this branch",
        7: "`x.sum() > 0` was false; add an `example_args()` that takes this branch",
        9: "`x.sum() > 0` was true; add an `example_args()` that takes this branch",
        11: "`[]` was empty",
        15: "no exception was raised",
    }
    early = """
        def f(x):
            if x is None:
                return 0
            x += 1  # flagged
            return x
        """
    assert _reasons(early, [2, 3]) == {4: "the `return` at line 3 ran first"}
    raised = """
        def f(x):
            for step in range(3):
                x = step / 0
                x += 1  # flagged
        """
    assert _reasons(raised, [2, 3]) == {4: "the run stopped at line 3"}  # not "was empty"
    module = """
        class M:
            def forward(self, x):
                return self.helper(x)

            def helper(self, x):
                x += 1  # flagged
                return x

            def unused(self, x):
                x += 1  # flagged
        """
    spec = {
        "name": "M",
        "kind": "module",
        "parameters": ["x"],
        "inputs": {"hook": {"name": "example_inputs"}},
    }
    assert _reasons(module, [3], spec) == {
        6: "`helper()` was never called",
        10: "`unused()` was never called",
    }
    hooked = "def f(x, m=None):\n    if m is not None:\n        x += 1  # flagged\n"
    spec = {
        "name": "f",
        "kind": "module",
        "parameters": ["x", "m"],
        "inputs": {"hook": {"name": "example_inputs"}},
    }
    assert _reasons(hooked, [2], spec) == {3: "`m` was None; make `example_inputs()` pass one"}
    assert _reasons("def f(:\n    x  # flagged\n", []) == {2: ""}  # unparsable: no reason
    assert coverage.not_run("def f():\n    pass\n", {"name": "f"}, [(2, "IPL001")], [2]) == []


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_torch_warning_about_numpy_does_not_reach_the_user(tmp_path: Path, warm: bool) -> None:
    """torch without numpy warns "Failed to initialize NumPy" at import: not the user's news."""
    runner.shutdown_workers()  # a fresh worker: the warning comes with its import of torch
    source = write(
        tmp_path / "loud.py",
        """
        import warnings

        import torch


        def run():
            warnings.warn("the user's own warning")
            torch.ones(2, requires_grad=True).exp().sum().backward()
        """,
    )
    result = run_verify(str(source), None, 7, SETTINGS, warm=warm)
    assert result["status"] == "ok", result
    assert "the user's own warning" in result["stderr_tail"]
    assert "NumPy" not in result["stderr_tail"]
    workers = runner.workers()
    assert all("NumPy" not in worker.stderr.text() for worker in workers)


ANOMALY_ON = """
import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))  # save
        h += 1
        return h
"""


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_the_users_output_never_shows_the_tools_frames(tmp_path: Path, warm: bool) -> None:
    """Anomaly mode prints the forward traceback of the failing node: the user's frames (and
    torch's) stay, the harness's and the worker's go; so do the frames of an import error."""
    source = write(tmp_path / "gate.py", ANOMALY_ON)
    result = run_verify(str(source), None, 7, SETTINGS, warm=warm)
    assert result["status"] == "inplace-error", result
    tail = result["stderr_tail"]
    assert "Error detected in SigmoidBackward0" in tail
    assert f'File "{source}", line {line_of(source.read_text(), "# save")}, in forward' in tail
    assert "harness.py" not in tail and "worker.py" not in tail, tail
    assert tail.count("Error detected in") == 1, tail  # not the harness's own probe
    broken = write(tmp_path / "broken.py", "import torch\n\n\ndef run():\n    pass\n\n1 / 0\n")
    failed = run_verify(str(broken), None, 4, SETTINGS, warm=warm)
    assert failed["status"] == "error" and "ZeroDivisionError" in failed["stderr_tail"]
    assert f'File "{broken}", line 7' in failed["stderr_tail"]
    assert "harness.py" not in failed["stderr_tail"], failed["stderr_tail"]


def test_flagged_lines_follow_the_projects_settings_and_noqa(tmp_path: Path) -> None:
    """Only what the user would see flagged counts: `ignore` and `# noqa` drop a finding."""
    source = write(tmp_path / "masked.py", MASKED)
    text = source.read_text()
    spec = find_target(text, line_of(text, "class MaskedPool"), path=str(source))
    flagged = line_of(text, "# flagged")
    assert runner._flagged(text, str(source), spec, None) == [(flagged, "IPL001")]
    assert runner._flagged(text, str(source), spec, Settings(ignore=("IPL001",))) == []
    quiet = text.replace("# flagged", "# noqa: IPL001")
    assert runner._flagged(quiet, str(source), spec, Settings()) == []


# =========================================================================== processes
# No process of a job outlives the request: not threads that keep the interpreter alive, not
# processes the user's code detaches, not when verify itself is terminated or killed.

SPAWN = """
import os
import shutil
import subprocess
import sys
import time

import torch
from torch import nn

PIDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids")
SLEEPER = (
    "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\\\n'); time.sleep(600)"
)


def record(pid):
    with open(PIDS, "a") as pids:
        pids.write(f"{pid}\\n")


def spawn_all():
    record(os.getpid())  # the job itself
    subprocess.Popen([sys.executable, "-c", SLEEPER, PIDS])  # in the job's process group
    subprocess.Popen([sys.executable, "-c", SLEEPER, PIDS], start_new_session=True)
    middle = os.fork()  # a daemon: double fork, new session, the middle process exits
    if middle == 0:
        os.setsid()
        if os.fork() == 0:
            record(os.getpid())
            time.sleep(600)
        os._exit(0)
    os.waitpid(middle, 0)
    while len(open(PIDS).read().split()) < 4:  # every process is running before we go on
        time.sleep(0.01)


class Spawn(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        spawn_all()
        LOOP
        return self.fc(x)
"""


def spawning(tmp_path: Path, forever: bool) -> Path:
    loop = "while True:\n            pass" if forever else "pass"
    return write(tmp_path / "spawn.py", SPAWN.replace("LOOP", loop))


def _job_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _wait_for_pids(tmp_path: Path, count: int, proc: subprocess.Popen[str]) -> list[int]:
    deadline = time.monotonic() + 120  # a cold start imports torch
    while time.monotonic() < deadline and proc.poll() is None:
        pids = _job_pids(tmp_path)
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"the job did not start its processes: {_job_pids(tmp_path)}")


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@needs_torch
@skip_without_torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="detaching needs Linux /proc")
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_detached_processes_do_not_outlive_the_job(tmp_path: Path, warm: bool) -> None:
    source = spawning(tmp_path, forever=False)
    try:
        result = run_verify(str(source), None, None, SETTINGS, warm=warm)
        assert result["status"] == "ok", result
        pids = _job_pids(tmp_path)
        assert len(pids) == 4
        assert _wait_dead(pids), [pid for pid in pids if not _dead(pid)]
    finally:
        _kill_all(_job_pids(tmp_path))


SERVER = """
import sys
from inplace_lsp.verify.runner import run_verify
from inplace_lsp.config import VerifySettings
print(run_verify(sys.argv[1], None, None, VerifySettings(python=sys.executable), warm=True))
"""


@needs_torch
@skip_without_torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="detaching needs Linux /proc")
@pytest.mark.parametrize(
    ("how", "number"),
    [
        ("cli", signal.SIGTERM),
        ("cli", signal.SIGHUP),
        ("cli", signal.SIGKILL),
        ("worker", signal.SIGKILL),  # the server dies; its warm worker runs the job
    ],
    ids=["cli-SIGTERM", "cli-SIGHUP", "cli-SIGKILL", "worker-SIGKILL"],
)
def test_stopping_verify_kills_every_process_of_the_job(
    tmp_path: Path, how: str, number: int
) -> None:
    source = spawning(tmp_path, forever=True)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    if how == "cli":
        command = [sys.executable, "-m", "inplace_lsp", "verify", str(source), "--timeout", "300"]
    else:
        command = [sys.executable, "-c", SERVER, str(source)]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    pids: list[int] = []
    try:
        pids = _wait_for_pids(tmp_path, 4, proc)
        proc.send_signal(number)
        _, stderr = proc.communicate(timeout=10)
        assert _wait_dead(pids), [pid for pid in pids if not _dead(pid)]
        if number != signal.SIGKILL:
            assert proc.returncode == 128 + number, stderr
            name = signal.Signals(number).name
            assert stderr.endswith(f"inplace-lsp: stopped by {name}; the verify job was killed\n")
    finally:
        proc.kill()
        proc.communicate()
        _kill_all(pids or _job_pids(tmp_path))


THREAD = """
import threading
import time

import torch
from torch import nn


class Threaded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon
        return self.fc(x)
"""


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_thread_left_running_does_not_hold_the_report(tmp_path: Path, warm: bool) -> None:
    source = write(tmp_path / "threaded.py", THREAD)
    limit = 3 + math.ceil(2 * _torch_import_seconds())
    settings = VerifySettings(python=sys.executable, timeout_s=float(limit))
    result = run_verify(str(source), None, None, settings, warm=warm)
    assert result["status"] == "ok", result
    assert result["message"] == "forward and backward ran without autograd errors"


STOPS = """
import sys

import torch
from torch import nn


class Stops(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        STOP  # stop
        return self.fc(x)
"""


@needs_torch
@skip_without_torch
@pytest.mark.parametrize(
    ("stop", "message"),
    [
        ("sys.exit(0)", "the code called sys.exit(0) during forward"),
        ("sys.exit()", "the code called sys.exit() during forward"),
        ("sys.exit('bye')", "the code called sys.exit('bye') during forward"),
        ("raise KeyboardInterrupt", "the code raised KeyboardInterrupt during forward"),
    ],
)
def test_sys_exit_and_keyboard_interrupt_are_the_users_code(
    tmp_path: Path, stop: str, message: str
) -> None:
    text = STOPS.replace("STOP", stop)
    source = write(tmp_path / "stops.py", text)
    result = run_verify(str(source), None, None, SETTINGS)
    assert (result["status"], result["message"]) == ("error", message), result
    assert result["related"] == [
        {
            "path": norm(source),
            "line": line_of(source.read_text(), "# stop"),
            "message": "raised here",
        }
    ]


EXITS = """
import os
import sys

import torch
from torch import nn


class Exits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x = self.fc(x)
        print("UserWarning: an unrelated warning", file=sys.stderr, flush=True)
        os._exit(3)
"""


@needs_torch
@skip_without_torch
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_an_exit_message_names_no_unrelated_output(tmp_path: Path, warm: bool) -> None:
    source = write(tmp_path / "exits.py", EXITS)
    result = run_verify(str(source), None, None, SETTINGS, warm=warm)
    assert result["status"] == "error"
    assert result["message"] == "the verify process exited with code 3 without a report"
    assert "UserWarning: an unrelated warning" in result["stderr_tail"]


def test_the_cause_of_an_exit_is_the_last_exception_line() -> None:
    output = (
        "Traceback (most recent call last):\n"
        '  File "m.py", line 3, in <module>\n'
        "    f()\n"
        "ValueError: first\n"
        "Traceback (most recent call last):\n"
        '  File "m.py", line 9, in <module>\n'
        "RuntimeError: the real one\n"
        "/torch/__init__.py:1: UserWarning: unrelated\n"
    )
    assert runner._cause_line(output) == "RuntimeError: the real one"
    assert runner._cause_line("Fatal Python error: Segmentation fault\n\nstack\n") == (
        "Fatal Python error: Segmentation fault"
    )
    assert runner._cause_line("/torch/x.py:1: UserWarning: unrelated\n") is None


DELETES = """\
import os
import torch
from torch import nn
from helper import WIDTH  # a module of the project: importable wherever it runs

for name in os.listdir("."):  # module-level code that cleans "its" folder
    if name.endswith(".txt"):
        os.remove(name)
with open("where.txt", "w") as f:
    f.write(os.getcwd())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, WIDTH)

    def forward(self, x):
        return self.fc(x)
"""


def test_verify_runs_the_code_in_a_temporary_folder_unless_told_the_project(
    tmp_path: Path,
) -> None:
    """The target's module deletes the .txt files of its working directory: by default that is
    a new temporary folder (gone after the run, the project's files untouched, the project's
    modules still importable); with verify.cwd = "project" it is the project's folder, and the
    result says which it was."""
    (tmp_path / "notes.txt").write_text("keep me", encoding="utf-8")
    write(tmp_path / "helper.py", "WIDTH = 4\n")
    source = write(tmp_path / "net.py", DELETES)
    result = run_verify(str(source), None, None, Settings(), root=str(tmp_path))
    assert result["status"] == "ok", result
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert not (tmp_path / "where.txt").exists()
    ran_in = result["cwd"]
    assert ran_in["kind"] == "temporary" and not os.path.exists(ran_in["path"])
    assert os.path.realpath(ran_in["path"]) != os.path.realpath(tmp_path)

    project = Settings(verify=VerifySettings(cwd="project"))
    result = run_verify(str(source), None, None, project, root=str(tmp_path))
    assert result["status"] == "ok", result
    assert not (tmp_path / "notes.txt").exists()  # asked for: it ran in the project
    assert (tmp_path / "where.txt").read_text(encoding="utf-8") == str(tmp_path)
    assert result["cwd"] == {"kind": "project", "path": str(tmp_path)}


def test_the_verify_cwd_setting_is_read_and_checked() -> None:
    settings, problems = from_wire({"verify": {"cwd": "project"}})
    assert settings.verify.cwd == "project" and not problems
    settings, problems = from_wire({"verify": {"cwd": "home"}})
    assert settings.verify.cwd == "temporary" and problems
