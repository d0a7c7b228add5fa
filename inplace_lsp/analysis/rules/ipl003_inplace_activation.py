"""IPL003 inplace-activation."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts, Mutation
from inplace_lsp.analysis.findings import Confidence, Finding, Related, Severity
from inplace_lsp.analysis.rules.base import (
    DocContext,
    Invalid,
    Rule,
    describe_save,
    discarding_call,
    fix_recipe,
    inplace_sites,
    save_line,
)

KINDS = frozenset({"inplace_module", "inplace_kwarg"})


class InplaceActivation(Rule):
    """An in-place activation (`nn.ReLU(inplace=True)`, `F.relu(x, inplace=True)`, `x.relu_()`)
    whose input was saved by an earlier op, or whose input another name reads afterwards.

    `inplace=True` saves memory by overwriting the activation's input. That is safe on the
    output of nn.Linear, convolutions, BatchNorm and nn.GELU (they save their input, not their
    output), but fails at backward() on a tensor an earlier op saved: the output of
    torch.sigmoid, tanh or softmax (they save their output), or the input of nn.GELU or an
    operand of `a * b`. It also changes the values of any other name that still refers to the
    input. A statement that throws the result away (`F.relu(h, inplace=True)` or `h.relu_()`
    on its own line) hands the activated values on through `h`: reading `h` afterwards is
    what it is for.

    When the module is built in `__init__` and called in `forward`, the finding sits on the
    `inplace=True` in the constructor, where the fix goes.

    Fix: `inplace=False` where the call's result is used; `h = F.relu(h)` for a call on its own
    line; `h = h.relu()` for `h.relu_()`. On a module some call of which throws the result
    away, `inplace=False` alone would change what that call passes on: assign the result
    there too (`h = self.act(h)`), so that quick fix is not applied by fix-all.
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
            line=6,
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
                f"{describe_save(conflict.save)} ({save_line(conflict.save)}); "
                f"`{mutation.op}` overwrites it, so backward() {self.hedge(conflict)}. "
                + remedy(facts, ctx, mutation)
            )
            yield from self.conflict_finding(conflict, ctx, message, facts)
        for mutation in facts.safe_writes:
            if mutation.kind in KINDS or mutation.activation:
                hint = self.safe_finding(mutation, ctx, facts)
                if hint is not None:
                    yield hint
        for read in facts.activation_reads:
            mutation = read.mutation
            if mutation.path is not None:
                continue
            name = read.read_name
            if mutation.kind == "method":
                way = f"Use the out-of-place `.{mutation.op.strip('.()').rstrip('_')}()`"
            else:
                way = "Pass `inplace=False`"
            yield Finding(
                code=self.CODE,
                severity=Severity.WARNING,
                message=(
                    f"`{mutation.op}` overwrites its input, but `{name}` is read again "
                    f"at line {read.read_loc[0]} and now holds the activated values. "
                    f"{way} if `{name}` should keep its values."
                ),
                span=ctx.span(mutation.loc),
                confidence=Confidence.POSSIBLE,
                related=(
                    Related(
                        ctx.span(read.read_loc),
                        f"`{name}` read here after the in-place write",
                    ),
                ),
                # Its very point is that `name` should see other values: not behaviour-keeping.
                # The rewrite must not rebind the name read again to the activated values.
                fix=fix_recipe(ctx, mutation, safe=False, params=(("rebind-others", "no"),)),
            )


def remedy(facts: Facts, ctx: DocContext, mutation: Mutation) -> str:
    """What to write instead, in the words of the fix the finding offers."""
    stmt = ctx.text(mutation.stmt_loc).strip()
    target = mutation.target
    if mutation.kind == "method":
        name = mutation.op.strip(".()").rstrip("_")
        if mutation.discarded and target:
            return f"Write `{target} = {target}.{name}()`."
        return f"Use the out-of-place `.{name}()` and rebind the name."
    if mutation.kind == "inplace_kwarg":
        if mutation.discarded and target:
            same_line = mutation.loc[0] == mutation.stmt_loc[0]
            flag_col = mutation.loc[1] - mutation.stmt_loc[1] if same_line else None
            return f"Write `{target} = {_without_inplace(stmt, flag_col)}`."
        return "Pass `inplace=False`."
    discarding = [m for m in inplace_sites(facts, mutation) if m.discarded and m.target]
    found = discarding_call(ctx, mutation)
    if discarding:
        site = discarding[0]
        found = (site.stmt_loc[0], ctx.text(site.stmt_loc).strip(), site.target or "x")
    if found is not None:
        line, call, written = found
        return (
            "Pass `inplace=False`, and assign the result where the call throws it away "
            f"(line {line}: `{written} = {call}`)."
        )
    return "Pass `inplace=False`."


def _without_inplace(call: str, flag_col: int | None) -> str:
    """`F.relu(h, inplace=True)` -> `F.relu(h)`; a positional flag at byte column `flag_col`
    of the text keeps its place: `F.leaky_relu(h, 0.2, True)` -> `F.leaky_relu(h, 0.2, False)`."""
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return call
    if not isinstance(node, ast.Call):
        return call
    node.keywords = [k for k in node.keywords if k.arg != "inplace"]
    node.args = [
        ast.Constant(False) if isinstance(a, ast.Constant) and a.col_offset == flag_col else a
        for a in node.args
    ]
    return ast.unparse(node)
