"""The frameworks users train through (PyTorch Lightning, Hugging Face's Trainer), as data:
stub files in data/frameworks/ written in Python, which the analysis reads like another file
of the workspace. A class deriving from `pl.LightningModule` finds `manual_backward` and
`optimizers` there; `__stands_for__` names the imports a stub answers for, `__drivers__` the
framework methods that run a subclass's hooks (entry points of their own),
`__backpropagated__` the hooks whose result the framework runs backward() on, and
`__python_values__` marks libraries whose calls give Python values (NumPy, argparse, gym).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from inplace_lsp.analysis.model import ClassInfo, ModuleModel, build

STUBS = Path(__file__).resolve().parent.parent / "data" / "frameworks"


@dataclass(frozen=True)
class Framework:
    prefixes: tuple[str, ...]
    drivers: tuple[str, ...]
    model: ModuleModel
    python_values: bool  # its calls give Python values, never tensors
    backpropagated: tuple[str, ...]  # hooks whose result the framework runs backward() on
    # How the framework calls a hook of a subclass: arguments by position, names by keyword.
    calls: dict[str, tuple[int, frozenset[str]]]


def _constant_names(tree: ast.Module, name: str) -> tuple[str, ...]:
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
            and isinstance(stmt.value, ast.Tuple)
        ):
            return tuple(str(e.value) for e in stmt.value.elts if isinstance(e, ast.Constant))
    return ()


@functools.cache
def frameworks() -> tuple[Framework, ...]:
    found = []
    for path in sorted(STUBS.glob("*.pyi")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        model = build([(tree, 1, True)], path=str(path), lines=text.splitlines(), stubs=stub_model)
        found.append(
            Framework(
                _constant_names(tree, "__stands_for__"),
                _constant_names(tree, "__drivers__"),
                model,
                any(
                    isinstance(s, ast.Assign)
                    and ast.unparse(s.targets[0]) == "__python_values__"
                    and isinstance(s.value, ast.Constant)
                    and s.value.value is True
                    for s in tree.body
                ),
                _constant_names(tree, "__backpropagated__"),
                _hook_calls(model),
            )
        )
    return tuple(found)


def python_values(qualname: str) -> bool:
    """Whether a call of this imported name gives a Python value (`np.mean`, `args.lr` of
    `parser.parse_args()`, `env.step(a)` of `gym.make(...)`)."""
    framework = framework_of(qualname)
    return framework is not None and framework.python_values


def framework_above(model: ModuleModel, cls: ClassInfo) -> Framework | None:
    """The framework a class derives from (a LightningModule, a Trainer), if any."""
    stubs = {id(f.model): f for f in frameworks()}
    seen: set[int] = set()
    base = model.base_of(cls)
    while base is not None and id(base) not in seen:
        seen.add(id(base))
        framework = stubs.get(id(base.owner))
        if framework is not None:
            return framework
        base = (base.owner or model).base_of(base)
    return None


def backpropagated_hook(model: ModuleModel, cls: ClassInfo, name: str) -> bool:
    """Whether a framework runs backward() on what this method of a subclass returns
    (Lightning's `training_step`, a Trainer's `compute_loss`)."""
    framework = framework_above(model, cls)
    return framework is not None and name in framework.backpropagated


def hook_call(model: ModuleModel, cls: ClassInfo, name: str) -> tuple[int, frozenset[str]] | None:
    """How the framework itself calls this method of a subclass (`self.compute_loss(model,
    inputs, num_items_in_batch=...)` in a Trainer's training_step): how many arguments it
    passes by position and the names it passes by keyword; None where the stub shows no call.
    A parameter it passes neither way keeps its default there."""
    framework = framework_above(model, cls)
    return framework.calls.get(name) if framework is not None else None


def hook_annotations(model: ModuleModel, cls: ClassInfo, name: str) -> dict[str, ast.expr]:
    """The annotations the framework's own method of this name gives its parameters
    (`model: torch.nn.Module` in a Trainer's compute_loss): an override that does not
    annotate them is called with what they say."""
    framework = framework_above(model, cls)
    if framework is None:
        return {}
    for info in dict.values(framework.model.classes):
        method = info.methods.get(name)
        if method is not None:
            arguments = method.args
            return {
                a.arg: a.annotation
                for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
                if a.annotation is not None
            }
    return {}


def _hook_calls(stub: ModuleModel) -> dict[str, tuple[int, frozenset[str]]]:
    """`self.name(...)` calls in a stub's methods, the first of each name."""
    calls: dict[str, tuple[int, frozenset[str]]] = {}
    for info in dict.values(stub.classes):
        for method in info.methods.values():
            for node in ast.walk(method):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "self"
                    and not any(isinstance(a, ast.Starred) for a in node.args)
                    and all(k.arg is not None for k in node.keywords)
                ):
                    keywords = frozenset(str(k.arg) for k in node.keywords)
                    calls.setdefault(node.func.attr, (len(node.args), keywords))
    return calls


@functools.lru_cache(maxsize=4096)
def framework_of(qualname: str) -> Framework | None:
    """The stub answering for an imported name (`pytorch_lightning.LightningModule`)."""
    for framework in frameworks():
        if any(qualname == p or qualname.startswith(p + ".") for p in framework.prefixes):
            return framework
    return None


def stub_model(qualname: str) -> ModuleModel | None:
    """The model of the stub answering for an imported name: what a ModuleModel reads an
    imported class from where no file of the workspace defines it (ModuleModel.stubs)."""
    framework = framework_of(qualname)
    return framework.model if framework is not None else None
