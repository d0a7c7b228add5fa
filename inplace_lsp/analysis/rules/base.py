"""The Rule base class and the document context rules use to turn facts into Findings."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from inplace_lsp.analysis.domain import Conflict, Facts, Loc, Mutation, Save, write_place
from inplace_lsp.analysis.findings import (
    Confidence,
    Finding,
    FixRecipe,
    Related,
    Severity,
    Span,
)
from inplace_lsp.analysis.lines import split_lines
from inplace_lsp.analysis.model import ModuleModel

# The rules page (docs/rules.md, generated) as installed with the package.
RULES_PAGE = Path(__file__).resolve().parent.parent.parent / "data" / "rules.md"


def rule_uri(code: str) -> str:
    """A link to the rule's (or file problem's) section of the installed rules page."""
    return f"{RULES_PAGE.as_uri()}#{code.lower()}"


@dataclass(frozen=True)
class Invalid:
    """An INVALID example: the code, the line its finding sits on (reported at the rule's
    DEFAULT_SEVERITY), and what the quick fix should turn it into (if any)."""

    code: str
    line: int
    fixed: str | None = None


class DocContext:
    """Source lines of the document (and of other files it imports from), for converting utf-8
    byte columns to code points."""

    def __init__(
        self,
        lines: list[str] | str,
        model: ModuleModel,
        other_files: dict[str, list[str]] | None = None,
    ) -> None:
        # A text is split on first use: most updates produce no finding and never need it.
        self._text = lines if isinstance(lines, str) else None
        self._lines = None if isinstance(lines, str) else lines
        self.model = model
        self.other_files = other_files if other_files is not None else {}

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self._text or "")
        return self._lines

    def _col(self, line: int, byte_col: int, path: str | None = None) -> int:
        lines = self.lines if path is None else self.other_files.get(path, [])
        if not 1 <= line <= len(lines):
            return byte_col
        text = lines[line - 1]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))

    def span(self, loc: Loc, path: str | None = None) -> Span:
        line, col, end_line, end_col = loc
        return Span(line, self._col(line, col, path), end_line, self._col(end_line, end_col, path))

    def text(self, loc: Loc) -> str:
        """The source text of a location (first line only for multi-line ranges)."""
        line, col, end_line, end_col = loc
        if not 1 <= line <= len(self.lines):
            return ""
        raw = self.lines[line - 1].encode("utf-8")
        end = end_col if end_line == line else len(raw)
        return raw[col:end].decode("utf-8", "ignore").rstrip("\r\n")


def requires_grad(grad_from: str) -> str:
    """ "`a` requires grad" or "`a` or `w` requires grad" for a grad_from of the analysis
    (argument names joined by ", ": any of them requiring grad is enough)."""
    return " or ".join(f"`{name}`" for name in grad_from.split(", ")) + " requires grad"


def op_name(save: Save) -> str:
    return save.op.strip("`").removesuffix("()")


def save_line(save: Save) -> str:
    """Where a save is, for a message: "line 12", or "line 11 of layers.py" in another file
    (whose full path is the finding's related location)."""
    return f"line {save.loc[0]}" + (f" of {Path(save.path).name}" if save.path else "")


def describe_save(save: Save) -> str:
    op = op_name(save)
    if save.unknown:  # a call the analysis does not follow (Events.maybe_saves)
        return f"{save.op} may keep its output for backward"
    if save.slot == "output":
        what = "its output"
    elif save.slot.startswith("output"):
        ordinal = {"1": "second", "2": "third"}.get(save.slot[6:], f"#{save.slot[6:]}")
        what = f"its {ordinal} output" + (f" `{save.what}`" if save.what else "")
    elif save.slot.startswith("param:"):
        what = f"its {save.slot[6:]}"
    elif save.what:
        what = f"`{save.what}`"
    else:
        what = "its input"
    return f"{op} saved {what} for backward"


def save_related(ctx: DocContext, save: Save) -> Related:
    needs = f"{save.grad_fn} needs it" if save.grad_fn else "its backward needs it"
    if save.unknown:
        return Related(
            ctx.span(save.loc, save.path),
            f"{save.op} called here: whether it keeps the tensor is not known",
            save.path,
        )
    return Related(
        ctx.span(save.loc, save.path), f"saved by {op_name(save)} here: {needs}", save.path
    )


def history(ctx: DocContext, conflict: Conflict) -> tuple[str, ...]:
    save, mutation = conflict.save, conflict.mutation
    return (
        f"v0 saved by {op_name(save)} at line {save.loc[0]}",
        f"v1 written by `{mutation.op}` at line {mutation.loc[0]}",
    )


def suggestion(ctx: DocContext, mutation: Mutation) -> str:
    """The out-of-place rewrite in words, e.g. "Write `h = h + 1`"."""
    if mutation.value.leaf:  # a parameter's own update (no quick fix: see conflict_finding)
        return "Make this update after the backward() that needs the old values."
    node: ast.stmt | None = None  # the statement, for the rewrites that quote it
    if mutation.fix in ("augassign", "clone-setitem"):
        try:
            node = ast.parse(ctx.text(mutation.stmt_loc).strip()).body[0]
        except (SyntaxError, IndexError):
            node = None
    if mutation.fix == "augassign" and isinstance(node, ast.AugAssign):
        target = ast.unparse(node.target)
        rhs = ast.unparse(node.value)
        if isinstance(node.value, (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp)):
            rhs = f"({rhs})"
        from inplace_lsp.analysis.torch_ops import AUG_SYMBOL

        return f"Write `{target} = {target} {AUG_SYMBOL.get(type(node.op), '+')} {rhs}`."
    if mutation.fix == "method-out-of-place":
        name = mutation.op.strip(".()")
        return f"Use the out-of-place `{name.rstrip('_')}` and rebind the name."
    if mutation.fix == "clone-setitem":
        target = mutation.target or "the tensor"
        written = node.targets[0] if isinstance(node, ast.Assign) else None
        while isinstance(written, ast.Subscript):
            written = written.value  # `self.queue[:, :2] = ...`: `self.queue`
        if written is not None:
            target = ast.unparse(written)
        return (
            f"Clone it first (`{target} = {target}.clone()`) "
            "or build the result with torch.cat / torch.where."
        )
    if mutation.fix == "inplace-false":
        return "Pass `inplace=False`."
    return ""


def inplace_sites(facts: Facts, mutation: Mutation) -> list[Mutation]:
    """Every write through the same `inplace=True` keyword (one per call of the module)."""
    same = [
        m
        for m in facts.inplace_flags
        if m.loc == mutation.loc and m.path == mutation.path and m.kind == mutation.kind
    ]
    return same or [mutation]


def discarding_call(ctx: DocContext, mutation: Mutation) -> tuple[int, str, str] | None:
    """A call on a line of its own (`self.act(h)`), throwing the result away, of the
    `inplace=True` module this mutation writes through, in any method of the class that
    builds it (the facts of one entry point do not see the calls in the other methods):
    (document line, call text, the argument it writes), or None."""
    if mutation.kind != "inplace_module" or mutation.path is not None:
        return None
    # (the classes are looked through without noting a read of each: what this depends on is
    # the one class whose constructor holds the flag, read by name once found, so that an
    # edit of another class does not undo the analysis that asked)
    for name, info in dict.items(ctx.model.classes):
        if info.owner is not None and info.owner is not ctx.model:
            continue
        options = [s for subs in dict.values(info.submodule_options) for s in subs]
        for attr, sub in [*dict.items(info.submodules), *((s.name, s) for s in options)]:
            first = info.block_start + sub.call.lineno - 1
            last = info.block_start + (sub.call.end_lineno or sub.call.lineno) - 1
            if not first <= mutation.loc[0] <= last:  # the flag is inside this constructor
                continue
            ctx.model.classes.get(name)
            for method in info.methods.values():
                for stmt in ast.walk(method):
                    if (
                        isinstance(stmt, ast.Expr)
                        and isinstance(stmt.value, ast.Call)
                        and ast.unparse(stmt.value.func) == f"self.{attr}"
                    ):
                        args = stmt.value.args
                        written = ast.unparse(args[0]) if args else "x"
                        line = info.block_start + stmt.lineno - 1
                        return line, ast.unparse(stmt.value), written
    return None


def keeps_values(facts: Facts, mutation: Mutation, ctx: DocContext | None = None) -> bool:
    """Whether the mutation's fix is known to keep what the program computes.

    Not when another name reads the written tensor afterwards and the fix would hide the write
    from it: cloning a `.detach()` alias (the tensor it aliases no longer changes), turning
    `inplace=True` off while a name still reads the input. Nor is `inplace=False` on a
    module when some call of it throws the result away (`self.act(h)` on its own line)."""
    if mutation.fix == "inplace-false":
        if mutation.kind == "inplace_kwarg":
            return not mutation.aliases_read  # a discarded call is rebound by the codemod
        if any(m.discarded or m.aliases_read for m in inplace_sites(facts, mutation)):
            return False
        return ctx is None or discarding_call(ctx, mutation) is None
    if mutation.value.detached and mutation.aliases_read:
        return False
    return True


def fix_recipe(
    ctx: DocContext,
    mutation: Mutation,
    safe: bool = True,
    params: tuple[tuple[str, str], ...] = (),
) -> FixRecipe | None:
    if mutation.fix is None:
        return None
    titles = {
        "augassign": "Rewrite out of place",
        "method-out-of-place": "Use the out-of-place method",
        "clone-setitem": "Clone before writing",
        "inplace-false": "Use inplace=False",
    }
    title = titles.get(mutation.fix, "Fix")
    if mutation.fix == "inplace-false" and mutation.kind == "inplace_kwarg" and mutation.discarded:
        title = "Assign the result out of place"
    target = ctx.span(mutation.loc if mutation.fix == "inplace-false" else mutation.stmt_loc)
    return FixRecipe(mutation.fix, title, safe, target, params)


class Rule:
    """A rule: turns the dataflow facts of one entry point into findings."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    DEFAULT_SEVERITY: ClassVar[Severity]
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid]] = []

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else cls.NAME

    def check(self, facts: Facts, ctx: DocContext) -> Iterable[Finding]:
        raise NotImplementedError

    def conflict_finding(
        self, conflict: Conflict, ctx: DocContext, message: str, facts: Facts | None = None
    ) -> tuple[Finding, ...]:
        """The finding at the mutation, or at the call of an in-place module built in another
        file; None when the write happens in another file (that file's own report). Its fix
        is safe when it keeps what the program computes (`keeps_values`, given the facts)."""
        mutation = conflict.mutation
        related = [save_related(ctx, conflict.save)]
        span_loc = mutation.loc
        if mutation.path is not None:
            if mutation.call_site is None or mutation.call_site_path is not None:
                return ()
            span_loc = mutation.call_site
            related.append(
                Related(
                    ctx.span(mutation.loc, mutation.path),
                    "built with inplace=True here",
                    mutation.path,
                )
            )
        elif (
            mutation.call_site is not None
            and mutation.call_site_path is None
            and mutation.kind == "inplace_module"
        ):
            related.append(
                Related(ctx.span(mutation.call_site), "the module writes in place when called here")
            )
        if conflict.backward_loc is not None:
            related.append(
                Related(ctx.span(conflict.backward_loc), "the backward() that reads it runs here")
            )
        return (
            Finding(
                code=self.CODE,
                severity=Severity.ERROR if conflict.definite else Severity.WARNING,
                message=message,
                span=ctx.span(span_loc),
                confidence=Confidence.DEFINITE if conflict.definite else Confidence.POSSIBLE,
                related=tuple(related),
                # A write into a leaf (a parameter updated under no_grad, an EMA copy's
                # weights) is the update itself: out of place or on a clone, the leaf would no
                # longer change. Only moving it after backward() fixes it, never automatic.
                fix=(
                    fix_recipe(ctx, mutation, facts is None or keeps_values(facts, mutation, ctx))
                    if mutation.path is None and not mutation.value.leaf
                    else None
                ),
                history=history(ctx, conflict),
            ),
        )

    def safe_finding(self, mutation: Mutation, ctx: DocContext, facts: Facts) -> Finding | None:
        """A Hint on an in-place write that looks dangerous but was checked: no op had saved
        the tensor (ResNet's `out += identity` after BatchNorm), in every run of its line (a
        second call of the function, on a tensor saved by the first, is not safe)."""
        if (
            mutation.path is not None
            or write_place(mutation) in facts.unproven_writes
            or facts.hooked
        ):
            return None
        name = f"`{mutation.target}`" if mutation.target else "The tensor"
        producer = mutation.value.producer.strip("`").removesuffix("()")
        return Finding(
            code=self.CODE,
            severity=Severity.HINT,
            message=(
                f"Checked: `{mutation.op}` is safe here. {name} comes from {producer}, which "
                "does not keep it for backward, and no other op saved it before this write."
            ),
            span=ctx.span(mutation.loc),
            confidence=Confidence.DEFINITE,
        )

    @staticmethod
    def hedge(conflict: Conflict) -> str:
        """How sure the failure is, naming the unknown it rests on: an Error is proven from
        known facts; a Warning says which argument's requires-grad or which paths decide."""
        if conflict.definite:
            return "will fail"
        if conflict.eval_branch and not (conflict.grad_from or conflict.save.unknown):
            return f"fails if the module runs in eval mode with grad on ({conflict.eval_branch})"
        if conflict.escapes_from:
            # Nothing here backpropagates through it: a caller would have to.
            later = f"a later backward() runs through what {conflict.escapes_from} passes on"
            uncertain = conflict.mutation.value.maybe or conflict.grad_from or conflict.branches
            if not (uncertain or conflict.on_some_paths or conflict.mutation.possible):
                return f"fails if {later}"
            return f"{Rule._uncertain(conflict)}, and only if {later}"
        return Rule._uncertain(conflict)

    @staticmethod
    def _uncertain(conflict: Conflict) -> str:
        """The hedge of a conflict that is not definite: which unknown or paths it rests on."""
        # A maybe-alias (`.float()` of a tensor of unknown dtype), written or saved, is what
        # makes it uncertain.
        maybe = conflict.mutation.value.maybe or conflict.save.maybe
        conditions = [maybe] if maybe else []
        if conflict.save.unknown:
            conditions.append(f"{conflict.save.op} keeps it")
        if conflict.grad_from:
            conditions.append(requires_grad(conflict.grad_from))
        if conditions and (maybe or not conflict.on_some_paths):
            return "fails if " + " and ".join(conditions)
        # The branches the save needs, when they are what decides (the write itself runs
        # on every path that reaches it, on a tensor that is surely the saved one).
        paths = (
            "when " + " and ".join(conflict.branches)
            if conflict.branches and not conflict.mutation.possible
            else "on some paths"
        )
        if conflict.grad_from:
            return f"may fail ({paths}, and if {requires_grad(conflict.grad_from)})"
        return f"may fail ({paths})"
