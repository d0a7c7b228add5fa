"""IPL003 inplace-activation."""

from __future__ import annotations

from collections.abc import Iterable

from inplace_lsp.analysis.dataflow import Facts
from inplace_lsp.analysis.findings import Confidence, Finding, Related, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule, describe_save, fix_recipe

KINDS = frozenset({"inplace_module", "inplace_kwarg"})


class InplaceActivation(Rule):
    """An in-place activation (`nn.ReLU(inplace=True)`, `F.relu(x, inplace=True)`, `x.relu_()`)
    whose input was saved by an earlier op or is read again afterwards.

    `inplace=True` saves memory by overwriting the activation's input. That is safe on the
    output of nn.Linear, convolutions, BatchNorm and nn.GELU (they save their input, not their
    output), but fails at backward() on a tensor an earlier op saved: the output of
    torch.sigmoid, tanh or softmax (they save their output), or the input of nn.GELU or an
    operand of `a * b`. It also changes the values of any other name that still refers to the
    input.

    When the module is built in `__init__` and called in `forward`, the finding sits on the
    `inplace=True` in the constructor, where the fix goes.

    Fix: `inplace=False`.
    """

    CODE = "IPL003"
    NAME = "inplace-activation"
    DEFAULT_SEVERITY = Severity.ERROR
    VALID = [
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n"
        "        self.bn = nn.BatchNorm2d(8)\n"
        "        self.relu = nn.ReLU(inplace=True)\n"
        "    def forward(self, x):\n"
        "        return self.relu(self.bn(self.conv(x)))\n",
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class Mlp(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "        self.gelu = nn.GELU()\n"
        "    def forward(self, x):\n"
        "        return F.relu(self.gelu(self.fc(x)), inplace=True)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "class Gate(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.act = nn.ReLU(inplace=True)\n"
            "    def forward(self, x):\n"
            "        g = torch.sigmoid(x)\n"
            "        return self.act(g)\n",
            fixed="        self.act = nn.ReLU(inplace=False)\n",
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for conflict in facts.conflicts:
            mutation = conflict.mutation
            if not (mutation.kind in KINDS or mutation.activation) or mutation.kind == "step":
                continue
            if mutation.value.detached:
                continue
            message = (
                f"{describe_save(conflict.save)} (line {conflict.save.loc[0]}); "
                f"`{mutation.op}` overwrites it, so backward() {self.hedge(conflict)}. "
                "Use `inplace=False`."
            )
            yield from self.conflict_finding(conflict, ctx, message)
        for mutation in facts.safe_writes:
            if mutation.kind in KINDS or mutation.activation:
                hint = self.safe_finding(mutation, ctx)
                if hint is not None:
                    yield hint
        for read in facts.activation_reads:
            mutation = read.mutation
            if mutation.path is not None:
                continue
            yield Finding(
                code=self.CODE,
                severity=Severity.WARNING,
                message=(
                    f"`{mutation.op}` overwrites its input, but `{read.read_name}` is read again "
                    f"at line {read.read_loc[0]} and now holds the activated values. "
                    "Use `inplace=False`."
                ),
                span=ctx.span(mutation.loc),
                confidence=Confidence.POSSIBLE,
                related=(
                    Related(
                        ctx.span(read.read_loc),
                        f"`{read.read_name}` read here after the in-place write",
                    ),
                ),
                fix=fix_recipe(ctx, mutation),
            )
