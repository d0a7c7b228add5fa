"""IPL006 anomaly-left-on."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from inplace_lsp.analysis.domain import Facts
from inplace_lsp.analysis.findings import Confidence, Finding, FixRecipe, Severity
from inplace_lsp.analysis.rules.base import DocContext, Invalid, Rule

ANOMALY = frozenset(
    {
        "torch.autograd.set_detect_anomaly",
        "torch.autograd.detect_anomaly",
        "torch.autograd.anomaly_mode.set_detect_anomaly",
        "torch.autograd.anomaly_mode.detect_anomaly",
    }
)
GUARD_WORDS = ("debug", "environ", "getenv", "anomaly", "verbose", "args.", "config", "cfg")


class AnomalyLeftOn(Rule):
    """`torch.autograd.set_detect_anomaly(True)` or `detect_anomaly()` left on outside a debug
    guard.

    Anomaly mode records a stack trace for every op and checks every backward result for NaN:
    training runs several times slower. It is a debugging switch; guard it with a flag or an
    environment variable.

    Fix: remove it, or put it under `if os.environ.get("DEBUG_ANOMALY"):`.
    """

    CODE = "IPL006"
    NAME = "anomaly-left-on"
    DEFAULT_SEVERITY = Severity.WARNING
    VALID = [
        "import os\n"
        "import torch\n"
        "if os.environ.get('DEBUG_ANOMALY'):\n"
        "    torch.autograd.set_detect_anomaly(True)\n",
        "import torch\ntorch.autograd.set_detect_anomaly(False)\n",
    ]
    INVALID = [
        Invalid("import torch\ntorch.autograd.set_detect_anomaly(True)\n", line=2),
    ]

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        return ()

    def check_tree(self, tree: ast.Module, start: int, ctx: DocContext) -> Iterable[Finding]:
        """A syntactic rule: runs once per block, not per dataflow entry point."""
        yield from self._visit(tree, start, ctx, guarded=False)

    def _visit(
        self, node: ast.AST, start: int, ctx: DocContext, guarded: bool
    ) -> Iterable[Finding]:
        for child in ast.iter_child_nodes(node):
            child_guarded = guarded
            if isinstance(child, ast.If):
                test = ast.unparse(child.test).lower()
                if any(word in test for word in GUARD_WORDS):
                    child_guarded = True
            if isinstance(child, ast.Call) and not guarded:
                qual = ctx.model.qualify(child.func)
                if qual in ANOMALY and self._turns_on(child, qual):
                    off = start - 1
                    loc = (
                        child.lineno + off,
                        child.col_offset,
                        (child.end_lineno or child.lineno) + off,
                        child.end_col_offset or 0,
                    )
                    yield Finding(
                        code=self.CODE,
                        severity=Severity.WARNING,
                        message=(
                            "Anomaly detection is left on: every op records a traceback and "
                            "training runs several times slower. Remove it or guard it with a "
                            "debug flag."
                        ),
                        span=ctx.span(loc),
                        confidence=Confidence.DEFINITE,
                        fix=FixRecipe(
                            "remove-anomaly",
                            "Guard with an environment variable",
                            False,
                            ctx.span(loc),
                        ),
                    )
            yield from self._visit(child, start, ctx, child_guarded)

    @staticmethod
    def _turns_on(call: ast.Call, qual: str) -> bool:
        if qual.endswith("detect_anomaly") and not qual.endswith("set_detect_anomaly"):
            return True
        mode = (
            call.args[0]
            if call.args
            else next((k.value for k in call.keywords if k.arg == "mode"), None)
        )
        return not (isinstance(mode, ast.Constant) and not mode.value)
