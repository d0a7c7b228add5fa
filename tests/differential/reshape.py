"""Reshape a generated program without changing what it computes (metamorphic testing).

Real training code rarely has the generator's shape: its steps sit in a `Trainer` class, its
`forward` calls helper methods, some of them defined in a base class or a subclass, and its
layers sit in containers. Each reshape here moves code into one of those shapes and keeps the
computation: the same torch calls on the same values in the same order. The oracle labels the
reshaped program by running it, so a reshape that goes wrong costs a program (labelled `other`),
never a wrong label; the analyzer's verdict should not depend on the shape.

Reshapes (each a feature `shape:...` of the program):
- `extract:method|base|template|function`: a run of statements of a `forward` or a module-level
  function becomes a helper (a method of the class, of a base class, of a subclass that a base
  `forward` calls, or a module-level function taking `self`); its live-in names are its
  parameters and its live-out names its return value.
- `layers:moduledict|modulelist|getattr`: layers built in `__init__` are kept in a container
  (`self.layers["fc1"]`, `self.layers[0]`) or read with `getattr(self, "fc1")`.
- `imports:...`: the header's imports spelled as real code spells them (`import torch as th`,
  `from torch import nn`, `torch.nn.functional.relu` in full, `from torch.nn.functional import
  relu`, `from torch import optim`), every use rewritten to match.
- `spelling`: one op spelled another way torch accepts: `torch.sigmoid(h)` as `h.sigmoid()` and
  back, `F.relu(h)` as `torch.relu(h)`, `F.relu(h, inplace=True)` as `torch.relu_(h)`,
  `a @ b` as `torch.matmul(a, b)`.
- `trainer` and `trainer:train_step`: `main()` becomes a `Trainer` class whose `__init__` holds
  the set-up and whose `fit` the loop; names that live across iterations become attributes, and
  with `train_step` the loop body is a method called once per iteration.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Iterable

__all__ = ["reshape"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _names(nodes: Iterable[ast.AST], ctx: type[ast.expr_context]) -> list[str]:
    """Names with context `ctx` in `nodes`, in order, outside nested scopes and comprehensions."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ctx):
            out.append(node.id)
        if (
            ctx is ast.Load
            and isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
        ):
            out.append(node.target.id)  # `x += y` reads x
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPES):
                continue
            if isinstance(child, _COMPREHENSIONS):
                if ctx is ast.Load:  # what a comprehension reads from the enclosing scope
                    bound = {
                        n.id
                        for g in child.generators
                        for n in ast.walk(g.target)
                        if isinstance(n, ast.Name)
                    }
                    out.extend(
                        n.id
                        for n in ast.walk(child)
                        if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Load)
                        and n.id not in bound
                    )
                continue
            visit(child)

    for node in nodes:
        visit(node)
    return out


def _has(nodes: Iterable[ast.AST], kinds: tuple[type, ...]) -> bool:
    """Whether any of `nodes` holds a node of `kinds` outside nested scopes."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
    return False


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return names


def _is_module_class(node: ast.stmt) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        isinstance(b, ast.Attribute) and b.attr == "Module" for b in node.bases
    )


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _parse_stmt(text: str) -> ast.stmt:
    return ast.parse(text).body[0]


# --- extract a run of statements into a helper ---------------------------------------------


def _segments(body: list[ast.stmt]) -> list[tuple[int, int]]:
    """Runs body[i:j] that can move into a helper: no return, yield or loop exit, not the last."""
    start = 1 if body and isinstance(body[0], ast.Expr) else 0  # keep a docstring
    ok = [
        not _has([s], (ast.Return, ast.Yield, ast.YieldFrom, ast.Break, ast.Continue))
        and not isinstance(s, ast.Global | ast.Nonlocal)
        for s in body
    ]
    out = []
    for i in range(start, len(body) - 1):
        for j in range(i + 1, len(body)):
            if all(ok[i:j]):
                out.append((i, j))
    return out


def _extract(
    fn: ast.FunctionDef, seg: tuple[int, int], helper: str, call: str, with_self: bool
) -> ast.FunctionDef:
    """Move fn.body[seg] into a new function `helper`; fn calls it as `call(...)`.

    Returns the helper (with a `self` parameter when `with_self`)."""
    i, j = seg
    body = fn.body
    params = _params(fn)
    stored_before = set(params) | set(_names(body[:i], ast.Store))
    segment = body[i:j]
    loads = _names(segment, ast.Load)
    stores = _names(segment, ast.Store)
    after = set(_names(body[j:], ast.Load))
    outputs = sorted({n for n in stores if n in after})
    inputs = [n for n in dict.fromkeys(loads + outputs) if n in stored_before and n != "self"]
    args = (["self"] if with_self else []) + inputs
    head = f"def {helper}({', '.join(args)}):\n    pass"
    new = _parse_stmt(head)
    assert isinstance(new, ast.FunctionDef)
    new.body = copy.deepcopy(segment)
    if outputs:
        new.body.append(_parse_stmt(f"return {', '.join(outputs)}"))
    call_args = ", ".join((["self"] if with_self and not call.startswith("self.") else []) + inputs)
    call_text = f"{call}({call_args})"
    if len(outputs) == 1:
        call_text = f"{outputs[0]} = {call_text}"
    elif outputs:
        call_text = f"{', '.join(outputs)} = {call_text}"
    fn.body = body[:i] + [_parse_stmt(call_text)] + body[j:]
    return new


def _extract_in_class(tree: ast.Module, cls: ast.ClassDef, rng: random.Random) -> str | None:
    fn = _method(cls, "forward")
    if fn is None or _has(fn.body, _SCOPES):
        return None
    segments = _segments(fn.body)
    if not segments:
        return None
    seg = rng.choice(segments)
    where = rng.choice(["method", "base", "template", "function"])
    at = tree.body.index(cls)
    if where == "method":
        helper = _extract(fn, seg, "_part", "self._part", with_self=True)
        cls.body.insert(cls.body.index(fn), helper)
    elif where == "function":
        name = f"_{cls.name.lower()}_part"
        helper = _extract(fn, seg, name, name, with_self=True)
        tree.body.insert(at, helper)
    elif where == "base":
        # The helper lives in a base class the module inherits from.
        helper = _extract(fn, seg, "_part", "self._part", with_self=True)
        base = _parse_stmt(f"class _{cls.name}Base(nn.Module):\n    pass")
        assert isinstance(base, ast.ClassDef)
        base.body = [helper]
        cls.bases = [ast.Name(id=f"_{cls.name}Base", ctx=ast.Load())]
        tree.body.insert(at, base)
    else:
        # Template method: the base class's forward calls `_part`, which only the subclass
        # (the class the program builds) defines.
        helper = _extract(fn, seg, "_part", "self._part", with_self=True)
        base = _parse_stmt(f"class _{cls.name}Base(nn.Module):\n    pass")
        assert isinstance(base, ast.ClassDef)
        cls.body.remove(fn)
        base.body = [fn]
        cls.body.append(helper)
        cls.bases = [ast.Name(id=f"_{cls.name}Base", ctx=ast.Load())]
        tree.body.insert(at, base)
    return f"shape:extract:{where}"


def _extract_in_function(tree: ast.Module, fn: ast.FunctionDef, rng: random.Random) -> str | None:
    if _has(fn.body, _SCOPES):
        return None
    segments = _segments(fn.body)
    if not segments:
        return None
    name = f"_{fn.name}_part"
    helper = _extract(fn, rng.choice(segments), name, name, with_self=False)
    tree.body.insert(tree.body.index(fn), helper)
    return "shape:extract:helper"


# --- layers in containers ---------------------------------------------------------------------


class _Rename(ast.NodeTransformer):
    """`self.NAME` (read) -> the expression `replace[NAME]`."""

    def __init__(self, replace: dict[str, str]) -> None:
        self.replace = replace

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.replace
            and isinstance(node.ctx, ast.Load)
        ):
            expr = ast.parse(self.replace[node.attr], mode="eval").body
            return ast.copy_location(expr, node)
        return node


def _layers(
    tree: ast.Module, cls: ast.ClassDef, classes: set[str], rng: random.Random
) -> str | None:
    init = _method(cls, "__init__")
    if init is None:
        return None
    # A layer read from outside the class (`model.fc1.register_forward_hook(...)`) or by
    # `__init__` itself (`self.fc.weight.data.clamp_(...)`) stays put.
    outside = {
        n.attr
        for top in tree.body
        if top is not cls
        for n in ast.walk(top)
        if isinstance(n, ast.Attribute)
    }
    outside |= {
        n.attr
        for n in ast.walk(init)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
    }
    layers: list[tuple[int, str, ast.expr]] = []
    for k, stmt in enumerate(init.body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and isinstance(value, ast.Call)
        ):
            continue
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            is_layer = (
                func.value.id == "nn" and func.attr[:1].isupper() and "Param" not in func.attr
            )
        else:
            is_layer = isinstance(func, ast.Name) and func.id in classes
        if is_layer and target.attr not in outside:
            layers.append((k, target.attr, value))
    if not layers:
        return None
    chosen = rng.sample(layers, rng.randint(1, len(layers)))
    chosen.sort()
    style = rng.choice(["moduledict", "modulelist", "getattr"])
    names = [name for _, name, _ in chosen]
    if style == "getattr":
        replace = {name: f"getattr(self, {name!r})" for name in names}
    elif style == "moduledict":
        replace = {name: f"self.layers[{name!r}]" for name in names}
    else:
        replace = {name: f"self.layers[{k}]" for k, name in enumerate(names)}
    others = [m for m in cls.body if isinstance(m, ast.FunctionDef) and m is not init]
    for method in others:
        _Rename(replace).visit(method)
    if style != "getattr":
        values = [ast.unparse(value) for _, _, value in chosen]
        if style == "moduledict":
            items = ", ".join(f"{n!r}: {v}" for n, v in zip(names, values, strict=True))
            container = _parse_stmt(f"self.layers = nn.ModuleDict({{{items}}})")
        else:
            container = _parse_stmt(f"self.layers = nn.ModuleList([{', '.join(values)}])")
        drop = {k for k, _, _ in chosen}
        last = max(drop)
        body = []
        for k, stmt in enumerate(init.body):
            if k == last:
                body.append(container)
            elif k not in drop:
                body.append(stmt)
        init.body = body
    return f"shape:layers:{style}"


# --- main() as a Trainer class ----------------------------------------------------------------


class _ToSelf(ast.NodeTransformer):
    """Names in `names` -> `self.NAME`, outside nested scopes."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            attr = ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=node.id)
            attr.ctx = node.ctx
            return ast.copy_location(attr, node)
        return node


def _trainer(tree: ast.Module, main: ast.FunctionDef, rng: random.Random) -> list[str] | None:
    body = main.body
    if main.args.args or _has(body, _SCOPES):
        return None
    loops = [k for k, s in enumerate(body) if isinstance(s, ast.For)]
    if not loops:
        return None
    k = loops[0]
    setup, rest = body[:k], body[k:]
    loop = body[k]
    assert isinstance(loop, ast.For)
    step = (
        rng.random() < 0.6
        and not _has(loop.body, (ast.Return, ast.Break, ast.Continue, ast.Yield))
        and isinstance(loop.target, ast.Name)
    )
    promoted = set(_names(setup, ast.Store))
    if step:
        # Names the loop body shares with the rest of fit (accumulators, carried state) live
        # on self; the body's own temporaries stay locals of train_step.
        inside = set(_names(loop.body, ast.Store))
        outside = [s for s in rest if s is not loop]
        shared = set(_names(outside, ast.Load)) | set(_names(outside, ast.Store))
        promoted |= {n for n in inside if n in shared}
    main_names = set(_names(body, ast.Store)) | set(_names(body, ast.Load))
    promoted &= main_names
    features = ["shape:trainer"]
    trainer = _parse_stmt(
        "class Trainer:\n    def __init__(self):\n        pass\n\n    def fit(self):\n        pass"
    )
    assert isinstance(trainer, ast.ClassDef)
    init, fit = trainer.body
    assert isinstance(init, ast.FunctionDef) and isinstance(fit, ast.FunctionDef)
    rename = _ToSelf(promoted)
    init.body = [rename.visit(s) for s in copy.deepcopy(setup)] or [ast.Pass()]
    fit.body = [rename.visit(s) for s in copy.deepcopy(rest)]
    if step:
        new_loop = next(s for s in fit.body if isinstance(s, ast.For))
        assert isinstance(new_loop.target, ast.Name)
        var = new_loop.target.id
        method = _parse_stmt(f"def train_step(self, {var}):\n    pass")
        assert isinstance(method, ast.FunctionDef)
        method.body = new_loop.body
        new_loop.body = [_parse_stmt(f"self.train_step({var})")]
        trainer.body.append(method)
        features.append("shape:trainer:train_step")
    main.body = [_parse_stmt("return Trainer().fit()")]
    tree.body.insert(tree.body.index(main), trainer)
    return features


# --- op spellings ---------------------------------------------------------------------------

# Both a `torch.` function and a Tensor method, with the same arguments after the tensor.
_BOTH = frozenset(
    "sigmoid tanh exp log relu abs neg sqrt rsqrt sin cos erf reciprocal log1p softmax"
    " log_softmax matmul mm bmm sum mean clamp add mul sub div pow maximum transpose t"
    " unsqueeze squeeze flatten cumsum amax logsumexp square masked_fill exp_ sigmoid_ tanh_"
    " relu_ clamp_ abs_ neg_ sqrt_ rsqrt_ log_ sin_ cos_".split()
)


class _Respell(ast.NodeTransformer):
    """Each op in `_BOTH` (and `F.relu`, `@`) spelled the other way, with chance `p`."""

    def __init__(self, rng: random.Random, p: float = 0.5) -> None:
        self.rng, self.p = rng, p
        self.changed = 0

    def _torch(self, name: str, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
        func = ast.Attribute(value=ast.Name(id="torch", ctx=ast.Load()), attr=name)
        func.ctx = ast.Load()
        self.changed += 1
        return ast.Call(func=func, args=args, keywords=keywords)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult) and self.rng.random() < self.p:
            return ast.copy_location(self._torch("matmul", [node.left, node.right], []), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or self.rng.random() >= self.p:
            return node
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg in (None, "out", "input") for k in node.keywords
        ):
            return node
        name, base = func.attr, func.value
        module = base.id if isinstance(base, ast.Name) else None
        if module == "F" and name == "relu" and len(node.args) == 1:
            inplace = [k for k in node.keywords if k.arg == "inplace"]
            others = [k for k in node.keywords if k.arg != "inplace"]
            if others:
                return node
            if not inplace:
                new = self._torch("relu", node.args, [])
            elif isinstance(inplace[0].value, ast.Constant):
                new = self._torch("relu_" if inplace[0].value.value else "relu", node.args, [])
            else:
                return node
            return ast.copy_location(new, node)
        if name not in _BOTH:
            return node
        if module == "torch" and node.args:
            # torch.NAME(x, *rest) -> x.NAME(*rest)
            method = ast.Attribute(value=node.args[0], attr=name, ctx=ast.Load())
            self.changed += 1
            return ast.copy_location(
                ast.Call(func=method, args=node.args[1:], keywords=node.keywords), node
            )
        if module not in ("torch", "F", "nn", "self") and not (
            isinstance(base, ast.Attribute)
            and isinstance(base.value, ast.Name)
            and base.value.id == "self"
            and name in ("add", "mul", "sub", "div", "sum", "mean")
        ):
            # x.NAME(*rest) -> torch.NAME(x, *rest)
            return ast.copy_location(self._torch(name, [base, *node.args], node.keywords), node)
        return node


def _spellings(tree: ast.Module, rng: random.Random) -> str | None:
    respell = _Respell(rng)
    respell.visit(tree)
    return "shape:spelling" if respell.changed else None


# --- import spellings ---------------------------------------------------------------------


class _Spell(ast.NodeTransformer):
    """Rewrite `torch` / `nn` / `F` prefixes as the chosen import style names them."""

    def __init__(self, torch: str, nn: str, f: str, direct: set[str], optim: bool) -> None:
        self.torch, self.nn, self.f, self.direct, self.optim = torch, nn, f, direct, optim

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        base = node.value
        if isinstance(base, ast.Name) and isinstance(node.ctx, ast.Load):
            if base.id == "F" and node.attr in self.direct:
                return ast.copy_location(ast.Name(id=node.attr, ctx=ast.Load()), node)
            if base.id == "F":
                return ast.copy_location(ast.parse(f"{self.f}.{node.attr}", mode="eval").body, node)
            if base.id == "nn":
                return ast.copy_location(
                    ast.parse(f"{self.nn}.{node.attr}", mode="eval").body, node
                )
            if base.id == "torch" and node.attr == "optim" and self.optim:
                return ast.copy_location(ast.Name(id="optim", ctx=ast.Load()), node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "torch":
            return ast.copy_location(ast.Name(id=self.torch, ctx=node.ctx), node)
        return node


def _imports(tree: ast.Module, rng: random.Random) -> str | None:
    heads = [
        k
        for k, n in enumerate(tree.body)
        if isinstance(n, ast.Import | ast.ImportFrom)
        and ast.unparse(n)
        in ("import torch", "import torch.nn as nn", "import torch.nn.functional as F")
    ]
    if len(heads) != 3:
        return None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    style = rng.choice(["th", "from_nn", "full", "direct", "optim"])
    torch, nn, f, direct, optim = "torch", "nn", "F", set[str](), False
    lines = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F"]
    if style == "th" and "th" not in names:
        torch = "th"
        nn, f = "th.nn", "th.nn.functional"
        lines = ["import torch as th"]
    elif style == "from_nn":
        lines = ["import torch", "from torch import nn", "from torch.nn import functional as F"]
    elif style == "full":
        nn, f = "torch.nn", "torch.nn.functional"
        lines = ["import torch", "import torch.nn"]
    elif style == "direct":
        used = {
            n.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "F"
        }
        direct = {u for u in used if u not in names and u.isidentifier()}
        if not direct:
            return None
        lines[2] = f"from torch.nn.functional import {', '.join(sorted(direct))}"
        if used - direct:
            lines.append("import torch.nn.functional as F")
    elif style == "optim" and "optim" not in names:
        optim = True
        lines.append("from torch import optim")
    else:
        return None
    _Spell(torch, nn, f, direct, optim).visit(tree)
    new = [_parse_stmt(line) for line in lines]
    at = heads[0]
    tree.body[at : heads[-1] + 1] = new
    return f"shape:imports:{style}"


def reshape(text: str, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """`text` reshaped at random (each reshape with some chance) and the reshapes' features."""
    tree = ast.parse(text)
    features: list[str] = []
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    for node in list(tree.body):
        if _is_module_class(node):
            assert isinstance(node, ast.ClassDef)
            if rng.random() < 0.5 and (f := _layers(tree, node, classes, rng)):
                features.append(f)
            if rng.random() < 0.6 and (f := _extract_in_class(tree, node, rng)):
                features.append(f)
        elif isinstance(node, ast.FunctionDef) and node.name != "main":
            if rng.random() < 0.5 and (f := _extract_in_function(tree, node, rng)):
                features.append(f)
    main = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"), None)
    if main is not None and rng.random() < 0.6 and (fs := _trainer(tree, main, rng)):
        features += fs
    if rng.random() < 0.5 and (f := _spellings(tree, rng)):
        features.append(f)
    if rng.random() < 0.5 and (f := _imports(tree, rng)):
        features.append(f)
    if not features:
        features.append("shape:none")
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", tuple(features)
