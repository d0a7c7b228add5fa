"""The events that decide autograd errors, recorded in program order on the per-path state:
an op saves a tensor of a version group, a statement writes a group in place (making its live
saves stale, or refused by torch at once, or a leaf write), a backward() runs through a graph
(a stale save there is a conflict), an optimizer step writes its parameters.
"""

from __future__ import annotations

import ast

from inplace_lsp.analysis.domain import (
    Conflict,
    Facts,
    Frame,
    Heap,
    InferenceSite,
    LeafWrite,
    Loc,
    Mutation,
    Refusal,
    Save,
    Value,
    branch_conditions,
    grad_sources,
    location,
    new_id,
)
from inplace_lsp.analysis.knowledge import Knowledge
from inplace_lsp.analysis.model import ModuleModel


class Events:
    """The evaluator's events: saves, writes, backward() and the conflicts they make, kept in
    the state of one entry point's analysis (the evaluator sets it up)."""

    model: ModuleModel
    kb: Knowledge
    saves: dict[int, Save]
    facts: Facts
    heap: Heap
    escaped: set[int]
    group_names: dict[int, set[str]]
    uncertain: int  # > 0 while running code that may not run (a conditional submodule)
    inference_at: InferenceSite | None  # inside torch.inference_mode(): where it began

    def loc(self, node: ast.AST, frame: Frame) -> Loc:
        return location(node, frame.start)

    def _finish(self, returns: list[Value]) -> None:
        """Stale saves whose graph leaves the function reach the caller's backward."""
        escaped = set(self.escaped)
        for value in returns:
            escaped |= self._graph_of(value)
        for sid, mutation in self.heap.stale.items():
            if sid in escaped and sid not in self.heap.freed:
                self._conflict(mutation, self.saves[sid], "escape", None)

    def _graph_of(self, value: Value) -> set[int]:
        graph = set(value.graph)
        for item in value.items or ():
            graph |= self._graph_of(item)
        return graph

    def _save(
        self,
        group: int,
        op: str,
        slot: str,
        grad_fn: str | None,
        node: ast.AST,
        frame: Frame,
        possible: bool,
        what: str,
        grad_from: str = "",
        joined: bool = False,
        param: str = "",
    ) -> int:
        sid = new_id()
        self.saves[sid] = Save(
            sid,
            group,
            op,
            slot,
            grad_fn,
            self.loc(node, frame),
            frame.ctx,
            possible or self.uncertain > 0,
            what,
            frame.path,
            grad_from,
            joined or self.uncertain > 0 or not grad_from,
            param or (slot[6:] if slot.startswith("param:") else ""),
        )
        self.heap.live[group] = (*self.heap.live.get(group, ()), sid)
        return sid

    def mutate(
        self,
        value: Value,
        *,
        kind: str,
        op: str,
        node: ast.AST,
        stmt: ast.AST,
        frame: Frame,
        target: str | None,
        fix: str | None,
        inputs: list[Value],
        grad_mode: bool | None = None,
        loc_override: Loc | None = None,
        loc_path: str | None = None,
        activation: bool = False,
    ) -> Mutation:
        grad_on = frame.grad_enabled if grad_mode is None else grad_mode
        loc = loc_override or self.loc(node, frame)
        discarded = isinstance(stmt, ast.Expr) and stmt.value is node
        mutation = Mutation(
            new_id(),
            kind,
            op,
            loc,
            frame.ctx,
            value,
            value.joined or self.uncertain > 0,
            target,
            self.loc(stmt, frame),
            fix,
            call_site=self.loc(node, frame) if loc_override else None,
            activation=activation,
            path=loc_path if loc_override else frame.path,
            call_site_path=frame.path,
            discarded=discarded,
        )
        if kind in ("inplace_module", "inplace_kwarg"):
            self.facts.inplace_flags.append(mutation)
        refusal = self._refusal(mutation, grad_on, inputs) if kind != "step" else None
        if refusal is not None:
            self.facts.refusals.append(refusal)
            if refusal.definite:
                return mutation  # torch raises here: nothing after the write runs
        leafish = value.leaf or value.view_kind == "leaf"  # a leaf, or a view of one
        if leafish and value.grad and grad_on and kind != "step":
            self.facts.leaf_writes.append(LeafWrite(mutation, definite=not value.joined))
            return mutation
        if value.detached == "data":
            # `.data` hides the write from the version counter: no error, but the saved tensor
            # changes under autograd's feet and the gradients come out silently wrong.
            for group in sorted(value.groups):
                for sid in self.heap.live.get(group, ()):
                    if sid not in self.heap.freed:
                        self._conflict(mutation, self.saves[sid], "data", None)
            return mutation
        if value.detached:
            self.facts.detached_writes.append(mutation)
        # A write through a detached alias is tracked too: whether the tensor it aliases is
        # read again decides whether cloning the alias keeps what the program computes.
        track_alias = value.grad is True or bool(value.detached)
        staled = False
        for group in sorted(value.groups):
            kept: tuple[int, ...] = ()
            for sid in self.heap.live.get(group, ()):
                saved = self.saves[sid].param
                if value.param and saved and saved != value.param:
                    kept += (sid,)  # another parameter of the module: not written
                elif sid not in self.heap.freed:
                    self.heap.stale.setdefault(sid, mutation)
                    staled = True
            self.heap.live[group] = kept
            names = self.group_names.get(group, set())
            # The written name reads the new values on purpose, except after an in-place
            # activation whose result goes elsewhere (`y = F.relu(h, inplace=True)`).
            keeps = activation and not discarded
            others = frozenset(names if keeps else names - {target or ""})
            if others and track_alias:
                pend = self.heap.pending_alias.setdefault(group, [])
                pend.append((mutation, others))
        if (
            not staled
            and grad_on
            and value.grad is True
            and value.producer
            and not value.joined
            and not value.detached
            and self.uncertain == 0
            and kind in ("augassign", "method", "setitem", "inplace_module", "inplace_kwarg")
        ):
            self.facts.safe_writes.append(mutation)
        if grad_on and (value.grad or any(i.grad for i in inputs)):
            extra: frozenset[int] = (
                frozenset().union(*(i.graph for i in inputs)) if inputs else frozenset()
            )
            value.graph = value.graph | extra
            if value.grad is False and any(i.grad for i in inputs):
                value.grad = True
        return mutation

    def _refusal(self, mutation: Mutation, grad_on: bool, inputs: list[Value]) -> Refusal | None:
        """Whether torch refuses this write at once (the Refusal kinds), and how sure."""
        value = mutation.value
        sure = not mutation.possible
        if value.inference is not None and self.inference_at is None:
            return Refusal(mutation, "inference", sure, made_in=value.inference)
        if not grad_on:
            return None
        if mutation.kind == "out":
            operands = [v for v in (value, *inputs) if v.kind == "tensor"]  # known tensors
            if any(v.grad is True for v in operands):
                # Whatever `out` aliases (a maybe-copy too), torch refuses the call itself.
                return Refusal(mutation, "out", self.uncertain == 0)
            unknown = [v for v in operands if v.grad is None]
            if unknown and grad_sources(unknown):
                return Refusal(mutation, "out", False, grad_sources(unknown))
            return None
        if (
            value.view_kind in ("multi", "no_grad")
            and not value.detached
            and value.grad is not False
        ):
            reason = "multi_view" if value.view_kind == "multi" else "no_grad_view"
            if value.grad is True:
                return Refusal(mutation, reason, sure)
            if value.grad_from:  # it raises only if this argument requires grad: say which
                return Refusal(mutation, reason, False, value.grad_from)
        return None

    def backward(self, value: Value, node: ast.AST, frame: Frame, retain: bool) -> None:
        value.grad = True  # backward() on it: it requires grad
        self.heap.no_grads = frozenset()
        loc = self.loc(node, frame)
        for sid in sorted(self._graph_of(value)):  # in the order the ops ran: deterministic
            mutation = self.heap.stale.get(sid)
            if mutation is not None and sid not in self.heap.freed:
                self._conflict(mutation, self.saves[sid], "backward", loc)
            if not retain:
                self.heap.freed.add(sid)

    def _conflict(self, mutation: Mutation, save: Save, via: str, backward_loc: Loc | None) -> None:
        every_path = not mutation.possible and mutation.ctx.descends_from(save.ctx)
        definite = not save.possible and every_path
        on_some_paths = not every_path or (save.possible and save.on_some_paths)
        self.facts.conflicts.append(
            Conflict(
                mutation,
                save,
                definite,
                via,
                backward_loc,
                "" if definite else save.grad_from,
                on_some_paths,
                () if every_path else branch_conditions(save.ctx, mutation.ctx),
            )
        )
