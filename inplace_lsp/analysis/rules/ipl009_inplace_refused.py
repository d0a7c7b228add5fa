"""IPL009 inplace-refused."""

from __future__ import annotations

from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts, Refusal
from inplace_lsp.analysis.findings import Confidence, Finding, Related, Severity
from inplace_lsp.analysis.rules.base import (
    DocContext,
    Invalid,
    Rule,
    fix_recipe,
    keeps_values,
    requires_grad,
)


class InplaceRefused(Rule):
    """An in-place write that torch refuses on the spot, whatever was saved for backward.

    Four writes raise a RuntimeError at the line that writes, not at backward():
    - into a tensor made under `torch.inference_mode()`, once outside it ("Inplace update to
      inference tensor outside InferenceMode is not allowed"), even under `no_grad`;
    - an op called with `out=` while grad is on and one of its arguments (or `out` itself)
      requires grad ("functions with out=... arguments don't support automatic
      differentiation");
    - into an output of `split`, `chunk` or `unbind` (or a view of one) that requires grad,
      with grad on, also the tensors that unpacking (`q, k, v = qkv`) or iterating a tensor
      gives, since torch unbinds it ("This view is the output of a function that returns
      multiple views");
    - into a view made under `no_grad` of a tensor that requires grad, once grad is on again
      ("A view was created in no_grad mode and is being modified inplace with grad mode
      enabled").

    Fix: write out of place (`h = h / 2`, `c = torch.mul(a, b)`); for an inference tensor,
    make it outside `inference_mode` or `.clone()` it first; for split outputs, write into
    the tensor before splitting, or `torch.cat` the changed pieces.
    """

    CODE = "IPL009"
    NAME = "inplace-refused"
    DEFAULT_SEVERITY = Severity.ERROR
    VALID = [
        "import torch\n"
        "def f(x):\n"
        "    with torch.inference_mode():\n"
        "        cache = x * 2\n"
        "        cache += 1\n"
        "    return cache\n",
        "import torch\n"
        "def f():\n"
        "    x = torch.randn(4, 8)\n"
        "    a, b = x.chunk(2)\n"
        "    a += 1\n"
        "    return b\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "class Head(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.fc = nn.Linear(4, 4)\n"
            "    def forward(self, x):\n"
            "        with torch.inference_mode():\n"
            "            cache = self.fc(x)\n"
            "        cache /= 2.0\n"
            "        return cache\n",
            line=10,
            fixed="        cache = cache / 2.0\n",
        ),
        Invalid(
            "import torch\n"
            "import torch.nn as nn\n"
            "class Gate(nn.Module):\n"
            "    def forward(self, x):\n"
            "        a, b = (x * 2).chunk(2, dim=-1)\n"
            "        a.mul_(torch.sigmoid(b))\n"
            "        return a\n",
            line=6,
        ),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        for refusal in facts.refusals:
            mutation = refusal.mutation
            if mutation.path is not None:
                continue
            related: tuple[Related, ...] = ()
            if refusal.made_in is not None:
                loc, path = refusal.made_in
                made = "the inference tensor is made under inference_mode here"
                related = (Related(ctx.span(loc, path), made, path),)
            yield Finding(
                code=self.CODE,
                severity=Severity.ERROR if refusal.definite else Severity.WARNING,
                message=self._message(refusal),
                span=ctx.span(mutation.loc),
                confidence=Confidence.DEFINITE if refusal.definite else Confidence.POSSIBLE,
                related=related,
                # The original raises at this line; the out-of-place rewrite keeps the values
                # it meant to compute unless another name reads the written tensor.
                fix=fix_recipe(ctx, mutation, keeps_values(facts, mutation, ctx)),
            )

    @staticmethod
    def _message(refusal: Refusal) -> str:
        mutation = refusal.mutation
        name = f"`{mutation.target}`" if mutation.target else "the tensor"
        if refusal.definite:
            when = "torch raises a RuntimeError here"
        elif refusal.grad_from:
            when = f"torch raises here if {requires_grad(refusal.grad_from)}"
        elif refusal.unknown_grad:
            when = "torch raises here if what is written into it requires grad"
        elif refusal.repeated:
            when = "torch raises here if the loop around it runs more than once"
        else:
            when = "torch may raise here (on some paths)"
        if refusal.reason == "inference":
            return (
                f"{name} was made under torch.inference_mode(){_where(refusal)}; "
                f"`{mutation.op}` writes into it outside inference mode, and {when}. "
                "Write out of place, or `.clone()` it first."
            )
        if refusal.reason == "out":
            return (
                f"`{mutation.op}` writes through `out=` while grad is recorded and an argument "
                f"requires grad: functions with out= do not support autograd, and {when}. "
                "Assign the result instead."
            )
        if refusal.reason == "multi_view":
            return (
                f"{name} is one of the views split / chunk / unbind return (unpacking or "
                "iterating a tensor unbinds it too); "
                f"`{mutation.op}` writes into it with grad on, and {when}. "
                "Write out of place, or change the tensor before splitting it."
            )
        if refusal.reason == "hooked_view":
            return (
                f"{name} is the output of a module with a full backward hook "
                "(register_full_backward_hook), which torch returns as a view; "
                f"`{mutation.op}` writes into it with grad on, and {when}. "
                "Write out of place (`inplace=False`)."
            )
        return (
            f"{name} is a view made under no_grad of a tensor that requires grad; "
            f"`{mutation.op}` writes into it with grad on, and {when}. "
            "Make the view outside no_grad, or write under no_grad."
        )


def _where(refusal: Refusal) -> str:
    """ " (line N)" for a block of this document; "" for one in another file."""
    if refusal.made_in is None or refusal.made_in[1] is not None:
        return ""
    return f" (line {refusal.made_in[0][0]})"
