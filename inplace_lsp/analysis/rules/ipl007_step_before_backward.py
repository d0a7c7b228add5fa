"""IPL007 step-before-backward."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from inplace_lsp.analysis.domain import Facts
from inplace_lsp.analysis.findings import Finding, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule, op_name


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

    ADVICE = (
        "Recompute that loss's forward pass after this step, so its graph holds the new "
        "weights. Moving step() after that backward() is right only if that loss should train "
        "these weights too: with two models or optimizers it adds its gradients to them."
    )

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
            if conflict.mutation.value.origin == "fused":
                # Measured with torch 2.13 on CPU: a fused step does not bump the parameters'
                # version counter, so nothing raises and backward() uses the new weights.
                message = (
                    f"`{conflict.mutation.op}` updates parameters in place that {op_name(save)} "
                    f"(line {save.loc[0]}) saved for a later backward(); a fused optimizer does "
                    "not bump their version, so no error is raised but the gradients are "
                    "silently computed with the new weights. " + self.ADVICE
                )
                for finding in self.conflict_finding(conflict, ctx, message):
                    yield replace(finding, severity=Severity.WARNING)
                continue
            message = (
                f"`{conflict.mutation.op}` updates parameters in place that {op_name(save)} "
                f"(line {save.loc[0]}) saved for a backward() that runs later"
                + (f" (line {conflict.backward_loc[0]})" if conflict.backward_loc else "")
                + f"; that backward() {self.hedge(conflict)}. "
                + self.ADVICE
            )
            yield from self.conflict_finding(conflict, ctx, message)
