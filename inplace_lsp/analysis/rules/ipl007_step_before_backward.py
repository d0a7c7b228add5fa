"""IPL007 step-before-backward."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from inplace_lsp.analysis.domain import Facts, Save
from inplace_lsp.analysis.findings import Finding, Related, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule, op_name, save_line


class StepBeforeBackward(Rule):
    """`optimizer.step()` between building a graph and a backward() that still needs the old
    weights.

    `step()` updates the parameters in place. A graph built before the step saved those
    parameters (nn.Linear saves its weight to compute its input's gradient); a backward()
    through that graph after the step fails. Typical in GAN loops: the discriminator steps,
    then the generator's loss, computed through the discriminator before the step, is
    backpropagated.

    Fix: run the forward pass that builds the later loss again after the step, so its graph
    holds the new weights (`g_loss = criterion(discriminator(fake), ones)` after
    `opt_d.step()`). With two models or two optimizers (a GAN's generator and discriminator,
    an actor and a critic), do not move the step after the other backward(): that backward()
    adds the other loss's gradients to these weights before they step. Moving step() after
    both backward() calls is the fix only when this optimizer is meant to train on both
    losses.
    """

    CODE = "IPL007"
    NAME = "step-before-backward"
    DEFAULT_SEVERITY = Severity.ERROR
    VALID = [
        "import torch\n"
        "import torch.nn as nn\n"
        "net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "x = torch.randn(2, 4)\n"
        "loss = net(x).sum()\n"
        "opt.zero_grad()\n"
        "loss.backward()\n"
        "opt.step()\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
            "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
            "x = torch.randn(2, 4)\n"
            "out = net(x)\n"
            "loss1 = out.sum()\n"
            "loss2 = out.pow(2).sum()\n"
            "loss1.backward(retain_graph=True)\n"
            "opt.step()\n"
            "loss2.backward()\n",
            line=10,
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for conflict in facts.conflicts:
            if conflict.mutation.kind != "step":
                continue
            save = conflict.save
            built, again = _graph_builder(save, ctx)
            step = f"`{conflict.mutation.op}`"
            if conflict.mutation.value.origin == "fused":
                # Measured with torch 2.13 on CPU: a fused step does not bump the parameters'
                # version counter, so nothing raises and backward() uses the new weights.
                message = (
                    f"{step} (fused) changes weights {built} saved for a later backward(): "
                    f"nothing raises, but its gradients use the new weights. {again}"
                )
                for finding in self.conflict_finding(conflict, ctx, message):
                    yield replace(_with_call_site(finding, save, ctx), severity=Severity.WARNING)
                continue
            later = (
                f"the backward() at line {conflict.backward_loc[0]}"
                if conflict.backward_loc
                else "a later backward()"
            )
            message = (
                f"{step} changes weights {built} saved for {later}, which "
                f"{self.hedge(conflict)}. {again}"
            )
            for finding in self.conflict_finding(conflict, ctx, message):
                yield _with_call_site(finding, save, ctx)


def _with_call_site(finding: Finding, save: Save, ctx: DocContext) -> Finding:
    """The finding with the call that built the stale graph as a related location, when the
    saving op ran inside it (the line to run again after the step)."""
    if save.called_at is None or save.called_at_path is not None:
        return finding
    built = Related(
        ctx.span(save.called_at), "this call built the graph: run it again after the step"
    )
    return replace(finding, related=(*finding.related, built))


def _graph_builder(save: Save, ctx: DocContext) -> tuple[str, str]:
    """What built the graph the step makes stale, for the message: the call in this function
    that ran the saving op (`D(fake)`, line 22) or the op itself; and the advice to run it
    again after the step (which the rule's documentation explains, with when moving the
    step is right instead)."""
    at = save.called_at if save.called_at_path is None else None
    if at is None and save.path is None and save.called_at is None:
        at = save.loc  # the op or module call is in this function
    call = ctx.text(at) if at is not None else ""
    if at is not None and call and len(call) <= 40:
        return f"that `{call}` (line {at[0]})", f"Recompute `{call}` after this step."
    return (
        f"that {op_name(save)} ({save_line(save)})",
        "Recompute that loss's forward pass after this step.",
    )
