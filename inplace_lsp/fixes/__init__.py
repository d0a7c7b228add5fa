"""Quick fixes: libcst codemods of the statement a finding names, rendered as text edits.

Contract (used by the CLI's --fix and the language server's code actions):

* `Edit(span, new_text)`: replace the text of `span` (lines 1-based, columns 0-based in code
  points, as in `Finding.span`) with `new_text`.
* `fix_for(text, finding) -> Fix | None`: the finding's quick fix (`finding.fix`, a FixRecipe
  whose `kind` names the codemod) as it applies to the code now: its edits, whether it is
  safe, and if not, why (the recipe's own kind is unsafe, or the fix changes what a caller
  sees: a write into an argument taken out of place); None when it has none or it does not
  apply. `edits_for(text, finding)`: its edits where it keeps what callers see, else None.
* `apply_safe_fixes(text, findings) -> str`: the text with every safe fix applied (fix-all);
  applying it twice changes nothing the second time. `apply_fixes(..., unsafe=True)` applies
  the unsafe ones too (`check --fix --unsafe-fixes`).
* `noqa_edit(text, finding) -> Edit`: appends `# noqa: IPLxxx` to the finding's first line (or
  adds the code to an existing noqa comment).
* `inplace_off_edits(text, line) -> list[Edit]`: every `inplace=True` in the class enclosing
  `line` turned into `inplace=False` ("turn off in-place activations in this class").

Also `apply_fixes(text, findings)` (the fixes of the findings given, safe or not, as fix-all
combines them) and `apply_edits(text, edits)`.

Codemods by recipe kind: `augassign`, `method-out-of-place` (also `out=` writes and calls
inside a larger expression, which the analysis gives no recipe for yet), `clone-setitem`,
`inplace-false`, `wrap-no-grad`, `detach-clone` (safe); `item`, `remove-anomaly` (unsafe).
A safe fix keeps what the program computes: where rebinding a name would not (the write is
under `no_grad()`, goes through a view of a tensor read later, another name, view, container
or attribute shares the tensor and is read later, or it changes a caller's argument that the
caller reads again) it clones first or offers no fix. `tests/test_fixes.py` proves every
safe fix by running it. Moving
`optimizer.step()` (IPL007) is never automatic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from inplace_lsp.analysis.findings import Finding
from inplace_lsp.fixes import anomaly, clone, inplace_false, no_grad, noqa, out_of_place
from inplace_lsp.fixes.plan import MODE, FixMode
from inplace_lsp.fixes.source import Edit, Source, apply_edits

__all__ = [
    "Edit",
    "Fix",
    "apply_edits",
    "apply_fixes",
    "apply_safe_fixes",
    "edits_for",
    "fix_for",
    "fixes_for",
    "inplace_off_edits",
    "noqa_edit",
]

# Why a fix whose recipe is unsafe is (`item`: `.item()` cuts the graph the sum kept).
UNSAFE_KIND = "it changes what the program computes"


@dataclass(frozen=True)
class Fix:
    """A quick fix as it applies to the code now."""

    edits: list[Edit]
    safe: bool
    reason: str = ""  # why it is unsafe


logger = logging.getLogger(__name__)

Codemod = Callable[[Source, Finding], "list[Edit] | None"]

CODEMODS: dict[str, Codemod] = {
    "augassign": out_of_place.augassign,
    "method-out-of-place": out_of_place.method_out_of_place,
    "clone-setitem": clone.clone_setitem,
    "detach-clone": clone.detach_clone,
    "inplace-false": inplace_false.inplace_false,
    "item": out_of_place.item,
    "remove-anomaly": anomaly.remove_anomaly,
}
WRAP_NO_GRAD = "wrap-no-grad"


def _edits(source: Source, finding: Finding, mode: FixMode | None = None) -> list[Edit] | None:
    """The codemod's edits; under an unsafe `mode` it may change what a caller sees."""
    token = MODE.set(mode)
    try:
        return _run_codemod(source, finding)
    finally:
        MODE.reset(token)


def _run_codemod(source: Source, finding: Finding) -> list[Edit] | None:
    fix = finding.fix
    if fix is None:
        return None
    try:
        if fix.kind == WRAP_NO_GRAD:
            runs = no_grad.groups(source, [finding])
            return no_grad.wrap_no_grad(source, runs[0]) if runs else None
        codemod = CODEMODS.get(fix.kind)
        if codemod is None:
            return None
        return codemod(source, finding) or None
    except (RecursionError, SyntaxError, ValueError):
        logger.exception("fix %s for %s at line %d failed", fix.kind, finding.code, finding.line)
        return None


def _fix(source: Source, finding: Finding) -> Fix | None:
    recipe = finding.fix
    if recipe is None:
        return None
    edits = _edits(source, finding)
    if edits:
        return Fix(edits, recipe.safe, "" if recipe.safe else UNSAFE_KIND)
    mode = FixMode(unsafe=True)
    edits = _edits(source, finding, mode)
    if edits:
        return Fix(edits, False, "; ".join(dict.fromkeys(mode.reasons)) or UNSAFE_KIND)
    return None


def fix_for(text: str, finding: Finding) -> Fix | None:
    return _fix(Source(text), finding)


def fixes_for(
    text: str, findings: Sequence[Finding], budget_s: float | None = None
) -> list[Fix | None | Literal[False]]:
    """`fix_for` of each finding, the text read once; with `budget_s`, False for the findings
    left once that many seconds are spent (not checked: a file with thousands of findings)."""
    source = Source(text)
    deadline = None if budget_s is None else time.monotonic() + budget_s
    out: list[Fix | None | Literal[False]] = []
    for finding in findings:
        if finding.fix is None:
            out.append(None)
        elif deadline is not None and time.monotonic() > deadline:
            out.append(False)
        else:
            out.append(_fix(source, finding))
    return out


def edits_for(text: str, finding: Finding) -> list[Edit] | None:
    """The edits of the finding's fix where it keeps what every caller sees."""
    return _edits(Source(text), finding)


def apply_fixes(text: str, findings: Sequence[Finding], unsafe: bool = False) -> str:
    """The text with the fixes of `findings` applied together: consecutive `wrap-no-grad`
    statements share one block; a fix whose edits would overlap another's is left out.
    Without `unsafe`, a fix that would change what a caller sees is left out too."""
    source = Source(text)
    mode = FixMode(unsafe=unsafe)
    fix_sets: list[list[Edit]] = []
    leaf_writes = [f for f in findings if f.fix is not None and f.fix.kind == WRAP_NO_GRAD]
    for run in no_grad.groups(source, leaf_writes):
        edits = no_grad.wrap_no_grad(source, run)
        if edits:
            fix_sets.append(edits)
    for finding in findings:
        if finding.fix is None or finding.fix.kind == WRAP_NO_GRAD:
            continue
        edits = _edits(source, finding, mode)
        if edits:
            fix_sets.append(edits)
    accepted: list[Edit] = []
    seen: set[Edit] = set()
    for edits in fix_sets:
        fresh = [e for e in edits if e not in seen]
        if any(_overlaps(source, e, other) for e in fresh for other in accepted):
            continue
        accepted += fresh
        seen.update(fresh)
    return apply_edits(text, accepted) if accepted else text


def apply_safe_fixes(text: str, findings: Sequence[Finding]) -> str:
    return apply_fixes(text, [f for f in findings if f.fix is not None and f.fix.safe])


def noqa_edit(text: str, finding: Finding) -> Edit:
    return noqa.noqa_edit(Source(text), finding)


def inplace_off_edits(text: str, line: int) -> list[Edit]:
    return inplace_false.inplace_off_edits(Source(text), line)


def _overlaps(source: Source, a: Edit, b: Edit) -> bool:
    a0 = source.offset(a.span.line, a.span.col)
    a1 = source.offset(a.span.end_line, a.span.end_col)
    b0 = source.offset(b.span.line, b.span.col)
    b1 = source.offset(b.span.end_line, b.span.end_col)
    if a0 == a1 or b0 == b1:  # an insertion conflicts only strictly inside a replacement
        return a0 < b1 and b0 < a1 and not (a0 == a1 == b0 or b0 == b1 == a0)
    return a0 < b1 and b0 < a1
