"""Probes the installed torch and writes inplace_lsp/data/autograd.json: what each op and nn module
saves for backward, which return views or aliases, which write in place.

Every op of OP_SPECS and every module of MOD_SPECS is run on small float64 inputs (modules also
in float32, torch's default dtype, whose kernels can save more: mkldnn's LSTM) inside
`torch.autograd.graph.saved_tensors_hooks`; each tensor handed to the pack hook is matched to the
call's operands and outputs (and a module's parameters and buffers) by storage: a saved view or
detached alias of an input is the input, it shares its storage and version counter. Tensors that
match nothing (masks, indices, statistics, private copies) are private to the graph, left out.
The format is described in inplace_lsp/analysis/knowledge.py.

    python scripts/gen_autograd_table.py            # regenerate the JSON
    python scripts/gen_autograd_table.py --check    # exit 1 when the JSON is stale

`probe_op(name)` and `probe_module(name)` return one entry each; tests re-probe a sample.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import itertools
import json
import operator
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: N812

T1, T0, S = "T1", "T0", "S"
FLOAT = (T1, T0)
FLOAT_S = (T1, T0, S)
DTYPE = torch.float64
# Modules run in torch's default dtype too: the kernel, and what it saves, can differ.
MODULE_DTYPES = (torch.float32, DTYPE)
OUTPUT_PATH = Path(__file__).resolve().parent.parent / "inplace_lsp" / "data" / "autograd.json"
FN = "torch.nn.functional."

Entry = dict[str, Any]


class ProbeError(RuntimeError):
    """No call signature of an op or module could be probed."""


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class Operand:
    """One positional operand: a float tensor (T1/T0), a Python number (S), or a fixed T0 tensor."""

    shape: tuple[int, ...] = (2, 3)
    kinds: tuple[str, ...] = FLOAT
    low: float = 0.1
    high: float = 0.9
    scalar: float = 2.0
    make: Callable[[], torch.Tensor] | None = None  # custom tensor (indices, masks, statistics)


@dataclass(frozen=True)
class OpSpec:
    name: str
    operands: tuple[Operand, ...]
    args: tuple[Any, ...] = ()  # structural positional arguments after the operands
    kwargs: tuple[tuple[str, Any], ...] = ()
    call: Callable[..., Any] | None = None  # call(fn, *operands, **kwargs) when args do not fit
    min_operands: int | None = None  # trailing optional operands (bias) are probed absent too

    def invoke(self, fn: Callable[..., Any], values: Sequence[Any], extra: dict[str, Any]) -> Any:
        kwargs = {**dict(self.kwargs), **extra}
        if self.call is not None:
            return self.call(fn, *values, **kwargs)
        return fn(*values, *self.args, **kwargs)


@dataclass(frozen=True)
class ModSpec:
    name: str
    make: Callable[..., nn.Module]  # make(**kwargs), kwargs being {} or {"inplace": True}
    inputs: tuple[Operand, ...] = (Operand(),)  # inputs without T1 in kinds never require grad
    call: Callable[..., Any] | None = None  # call(module, *inputs)


X = Operand()
XS = Operand(kinds=FLOAT_S)
SCALAR0 = Operand(shape=(), kinds=(S, T1, T0), scalar=0.5)  # number or 0-dim tensor


def _x(*shape: int, kinds: tuple[str, ...] = FLOAT, low: float = 0.1, high: float = 0.9) -> Operand:
    return Operand(shape=shape, kinds=kinds, low=low, high=high)


def _fixed(make: Callable[[], torch.Tensor]) -> Operand:
    return Operand(kinds=(T0,), make=make)


def _long(*values: Any) -> Operand:
    return _fixed(lambda: torch.tensor(values, dtype=torch.long))


MASK = _fixed(lambda: torch.tensor([[True, False, True], [False, True, False]]))
ZEROS3 = _fixed(lambda: torch.zeros(3, dtype=DTYPE))
ONES3 = _fixed(lambda: torch.ones(3, dtype=DTYPE))
IDX_ROWS = _long(1, 0)  # index into dim 0 of a (2, 3) tensor
IDX_GATHER = _fixed(lambda: torch.tensor([[0, 2, 1], [1, 0, 2]], dtype=torch.long))

UNARY = (
    "abs acos asin atan asinh atanh ceil cos cosh deg2rad digamma erf erfc erfinv exp exp2 expm1 "
    "fix floor frac i0 lgamma log log10 log1p log2 logit nan_to_num neg negative rad2deg "
    "reciprocal relu round rsqrt sgn sigmoid sign sin sinc sinh sqrt square tan tanh trunc "
    "positive conj"
).split()
BINARY = (
    "add sub mul div true_divide pow atan2 maximum minimum fmax fmin fmod remainder hypot xlogy "
    "copysign logaddexp"
).split()
DUNDER_BINARY = (
    "add radd sub rsub mul rmul truediv rtruediv pow rpow mod".split()  # Tensor.__<name>__
)


def _op_specs() -> list[OpSpec]:
    specs: list[OpSpec] = []

    def add(name: str, *operands: Operand, **kw: Any) -> None:
        if "kwargs" in kw:
            kw["kwargs"] = tuple(sorted(kw["kwargs"].items()))
        specs.append(OpSpec(name, operands, **kw))

    def both(attr: str, *operands: Operand, **kw: Any) -> None:
        """torch.<attr>(x, ...) and Tensor.<attr>(x, ...), where they exist."""
        if hasattr(torch, attr):
            add(f"torch.{attr}", *operands, **kw)
        if hasattr(torch.Tensor, attr):
            add(f"Tensor.{attr}", *operands, **kw)

    # elementwise
    for attr in UNARY:
        both(attr, X)
    both("acosh", _x(2, 3, low=1.1, high=1.9))
    for attr in BINARY:
        if hasattr(torch, attr):
            add(f"torch.{attr}", XS, XS)
        add(f"Tensor.{attr}", X, XS)
    both("clamp", X, Operand(kinds=FLOAT_S, scalar=0.3), Operand(kinds=FLOAT_S, scalar=0.7))
    both("clip", X, Operand(kinds=FLOAT_S, scalar=0.3), Operand(kinds=FLOAT_S, scalar=0.7))
    both("clamp_min", X, Operand(kinds=FLOAT_S, scalar=0.3))
    both("clamp_max", X, Operand(kinds=FLOAT_S, scalar=0.7))
    both("lerp", X, X, Operand(kinds=FLOAT_S, scalar=0.3))
    both("addcmul", X, X, X)
    both("addcdiv", X, X, X)
    add("torch.where", MASK, XS, XS)
    add("Tensor.where", X, MASK, XS)

    # Python operators
    for attr in DUNDER_BINARY:
        add(f"Tensor.__{attr}__", X, XS)
    add("Tensor.__matmul__", X, _x(3, 4))
    add("Tensor.__rmatmul__", X, _x(4, 2))
    for attr in ("neg", "abs", "pos"):
        add(f"Tensor.__{attr}__", X)
    add("Tensor.__getitem__", X, call=lambda fn, x: fn(x, 0))
    add("Tensor.__setitem__", X, SCALAR0, call=lambda fn, x, v: fn(x, 0, v))

    # reductions and normalisations
    for attr in ("sum", "mean", "prod", "var", "std", "norm", "amax", "amin"):
        both(attr, X)
    # max(x), max(x, dim) (a number where max(x, other) takes a tensor), max(x, other)
    both("max", X, Operand(kinds=(S, T1, T0), scalar=1), min_operands=1)
    both("min", X, Operand(kinds=(S, T1, T0), scalar=1), min_operands=1)
    both("median", X)
    both("logsumexp", X, args=(1,))
    both("cumsum", X, args=(1,))
    both("cumprod", X, args=(1,))
    both("softmax", X, args=(-1,))
    both("log_softmax", X, args=(-1,))
    both("topk", X, args=(2,))
    both("sort", X)
    both("dist", X, X)
    add("torch.linalg.norm", X)
    add("torch.linalg.vector_norm", X)
    add("torch.linalg.inv", Operand(make=lambda: torch.eye(3, dtype=DTYPE) * 2 + 0.1))
    both("det", Operand(make=lambda: torch.eye(3, dtype=DTYPE) * 2 + 0.1))

    # linear algebra
    both("matmul", X, _x(3, 4))
    both("mm", X, _x(3, 4))
    both("bmm", _x(2, 2, 3), _x(2, 3, 4))
    both("mv", X, _x(3))
    both("dot", _x(3), _x(3))
    both("outer", _x(2), _x(3))
    both("addmm", _x(2, 4), X, _x(3, 4))
    both("addmv", _x(2), X, _x(3))
    both("baddbmm", _x(2, 2, 4), _x(2, 2, 3), _x(2, 3, 4))
    add("torch.einsum", X, _x(3, 4), call=lambda fn, a, b: fn("ij,jk->ik", a, b))
    add("torch.tensordot", X, _x(3, 4), kwargs={"dims": 1})

    # views, aliases and copies
    add("Tensor.view", X, args=(3, 2))
    add("Tensor.view_as", X, _x(3, 2))
    both("reshape", X, args=((3, 2),))
    add("Tensor.reshape_as", X, _x(3, 2))
    both("transpose", X, args=(0, 1))
    both("swapaxes", X, args=(0, 1))
    both("movedim", X, args=(0, 1))
    both("permute", X, args=((1, 0),))
    both("t", X)
    both("flatten", _x(2, 3, 1))
    both("squeeze", _x(2, 1, 3))
    both("unsqueeze", X, args=(0,))
    add("Tensor.expand", _x(1, 3), args=(2, 3))
    add("Tensor.expand_as", _x(1, 3), X)
    add("Tensor.contiguous", X)
    both("narrow", X, args=(1, 0, 2))
    both("select", X, args=(0, 1))
    both("chunk", X, args=(3, 1))
    both("split", X, args=(1, 1))
    both("unbind", X)
    both("split_with_sizes", X, args=([1, 2], 1))
    both("tensor_split", X, args=(2, 1))  # views, but not of a multi-output node
    both("hsplit", X, args=(3,))
    both("moveaxis", X, args=(0, 1))
    both("swapdims", X, args=(0, 1))
    both("unflatten", X, args=(1, (1, 3)))
    both("vsplit", X, args=(2,))
    both("diagonal", X)
    add("Tensor.unfold", X, args=(1, 2, 1))
    both("as_strided", X, args=((2, 2), (3, 1)))
    both("detach", X)
    both("clone", X)
    both("flip", X, args=((0,),))
    both("roll", X, args=(1, 0))
    both("tril", X)
    both("triu", X)
    add("Tensor.repeat", X, args=(2, 1))
    both("tile", X, args=((2, 1),))
    both("diag", _x(3))
    add("Tensor.to", X, args=(DTYPE,))
    add("Tensor.double", X)
    add("Tensor.float", X)
    add("Tensor.cpu", X)
    add("Tensor.type_as", X, _x(2, 3))
    add("torch.real", X)
    add("torch.cat", X, X, call=lambda fn, a, b: fn([a, b]))
    add("torch.stack", X, X, call=lambda fn, a, b: fn([a, b]))
    add("torch.hstack", X, X, call=lambda fn, a, b: fn([a, b]))

    # indexing and writes
    both("index_select", X, IDX_ROWS, call=lambda fn, x, i: fn(x, 0, i))
    both("gather", X, IDX_GATHER, call=lambda fn, x, i: fn(x, 1, i))
    both("masked_select", X, MASK)
    both("masked_fill", X, MASK, SCALAR0)
    both("masked_scatter", X, MASK, X)
    both("index_add", X, IDX_ROWS, X, call=lambda fn, x, i, s: fn(x, 0, i, s))
    both("index_copy", X, IDX_ROWS, X, call=lambda fn, x, i, s: fn(x, 0, i, s))
    both("index_fill", X, IDX_ROWS, SCALAR0, call=lambda fn, x, i, v: fn(x, 0, i, v))
    both("scatter", X, IDX_GATHER, X, call=lambda fn, x, i, s: fn(x, 1, i, s))
    both("scatter_add", X, IDX_GATHER, X, call=lambda fn, x, i, s: fn(x, 1, i, s))
    both("index_put", X, IDX_ROWS, X, call=lambda fn, x, i, s: fn(x, (i,), s))
    add("Tensor.fill_", X, SCALAR0)
    add("Tensor.fill_diagonal_", _x(3, 3), args=(0.0,))
    add("torch.cdist", X, X)
    add("torch.cross", _x(2, 3), _x(2, 3), kwargs={"dim": -1})
    add("torch.repeat_interleave", X, args=(2,))
    add(
        FN + "grid_sample",
        _x(1, 1, 3, 3),
        _x(1, 2, 2, 2, low=-1.0, high=1.0),
        kwargs={"align_corners": False},
    )
    add(FN + "gumbel_softmax", X, kwargs={"tau": 1.0})
    add("Tensor.zero_", X)
    # Random fills: in place, with no out-of-place method of the same meaning.
    for fill in "normal_ uniform_ random_ exponential_ cauchy_ log_normal_ geometric_".split():
        add(f"Tensor.{fill}", X, args=(0.5,) if fill == "geometric_" else ())
    add("Tensor.bernoulli_", X, args=(0.5,))
    add("Tensor.copy_", X, X)
    add("Tensor.detach_", X)
    add("Tensor.requires_grad_", _x(2, 3, kinds=(T0,)))

    # neural-network functions
    for attr in (
        "relu relu6 gelu silu elu selu celu leaky_relu hardtanh hardswish hardsigmoid mish "
        "softplus sigmoid tanh softsign tanhshrink hardshrink softshrink logsigmoid"
    ).split():
        add(FN + attr, X)
    add(FN + "rrelu", X, kwargs={"training": True})
    add(FN + "threshold", X, args=(0.5, 0.0))
    for attr in ("softmax", "log_softmax", "softmin"):
        add(FN + attr, X, kwargs={"dim": -1})
    add(FN + "glu", _x(2, 4), kwargs={"dim": -1})
    add(FN + "prelu", X, _x(1))
    add(FN + "dropout", X, kwargs={"training": True})
    add(FN + "dropout1d", _x(2, 3, 4), kwargs={"training": True})
    add(FN + "dropout2d", _x(2, 3, 4, 4), kwargs={"training": True})
    add(FN + "dropout3d", _x(2, 3, 2, 2, 2), kwargs={"training": True})
    add(FN + "alpha_dropout", X, kwargs={"training": True})
    add(FN + "feature_alpha_dropout", _x(2, 3, 4, 4), kwargs={"training": True})
    add("torch.dropout", X, args=(0.5, True))
    add(FN + "linear", X, _x(4, 3), _x(4), min_operands=2)
    add(FN + "bilinear", X, X, _x(4, 3, 3), _x(4), min_operands=3)
    add(FN + "conv1d", _x(1, 2, 5), _x(3, 2, 3), _x(3), min_operands=2)
    add(FN + "conv2d", _x(1, 2, 5, 5), _x(3, 2, 3, 3), _x(3), min_operands=2)
    add(FN + "conv3d", _x(1, 2, 4, 4, 4), _x(3, 2, 3, 3, 3), _x(3), min_operands=2)
    add(FN + "conv_transpose2d", _x(1, 2, 5, 5), _x(2, 3, 3, 3), _x(3), min_operands=2)
    add("torch.conv2d", _x(1, 2, 5, 5), _x(3, 2, 3, 3), _x(3), min_operands=2)
    add(
        FN + "batch_norm",
        _x(4, 3),
        ZEROS3,
        ONES3,
        _x(3),
        _x(3),
        kwargs={"training": True},
        min_operands=3,
    )
    add(FN + "instance_norm", _x(2, 3, 4), ZEROS3, ONES3, _x(3), _x(3), min_operands=1)
    add(
        FN + "layer_norm", X, _x(3), _x(3), call=lambda fn, x, *wb: fn(x, (3,), *wb), min_operands=1
    )
    add(
        "torch.layer_norm",
        X,
        _x(3),
        _x(3),
        call=lambda fn, x, *wb: fn(x, (3,), *wb),
        min_operands=1,
    )
    add(
        FN + "group_norm",
        _x(2, 4, 3),
        _x(4),
        _x(4),
        call=lambda fn, x, *wb: fn(x, 2, *wb),
        min_operands=1,
    )
    add(FN + "rms_norm", X, _x(3), call=lambda fn, x, *w: fn(x, (3,), *w), min_operands=1)
    add(FN + "embedding", _fixed(lambda: torch.tensor([[0, 2, 4], [1, 3, 0]])), _x(5, 4))
    add(FN + "max_pool1d", _x(1, 2, 6), args=(2,))
    add(FN + "max_pool2d", _x(1, 2, 4, 4), args=(2,))
    add("torch.max_pool2d", _x(1, 2, 4, 4), args=(2,))
    add(FN + "avg_pool1d", _x(1, 2, 6), args=(2,))
    add(FN + "avg_pool2d", _x(1, 2, 4, 4), args=(2,))
    add(FN + "adaptive_avg_pool2d", _x(1, 2, 4, 4), args=(2,))
    add(FN + "adaptive_max_pool2d", _x(1, 2, 4, 4), args=(2,))
    add(FN + "interpolate", _x(1, 2, 3, 3), kwargs={"scale_factor": 2})
    add(FN + "pad", X, args=((1, 1),))
    add(FN + "normalize", X, kwargs={"dim": 1})
    add(FN + "pixel_shuffle", _x(1, 4, 2, 2), args=(2,))
    add(FN + "unfold", _x(1, 2, 4, 4), args=(2,))
    add(FN + "cosine_similarity", X, X)
    add(FN + "pairwise_distance", X, X)
    add(FN + "scaled_dot_product_attention", _x(1, 2, 3, 4), _x(1, 2, 3, 4), _x(1, 2, 3, 4))
    add(FN + "cross_entropy", X, _long(0, 2))
    add(FN + "nll_loss", _x(2, 3, low=-2.0, high=-0.1), _long(0, 2))
    for attr in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss"):
        add(FN + attr, X, X)
    add(FN + "binary_cross_entropy", X, X)
    add(FN + "binary_cross_entropy_with_logits", X, X)
    add(FN + "kl_div", _x(2, 3, low=-2.0, high=-0.1), X)
    add(FN + "poisson_nll_loss", X, X)

    # integer and bool results, which never require grad ("differentiable": false)
    for attr in ("long", "int", "short", "char", "byte", "bool"):
        add(f"Tensor.{attr}", X)
    for attr in (
        "argmax argmin argsort nonzero count_nonzero isnan isinf isfinite isposinf isneginf "
        "signbit logical_not"
    ).split():
        both(attr, X)
    for attr in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
        both(attr, X, XS)
    for attr in ("eq", "ne", "lt", "le", "gt", "ge"):
        add(f"Tensor.__{attr}__", X, XS)
    both("bucketize", X, _fixed(lambda: torch.tensor([0.25, 0.5, 0.75], dtype=DTYPE)))
    return [s for s in specs if _exists(s.name)]


def _mod_specs() -> list[ModSpec]:
    specs: list[ModSpec] = []

    def add(name: str, make: Callable[..., nn.Module], *inputs: Operand, **kw: Any) -> None:
        specs.append(ModSpec(f"torch.nn.{name}", make, inputs or (X,), **kw))

    def simple(name: str, *args: Any, inputs: tuple[Operand, ...] = (X,)) -> None:
        cls = getattr(nn, name)
        add(name, lambda **kw: cls(*args, **kw), *inputs)

    target = Operand(kinds=(T0,))
    classes = _long(0, 2)
    # every module with an `inplace` argument (asserted in main)
    for name in (
        "ReLU ReLU6 LeakyReLU ELU SELU CELU SiLU Mish Hardtanh Hardswish Hardsigmoid RReLU "
        "Dropout AlphaDropout"
    ).split():
        simple(name)
    simple("Threshold", 0.5, 0.0)
    simple("Dropout1d", inputs=(_x(2, 3, 4),))
    simple("Dropout2d", inputs=(_x(2, 3, 4, 4),))
    simple("Dropout3d", inputs=(_x(2, 3, 2, 2, 2),))
    simple("FeatureAlphaDropout", inputs=(_x(2, 3, 4, 4),))
    # layers
    simple("Linear", 3, 4)
    simple("Bilinear", 3, 3, 4, inputs=(X, X))
    simple("Conv1d", 2, 3, 3, inputs=(_x(1, 2, 5),))
    simple("Conv2d", 2, 3, 3, inputs=(_x(1, 2, 5, 5),))
    simple("Conv3d", 2, 3, 3, inputs=(_x(1, 2, 4, 4, 4),))
    simple("ConvTranspose1d", 2, 3, 3, inputs=(_x(1, 2, 5),))
    simple("ConvTranspose2d", 2, 3, 3, inputs=(_x(1, 2, 5, 5),))
    simple("ConvTranspose3d", 2, 3, 3, inputs=(_x(1, 2, 4, 4, 4),))
    simple("BatchNorm1d", 3, inputs=(_x(4, 3),))
    simple("BatchNorm2d", 3, inputs=(_x(2, 3, 2, 2),))
    simple("BatchNorm3d", 3, inputs=(_x(2, 3, 2, 2, 2),))
    # lazy layers: their parameters take their shape at the first call
    simple("LazyLinear", 4)
    simple("LazyConv1d", 3, 3, inputs=(_x(1, 2, 5),))
    simple("LazyConv2d", 3, 3, inputs=(_x(1, 2, 5, 5),))
    simple("LazyConv3d", 3, 3, inputs=(_x(1, 2, 4, 4, 4),))
    simple("LazyConvTranspose1d", 3, 3, inputs=(_x(1, 2, 5),))
    simple("LazyConvTranspose2d", 3, 3, inputs=(_x(1, 2, 5, 5),))
    simple("LazyBatchNorm1d", inputs=(_x(4, 3),))
    simple("LazyBatchNorm2d", inputs=(_x(2, 3, 2, 2),))
    simple("LazyBatchNorm3d", inputs=(_x(2, 3, 2, 2, 2),))
    simple("LazyInstanceNorm1d", inputs=(_x(2, 3, 4),))
    simple("LazyInstanceNorm2d", inputs=(_x(2, 3, 4, 4),))
    simple("LazyInstanceNorm3d", inputs=(_x(2, 3, 2, 2, 2),))
    simple("LayerNorm", 3)
    simple("GroupNorm", 2, 4, inputs=(_x(2, 4, 3),))
    simple("InstanceNorm1d", 3, inputs=(_x(2, 3, 4),))
    simple("InstanceNorm2d", 3, inputs=(_x(2, 3, 4, 4),))
    simple("InstanceNorm3d", 3, inputs=(_x(2, 3, 2, 2, 2),))
    simple("RMSNorm", 3)
    simple("LocalResponseNorm", 2, inputs=(_x(1, 3, 4, 4),))
    simple("Embedding", 5, 4, inputs=(_fixed(lambda: torch.tensor([[0, 2, 4], [1, 3, 0]])),))
    simple("EmbeddingBag", 5, 4, inputs=(_fixed(lambda: torch.tensor([[0, 2, 4], [1, 3, 0]])),))
    for name in (
        "Sigmoid Tanh GELU Softplus Softsign Tanhshrink LogSigmoid Hardshrink Softshrink PReLU "
        "Identity"
    ).split():
        simple(name)
    for name in ("Softmax", "LogSoftmax", "Softmin"):
        cls = getattr(nn, name)
        add(name, lambda cls=cls, **kw: cls(dim=-1, **kw))
    simple("GLU", inputs=(_x(2, 4),))
    simple("MaxPool1d", 2, inputs=(_x(1, 2, 6),))
    simple("MaxPool2d", 2, inputs=(_x(1, 2, 4, 4),))
    simple("AvgPool1d", 2, inputs=(_x(1, 2, 6),))
    simple("AvgPool2d", 2, inputs=(_x(1, 2, 4, 4),))
    simple("AdaptiveAvgPool2d", 2, inputs=(_x(1, 2, 4, 4),))
    simple("AdaptiveMaxPool2d", 2, inputs=(_x(1, 2, 4, 4),))
    simple("Flatten", inputs=(_x(2, 3, 4),))
    simple("Unflatten", 1, (3, 1))
    add("Upsample", lambda **kw: nn.Upsample(scale_factor=2, **kw), _x(1, 2, 3, 3))
    simple("PixelShuffle", 2, inputs=(_x(1, 4, 2, 2),))
    simple("ZeroPad2d", 1, inputs=(_x(1, 2, 3, 3),))
    simple("ConstantPad1d", 1, 0.0)
    simple("ReflectionPad2d", 1, inputs=(_x(1, 2, 3, 3),))
    simple("CosineSimilarity", inputs=(X, X))
    simple("PairwiseDistance", inputs=(X, X))
    add(
        "MultiheadAttention",
        lambda **kw: nn.MultiheadAttention(4, 2, **kw),
        _x(3, 2, 4),
        call=lambda m, x: m(x, x, x),
    )
    add(
        "TransformerEncoderLayer",
        lambda **kw: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, **kw),
        _x(3, 2, 4),
    )
    for name in ("LSTM", "GRU", "RNN"):
        simple(name, 4, 5, inputs=(_x(3, 2, 4),))
    for name in ("LSTMCell", "GRUCell", "RNNCell"):
        simple(name, 4, 5, inputs=(_x(2, 4),))
    for name in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCEWithLogitsLoss", "BCELoss"):
        simple(name, inputs=(X, target))
    simple("KLDivLoss", inputs=(_x(2, 3, low=-2.0, high=-0.1), target))
    simple("CrossEntropyLoss", inputs=(X, classes))
    simple("NLLLoss", inputs=(_x(2, 3, low=-2.0, high=-0.1), classes))
    return specs


def _exists(name: str) -> bool:
    try:
        resolve(name)
    except AttributeError:
        return False
    return True


def resolve(name: str) -> Any:
    """The callable or class a qualified table name stands for."""
    if name.startswith("Tensor."):
        return getattr(torch.Tensor, name.removeprefix("Tensor."))
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _inplace_variant_spec(spec: OpSpec) -> OpSpec | None:
    """The spec of the in-place sibling (`add` -> `add_`, `__add__` -> `__iadd__`), if any."""
    prefix, _, attr = spec.name.rpartition(".")
    if attr.startswith("__"):
        if attr.startswith(("__r", "__i")):
            return None
        variant = f"{prefix}.__i{attr[2:]}"
    elif attr.endswith("_"):
        return None
    else:
        variant = f"{spec.name}_"
    if not _exists(variant):
        return None
    # an in-place op writes arg0, which therefore cannot be a Python number
    first = spec.operands[0]
    operands = (dataclasses.replace(first, kinds=tuple(k for k in first.kinds if k != S)),)
    return OpSpec(
        variant,
        operands + spec.operands[1:],
        spec.args,
        spec.kwargs,
        spec.call,
        spec.min_operands,
    )


def _build_op_specs() -> dict[str, OpSpec]:
    specs: dict[str, OpSpec] = {}
    for spec in _op_specs():
        specs.setdefault(spec.name, spec)
    for spec in list(specs.values()):
        variant = _inplace_variant_spec(spec)
        if variant is not None:
            specs.setdefault(variant.name, variant)
    return specs


OP_SPECS: dict[str, OpSpec] = _build_op_specs()
MOD_SPECS: dict[str, ModSpec] = {s.name: s for s in _mod_specs()}


# --------------------------------------------------------------------------- probing


def _value(operand: Operand, kind: str, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> Any:
    if kind == S:
        return operand.scalar
    if operand.make is not None:
        t = operand.make()
    else:
        t = torch.empty(operand.shape, dtype=dtype).uniform_(
            operand.low, operand.high, generator=gen
        )
    if kind == T1:
        t = t.requires_grad_().clone()  # a non-leaf, so in-place ops on it are allowed
    return t


def _flat_tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, tuple | list):
        return [t for item in obj for t in _flat_tensors(item)]
    return []


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _shares_version(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether b shares a's version counter (b is a, a view of a, or a detached alias of a)."""
    if a is b:
        return True
    before = b._version
    torch.autograd.graph.increment_version(a)
    return b._version != before


def _output_names(outputs: Sequence[torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    return [("output" if i == 0 else f"output{i}", t) for i, t in enumerate(outputs)]


def _classify(
    packed: Sequence[tuple[torch.Tensor, int]],
    inputs: Sequence[tuple[str, torch.Tensor]],
    versions: dict[str, int],
    outputs: Sequence[tuple[str, torch.Tensor]],
) -> list[str]:
    """Slots of the saved tensors; an input saved after the op wrote it is the output."""
    slots: set[str] = set()
    for saved, version in packed:
        ptr = _storage(saved)
        ins = [name for name, t in inputs if _storage(t) == ptr]
        outs = [name for name, t in outputs if _storage(t) == ptr]
        if ins and outs:
            slots.add(outs[0] if version > versions.get(ins[0], version) else ins[0])
        elif ins or outs:
            slots.add((ins or outs)[0])
    return sorted(slots)


@dataclass
class _Call:
    slots: list[str]
    inplace: bool  # arg0 / the first input was written
    view: bool  # the first output shares its version counter with arg0 / the first input
    grad_fn: str | None
    requires_grad: bool = False  # some output requires grad
    # The outputs are views of a multi-output node (split, chunk, unbind): torch refuses
    # in-place writes into them while grad is recorded.
    multi_output_view: bool = False
    tuple_output: bool = False  # returns a tuple or list of tensors (chunk, max(dim), ...)


def _run(
    call: Callable[[], Any],
    inputs: Sequence[tuple[str, torch.Tensor]],
    others: Sequence[tuple[str, torch.Tensor]] = (),
) -> _Call:
    versions = {name: t._version for name, t in inputs}
    packed: list[tuple[torch.Tensor, int]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append((t, t._version))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = call()
    outputs = _flat_tensors(result)
    slots = _classify(packed, [*inputs, *others], versions, _output_names(outputs))
    first_in = inputs[0][1] if inputs and inputs[0][0] in ("arg0", "input") else None
    inplace = first_in is not None and first_in._version != versions[inputs[0][0]]
    first_out = outputs[0] if outputs else (first_in if result is None else None)
    grad_fn = None
    if first_out is not None and first_out.grad_fn is not None:
        if not (first_out is first_in and not inplace):  # a returned input adds no node
            grad_fn = type(first_out.grad_fn).__name__
    view = bool(outputs) and first_in is not None and _shares_version(first_in, outputs[0])
    multi = view and outputs[0]._is_view() and _creation_meta(outputs[0]) == "MULTI_OUTPUT_NODE"
    many = isinstance(result, (tuple, list))
    return _Call(slots, inplace, view, grad_fn, any(t.requires_grad for t in outputs), multi, many)


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def layout_of_view(make: Callable[[torch.Tensor], Any], x: torch.Tensor) -> str | None:
    """How a view made by `make` lays out a contiguous `x`'s memory: "permutes" (its strides
    are the contiguous ones in another order: transpose), "broadcasts" (a zero stride:
    expand), "keeps" (every element, contiguous when the input is and not when it is not:
    view, unsqueeze), or None (a part of the tensor, whose layout depends on which part)."""
    out = _flat_tensors(make(x))[0]
    strides = out.stride()
    if 0 in strides and out.numel() > 1:
        return "broadcasts"
    if out.numel() != x.numel() or x.dim() < 2:
        return None  # a part of the tensor
    if sorted(strides) == sorted(x.stride()) and tuple(strides) != _contiguous_strides(out.shape):
        return "permutes"
    if not out.is_contiguous():
        return None
    order = list(reversed(range(x.dim())))
    strided = x.permute(*order).contiguous().permute(*order)  # x's values, other strides
    try:
        other = _flat_tensors(make(strided))[0]
    except RuntimeError:  # `view` of memory it cannot view: it needs the layout it keeps
        return "keeps"
    return "keeps" if not other.is_contiguous() else None


def _creation_meta(view: torch.Tensor) -> str:
    """How autograd made a view ("DEFAULT", "MULTI_OUTPUT_NODE", "NO_GRAD_MODE", ...)."""
    meta = torch._C._autograd._get_creation_meta(view)
    return str(meta).rsplit(".", 1)[-1]


def _accepts(fn: Any, keyword: str) -> bool:
    try:
        return keyword in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


def _position(parameters: Mapping[str, inspect.Parameter], name: str, skip: int = 0) -> int | None:
    """The index at which `name` may be passed positionally (`F.leaky_relu(x, 0.2, True)`,
    `nn.ReLU(True)`), after `skip` leading parameters (self); None when keyword-only."""
    positional = [
        p.name
        for p in parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ][skip:]
    return positional.index(name) if name in positional else None


def _signatures(spec: OpSpec) -> Iterator[tuple[str, ...]]:
    count = len(spec.operands)
    for n in range(count, (spec.min_operands or count) - 1, -1):
        for sig in itertools.product(*(o.kinds for o in spec.operands[:n])):
            if any(kind != S for kind in sig):
                yield sig


def _probe_signature(spec: OpSpec, fn: Any, sig: Sequence[str], extra: dict[str, Any]) -> _Call:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    values = [_value(o, kind, gen) for o, kind in zip(spec.operands, sig, strict=False)]
    tensors = [(f"arg{i}", v) for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    return _run(lambda: spec.invoke(fn, values, extra), tensors)


def _accepts_out(spec: OpSpec, fn: Any) -> bool:
    """Measured: the op writes a tensor passed as out= (operands not requiring grad)."""
    sig = [T0 if T0 in o.kinds else o.kinds[0] for o in spec.operands]
    gen = torch.Generator().manual_seed(0)
    values = [_value(o, kind, gen) for o, kind in zip(spec.operands, sig, strict=True)]
    try:
        with torch.no_grad():
            reference = _flat_tensors(spec.invoke(fn, values, {}))
            if not reference:
                return False
            buffers = [torch.empty_like(t) for t in reference]
            out = buffers[0] if len(buffers) == 1 else tuple(buffers)
            spec.invoke(fn, values, {"out": out})
    except (TypeError, RuntimeError):
        return False
    return any(b._version > 0 for b in buffers)


def _variants(name: str) -> tuple[str | None, str | None]:
    """(inplace_variant, outofplace_variant) among the probed ops."""
    prefix, _, attr = name.rpartition(".")
    inplace: str | None = None
    outofplace: str | None = None
    if attr.startswith("__") and attr.endswith("__"):
        inner = attr[2:-2]
        if inner.startswith("i") and f"{prefix}.__{inner[1:]}__" in OP_SPECS:
            outofplace = f"{prefix}.__{inner[1:]}__"
        elif f"{prefix}.__i{inner}__" in OP_SPECS:
            inplace = f"{prefix}.__i{inner}__"
    elif attr.endswith("_"):
        if name[:-1] in OP_SPECS:
            outofplace = name[:-1]
    elif f"{name}_" in OP_SPECS:
        inplace = f"{name}_"
    return inplace, outofplace


NOTES: list[str] = []  # measured oddities printed by main (not part of the table)


def probe_op(name: str) -> Entry:
    """The table entry of one op of OP_SPECS, measured on the installed torch."""
    spec = OP_SPECS[name]
    fn = resolve(name)
    inplace_kwarg = _accepts(fn, "inplace")
    modes: list[tuple[str, dict[str, Any]]] = [("", {})]
    if inplace_kwarg:
        modes.append((";inplace", {"inplace": True}))
    saves: dict[str, list[str]] = {}
    inplace = view = multi_output_view = tuple_output = False
    differentiable = False  # some probe gave an output that requires grad
    grad_fn: str | None = None
    errors: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for suffix, extra in modes:
            writes = False
            for sig in _signatures(spec):
                try:
                    result = _probe_signature(spec, fn, sig, extra)
                except Exception as exc:  # a signature torch rejects (e.g. "S,T1" for add)
                    errors.append(f"{','.join(sig)}{suffix}: {type(exc).__name__}: {exc}")
                    continue
                saves[",".join(sig) + suffix] = result.slots
                writes |= result.inplace
                if not suffix:
                    inplace |= result.inplace
                    view |= result.view
                    multi_output_view |= result.multi_output_view
                    tuple_output |= result.tuple_output
                    grad_fn = grad_fn or result.grad_fn
                    differentiable |= result.requires_grad
            if suffix and not writes:
                NOTES.append(f"{name}: inplace=True did not write arg0")
        out_kwarg = _accepts_out(spec, fn)
    if not any(";" not in sig for sig in saves):
        raise ProbeError("; ".join(errors[:3]))
    inplace_variant, outofplace_variant = _variants(name)
    entry: Entry = {
        "saves": saves,
        "view": view,
        "inplace": inplace,
        "inplace_kwarg": inplace_kwarg,
        "out_kwarg": out_kwarg,
        "inplace_variant": inplace_variant,
        "outofplace_variant": outofplace_variant,
        "grad_fn": grad_fn,
    }
    if inplace_kwarg:
        entry["inplace_position"] = _position(inspect.signature(fn).parameters, "inplace")
    if not differentiable and not inplace:
        entry["differentiable"] = False  # integer or bool results: never require grad
    if multi_output_view:
        entry["multi_output_view"] = True
    if tuple_output:
        entry["tuple_output"] = True
    if view and not inplace:
        layout = _view_layout(spec, fn)
        if layout is not None:
            entry["layout"] = layout
    return entry


def _view_layout(spec: OpSpec, fn: Any) -> str | None:
    sig = [T0 if T0 in o.kinds else o.kinds[0] for o in spec.operands]
    gen = torch.Generator().manual_seed(0)
    values = [_value(o, kind, gen) for o, kind in zip(spec.operands, sig, strict=True)]
    if not values or not isinstance(values[0], torch.Tensor):
        return None
    return layout_of_view(lambda t: spec.invoke(fn, [t, *values[1:]], {}), values[0])


def _module_call(
    spec: ModSpec, module: nn.Module, kind: str, dtype: torch.dtype = DTYPE
) -> tuple[Callable[[], Any], list[tuple[str, torch.Tensor]]]:
    gen = torch.Generator().manual_seed(0)
    values = [_value(o, kind if kind in o.kinds else o.kinds[0], gen, dtype) for o in spec.inputs]
    named = [("input" if i == 0 else f"input{i}", v) for i, v in enumerate(values)]
    if spec.call is not None:
        return (lambda: spec.call(module, *values)), named  # type: ignore[misc]
    return (lambda: module(*values)), named


def _make_module(
    spec: ModSpec, kwargs: dict[str, Any], train: bool, dtype: torch.dtype = DTYPE
) -> nn.Module:
    torch.manual_seed(0)
    module = spec.make(**kwargs).to(dtype)
    module.train(train)
    return module


def state_of(module: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """A module's parameters and buffers, named as slots."""
    state = [(f"param:{n}", p) for n, p in module.named_parameters()]
    return state + [(f"buffer:{n}", b) for n, b in module.named_buffers()]


def probe_module(name: str) -> Entry:
    """The table entry of one module of MOD_SPECS (train mode, parameters requiring grad, and
    frozen). What it saves is what any of MODULE_DTYPES saves: the dtype picks the kernel
    (nn.LSTM in float32, torch's default, runs mkldnn's layer, which keeps its output; in
    float64 it does not)."""
    spec = MOD_SPECS[name]
    init = inspect.signature(resolve(name).__init__).parameters
    inplace_kwarg = "inplace" in init
    modes: list[tuple[str, dict[str, Any]]] = [("", {})]
    if inplace_kwarg:
        modes.append((";inplace", {"inplace": True}))
    kinds = [k for k in (T1, T0) if k in spec.inputs[0].kinds]
    saves: dict[str, list[str]] = {}
    view = False
    grad_fn: str | None = None
    params: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for suffix, kwargs in modes:
            for kind, dtype in itertools.product(kinds, MODULE_DTYPES):
                module = _make_module(spec, kwargs, train=True, dtype=dtype)
                params = [n for n, _ in module.named_parameters()]
                call, inputs = _module_call(spec, module, kind, dtype)
                result = _run(call, inputs, state_of(module))
                key = "input_grad" if kind == T1 else "input_nograd"
                saves[key + suffix] = _union(saves.get(key + suffix), result.slots)
                if not suffix:
                    view |= result.view
                    grad_fn = grad_fn or result.grad_fn
                module = _make_module(spec, kwargs, train=True, dtype=dtype)
                lazy = any(nn.parameter.is_lazy(p) for p in module.parameters())
                if kind == T1 and params and not lazy:
                    # Frozen (`requires_grad_(False)`): only what the input's gradient needs
                    # (a frozen nn.Linear keeps its weight, not its input).
                    module.requires_grad_(False)
                    call, inputs = _module_call(spec, module, kind, dtype)
                    frozen = _run(call, inputs, state_of(module)).slots
                    saves["input_frozen" + suffix] = _union(
                        saves.get("input_frozen" + suffix), frozen
                    )
        module = _make_module(spec, {}, train=False)
        call, inputs = _module_call(spec, module, kinds[0])
        returned = call()
        outputs = _flat_tensors(returned)
        eval_alias = bool(outputs) and _shares_version(inputs[0][1], outputs[0])
    entry: Entry = {
        "saves": saves,
        "params": params,
        "inplace_kwarg": inplace_kwarg,
        "inplace_default": bool(init["inplace"].default) if inplace_kwarg else False,
        "view": view,
        "eval_alias": eval_alias,
        "grad_fn": grad_fn,
    }
    if inplace_kwarg:
        entry["inplace_position"] = _position(init, "inplace", skip=1)
    if isinstance(returned, (tuple, list)):
        entry["outputs"] = _structure(returned)  # nn.LSTM: ["T", ["T", "T"]]
    return entry


def _union(known: list[str] | None, slots: list[str]) -> list[str]:
    return sorted({*(known or ()), *slots})


def _structure(value: Any) -> Any:
    """What a module returns, as nested lists: "T" a tensor, None anything else."""
    if isinstance(value, torch.Tensor):
        return "T"
    if isinstance(value, (tuple, list)):
        return [_structure(v) for v in value]
    return None


# --------------------------------------------------------------------------- tensor facts

# What to probe (the facts come from the runs below): factories, each with argument sets that
# differ in their data (a dtype is recorded only where every set gives the same one).
_LIKE = ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like")
FACTORIES: dict[str, tuple[Callable[[torch.Tensor], tuple[Any, ...]], ...]] = {
    **{n: ((lambda x: (2, 3)), (lambda x: ((4,),))) for n in "zeros ones empty rand randn".split()},
    "full": ((lambda x: ((2, 3), 1.5)), (lambda x: ((2, 3), 1))),
    "randint": ((lambda x: (0, 5, (2, 3))),),
    "randperm": ((lambda x: (4,)),),
    "tensor": ((lambda x: ([1.0, 2.0],)), (lambda x: ([1, 2],)), (lambda x: (x,))),
    "as_tensor": ((lambda x: ([1.0, 2.0],)), (lambda x: ([1, 2],)), (lambda x: (x,))),
    "arange": ((lambda x: (4,)), (lambda x: (0.0, 1.0, 0.25))),
    "linspace": ((lambda x: (0, 1, 4)), (lambda x: (0.0, 1.0, 4))),
    "logspace": ((lambda x: (0, 1, 4)), (lambda x: (0.0, 1.0, 4))),
    "eye": ((lambda x: (3,)),),
    **{n: ((lambda x: (x,)),) for n in _LIKE},
    "full_like": ((lambda x: (x, 1.5)),),
    "randint_like": ((lambda x: (x, 5)),),
    "tril_indices": ((lambda x: (3, 3)),),
    "triu_indices": ((lambda x: (3, 3)),),
    "bernoulli": ((lambda x: (x.sigmoid(),)),),
    "multinomial": ((lambda x: (x.sigmoid().reshape(-1), 2)),),
    "normal": ((lambda x: (x, x.abs() + 0.1)),),
    "poisson": ((lambda x: (x.abs(),)),),
    "frombuffer": ((lambda x: (bytearray(8), {"dtype": torch.float32})),),
}
# `torch.from_numpy(a)` is `torch.frombuffer` for an ndarray instead of a buffer: probed as that,
# so the table does not depend on numpy being installed.
_FACTORY_LIKE = {"from_numpy": "frombuffer"}
NEW_METHODS = "new_empty new_zeros new_ones new_full new_tensor".split()
# Methods that return the tensor itself when nothing has to change, and a copy otherwise:
# (the tensor it is called on when nothing changes, the one when something does, the call).
_F32, _F64 = torch.float32, torch.float64


def _x32() -> torch.Tensor:
    return torch.randn(2, 3)


def _x64() -> torch.Tensor:
    return torch.randn(2, 3, dtype=_F64)


CONVERSIONS: dict[str, tuple[Callable[[], torch.Tensor], Callable[[], torch.Tensor], Any]] = {
    "float": (_x32, _x64, None),
    "double": (_x64, _x32, None),
    "half": (lambda: _x32().half(), _x32, None),
    "bfloat16": (lambda: _x32().bfloat16(), _x32, None),
    "to": (_x32, _x64, lambda t: t.to(_F32)),
    "type": (_x32, _x64, lambda t: t.type(_F32)),
    "type_as": (_x32, _x64, lambda t: t.type_as(torch.zeros(1))),
    # `.cpu()` is `.to("cpu")`; its copy side is probed as `.to()` to another device (meta),
    # the one every machine has.
    "cpu": (_x32, _x32, None),
    "contiguous": (_x32, lambda: torch.randn(3, 2).t(), None),
    "reshape": (_x32, lambda: torch.randn(3, 2).t(), lambda t: t.reshape(-1)),
    "flatten": (_x32, lambda: torch.randn(3, 2).t(), None),
}
# `.cuda()` is `.to("cuda")`: probed through `.to(device)` (`cpu` here), which needs no GPU.
_DEVICE_LIKE = {"cuda": "cpu"}


def _conversion_kind(name: str) -> str:
    """What decides between the tensor itself and a copy: "dtype", "device" or "layout"."""
    if name in ("contiguous", "reshape", "flatten"):
        return "layout"
    return "device" if name in ("cpu", "cuda") else "dtype"


def _result_kind(result: Any, inputs: Sequence[torch.Tensor]) -> str | None:
    """ "fresh" (a tensor outside every graph, in its own memory), "alias" (the input's
    memory), or None (anything else: it is an op, not a factory)."""
    if not isinstance(result, torch.Tensor):
        return None
    if any(_storage(result) == _storage(t) for t in inputs if t.numel()):
        return "alias"
    if result.requires_grad or result.grad_fn is not None:
        return None
    return "fresh"


def probe_tensor_facts() -> Entry:
    """Facts about tensors that are not an op's saves: which functions create tensors, which
    methods and attributes give Python values or views, which conversions may return the
    tensor itself, which dtypes are floating, and which functions are activations."""
    facts: Entry = {}
    factories: Entry = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, arg_sets in sorted(FACTORIES.items()):
            fn = getattr(torch, name, None)
            if fn is None:
                continue
            kinds: set[str | None] = set()
            dtypes: set[str] = set()
            for make in arg_sets:
                x = torch.randn(2, 3, requires_grad=True)
                args = make(x)
                kwargs = args[-1] if args and isinstance(args[-1], dict) else {}
                result = fn(*args[: len(args) - bool(kwargs)], **kwargs)
                kinds.add(_result_kind(result, [a for a in args if isinstance(a, torch.Tensor)]))
                if isinstance(result, torch.Tensor) and "dtype" not in kwargs:
                    dtypes.add(str(result.dtype).removeprefix("torch."))
            if None in kinds:
                continue  # it builds a graph (torch.normal of a mean that requires grad)
            entry: Entry = {"result": "alias_of_tensor" if "alias" in kinds else "fresh"}
            like = any(isinstance(a, torch.Tensor) for a in arg_sets[0](torch.randn(1)))
            (dtype, *others) = sorted(dtypes) or [""]
            if dtype and not others and not like and getattr(torch, dtype).is_floating_point:
                entry["dtype"] = dtype  # the same whatever the data: the factory's own
            factories[f"torch.{name}"] = entry
        for name, probed_as in _FACTORY_LIKE.items():
            if hasattr(torch, name) and f"torch.{probed_as}" in factories:
                factories[f"torch.{name}"] = {"result": "fresh"}  # of the array's dtype
        for name in NEW_METHODS:
            x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
            result = getattr(x, name)(
                [1.0] if name == "new_tensor" else (2,), *((1.0,) if name == "new_full" else ())
            )
            if _result_kind(result, [x]) == "fresh" and result.dtype == x.dtype:
                factories[f"Tensor.{name}"] = {"result": "fresh"}  # of the tensor's dtype
    facts["factories"] = factories
    facts["python_methods"] = _python_methods()
    facts["python_attrs"], facts["view_attrs"] = _attributes()
    conversions: Entry = {}
    for name, (same, changed, call) in sorted(CONVERSIONS.items()):
        run = call or (lambda t, name=name: getattr(t, name)())
        x, y = same(), changed()
        itself, other = run(x), (y.to("meta") if name == "cpu" else run(y))
        if _shares_version(x, itself) and not (
            other.device == y.device and _storage(other) == _storage(y)
        ):
            conversion: Entry = {
                "copies_unless_same": _conversion_kind(name),
                "same": "itself" if itself is x else "view",  # `contiguous()` / `reshape()`
            }
            if name in ("float", "double", "half", "bfloat16"):
                conversion["dtype"] = str(itself.dtype).removeprefix("torch.")
            conversions[f"Tensor.{name}"] = conversion
    for name, probed_as in _DEVICE_LIKE.items():
        if hasattr(torch.Tensor, name) and f"Tensor.{probed_as}" in conversions:
            conversions[f"Tensor.{name}"] = conversions[f"Tensor.{probed_as}"]
    facts["conversions"] = conversions
    # `torch.float` is float32, `torch.half` float16: the floating dtypes by every name.
    facts["floating_dtypes"] = {
        attr: str(dtype).removeprefix("torch.")
        for attr in sorted(dir(torch))
        if not attr.startswith("_")
        and isinstance(dtype := getattr(torch, attr), torch.dtype)
        and dtype.is_floating_point
        and dtype.itemsize >= 2
        and "float8" not in str(dtype)
    }
    facts["activations"] = activation_functions()
    facts["grad_modes"] = grad_mode_contexts()
    facts["kernels"] = kernel_registrations()
    # The legacy tensor types by their dtype (`torch.LongTensor`: int64), as annotations
    # name them.
    facts["tensor_types"] = {
        attr: str(dtype).removeprefix("torch.")
        for attr in sorted(dir(torch))
        if attr.endswith("Tensor")
        and attr != "Tensor"
        and isinstance(dtype := getattr(getattr(torch, attr), "dtype", None), torch.dtype)
    }
    facts["autograd_function"] = sorted(
        f"{module.__name__}.{attr}"
        for module in (torch.autograd, torch.autograd.function)
        for attr in dir(module)
        if getattr(module, attr) is torch.autograd.Function
    )
    return facts


_KERNEL_IDS = itertools.count()  # each probe registers an op of its own name


def kernel_registrations() -> dict[str, int]:
    """Functions that register a Python function as an operator's kernel, by the position of
    that function: its body runs below autograd (grad mode off inside), measured by
    registering one that records the mode and calling the op on a tensor that requires grad.
    Used as a decorator (`@torch.library.custom_op(name, mutates_args=())`), it is the same."""
    found: dict[str, int] = {}
    seen: list[bool] = []

    def kernel(x: torch.Tensor) -> torch.Tensor:
        seen.append(torch.is_grad_enabled())
        return x.clone()

    register = torch.library.custom_op
    position = list(inspect.signature(register).parameters).index("fn")
    op = register(f"inplace_lsp_probe::kernel{next(_KERNEL_IDS)}", kernel, mutates_args=())
    op(torch.randn(2, requires_grad=True))
    if seen == [False]:
        found["torch.library.custom_op"] = position
    return found


def grad_mode_contexts() -> dict[str, str]:
    """torch's grad-mode context managers (the public names of torch, torch.autograd and
    torch.autograd.grad_mode), by what entering one does, measured from grad mode on and
    from off: "off" (no_grad), "inference" (inference_mode), "on" (enable_grad), or
    "argument" (set_grad_enabled(flag): as its first argument says)."""
    from torch.utils._contextlib import _DecoratorContextManager

    def entered(make: Callable[[], Any]) -> list[tuple[bool, bool]] | None:
        modes = []
        for outer in (True, False):
            with torch.set_grad_enabled(outer):
                try:
                    context = make()
                except TypeError:  # it needs an argument
                    return None
                if not hasattr(context, "__enter__"):
                    return None
                with context:
                    modes.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        return modes

    found: dict[str, str] = {}
    for module in (torch, torch.autograd, torch.autograd.grad_mode):
        for attr in dir(module):
            obj = getattr(module, attr)
            if attr.startswith("_") or not (
                isinstance(obj, type) and issubclass(obj, _DecoratorContextManager)
            ):
                continue
            plain = entered(obj)
            kind = {
                ((False, True), (False, True)): "inference",
                ((False, False), (False, False)): "off",
                ((True, False), (True, False)): "on",
            }.get(tuple(plain) if plain else ())  # type: ignore[arg-type]
            if plain is None:
                off, on = entered(lambda obj=obj: obj(False)), entered(lambda obj=obj: obj(True))
                if off == [(False, False)] * 2 and on == [(True, False)] * 2:
                    kind = "argument"
            if kind is not None:
                found[f"{module.__name__}.{attr}"] = kind
    return dict(sorted(found.items()))


_NOT_CALLED = frozenset(
    "backward register_hook register_post_accumulate_grad_hook share_memory pin_memory cuda "
    "numpy retain_grad apply map record_stream".split()
)


def _python_methods() -> list[str]:
    """Tensor methods that, called with no argument (on a 2x3 and on a one-element float
    tensor), return a Python value (a number, a bool, a str, a list, torch.Size), not a
    tensor. Methods that write (`..._`) or have effects beyond the call are not called."""
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(dir(torch.Tensor)):
            if name != "__len__" and (name.startswith("_") or name.endswith("_")):
                continue
            method = getattr(torch.Tensor, name, None)
            if not callable(method) or name in _NOT_CALLED:
                continue
            results = []
            for x in (torch.randn(2, 3), torch.randn(1)):
                try:
                    results.append(method(x))
                except Exception:  # needs arguments, or a shape this probe lacks
                    continue
            if results and not any(_flat_tensors(r) for r in results):
                found.append(name)
    return found


def _attributes() -> tuple[list[str], dict[str, str | None]]:
    """Tensor attributes (not methods) that hold a Python value (`shape`, `dtype`), and those
    that are views of the tensor (`T`, `mT`, `real`): the same version counter. Probed on a
    real and a complex 2x3 tensor; `grad` and `data` are tensors of their own, not listed."""
    python: set[str] = set()
    views: dict[str, str | None] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(dir(torch.Tensor)):
            if name.startswith("_") or name in ("grad", "data"):
                continue
            if callable(getattr(torch.Tensor, name, None)):
                continue
            for x in (torch.randn(2, 3), torch.randn(2, 3, dtype=torch.complex64)):
                try:
                    value = getattr(x, name)
                except Exception:
                    continue
                if isinstance(value, torch.Tensor):
                    if _shares_version(x, value) and value is not x:
                        views[name] = layout_of_view(operator.attrgetter(name), x)
                elif value is not None and not callable(value):
                    python.add(name)
    return sorted(python - set(views)), dict(sorted(views.items()))


def activation_functions() -> list[str]:
    """The torch.nn.functional functions that torch.nn.modules.activation has a module for
    (`relu` for ReLU, `leaky_relu` for LeakyReLU), taken as activations: elementwise."""
    import torch.nn.modules.activation as activation

    classes = {
        name.lower()
        for name, obj in vars(activation).items()
        if inspect.isclass(obj)
        and issubclass(obj, nn.Module)
        and obj.__module__ == activation.__name__
    }
    return sorted(
        attr
        for attr in dir(F)
        if not attr.startswith("_")
        and callable(getattr(F, attr))
        and attr.replace("_", "") in {c.replace("_", "") for c in classes}
    )


# --------------------------------------------------------------------------- coverage


def modules_with_inplace() -> list[str]:
    """Every torch.nn module class whose constructor takes `inplace`."""
    found = []
    for attr in dir(nn):
        obj = getattr(nn, attr)
        if inspect.isclass(obj) and issubclass(obj, nn.Module):
            if _accepts(obj.__init__, "inplace"):
                found.append(f"torch.nn.{attr}")
    return sorted(found)


def functions_with_inplace() -> list[str]:
    """Every public torch.nn.functional function that takes `inplace`."""
    return sorted(
        FN + attr
        for attr in dir(F)
        if not attr.startswith("_") and callable(getattr(F, attr))
        if _accepts(getattr(F, attr), "inplace")
    )


def build_table() -> tuple[dict[str, Any], list[str]]:
    """The whole table and the notes of what was skipped."""
    skipped: list[str] = []
    ops: dict[str, Entry] = {}
    modules: dict[str, Entry] = {}
    for name in sorted(OP_SPECS):
        try:
            ops[name] = probe_op(name)
        except Exception as exc:
            skipped.append(f"op {name}: {type(exc).__name__}: {exc}")
    for name in sorted(MOD_SPECS):
        try:
            modules[name] = probe_module(name)
        except Exception as exc:
            skipped.append(f"module {name}: {type(exc).__name__}: {exc}")
    missing = [n for n in modules_with_inplace() if n not in modules]
    missing += [n for n in functions_with_inplace() if n not in ops]
    if missing:
        raise SystemExit(f"not covered (an `inplace` argument): {', '.join(missing)}")
    table = {"torch_version": torch.__version__, "ops": ops, "modules": modules}
    table["tensor"] = probe_tensor_facts()
    return table, skipped


def render(table: dict[str, Any]) -> str:
    return json.dumps(table, sort_keys=True, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT_PATH)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    table, skipped = build_table()
    text = render(table)
    print(f"torch {torch.__version__}: {len(table['ops'])} ops, {len(table['modules'])} modules")
    print(f"skipped {len(skipped)}")
    for line in skipped + NOTES:
        print(f"  {line}")
    if args.check:
        current = args.output.read_text("utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, "utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
