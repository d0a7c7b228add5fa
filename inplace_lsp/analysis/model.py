"""The module model: imports and aliases, nn.Module classes with their `__init__` attributes
(and Sequential / ModuleList / ModuleDict contents), and local functions.

Built from the parsed top-level blocks; holds no torch knowledge beyond name resolution.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from inplace_lsp.analysis import constants
from inplace_lsp.analysis.constants import NotConstant
from inplace_lsp.analysis.knowledge import load as load_knowledge

MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
CONTAINERS = frozenset(
    {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList"}
)


ALL = "*"  # a Recorded table read whole (iterated): no name is spelled so


class Recorded(dict):  # type: ignore[type-arg]
    """A table of the document's definitions (its classes, its functions, a class's methods)
    that notes each name an analysis looks up in it, found or not, while its recorder is on:
    what that analysis read of the document besides its own function, so that an edit
    elsewhere invalidates only the analyses that read what it changed. Iterating reads every
    name (ALL). `box` is the recorder: [None] when off, [set of (tag, name)] when on."""

    __slots__ = ("box", "tag")

    def __init__(self, tag: object, box: list[set[tuple[object, str]] | None]) -> None:
        super().__init__()
        self.tag = tag
        self.box = box

    def _read(self, name: str) -> None:
        cells = self.box[0]
        if cells is not None:
            cells.add((self.tag, name))

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        self._read(key)
        return dict.get(self, key, default)

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        self._read(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        self._read(key)  # type: ignore[arg-type]
        return dict.__contains__(self, key)

    def __iter__(self):  # type: ignore[no-untyped-def]
        self._read(ALL)
        return dict.__iter__(self)

    def keys(self):  # type: ignore[no-untyped-def]
        self._read(ALL)
        return dict.keys(self)

    def values(self):  # type: ignore[no-untyped-def]
        self._read(ALL)
        return dict.values(self)

    def items(self):  # type: ignore[no-untyped-def]
        self._read(ALL)
        return dict.items(self)


@dataclass
class Submodule:
    """What `self.<name> = ...` assigned in `__init__`: a module constructor call."""

    name: str
    call: ast.Call
    qualname: str | None  # "torch.nn.ReLU", a local class name, or None if unknown
    children: list[Submodule] = field(default_factory=list)  # Sequential / ModuleList contents
    guards: tuple[tuple[ast.expr, bool], ...] = ()  # the `if` tests in __init__ it depends on
    counted: bool = True  # its children are as many as the text says (not a comprehension's two)

    def keyword(self, name: str) -> ast.keyword | None:
        return call_keyword(self.call, name)


def call_keyword(call: ast.Call, name: str) -> ast.keyword | None:
    """The `name=` keyword a call passes, if it does."""
    return next((kw for kw in call.keywords if kw.arg == name), None)


def call_argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """What a call passes as `name`: by that keyword, or at `position`; None: not passed."""
    keyword = call_keyword(call, name)
    if keyword is not None:
        return keyword.value
    return call.args[position] if len(call.args) > position else None


@dataclass
class ClassInfo:
    name: str
    node: ast.ClassDef
    bases: list[str]
    block_start: int = 1  # 1-based document line where the class's block starts
    owner: ModuleModel | None = None  # the module (file) that defines it
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    submodules: dict[str, Submodule] = field(default_factory=dict)
    parameters: dict[str, ast.AST] = field(default_factory=dict)  # self.w = nn.Parameter(...)
    buffers: set[str] = field(default_factory=set)  # register_buffer names
    plain_attrs: set[str] = field(default_factory=set)  # self.scale = dim ** -0.5: not tensors
    # Each plain attribute's assignments in __init__, with the `if` tests guarding them.
    plain_values: dict[str, list[tuple[ast.expr, tuple[Guard, ...]]]] = field(default_factory=dict)
    # Every constructor assigned to an attribute, with the `if` tests guarding it.
    submodule_options: dict[str, list[Submodule]] = field(default_factory=dict)
    init_params: list[str] = field(default_factory=list)
    # Methods __init__ makes the forward (`self.forward = self.forward_slicing`).
    forward_methods: set[str] = field(default_factory=set)
    init_defaults: dict[str, ast.expr] = field(default_factory=dict)
    is_module: bool = False
    # The attributes this class's own text gives, before finalize() adds its bases': a cached
    # fragment is finalized again in every update, against the bases of that update.
    own: tuple[object, ...] | None = None
    # What its `__init__` gives it (init_params to forward_methods, with where each node is),
    # as one hash (init_digest): with its text but its methods' bodies, the class's shape
    # (units.Table): an edit in `__init__` that changes none of it keeps the shape. 0 in a
    # model no later text is compared with (a one-shot analysis, another file's).
    init_said: int = 0

    def is_forward(self, name: str) -> bool:
        """Whether the method of this name is an nn.Module's forward (`forward`, one that
        __init__ assigns to `self.forward`, or `__call__` of a class that defines it instead)."""
        return self.is_module and (
            name == "forward"
            or name in self.forward_methods
            or (name == "__call__" and "forward" not in self.methods)
        )


@dataclass
class ModuleModel:
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    block_starts: dict[int, int] = field(default_factory=dict)  # id(def node) -> block start line
    mentions_torch: bool = False
    path: str | None = None  # None: the document being analysed
    mentions_training: bool = True  # the text calls backward() or step() somewhere
    kernels: set[str] = field(default_factory=set)  # functions registered as an op's kernel
    local_classes: list[ClassInfo] = field(default_factory=list)  # (see Fragment)
    lines: list[str] = field(default_factory=list)
    # Resolves an imported qualified name to the model of the file defining it, and, where
    # no file does, to the model of the framework stub answering for it (frameworks.stub_model:
    # the stubs are models built here, so they come in as a function, not an import).
    resolver: Callable[[str], ModuleModel | None] | None = None
    stubs: Callable[[str], ModuleModel | None] | None = None
    _def_keys: dict[int, str] = field(default_factory=dict)

    def def_key(self, fn: ast.AST) -> str:
        """`Net.forward` / `main`: the name of a function or method defined in this file."""
        if not self._def_keys:  # a reverse index, not a read of the definitions (dict.items)
            for name, function in dict.items(self.functions):
                self._def_keys[id(function)] = name
            for class_name, info in dict.items(self.classes):
                for method_name, method in dict.items(info.methods):
                    self._def_keys[id(method)] = f"{class_name}.{method_name}"
        return self._def_keys.get(id(fn), "")

    def lookup_class(self, qualname: str, depth: int = 0) -> ClassInfo | None:
        """A class defined in this file, or imported from another file of the workspace, or
        bound in the body of a class of this file (`class modules: Conv2d = Conv2d`)."""
        found = self._lookup(qualname, "classes")
        if found is not None:
            return cast(ClassInfo, found[1])
        holder, _, attr = qualname.rpartition(".")
        info = self.classes.get(holder) if holder and depth < 4 else None
        if info is None:
            return None
        bound = _class_binding(info, attr)
        alias = self.qualify(bound) if bound is not None else None
        return self.lookup_class(alias, depth + 1) if alias is not None else None

    def class_function(
        self, cls: ClassInfo, name: str
    ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """A function of this file that a class body binds as a static attribute
        (`class utils: mask = staticmethod(mask)`, or `mask = mask`), called through the
        class; None for any other attribute."""
        value = _class_binding(cls, name)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "staticmethod"
            and len(value.args) == 1
            and not value.keywords
        ):
            value = value.args[0]
        return self.functions.get(value.id) if isinstance(value, ast.Name) else None

    def lookup_function(
        self, qualname: str
    ) -> tuple[ModuleModel, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """A function defined in this file or imported from another one, with its file's model."""
        found = self._lookup(qualname, "functions")
        if found is None:
            return None
        return found[0], cast(ast.FunctionDef | ast.AsyncFunctionDef, found[1])

    def _lookup(
        self, qualname: str, table: str, depth: int = 0
    ) -> tuple[ModuleModel, object] | None:
        local = getattr(self, table).get(qualname)
        if local is not None:
            return self, local
        external = self._external(qualname)
        if external is None:
            return None
        name = qualname.rsplit(".", 1)[-1]
        found = getattr(external, table).get(name)
        if found is None and name in external.imports and depth < 4:
            # A package's __init__ re-exporting it: `from .mlp import Mlp`.
            return external._lookup(external.imports[name], table, depth + 1)
        return (external, found) if found is not None else None

    def _external(self, qualname: str) -> ModuleModel | None:
        """The model of the file that defines an imported name: a file of the workspace, or
        the stub of a framework (data/frameworks)."""
        if "." not in qualname or qualname.startswith("torch."):
            return None
        found = self.resolver(qualname) if self.resolver is not None else None
        if found is not None:
            return found
        stub = self.stubs(qualname) if self.stubs is not None else None
        return stub if stub is not self else None

    def start_of(self, node: ast.AST) -> int:
        return self.block_starts.get(id(node), 1)

    def find_method(
        self, cls: ClassInfo, name: str
    ) -> tuple[ClassInfo, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """The method `name` of cls or of its nearest local base class that defines it."""
        seen: set[int] = set()
        current: ClassInfo | None = cls
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            method = current.methods.get(name)
            if method is not None:
                return current, method
            current = self.base_of(current)
        return None

    def qualify(self, node: ast.AST) -> str | None:
        """Dotted qualified name of a Name/Attribute chain, through the import aliases."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.imports.get(node.id)
        if root is None:
            if node.id in self.classes or node.id in self.functions:
                root = node.id
            else:
                return None
        return ".".join([root, *reversed(parts)])

    def is_module_class(self, name: str, _seen: frozenset[str] = frozenset()) -> bool:
        info = self.lookup_class(name)
        if info is None or name in _seen:
            return False
        owner = info.owner or self
        return any(
            base in MODULE_BASES
            or base.startswith("torch.nn.")
            or owner.is_module_class(base, _seen | {name})
            for base in info.bases
        )

    def base_of(self, info: ClassInfo) -> ClassInfo | None:
        """The first base class of info that is defined in Python we can read."""
        owner = info.owner or self
        for base in info.bases:
            found = owner.lookup_class(base)
            if found is not None:
                return found
        return None


def _import_aliases(stmt: ast.stmt) -> Iterable[tuple[str, str]]:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                root = alias.name.split(".")[0]
                yield root, root
    elif isinstance(stmt, ast.ImportFrom):
        base = "." * stmt.level + (stmt.module or "")
        for alias in stmt.names:
            if alias.name != "*":
                sep = "" if base.endswith(".") else "."
                yield alias.asname or alias.name, f"{base}{sep}{alias.name}" if base else alias.name


def collect_imports(tree: ast.AST) -> Iterable[tuple[str, str]]:
    """Imports anywhere in a block's statements (inside functions, if and try too); only
    statements are visited, not expressions."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from _import_aliases(node)
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(children)


def _self_attr(target: ast.expr) -> str | None:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return target.attr
    return None


def constant_range(node: ast.expr) -> range | None:
    """`range(3)`, `range(0, n, 2)` with constant ints: that range; else None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
        and not node.keywords
    ):
        return None
    bounds: list[int] = []
    for arg in node.args:
        try:
            value = evaluate(arg, {})
        except Undecidable:
            return None
        if type(value) is not int:
            return None
        bounds.append(value)
    try:
        return range(*bounds)
    except ValueError:  # range(0, 4, 0)
        return None


def _repeats(comp: ast.ListComp | ast.GeneratorExp) -> int:
    """How many elements `[... for _ in range(n)]` makes: n when constant (at most 32)."""
    numbers = _comprehension_range(comp)
    return min(len(numbers), 32) if numbers is not None else 2


def _counted(comp: ast.ListComp | ast.GeneratorExp) -> bool:
    """Whether _repeats is the comprehension's count (not two standing for any number)."""
    numbers = _comprehension_range(comp)
    return numbers is not None and len(numbers) <= 32


def _comprehension_range(comp: ast.ListComp | ast.GeneratorExp) -> range | None:
    if len(comp.generators) == 1 and not comp.generators[0].ifs:
        return constant_range(comp.generators[0].iter)
    return None


def _named_layers(model: ModuleModel, arg: ast.expr) -> tuple[list[str], list[ast.expr]] | None:
    """`OrderedDict([("fc1", nn.Linear(...)), ...])`: each layer with its name; None for any
    other argument (or a name that is not a constant)."""
    if not (
        isinstance(arg, ast.Call)
        and model.qualify(arg.func) in ("collections.OrderedDict", "OrderedDict", "dict")
        and len(arg.args) == 1
        and isinstance(arg.args[0], (ast.List, ast.Tuple))
    ):
        return None
    names: list[str] = []
    items: list[ast.expr] = []
    for pair in arg.args[0].elts:
        if not (isinstance(pair, ast.Tuple) and len(pair.elts) == 2):
            return None
        key, item = pair.elts
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        names.append(key.value)
        items.append(item)
    return names, items


def submodule(model: ModuleModel, name: str, value: ast.expr) -> Submodule | None:
    if not isinstance(value, ast.Call):
        return None
    qual = model.qualify(value.func)
    sub = Submodule(name, value, qual)
    if qual in ("torch.nn.Sequential", "torch.nn.ModuleList"):
        items: list[ast.expr] = list(value.args)
        if len(items) == 1 and isinstance(items[0], ast.Starred):
            items = [items[0].value]  # `nn.Sequential(*[Block(d) for _ in range(n)])`
        names: list[str] = []
        if len(items) == 1 and isinstance(items[0], (ast.List, ast.Tuple)):
            items = list(items[0].elts)
        elif len(items) == 1 and isinstance(items[0], (ast.ListComp, ast.GeneratorExp)):
            # `ModuleList([Block(dim) for _ in range(depth)])`: that many blocks (two when the
            # count is not a constant: as a loop's two passes, enough to see one block write
            # what the one before saved).
            sub.counted = _counted(items[0])
            items = [items[0].elt] * _repeats(items[0])
        elif len(items) == 1 and (named := _named_layers(model, items[0])) is not None:
            # `nn.Sequential(OrderedDict([("fc1", nn.Linear(...)), ("act", nn.Tanh())]))`
            names, items = named
        for i, item in enumerate(items):
            child = submodule(model, names[i] if names else str(i), item)
            if child is not None:
                sub.children.append(child)
    elif (
        qual == "torch.nn.ModuleDict"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Dict)
    ):
        # `nn.ModuleDict({"l0": nn.Linear(...), ...})`: each child under its key.
        for key, item in zip(value.args[0].keys, value.args[0].values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                child = submodule(model, key.value, item)
                if child is not None:
                    sub.children.append(child)
    return sub


Guard = tuple[ast.expr, bool]  # an `if` test in __init__ and which branch the code is in


def _scan_init(
    model: ModuleModel, info: ClassInfo, init: ast.FunctionDef | ast.AsyncFunctionDef
) -> None:
    args = init.args
    positional = [*args.posonlyargs, *args.args][1:]
    info.init_params = [a.arg for a in positional]
    for arg, default in zip(reversed(positional), reversed(args.defaults), strict=False):
        info.init_defaults[arg.arg] = default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        info.init_params.append(arg.arg)
        if kw_default is not None:
            info.init_defaults[arg.arg] = kw_default
    _scan_statements(model, info, init.body, ())


def _scan_statements(
    model: ModuleModel, info: ClassInfo, body: list[ast.stmt], guards: tuple[Guard, ...]
) -> None:
    for stmt in body:
        if isinstance(stmt, ast.If):
            _scan_statements(model, info, stmt.body, (*guards, (stmt.test, True)))
            _scan_statements(model, info, stmt.orelse, (*guards, (stmt.test, False)))
            continue
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
            for field_name in ("body", "orelse", "finalbody"):
                _scan_statements(model, info, getattr(stmt, field_name, []), guards)
            for handler in getattr(stmt, "handlers", []):
                _scan_statements(model, info, handler.body, guards)
            continue
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            _record_registration(info, stmt.value)
            named = _set_by_name(stmt.value)
            if named is not None:
                _record_attr(model, info, *named, guards)
            continue
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if value is None:
            continue
        for target in targets:
            for part, part_value in _pairs(target, value):
                attr = _self_attr(part)
                if attr is not None:
                    _record_attr(model, info, attr, part_value, guards)


def _scan_class_constants(info: ClassInfo, node: ast.ClassDef) -> None:
    """`export = False` in the class body: what `self.export` reads until an instance sets
    its own (one set in `__init__` too makes it unknown; a buffer, parameter or submodule of
    that name is that)."""
    for stmt in node.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
        ):
            name = stmt.targets[0].id
            if name in info.buffers or name in info.parameters or name in info.submodules:
                continue
            info.plain_attrs.add(name)
            info.plain_values.setdefault(name, []).append((stmt.value, ()))


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """`self.G, self.D = nn.Linear(4, 4), nn.Linear(4, 1)`: each target with its value."""
    if (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    ):
        return [pair for t, v in zip(target.elts, value.elts, strict=True) for pair in _pairs(t, v)]
    return [(target, value)]


def _set_by_name(call: ast.Call) -> tuple[str, ast.expr] | None:
    """`setattr(self, name, value)` / `self.add_module(name, value)`: the attribute's name
    and value. A name spelled from a template (`f"layer{i}"`, `"layer%d" % i`,
    `"layer{}".format(i)`) is kept as the template, `layer{}`: one attribute stands for the
    family, which `getattr(self, f"layer{i}")` reads."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) == 3:
        owner, name, value = call.args
    elif (
        isinstance(func, ast.Attribute)
        and func.attr in ("add_module", "register_module")
        and len(call.args) == 2
    ):
        owner, (name, value) = func.value, call.args
    else:
        return None
    if not (isinstance(owner, ast.Name) and owner.id == "self"):
        return None
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value, value
    template = spelled_template(name)
    return (template, value) if template is not None else None


def spelled_template(node: ast.expr) -> str | None:
    """The template a name spelled at run time follows, each field as `{}`: `f"layer{i}"`,
    `"layer%d" % i` and `"layer{}".format(i)` are all `layer{}`; None for any other
    expression."""
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
            for v in node.values
        )
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
    ):
        return _PERCENT_FIELD.sub("{}", node.left.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return _FORMAT_FIELD.sub("{}", node.func.value.value)
    return None


_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")
_PERCENT_FIELD = re.compile(r"%[-+ #0-9.]*[sdir]")


def _record_registration(info: ClassInfo, call: ast.Call) -> None:
    """self.register_buffer("name", ...) / self.register_parameter("name", ...)."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute) and call.args and isinstance(call.args[0], ast.Constant)
    ):
        return
    if func.attr == "register_buffer":
        info.buffers.add(str(call.args[0].value))
    elif func.attr == "register_parameter":
        value = call.args[1] if len(call.args) > 1 else None
        if isinstance(value, ast.Constant) and value.value is None:
            return  # `register_parameter("w", None)`: the attribute is None, no parameter
        info.parameters[str(call.args[0].value)] = value if value is not None else call


def _record_attr(
    model: ModuleModel, info: ClassInfo, attr: str, value: ast.expr, guards: tuple[Guard, ...]
) -> None:
    qual = model.qualify(value.func) if isinstance(value, ast.Call) else None
    if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        info.parameters[attr] = value
        if guards:
            # (where `else: self.gamma = None` may hold instead: which one, the constructor's
            # arguments decide; plain_values keeps each assignment with its tests)
            info.plain_values.setdefault(attr, []).append((value, guards))
        return
    if attr == "forward" and _self_attr(value) is not None:
        info.forward_methods.add(str(_self_attr(value)))
        return
    sub: Submodule | None = None
    if isinstance(value, ast.Call):
        sub = submodule(model, attr, value)
    elif isinstance(value, ast.IfExp):
        # self.act = nn.ReLU(inplace=True) if use_act else nn.Identity()
        for branch, polarity in ((value.body, True), (value.orelse, False)):
            option = submodule(model, attr, branch)
            if option is not None:
                option.guards = (*guards, (value.test, polarity))
                info.submodule_options.setdefault(attr, []).append(option)
                info.submodules.setdefault(attr, option)
        return
    elif isinstance(value, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Name, ast.Tuple, ast.List)):
        if not any(isinstance(n, ast.Call) for n in ast.walk(value)):
            info.plain_attrs.add(attr)
            info.plain_values.setdefault(attr, []).append((value, guards))
        return
    if sub is not None:
        sub.guards = guards
        info.submodule_options.setdefault(attr, []).append(sub)
        info.submodules.setdefault(attr, sub)


@dataclass
class Fragment:
    """What one block defines: its classes (with __init__ attributes) and functions."""

    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    block_starts: dict[int, int] = field(default_factory=dict)
    kernels: set[str] = field(default_factory=set)  # functions registered as an op's kernel
    # Classes a function defines in its body (`def train(): class Head(nn.Module): ...`).
    local_classes: list[ClassInfo] = field(default_factory=list)


def init_digest(info: ClassInfo, lines: Sequence[str] = (), line0: int = 1) -> int:
    """A hash of what `__init__` gave a class (before finalize adds its bases'), its nodes
    with their places from the `class` line (its block is numbered from the file's first line
    when parsed with the whole text, from its own alone): equal for two texts of `__init__`
    that give the same. `lines`: the text the class was parsed from (tree line `line0` first),
    where a node on one line is its source text and where it starts (which gives the places
    of all its parts); one on several lines (a comment may sit between them), and any node
    without them, is its syntax tree and every part's place."""
    first = info.node.lineno

    def node(expr: ast.AST) -> tuple[object, ...]:
        start = getattr(expr, "lineno", None)
        if start is not None and start == getattr(expr, "end_lineno", None):
            text = _segment(lines, expr, line0)
            if text is not None:
                return text, start - first, expr.col_offset  # type: ignore[attr-defined]
        places = tuple(
            (n.lineno - first, n.col_offset, (n.end_lineno or n.lineno) - first, n.end_col_offset)
            for n in ast.walk(expr)
            if isinstance(n, (ast.expr, ast.stmt, ast.keyword, ast.arg))
        )
        return ast.dump(expr), places

    def guards(tests: tuple[Guard, ...]) -> tuple[object, ...]:
        return tuple((node(test), branch) for test, branch in tests)

    def submodule(sub: Submodule) -> tuple[object, ...]:
        children = tuple(submodule(child) for child in sub.children)
        return (sub.name, sub.qualname, node(sub.call), children, guards(sub.guards))

    return hash(
        (
            tuple(info.init_params),
            tuple((name, node(expr)) for name, expr in info.init_defaults.items()),
            tuple((attr, submodule(sub)) for attr, sub in info.submodules.items()),
            tuple(
                (attr, tuple(submodule(sub) for sub in options))
                for attr, options in info.submodule_options.items()
            ),
            tuple((attr, node(expr)) for attr, expr in info.parameters.items()),
            tuple(sorted(info.buffers)),
            tuple(sorted(info.plain_attrs)),
            tuple(
                (attr, tuple((node(expr), guards(tests)) for expr, tests in assigned))
                for attr, assigned in info.plain_values.items()
            ),
            tuple(sorted(info.forward_methods)),
        )
    )


def _segment(lines: Sequence[str], node: ast.AST, line0: int) -> str | None:
    """The source text of a node on one line (its columns count UTF-8 bytes); None where
    the lines do not hold it."""
    index = node.lineno - line0  # type: ignore[attr-defined]
    col, end_col = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    if end_col is None or not 0 <= index < len(lines):
        return None
    line = lines[index]
    if line.isascii():
        return line[col:end_col]
    return line.encode("utf-8")[col:end_col].decode("utf-8", "replace")


def fragment(
    tree: ast.Module,
    start: int,
    model: ModuleModel,
    box: list[set[tuple[object, str]] | None] | None = None,
    said: Callable[[ClassInfo], int] | None = None,
) -> Fragment:
    """The definitions of one block; `model` supplies the imports used to resolve names.
    `box`: record the lookups of each class's methods in it (see Recorded); `said`: how each
    class's init_said is found (a caller may know it from an earlier text of `__init__`;
    None: not at all, for a model no later text of the file is compared with)."""
    frag = Fragment()

    def class_info(stmt: ast.ClassDef, name: str = "") -> ClassInfo:
        name = name or stmt.name
        info = ClassInfo(
            name, stmt, [model.qualify(b) or ast.unparse(b) for b in stmt.bases], start
        )
        if box is not None:
            info.methods = Recorded(("m", name), box)
        frag.block_starts[id(stmt)] = start
        for sub in stmt.body:
            frag.block_starts[id(sub)] = start
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                info.methods[sub.name] = sub
        init = info.methods.get("__init__")
        if init is not None:
            _scan_init(model, info, init)
        _scan_class_constants(info, stmt)
        for sub in stmt.body:
            if isinstance(sub, ast.ClassDef):
                # `class transforms: class Compose: ...` (a namespace of classes): known as
                # `transforms.Compose`, as Python finds it.
                nested = class_info(sub, f"{name}.{sub.name}")
                frag.classes[nested.name] = nested
        return info

    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            frag.functions[stmt.name] = stmt
            frag.block_starts[id(stmt)] = start
            frag.local_classes.extend(class_info(local) for local in _local_classes(stmt.body))
        elif isinstance(stmt, ast.ClassDef):
            info = frag.classes[stmt.name] = class_info(stmt)
            if said is not None:
                info.init_said = said(info)
        else:
            frag.kernels |= _kernels_registered(stmt, model)
    return frag


def _class_binding(cls: ClassInfo, name: str) -> ast.expr | None:
    """What the class body binds to `name` with a plain assignment (`Conv2d = Conv2d`,
    `mask = staticmethod(mask)`): the first such value; None where it binds none."""
    for stmt in cls.node.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
        ):
            return stmt.value
    return None


def _local_classes(body: list[ast.stmt]) -> Iterator[ast.ClassDef]:
    """The classes a function's body defines (in its `if`, `with`, `for` and `try` blocks
    too; not those of the functions and classes it defines)."""
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            yield stmt
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for field_name in ("body", "orelse", "finalbody"):
                yield from _local_classes(getattr(stmt, field_name, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _local_classes(handler.body)


def keep_classes(
    frag: Fragment, before: Fragment, shapes: dict[str, int], shapes_before: dict[str, int]
) -> None:
    """Each class of `frag` whose shape (its text but its methods' bodies, units.ClassUnits;
    what `__init__` gives it, ClassInfo.init_said) and place are those of the same class in
    `before` goes on as the ClassInfo (and Submodules) of `before`, holding what `frag`
    found: what holds objects of the class (kept summaries, keyed by their identity) still
    matches them."""
    for name, info in frag.classes.items():
        old = before.classes.get(name)
        if (
            old is None
            or name not in shapes
            or shapes[name] != shapes_before.get(name)
            or info.init_said != old.init_said
            or old.node.lineno + old.block_start != info.node.lineno + info.block_start
        ):
            continue
        kept: dict[int, Submodule] = {}
        for attr, sub in info.submodules.items():
            if attr in old.submodules:
                info.submodules[attr] = _same_submodule(sub, old.submodules[attr], kept)
        for attr, options in info.submodule_options.items():
            before_options = old.submodule_options.get(attr, [])
            if len(before_options) == len(options):
                options[:] = [
                    _same_submodule(n, o, kept)
                    for n, o in zip(options, before_options, strict=True)
                ]
        old.__dict__.update(info.__dict__)
        frag.classes[name] = old


def _same_submodule(
    new_sub: Submodule, old_sub: Submodule, kept: dict[int, Submodule]
) -> Submodule:
    """`old_sub` holding what `new_sub` found, its children matched by name and order
    (`kept`: the Submodules already matched, by the identity of the new one)."""
    found = kept.get(id(new_sub))
    if found is not None:
        return found
    kept[id(new_sub)] = old_sub
    pairs = zip(new_sub.children, old_sub.children, strict=False)  # the longer keeps its tail
    children = [_same_submodule(n, o, kept) if n.name == o.name else n for n, o in pairs]
    old_sub.__dict__.update(new_sub.__dict__)
    old_sub.children = children + new_sub.children[len(children) :]
    return old_sub


def _kernels_registered(stmt: ast.stmt, model: ModuleModel) -> set[str]:
    """The functions of this file a module-level statement registers as an operator's
    kernel (`torch.library.custom_op("ns::op", fn, mutates_args=())`, called as a
    statement or assigned, also under `if` / `try`): they run below autograd, with grad
    mode off."""
    kernels = load_knowledge().tensor.kernels
    found: set[str] = set()
    todo = [stmt]
    while todo:  # the statement and those nested in if / try / with (not expressions)
        current = todo.pop()
        for part in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(current, part, ()))
        call = getattr(current, "value", None)
        if isinstance(current, ast.ExceptHandler) or not isinstance(call, ast.Call):
            continue
        position = kernels.get(model.qualify(call.func) or "")
        if position is not None and len(call.args) > position:
            fn = call.args[position]
            if isinstance(fn, ast.Name):
                found.add(fn.id)
    return found


def add_fragment(model: ModuleModel, frag: Fragment) -> None:
    for info in frag.classes.values():
        info.owner = model
    model.classes.update(frag.classes)
    model.functions.update(frag.functions)
    model.block_starts.update(frag.block_starts)
    model.kernels |= frag.kernels
    model.local_classes.extend(frag.local_classes)


def finalize(model: ModuleModel) -> None:
    """Facts that need every class: nn.Module subclasses, attributes from local base classes.
    A class a function defines is known by its name where no other definition or import of
    the file has that name (the function that defines it is where the name means it)."""
    names = Counter(info.name for info in model.local_classes)
    for info in model.local_classes:
        name = info.name
        if names[name] == 1 and not any(
            dict.__contains__(table, name)
            for table in (model.classes, model.functions, model.imports)
        ):
            info.owner = model
            dict.__setitem__(model.classes, name, info)
    model.mentions_torch = any(
        q == "torch" or q.startswith("torch.") for q in model.imports.values()
    )
    for info in model.classes.values():
        info.bases = [model.imports.get(b, b) if "." not in b else b for b in info.bases]
        info.is_module = model.is_module_class(info.name)
        if info.own is None:
            if model.base_of(info) is None:
                continue  # nothing to inherit, and nothing inherited before
            info.own = (
                dict(info.submodules),
                dict(info.submodule_options),
                dict(info.parameters),
                set(info.buffers),
                set(info.plain_attrs),
                dict(info.plain_values),
            )
        else:
            submodules, options, parameters, buffers, plain, values = info.own
            info.submodules = dict(submodules)  # type: ignore[call-overload]
            info.submodule_options = dict(options)  # type: ignore[call-overload]
            info.parameters = dict(parameters)  # type: ignore[call-overload]
            info.buffers = set(buffers)  # type: ignore[call-overload]
            info.plain_attrs = set(plain)  # type: ignore[call-overload]
            info.plain_values = dict(values)  # type: ignore[call-overload]
    for info in model.classes.values():
        if info.own is None:
            continue
        seen = {id(info)}
        base = model.base_of(info)
        while base is not None and id(base) not in seen:
            seen.add(id(base))
            for name, sub in base.submodules.items():
                info.submodules.setdefault(name, sub)
            for name, options in base.submodule_options.items():
                info.submodule_options.setdefault(name, options)
            info.parameters = {**base.parameters, **info.parameters}
            info.buffers |= base.buffers
            info.plain_attrs |= base.plain_attrs
            info.plain_values = {**base.plain_values, **info.plain_values}
            base = model.base_of(base)


def build(
    blocks: Iterable[tuple[ast.Module, int, bool]],
    *,
    path: str | None = None,
    lines: list[str] | None = None,
    resolver: Callable[[str], ModuleModel | None] | None = None,
    stubs: Callable[[str], ModuleModel | None] | None = None,
) -> ModuleModel:
    """The model of a file from its parsed blocks: (tree, start, has_import)."""
    model = ModuleModel(path=path, lines=lines or [], resolver=resolver, stubs=stubs)
    blocks = list(blocks)
    for tree, _, has_import in blocks:
        if has_import:
            for alias, qual in collect_imports(tree):
                model.imports.setdefault(alias, qual)
    for tree, start, _ in blocks:
        add_fragment(model, fragment(tree, start, model))
    finalize(model)
    return model


def looks_like_module(info: ClassInfo) -> bool:
    """An nn.Module subclass, or a class whose base the model cannot read but is named like
    one (LightningModule, an unresolved import)."""
    return info.is_module or any(base.rsplit(".", 1)[-1].endswith("Module") for base in info.bases)


def calls_backward(fn: ast.AST) -> bool:
    """Whether code calls `.backward()` or `torch.autograd.grad(...)` (a training function)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("backward", "grad"):
                return True
    return False


# A guard or argument whose value is not known from constants (the analysis' name for it).
Undecidable = NotConstant


def evaluate(
    node: ast.expr, consts: Mapping[str, object], model: ModuleModel | None = None
) -> object:
    """The value of a constant expression where only `consts` (name -> value) are known:
    constructor-argument tests in __init__ (`if norm == "batch":`); Undecidable otherwise.
    With the `model` of the code it is in, it calls that code's functions whose body
    returns one expression (`exists(dim_in)`, `default(heads, 8)`)."""
    scope = constants.Scope(consts) if model is None else _CodeScope(consts, model)
    return constants.evaluate(node, scope)


_CALL_DEPTH = 8  # the most nested calls of the code's functions one evaluation follows


class _CodeScope(constants.Scope):
    """Constants, and the functions of the code whose body is one `return` of an expression
    of their parameters (`def exists(val): return val is not None`)."""

    def __init__(self, names: Mapping[str, object], model: ModuleModel, depth: int = 0) -> None:
        super().__init__(names)
        self.model = model
        self.depth = depth

    def call(self, node: ast.Call) -> object:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.names and self.depth < _CALL_DEPTH:
            found = self.model.lookup_function(self.model.qualify(func) or func.id)
            body = _returned_expression(found[1]) if found is not None else None
            if found is not None and body is not None:
                bound = _bound_arguments(found[1], node, self)
                if bound is not None:
                    inner = _CodeScope(bound, found[0], self.depth + 1)
                    return constants.evaluate(body, inner)
        return super().call(node)


def _returned_expression(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression a plain function returns when its body is that one `return` (after a
    docstring); None for any other function."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if (
        isinstance(fn, ast.AsyncFunctionDef)
        or fn.decorator_list
        or len(body) != 1
        or not isinstance(body[0], ast.Return)
        or body[0].value is None
    ):
        return None
    return body[0].value


def _bound_arguments(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call, scope: constants.Scope
) -> dict[str, object] | None:
    """The parameters of `fn` bound to the constant arguments of a call of it (defaults
    that are constants filling the rest); None where the call does not fit its parameters
    plainly (`*args`, `**kwargs`, keyword-only parameters, a starred argument)."""
    arguments = fn.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        return None
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        return None
    names = [a.arg for a in arguments.args]
    if len(node.args) > len(names):
        return None
    bound: dict[str, object] = {
        name: constants.evaluate(arg, scope) for name, arg in zip(names, node.args, strict=False)
    }
    for keyword in node.keywords:
        if keyword.arg not in names or keyword.arg in bound:
            return None
        bound[keyword.arg] = constants.evaluate(keyword.value, scope)
    defaults = dict(
        zip(names[len(names) - len(arguments.defaults) :], arguments.defaults, strict=True)
    )
    for name in names:
        if name not in bound:
            default = defaults.get(name)
            if not isinstance(default, ast.Constant):
                return None
            bound[name] = default.value
    return bound
