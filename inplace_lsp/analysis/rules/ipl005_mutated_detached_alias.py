"""IPL005 mutated-detached-alias."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts
from inplace_lsp.analysis.findings import Confidence, Finding, FixRecipe, Severity
from inplace_lsp.analysis.rules.base import (
    DocContext,
    Invalid,
    Rule,
    describe_save,
    keeps_values,
    save_line,
)


class MutatedDetachedAlias(Rule):
    """An in-place write through a `.detach()` or `.data` alias of a tensor.

    `y.detach()` and `y.data` do not copy: they share y's memory and (for detach) its version
    counter. Writing into them changes y itself; if an op saved y for backward, backward()
    fails (detach: an Error) or silently computes wrong gradients (`.data`, which hides the
    write from the version check: a Warning, since torch runs on and whether those gradients
    are used is not known; `verify` sees the write and reports it). A detach of a tensor a
    torch op has just made (`q.clone().detach()`) is the only handle on it: writing into it
    changes nothing another name reads, and is no finding.

    Fix: `.detach().clone()` when you need an independent copy.
    """

    CODE = "IPL005"
    NAME = "mutated-detached-alias"
    DEFAULT_SEVERITY = Severity.ERROR
    VALID = [
        "import torch\n"
        "def f(x):\n"
        "    y = x.exp()\n"
        "    z = y.detach().clone()\n"
        "    z[0] = 9\n"
        "    return y, z\n",
        # A detach of a copy just made: no other name reads what the write changes.
        "import torch\n"
        "def greedy(q, avail):\n"
        "    with torch.no_grad():\n"
        "        q_masked = q.clone().detach()\n"
        "        q_masked[avail == 0] = -1e9\n"
        "        return q_masked.argmax(dim=-1)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "class M(nn.Module):\n"
            "    def forward(self, x):\n"
            "        y = x.exp()\n"
            "        z = y.detach()\n"
            "        z[0] = 9\n"
            "        return y\n",
            line=7,
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        reported: set[int] = set()
        for conflict in facts.conflicts:
            mutation = conflict.mutation
            if not mutation.value.detached or mutation.kind == "step":
                continue
            reported.add(mutation.id)
            if conflict.via == "data":
                message = (
                    f"{describe_save(conflict.save)} ({save_line(conflict.save)}); writing it "
                    "through `.data` hides the change from autograd's version check, so no error "
                    "is raised and the gradients computed from it are silently wrong. Write out "
                    "of place, or `.detach().clone()`."
                )
                # Torch runs on: whether the wrong gradients matter depends on who reads them
                # (an EMA copy's own .grad is never used), so a Warning, never an Error.
                for found in self.conflict_finding(conflict, ctx, message, facts):
                    yield dataclasses.replace(
                        found, severity=Severity.WARNING, confidence=Confidence.POSSIBLE
                    )
                continue
            message = (
                f"{describe_save(conflict.save)} ({save_line(conflict.save)}); this write goes "
                f"through a detached alias that shares its memory and version counter, so "
                f"backward() {self.hedge(conflict)}. Use `.detach().clone()`."
            )
            yield from self.conflict_finding(conflict, ctx, message, facts)
        for mutation in facts.detached_writes:
            if mutation.id in reported or mutation.path is not None:
                continue
            text = (
                f"`{mutation.op}` writes through a `.detach()` alias: the original tensor "
                "changes too. Use `.detach().clone()` for an independent copy."
            )
            yield Finding(
                code=self.CODE,
                severity=Severity.WARNING,
                message=text,
                span=ctx.span(mutation.loc),
                confidence=Confidence.POSSIBLE,
                # Cloning the alias hides the write from the tensor it aliases: safe only
                # when nothing reads that tensor again.
                fix=FixRecipe(
                    "detach-clone",
                    "Use `.detach().clone()`",
                    keeps_values(facts, mutation),
                    ctx.span(mutation.stmt_loc),
                ),
            )
