"""IPL001 inplace-on-saved."""

from __future__ import annotations

from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts
from inplace_lsp.analysis.findings import Finding, Severity
from inplace_lsp.analysis.rules.base import (
    DocContext,
    Invalid,
    Rule,
    describe_save,
    save_line,
    suggestion,
)

GENERIC_KINDS = frozenset({"augassign", "method", "setitem", "out"})


class InplaceOnSaved(Rule):
    """An in-place write to a tensor that an earlier op saved for backward.

    Autograd keeps a reference to some tensors (torch.sigmoid keeps its output, `a * b` keeps
    both operands, nn.Linear keeps its input) and checks their version counter when backward()
    runs. Writing into such a tensor afterwards (`+=`, `x.add_()`, `x[i] = v`, `out=`) bumps the
    version and backward() raises "one of the variables needed for gradient computation has been
    modified by an inplace operation". Views and `.detach()` share the version counter, so a
    write through them counts too. In-place writes to tensors nobody saved (the output of
    nn.Linear, conv or BatchNorm) are fine and not reported.

    Fix: write out of place (`h = h + 1`), or clone before writing.
    """

    CODE = "IPL001"
    NAME = "inplace-on-saved"
    DEFAULT_SEVERITY = Severity.ERROR
    VALID = [
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        h = self.fc(x)\n"
        "        h += 2.0\n"
        "        return h\n",
        "import torch\ndef f(x):\n    h = torch.sigmoid(x)\n    h = h + 1\n    return h\n",
        # Parameters made with requires_grad=False and a `float` constructor argument: the
        # division's operands need no grad, so it saves neither and the updates are safe.
        "import torch\n"
        "import torch.nn as nn\n"
        "class RunningMean(nn.Module):\n"
        "    def __init__(self, beta: float):\n"
        "        super().__init__()\n"
        "        self.beta = beta\n"
        "        self.steps = nn.Parameter(torch.tensor(0.0), requires_grad=False)\n"
        "        self.total = nn.Parameter(torch.tensor(0.0), requires_grad=False)\n"
        "    def forward(self, x):\n"
        "        mean = self.total / (1 - self.beta**self.steps)\n"
        "        loss = ((x - mean) ** 2).mean()\n"
        "        self.total.mul_(self.beta).add_(x.mean().detach(), alpha=1 - self.beta)\n"
        "        self.steps.add_(1.0)\n"
        "        return loss\n"
        "    @staticmethod\n"
        "    def example_args():\n"
        "        return (0.9,)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "class Gate(nn.Module):\n"
            "    def forward(self, x):\n"
            "        h = torch.sigmoid(x)\n"
            "        h += 1\n"
            "        return h\n",
            line=6,
            fixed="        h = h + 1\n",
        ),
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        p = torch.softmax(x, dim=-1)\n"
            "        p[:, 0] = 0\n"
            "        return p\n",
            line=6,
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for conflict in facts.conflicts:
            mutation = conflict.mutation
            if mutation.kind not in GENERIC_KINDS or mutation.activation or mutation.value.detached:
                continue
            message = (
                f"{describe_save(conflict.save)} ({save_line(conflict.save)}); "
                f"this `{mutation.op}` overwrites it in place, "
                f"so backward() {self.hedge(conflict)}. "
                f"{suggestion(ctx, mutation)}"
            ).strip()
            yield from self.conflict_finding(conflict, ctx, message, facts)
        for mutation in facts.safe_writes:
            if mutation.kind in GENERIC_KINDS and not mutation.activation:
                hint = self.safe_finding(mutation, ctx, facts)
                if hint is not None:
                    yield hint
