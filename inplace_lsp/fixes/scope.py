"""What one function (or the module) does with its names, read from `ast`: parameters,
bindings and their values, reads, loops; and whether the callers of a function rely on it
changing an argument in place. The codemods ask this before they rebind a name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from inplace_lsp.analysis import knowledge
from inplace_lsp.analysis.findings import Span
from inplace_lsp.analysis.torch_ops import ALIAS_METHODS, TENSOR_ATTR_VIEWS
from inplace_lsp.fixes.source import BlockTree, Located, Source, walk_statements

# `.to()`, `.contiguous()`, `.float()` and the like return the tensor itself when nothing has to
# change, and users take `.detach()` to get a separate tensor: they end a view chain.
_CHAIN_ENDS = ALIAS_METHODS | {
    "detach",
    "detach_",
    "requires_grad_",
    "__getitem__",
    "__pos__",
    "positive",
    "conj",
}
# Methods and attributes whose result shares memory with the tensor they are taken from, as
# users write them to change part of a tensor (`h.view(-1)[i] = ...`): the knowledge table's
# views that return one tensor, less the chain ends.
VIEW_METHODS = frozenset(
    name
    for name, op in knowledge.load().methods().items()
    if op.view and not op.inplace and not op.tuple_output and name not in _CHAIN_ENDS
)
VIEW_ATTRS = TENSOR_ATTR_VIEWS
GRAD_OFF = frozenset({"no_grad", "inference_mode", "set_grad_enabled"})
_MAX_CALLER_DEPTH = 3

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def view_root(expr: ast.expr) -> str | None:
    """The name a view expression is taken from (`h.view(-1)[0]` -> "h"), else None."""
    root = written_root(expr)
    return root.id if root is not expr and isinstance(root, ast.Name) else None


def dotted(expr: ast.expr) -> str | None:
    """`self.centers` -> "self.centers"; None for anything but names and attributes of them."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return ".".join([expr.id, *reversed(parts)])


def written_root(expr: ast.expr) -> ast.expr:
    """The tensor expression a subscript write lands in: `x[0][1]`, `x.view(-1)[0]` -> `x`."""
    while True:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRS:
            expr = expr.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in VIEW_METHODS
        ):
            expr = expr.func.value
        else:
            return expr


def grad_off(item: ast.withitem) -> bool:
    """`with torch.no_grad():`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`."""
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in GRAD_OFF:
        return False
    if name == "set_grad_enabled":
        return bool(call.args) and isinstance(call.args[0], ast.Constant) and not call.args[0].value
    return not any(
        isinstance(a, ast.Constant) and a.value is False for a in call.args[:1]
    )  # inference_mode(False) turns it off


@dataclass(frozen=True)
class Binding:
    name: str
    stmt: ast.stmt
    line: int  # document line of the statement
    end_line: int
    value: ast.expr | None  # `name = value`; None for unpacking, loops, imports ...


@dataclass
class Scope:
    """The names of a function body (nested functions and classes are their own scopes)."""

    block: BlockTree
    node: FunctionNode | ast.Module
    params: list[str] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)
    declared: set[str] = field(default_factory=set)  # global / nonlocal
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    stores: set[str] = field(default_factory=set)
    loads: dict[str, list[int]] = field(default_factory=dict)
    loops: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def of(cls, found: Located) -> Scope:
        function = found.function
        scope = cls(found.block, function if function is not None else found.block.tree)
        if function is not None:
            args = function.args
            scope.positional = [a.arg for a in (*args.posonlyargs, *args.args)]
            scope.params = [*scope.positional, *(a.arg for a in args.kwonlyargs)]
            scope.params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        for stmt in scope.node.body:
            scope._statement(stmt)
        return scope

    @property
    def is_function(self) -> bool:
        return not isinstance(self.node, ast.Module)

    def line(self, node: ast.stmt | ast.expr) -> int:
        return node.lineno + self.block.line0

    def end_line(self, node: ast.stmt | ast.expr) -> int:
        return (node.end_lineno or node.lineno) + self.block.line0

    # ---------------------------------------------------------------- collection

    def _statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            self.loops.append((self.line(stmt), self.end_line(stmt)))
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            self.declared.update(stmt.names)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._bind(stmt.name, stmt, None)
            for decorator in stmt.decorator_list:
                self._expression(decorator, stmt)
            for inner in ast.walk(stmt):  # closures read names of this scope
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                    self.loads.setdefault(inner.id, []).append(self.line(inner))
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                self._bind((alias.asname or alias.name).split(".")[0], stmt, None)
            return
        value = None
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            value = stmt.value
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self._statement(child)
            elif isinstance(child, ast.ExceptHandler):
                if child.name:
                    self._bind(child.name, stmt, None)
                if child.type is not None:
                    self._expression(child.type, stmt)
                for inner in child.body:
                    self._statement(inner)
            elif isinstance(child, ast.match_case):
                for inner in child.body:
                    self._statement(inner)
                for node in ast.walk(child.pattern):
                    name = getattr(node, "name", None)
                    if isinstance(name, str):
                        self._bind(name, stmt, None)
            elif isinstance(child, ast.expr):
                direct = (isinstance(stmt, ast.Assign) and child in stmt.targets) or (
                    isinstance(stmt, ast.AnnAssign) and child is stmt.target
                )
                self._expression(child, stmt, value if direct else None)
            elif isinstance(child, ast.withitem):
                self._expression(child.context_expr, stmt)
                if child.optional_vars is not None:
                    self._expression(child.optional_vars, stmt)

    def _expression(self, expr: ast.expr, stmt: ast.stmt, value: ast.expr | None = None) -> None:
        if isinstance(expr, ast.Name):
            if isinstance(expr.ctx, ast.Load):
                self.loads.setdefault(expr.id, []).append(self.line(expr))
            else:
                if isinstance(stmt, ast.AugAssign):  # `x += v` reads x too
                    self.loads.setdefault(expr.id, []).append(self.line(expr))
                self._bind(expr.id, stmt, value)
            return
        if isinstance(expr, ast.NamedExpr):
            self._bind(expr.target.id, stmt, expr.value)
            self._expression(expr.value, stmt)
            return
        if isinstance(
            expr, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            for node in ast.walk(expr):  # own scope: only its reads of our names matter
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self.loads.setdefault(node.id, []).append(self.line(node))
            return
        for child in ast.iter_child_nodes(expr):
            if isinstance(child, ast.expr):
                self._expression(child, stmt)

    def _bind(self, name: str, stmt: ast.stmt, value: ast.expr | None) -> None:
        self.stores.add(name)
        if isinstance(stmt, ast.AugAssign):
            return  # `x += v` keeps the tensor: not a new binding for aliasing purposes
        binding = Binding(name, stmt, self.line(stmt), self.end_line(stmt), value)
        self.bindings.setdefault(name, []).append(binding)

    # ---------------------------------------------------------------- questions

    def is_local(self, name: str) -> bool:
        """Whether rebinding `name` here keeps it the same variable (not a new local that
        shadows a global, which would raise UnboundLocalError)."""
        if name in self.declared:
            return False
        if not self.is_function:
            return True
        return name in self.params or name in self.stores

    def binding_before(self, name: str, line: int) -> Binding | None:
        """The last binding of `name` in the text before `line`."""
        before = [b for b in self.bindings.get(name, []) if b.end_line < line]
        return before[-1] if before else None

    def is_param_at(self, name: str, line: int) -> bool:
        """Whether `name` still holds the caller's argument at `line`."""
        return name in self.params and self.binding_before(name, line) is None

    def loop_around(self, first: int, last: int) -> tuple[int, int] | None:
        around = [loop for loop in self.loops if loop[0] < first and last <= loop[1]]
        return around[0] if around else None

    def read_after(self, name: str, first: int, last: int) -> bool:
        """Whether `name` is read after the statement on lines [first, last] (anywhere else
        in the outermost loop around it, when there is one)."""
        loads = self.loads.get(name, [])
        if any(line > last for line in loads):
            return True
        loop = self.loop_around(first, last)
        return loop is not None and any(
            loop[0] <= line <= loop[1] and not first <= line <= last for line in loads
        )

    def view_chain(self, name: str, line: int) -> tuple[str, list[Binding]]:
        """The tensor `name` is a view of at `line`: its root name and the bindings that made
        the views, innermost (name's own) first. Empty when `name` is no view. A plain alias
        (`y = h`) is a link too: a write into `y` changes `h`."""
        chain: list[Binding] = []
        current = name
        for _ in range(8):
            binding = self.binding_before(current, line)
            if binding is None or binding.value is None:
                break
            base = view_root(binding.value)
            if base is None and isinstance(binding.value, ast.Name):
                base = binding.value.id
            if base is None or base == current:
                break
            chain.append(binding)
            current, line = base, binding.line
        return current, chain


def grad_off_with(found: Located) -> ast.With | ast.AsyncWith | None:
    """The outermost `with torch.no_grad()` / `inference_mode()` around the statement, within
    its function."""
    function = found.function
    start = found.ancestors.index(function) + 1 if function is not None else 0
    for node in found.ancestors[start:]:
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(grad_off(i) for i in node.items):
            return node
    return None


def locate(block: BlockTree, stmt: ast.stmt) -> Located | None:
    for found in _walk_block(block):
        if found.stmt is stmt:
            return found
    return None


def _walk_block(block: BlockTree) -> Iterator[Located]:
    return walk_statements(block.tree, (), block)


def scope_of(source: Source, found: Located) -> tuple[Scope, Located]:
    """The scope of a statement; at module level the whole document's (re-located in it)."""
    if (
        found.function is not None
        or found.block.first == 1
        and found.block.last >= len(source.lines)
    ):
        return Scope.of(found), found
    whole = BlockTree(source.module(), 1, source.line_count, 0)
    line, end_line = found.line(found.stmt), found.end_line(found.stmt)
    for candidate in _walk_block(whole):
        stmt = candidate.stmt
        if (
            type(stmt) is type(found.stmt)
            and candidate.line(stmt) == line
            and candidate.end_line(stmt) == end_line
            and stmt.col_offset == found.stmt.col_offset
        ):
            return Scope.of(candidate), candidate
    return Scope.of(found), found


# ---------------------------------------------------------------------- callers


def callers_rely(source: Source, found: Located, param: str, depth: int = 0) -> bool:
    """Whether some caller of the function around `found` may read the tensor it passes as
    `param` after the call (so changing that tensor in place is part of the function's job).
    True when in doubt: no call site in this document, a call we cannot map, `forward`."""
    function = found.function
    if function is None or depth > _MAX_CALLER_DEPTH:
        return True
    name = function.name
    if name.startswith("__") or name == "forward":
        return True
    scope = Scope.of(found)
    is_method = found.class_def is not None and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list
    )
    positional = scope.positional[1:] if is_method else scope.positional
    def_line = found.line(function)
    sites = 0
    for match in re.finditer(rf"(?<![\w]){re.escape(name)}\s*\(", source.text):
        line, col = source.position(match.start())
        if line == def_line:
            continue
        caller = source.statement(Span(line, col, line, col), exact=False)
        if caller is None:
            continue
        calls = [
            node
            for node in ast.walk(caller.stmt)
            if isinstance(node, ast.Call)
            and caller.line(node.func) == line
            and (
                (isinstance(node.func, ast.Name) and node.func.id == name and not is_method)
                or (isinstance(node.func, ast.Attribute) and node.func.attr == name and is_method)
            )
        ]
        for call in calls:
            sites += 1
            if _call_relies(source, caller, call, param, positional, depth):
                return True
    return sites == 0


def _call_relies(
    source: Source,
    caller: Located,
    call: ast.Call,
    param: str,
    positional: list[str],
    depth: int,
) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return True
    argument: ast.expr | None = None
    if param in positional and positional.index(param) < len(call.args):
        argument = call.args[positional.index(param)]
    for keyword in call.keywords:
        if keyword.arg == param:
            argument = keyword.value
    if argument is None:
        return False  # the default value: nothing of the caller's
    if isinstance(argument, ast.Name):
        passed: str | None = argument.id
    else:
        passed = view_root(argument)
        if passed is None:
            # an attribute (`self.buf`) stays reachable; anything else is a fresh value
            return dotted(argument) is not None
    assert passed is not None
    if caller.function is None:
        return True  # module-level code: its later reads are not worth parsing for
    scope = Scope.of(caller)
    stmt = caller.stmt
    first, last = caller.line(stmt), caller.end_line(stmt)
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body:  # a compound statement: only its header calls
        last = max(first, caller.line(body[0]) - 1)
    rebinds = isinstance(stmt, ast.Assign) and any(
        isinstance(node, ast.Name) and node.id == passed
        for target in stmt.targets
        for node in ast.walk(target)
    )
    if not scope.is_local(passed):
        return True
    if not rebinds and scope.read_after(passed, first, last):
        return True
    if scope.is_param_at(passed, first):
        return callers_rely(source, caller, passed, depth + 1)
    return False
