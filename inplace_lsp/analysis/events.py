"""The events that decide autograd errors, recorded in program order on the per-path state:
an op saves a tensor of a version group, a statement writes a group in place (making its live
saves stale, or refused by torch at once, or a leaf write), a backward() runs through a graph
(a stale save there is a conflict), an optimizer step writes its parameters.
"""

from __future__ import annotations

import ast

from inplace_lsp.analysis.domain import (
    Conflict,
    Ctx,
    Facts,
    Frame,
    Function,
    Heap,
    Hook,
    InferenceSite,
    LeafWrite,
    Loc,
    ModuleRef,
    Mutation,
    Refusal,
    Retention,
    Save,
    Value,
    branch_conditions,
    correlated,
    eval_branch,
    exclusive,
    grad_sources,
    implied,
    is_parameter_name,
    location,
    new_id,
    owning_instance,
    unknown_call,
    write_place,
)
from inplace_lsp.analysis.knowledge import Knowledge
from inplace_lsp.analysis.model import ModuleModel
from inplace_lsp.analysis.summaries import (
    FROZEN,
    BackwardEvent,
    CarryEvent,
    Event,
    FreezeEvent,
    Inputs,
    NoGradsEvent,
    Path,
    SaveEvent,
    StepEvent,
    UnknownReadEvent,
    ValueEvent,
    WriteEvent,
)

HELD_ITEMS = 64  # the elements a list built by append() keeps track of
# How a path ends where torch refuses an in-place write at once (Frame.dead).
REFUSED = "refused"


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
    grad_modes: list[str]  # `with torch.set_grad_enabled(flag)` of unknown flag, innermost last
    # > 0 while running a loop's second pass where the number of passes is not known: what
    # only that pass meets rests on the loop running more than once.
    later_pass: int
    # Per branch body being run (innermost last): the modules whose train/eval flag it set,
    # with the flag as it was, so the paths can be joined (`if step % k == 0: model.eval()`).
    flag_log: list[list[tuple[ModuleRef, str, bool | str | None]]]
    inference_at: InferenceSite | None  # inside torch.inference_mode(): where it began
    # While a function is run to make its summary: its arguments' stand-ins, and what it does
    # to them, in order (None and unused when running an entry point itself).
    inputs: Inputs | None
    events: list[Event]
    # The functions of the code made into values in this run (a method read off `self`, a
    # nested def) and in the runs of the summaries it applied: a kept summary that holds a
    # changed function's old def as a value no longer holds (Interpreter.still_holds).
    functions_made: set[int]
    runs: list[Inputs]  # the summaries being made, innermost last (`inputs` is the last)
    frozen_groups: set[int]  # parameter groups frozen one parameter at a time
    # The module that owns a parameter group, for the groups parameters() listed: a loop that
    # freezes every parameter it yields freezes those modules (their flag is object state).
    group_owners: dict[int, ModuleRef]
    # The object whose method is the entry point being run (None: a function, a script).
    entry_object: ModuleRef | None

    def loc(self, node: ast.AST, frame: Frame) -> Loc:
        return location(node, frame.start)

    def unknown_call(
        self, args: list[Value], kwargs: dict[str, Value], builtin: bool = False
    ) -> Value:
        """The result of a call the analysis does not follow (domain.unknown_call); the
        tensors given to it may have been saved by it, so no write into them is checked
        safe afterwards (here, or in a caller of this function). `builtin`: Python's own
        (`print(loss)`), which builds no graph."""
        given = (*args, *kwargs.values())
        groups = frozenset().union(*(_given_groups(v) for v in given))
        self.read_by_unknown(groups)
        self.heap.graded = True  # (it may run a backward)
        if not builtin and any(
            v.kind in ("module", "unknown", "container") or v.tensorish for v in given
        ):
            self.heap.unfollowed = True
        for value in given:
            owner = owning_instance(value.module)
            if owner is not None:
                self.facts.escaped_classes.add(id(owner.cls))
        return unknown_call(args, kwargs)

    def unknown_callee(
        self, args: list[Value], kwargs: dict[str, Value], node: ast.Call, frame: Frame
    ) -> Value:
        """The result of calling what the analysis does not know (`self.act(x)` where
        `self.act = make_act(name)`, `rearrange(x, ...)`), which may keep its output for
        backward (maybe_saves)."""
        result = self.unknown_call(args, kwargs)
        self.maybe_saves(result, node, frame)
        return result

    def maybe_saves(
        self, result: Value, node: ast.AST, frame: Frame, layer: ModuleRef | None = None
    ) -> None:
        """A call the analysis does not follow of something that may be a layer or an
        autograd op (`self.act(x)` of a class it cannot read, `rearrange(x, ...)` of a library
        it does not know): it may keep its output for backward. A possible save that names
        it: a later write into the output is a Warning that says what it rests on ("fails if
        `self.act` keeps it"), never a Hint. (Not its inputs: where the code after a branch
        joins an input with what another path made of it, that would be a finding on paths
        no run takes.)"""
        if not frame.grad_enabled or not (result.grad is True and result.tensorish):
            return
        callee = _callee_name(node, layer)  # (spelled only here: ast.unparse is not cheap)
        new = frozenset(
            self.record_save(group, callee, "output", None, node, frame, True, "", unknown=True)
            for group in sorted(result.groups)
        )
        result.graph = result.graph | new

    def sees_every_run(self, ref: ModuleRef) -> bool:
        """Whether this analysis sees every run of a layer built in a class's `__init__`, as a
        Hint on its `inplace=True` claims: run from a method of the object itself when the
        entry point is a method (another entry point sees the other objects of its class,
        from other code), and in no object of a class an object of which went to a call the
        analysis does not follow (Facts.escaped_classes)."""
        owner = owning_instance(ref)
        if self.entry_object is not None and owner is not None and owner is not self.entry_object:
            return False
        while owner is not None:
            if id(owner.cls) in self.facts.escaped_classes:
                return False
            owner = owning_instance(owner.parent)
        return True

    def read_by_unknown(self, groups: frozenset[int]) -> None:
        self.heap.unknown_reads |= groups
        external = self.inputs.external(groups) if self.inputs is not None else frozenset()
        if external:
            self.events.append(UnknownReadEvent(external))

    def read_unknown(self, groups: frozenset[int]) -> bool:
        """Whether a call the analysis does not follow was given one of these groups."""
        return not self.heap.unknown_reads.isdisjoint(groups)

    def function_value(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        model: ModuleModel,
        bound: ModuleRef | None = None,
    ) -> Function:
        """A function of the code as a value, noted in functions_made."""
        self.functions_made.add(id(node))
        return Function(node, start, model, bound)

    def _finish(self, returns: list[Value], backpropagated: str = "") -> None:
        """Stale saves whose graph leaves the function reach the caller's backward: surely
        where a backward follows by assumption (an nn.Module's forward, a loss a framework
        backpropagates), else only if the caller runs one (`backpropagated`: the function's
        name, for the message)."""
        escaped = set(self.escaped)
        for value in returns:
            escaped |= self._graph_of(value)
        for sid, mutation in self.heap.stale.items():
            if sid in escaped and sid not in self.heap.freed:
                self._conflict(mutation, self.saves[sid], "escape", None, backpropagated)
        for sid, mutation in self.heap.silent.items():
            if sid in escaped and sid not in self.heap.freed and backpropagated == "":
                self._conflict(mutation, self.saves[sid], "data", None)

    def _graph_of(self, value: Value) -> set[int]:
        graph = set(value.graph)
        for item in value.items or ():
            graph |= self._graph_of(item)
        return graph

    def record_save(
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
        unknown: bool = False,
        maybe: str = "",
        reach: frozenset[int] = frozenset(),
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
            joined or self.uncertain > 0 or not (grad_from or unknown),
            param or (slot[6:] if slot.startswith("param:") else ""),
            unknown=unknown,
            maybe=maybe,
            reach=reach,
        )
        self._add_save(self.saves[sid])
        return sid

    def _add_save(self, save: Save) -> None:
        """A save is live on its group; one on an argument's tensor is an event of the
        summary being made."""
        self.heap.live[save.group] = (*self.heap.live.get(save.group, ()), save.id)
        if self.inputs is not None and save.group in self.inputs.groups:
            self.events.append(SaveEvent(save))

    def write_parameters(
        self, groups: frozenset[int], kind: str, node: ast.Call, frame: Frame, origin: str = ""
    ) -> None:
        """A call that updates parameters in place under no_grad (`optimizer.step()`,
        `model.load_state_dict(...)`): a graph that saved them before fails at its backward."""
        self.mutate(
            Value("tensor", groups, True, True, origin=origin),
            kind=kind,
            op=f"{ast.unparse(node.func)}()",
            node=node,
            stmt=frame.stmt or node,
            frame=frame,
            target=None,
            fix=None,
            inputs=[],
            grad_mode=False,
        )

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
        provable: bool = True,
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
        if refusal is not None and self._refused_before(refusal):
            refusal = None
        if refusal is not None:
            self.facts.refusals.append(refusal)
            if refusal.definite:
                # torch raises here: nothing after the write runs on this path, as after
                # `raise` (an `except` around it may run).
                frame.dead = REFUSED
                return mutation
        leafish = value.leaf or value.view_kind == "leaf"  # a leaf, or a view of one
        if leafish and value.grad and grad_on and kind != "step":
            if self.grad_modes and not value.joined:
                # Grad mode on in some runs only (`with torch.set_grad_enabled(train):`).
                self.facts.leaf_writes.append(
                    LeafWrite(mutation, definite=False, grad_mode=self.grad_modes[-1])
                )
            else:
                self.facts.leaf_writes.append(LeafWrite(mutation, definite=not value.joined))
        elif (
            leafish
            and value.grad is None
            and (value.param or value.origin == "parameter")
            and grad_on
            and kind != "step"
        ):
            # A parameter whose `requires_grad` the code turns off on some paths only
            # (`if freeze: self.emb.weight.requires_grad = False`).
            self.facts.leaf_writes.append(
                LeafWrite(
                    mutation,
                    definite=False,
                    unless="whose `requires_grad` the code turns off on some paths only",
                )
            )
            return mutation
        elif (
            value.tensor is not False
            and value.grad is None
            and not value.producer
            and not leafish
            and grad_on
            and kind != "step"
        ):
            # `pipe.text_encoder....token_embedding.weight[i] = v` on an object not read: the
            # write raises if that is a parameter that requires grad, as its name says.
            written = _written(node)
            spelled = ""
            if isinstance(written, ast.Attribute) and is_parameter_name(written.attr):
                spelled = ast.unparse(written)
            elif "." in value.grad_from and is_parameter_name(value.grad_from.rsplit(".")[-1]):
                spelled = value.grad_from  # `b = mi.bias.view(3, -1); b[:, 4] += ...`
            if spelled:
                if len(spelled) > 60:
                    spelled = "..." + spelled[-57:]
                self.facts.leaf_writes.append(
                    LeafWrite(mutation, definite=False, maybe_parameter=spelled)
                )
        external = self.inputs.external(value.groups) if self.inputs is not None else frozenset()
        if value.detached == "data":
            # `.data` hides the write from the version counter: no error, but the saved tensor
            # changes under autograd's feet and the gradients come out silently wrong.
            self._data_write(mutation, value.groups)
            if external:
                self.events.append(WriteEvent(mutation, external, False, False))
            return mutation
        if value.detached == "detach":
            self.facts.detached_writes.append(mutation)
        # A write through a detached alias is tracked too: whether the tensor it aliases is
        # read again decides whether cloning the alias keeps what the program computes.
        track_alias = value.grad is True or bool(value.detached)
        staled = self._write_groups(mutation, value.groups, track_alias)
        may_be_safe = (
            grad_on
            and value.grad is True
            and bool(value.producer)
            and not value.joined
            and not value.detached
            and self.uncertain == 0
            and kind in ("augassign", "method", "setitem", "inplace_module", "inplace_kwarg")
            and not self.read_unknown(value.groups)
            # a graph backward() already ran through: the next one through it fails
            and not value.graph & self.heap.freed
            and provable
        )
        if external:
            # Whether the caller had saved the argument's tensor decides: the summary's user.
            write = WriteEvent(mutation, external, track_alias, may_be_safe and not staled)
            self.events.append(StepEvent(write, external) if kind == "step" else write)
        elif may_be_safe and not staled:
            self.facts.safe_writes.append(mutation)
        elif grad_on and value.grad is not False:
            self.facts.unproven_writes.add(write_place(mutation))
        if grad_on and (value.grad or any(i.grad for i in inputs)):
            extra: frozenset[int] = (
                frozenset().union(*(i.graph for i in inputs)) if inputs else frozenset()
            )
            if extra and self.heap.freed:
                self.carry(value.graph | extra, node, frame)  # (`total += loss`)
            self.join_graph(value, extra)
            if value.grad is False and any(i.grad for i in inputs):
                self.set_grad(value, True)
            if extra:
                self._join_aliases(value, extra, frame, any(i.grad for i in inputs))
        return mutation

    def _join_aliases(self, value: Value, graph: frozenset[int], frame: Frame, grad: bool) -> None:
        """A write into a view (`out[:, i].add_(conv(h))`) is a write into its base and
        every other view of it: torch gives them all the written value's graph (a
        CopySlices node), so a backward() from the base goes through what the write added."""
        for group in value.groups:
            for name in self.group_names.get(group, ()):
                other = frame.env.get(name)
                if other is None or other is value or other.kind != "tensor":
                    continue
                self.join_graph(other, graph)
                if grad and other.grad is not True:
                    self.set_grad(other, True)

    def _data_write(self, mutation: Mutation, groups: frozenset[int]) -> None:
        """A write through `.data` into saved tensors: no error, and wrong gradients only if
        a backward() then runs through the save (a target network's soft update whose graph
        is never backpropagated is no finding)."""
        for group in sorted(groups):
            for sid in self.heap.live.get(group, ()):
                if sid not in self.heap.freed:
                    self.heap.silent.setdefault(sid, mutation)

    def _write_groups(self, mutation: Mutation, groups: frozenset[int], track_alias: bool) -> bool:
        """The live saves of the written groups go stale (those of another parameter of the
        same module stay); the other names of the tensor will read the new values. Whether a
        save of them is stale now (made so by this write or an earlier one)."""
        value, target = mutation.value, mutation.target
        staled = False
        for group in sorted(groups):
            kept: tuple[int, ...] = ()
            # The path of a branch on which alone the written name held this tensor.
            held_on = next((ctx for held, ctx in value.arms if group in held), None)
            for sid in self.heap.live.get(group, ()):
                saved = self.saves[sid].param
                if value.param and saved and saved != value.param:
                    kept += (sid,)  # another parameter of the module: not written
                elif held_on is not None and exclusive(self.saves[sid].ctx, held_on):
                    kept += (sid,)  # saved on another path of that branch: never both
                elif sid not in self.heap.freed:
                    self.heap.stale.setdefault(sid, mutation)
                    staled = True
            self.heap.live[group] = kept
            names = self.group_names.get(group, set())
            # The written name reads the new values on purpose, except after an in-place
            # activation whose result goes elsewhere (`y = F.relu(h, inplace=True)`).
            keeps = mutation.activation and not mutation.discarded
            others = frozenset(names if keeps else names - {target or ""})
            if others and track_alias:
                pend = self.heap.pending_alias.setdefault(group, [])
                pend.append((mutation, others))
        # A save an earlier write made stale is still read by the backward(): this write
        # changes the tensor it holds once more (`g += a` twice after `g = sqrt(...)`).
        return staled or any(
            self.saves[sid].group in groups and sid not in self.heap.freed
            for sid in self.heap.stale
            if sid in self.saves
        )

    def replay_write(self, write: WriteEvent, mutation: Mutation, groups: frozenset[int]) -> None:
        """A summary's write into the caller's tensors (`groups`): what the caller saved of
        them goes stale; a Hint if nothing had been saved and the function found it safe."""
        if mutation.value.detached == "data":
            self._data_write(mutation, groups)
            staled = False
        else:
            staled = self._write_groups(mutation, groups, write.track_alias)
        external = self.inputs.external(groups) if self.inputs is not None else frozenset()
        if external:
            outer = WriteEvent(
                mutation,
                external,
                write.track_alias,
                write.safe_candidate and not staled and not self.read_unknown(groups),
            )
            self.events.append(StepEvent(outer, external) if mutation.kind == "step" else outer)
        elif write.safe_candidate and not staled and not self.read_unknown(groups):
            self.facts.safe_writes.append(mutation)
        elif mutation.value.grad is not False:
            self.facts.unproven_writes.add(write_place(mutation))

    # changes of an argument's own object (recorded while making a summary) -------------------
    def _stand_in(self, obj: object) -> Path | None:
        if self.inputs is None:
            return None
        if isinstance(obj, ModuleRef):
            return self.inputs.refs.get(id(obj))
        return self.inputs.values.get(id(obj))

    def join_graph(self, value: Value, graph: frozenset[int]) -> None:
        if graph <= value.graph:
            return
        value.graph = value.graph | graph
        path = self._stand_in(value)
        if path is not None:
            self.events.append(ValueEvent(path, "graph", graph=graph))

    def set_grad(self, value: Value, flag: bool | None, toggled: bool = False) -> None:
        """`value.grad = flag` (backward() on it), or `requires_grad_(flag)` (toggled: only a
        leaf's flag can change, so True makes a leaf)."""
        if toggled and flag is False and value.origin == "parameter":
            # `for p in model.parameters(): p.requires_grad = False`: the model is frozen.
            self.freeze(value.groups, whole=not value.param)
        if toggled:
            # (a tensor that required no grad has no grad_fn: requires_grad_() makes a leaf)
            if flag and (not value.graph or value.grad is False):
                value.leaf = True
            value.grad, value.grad_assumed = flag, False
        else:
            value.grad = flag
        path = self._stand_in(value)
        if path is not None:
            self.events.append(ValueEvent(path, "toggle" if toggled else "grad", flag=flag))

    def detach_in_place(self, value: Value) -> None:
        """`h.detach_()`: the tensor leaves its graph (no version bump, no copy)."""
        value.graph, value.grad, value.grad_assumed = frozenset(), False, False
        path = self._stand_in(value)
        if path is not None:
            self.events.append(ValueEvent(path, "detach"))

    def set_attr(self, ref: ModuleRef, name: str, value: Value) -> None:
        ref.attributes()[name] = value
        if name not in ref.assigned:
            ref.assigned = ref.assigned | {name}
        child = value.module
        if child is not None and ref.is_module:
            ref.adopt(child)
        path = self._stand_in(ref)
        if path is not None:
            self.events.append(ValueEvent(path, "attr", name, value))

    def add_child(self, ref: ModuleRef, child: ModuleRef) -> None:
        """`layers.append(Block(...))`, `body.add_module(name, block)` on a ModuleList or
        Sequential: it runs the child after the ones it held (also where a helper of the
        code appends to a list its caller passed: `add_if_not_none(block, conv)`)."""
        ref.adopt(child)
        ref.children = [*(ref.children or []), child]
        path = self._stand_in(ref)
        if path is not None:
            module = Value("module", tensor=False, grad=False, module=child)
            self.events.append(ValueEvent(path, "child", value=module))

    def append_item(self, container: Value, item: Value | None, graph: frozenset[int]) -> None:
        """`outs.append(h)` (or `extend`, `add`: `item` None): the container reaches its graph
        and, for append, holds it as its last item; after another change its items are no
        longer known one by one."""
        container.graph = container.graph | graph
        if item is None:
            # What it holds now is not known one by one (`xs.extend(ys)`, `d.update(...)`).
            container.items, container.keys = None, None
        elif container.items is not None:
            held = (*container.items, item)
            container.items = held if len(held) <= HELD_ITEMS else None
        path = self._stand_in(container)
        if path is not None:
            self.events.append(ValueEvent(path, "append", value=item, graph=graph))

    def set_item(
        self, container: Value, index: int | None, item: Value, graph: frozenset[int]
    ) -> None:
        """`outs[i] = h`: the container reaches its graph; at a known index, holds it."""
        container.graph = container.graph | graph
        if container.items is not None:
            if index is not None and -len(container.items) <= index < len(container.items):
                items = list(container.items)
                items[index] = item
                container.items = tuple(items)
            else:
                container.items = None  # which item changed is not known
                # (nor, of a dict, by which key: a caller's dict a callee wrote into)
                container.keys = None
        path = self._stand_in(container)
        if path is not None:
            self.events.append(ValueEvent(path, "item", value=item, flag=index, graph=graph))

    def set_key(self, container: Value, key: str, item: Value, graph: frozenset[int]) -> None:
        """`kwargs["dimensions"] = 2` on a dict whose keys are known: it holds the value
        by that key (an argument's dict, changed for its caller: its keys are no longer
        known one by one)."""
        container.graph = container.graph | graph
        keys, items = container.keys, container.items
        path = self._stand_in(container)
        if path is not None or keys is None or items is None:
            self.set_item(container, None, item, graph)
            container.keys = None
            return
        if key in keys:
            held = list(items)
            held[keys.index(key)] = item
            container.items = tuple(held)
        else:
            container.keys, container.items = (*keys, key), (*items, item)

    def update_keys(self, container: Value, other: Value, graph: frozenset[int]) -> None:
        """`kwargs.update(user_kwargs)`: the other dict's keys over these, where both are
        known (else neither is)."""
        if (
            other.keys is None
            or other.items is None
            or self._stand_in(container) is not None
            or container.items is None
        ):
            self.append_item(container, None, graph)  # what it holds is not known by key
            return
        for key, item in zip(other.keys, other.items, strict=True):
            if isinstance(key, str):
                self.set_key(container, key, item, frozenset(item.graph))
            else:
                self.append_item(container, None, graph)
                return

    def add_hook(self, ref: ModuleRef, hook: Hook) -> None:
        """`module.register_forward_hook(fn)`: it runs at every call of the module."""
        ref.hooks = (*ref.hooks, hook)
        path = self._stand_in(ref)
        if path is not None:
            self.events.append(ValueEvent(path, "hook", flag=hook))

    def set_module_flag(self, ref: ModuleRef, flag: str, value: bool | str | None) -> None:
        """`model.eval()` (training_flag), `model.requires_grad_(False)` (frozen) or
        `layer.register_full_backward_hook(fn)` (backward_hooked)."""
        if flag in ("training_flag", "frozen") and self.flag_log:
            self.flag_log[-1].append((ref, flag, getattr(ref, flag)))  # the branch restores it
        setattr(ref, flag, value)
        path = self._stand_in(ref)
        if path is not None:
            self.events.append(ValueEvent(path, flag, flag=value))

    def freeze(self, groups: frozenset[int], whole: bool = False) -> None:
        """Parameters set not to require grad. `whole`: each parameter of the groups (the
        elements of a loop over parameters()), which freezes the modules that own them, as
        requires_grad_(False) does: an object built once (an agent's target network frozen
        in its `__init__`) keeps it for every method that runs later."""
        self.frozen_groups |= groups
        if whole:
            for group in sorted(groups):
                owner = self.group_owners.get(group)
                if owner is not None and owner.frozen is not True:
                    self.set_module_flag(owner, "frozen", True)
                    refreeze(owner)
        if self.flag_log:  # in a branch body: the paths' join says whether it is frozen
            return
        external = self.inputs.external(groups) if self.inputs is not None else frozenset()
        if external:
            self.events.append(FreezeEvent(external))

    def frozen(self, ref: ModuleRef) -> bool:
        """Whether a module's own parameters do not require grad. Of the stand-in of a
        caller's module, as the caller's module is (`for p in model.parameters():
        p.requires_grad = False` before the call), and a fact the summary depends on."""
        if ref.params_frozen or ref.params_group in self.frozen_groups:
            return True
        for inputs in reversed(self.runs):
            real = inputs.real.get(id(ref))
            if isinstance(real, ModuleRef):
                found = self.frozen(real)
                inputs.reads.setdefault((*inputs.refs[id(ref)], FROZEN), found)
                return found
        return False

    def clear_gradients(self, groups: frozenset[int]) -> None:
        """zero_grad(): these parameters hold no gradient until a backward()."""
        self.heap.no_grads |= groups
        external = self.inputs.external(groups) if self.inputs is not None else frozenset()
        if external:
            self.events.append(NoGradsEvent(external))

    def _refused_before(self, refusal: Refusal) -> bool:
        """Whether an earlier write into the same tensor, on every path to this one, rests on
        the same unknown (`bc.sub_(gc).mul_(mask)` into an unbind's output): torch raises
        there if it raises at all, and this write adds nothing."""
        if refusal.definite:
            return False
        mutation = refusal.mutation
        return any(
            not earlier.definite
            and earlier.reason == refusal.reason
            and earlier.grad_from == refusal.grad_from
            and earlier.mutation.path == mutation.path
            and earlier.mutation.value.groups & mutation.value.groups
            and mutation.ctx.descends_from(earlier.mutation.ctx)
            for earlier in self.facts.refusals
        )

    def _refusal(self, mutation: Mutation, grad_on: bool, inputs: list[Value]) -> Refusal | None:
        """Whether torch refuses this write at once (the Refusal kinds), and how sure."""
        value = mutation.value
        repeated = self.later_pass > 0
        sure = not mutation.possible and not repeated
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
        if value.view_kind not in ("multi", "no_grad", "hooked") or value.detached:
            return None
        reason = {"multi": "multi_view", "hooked": "hooked_view"}.get(
            value.view_kind, "no_grad_view"
        )
        grad, grad_from = value.grad, value.grad_from
        written_into = False
        if grad is False and value.view_kind == "multi":
            # `pieces = x.split(1, 1); pieces[j][k] = norm(q - c)`: what is written requires
            # grad, so the view would have to: torch refuses the write into a split's output.
            written = [v for v in inputs if v.tensorish]
            grads = {v.grad for v in written}
            grad = True if True in grads else (None if None in grads else False)
            grad_from = grad_sources(written)
            written_into = True
        if grad is True:
            return Refusal(mutation, reason, sure, repeated=repeated and not mutation.possible)
        if grad is None and grad_from:  # it raises only if this argument requires grad
            return Refusal(mutation, reason, False, grad_from)
        if grad is None and written_into and mutation.kind in ("setitem", "augassign"):
            # (a split of a tensor made here, `T.split(T.zeros(...), 1, 1)`, given values
            # of an object the analysis cannot read: they may require grad)
            return Refusal(mutation, reason, False, unknown_grad=True)
        return None

    def carry(
        self, graph: frozenset[int], node: ast.AST, frame: Frame, inexact: bool = False
    ) -> None:
        """An op builds on this graph: where it holds saves a backward() freed, a later
        backward() through the result goes through them again (inexact: a call, one of whose
        ops does)."""
        self.carry_at(
            graph, self.loc(node, frame), frame.path, inexact or self.later_pass > 0, ctx=frame.ctx
        )

    def carry_at(
        self,
        graph: frozenset[int],
        loc: Loc,
        path: str | None,
        inexact: bool,
        instead_of: Loc | None = None,
        ctx: Ctx | None = None,
    ) -> None:
        """carry() at a known place (`instead_of`: the call whose inexact use this one, an op
        inside it, replaces; `ctx`: the branch the op is on)."""
        inputs = self.inputs
        if inputs is not None and graph:
            first = frozenset(g for g in graph if g in inputs.graphs and g not in inputs.carried)
            if first:
                inputs.carried |= first
                # (an op on one path of a branch of the function may not be the one that runs)
                branched = ctx is not None and ctx is not inputs.root
                self.events.append(CarryEvent(first, loc, path, inexact or branched))
        freed = self.heap.freed
        if not freed or not graph or freed.isdisjoint(graph):
            return
        use = (loc, path, inexact)
        carried = self.heap.carried
        for sid in graph & freed:
            held = carried.get(sid)
            if held is None or (held[2] and held[0] == instead_of and held[1] == path):
                carried[sid] = use

    def backward(
        self,
        value: Value,
        node: ast.AST,
        frame: Frame,
        retain: bool,
        towards: Value | None = None,
    ) -> None:
        """backward() from `value`; `towards`: the `inputs=` it computes gradients for
        (`torch.autograd.grad(out, x)`, `loss.backward(inputs=list(D.parameters()))`),
        where autograd runs only the nodes on a path to them."""
        self.set_grad(value, True)  # backward() on it: it requires grad
        graph = frozenset(self._graph_of(value))
        unsure: frozenset[int] = frozenset()
        if towards is not None:
            graph, unsure = self._towards(graph, towards)
        self.run_backward(
            graph, retain, self.loc(node, frame), frame.path, frame.ctx, unsure=unsure
        )

    def _left_without_grads(self, graph: frozenset[int]) -> frozenset[int]:
        """The parameter groups still without a gradient after a backward() through these
        saves: those zero_grad() left so that none of its saves holds one (`loss_x.backward()`
        through G alone leaves D's at None, and `opt_d.step()` then skips them). Only where
        the graph is known in full: every save of it made by an op the analysis knows and no
        call it does not follow on the way."""
        no_grads = self.heap.no_grads
        if not no_grads or not graph or self.heap.unfollowed:
            return frozenset()
        reached: set[int] = set()
        for sid in graph:
            save = self.saves.get(sid)
            if save is None or save.unknown:
                return frozenset()
            reached.add(save.group)
            reached |= save.reach
        return no_grads - reached - self.heap.unknown_reads

    def _towards(
        self, graph: frozenset[int], towards: Value
    ) -> tuple[frozenset[int], frozenset[int]]:
        """The saves a backward() to these inputs checks, and those it may not reach. What
        made a tensor input is behind it: never run. Of parameters, the nodes made before the
        first op that saved one of them may be behind every use of them (an encoder whose
        output the discriminator reads): not known to run."""
        behind: set[int] = set()
        params: frozenset[int] = frozenset()
        for item in [towards, *(towards.items or ())]:
            if item.kind == "params" or (item.leaf and item.origin.startswith("parameter")):
                params |= item.groups
            elif item.tensorish:
                behind |= self._graph_of(item)
        graph = graph - behind
        if not params:
            return graph, frozenset()
        uses = [sid for sid in graph if sid in self.saves and self.saves[sid].group in params]
        if not uses:
            return graph, frozenset()
        first = min(uses)
        return graph, frozenset(sid for sid in graph if sid < first)

    def run_backward(
        self,
        graph: frozenset[int],
        retain: bool,
        loc: Loc,
        path: str | None,
        ctx: Ctx | None,
        checked: frozenset[int] = frozenset(),
        unsure: frozenset[int] = frozenset(),
    ) -> None:
        """backward() through the saves of `graph`: a stale one is a conflict, and each is
        freed unless the graph is retained (`checked`: saves a summary already looked at,
        only freed here; `unsure`: saves it may not reach, a backward() to `inputs=`)."""
        self.heap.no_grads = self._left_without_grads(graph)
        self.heap.graded = True
        again = [sid for sid in graph if sid in self.heap.carried and sid not in checked]
        if again:
            # It goes through saves an earlier backward() freed, by way of an op that built
            # on them since: torch raises there.
            # (a save that exists only if a value of unknown grad requires it is no proof)
            sure = [sid for sid in again if sid in self.saves and not self.saves[sid].possible]
            first = min(sure or again, key=lambda sid: self.heap.carried[sid][0])
            use, use_path, later = self.heap.carried[first]
            self.facts.retentions.append(
                Retention(
                    use,
                    use_path,
                    self.heap.freed_by.get(first),
                    loc,
                    definite=bool(sure) and not later and self.later_pass == 0 and path == use_path,
                )
            )
        # Latest first, as backward() visits the graph (and checks its saves): the save a
        # failure names is the one torch names.
        for sid in sorted(graph, reverse=True):
            mutation = self.heap.stale.get(sid)
            reached = sid not in unsure
            if mutation is not None and sid not in self.heap.freed and sid not in checked:
                self._conflict(
                    mutation, self.saves[sid], "backward", loc, backward_ctx=ctx, reached=reached
                )
            silent = self.heap.silent.get(sid)
            if silent is not None and sid not in self.heap.freed and sid not in checked:
                self._conflict(
                    silent, self.saves[sid], "data", loc, backward_ctx=ctx, reached=reached
                )
            if not retain and reached:
                self.heap.freed.add(sid)
                self.heap.freed_by.setdefault(sid, loc)
        if self.inputs is not None:
            inputs = self.inputs
            graphs = frozenset(sid for sid in graph if sid in inputs.graphs)
            own = frozenset(
                sid for sid in graph if sid in self.saves and self.saves[sid].group in inputs.groups
            )
            self.events.append(BackwardEvent(graphs, own, retain, loc, path))

    def _conflict(
        self,
        mutation: Mutation,
        save: Save,
        via: str,
        backward_loc: Loc | None,
        escapes_from: str = "",
        backward_ctx: Ctx | None = None,
        reached: bool = True,
    ) -> None:
        if exclusive(save.ctx, mutation.ctx):
            return  # (a summary's events replayed in order: each path of a branch its own)
        # On every path that reaches the backward() through the save: the write's path runs
        # through the save's branches, or the backward() sits under the same conditions
        # (`if step % k == 0:` around the policy loss and again around its backward()).
        every_path = not mutation.possible and (
            mutation.ctx.descends_from(save.ctx)
            or (backward_ctx is not None and implied(save.ctx, mutation.ctx, backward_ctx))
        )
        # The backward() under a condition that may exclude the write's (`if a and b:`
        # around the step, `if not a and c:` around the backward()): on no known path both.
        doubts = correlated(mutation.ctx, backward_ctx) if backward_ctx is not None else ()
        if not reached:
            doubts = (*doubts, "the backward() to its `inputs` runs the op that saved it")
        if doubts:
            every_path = False
        if save.unknown and (not every_path or escapes_from):
            # A layer the analysis cannot read that may keep its output, on some paths or
            # for a caller's backward: two unknowns deep, no finding (the write is what the
            # code means where that layer keeps nothing).
            return
        # A forward's inference branch: whether a backward follows it is not known.
        in_eval = eval_branch(mutation.ctx) if via == "escape" and not escapes_from else ""
        definite = not save.possible and every_path and not escapes_from and not in_eval
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
                () if every_path else (*branch_conditions(save.ctx, mutation.ctx), *doubts),
                escapes_from,
                in_eval,
                backward_ctx,
            )
        )


def refreeze(ref: ModuleRef, depth: int = 0) -> None:
    """The parameters already looked at follow a module's new requires_grad flag."""
    grad = ref.params_grad
    for value in ref.attributes().values():
        if value.kind == "tensor" and value.leaf and value.groups == {ref.params_group}:
            value.grad = grad
        elif value.module is not None and depth < 8:
            refreeze(value.module, depth + 1)
    for child in ref.children or ():
        if depth < 8:
            refreeze(child, depth + 1)


def _written(node: ast.AST) -> ast.AST | None:
    """What a write's node writes into (a slice of): `w` of `w[i] = ...`, `w[:, i].add_(...)`,
    `w[:, i] -= ...`."""
    written: ast.AST | None = None
    if isinstance(node, ast.Subscript):
        written = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        written = node.func.value
    elif isinstance(node, ast.AugAssign):
        written = node.target
    while isinstance(written, ast.Subscript):
        written = written.value
    return written


def _callee_name(node: ast.AST, layer: ModuleRef | None) -> str:
    """What a finding calls a callee the analysis does not follow: `self.act` (a long
    expression: "a call"), or, for a layer nothing is known of, "a layer of `self.block`"
    where it is one of an nn.Sequential's."""
    spelled = ast.unparse(node.func) if isinstance(node, ast.Call) else None
    if layer is None:
        return f"`{spelled}`" if spelled is not None and len(spelled) <= 40 else "a call"
    callee = f"`{spelled}`" if spelled is not None else "the layer"
    parent = layer.parent
    if layer.qualname is None and parent is not None:
        if any(child is layer for child in parent.children or ()):
            return f"a layer of {callee}"  # `getattr(nn, name)()` in an nn.Sequential
    return callee


def _given_groups(value: Value, depth: int = 0) -> frozenset[int]:
    """The version groups of a value given to a call: its own, its items' (a list of tensors)."""
    groups = value.groups if value.tensorish or value.kind == "unknown" else frozenset()
    if value.items is not None and depth < 3:
        groups = groups.union(*(_given_groups(item, depth + 1) for item in value.items))
    return groups
