"""IPL004 graph-accumulation."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts
from inplace_lsp.analysis.findings import Confidence, Finding, FixRecipe, Related, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule


class GraphAccumulation(Rule):
    """`total += loss` in a training loop keeps every iteration's autograd graph alive.

    `loss` still carries its graph; adding it to a running total that lives across iterations
    chains all those graphs together, so memory grows every step until the loop ends (and
    logging the total reports a tensor, not a number). Only reported when the loop also calls
    backward() or step() and the total itself is never backpropagated or returned. A total
    that the same loop sets back to a value without a graph (`running_loss = 0` after each
    gradient-accumulation window's optimizer step) holds one window's graphs, not the loop's:
    it does not grow, and is no finding.

    Fix: accumulate `loss.item()` (or `loss.detach()`).

    The same graph reused after a backward() freed it is an error: a total backwarded every
    step, or a hidden state carried into the next batch without `detach()`, makes the next
    backward() go through the freed graph ("Trying to backward through the graph a second
    time"). The finding is on the op that builds on the freed graph, with both backward()
    calls; where that op is inside a function the call passes it to, a Warning at the call.
    """

    CODE = "IPL004"
    NAME = "graph-accumulation"
    DEFAULT_SEVERITY = Severity.WARNING
    VALID = [
        "def train(model, loader, opt):\n"
        "    total = 0.0\n"
        "    for x, y in loader:\n"
        "        loss = model(x).sub(y).pow(2).mean()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        total += loss.item()\n"
        "    return total\n",
        "import torch\n"
        "def train(model: torch.nn.Module, loader, opt, accum: int):\n"
        "    running_loss = 0\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        loss = torch.nn.functional.mse_loss(model(x), y) / accum\n"
        "        running_loss += loss\n"
        "        loss.backward()\n"
        "        if (step + 1) % accum == 0:\n"
        "            opt.step()\n"
        "            opt.zero_grad()\n"
        "            print(running_loss.item())\n"
        "            running_loss = 0\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "def train(model: torch.nn.Module, loader, opt):\n"
            "    total_loss = 0.0\n"
            "    for x, y in loader:\n"
            "        loss = torch.nn.functional.mse_loss(model(x), y)\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        total_loss += loss\n"
            "    print(total_loss)\n",
            line=9,
            fixed="        total_loss += loss.item()\n",
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for kept in facts.retentions:
            if kept.use_path is not None:
                continue
            again = "goes through it again" if kept.definite else "may go through it again"
            freed = "an earlier backward()"
            related = [Related(ctx.span(kept.backward), "the backward() that fails")]
            if kept.freed_by is not None:
                freed = f"the backward() at line {kept.freed_by[0]}"
                related.insert(0, Related(ctx.span(kept.freed_by), "the backward() that freed it"))
            yield Finding(
                code=self.CODE,
                severity=Severity.ERROR if kept.definite else Severity.WARNING,
                message=(
                    f"This builds on a graph whose saved tensors {freed} freed; the backward() "
                    f'at line {kept.backward[0]} {again} ("Trying to backward through the '
                    'graph a second time"). Detach what is carried over (`h = h.detach()`) '
                    "or keep only a number (`.item()`)."
                ),
                span=ctx.span(kept.use),
                confidence=Confidence.DEFINITE if kept.definite else Confidence.POSSIBLE,
                related=tuple(related),
            )
        for acc in facts.accumulations:
            value = acc.value
            # Only a tensor known to carry a graph keeps one alive: a Python number, a list,
            # `env.step`'s reward or a value of unknown kind is no finding. A total that is
            # backpropagated itself is accumulated on purpose (gradient accumulation).
            if not acc.trains or value.grad is not True or value.detached:
                continue
            if acc.reset:
                # Reset by the same loop (`running_loss = 0` after each optimizer step): the
                # graphs kept are one window's, bounded, and backward() freed their buffers.
                continue
            if value.kind not in ("tensor", "unknown") or acc.name in facts.backwarded:
                continue
            item = _item(acc.value_text)
            yield Finding(
                code=self.CODE,
                severity=Severity.WARNING,
                message=(
                    f"`{acc.name} += {acc.value_text}` keeps the autograd graph of every iteration "
                    f"alive through `{acc.name}`. Accumulate `{item}` instead."
                ),
                span=ctx.span(acc.loc),
                confidence=Confidence.DEFINITE,
                fix=FixRecipe("item", "Accumulate `.item()`", False, ctx.span(acc.stmt_loc)),
            )


def _item(text: str) -> str:
    """`loss.item()`, `(a * b).item()`: `.item()` on the accumulated expression, parenthesised
    unless it is a name, an attribute, a call or a subscript."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text}).item()"
    simple = isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    return f"{text}.item()" if simple else f"({text}).item()"
