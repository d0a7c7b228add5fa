"""Seeded generator of small, runnable PyTorch programs that may or may not break autograd.

Each program is a complete module (imports, classes, a ``main()`` driver run under
``if __name__ == "__main__"``) that builds CPU-small inputs, runs a forward pass, calls
``.backward()`` and sometimes trains a few steps. The generator is written from PyTorch's
semantics (which ops save what, which expressions alias, what grad mode does), not from the
analyzer's code, and it does not decide the label: the oracle runs the program. It aims at
about half broken programs, many of the rest near misses (the same in-place syntax where torch
accepts it). Every program carries the generator features it used, for the per-feature score.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .reshape import reshape

__all__ = ["Program", "generate", "generate_one", "SCENARIOS"]

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@dataclass(frozen=True)
class Program:
    """One generated module text and the generator features it used."""

    index: int
    seed: int
    scenario: str
    text: str
    features: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"prog_{self.seed}_{self.index:05d}"


# --- knowledge the generator draws from (torch semantics, as documented by torch) -----------

# Ops applied to a (4, 8) float tensor `{a}`: (feature, expression, result shape, what torch's
# derivative formula saves: "out", "in", "both" or "none"). `{p}` is a (8,) parameter, `{m}` an
# (8, 8) one. The saves column only biases the draw towards interesting pairs; the label comes
# from the oracle.
OPS: tuple[tuple[str, str, str, str], ...] = (
    ("sigmoid", "torch.sigmoid({a})", "same", "out"),  # saves its output
    ("tanh", "torch.tanh({a})", "same", "out"),  # saves its output
    ("exp", "torch.exp({a})", "same", "out"),  # saves its output
    ("relu", "torch.relu({a})", "same", "out"),  # saves its output
    ("F.relu", "F.relu({a})", "same", "out"),
    ("relu_method", "{a}.relu()", "same", "out"),
    ("softmax", "torch.softmax({a}, dim=-1)", "same", "out"),  # saves its output
    ("log_softmax", "F.log_softmax({a}, dim=-1)", "same", "out"),
    ("pow", "{a} ** 2", "same", "in"),  # saves its input
    ("torch.pow", "torch.pow({a}, 3)", "same", "in"),
    ("mul_param", "{a} * {p}", "same", "both"),  # saves both operands
    ("mul_scalar", "{a} * 2.0", "same", "none"),  # saves nothing of {a}
    ("mul_self", "{a} * {a}", "same", "in"),
    ("add_param", "{a} + {p}", "same", "none"),  # saves nothing
    ("add_scalar", "{a} + 1.0", "same", "none"),
    ("sub_param", "{a} - {p}", "same", "none"),
    ("div_param", "{a} / ({p}.abs() + 1.0)", "same", "in"),  # saves both
    ("div_scalar", "{a} / 4.0", "same", "none"),
    ("sin", "torch.sin({a})", "same", "in"),  # saves its input
    ("cos", "torch.cos({a})", "same", "in"),
    ("abs", "{a}.abs()", "same", "in"),
    ("log1p_abs", "torch.log1p({a}.abs())", "same", "in"),
    ("gelu", "F.gelu({a})", "same", "in"),  # saves its input
    ("silu", "F.silu({a})", "same", "in"),
    ("leaky_relu", "F.leaky_relu({a}, 0.1)", "same", "in"),
    ("elu", "F.elu({a})", "same", "in"),
    ("clamp", "{a}.clamp(min=-1.0, max=1.0)", "same", "in"),
    ("maximum", "torch.maximum({a}, {p})", "same", "in"),
    ("where", "torch.where({a} > 0, {a}, {p})", "same", "none"),  # saves only the condition
    ("normalize", "F.normalize({a}, dim=-1)", "same", "in"),
    ("layer_norm", "F.layer_norm({a}, ({a}.shape[-1],))", "same", "in"),
    ("dropout", "F.dropout({a}, p=0.2, training=True)", "same", "none"),  # saves the mask
    ("cumsum", "{a}.cumsum(dim=-1)", "same", "none"),  # saves nothing
    ("matmul", "{a} @ {m}", "same", "in"),  # saves both operands
    ("linear", "F.linear({a}, {m})", "same", "in"),  # saves input and weight
    ("sum", "{a}.sum(dim=-1, keepdim=True)", "col", "none"),  # saves nothing
    ("mean", "{a}.mean(dim=0)", "vec", "none"),
    ("norm", "{a}.norm(dim=-1, keepdim=True)", "col", "both"),  # saves input and output
    ("var", "{a}.var(dim=-1)", "vec", "in"),
    ("max", "{a}.max(dim=-1).values", "vec", "none"),  # saves indices
    ("logsumexp", "torch.logsumexp({a}, dim=-1)", "vec", "both"),  # saves input and output
    ("cat", "torch.cat([{a}, {a}], dim=-1)", "wide", "none"),  # saves nothing
    ("stack", "torch.stack([{a}, {a} * 2.0])", "stack", "none"),
    ("softplus", "F.softplus({a})", "same", "in"),
    ("erf", "torch.erf({a})", "same", "in"),
    ("sqrt", "torch.sqrt({a}.abs() + 1.0)", "same", "out"),  # saves its output
    ("reciprocal", "torch.reciprocal({a}.abs() + 1.0)", "same", "out"),
    ("sigmoid_method", "{a}.sigmoid()", "same", "out"),
    ("exp_method", "{a}.exp()", "same", "out"),
    ("softmax_method", "{a}.softmax(-1)", "same", "out"),
    ("hardtanh", "F.hardtanh({a})", "same", "in"),
    ("hardswish", "F.hardswish({a})", "same", "in"),
    ("mish", "F.mish({a})", "same", "in"),
    ("square", "{a}.square()", "same", "in"),
    ("clamp_min", "{a}.clamp_min(0.0)", "same", "in"),
    ("rsub", "1.0 - {a}", "same", "none"),
    ("neg", "-{a}", "same", "none"),
    ("masked_fill", "{a}.masked_fill({a} > 1.0, 0.0)", "same", "none"),  # saves the mask
    ("addcmul", "torch.addcmul({a}, {a}, {p})", "same", "in"),  # saves both factors
    ("einsum", "torch.einsum('ij,jk->ik', {a}, {m})", "same", "in"),
    ("sort", "{a}.sort(dim=-1).values", "same", "none"),  # saves the indices
    ("amax", "{a}.amax(dim=-1)", "vec", "both"),  # saves input and output
    ("prod", "{a}.prod(dim=-1)", "vec", "both"),
    ("std", "{a}.std(dim=-1)", "vec", "both"),
)
# Layer-backed ops (modules built in __init__); only available inside a module.
MODULE_OPS: tuple[tuple[str, str, str, str], ...] = (
    ("nn.Linear", "self.proj({a})", "same", "in"),  # saves its input
    ("nn.LayerNorm", "self.ln({a})", "same", "in"),  # saves its input
    ("nn.Sigmoid", "self.gate({a})", "same", "out"),
    ("nn.Softmax", "self.attn_softmax({a})", "same", "out"),
    ("nn.BatchNorm1d", "self.bn({a})", "same", "in"),  # saves its input
    ("nn.Conv1d", "self.conv({a}.unsqueeze(-1)).squeeze(-1)", "same", "in"),  # saves its input
)

# Aliases and copies of a (4, 8) tensor `{t}`: (feature, expression, ndim, relation). The
# relation is documentation; the oracle is the truth.
ALIASES: tuple[tuple[str, str, int, str], ...] = (
    ("same", "{t}", 2, "same"),
    ("slice", "{t}[:, :4]", 2, "view"),
    ("row", "{t}[0]", 1, "view"),
    ("rows", "{t}[1:3]", 2, "view"),
    ("step_slice", "{t}[:, ::2]", 2, "view"),
    ("narrow", "{t}.narrow(1, 0, 4)", 2, "view"),
    ("select", "{t}.select(1, 0)", 1, "view"),
    ("view", "{t}.view(-1)", 1, "view"),
    ("view2", "{t}.view(2, 16)", 2, "view"),
    ("reshape", "{t}.reshape(-1)", 1, "view"),  # a view of a contiguous tensor
    ("flatten", "{t}.flatten()", 1, "view"),
    ("transpose", "{t}.transpose(0, 1)", 2, "view"),
    ("t", "{t}.t()", 2, "view"),
    ("permute", "{t}.permute(1, 0)", 2, "view"),
    ("t_reshape", "{t}.t().reshape(-1)", 1, "copy"),  # non-contiguous: reshape copies
    ("t_contiguous", "{t}.t().contiguous()", 2, "copy"),
    ("contiguous", "{t}.contiguous()", 2, "same"),
    ("unsqueeze", "{t}.unsqueeze(0)", 3, "view"),
    ("expand_as", "{t}.expand_as({t})", 2, "view"),
    ("view_as", "{t}.view_as({t})", 2, "view"),
    ("diagonal", "{t}.diagonal()", 1, "view"),
    ("detach", "{t}.detach()", 2, "shares-version"),
    ("data", "{t}.data", 2, "separate-version"),
    ("to_same", "{t}.to(torch.float32)", 2, "same"),
    ("float", "{t}.float()", 2, "same"),
    ("to_double", "{t}.to(torch.float64)", 2, "copy"),
    ("clone", "{t}.clone()", 2, "copy"),
    ("detach_clone", "{t}.detach().clone()", 2, "copy"),
    ("adv_index", "{t}[[0, 2]]", 2, "copy"),
    ("bool_index", "{t}[keep]", 2, "copy"),
    ("index_select", "{t}.index_select(0, torch.tensor([0, 1]))", 2, "copy"),
    ("tensor_index", "{t}[torch.tensor([1, 3])]", 2, "copy"),
    ("chunk", "{t}.chunk(2, dim=1)[0]", 2, "multi-view"),
    ("unbind", "{t}.unbind(0)[1]", 1, "multi-view"),
    ("split", "{t}.split(4, dim=1)[1]", 2, "multi-view"),
    ("mul_one", "{t} * 1", 2, "copy"),
    ("ellipsis", "{t}[..., :4]", 2, "view"),
    ("none_index", "{t}[None]", 3, "view"),
    ("T", "{t}.T", 2, "view"),
    ("mT", "{t}.mT", 2, "view"),
    ("unflatten", "{t}.unflatten(1, (2, 4))", 3, "view"),
    ("movedim", "{t}.movedim(0, 1)", 2, "view"),
    ("squeeze", "{t}.unsqueeze(0).squeeze(0)", 2, "view"),
    ("rows_view", "{t}[1:3].view(-1)", 1, "view"),  # contiguous rows: view() works
    ("slice_contiguous", "{t}[:, :4].contiguous()", 2, "copy"),  # non-contiguous: copies
    ("slice_reshape", "{t}[:, :4].reshape(-1)", 1, "copy"),
    ("tensor_split", "{t}.tensor_split(2, dim=1)[0]", 2, "view"),  # not a multi-output node
    ("hsplit", "{t}.hsplit(2)[1]", 2, "view"),
    ("split_sizes", "{t}.split([3, 5], dim=1)[0]", 2, "multi-view"),
)

GENERIC_ALIASES = frozenset(
    "same detach data clone contiguous to_same float to_double view reshape flatten mul_one"
    " unsqueeze view_as expand_as detach_clone".split()
)

# In-place writes into `{v}`: (feature, statement, minimum ndim, needs a name or subscript
# target). Right-hand sides are scalars or `*_like`, so every alias shape fits.
WRITES: tuple[tuple[str, str, int, bool], ...] = (
    ("iadd", "{v} += 1.0", 0, True),
    ("iadd_tensor", "{v} += torch.ones_like({v})", 0, True),
    ("isub", "{v} -= 0.5", 0, True),
    ("imul", "{v} *= 0.5", 0, True),
    ("idiv", "{v} /= 2.0", 0, True),
    ("setitem_row", "{v}[0] = 0.0", 1, False),
    ("setitem_col", "{v}[:, 0] = 0.0", 2, False),
    ("setitem_mask", "{v}[{v} > 1.0] = 1.0", 0, False),
    ("setitem_ellipsis", "{v}[...] = 0.0", 0, False),
    ("setitem_iadd", "{v}[0] += 1.0", 1, False),
    ("add_", "{v}.add_(0.1)", 0, False),
    ("sub_", "{v}.sub_(0.1)", 0, False),
    ("mul_", "{v}.mul_(0.9)", 0, False),
    ("div_", "{v}.div_(2.0)", 0, False),
    ("clamp_", "{v}.clamp_(min=-1.0, max=1.0)", 0, False),
    ("clamp_min_", "{v}.clamp_min_(0.0)", 0, False),
    ("zero_", "{v}.zero_()", 0, False),
    ("copy_", "{v}.copy_(torch.zeros_like({v}))", 0, False),
    ("fill_", "{v}.fill_(0.5)", 0, False),
    ("neg_", "{v}.neg_()", 0, False),
    ("relu_", "{v}.relu_()", 0, False),
    ("sigmoid_", "{v}.sigmoid_()", 0, False),
    ("tanh_", "{v}.tanh_()", 0, False),
    ("exp_", "{v}.exp_()", 0, False),
    ("masked_fill_", "{v}.masked_fill_({v} < -1.0, -1.0)", 0, False),
    ("index_fill_", "{v}.index_fill_(0, torch.tensor([0]), 0.0)", 1, False),
    ("torch.relu_", "torch.relu_({v})", 0, False),
    ("F.relu_inplace", "F.relu({v}, inplace=True)", 0, False),
    ("F.leaky_relu_", "F.leaky_relu_({v}, 0.1)", 0, False),
    ("F.dropout_inplace", "F.dropout({v}, p=0.1, training=True, inplace=True)", 0, False),
    ("out=", "torch.mul({v}, 0.5, out={v})", 0, False),
)

INPLACE_ACTS: tuple[tuple[str, str], ...] = (
    ("nn.ReLU(inplace=True)", "nn.ReLU(inplace=True)"),
    ("nn.LeakyReLU(inplace=True)", "nn.LeakyReLU(0.1, inplace=True)"),
    ("nn.ELU(inplace=True)", "nn.ELU(inplace=True)"),
    ("nn.Hardtanh(inplace=True)", "nn.Hardtanh(inplace=True)"),
    ("nn.ReLU6(inplace=True)", "nn.ReLU6(inplace=True)"),
    ("nn.SiLU(inplace=True)", "nn.SiLU(inplace=True)"),
    ("nn.Dropout(inplace=True)", "nn.Dropout(0.1, inplace=True)"),
)
PLAIN_LAYERS: tuple[tuple[str, str], ...] = (
    ("nn.Linear", "nn.Linear({d}, {d})"),
    ("nn.LayerNorm", "nn.LayerNorm({d})"),
    ("nn.BatchNorm1d", "nn.BatchNorm1d({d})"),
    ("nn.Sigmoid", "nn.Sigmoid()"),
    ("nn.Tanh", "nn.Tanh()"),
    ("nn.ReLU", "nn.ReLU()"),
    ("nn.GELU", "nn.GELU()"),
    ("nn.Softmax", "nn.Softmax(dim=-1)"),
    ("nn.Dropout", "nn.Dropout(0.1)"),
    ("nn.Identity", "nn.Identity()"),
)

# Variable names are drawn, so that no name decides anything (real code says `attn_map`, `probs`,
# `hidden`, ...).
RESULT_NAMES = (
    "s",
    "out",
    "y",
    "attn",
    "attn_map",
    "probs",
    "weights",
    "act",
    "feats",
    "scores",
    "gated",
    "logits",
    "z",
    "a",
    "normed",
)
ALIAS_NAMES = ("v", "part", "sub", "view", "block", "head_", "m", "tmp", "left", "cols", "piece")
SOURCE_NAMES = ("h", "hidden", "feat", "x1", "pre", "emb", "u")

CLASS_NAMES = ("Encoder", "Block", "Head", "Gate", "Mixer", "Projector", "Scorer", "Cell", "Net")


class _Gen:
    """Mutable state of one program being written: features, helpers, constructor flags."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.features: list[str] = []
        self.helpers: list[str] = []  # module-level function definitions
        self.methods: list[str] = []  # extra method definitions (indented one level)
        self.init: list[str] = []  # __init__ body lines after super().__init__()
        self.flags: list[tuple[str, bool]] = []  # constructor bool flags and driver values
        self.counter = 0

    def feat(self, *names: str) -> None:
        for name in names:
            if name not in self.features:
                self.features.append(name)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: Sequence[Any]) -> Any:
        return self.rng.choice(list(seq))

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def flag(self, stem: str) -> tuple[str, bool]:
        """A new constructor flag with its value at the call site."""
        name = self.fresh(stem)
        value = self.chance(0.5)
        self.flags.append((name, value))
        self.feat(f"branch:flag_{str(value).lower()}")
        return name, value


def _indent(text: str, level: int) -> str:
    pad = "    " * level
    return "\n".join(pad + line if line else line for line in text.split("\n"))


# --- the core pattern: a save, an alias, a write, in one function body -----------------------


@dataclass
class _Core:
    lines: list[str] = field(default_factory=list)  # body lines at indent 0 of the body
    result: str = "s"  # expression to consume after the block
    shape: str = "same"


def _core(
    g: _Gen, src: str, p: str, m: str, in_module: bool, ret_wrap: Callable[[str], str]
) -> _Core:
    """Statements that apply an op to `src`, alias a tensor and write into it.

    `ret_wrap(expr)` is the `return` statement used for early exits (so they return the same
    kind of value as the function's last line)."""
    core = _Core()
    ops = list(OPS) + (list(MODULE_OPS) if in_module else [])
    # Which tensor is written, and when (torch decides whether it matters).
    order = "before" if g.chance(0.12) else "after"
    target = "in" if order == "before" or g.chance(0.35) else "out"
    g.feat(f"order:{order}", f"target:{target}")
    if g.chance(0.85):
        # Mostly an op that saves the tensor about to be written, so that half the programs
        # break; the rest are drawn from the whole pool.
        wanted = ("out", "both") if target == "out" else ("in", "both")
        ops = [op for op in ops if op[3] in wanted]
    name, template, shape, _ = g.pick(ops)
    core.shape = shape
    g.feat(f"op:{name}")
    op_expr = template.format(a=src, p=p, m=m)

    S = g.pick(RESULT_NAMES)
    V = g.pick(ALIAS_NAMES)
    tname = src if target == "in" else S

    if target == "out" and shape != "same":
        # Only aliases that fit any shape; ndim follows the op's result.
        base = {"col": 2, "vec": 1, "wide": 2, "stack": 3}[shape]
        alias_name, alias_tmpl, ndim, relation = g.pick(
            [a for a in ALIASES if a[0] in GENERIC_ALIASES]
        )
        ndim = 1 if alias_name in ("view", "reshape", "flatten") else base + (ndim - 2)
    else:
        alias_name, alias_tmpl, ndim, relation = g.pick(ALIASES)
    g.feat(f"alias:{alias_name}", f"relation:{relation}")
    alias_expr = alias_tmpl.format(t=tname)
    if alias_name == "bool_index":
        core.lines.append("keep = torch.tensor([True, False, True, True])")

    writes = [w for w in WRITES if w[2] <= ndim]
    wname, wtmpl, _, needs_name = g.pick(writes)
    g.feat(f"write:{wname}")

    save_line = f"{S} = {op_expr}"
    helper = g.rng.random()
    if helper < 0.1 and "{p}" not in template and "{m}" not in template and "self." not in template:
        fn = g.fresh("_apply")
        g.helpers.append(f"def {fn}(t):\n    return {template.format(a='t', p='', m='')}\n")
        save_line = f"{S} = {fn}({src})"
        g.feat("helper:save")
    elif helper < 0.15:
        g.feat("walrus:save")
        save_line = f"stat = ({S} := {op_expr}).detach().mean()"

    # The alias: a named variable, inline in the write, via a helper, or via a walrus.
    inline = False
    how = g.rng.random()
    alias_lines: list[str] = []
    v = V
    if alias_name == "same" and g.chance(0.6):
        v = tname
    elif how < 0.25 and (
        not needs_name or (alias_tmpl.startswith("{t}[") and alias_tmpl.endswith("]"))
    ):
        inline = True
        v = f"({alias_expr})" if " * " in alias_expr else alias_expr
        g.feat("alias:inline")
    elif how < 0.35 and alias_name != "bool_index":
        fn = g.fresh("_view")
        g.helpers.append(f"def {fn}(t):\n    return {alias_tmpl.format(t='t')}\n")
        alias_lines.append(f"{V} = {fn}({tname})")
        g.feat("helper:alias")
    else:
        alias_lines.append(f"{V} = {alias_expr}")
    write_stmt = wtmpl.format(v=v)
    if inline and v.endswith("]") and wtmpl.startswith("{v}["):
        # `t[:, :4][0] = 0.0` is legal but nobody writes it; keep the alias named.
        inline = False
        alias_lines = [f"{V} = {alias_expr}"]
        write_stmt = wtmpl.format(v=V)

    # The write, possibly in a helper that mutates its argument.
    write_lines: list[str]
    if g.chance(0.15):
        kind = "method" if in_module and g.chance(0.5) else "function"
        g.feat(f"helper:write_{kind}")
        arg = v
        body = wtmpl.format(v="t")
        # A decorator changes grad mode for the helper's body only; torch's version counter
        # does not care, the leaf check does.
        deco = g.pick(["", "", "@torch.no_grad()\n", "@torch.inference_mode()\n"])
        if deco:
            g.feat("helper:decorated_" + deco.strip("@()\n").split(".")[-1])
        if kind == "method":
            fn = g.fresh("_inplace_fix")
            g.methods.append(f"{deco}def {fn}(self, t):\n    {body}\n    return t")
            write_lines = [f"self.{fn}({arg})"]
        else:
            fn = g.fresh("_clip")
            g.helpers.append(f"{deco}def {fn}(t):\n    {body}\n    return t\n")
            write_lines = [f"{fn}({arg})"]
    else:
        write_lines = [write_stmt]

    if alias_lines and g.chance(0.12):
        # Walrus alias: `if (v := t[:, :4]).numel() > 0:` then the write.
        g.feat("walrus:alias")
        rhs = alias_lines[0].split(" = ", 1)[1]
        alias_lines = []
        write_lines = [f"if ({V} := {rhs}).numel() > 0:"] + ["    " + w for w in write_lines]

    # Guards around the write: grad mode, flags, early exits, loops.
    guard = g.pick(
        ["none"] * 14
        + ["no_grad", "inference_mode", "flag", "early_return", "else_return", "loop_break"]
        + ["loop_continue", "set_grad_enabled"]
    )
    g.feat(f"guard:{guard}")
    result_expr = S
    guarded: list[str]
    if guard == "none":
        guarded = write_lines
    elif guard == "no_grad":
        guarded = ["with torch.no_grad():"] + ["    " + w for w in write_lines]
    elif guard == "inference_mode":
        guarded = ["with torch.inference_mode():"] + ["    " + w for w in write_lines]
    elif guard == "set_grad_enabled":
        guarded = ["with torch.set_grad_enabled(False):"] + ["    " + w for w in write_lines]
    elif guard == "flag":
        cond = _flag_expr(g, in_module, "clip")
        guarded = [f"if {cond}:"] + ["    " + w for w in write_lines]
    elif guard == "early_return":
        cond = _flag_expr(g, in_module, "fast")
        exit_expr = src if order == "before" else S
        guarded = [f"if {cond}:", "    " + ret_wrap(exit_expr)] + write_lines
    elif guard == "else_return":
        cond = _flag_expr(g, in_module, "train_path")
        exit_expr = src if order == "before" else S
        guarded = [
            f"if {cond}:",
            "    scale = 1.0",
            "else:",
            "    " + ret_wrap(exit_expr),
        ] + write_lines
    else:
        stmt = "break" if guard == "loop_break" else "continue"
        guarded = ["for step in range(2):", "    if step == 0:", f"        {stmt}"]
        guarded += ["    " + w for w in write_lines]

    if order == "before":
        core.lines += alias_lines + guarded + [save_line]
    else:
        core.lines += [save_line] + alias_lines + guarded
    core.result = result_expr
    return core


def _flag_expr(g: _Gen, in_module: bool, stem: str) -> str:
    name, _ = g.flag(stem)
    return f"self.{name}" if in_module else name


# --- scenarios ---------------------------------------------------------------------------


def _loss_line(g: _Gen, out: str) -> str:
    kind = g.pick(["pow", "mse", "mean", "sum"])
    g.feat(f"loss:{kind}")
    if kind == "pow":
        return f"loss = {out}.pow(2).mean()"
    if kind == "mse":
        return f"loss = F.mse_loss({out}, torch.zeros_like({out}))"
    if kind == "mean":
        return f"loss = {out}.mean()"
    return f"loss = {out}.sum()"


def _class(g: _Gen, name: str, forward: str, dim: int = 8, extra_params: str = "") -> str:
    params = "".join(f", {f}={v}" for f, v in g.flags)
    init_lines = ["super().__init__()"] + [f"self.{f} = {f}" for f, _ in g.flags] + g.init
    out = [f"class {name}(nn.Module):"]
    out.append(f"    def __init__(self, dim={dim}{params}{extra_params}):")
    out += [_indent(line, 2) for line in init_lines]
    for method in g.methods:
        out.append("")
        out.append(_indent(method, 1))
    out.append("")
    out.append(_indent(forward, 1))
    return "\n".join(out) + "\n"


def _module_layers(g: _Gen) -> None:
    g.init += [
        "self.fc1 = nn.Linear(dim, dim)",
        "self.proj = nn.Linear(dim, dim)",
        "self.ln = nn.LayerNorm(dim)",
        "self.bn = nn.BatchNorm1d(dim)",
        "self.gate = nn.Sigmoid()",
        "self.attn_softmax = nn.Softmax(dim=-1)",
        "self.conv = nn.Conv1d(dim, dim, kernel_size=1)",
        "self.head = nn.Linear(dim, 1)",
        "self.gain = nn.Parameter(torch.ones(dim))",
        "self.mix = nn.Parameter(torch.eye(dim))",
    ]


def _driver(g: _Gen, setup: list[str], forward_call: str, train: bool) -> str:
    lines = ["def main():", "    torch.manual_seed(0)"] + ["    " + s for s in setup]
    if train:
        g.feat("driver:train_loop")
        opt = g.pick(["SGD", "Adam"])
        g.feat(f"optim:{opt}")
        lr = "0.1" if opt == "SGD" else "1e-3"
        acc = g.pick(["item", "detach", "tensor", "none"])
        g.feat(f"total_loss:{acc}")
        lines.append(f"    optimizer = torch.optim.{opt}(model.parameters(), lr={lr})")
        if acc != "none":
            lines.append("    total_loss = 0.0")
        lines.append("    for epoch in range(2):")
        lines.append("        optimizer.zero_grad()")
        lines.append(f"        out = {forward_call}")
        lines.append("        " + _loss_line(g, "out"))
        extra = g.pick(["none", "none", "loss_iadd_reg", "loss_imul", "grad_clamp_", "grad_imul"])
        g.feat(f"train_extra:{extra}")
        if extra == "loss_iadd_reg":
            lines.append("        loss += 1e-4 * sum(p.pow(2).sum() for p in model.parameters())")
        elif extra == "loss_imul":
            lines.append("        loss *= 0.5")
        lines.append("        loss.backward()")
        if extra == "grad_clamp_":
            lines.append("        for p in model.parameters():")
            lines.append("            if p.grad is not None:")
            lines.append("                p.grad.clamp_(-1.0, 1.0)")
        elif extra == "grad_imul":
            lines.append("        for p in model.parameters():")
            lines.append("            if p.grad is not None:")
            lines.append("                p.grad *= 0.5")
        lines.append("        optimizer.step()")
        if acc == "item":
            lines.append("        total_loss += loss.item()")
        elif acc == "detach":
            lines.append("        total_loss += loss.detach()")
        elif acc == "tensor":
            lines.append("        total_loss += loss")
        if acc != "none":
            lines.append("    return total_loss")
    else:
        g.feat("driver:single_step")
        lines.append(f"    out = {forward_call}")
        lines.append("    " + _loss_line(g, "out"))
        lines.append("    loss.backward()")
        lines.append("    return loss")
    lines += ["", "", 'if __name__ == "__main__":', "    main()"]
    return "\n".join(lines) + "\n"


def _flag_args(g: _Gen) -> str:
    return ", ".join(f"{f}={v}" for f, v in g.flags)


def _input_line(g: _Gen, name: str = "x", shape: str = "4, 8") -> str:
    if g.chance(0.3):
        g.feat("input:requires_grad")
        return f"{name} = torch.randn({shape}, requires_grad=True)"
    g.feat("input:plain")
    return f"{name} = torch.randn({shape})"


def _forward(body: list[str]) -> str:
    """`def forward(self, x):` with `body` (lines) as its block."""
    return "def forward(self, x):\n" + _indent("\n".join(body), 1)


def _with_main(text: str, lines: list[str]) -> str:
    """`text` (classes and helpers), then the driver `lines` and the `__main__` guard."""
    guard = ["", "", 'if __name__ == "__main__":', "    main()"]
    return text + "\n\n" + "\n".join([*lines, *guard]) + "\n"


def scenario_module(g: _Gen) -> str:
    """An nn.Module whose forward holds the core pattern after a layer."""
    _module_layers(g)
    pre = g.pick(
        [
            ("fc1", "self.fc1(x)"),
            ("tanh_fc1", "torch.tanh(self.fc1(x))"),
            ("ln_fc1", "self.ln(self.fc1(x))"),
            ("gelu_fc1", "F.gelu(self.fc1(x))"),
            ("residual", "self.fc1(x) + x"),
            ("input", None),
        ]
    )
    g.feat(f"src:{pre[0]}")
    body: list[str] = []
    src = "x"
    if pre[1] is not None:
        src = g.pick(SOURCE_NAMES)
        body.append(f"{src} = {pre[1]}")
    core = _core(g, src, "self.gain", "self.mix", True, lambda e: f"return self._readout({e})")
    body += core.lines
    g.methods.append(
        "def _readout(self, t):\n"
        "    if t.dim() == 2 and t.shape[-1] == 8:\n"
        "        return self.head(t)\n"
        "    return t.mean() * self.gain.mean()"
    )
    body.append(f"return self._readout({core.result})")
    cls = g.pick(CLASS_NAMES)
    forward = _forward(body)
    used = forward + "\n".join(g.methods)
    g.init = [line for line in g.init if line.split(" = ")[0] in used or "self.head" in line]
    text = "\n\n".join(g.helpers + [_class(g, cls, forward)])
    setup = [f"model = {cls}({_flag_args(g)})", _input_line(g)]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.35))


def scenario_function(g: _Gen) -> str:
    """A plain function taking its tensors as parameters, called from the driver."""
    pre = g.pick([("mul_w", "x * w"), ("matmul_W", "x @ W"), ("input", None)])
    g.feat(f"src:{pre[0]}", "context:function")
    body: list[str] = []
    src = "x"
    if pre[1] is not None:
        src = g.pick(SOURCE_NAMES)
        body.append(f"{src} = {pre[1]}")
    core = _core(g, src, "w", "W", False, lambda e: f"return {e}.sum()")
    body += core.lines
    body.append(f"return {core.result}.sum()")
    flag_params = "".join(f", {f}={not v}" for f, v in g.flags)
    fn = f"def compute(x, w, W{flag_params}):\n" + _indent("\n".join(body), 1) + "\n"
    text = "\n\n".join(g.helpers + [fn])
    wkind = g.pick(["leaf", "leaf", "parameter", "parameter", "plain"])
    g.feat(f"weights:{wkind}")
    if wkind == "leaf":
        setup = [
            "w = torch.ones(8, requires_grad=True)",
            "W = torch.randn(8, 8, requires_grad=True)",
        ]
    elif wkind == "parameter":
        setup = ["w = nn.Parameter(torch.ones(8))", "W = nn.Parameter(torch.randn(8, 8))"]
    else:
        setup = ["w = torch.ones(8)", "W = torch.randn(8, 8)"]
    setup.append(_input_line(g))
    args = "".join(f", {f}={v}" for f, v in g.flags)
    lines = ["def main():", "    torch.manual_seed(0)"] + ["    " + s for s in setup]
    lines += [f"    loss = compute(x, w, W{args})"]
    lines += ["    if loss.requires_grad:", "        loss.backward()", "    return loss"]
    return _with_main(text, lines)


def scenario_sequential(g: _Gen) -> str:
    """Layers in nn.Sequential / nn.ModuleList / nn.ModuleDict, some activations in place."""
    container = g.pick(["Sequential", "ModuleList", "ModuleDict", "residual_list"])
    g.feat(f"container:{container}")
    n = g.rng.randint(2, 4)
    layers: list[str] = []
    for i in range(n):
        if g.chance(0.55):
            fname, expr = g.pick(INPLACE_ACTS)
        else:
            fname, expr = g.pick(PLAIN_LAYERS)
        g.feat(f"layer:{fname}")
        if i == 0 and g.chance(0.7):
            fname, expr = "nn.Linear", "nn.Linear({d}, {d})"
        layers.append(expr.format(d="dim"))
    body: list[str] = []
    if container == "Sequential":
        g.init.append("self.net = nn.Sequential(\n    " + ",\n    ".join(layers) + ",\n)")
        body.append("h = self.net(x)")
    elif container == "ModuleList":
        g.init.append("self.layers = nn.ModuleList([\n    " + ",\n    ".join(layers) + ",\n])")
        body += ["h = x", "for layer in self.layers:", "    h = layer(h)"]
    elif container == "ModuleDict":
        keys = [f"l{i}" for i in range(n)]
        items = ",\n    ".join(f'"{k}": {e}' for k, e in zip(keys, layers, strict=True))
        g.init.append("self.stages = nn.ModuleDict({\n    " + items + ",\n})")
        body += ["h = x", "for name in self.order:", "    h = self.stages[name](h)"]
        g.init.append(f"self.order = {keys!r}")
    else:
        g.init.append(
            "self.blocks = nn.ModuleList([\n    nn.Sequential(" + ", ".join(layers) + ")\n"
            "    for _ in range(2)\n])"
        )
        res = g.pick(["h = h + blk(h)", "h += blk(h)", "h = blk(h) + h", "h.add_(blk(h))"])
        g.feat("residual:" + res.split("(")[0].replace(" ", ""))
        pre = g.pick(["h = x", "h = self.inp(x)", "h = torch.tanh(self.inp(x))"])
        g.feat("residual_src:" + pre)
        g.init.append("self.inp = nn.Linear(dim, dim)")
        body += [pre, "for blk in self.blocks:", "    " + res]
    g.init.append("self.head = nn.Linear(dim, 1)")
    if g.chance(0.3):
        # The block's output is written again after the stack.
        wname, wtmpl, _, _ = g.pick([w for w in WRITES if w[2] <= 2])
        g.feat(f"post_write:{wname}")
        body.append(wtmpl.format(v="h"))
    body.append("return self.head(h)")
    forward = _forward(body)
    cls = g.pick(CLASS_NAMES)
    text = "\n\n".join(g.helpers + [_class(g, cls, forward)])
    setup = [f"model = {cls}({_flag_args(g)})", _input_line(g)]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.4))


def scenario_hook(g: _Gen) -> str:
    """A forward hook or forward pre-hook that edits a layer's output or input."""
    layer_name, layer = g.pick(
        [
            ("nn.Linear", "nn.Linear(dim, dim)"),
            ("nn.Sigmoid", "nn.Sigmoid()"),
            ("nn.Tanh", "nn.Tanh()"),
            ("nn.LayerNorm", "nn.LayerNorm(dim)"),
            ("nn.Softmax", "nn.Softmax(dim=-1)"),
            ("nn.ReLU", "nn.ReLU()"),
        ]
    )
    g.feat(f"hooked:{layer_name}")
    kind = g.pick(
        ["forward_mutate"] * 3 + ["forward_return", "pre_mutate", "pre_mutate", "pre_return"]
    )
    g.feat(f"hook:{kind}")
    wname, wtmpl, _, _ = g.pick([w for w in WRITES if w[2] <= 2 and "{v}[:, 0]" not in w[1]])
    if kind == "forward_mutate":
        g.feat(f"write:{wname}")
        hook = f"def hook(module, inputs, output):\n    {wtmpl.format(v='output')}\n"
    elif kind == "forward_return":
        hook = "def hook(module, inputs, output):\n    return output.clamp(-1.0, 1.0)\n"
    elif kind == "pre_mutate":
        g.feat(f"write:{wname}")
        hook = f"def hook(module, inputs):\n    x = inputs[0]\n    {wtmpl.format(v='x')}\n"
    else:
        hook = "def hook(module, inputs):\n    return (inputs[0] * 0.5,)\n"
    pre = g.pick(["fc1", "sigmoid_fc1", "input"])
    g.feat(f"hook_src:{pre}")
    g.init += [
        "self.fc1 = nn.Linear(dim, dim)",
        f"self.layer = {layer}",
        "self.head = nn.Linear(dim, 1)",
    ]
    first = {
        "fc1": "h = self.fc1(x)",
        "sigmoid_fc1": "h = torch.sigmoid(self.fc1(x))",
        "input": "h = x",
    }
    body = [first[pre], "h = self.layer(h)", "return self.head(h)"]
    forward = _forward(body)
    cls = g.pick(CLASS_NAMES)
    text = "\n\n".join(g.helpers + [hook, _class(g, cls, forward)])
    register = (
        "register_forward_hook" if kind.startswith("forward") else "register_forward_pre_hook"
    )
    setup = [f"model = {cls}()", f"model.layer.{register}(hook)", _input_line(g)]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.3))


def scenario_recurrent(g: _Gen) -> str:
    """A recurrent cell unrolled over steps, its state carried and sometimes edited in place."""
    g.init += [
        "self.inp = nn.Linear(dim, dim)",
        "self.rec = nn.Linear(dim, dim)",
        "self.head = nn.Linear(dim, 1)",
    ]
    g.init.append("self.decay = nn.Parameter(torch.full((dim,), 0.9))")
    act = g.pick(["torch.tanh", "torch.sigmoid", "F.relu", "F.gelu", ""])
    g.feat(f"rnn_act:{act or 'none'}")
    update = g.pick(
        [
            ("mask_mul_", "h.mul_(mask)"),
            ("mask_mul", "h = h * mask"),
            ("clamp_", "h.clamp_(-1.0, 1.0)"),
            ("clamp", "h = h.clamp(-1.0, 1.0)"),
            ("setitem", "h[:, 0] = 0.0"),
            ("decay_iadd", "mem *= self.decay"),
            ("decay_mul", "mem = mem * self.decay"),
            ("mem_add_", "mem.add_(h)"),
            ("mem_iadd", "mem += h"),
            ("mem_add", "mem = mem + h"),
            ("outs_last", "outs[-1] += 0.1"),
            ("none", ""),
        ]
    )
    g.feat(f"rnn_update:{update[0]}")
    mem_use = g.pick(["mem_mul_param", "mem_tanh", "mem_add", "none"])
    g.feat(f"mem_use:{mem_use}")
    body = [
        "h = torch.zeros(x.shape[1], x.shape[2])",
        "mem = torch.zeros(x.shape[1], x.shape[2])",
        "outs = []",
    ]
    body.append("for t in range(x.shape[0]):")
    pre = "self.inp(x[t]) + self.rec(h)"
    body.append(f"    h = {act}({pre})" if act else f"    h = {pre}")
    if update[0].startswith("mask"):
        body.append("    mask = (torch.rand_like(h) > 0.1).float()")
    upd_at = (
        "after_append" if update[0] == "outs_last" else g.pick(["before_append", "after_append"])
    )
    g.feat(f"rnn_update_at:{upd_at}")
    if update[1] and upd_at == "before_append":
        body.append("    " + update[1])
    body.append("    outs.append(h)")
    if update[1] and upd_at == "after_append":
        body.append("    " + update[1])
    if mem_use == "mem_mul_param":
        body.append("    y = mem * self.decay")
    elif mem_use == "mem_tanh":
        body.append("    y = torch.tanh(mem)")
    elif mem_use == "mem_add":
        body.append("    y = mem + 1.0")
    if mem_use != "none":
        body.append("    outs.append(y)")
    body.append("return self.head(torch.stack(outs)).mean()")
    forward = _forward(body)
    text = _class(g, "RecurrentCell", forward)
    setup = ["model = RecurrentCell()", _input_line(g, "x", "3, 4, 8")]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.3))


def scenario_two_optimizers(g: _Gen) -> str:
    """GAN or actor-critic: two losses, two optimizers, steps between backward passes."""
    kind = g.pick(["gan", "actor_critic"])
    g.feat(f"train:{kind}")
    mlp = (
        "class MLP(nn.Module):\n"
        "    def __init__(self, d_in=8, d_out=8):\n"
        "        super().__init__()\n"
        "        self.net = nn.Sequential(nn.Linear(d_in, 16), nn.{act}, nn.Linear(16, d_out))\n\n"
        "    def forward(self, x):\n"
        "        return self.net(x)\n"
    )
    act = g.pick(["ReLU()", "Tanh()", "LeakyReLU(0.2)", "ReLU(inplace=True)"])
    g.feat(f"mlp_act:{act}")
    text = mlp.replace("{act}", act)
    lines = ["def main():", "    torch.manual_seed(0)"]
    if kind == "gan":
        order = g.pick(
            ["g_loss_after_d_step", "g_loss_before_d_step", "g_loss_before_d_step"]
            + ["both_backward_then_step"]
        )
        detach = g.chance(0.6)
        g.feat(f"gan:{order}", f"gan:fake_{'detach' if detach else 'attached'}")
        lines += [
            "    G = MLP(8, 8)",
            "    D = MLP(8, 1)",
            "    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)",
            "    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)",
            "    for step in range(2):",
            "        z = torch.randn(4, 8)",
            "        real = torch.randn(4, 8)",
            "        fake = G(z)",
            f"        d_fake = D(fake{'.detach()' if detach else ''})",
            "        d_loss = F.softplus(-D(real)).mean() + F.softplus(d_fake).mean()",
        ]
        retain = "" if detach else "retain_graph=True"
        if order == "g_loss_before_d_step":
            lines += [
                "        g_loss = F.softplus(-D(fake)).mean()",
                "        opt_d.zero_grad()",
                f"        d_loss.backward({retain})",
                "        opt_d.step()",
                "        opt_g.zero_grad()",
                "        g_loss.backward()",
                "        opt_g.step()",
            ]
        elif order == "g_loss_after_d_step":
            lines += [
                "        opt_d.zero_grad()",
                f"        d_loss.backward({retain})",
                "        opt_d.step()",
                "        g_loss = F.softplus(-D(fake)).mean()",
                "        opt_g.zero_grad()",
                "        g_loss.backward()",
                "        opt_g.step()",
            ]
        else:
            lines += [
                "        g_loss = F.softplus(-D(fake)).mean()",
                "        opt_d.zero_grad()",
                "        opt_g.zero_grad()",
                f"        d_loss.backward({'retain_graph=True' if not detach else ''})",
                "        g_loss.backward()",
                "        opt_d.step()",
                "        opt_g.step()",
            ]
    else:
        shared = g.pick(["critic_only", "body_in_critic_opt"])
        vdetach = g.chance(0.5)
        order = g.pick(["step_between", "steps_after"])
        g.feat(f"ac:{shared}", f"ac:value_{'detach' if vdetach else 'attached'}", f"ac:{order}")
        crit_params = (
            "critic.parameters()"
            if shared == "critic_only"
            else "list(body.parameters()) + list(critic.parameters())"
        )
        lines += [
            "    body = MLP(8, 8)",
            "    actor = nn.Linear(8, 3)",
            "    critic = nn.Linear(8, 1)",
            "    actor_params = list(body.parameters()) + list(actor.parameters())",
            "    opt_a = torch.optim.Adam(actor_params, lr=1e-3)",
            f"    opt_c = torch.optim.SGD({crit_params}, lr=0.1)",
            "    for step in range(2):",
            "        obs = torch.randn(4, 8)",
            "        ret = torch.randn(4, 1)",
            "        feat = body(obs)",
            "        value = critic(feat)",
            "        logp = F.log_softmax(actor(feat), dim=-1)[:, :1]",
            f"        advantage = ret - value{'.detach()' if vdetach else ''}",
            "        actor_loss = -(logp * advantage).mean()",
            "        critic_loss = (ret - value).pow(2).mean()",
            "        opt_a.zero_grad()",
            "        opt_c.zero_grad()",
        ]
        if order == "step_between":
            lines += [
                "        critic_loss.backward(retain_graph=True)",
                "        opt_c.step()",
                "        actor_loss.backward()",
                "        opt_a.step()",
            ]
        else:
            lines += [
                "        critic_loss.backward(retain_graph=True)",
                "        actor_loss.backward()",
                "        opt_c.step()",
                "        opt_a.step()",
            ]
    return _with_main(text, lines)


def scenario_manual_sgd(g: _Gen) -> str:
    """Linear regression with hand-written SGD updates of leaf tensors."""
    style = g.pick(
        [
            "bare",
            "bare",
            "no_grad_block",
            "data",
            "helper_bare",
            "helper_bare",
            "helper_no_grad_block",
            "helper_decorated",
            "helper_inference_decorated",
            "sub_method",
            "sub_method_no_grad",
            "data_sub_",
        ]
    )
    g.feat(f"sgd:{style}")
    leaf = g.pick(["requires_grad_kw", "requires_grad_", "parameter"])
    g.feat(f"sgd_leaf:{leaf}")
    helpers: list[str] = []
    if style == "helper_bare":
        helpers.append("def sgd_step(w, b, lr):\n    w -= lr * w.grad\n    b -= lr * b.grad\n")
    elif style == "helper_no_grad_block":
        helpers.append(
            "def sgd_step(w, b, lr):\n    with torch.no_grad():\n"
            "        w -= lr * w.grad\n        b -= lr * b.grad\n"
        )
    elif style == "helper_decorated":
        helpers.append(
            "@torch.no_grad()\ndef sgd_step(w, b, lr):\n"
            "    for p in (w, b):\n        p.sub_(lr * p.grad)\n"
        )
    elif style == "helper_inference_decorated":
        helpers.append(
            "@torch.inference_mode()\ndef sgd_step(w, b, lr):\n"
            "    w -= lr * w.grad\n    b -= lr * b.grad\n"
        )
    lines = [
        "def main():",
        "    torch.manual_seed(0)",
        "    x = torch.randn(16, 8)",
        "    y = torch.randn(16, 1)",
    ]
    if leaf == "requires_grad_kw":
        lines += [
            "    w = torch.zeros(8, 1, requires_grad=True)",
            "    b = torch.zeros(1, requires_grad=True)",
        ]
    elif leaf == "requires_grad_":
        lines += [
            "    w = torch.zeros(8, 1).requires_grad_()",
            "    b = torch.zeros(1).requires_grad_()",
        ]
    else:
        lines += ["    w = nn.Parameter(torch.zeros(8, 1))", "    b = nn.Parameter(torch.zeros(1))"]
    lines += ["    lr = 0.05", "    for step in range(3):", "        pred = x @ w + b"]
    lines += ["        loss = ((pred - y) ** 2).mean()", "        loss.backward()"]
    upd = {
        "bare": ["w -= lr * w.grad", "b -= lr * b.grad"],
        "no_grad_block": ["with torch.no_grad():", "    w -= lr * w.grad", "    b -= lr * b.grad"],
        "data": ["w.data -= lr * w.grad", "b.data -= lr * b.grad"],
        "sub_method": ["w.sub_(lr * w.grad)", "b.sub_(lr * b.grad)"],
        "sub_method_no_grad": [
            "with torch.no_grad():",
            "    w.sub_(lr * w.grad)",
            "    b.sub_(lr * b.grad)",
        ],
        "data_sub_": ["w.data.sub_(lr * w.grad.data)", "b.data.sub_(lr * b.grad.data)"],
    }.get(style, ["sgd_step(w, b, lr)"])
    lines += ["        " + u for u in upd]
    lines += ["        w.grad.zero_()", "        b.grad.zero_()", "    return loss"]
    lines += ["", "", 'if __name__ == "__main__":', "    main()"]
    return (
        "\n".join(helpers + ["\n".join(lines) + "\n"])
        if not helpers
        else ("\n\n".join(helpers) + "\n\n" + "\n".join(lines) + "\n")
    )


def scenario_tokens(g: _Gen) -> str:
    """Integer token ids and bool masks around an embedding, edited in place."""
    g.feat("dtype:int_bool")
    g.init += ["self.embed = nn.Embedding(24, dim)", "self.head = nn.Linear(dim, 1)"]
    use = g.pick(["mask_mul", "masked_fill", "mask_float_mul", "where"])
    g.feat(f"mask_use:{use}")
    write = g.pick(
        [
            ("ids_setitem", "ids[ids == 3] = 0"),
            ("ids_iadd", "ids += 1"),
            ("ids_clamp_", "ids.clamp_(max=18)"),
            ("ids_clone_setitem", "ids2 = ids.clone()\nids2[ids2 == 3] = 0"),
            ("mask_fill_", "mask.fill_(True)"),
            ("mask_iand", "mask &= ids > 1"),
            ("mask_setitem", "mask[:, 0] = True"),
            ("emb_iadd", "e += 1.0"),
            ("emb_mul_", "e.mul_(2.0)"),
            ("pos_iadd", "pos += 1"),
            ("gather_index_iadd", "idx += 1"),
            ("gather_index_clone", "idx = idx.clone()\nidx += 1"),
        ]
    )
    g.feat(f"token_write:{write[0]}")
    when = "after" if write[0].startswith("emb") or g.chance(0.6) else "before"
    if write[0].startswith("gather"):
        when = "gather"
    g.feat(f"token_write_at:{when}")
    body = ["mask = ids != 0", "pos = torch.arange(ids.shape[1])"]
    if when == "before":
        body += write[1].split("\n")
    body.append("e = self.embed(ids) + self.embed(pos)[None]")
    if use == "mask_mul":
        body.append("e = e * mask.unsqueeze(-1)")
    elif use == "masked_fill":
        body.append("e = e.masked_fill(~mask.unsqueeze(-1), 0.0)")
    elif use == "mask_float_mul":
        body.append("e = e * mask.unsqueeze(-1).float()")
    else:
        body.append("e = torch.where(mask.unsqueeze(-1), e, torch.zeros_like(e))")
    if when == "after":
        body += write[1].split("\n")
    if write[0].startswith("gather"):
        # gather saves its index: an integer tensor that autograd checks like any other.
        body.append("idx = e.norm(dim=-1).argmax(dim=-1, keepdim=True)")
        body.append("picked = e.gather(1, idx.unsqueeze(-1).expand(-1, 1, e.shape[-1]))")
        body += write[1].split("\n")
        body.append("e = e + picked")
    body.append("return self.head(e.mean(dim=1))")
    forward = "def forward(self, ids):\n" + _indent("\n".join(body), 1)
    text = _class(g, "TokenEncoder", forward)
    setup = ["model = TokenEncoder()", "ids = torch.randint(1, 20, (4, 6))", "ids[:, -1] = 0"]
    return text + "\n\n" + _driver(g, setup, "model(ids)", g.chance(0.3))


def scenario_buffer(g: _Gen) -> str:
    """Buffers (register_buffer): statistics updated in place, scales used in the graph."""
    g.feat("buffer")
    g.init += [
        "self.fc = nn.Linear(dim, dim)",
        "self.head = nn.Linear(dim, 1)",
        'self.register_buffer("scale", torch.ones(dim))',
        'self.register_buffer("running_mean", torch.zeros(dim))',
    ]
    stat = g.pick(["no_grad_block", "detach", "data"])
    g.feat(f"buffer_stat:{stat}")
    stat_line = {
        "no_grad_block": (
            "with torch.no_grad():\n    self.running_mean.mul_(0.9).add_(0.1 * h.mean(0))"
        ),
        "detach": "self.running_mean.mul_(0.9).add_(0.1 * h.detach().mean(0))",
        "data": "self.running_mean.data.mul_(0.9).add_(0.1 * h.data.mean(0))",
    }[stat]
    use = g.pick(["mul", "add", "div"])
    g.feat(f"buffer_use:{use}")
    use_line = {
        "mul": "out = (h - self.running_mean) * self.scale",
        "add": "out = h + self.scale",
        "div": "out = h / self.scale",
    }[use]
    edit = g.pick(["scale_fill_", "scale_mul_", "scale_imul", "scale_copy_", "none"])
    g.feat(f"buffer_edit:{edit}")
    edit_line = {
        "scale_fill_": "self.scale.fill_(1.0)",
        "scale_mul_": "self.scale.mul_(0.99)",
        "scale_imul": "self.scale *= 0.99",
        "scale_copy_": "self.scale.copy_(torch.ones_like(self.scale))",
        "none": "",
    }[edit]
    at = g.pick(["before_use", "after_use", "after_use"])
    g.feat(f"buffer_edit_at:{at}")
    body = ["h = self.fc(x)"] + stat_line.split("\n")
    if edit_line and at == "before_use":
        body.append(edit_line)
    body.append(use_line)
    if edit_line and at == "after_use":
        body.append(edit_line)
    body.append("return self.head(out)")
    forward = _forward(body)
    text = _class(g, "Normalizer", forward)
    setup = ["model = Normalizer()", _input_line(g)]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.4))


def scenario_grad_mode(g: _Gen) -> str:
    """no_grad / inference_mode blocks and decorators: views and results made without grad."""
    kind = g.pick(
        [
            "nograd_view_then_write",
            "nograd_view_write_inside",
            "inference_result_write",
            "inference_clone_write",
            "decorated_eval_write",
            "decorated_eval_then_train",
            "enable_grad_inside",
        ]
    )
    g.feat(f"grad_mode:{kind}")
    helpers: list[str] = []
    g.init += ["self.fc = nn.Linear(dim, dim)", "self.head = nn.Linear(dim, 1)"]
    body = ["h = torch.sigmoid(self.fc(x))"]
    wname, wtmpl, _, _ = g.pick([w for w in WRITES if w[2] <= 1])
    g.feat(f"write:{wname}")
    main_extra: list[str] = []
    if kind == "nograd_view_then_write":
        body += ["with torch.no_grad():", "    part = h[:, :4]", wtmpl.format(v="part")]
    elif kind == "nograd_view_write_inside":
        body += ["with torch.no_grad():", "    part = h[:, :4]", "    " + wtmpl.format(v="part")]
    elif kind == "inference_result_write":
        body += ["with torch.inference_mode():", "    cache = self.fc(x)", wtmpl.format(v="cache")]
    elif kind == "inference_clone_write":
        body += ["with torch.inference_mode():", "    cache = self.fc(x)", "cache = cache.clone()"]
        body.append(wtmpl.format(v="cache"))
    elif kind == "enable_grad_inside":
        body = ["with torch.no_grad():", "    base = self.fc(x)", "    with torch.enable_grad():"]
        body += ["        h = torch.sigmoid(self.fc(x))", "    " + wtmpl.format(v="base")]
    body.append("return self.head(h)")
    if kind.startswith("decorated"):
        deco = g.pick(["@torch.no_grad()", "@torch.inference_mode()"])
        g.feat(f"decorator:{deco}")
        helpers.append(
            f"{deco}\ndef evaluate(model, x):\n    out = model(x)\n    {wtmpl.format(v='out')}\n"
            "    return out\n"
        )
        main_extra = ["scores = evaluate(model, x)"]
        if kind == "decorated_eval_write":
            main_extra.append(wtmpl.format(v="scores"))
    forward = _forward(body)
    text = "\n\n".join(helpers + [_class(g, "Classifier", forward)])
    setup = ["model = Classifier()", _input_line(g)] + main_extra
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.3))


def scenario_train_loop(g: _Gen) -> str:
    """One model, one optimizer, two losses; where the step sits decides the outcome."""
    g.init += ["self.body = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))"]
    g.init += ["self.head_a = nn.Linear(dim, 1)", "self.head_b = nn.Linear(dim, 1)"]
    forward = (
        "def forward(self, x):\n    h = self.body(x)\n    return self.head_a(h), self.head_b(h)"
    )
    text = _class(g, "TwoHeads", forward)
    order = g.pick(["step_between", "step_after", "step_before_backward", "sum_losses"])
    g.feat(f"two_loss:{order}")
    lines = ["def main():", "    torch.manual_seed(0)", "    model = TwoHeads()"]
    lines += [
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "    x = torch.randn(4, 8)",
    ]
    lines += [
        "    for epoch in range(2):",
        "        optimizer.zero_grad()",
        "        a, b = model(x)",
    ]
    lines += ["        loss_a = a.pow(2).mean()", "        loss_b = (b - 1.0).pow(2).mean()"]
    if order == "step_between":
        lines += [
            "        loss_a.backward(retain_graph=True)",
            "        optimizer.step()",
            "        loss_b.backward()",
        ]
    elif order == "step_after":
        lines += [
            "        loss_a.backward(retain_graph=True)",
            "        loss_b.backward()",
            "        optimizer.step()",
        ]
    elif order == "step_before_backward":
        lines += ["        optimizer.step()", "        (loss_a + loss_b).backward()"]
    else:
        lines += [
            "        loss = loss_a + loss_b",
            "        loss.backward()",
            "        optimizer.step()",
        ]
    return _with_main(text, lines)


def scenario_attention(g: _Gen) -> str:
    """Self-attention: scores, softmax, masking and dropout, some of it in place."""
    g.init += [
        "self.q = nn.Linear(dim, dim)",
        "self.k = nn.Linear(dim, dim)",
        "self.v = nn.Linear(dim, dim)",
        "self.out = nn.Linear(dim, 1)",
    ]
    scores = g.pick(["scores", "logits", "sim", "att"])
    probs = g.pick(["attn", "attn_map", "probs", "weights", "p_attn"])
    values = g.pick(["v", "values", "val"])
    mask_kind = g.pick(
        [
            ("scores_masked_fill_", f"{scores}.masked_fill_(mask, float('-inf'))", "pre"),
            ("scores_masked_fill", f"{scores} = {scores}.masked_fill(mask, float('-inf'))", "pre"),
            ("scores_setitem", f"{scores}[:, mask] = -1e9", "pre"),
            ("probs_setitem_col", f"{probs}[:, :, 0] = 0.0", "post"),
            ("probs_masked_fill_", f"{probs}.masked_fill_(mask, 0.0)", "post"),
            ("probs_masked_fill", f"{probs} = {probs}.masked_fill(mask, 0.0)", "post"),
            (
                "probs_dropout_inplace",
                f"F.dropout({probs}, p=0.1, training=True, inplace=True)",
                "post",
            ),
            ("probs_imul", f"{probs} *= keep", "post"),
            ("probs_div_", f"{probs}.div_({probs}.sum(-1, keepdim=True))", "post"),
            ("values_iadd", f"{values} += 1.0", "late"),
            ("values_clone_iadd", f"{values} = {values}.clone()\n{values} += 1.0", "late"),
            ("none", "", "pre"),
        ]
    )
    g.feat(f"attention:{mask_kind[0]}")
    scale = g.pick(["/ 8 ** 0.5", "* 0.35", "/ (x.shape[-1] ** 0.5)"])
    g.feat("attention_scale:" + ("div" if scale.startswith("/") else "mul"))
    body = [
        "q = self.q(x)",
        "k = self.k(x)",
        f"{values} = self.v(x)",
        f"{scores} = q @ k.transpose(-2, -1) {scale}",
        "mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1)",
        "keep = (torch.rand(x.shape[1], x.shape[1]) > 0.1).float()",
    ]
    if mask_kind[2] == "pre":
        body += mask_kind[1].split("\n") if mask_kind[1] else []
    body.append(f"{probs} = torch.softmax({scores}, dim=-1)")
    if mask_kind[2] == "post":
        body += mask_kind[1].split("\n")
    body.append(f"ctx = {probs} @ {values}")
    if mask_kind[2] == "late":
        body += mask_kind[1].split("\n")
    body.append("return self.out(ctx + x)")
    forward = _forward(body)
    text = _class(g, "SelfAttention", forward)
    setup = ["model = SelfAttention()", _input_line(g, "x", "2, 5, 8")]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.3))


def scenario_param_edit(g: _Gen) -> str:
    """Parameters edited in place: in __init__ (initialisation) or in forward (clipping)."""
    where = g.pick(["init", "init", "forward_before_use", "forward_after_use"])
    g.feat(f"param_edit:{where}")
    edit = g.pick(
        [
            ("bare_copy_", "self.fc.weight.copy_(torch.eye(dim))"),
            ("bare_fill_", "self.fc.bias.fill_(0.0)"),
            ("bare_clamp_", "self.fc.weight.clamp_(-0.5, 0.5)"),
            ("no_grad_copy_", "with torch.no_grad():\n    self.fc.weight.copy_(torch.eye(dim))"),
            ("no_grad_clamp_", "with torch.no_grad():\n    self.fc.weight.clamp_(-0.5, 0.5)"),
            ("data_clamp_", "self.fc.weight.data.clamp_(-0.5, 0.5)"),
            ("data_zero_", "self.fc.bias.data.zero_()"),
            ("detach_mul_", "self.fc.weight.detach().mul_(0.5)"),
            ("nn_init", "nn.init.zeros_(self.fc.bias)"),
            (
                "frozen_copy_",
                "self.fc.weight.requires_grad = False\nself.fc.weight.copy_(torch.eye(dim))",
            ),
            ("frozen_method_fill_", "self.fc.bias.requires_grad_(False)\nself.fc.bias.fill_(0.0)"),
            ("weight_iadd", "self.fc.weight += 0.01"),
        ]
    )
    g.feat(f"param_write:{edit[0]}")
    g.init += ["self.fc = nn.Linear(dim, dim)", "self.head = nn.Linear(dim, 1)"]
    edit_lines = edit[1].replace("torch.eye(dim)", "torch.eye(self.fc.in_features)").split("\n")
    if where == "init":
        g.init += edit[1].split("\n")
        body = ["h = torch.relu(self.fc(x))", "return self.head(h)"]
    elif where == "forward_before_use":
        body = edit_lines + ["h = torch.relu(self.fc(x))", "return self.head(h)"]
    else:
        body = ["h = torch.relu(self.fc(x))"] + edit_lines + ["return self.head(h)"]
    forward = _forward(body)
    text = _class(g, "Clipped", forward)
    setup = ["model = Clipped()", _input_line(g)]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.3))


def scenario_ema(g: _Gen) -> str:
    """A mean-teacher / EMA copy of a model, updated in place from the student's parameters."""
    style = g.pick(
        ["no_grad_block", "bare", "bare_frozen", "decorated", "data", "lerp_no_grad", "lerp_bare"]
    )
    g.feat(f"ema:{style}")
    when = g.pick(["after_step", "before_backward"])
    g.feat(f"ema_at:{when}")
    helpers: list[str] = []
    update = {
        "no_grad_block": [
            "with torch.no_grad():",
            "    for e, p in zip(ema.parameters(), model.parameters()):",
            "        e.mul_(0.99).add_(p, alpha=0.01)",
        ],
        "bare": [
            "for e, p in zip(ema.parameters(), model.parameters()):",
            "    e.mul_(0.99).add_(p.detach(), alpha=0.01)",
        ],
        "bare_frozen": [
            "for e, p in zip(ema.parameters(), model.parameters()):",
            "    e.mul_(0.99).add_(p.detach(), alpha=0.01)",
        ],
        "data": [
            "for e, p in zip(ema.parameters(), model.parameters()):",
            "    e.data.mul_(0.99).add_(p.data, alpha=0.01)",
        ],
        "lerp_no_grad": [
            "with torch.no_grad():",
            "    for e, p in zip(ema.parameters(), model.parameters()):",
            "        e.lerp_(p, 0.01)",
        ],
        "lerp_bare": [
            "for e, p in zip(ema.parameters(), model.parameters()):",
            "    e.lerp_(p.detach(), 0.01)",
        ],
        "decorated": ["ema_update(ema, model)"],
    }[style]
    if style == "decorated":
        helpers.append(
            "@torch.no_grad()\ndef ema_update(ema, model, decay=0.99):\n"
            "    for e, p in zip(ema.parameters(), model.parameters()):\n"
            "        e.mul_(decay).add_(p, alpha=1 - decay)\n"
        )
    lines = [
        "def main():",
        "    torch.manual_seed(0)",
        "    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))",
        "    ema = copy.deepcopy(model)",
    ]
    if style == "bare_frozen":
        lines.append("    ema.requires_grad_(False)")
    lines += [
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "    for step in range(2):",
        "        x = torch.randn(4, 8)",
        "        loss = (model(x) - ema(x)).pow(2).mean() + model(x).pow(2).mean()",
        "        optimizer.zero_grad()",
    ]
    if when == "before_backward":
        lines += ["        " + u for u in update]
    lines += ["        loss.backward()", "        optimizer.step()"]
    if when == "after_step":
        lines += ["        " + u for u in update]
    lines += ["", "", 'if __name__ == "__main__":', "    main()"]
    text = "import copy\n\n" + "\n\n".join(helpers)
    return text + "\n\n" + "\n".join(lines) + "\n"


def scenario_custom_function(g: _Gen) -> str:
    """A torch.autograd.Function that saves tensors; the caller writes into them afterwards."""
    saved = g.pick(["input", "output"])
    g.feat(f"custom_fn:saves_{saved}")
    if saved == "input":
        fn = (
            "class Square(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, x):\n"
            "        ctx.save_for_backward(x)\n"
            "        return x * x\n\n"
            "    @staticmethod\n"
            "    def backward(ctx, grad):\n"
            "        (x,) = ctx.saved_tensors\n"
            "        return 2 * x * grad\n"
        )
    else:
        fn = (
            "class Square(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, x):\n"
            "        y = torch.exp(x)\n"
            "        ctx.save_for_backward(y)\n"
            "        return y\n\n"
            "    @staticmethod\n"
            "    def backward(ctx, grad):\n"
            "        (y,) = ctx.saved_tensors\n"
            "        return y * grad\n"
        )
    target = g.pick(["input", "output", "clone_output", "none"])
    g.feat(f"custom_fn:write_{target}")
    wname, wtmpl, _, _ = g.pick([w for w in WRITES if w[2] <= 1 and w[0] != "out="])
    g.feat(f"write:{wname}")
    g.init += ["self.fc = nn.Linear(dim, dim)", "self.head = nn.Linear(dim, 1)"]
    body = ["h = self.fc(x)", "y = Square.apply(h)"]
    if target == "input":
        body.append(wtmpl.format(v="h"))
    elif target == "output":
        body.append(wtmpl.format(v="y"))
    elif target == "clone_output":
        body += ["y = y.clone()", wtmpl.format(v="y")]
    body.append("return self.head(y)")
    forward = _forward(body)
    text = fn + "\n\n" + _class(g, "Custom", forward)
    setup = ["model = Custom()", _input_line(g)]
    return text + "\n\n" + _driver(g, setup, "model(x)", g.chance(0.3))


SCENARIOS: tuple[tuple[str, Callable[[_Gen], str], float], ...] = (
    ("module", scenario_module, 0.26),
    ("function", scenario_function, 0.12),
    ("attention", scenario_attention, 0.06),
    ("param_edit", scenario_param_edit, 0.05),
    ("sequential", scenario_sequential, 0.12),
    ("hook", scenario_hook, 0.06),
    ("recurrent", scenario_recurrent, 0.08),
    ("two_optimizers", scenario_two_optimizers, 0.06),
    ("manual_sgd", scenario_manual_sgd, 0.06),
    ("tokens", scenario_tokens, 0.06),
    ("buffer", scenario_buffer, 0.05),
    ("grad_mode", scenario_grad_mode, 0.05),
    ("train_loop", scenario_train_loop, 0.02),
    ("ema", scenario_ema, 0.03),
    ("custom_function", scenario_custom_function, 0.03),
)


def generate_one(seed: int, index: int, shapes: bool = False) -> Program:
    """Program number `index` of the stream seeded by `seed` (independent of the others).

    With `shapes`, the same program reshaped (reshape.py: helpers, containers, a trainer class)
    by a random stream of its own, so the programs themselves are the stream's."""
    rng = random.Random(f"{seed}:{index}")
    names = [s[0] for s in SCENARIOS]
    weights = [s[2] for s in SCENARIOS]
    name = rng.choices(names, weights)[0]
    fn = dict((s[0], s[1]) for s in SCENARIOS)[name]
    g = _Gen(rng)
    g.feat(f"scenario:{name}")
    body = fn(g)
    doc = f'"""Generated program {index} of seed {seed} ({name})."""\n\n'
    text = doc + HEADER + "\n\n" + body
    if shapes:
        text, shaped = reshape(text, random.Random(f"{seed}:{index}:shape"))
        g.feat(*shaped)
    return Program(index=index, seed=seed, scenario=name, text=text, features=tuple(g.features))


def generate(count: int, seed: int, shapes: bool = False) -> list[Program]:
    """`count` programs of the stream seeded by `seed` (reshaped with `shapes`)."""
    return [generate_one(seed, i, shapes) for i in range(count)]
