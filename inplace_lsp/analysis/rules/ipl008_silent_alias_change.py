"""IPL008 silent-alias-change."""

from __future__ import annotations

from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts
from inplace_lsp.analysis.findings import Confidence, Finding, Related, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule, fix_recipe


class SilentAliasChange(Rule):
    """An in-place op changes a tensor that another name still refers to and reads later.

    `b = a` or `b = a.view(...)` does not copy; after `a += 1`, `b` has changed too. No error
    is raised: the numbers are silently different from what the code reads like. Reported for
    tensors that take part in autograd (a model's activations), where a changed alias means a
    wrong forward pass; data preparation code that rewrites buffers on purpose is left alone,
    and so is a tensor filled through slices of it (`tile = out[..., i:j]; tile.copy_(...)`,
    then `out`), whose reader wants the new values.

    Fix: write out of place, or `.clone()` the alias you want to keep.
    """

    CODE = "IPL008"
    NAME = "silent-alias-change"
    DEFAULT_SEVERITY = Severity.WARNING
    VALID = [
        "import torch.nn as nn\n"
        "class Norm(nn.Module):\n"
        "    def forward(self, x):\n"
        "        a = x.clone()\n"
        "        flat = a.view(-1)\n"
        "        a = a + 1\n"
        "        return flat\n",
        # A tensor filled tile by tile through slices of it: its reader wants the new values.
        "import torch.nn as nn\n"
        "class Tiles(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.enc = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        out = x.repeat(1, 2)\n"
        "        for i in range(2):\n"
        "            tile = out[:, 4 * i : 4 * i + 4]\n"
        "            tile.copy_(self.enc(x))\n"
        "        return out\n",
    ]
    INVALID = [
        Invalid(
            "import torch.nn as nn\n"
            "class Norm(nn.Module):\n"
            "    def forward(self, x):\n"
            "        a = x.clone()\n"
            "        flat = a.view(-1)\n"
            "        a += 1\n"
            "        return flat\n",
            line=6,
            fixed="        a = a + 1\n",
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for read in facts.alias_reads:
            mutation = read.mutation
            if mutation.kind == "step" or mutation.path is not None:
                continue
            shares = "refers to the same memory, so it changes too"
            if mutation.value.maybe:  # `.reshape()` of a slice: a view or a copy
                shares = f"refers to the same memory if {mutation.value.maybe}"
            yield Finding(
                code=self.CODE,
                severity=Severity.WARNING,
                message=(
                    f"`{mutation.op}` changes the tensor in place, and `{read.read_name}` "
                    f"(line {read.read_loc[0]}) {shares}."
                ),
                span=ctx.span(mutation.loc),
                confidence=Confidence.POSSIBLE,
                related=(Related(ctx.span(read.read_loc), f"`{read.read_name}` read here"),),
                # Writing out of place changes what the alias reads: not behaviour-preserving.
                fix=fix_recipe(ctx, mutation, safe=False),
            )
