"""Objects at run time: nn.Module instances (their submodules, parameters, buffers and plain
attributes from `__init__`, containers, hooks, train/eval and frozen flags), optimizers and the
parameter groups they step, constructor constants and the submodule a flag chooses.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from typing import Protocol

from inplace_lsp.analysis.binder import is_static
from inplace_lsp.analysis.domain import (
    NO_NAMES,
    Ctx,
    Facts,
    Frame,
    Function,
    Hook,
    ModuleRef,
    Value,
    constant,
    is_parameter_name,
    new_id,
    owning_instance,
    replace,
    scalar,
    tensors_in,
    unknown,
)
from inplace_lsp.analysis.events import refreeze
from inplace_lsp.analysis.knowledge import load as load_knowledge
from inplace_lsp.analysis.model import (
    ClassInfo,
    ModuleModel,
    Submodule,
    Undecidable,
    evaluate,
    spelled_template,
)
from inplace_lsp.analysis.summaries import Inputs
from inplace_lsp.analysis.torch_ops import (
    OpEvents,
    TorchOps,
    frozen_parameter,
    requires_grad_flag,
    sets_to_none,
)


class ObjectHost(OpEvents, Protocol):
    """What the objects part needs of the rest of the analysis: what torch ops do (OpEvents:
    the file's model, which it switches while it runs another file's `__init__`, the
    knowledge table, the events of ops and unknown calls), the state of the path (facts, the
    summaries being made, which module owns a parameter group), the evaluator's calls and
    expressions, the events that change an object (events.Events), and the ops themselves."""

    facts: Facts
    runs: list[Inputs]
    group_owners: dict[int, ModuleRef]
    ops: TorchOps

    def inline(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST,
        frame: Frame,
        model: ModuleModel | None = None,
    ) -> Value:
        """A call of a function of the code, with these arguments."""

    def eval(self, node: ast.expr, frame: Frame) -> Value:
        """The value of an expression."""

    def call_value(
        self,
        callee: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        """A call of a value an attribute holds (a class, a function)."""

    def function_value(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        start: int,
        model: ModuleModel,
        bound: ModuleRef | None = None,
    ) -> Function: ...

    def write_parameters(
        self, groups: frozenset[int], kind: str, node: ast.Call, frame: Frame, origin: str = ""
    ) -> None: ...

    def clear_gradients(self, groups: frozenset[int]) -> None: ...

    def set_attr(self, ref: ModuleRef, name: str, value: Value) -> None: ...

    def add_child(self, ref: ModuleRef, child: ModuleRef) -> None: ...

    def add_hook(self, ref: ModuleRef, hook: Hook) -> None: ...

    def set_module_flag(self, ref: ModuleRef, flag: str, value: bool | str | None) -> None: ...


class Objects:
    """The evaluator's objects: attributes and methods of modules, calls of modules. It
    takes the rest of the analysis through `host` (ObjectHost)."""

    def __init__(self, host: ObjectHost) -> None:
        self.host = host
        # Per module: the branch arm each split added children on.
        self.child_arms: dict[ModuleRef, dict[int, int]] = {}

    def instance(
        self,
        cls: ClassInfo,
        qualname: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST,
        frame: Frame,
    ) -> Value:
        """A new object of a class that is not an nn.Module (a Trainer, an Agent, a replay
        buffer): its `__init__` run on it, so it holds what `__init__` set."""
        value = self.bare_object(cls, qualname, args, kwargs, frame)
        ref = value.module
        assert ref is not None
        found = self.host.model.find_method(cls, "__init__")
        if found is not None:
            where = found[0].owner or self.host.model
            init = found[1]
            self.host.inline(init, where.start_of(init), [value, *args], kwargs, node, frame, where)
            return value
        fields = self._dataclass_fields(cls)
        if fields is not None:
            # A dataclass's own __init__: each field from its argument, else its default.
            known, order = fields
            for name, default in known.items():
                if name in kwargs:
                    self.host.set_attr(ref, name, kwargs[name])
                elif order and name in order and order.index(name) < len(args):
                    self.host.set_attr(ref, name, args[order.index(name)])
                elif default is not None and (order or not args):
                    self.host.set_attr(ref, name, default)
            post = self.host.model.find_method(cls, "__post_init__")
            if post is not None:
                where = post[0].owner or self.host.model
                self.host.inline(post[1], where.start_of(post[1]), [value], {}, node, frame, where)
            if _NAMED_TUPLE & set(cls.bases) and order and all(n in ref.attrs for n in order):
                # a NamedTuple is the tuple of its fields: unpacked or indexed, they come back
                value = replace(value, items=tuple(ref.attrs[n] for n in order))
        return value

    def _dataclass_fields(self, cls: ClassInfo) -> tuple[dict[str, Value | None], list[str]] | None:
        """The fields of a `@dataclass` (its bases' first), each with its default when that
        is a constant (None: no default, or one made by a factory), and their order for
        positional arguments ([] when a base that is not readable may have fields first);
        None when it is no dataclass that gets the generated __init__."""
        chain: list[ClassInfo] = []
        current: ClassInfo | None = cls
        readable = True
        while current is not None and all(c is not current for c in chain):
            chain.append(current)
            owner = current.owner or self.host.model
            base = owner.base_of(current)
            if base is None and any(
                b not in ("object", "Generic", *_NAMED_TUPLE) for b in current.bases
            ):
                readable = False  # a base class the analysis cannot read
            current = base
        fields: dict[str, Value | None] = {}
        order: list[str] = []
        is_dataclass = False
        for info in reversed(chain):
            owner = info.owner or self.host.model
            # (a `class State(NamedTuple)` gets the same __init__ as a dataclass)
            generated = bool(_NAMED_TUPLE & set(info.bases)) or _generated_init(info.node, owner)
            if generated is None:
                continue
            if not generated:
                return None  # `@dataclass(init=False)`
            is_dataclass = True
            for stmt in info.node.body:
                if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                    continue
                if "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                name = stmt.target.id
                if name not in fields:
                    order.append(name)
                fields[name] = _field_default(stmt.value, owner)
        if not is_dataclass:
            return None
        return fields, order if readable else []

    def construct_module(
        self,
        cls: ClassInfo,
        qualname: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST,
        frame: Frame,
    ) -> Value:
        """A new instance of an nn.Module class of the code. Its submodules, parameters and
        buffers are read from `__init__`'s text when first used (with the constructor's
        constants, the branch a flag chooses); `__init__` also runs on it, for what its text
        alone does not say: modules built in local variables and added with `add_module`,
        optimizers, lists filled in loops."""
        value = self.bare_object(cls, qualname, args, kwargs, frame)
        self._run_init(value, cls, args, kwargs, node, frame)
        return value

    @staticmethod
    def bare_object(
        cls: ClassInfo, qualname: str, args: list[Value], kwargs: dict[str, Value], frame: Frame
    ) -> Value:
        """A new object of a class of the code before its `__init__` runs, knowing the
        constructor's constant arguments."""
        ref = ModuleRef(qualname, cls, new_id(), site_start=frame.start)
        ref.consts = bind_consts(cls, args, kwargs)
        kind = "module" if cls.is_module else "object"
        return Value(kind, tensor=False, grad=False, module=ref)

    def _run_init(
        self,
        value: Value,
        cls: ClassInfo,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST,
        frame: Frame,
    ) -> None:
        """A module's `__init__` run on it, keeping what its text alone does not say (see
        construct_module)."""
        ref = value.module
        assert ref is not None
        found = self.host.model.find_method(cls, "__init__")
        if found is None:
            return
        where = found[0].owner or self.host.model
        init = found[1]
        self.host.inline(init, where.start_of(init), [value, *args], kwargs, node, frame, where)
        for attr in sorted(ref.assigned & set(ref.attributes())):
            options = cls.submodule_options.get(attr) or (
                [cls.submodules[attr]] if attr in cls.submodules else []
            )
            # A module the text builds under a flag (`self.act = A() if flag else B()`, an
            # `if` in __init__), and parameters and buffers: as the text says, with the
            # constructor's constants choosing (or, where they cannot, saying so). What was
            # built unconditionally stays as __init__ left it (a flag set on it later, a list
            # filled by a loop), and so does one whose flags the constants decide: the run
            # took that path, and what else it built holds that module (an optimizer over
            # its parameters, `if dist: self.net = DDP(self.net)` not taken).
            conditional = (len(options) > 1 or any(sub.guards for sub in options)) and (
                ref.attrs[attr].module is None or _choose(options, ref.consts, cls.owner)[1]
            )
            if ref.attrs[attr].module is None and _none_runs(options, ref.consts, cls.owner):
                # (`elif activation == "none": self.activation = None` taken: no module of
                # the text is built for these arguments, and the run's value stands)
                conditional = False
            static = (
                attr in cls.parameters
                or attr in cls.buffers
                or (
                    conditional
                    and any(
                        self._builds_module(sub, cls.owner or self.host.model) for sub in options
                    )
                )
            )
            if static:
                del ref.attrs[attr]

    def _module_call(
        self,
        ref: ModuleRef,
        args: list[Value],
        node: ast.Call,
        frame: Frame,
        kwargs: dict[str, Value] | None = None,
    ) -> Value:
        kwargs = kwargs or {}
        x = args[0] if args else next(iter(kwargs.values()), None) or unknown()
        sequential = (
            ref.children is not None
            and self.list_kind(ref) == "torch.nn.Sequential"
            and (ref.cls is None or self.host.model.find_method(ref.cls, "forward") is None)
        )
        if ref.cls is not None and not sequential:
            found = self.host.model.find_method(ref.cls, "forward" if ref.is_module else "__call__")
            if found is None and ref.is_module:
                # a module whose class defines `__call__` instead of forward runs that
                found = self.host.model.find_method(ref.cls, "__call__")
            if found is not None:
                this = Value("module", tensor=False, grad=False, module=ref)
                owner = found[0].owner or self.host.model
                return self.host.inline(
                    found[1], owner.start_of(found[1]), [this, *args], kwargs, node, frame, owner
                )
            layer = self.torch_layer(ref) if ref.is_module else None
            if layer is not None:  # `class Conv2d(nn.Conv2d)` with an __init__ of its own
                return self.host.ops.layer_call(layer, args or [x], node, frame)
            return self.host.unknown_call(args, kwargs)
        if sequential and ref.children is not None:
            for child in ref.children:
                x = self.module_call(child, [x], node, frame)
            return x
        flag = self.module_attr(ref, "inplace") if ref.qualname in INPLACE_LAYERS else None
        set_inplace = flag.const if flag is not None and isinstance(flag.const, bool) else None
        return self.host.ops.layer_call(ref, args, node, frame, set_inplace)

    def torch_layer(self, ref: ModuleRef) -> ModuleRef | None:
        """A module of a class of the code derived from a torch.nn layer (`class
        Conv2d(nn.Conv2d)`), as that layer: the same parameters, called as torch calls it
        (its `forward` where the class does not override it, or `super().forward(x)`)."""
        if ref.cls is None:
            return None
        base = self.torch_base(ref)
        if not base or self.host.kb.module(base) is None:
            return None
        return replace(ref, qualname=base, cls=None)

    def module_attr(self, ref: ModuleRef, attr: str) -> Value:
        found = ref.attributes().get(attr)
        if found is not None:
            return found
        if attr == "_modules" and ref.is_module and (ref.cls or ref.children is not None):
            # `for name, m in self.base._modules.items()`: its children by name where every
            # one's is known (named_children); a dict of keys not known otherwise.
            named = self.named_children(ref)
            modules = [Value("module", tensor=False, grad=False, module=m) for _, m in named]
            names = [name for name, _ in named]
            known = None if None in names else names
            return Value(
                "container",
                tensor=False,
                grad=False,
                items=tuple(modules) if known is not None else None,
                keys=tuple(known) if known is not None else None,
            )
        if attr == "module" and ref.wrapped:
            # `model = nn.DataParallel(model)` is followed as the model: `model.module` too
            return Value("module", tensor=False, grad=False, module=ref)
        getter = self._property(ref, attr)
        if getter is not None:
            return getter
        method = self._bound_method(ref, attr)
        if method is not None:
            return method
        if attr == "training" and ref.is_module:
            # `if not self.training:` (an inference path) is decided by train() / eval().
            training = ref.training
            return scalar() if training is None else constant(training)
        for inputs in reversed(self.host.runs):
            real = inputs.real.get(id(ref))
            if isinstance(real, ModuleRef):
                # The stand-in of a caller's module: its attribute is the caller's, read
                # through the caller's module, and a fact the summary depends on.
                path = (*inputs.refs[id(ref)], ("attr", attr))
                found = self.module_attr(real, attr)
                inputs.read(path, found)
                ref.attrs[attr] = inputs.symbolize(found, path)
                return ref.attrs[attr]
        value: Value
        cls = ref.cls
        if cls is not None and not ref.is_module:
            # An object's attributes are what its __init__ (or a method) set: not this one.
            value = Value("unknown", frozenset({new_id()}), None, None, grad_from=f"self.{attr}")
        elif cls is not None and attr in cls.submodules:
            sub, conditional = _choose(
                cls.submodule_options.get(attr) or [cls.submodules[attr]], ref.consts, cls.owner
            )
            owner = cls.owner or self.host.model
            if self._builds_module(sub, owner):
                value = self.module_value(
                    sub.qualname, sub, new_id(), owner.start_of(cls.node), ref, owner
                )
                if value.module is not None and conditional:
                    value.module.conditional = True
            else:
                value = self._constructed(ref, attr, sub, owner)
        elif cls is not None and attr in cls.parameters and not _parameter_here(cls, attr, ref):
            value = _plain_value(cls, attr, ref.consts)
        elif cls is not None and attr in cls.parameters:
            value = Value(
                "tensor",
                frozenset({ref.params_group}),
                True,
                False if frozen_parameter(cls.parameters[attr]) else self._params_grad(ref),
                leaf=True,
                origin=f"parameter self.{attr}",
                name=f"self.{attr}",
                param=attr,
            )
        elif cls is not None and attr in cls.plain_attrs:
            value = _plain_value(cls, attr, ref.consts)
        elif cls is not None and attr in cls.buffers:
            value = Value(
                "tensor", frozenset({new_id()}), True, False, origin=f"buffer self.{attr}"
            )
        elif is_parameter_name(attr) and self.torch_base(ref):
            value = self._layer_parameter(ref, attr, attr)
        elif (
            ref.qualname is not None
            and ref.qualname.startswith("torch.nn.")
            and attr in ("running_mean", "running_var")
        ):
            value = Value("tensor", frozenset({new_id()}), True, False)
        else:
            value = Value("unknown", frozenset({new_id()}), None, None, origin=f"attribute {attr}")
        ref.attrs[attr] = value
        return value

    def _layer_parameter(self, ref: ModuleRef, spelled: str, param: str) -> Value:
        """A parameter of a torch.nn layer (`param`: its name, "" when not one known)."""
        return Value(
            "tensor",
            frozenset({ref.params_group}),
            True,
            self._params_grad(ref),
            leaf=True,
            origin=f"parameter .{spelled}",
            param=param,
        )

    def layer_parameter(self, ref: ModuleRef, name: ast.JoinedStr) -> Value | None:
        """`getattr(self.rnn, f"bias_hh_l{i}")`: a parameter of a torch.nn layer where the
        f-string's values fill only the layer-number places of its parameters' names (an
        integer spells digits); None otherwise."""
        template = spelled_template(name)
        if template is None or ref.cls is not None or not self.torch_base(ref):
            return None
        spelled = template.replace("{}", "0"), template.replace("{}", "x")
        if not is_parameter_name(spelled[0]) or is_parameter_name(spelled[1]):
            return None
        return self._layer_parameter(ref, template, "")

    def _children_on_some_paths(self, ref: ModuleRef, frame: Frame) -> None:
        """Children added on paths that exclude each other (`if i == 0: tower.add_module(...)`
        / `else: tower.add_module(...)` in a loop over levels): the analysis holds them all in
        one list, in an order no run has. A call of the module is then as uncertain as one of
        a module chosen by a flag (ModuleRef.conditional): no write into what it gave is
        "checked: safe". (Children added under `if`s of their own, `if grow_first:` / `if not
        grow_first:`, keep their order.)"""
        arms = self.child_arms.setdefault(ref, {})
        ctx: Ctx | None = frame.ctx
        while ctx is not None:
            if ctx.split:
                if arms.setdefault(ctx.split, ctx.arm) != ctx.arm:
                    ref.conditional = True
                    return
            ctx = ctx.parent

    def submodules_of(self, ref: ModuleRef, deep: bool) -> list[Value]:
        """The module itself and every module under it (deep), or its children."""
        found: list[Value] = []
        seen: set[int] = set()
        todo = [ref]
        while todo and len(found) < _TREE:
            current = todo.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            if deep or current is not ref:
                found.append(Value("module", tensor=False, grad=False, module=current))
            if current is not ref and not deep:
                continue
            todo += [child for _, child in self.named_children(current)]
        return found

    def named_children(self, ref: ModuleRef) -> list[tuple[str | None, ModuleRef]]:
        """The modules directly under `ref`, each with the name its `_modules` gives it: an
        attribute's name, a Sequential's position or OrderedDict key where the analysis built
        it (None where not known); in `_modules`' order where `__init__` assigns them in its
        text's order."""
        children = ref.children or []
        names: Sequence[str | None] = (
            ref.child_names
            if ref.child_names is not None and len(ref.child_names) == len(children)
            else [None] * len(children)
        )
        below: list[tuple[str | None, ModuleRef]] = list(zip(names, children, strict=True))
        if ref.cls is not None and ref.is_module:
            for attr in ref.cls.submodules:
                value = self.module_attr(ref, attr)
                if value.module is not None:
                    below.append((attr, value.module))
        below += [(a, v.module) for a, v in ref.attributes().items() if v.module is not None]
        named: list[tuple[str | None, ModuleRef]] = []
        seen: set[int] = set()
        for name, child in below:
            if child.is_module and id(child) not in seen:
                seen.add(id(child))
                named.append((name, child))
        return named

    def list_kind(self, ref: ModuleRef) -> str:
        """ "torch.nn.ModuleList" or "torch.nn.Sequential" for those and their subclasses in
        the code (mmcv's `ModuleList(BaseModule, nn.ModuleList)`), else ""."""
        return self.torch_base(ref, _LISTS)

    def torch_base(self, ref: ModuleRef, among: Collection[str] | None = None) -> str:
        """The torch.nn class the module is, or that its class in the code derives from
        through the bases the code defines (`class WSConv(nn.Conv2d)`), among `among` (any
        `torch.nn.` class but Module when None), else ""."""

        def wanted(name: str | None) -> bool:
            if among is not None:
                return name in among
            return name is not None and name.startswith("torch.nn.") and name not in _PLAIN_BASES

        if wanted(ref.qualname):
            return ref.qualname  # type: ignore[return-value]
        seen: set[int] = set()
        todo = [ref.cls] if ref.cls is not None else []
        while todo:
            cls = todo.pop()
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            owner = cls.owner or self.host.model
            for base in cls.bases:
                if wanted(base):
                    return base
                found = owner.lookup_class(base)
                if found is not None:
                    todo.append(found)
        return ""

    def _property(self, ref: ModuleRef, attr: str) -> Value | None:
        """`self.net.loss` where `loss` is a `@property` of the class: what it returns now."""
        found = self.host.model.find_method(ref.cls, attr) if ref.cls is not None else None
        if found is None or not any(
            isinstance(d, ast.Name) and d.id == "property" for d in found[1].decorator_list
        ):
            return None
        owner = found[0].owner or self.host.model
        method = found[1]
        this = Value("module" if ref.is_module else "object", tensor=False, grad=False, module=ref)
        frame = Frame({}, owner.start_of(method), True, Ctx(), path=owner.path)
        return self.host.inline(method, owner.start_of(method), [this], {}, method, frame, owner)

    def _bound_method(self, ref: ModuleRef, attr: str) -> Value | None:
        """`self.calc_loss_a` read, not called, where the class defines that method and no
        instance attribute of that name: the method bound to the object (`self.calc_loss =
        self.calc_loss_a if flag else self.calc_loss_b`, called later as `self.calc_loss(x)`)."""
        cls = ref.cls
        if cls is None or attr in cls.submodules or attr in cls.parameters:
            return None
        if attr in cls.buffers or attr in cls.plain_attrs:
            return None
        found = self.host.model.find_method(cls, attr)
        if found is None or found[1].decorator_list:
            return None  # a property, a staticmethod or classmethod, or wrapped by a decorator
        owner = found[0].owner or self.host.model
        method = found[1]
        function = self.host.function_value(method, owner.start_of(method), owner, bound=ref)
        qualname = f"{found[0].name}.{attr}"
        return Value("symbol", tensor=False, grad=False, qualname=qualname, function=function)

    @staticmethod
    def _builds_module(sub: Submodule, owner: ModuleModel) -> bool:
        """Whether `self.x = <call>` in a module's __init__ builds a module (a torch.nn layer,
        a module class, or a call the analysis reads as one), not an optimizer, a tensor or
        an object of another class (which `_constructed` evaluates)."""
        qual = _qualname(sub, owner)
        if qual is None:
            return True
        if qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1][:1].isupper():
            return True
        if qual.startswith("torch."):
            return False
        cls = owner.lookup_class(qual)
        if cls is not None:
            return cls.is_module
        return qual not in owner.functions

    def _constructed(self, ref: ModuleRef, attr: str, sub: Submodule, owner: ModuleModel) -> Value:
        """`self.opt = torch.optim.Adam(self.parameters())`, `self.h0 = torch.zeros(...)`,
        `self.buffer = ReplayBuffer(...)` in a module's __init__: the call evaluated with
        `self` the module, when first read."""
        cls = ref.cls
        assert cls is not None
        ref.attributes()[attr] = unknown()  # what the call reads of `self.<attr>` is not known yet
        init = cls.methods.get("__init__")
        params = [*init.args.posonlyargs, *init.args.args] if init is not None else []
        name = params[0].arg if params else "self"
        this = Value("module", tensor=False, grad=False, module=ref)
        frame = Frame({name: this}, owner.start_of(cls.node), True, Ctx(), path=owner.path)
        outer, self.host.model = self.host.model, owner
        try:
            return self.host.eval(sub.call, frame)
        finally:
            self.host.model = outer

    def module_value(
        self,
        qualname: str | None,
        sub: Submodule | None,
        params_group: int,
        site_start: int,
        parent: ModuleRef | None = None,
        site_model: ModuleModel | None = None,
    ) -> Value:
        site_model = site_model or self.host.model
        if qualname is None and sub is not None:
            qualname = _qualname(sub, site_model)  # a class defined below the one using it
        cls = site_model.lookup_class(qualname) if qualname else None
        if cls is not None and not cls.is_module:
            cls = None
        ref = ModuleRef(
            qualname,
            cls,
            params_group,
            submodule=sub,
            site_start=site_start,
            parent=parent,
            call=sub.call if sub is not None else None,
        )
        ref.site_path = site_model.path
        ref.conditional = bool(parent is not None and parent.conditional)
        if cls is not None:
            ref.consts = _init_consts(cls, sub.call if sub is not None else None, parent)
            if sub is not None and cls.methods.get("__init__") is not None:
                # Its __init__ too, with the constructor's constant arguments (a loop of
                # `self.blocks.append(...)`, modules kept in locals).
                value = Value("module", tensor=False, grad=False, module=ref)
                args = [_known(a, parent) for a in sub.call.args if not isinstance(a, ast.Starred)]
                kwargs = {k.arg: _known(k.value, parent) for k in sub.call.keywords if k.arg}
                frame = Frame({}, site_start, True, Ctx(), path=site_model.path)
                outer, self.host.model = self.host.model, site_model
                try:
                    self._run_init(value, cls, args, kwargs, sub.call, frame)
                finally:
                    self.host.model = outer
        if (
            sub is not None
            and sub.children
            and qualname in ("torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict")
        ):
            ref.children = [
                self._child(child, ref, site_start, site_model) for child in sub.children
            ]
            ref.uncounted = not sub.counted
        return Value("module", tensor=False, grad=False, module=ref)

    def _child(
        self, child: Submodule, parent: ModuleRef, site_start: int, site_model: ModuleModel
    ) -> ModuleRef:
        """A child of a Sequential / ModuleList written in `__init__`: a module constructor,
        or a call of a function of the code that builds one (`spectral_norm(nn.Conv2d(...))`,
        evaluated with the constructor's constants)."""
        qual = _qualname(child, site_model)
        if qual is not None and not qual.startswith("torch.") and site_model.lookup_function(qual):
            owner = owning_instance(parent)
            env = {k: constant(v) for k, v in (owner.consts if owner is not None else {}).items()}
            frame = Frame(env, site_start, True, Ctx(), path=site_model.path)
            outer, self.host.model = self.host.model, site_model
            try:
                built = self.host.eval(child.call, frame)
            finally:
                self.host.model = outer
            if built.module is not None:
                if parent is not None:
                    parent.adopt(built.module)
                return built.module
        made = self.module_value(child.qualname, child, new_id(), site_start, parent, site_model)
        assert made.module is not None
        return made.module

    def module_method(
        self,
        receiver: Value,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        ref = receiver.module
        assert ref is not None
        if not ref.is_module:
            return self._object_method(receiver, ref, name, args, kwargs, node, frame)
        if name in ("parameters", "named_parameters"):
            # named_parameters() yields (name, parameter) pairs.
            return Value(
                "params",
                self.param_groups(ref),
                tensor=False,
                grad=self._params_grad(ref),
                origin="named" if name == "named_parameters" else "",
            )
        if name == "zero_grad" and sets_to_none(node):
            self.host.clear_gradients(self.param_groups(ref))
            return receiver
        if name == "requires_grad_":
            self.host.set_module_flag(ref, "frozen", requires_grad_flag(node) is False)
            refreeze(ref)
            return receiver
        if name in ("train", "eval"):
            training = name == "train"
            if (
                name == "train"
                and args
                and args[0].kind == "scalar"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                training = bool(node.args[0].value)
            self.host.set_module_flag(ref, "training_flag", training)
            return receiver
        if name in (
            "to",
            "cuda",
            "cpu",
            "float",
            "double",
            "half",
            "requires_grad_",
            "apply",
            "zero_grad",
            "share_memory",
        ):
            return receiver
        if name == "forward":
            return self.module_call(ref, args, node, frame, kwargs)
        if name in ("append", "extend", "insert") and self.list_kind(ref) and args:
            # `self.blocks.append(Block(...))` in a loop: the list holds it, in order.
            added = (args[-1].items or ()) if name == "extend" else [args[-1]]
            for value in added:
                if value.module is not None:
                    self.host.add_child(ref, value.module)
                elif value.kind == "unknown":  # a layer nothing is known of, in its place
                    self.host.add_child(ref, ModuleRef(None, None, ref.params_group))
            self._children_on_some_paths(ref, frame)
            return unknown()
        if name in ("modules", "children", "named_modules", "named_children"):
            # Every module of the tree (each child, for children()), as a list the loop
            # over it visits one by one (`for m in self.modules(): if isinstance(m, ...)`).
            if name == "named_children":
                # `for name, m in self.features.named_children(): if name in self.taps:`
                pairs = [
                    Value(
                        "container",
                        tensor=False,
                        grad=False,
                        items=(
                            scalar() if child is None else constant(child),
                            Value("module", tensor=False, grad=False, module=module),
                        ),
                    )
                    for child, module in self.named_children(ref)
                ]
                return Value("container", tensor=False, grad=False, items=tuple(pairs))
            tree = self.submodules_of(ref, deep=name.endswith("modules"))
            if name.startswith("named"):
                tree = [
                    Value("container", tensor=False, grad=False, items=(scalar(), m)) for m in tree
                ]
            return Value("container", tensor=False, grad=False, items=tuple(tree))
        if name in ("add_module", "register_module") and len(args) == 2:
            child = args[1].module
            if args[0].has_const:
                self.host.set_attr(ref, str(args[0].const), args[1])  # `self.add_module("g", g)`
            if child is not None and self.list_kind(ref):
                # `self.body.add_module("block{}".format(i), Block(...))` in a loop: the
                # Sequential runs it after the ones added before it.
                self.host.add_child(ref, child)
                self._children_on_some_paths(ref, frame)
            elif not args[0].has_const:
                if child is not None and ref.is_module:
                    # `self.add_module(f"fc{i}", fc)` under a name not known: which attribute
                    # it is is not known, but it is one of the module's own (its parameters
                    # are the module's, `model.parameters()` hands them to the optimizer).
                    if ref.child_names is not None:
                        ref.child_names = (*ref.child_names, None)
                    self.host.add_child(ref, child)
                return self.host.unknown_call(args, kwargs)
            return unknown()
        if name == "load_state_dict":
            # Copies into every parameter in place (under no_grad), as an optimizer step does.
            self.host.write_parameters(self.param_groups(ref), "method", node, frame)
            return unknown()
        if name in _HOOKS:
            # What the module's outputs are then rests on a hook: no write into one is checked
            # safe (a backward hook makes them views torch refuses to write into).
            self.host.facts.hooked = True
        if name in ("register_full_backward_hook", "register_full_backward_pre_hook"):
            self.host.set_module_flag(ref, "backward_hooked", True)
        if name in ("register_forward_hook", "register_forward_pre_hook") and node.args:
            # A hook of this file runs at every call of the module (`output.clamp_(...)` in a
            # hook on nn.Sigmoid writes the output Sigmoid saved).
            function = args[0].function if args else None
            if function is not None and function.bound is None:
                self.host.add_hook(
                    ref, Hook("pre" if name.endswith("pre_hook") else "post", function)
                )
            return unknown()
        if ref.cls is not None:
            found = self.host.model.find_method(ref.cls, name)
            if found is not None:
                owner = found[0].owner or self.host.model
                return self.host.inline(
                    found[1],
                    owner.start_of(found[1]),
                    args if is_static(found[1]) else [receiver, *args],
                    kwargs,
                    node,
                    frame,
                    owner,
                )
        attr = self.module_attr(ref, name)
        if attr.module is not None:
            return self.module_call(attr.module, args, node, frame, kwargs)
        return self.host.call_value(attr, args, kwargs, node, frame)

    def _object_method(
        self,
        receiver: Value,
        ref: ModuleRef,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        frame: Frame,
    ) -> Value:
        """A method of an object that is not a module: its class's (`self.train_step(z)`),
        or a call of what an attribute holds (`self.actor(obs)`, `self.loss_fn(y, t)`)."""
        found = self.host.model.find_method(ref.cls, name) if ref.cls is not None else None
        if found is not None:
            owner = found[0].owner or self.host.model
            method = found[1]
            call_args = args if is_static(method) else [receiver, *args]
            return self.host.inline(
                method, owner.start_of(method), call_args, kwargs, node, frame, owner
            )
        attr = self.module_attr(ref, name)
        if attr.module is not None:
            return self.module_call(attr.module, args, node, frame, kwargs)
        return self.host.call_value(attr, args, kwargs, node, frame)

    def _params_grad(self, ref: ModuleRef) -> bool | None:
        """Whether a module's own parameters require grad: False where it is frozen (here or
        by the caller), None where it is frozen on some paths only."""
        return False if self.host.frozen(ref) else ref.params_grad

    def stepped_groups(self, value: Value) -> frozenset[int]:
        """The parameters an optimizer steps: `model.parameters()`, a list of them, param
        groups (`[{"params": G.parameters()}, {"params": [w], "lr": 1e-3}]`)."""
        if value.kind == "params" or value.leaf:
            return value.groups
        if value.keys is not None and value.items is not None:
            if "params" not in value.keys:
                return frozenset()
            return self.stepped_groups(value.items[value.keys.index("params")])
        if value.element is not None:  # `[p for n, p in model.named_parameters() if ...]`
            return self.stepped_groups(value.element)
        if value.items:
            groups: frozenset[int] = frozenset()
            for item in value.items:
                groups |= self.stepped_groups(item)
            return groups
        return value.groups

    def param_groups(self, ref: ModuleRef) -> frozenset[int]:
        """The version groups of every parameter of a module and its submodules (each module
        once: one reached both as a declared submodule and as an attribute is one module)."""
        groups: set[int] = set()
        seen: set[int] = set()
        todo = [(ref, 0)]
        while todo:
            current, depth = todo.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            groups.add(current.params_group)
            self.host.group_owners[current.params_group] = current
            if depth > 8:
                continue
            below = list(current.children or ())
            if current.cls is not None and current.is_module:
                for name in current.cls.submodules:
                    attr = self.module_attr(current, name)
                    if attr.module is not None:
                        below.append(attr.module)
            below += [  # and the modules assigned to it
                v.module
                for v in list(current.attributes().values())
                if v.module is not None and v.module.is_module
            ]
            todo += [(module, depth + 1) for module in below]
        return frozenset(groups)

    def module_call(
        self,
        ref: ModuleRef,
        args: list[Value],
        node: ast.Call,
        frame: Frame,
        kwargs: dict[str, Value] | None = None,
    ) -> Value:
        """A call of a module: its forward with these arguments (keywords too)."""
        if ref.conditional:
            # Which module runs is not known (`self.act = nn.Upsample(...) if flag else
            # nn.Sigmoid()`): the other one may keep its input or output for backward, so
            # no write into them is "checked: safe", and one into the output rests on it.
            self.host.uncertain += 1
            try:
                result = self._hooked_call(ref, args, node, frame, kwargs)
            finally:
                self.host.uncertain -= 1
            given = [t for a in (*args, *(kwargs or {}).values()) for t in tensors_in(a)]
            self.host.read_by_unknown(frozenset().union(*(t.groups for t in given)))
            self.host.maybe_saves(result, node, frame, layer=ref)
            return result
        return self._hooked_call(ref, args, node, frame, kwargs)

    def _hooked_call(
        self,
        ref: ModuleRef,
        args: list[Value],
        node: ast.Call,
        frame: Frame,
        kwargs: dict[str, Value] | None = None,
    ) -> Value:
        """The call with its hooks, as nn.Module.__call__ runs them: each pre-hook on
        (module, inputs), which may return new inputs; then forward; then each forward hook on
        (module, inputs, output), which may return a new output."""
        if not ref.hooks and not ref.backward_hooked:
            return self._module_call(ref, args, node, frame, kwargs)
        module = Value("module", tensor=False, grad=False, module=ref)
        for hook in ref.hooks:
            if hook.kind == "pre":
                inputs = Value("container", tensor=False, grad=None, items=tuple(args))
                given = self._run_hook(hook.function, [module, inputs], node, frame)
                if given.kind != "scalar":
                    args = list(given.items) if given.items is not None else [given]
        output = self._module_call(ref, args, node, frame, kwargs)
        if ref.backward_hooked and output.tensorish:
            # torch runs the module's outputs through BackwardHookFunction: views of it
            output = replace(output, view_kind="hooked", leaf=False)
        for hook in ref.hooks:
            if hook.kind == "post":
                inputs = Value("container", tensor=False, grad=None, items=tuple(args))
                given = self._run_hook(hook.function, [module, inputs, output], node, frame)
                if given.kind != "scalar":
                    output = given
        return output

    def _run_hook(self, hook: Function, args: list[Value], node: ast.Call, frame: Frame) -> Value:
        return self.host.inline(hook.node, hook.start, args, {}, node, frame, hook.model)


def twin_module(ref: ModuleRef, parent: ModuleRef | None = None, depth: int = 0) -> ModuleRef:
    """`copy.deepcopy(module)`: the same modules, each with parameters of its own (a Sequential's
    children too); the copy's hooks and attributes set after construction are not followed."""
    twin = replace(
        ref,
        params_group=new_id(),
        attrs={},
        hooks=(),
        children=None,
        parent=parent,
        assigned=NO_NAMES,
    )
    if ref.children is not None and depth < 8:
        twin.children = [twin_module(child, twin, depth + 1) for child in ref.children]
    return twin


def element_module(container: ModuleRef, key: object = None) -> Value:
    """An element of a ModuleList / Sequential / ModuleDict: the child at a known index or
    key (`self.stages["l1"]`, `self.blocks[-1]`), else its first child when known, else a
    module the analysis knows nothing about."""
    children = container.children or []
    if isinstance(key, str):
        named = [c for c in children if c.submodule is not None and c.submodule.name == key]
        if named:
            return Value("module", tensor=False, grad=False, module=named[0])
    elif isinstance(key, int) and -len(children) <= key < len(children):
        return Value("module", tensor=False, grad=False, module=children[key])
    if children:
        return Value("module", tensor=False, grad=False, module=children[0])
    return Value(
        "module", tensor=False, grad=False, module=ModuleRef(None, None, container.params_group)
    )


def _generated_init(node: ast.ClassDef, owner: ModuleModel) -> bool | None:
    """Whether a class decorated `@dataclass` gets the generated __init__ (False for
    `@dataclass(init=False)`); None when it is not a dataclass."""
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if owner.qualify(target) not in ("dataclasses.dataclass", "dataclass"):
            continue
        if isinstance(dec, ast.Call):
            for kw in dec.keywords:
                if kw.arg == "init" and isinstance(kw.value, ast.Constant):
                    return bool(kw.value.value)
        return True
    return None


def _field_default(value: ast.expr | None, owner: ModuleModel) -> Value | None:
    """A dataclass field's default, when it is a constant (`x: int = 0`,
    `field(default=0)`); None otherwise."""
    if isinstance(value, ast.Call) and owner.qualify(value.func) in (
        "dataclasses.field",
        "field",
    ):
        value = next((kw.value for kw in value.keywords if kw.arg == "default"), None)
    if isinstance(value, ast.Constant):
        return constant(value.value)
    return None


def bind_consts(cls: ClassInfo, args: list[Value], kwargs: dict[str, Value]) -> dict[str, object]:
    """Constructor arguments known as constants, by __init__ parameter name, defaults included."""
    consts: dict[str, object] = {}
    for name, default in cls.init_defaults.items():
        if isinstance(default, ast.Constant):
            consts[name] = default.value
    for name, value in zip(cls.init_params, args, strict=False):
        if value.kind == "scalar" and value.has_const:
            consts[name] = value.const
        else:
            consts.pop(name, None)
    for name, value in kwargs.items():
        if value.kind == "scalar" and value.has_const:
            consts[name] = value.const
        else:
            consts.pop(name, None)
    return consts


def _init_consts(
    cls: ClassInfo, call: ast.Call | None, parent: ModuleRef | None
) -> dict[str, object]:
    """Constants of a submodule's constructor call in its owner's __init__."""
    owner = owning_instance(parent)
    consts: dict[str, object] = {}
    for name, default in cls.init_defaults.items():
        if isinstance(default, ast.Constant):
            consts[name] = default.value
    if call is None:
        return consts
    pairs = list(zip(cls.init_params, call.args, strict=False))
    pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg]
    for name, expr in pairs:
        try:
            consts[name] = _evaluated_in(expr, owner)
        except Undecidable:
            consts.pop(name, None)
    return consts


def guards_hold(
    guards: tuple[tuple[ast.expr, bool], ...],
    consts: dict[str, object],
    model: ModuleModel | None = None,
) -> bool | None:
    """Whether the `if` tests of `__init__` that lead to an assignment pass for these
    constructor constants (`model`: the code whose functions the tests may call); None where
    one cannot be told."""
    try:
        return all(bool(evaluate(test, consts, model)) == polarity for test, polarity in guards)
    except Undecidable:
        return None


def _choose(
    options: list[Submodule], consts: dict[str, object], model: ModuleModel | None
) -> tuple[Submodule, bool]:
    """The constructor that runs for these constants; conditional when it cannot be told."""
    if len(options) == 1:
        return options[0], False
    for option in options:
        holds = guards_hold(option.guards, consts, model)
        if holds is None:
            return option, True
        if holds:
            return option, False
    return options[0], True


def _none_runs(
    options: list[Submodule], consts: dict[str, object], model: ModuleModel | None
) -> bool:
    """Whether these constants decide that none of the constructors runs (each under an
    `if` whose tests they answer, none all true)."""
    return all(
        option.guards and guards_hold(option.guards, consts, model) is False for option in options
    )


def _parameter_here(cls: ClassInfo, attr: str, ref: ModuleRef) -> bool:
    """Whether an attribute `__init__` makes an nn.Parameter under an `if` and something
    else on another path (`if init_values > 0: self.gamma = nn.Parameter(...)` / `else:
    self.gamma = None`) is the parameter for this object's constructor arguments. Where
    they do not tell (or no other assignment exists), the parameter."""
    assigned = cls.plain_values.get(attr)
    parameter = cls.parameters[attr]
    if not assigned or all(expr is parameter for expr, _ in assigned):
        return True
    for expr, guards in assigned:
        if expr is not parameter or not guards:
            continue
        holds = guards_hold(guards, ref.consts, cls.owner)
        if holds is None:
            return True
        if not holds:
            return False  # the parameter's branch does not run for these arguments
    return True


def _plain_value(cls: ClassInfo, attr: str, consts: dict[str, object]) -> Value:
    """`self.use_gate = use_gate` set once in __init__, unguarded: its value when the
    constructor's arguments are known; a Python value of unknown value otherwise."""
    assigned = [
        (expr, guards)
        for expr, guards in cls.plain_values.get(attr, [])
        if expr is not cls.parameters.get(attr)
    ]
    if len(assigned) == 1 and not assigned[0][1]:
        try:
            return constant(evaluate(assigned[0][0], consts, cls.owner))
        except Undecidable:
            pass
    for expr, guards in assigned:  # the one whose `if` tests these arguments pass
        if not guards:
            continue
        holds = guards_hold(guards, consts, cls.owner)
        if holds is None:
            break
        if holds:
            try:
                return constant(evaluate(expr, consts, cls.owner))
            except Undecidable:
                break
    return scalar()


_NAMED_TUPLE = frozenset({"typing.NamedTuple", "NamedTuple", "typing_extensions.NamedTuple"})
_LISTS = ("torch.nn.ModuleList", "torch.nn.Sequential")
# Bases that give a subclass no parameters of their own.
_PLAIN_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.ModuleDict",
        "torch.nn.ParameterList",
        "torch.nn.ParameterDict",
        *_LISTS,
    }
)
_HOOKS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)
_TREE = 512  # the modules of a tree that modules() lists
# The torch.nn layers that take `inplace` (their attribute of that name decides).
INPLACE_LAYERS = frozenset(
    name for name, info in load_knowledge().modules.items() if info.inplace_position is not None
)


def _qualname(sub: Submodule, model: ModuleModel) -> str | None:
    """What a constructor call in `__init__` calls: as the file's scan read it, or, where the
    scan ran before the file defined the name (a helper defined below the class), now."""
    return sub.qualname or model.qualify(sub.call.func)


def _known(expr: ast.expr, parent: ModuleRef | None) -> Value:
    """A constructor argument written in a parent's `__init__`, where its constants tell."""
    try:
        return constant(_evaluated_in(expr, owning_instance(parent)))
    except Undecidable:
        return unknown()


def _evaluated_in(expr: ast.expr, owner: ModuleRef | None) -> object:
    """The value of an expression of `owner`'s `__init__` text, from its constructor's
    constants and the functions of its class's code; Undecidable where they do not tell."""
    code = owner.cls.owner if owner is not None and owner.cls is not None else None
    return evaluate(expr, owner.consts if owner is not None else {}, code)
