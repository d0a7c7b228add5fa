"""IPL002 inplace-on-leaf."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts, Mutation
from inplace_lsp.analysis.findings import Confidence, Finding, FixRecipe, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule


class InplaceOnLeaf(Rule):
    """An in-place update of a leaf tensor that requires grad, outside `torch.no_grad()`.

    Parameters and tensors created with `requires_grad=True` are leaves; autograd refuses to
    write into them while recording ("a leaf Variable that requires grad is being used in an
    in-place operation"). Manual SGD (`w -= lr * w.grad`) must run under `torch.no_grad()`.

    Fix: wrap the update in `with torch.no_grad():` (not `.data`, not `w = w - ...`, which
    would turn the parameter into a non-leaf and stop it from learning).
    """

    CODE = "IPL002"
    NAME = "inplace-on-leaf"
    DEFAULT_SEVERITY = Severity.ERROR
    VALID = [
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "loss = (w * w).sum()\n"
        "loss.backward()\n"
        "with torch.no_grad():\n"
        "    w -= 0.1 * w.grad\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "w = torch.randn(3, requires_grad=True)\n"
            "loss = (w * w).sum()\n"
            "loss.backward()\n"
            "w -= 0.1 * w.grad\n",
            line=5,
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for write in facts.leaf_writes:
            mutation = write.mutation
            if mutation.path is not None:
                continue
            name = _written(mutation)
            what = "a leaf" if mutation.value.leaf else "a view of a leaf"
            requires = "that requires grad" if mutation.value.grad else write.unless
            if write.maybe_parameter:
                message = (
                    f"`{mutation.op}` writes into `{write.maybe_parameter}` while autograd is "
                    "recording; it fails if that is a parameter that requires grad (a leaf: "
                    "torch raises at once). Do the update under `with torch.no_grad():`."
                )
            else:
                where = (
                    f" where grad mode is on ({write.grad_mode})"
                    if write.grad_mode
                    else ""
                    if mutation.value.grad
                    else " on the paths where it requires grad"
                )
                message = (
                    f"{name} is {what} {requires}; `{mutation.op}` writes into it "
                    f"while autograd is recording, which raises at once{where}. Do the "
                    "update under `with torch.no_grad():`."
                )
            yield Finding(
                code=self.CODE,
                severity=Severity.ERROR if write.definite else Severity.WARNING,
                message=message,
                span=ctx.span(mutation.loc),
                confidence=Confidence.DEFINITE if write.definite else Confidence.POSSIBLE,
                fix=FixRecipe(
                    "wrap-no-grad",
                    "Wrap in `with torch.no_grad():`",
                    True,
                    ctx.span(mutation.stmt_loc),
                ),
            )


def _written(mutation: Mutation) -> str:
    """The tensor a write goes into, as the message names it: the name written to, or for
    an attribute of an object (`self.emb.weight[0] = ...`) the subscripted expression."""
    if mutation.kind == "setitem" and mutation.op.endswith(" = ..."):
        # (the op is the target as ast.unparse wrote it)
        try:
            written = ast.parse(mutation.op.removesuffix(" = ..."), mode="eval").body
        except SyntaxError:
            written = None
        if isinstance(written, ast.Subscript):
            return f"`{ast.unparse(written.value)}`"
    if mutation.target and mutation.target != "self":
        return f"`{mutation.target}`"
    return "This tensor"
