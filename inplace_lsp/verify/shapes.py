"""What a module's `forward` must be fed: the shapes its parameters take, from the first layer
that consumes each (through the transposes, views and indexing between), as candidate input
specs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from inplace_lsp.analysis.constants import NotConstant, evaluate
from inplace_lsp.analysis.model import ClassInfo, looks_like_module
from inplace_lsp.verify import walk
from inplace_lsp.verify.construct import (
    SUPER,
    ClassCtx,
    InitScope,
    InitTensor,
    LayerRef,
    class_ctx,
    evaluate_args,
    signature_args,
)
from inplace_lsp.verify.spec import BATCH, SEQ, SPATIAL, Spec, randint, randn

# Layers that keep the shape class of their input (any rank works): tracking goes through them.
_PASS_THROUGH = frozenset(
    (
        "ReLU ReLU6 GELU SiLU Sigmoid Tanh ELU CELU SELU LeakyReLU PReLU RReLU Softmax LogSoftmax "
        "Softmin Softplus Softsign Mish Hardswish Hardsigmoid Hardtanh Threshold Tanhshrink "
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout Identity Flatten "
        "Upsample UpsamplingNearest2d UpsamplingBilinear2d MaxPool1d MaxPool2d MaxPool3d "
        "AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
        "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d ZeroPad1d ZeroPad2d "
        "ReflectionPad1d ReflectionPad2d ReplicationPad1d ReplicationPad2d ConstantPad1d "
        "ConstantPad2d LocalResponseNorm ChannelShuffle"
    ).split()
)
# Methods and functions that keep the tensor's shape (or only reshape it: flatten/view).
_KEEP_METHODS = frozenset(
    (
        "float half double bfloat16 contiguous clone detach to cuda cpu type type_as relu sigmoid "
        "tanh exp abs neg mul add sub div pow sqrt clamp masked_fill softmax log_softmax "
        "requires_grad_ flatten view reshape squeeze"
    ).split()
)
_KEEP_FUNCTIONS = frozenset(
    (
        "relu relu6 gelu silu sigmoid tanh elu leaky_relu hardswish mish softplus softmax "
        "log_softmax dropout dropout1d dropout2d normalize exp abs neg clamp flatten reshape "
        "squeeze max_pool1d max_pool2d avg_pool1d avg_pool2d adaptive_avg_pool2d interpolate pad "
        "mul add sub div"
    ).split()
)
_OPAQUE = frozenset({"flatten", "view", "reshape", "squeeze"})
_TORCH_PREFIXES = ("torch.", "torch.nn.functional.")


# ("transpose", a, b) | ("permute", dims) | ("unsqueeze", d) | ("index", ops) | ("opaque",)
Transform = tuple[Any, ...]


class _Found(Exception):
    """Control flow: the first consumer of the tracked tensor was found."""

    def __init__(self, candidates: list[Spec]) -> None:
        super().__init__("found")
        self.candidates = candidates


class NoShape(Exception):
    """The first consumer is known, but what it expects is not; the message says why."""


PASS = "pass"


def _invert(shape: list[int], transforms: Sequence[Transform]) -> list[int] | None:
    """The shape before ``transforms`` of a tensor that has ``shape`` after them."""
    shape = list(shape)
    for transform in reversed(transforms):
        kind = transform[0]
        rank = len(shape)
        if kind == "transpose":
            a, b = (d % rank for d in transform[1:3])
            shape[a], shape[b] = shape[b], shape[a]
        elif kind == "permute":
            dims = [d % rank for d in transform[1]]
            if sorted(dims) != list(range(rank)):
                return None
            permuted = [0] * rank
            for new_index, old_index in enumerate(dims):
                permuted[old_index] = shape[new_index]
            shape = permuted
        elif kind == "unsqueeze":
            d = transform[1] % rank
            del shape[d]
        elif kind == "index":
            original: list[int] = []
            i = 0
            for op in transform[1]:
                if op == "keep":
                    if i >= rank:
                        return None
                    original.append(shape[i])
                    i += 1
                elif op == "new":
                    i += 1
                else:  # an integer index removed this dimension
                    original.append(max(SEQ, op + 1) if op >= 0 else SEQ)
            shape = original + shape[i:]
        elif kind == "opaque":
            continue
    return shape


def _with_transforms(candidates: list[Spec], transforms: Sequence[Transform]) -> list[Spec]:
    if not transforms:
        return candidates
    result: list[Spec] = []
    for spec in candidates:
        if "tensor" not in spec:
            result.append(spec)
            continue
        try:
            shape = _invert(spec["shape"], transforms)
        except (IndexError, ZeroDivisionError):
            shape = None
        if shape is not None:
            result.append({**spec, "shape": shape})
    return result


_LAYER_PARAMS: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features", "bias"),
    "Bilinear": ("in1_features", "in2_features", "out_features"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "EmbeddingBag": ("num_embeddings", "embedding_dim"),
    "RNN": ("input_size", "hidden_size", "num_layers"),
    "LSTM": ("input_size", "hidden_size", "num_layers", "bias", "batch_first"),
    "GRU": ("input_size", "hidden_size", "num_layers", "bias", "batch_first"),
    "RNNCell": ("input_size", "hidden_size"),
    "LSTMCell": ("input_size", "hidden_size"),
    "GRUCell": ("input_size", "hidden_size"),
    "LayerNorm": ("normalized_shape", "eps"),
    "RMSNorm": ("normalized_shape", "eps"),
    "GroupNorm": ("num_groups", "num_channels"),
    "MultiheadAttention": (
        "embed_dim",
        "num_heads",
        "dropout",
        "bias",
        "add_bias_kv",
        "add_zero_attn",
        "kdim",
        "vdim",
        "batch_first",
    ),
    "TransformerEncoder": ("encoder_layer", "num_layers", "norm"),
    "TransformerDecoder": ("decoder_layer", "num_layers", "norm"),
    "Transformer": (
        "d_model",
        "nhead",
        "num_encoder_layers",
        "num_decoder_layers",
        "dim_feedforward",
        "dropout",
        "activation",
        "custom_encoder",
        "custom_decoder",
        "layer_norm_eps",
        "batch_first",
    ),
}
for _layer in ("TransformerEncoderLayer", "TransformerDecoderLayer"):  # the same signature
    _LAYER_PARAMS[_layer] = (
        "d_model",
        "nhead",
        "dim_feedforward",
        "dropout",
        "activation",
        "layer_norm_eps",
        "batch_first",
        "norm_first",
    )
for _rank in (1, 2, 3):
    for _conv in (f"Conv{_rank}d", f"ConvTranspose{_rank}d"):
        _LAYER_PARAMS[_conv] = ("in_channels", "out_channels", "kernel_size", "stride", "padding")
    for _norm in (f"BatchNorm{_rank}d", f"InstanceNorm{_rank}d"):
        _LAYER_PARAMS[_norm] = ("num_features", "eps", "momentum")
_LAYER_PARAMS["SyncBatchNorm"] = ("num_features",)
_TRANSFORMER_DEFAULTS = {"Transformer": 512}


def _layer_args(ref: LayerRef) -> dict[str, Any]:
    names = _LAYER_PARAMS.get(ref.kind, ())
    args, kwargs = evaluate_args(ref.call, ref.scope)
    bound: dict[str, Any] = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    return bound


def _int_arg(ref: LayerRef, bound: Mapping[str, Any], name: str) -> int:
    value = bound.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, NotConstant):
            raise NoShape(f"{ref.kind}'s {name} in `{ref.text()}`: {value}")
        if value is None and ref.kind == "Transformer" and name == "d_model":
            return _TRANSFORMER_DEFAULTS["Transformer"]
        raise NoShape(f"{ref.kind}'s {name} in `{ref.text()}` is not a constant")
    return value


def _seq_shape(rank: int | None, feature: int, batch_first: bool = True) -> list[list[int]]:
    """Shapes for a layer that reads the last dimension: (B, F), (B, T, F), honouring a rank."""
    if rank is not None and rank >= 1:
        return [[BATCH, *([SEQ] * (rank - 2)), feature] if rank >= 2 else [feature]]
    return [[BATCH, feature], [BATCH, SEQ, feature]]


def _float_inputs(shapes: list[list[int]]) -> list[Spec]:
    return [randn(*shape) for shape in shapes]


class Finder:
    """Finds how a module's ``forward`` (or a helper method) consumes one of its parameters."""

    def __init__(self, ctx: ClassCtx, depth: int = 0) -> None:
        self.ctx = ctx
        self.depth = depth

    # -------------------------------------------------------------- layer needs
    def layer_need(self, ref: Any, index: int, keyword: str | None, rank: int | None) -> Any:
        """Candidates for input ``index`` (or ``keyword``) of a layer; PASS for shape-keeping
        layers. Raises NoShape when the layer is known but its input is not."""
        if isinstance(ref, NotConstant):
            raise NoShape(str(ref))
        if not isinstance(ref, LayerRef):
            raise NoShape(f"{type(ref).__name__} is not a module")
        kind = ref.kind
        if kind in _PASS_THROUGH:
            return PASS
        if kind == "Sequential":
            return self.sequential_need(ref, rank)
        local = self.ctx.model.lookup_class(ref.qual or "") if ref.qual else None
        if local is not None and looks_like_module(local):
            return self.local_need(ref, local, index, keyword)
        if kind.startswith("Lazy"):
            shapes: dict[str, list[int]] = {
                "LazyLinear": [BATCH, 16],
                "LazyConv1d": [BATCH, 3, SPATIAL[1][0]],
                "LazyConv2d": [BATCH, 3, SPATIAL[2][0], SPATIAL[2][0]],
                "LazyConv3d": [BATCH, 3, *[SPATIAL[3][0]] * 3],
                "LazyBatchNorm1d": [BATCH, 16],
                "LazyBatchNorm2d": [BATCH, 3, 16, 16],
            }
            if kind in shapes:
                return [randn(*shapes[kind])]
        if kind.startswith("torchvision.models"):
            return [randn(BATCH, 3, size, size) for size in (64, 224)]
        bound = _layer_args(ref)
        if kind in ("Linear",):
            return _float_inputs(_seq_shape(rank, _int_arg(ref, bound, "in_features")))
        if kind == "Bilinear":
            name = "in2_features" if index == 1 or keyword == "input2" else "in1_features"
            return _float_inputs(_seq_shape(rank, _int_arg(ref, bound, name)))
        if kind in ("Embedding", "EmbeddingBag"):
            high = _int_arg(ref, bound, "num_embeddings")
            if rank == 1:
                return [randint(high, SEQ)]
            return [randint(high, BATCH, SEQ)]
        if kind in ("RNN", "LSTM", "GRU"):
            if index > 0 or keyword == "hx":
                raise NoShape(f"the hidden state of `{ref.text()}`")
            size = _int_arg(ref, bound, "input_size")
            if bound.get("batch_first") is True:
                return [randn(BATCH, SEQ, size)]
            return [randn(SEQ, BATCH, size)]
        if kind in ("RNNCell", "LSTMCell", "GRUCell"):
            if index > 0:
                raise NoShape(f"the hidden state of `{ref.text()}`")
            return [randn(BATCH, _int_arg(ref, bound, "input_size"))]
        if kind in ("LayerNorm", "RMSNorm"):
            shape = bound.get("normalized_shape")
            if isinstance(shape, int) and not isinstance(shape, bool):
                if rank is not None:
                    return _float_inputs(_seq_shape(rank, shape))
                return _float_inputs([[BATCH, SEQ, shape], [BATCH, shape]])
            if isinstance(shape, (tuple, list)) and all(isinstance(n, int) for n in shape):
                return [randn(BATCH, *shape)]
            raise NoShape(f"LayerNorm's normalized_shape in `{ref.text()}` is not a constant")
        if kind == "GroupNorm":
            channels = _int_arg(ref, bound, "num_channels")
            return [randn(BATCH, channels, s, s) for s in (8,)] + [randn(BATCH, channels, SEQ)]
        if kind.startswith(("Conv", "ConvTranspose")) and kind[-2:] in ("1d", "2d", "3d"):
            dims = int(kind[-2])
            channels = _int_arg(ref, bound, "in_channels")
            return [randn(BATCH, channels, *([s] * dims)) for s in SPATIAL[dims]]
        if kind.startswith(("BatchNorm", "InstanceNorm")) or kind == "SyncBatchNorm":
            features = _int_arg(ref, bound, "num_features")
            dims = int(kind[-2]) if kind[-2:] in ("1d", "2d", "3d") else 2
            if dims == 1:
                shapes_1d = [[BATCH, features], [BATCH, features, SEQ]]
                if kind.startswith("InstanceNorm"):
                    shapes_1d.reverse()
                if rank == 3:
                    shapes_1d = [[BATCH, features, SEQ]]
                return _float_inputs(shapes_1d)
            sizes = SPATIAL[2] if dims == 2 else SPATIAL[3]
            return [randn(BATCH, features, *([s] * dims)) for s in sizes]
        if kind == "MultiheadAttention":
            embed = _int_arg(ref, bound, "embed_dim")
            position = {"query": 0, "key": 1, "value": 2}.get(keyword or "", index)
            if position > 2:
                raise NoShape(f"argument {position} of `{ref.text()}`")
            size = embed
            for pos, name in ((1, "kdim"), (2, "vdim")):
                if position == pos and isinstance(bound.get(name), int):
                    size = bound[name]
            if bound.get("batch_first") is True:
                return [randn(BATCH, SEQ, size)]
            return [randn(SEQ, BATCH, size)]
        if kind in ("TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer"):
            if index > 1 or (keyword and keyword not in ("src", "tgt", "memory")):
                raise NoShape(f"argument {keyword or index} of `{ref.text()}`")
            d_model = _int_arg(ref, bound, "d_model")
            if bound.get("batch_first") is True:
                return [randn(BATCH, SEQ, d_model)]
            return [randn(SEQ, BATCH, d_model)]
        if kind in ("TransformerEncoder", "TransformerDecoder"):
            layer_name = "encoder_layer" if kind == "TransformerEncoder" else "decoder_layer"
            inner = bound.get(layer_name)
            return self.layer_need(inner, index, keyword, rank)
        raise NoShape(f"`{ref.text()}` ({kind}) has an input shape verify cannot infer")

    def sequential_need(self, ref: LayerRef, rank: int | None) -> Any:
        for child in ref.children or []:
            need = self.layer_need(child, 0, None, rank)
            if need is not PASS:
                return need
        return PASS

    def local_need(self, ref: LayerRef, info: ClassInfo, index: int, keyword: str | None) -> Any:
        if self.depth > 6:
            raise NoShape(f"`{ref.text()}` nests too deeply")
        args, kwargs = evaluate_args(ref.call, ref.scope)
        ctx = class_ctx(
            info.owner or self.ctx.model, info, args, kwargs, ref.scope.consts, self.depth + 1
        )
        forward = ctx.method("forward")
        if forward is None:
            parent = ctx.attrs.get(SUPER)
            if isinstance(parent, LayerRef) and parent.qual and parent.qual.startswith("torch."):
                return Finder(ctx, self.depth + 1).layer_need(parent, index, keyword, None)
            raise NoShape(f"{info.name} has no forward()")
        params = signature_args(forward, skip_self=True)
        if keyword is not None:
            name = keyword
        elif index < len(params):
            name = params[index].arg
        else:
            raise NoShape(f"argument {index} of {info.name}.forward")
        finder = Finder(ctx, self.depth + 1)
        need = finder.param_need(forward, name)
        if need is None:
            return PASS
        return need

    # -------------------------------------------------------------- forward walk
    def param_need(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> Any:
        """Candidates for ``param`` of ``fn``; None when no layer consumes it (it may still
        flow out unchanged). Raises NoShape when the first consumer is opaque."""
        walk = _Walk(self, fn, param)
        try:
            walk.run()
        except _Found as found:
            if walk.rank is not None:
                ranked = [c for c in found.candidates if len(c.get("shape", ())) == walk.rank]
                return ranked or found.candidates
            return found.candidates
        return None


def _rank_hint(fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> int | None:
    """The rank of ``param`` if ``fn`` unpacks its shape (``B, T, C = x.shape``)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Tuple) and not any(
                isinstance(e, ast.Starred) for e in target.elts
            ):
                if _is_shape_of(value, param):
                    return len(target.elts)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if (
                isinstance(node.ops[0], ast.Eq)
                and isinstance(right, ast.Constant)
                and isinstance(right.value, int)
                and _is_rank_of(left, param)
            ):
                return right.value
    return None


def _is_shape_of(node: ast.expr, param: str) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return isinstance(node.value, ast.Name) and node.value.id == param
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute):
        func = node.func
        return func.attr == "size" and isinstance(func.value, ast.Name) and func.value.id == param
    return False


def _is_rank_of(node: ast.expr, param: str) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "ndim":
        return isinstance(node.value, ast.Name) and node.value.id == param
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        return (
            func.attr in ("dim", "ndimension")
            and isinstance(func.value, ast.Name)
            and (func.value.id == param)
        )
    return False


class _Walk:
    """One pass over a function body, in evaluation order, tracking a parameter's aliases."""

    def __init__(
        self, finder: Finder, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str
    ) -> None:
        self.finder = finder
        self.ctx = finder.ctx
        self.fn = fn
        self.aliases: dict[str, tuple[Transform, ...]] = {param: ()}
        self.loop_layers: dict[str, Any] = {}
        self.rank = _rank_hint(fn, param)

    def run(self) -> None:
        self.block(self.fn.body)

    def block(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if stmt.value is None:
                return
            self.visit(stmt.value)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            derived = self.derive(stmt.value)
            if isinstance(stmt, ast.AugAssign):
                return
            for target in targets:
                if isinstance(target, ast.Name):
                    if derived is not None:
                        self.aliases[target.id] = derived
                    else:
                        self.aliases.pop(target.id, None)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.visit(stmt.iter)
            layer = self.layer_of_iter(stmt.iter)
            if layer is not None and isinstance(stmt.target, ast.Name):
                self.loop_layers[stmt.target.id] = layer
            elif (
                isinstance(stmt.target, ast.Tuple)
                and len(stmt.target.elts) == 2
                and isinstance(stmt.target.elts[1], ast.Name)
                and layer is not None
            ):
                self.loop_layers[stmt.target.elts[1].id] = layer
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, walk.DEFINITIONS):
            return
        else:
            # the expressions of the statement itself (an `if`'s test, a `with`'s context
            # managers, a `match`'s subject), then the statements it holds
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.withitem):
                    child = child.context_expr
                if isinstance(child, ast.expr):
                    self.visit(child)
            for part in walk.parts(stmt):
                self.block(part)

    def layer_of_iter(self, node: ast.expr) -> Any:
        """``for blk in self.blocks`` / ``self.blocks.values()`` / ``enumerate(self.blocks)``."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in ("enumerate", "reversed"):
                return self.layer_of_iter(node.args[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("values", "children", "modules"):
                return self.layer_of_iter(node.func.value)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            node = node.value
        container = self.self_attr(node)
        if isinstance(container, LayerRef) and container.children:
            return container.children[0]
        return None

    def self_attr(self, node: ast.expr) -> Any:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return self.ctx.attrs.get(node.attr)
        return None

    def visit(self, node: ast.expr) -> None:
        """Visit sub-expressions in evaluation order; check each call for a consumer."""
        if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return
        if isinstance(node, ast.Call):
            self.visit(node.func)
            for arg in node.args:
                self.visit(arg.value if isinstance(arg, ast.Starred) else arg)
            for kw in node.keywords:
                self.visit(kw.value)
            self.check_call(node)
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            self.visit(node.left)
            self.visit(node.right)
            self.check_matmul(node.left, node.right)
            return
        if isinstance(node, ast.BinOp):
            self.visit(node.left)
            self.visit(node.right)
            self.check_broadcast(node.left, node.right)
            self.check_broadcast(node.right, node.left)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.visit(child)

    def callee(self, func: ast.expr) -> tuple[str, Any] | None:
        """("layer", LayerRef) / ("method", name) / ("function", qualname) for a call."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == "self":
                value = self.ctx.attrs.get(func.attr)
                if value is not None:
                    return "layer", value
                if self.ctx.method(func.attr) is not None:
                    return "method", func.attr
                return "layer", NotConstant(f"`self.{func.attr}` is not built in __init__")
        if isinstance(func, ast.Subscript):
            container = self.self_attr(func.value)
            if isinstance(container, LayerRef) and container.children:
                try:
                    index = evaluate(func.slice, InitScope(self.ctx.model, {}, None, {}))
                except NotConstant:
                    index = 0
                children = container.children
                if isinstance(index, int) and -len(children) <= index < len(children):
                    return "layer", children[index]
                return "layer", children[0]
        if isinstance(func, ast.Name) and func.id in self.loop_layers:
            return "layer", self.loop_layers[func.id]
        if isinstance(func, ast.Name) and func.id not in self.aliases:
            local = self.ctx.names.get(func.id)
            if isinstance(local, LayerRef):  # a function target's `lin = nn.Linear(5, 2)`
                return "layer", local
        qual = self.ctx.model.qualify(func)
        if qual is not None:
            return "function", qual
        return None

    def consumed(self, call: ast.Call) -> Iterator[tuple[int, str | None, tuple[Transform, ...]]]:
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            transforms = self.derive(arg)
            if transforms is not None:
                yield index, None, transforms
        for kw in call.keywords:
            if kw.arg is None:
                continue
            transforms = self.derive(kw.value)
            if transforms is not None:
                yield -1, kw.arg, transforms

    def check_call(self, call: ast.Call) -> None:
        uses = list(self.consumed(call))
        if not uses:
            return
        callee = self.callee(call.func)
        if callee is None:
            return
        kind, target = callee
        for index, keyword, transforms in uses:
            if kind == "layer":
                rank = self.rank if not transforms else None
                need = self.finder.layer_need(target, max(index, 0), keyword, rank)
                if need is PASS:
                    continue
                raise _Found(_with_transforms(need, transforms))
            if kind == "method":
                method = self.ctx.method(target)
                assert method is not None
                params = signature_args(method, skip_self=True)
                name = keyword
                if name is None and index < len(params):
                    name = params[index].arg
                if name is None:
                    continue
                sub = Finder(self.ctx, self.finder.depth + 1)
                if self.finder.depth > 6:
                    continue
                need = sub.param_need(method, name)
                if need is not None:
                    raise _Found(_with_transforms(need, transforms))
            if kind == "function":
                self.check_function(target, call, index, transforms)

    def check_function(
        self, qual: str, call: ast.Call, index: int, transforms: tuple[Transform, ...]
    ) -> None:
        """F.linear(x, self.w), F.embedding(x, self.w), F.conv2d(x, self.w), torch.matmul."""
        name = qual.rsplit(".", 1)[-1]
        if not qual.startswith("torch.") or index != 0 or len(call.args) < 2:
            return
        weight = self.tensor_value(call.args[1])
        if weight is None:
            return
        shape = list(weight.shape)
        if name == "linear" and len(shape) == 2:
            need = _float_inputs(_seq_shape(self.rank, shape[1]))
            raise _Found(_with_transforms(need, transforms))
        if name == "embedding" and len(shape) == 2:
            raise _Found(_with_transforms([randint(shape[0], BATCH, SEQ)], transforms))
        if name in ("conv1d", "conv2d", "conv3d") and len(shape) >= 3:
            dims = int(name[-2])
            candidates = [randn(BATCH, shape[1], *([s] * dims)) for s in SPATIAL[dims]]
            raise _Found(_with_transforms(candidates, transforms))
        if name in ("matmul", "mm") and len(shape) == 2:
            need = _float_inputs(_seq_shape(self.rank, shape[0]))
            raise _Found(_with_transforms(need, transforms))

    def check_matmul(self, left: ast.expr, right: ast.expr) -> None:
        transforms = self.derive(left)
        if transforms is None:
            return
        weight = self.tensor_value(right)
        if weight is not None and len(weight.shape) == 2:
            need = _float_inputs(_seq_shape(self.rank, weight.shape[0]))
            raise _Found(_with_transforms(need, transforms))
        if isinstance(right, ast.Attribute) and right.attr == "T":
            weight = self.tensor_value(right.value)
            if weight is not None and len(weight.shape) == 2:
                need = _float_inputs(_seq_shape(self.rank, weight.shape[1]))
                raise _Found(_with_transforms(need, transforms))

    def check_broadcast(self, operand: ast.expr, other: ast.expr) -> None:
        """``x * self.gamma`` with ``self.gamma = nn.Parameter(torch.ones(dim))``."""
        transforms = self.derive(operand)
        if transforms is None:
            return
        weight = self.tensor_value(other)
        if weight is None or not weight.shape:
            return
        shape = [8 if d == 1 else d for d in weight.shape]
        if len(shape) == 1:
            need = _float_inputs(_seq_shape(self.rank, shape[0]))
        else:
            need = [randn(BATCH, *shape)]
        raise _Found(_with_transforms(need, transforms))

    def tensor_value(self, node: ast.expr) -> InitTensor | None:
        value = self.self_attr(node)
        if isinstance(value, InitTensor):
            return value
        if isinstance(node, ast.Name) and node.id not in self.aliases:
            local = self.ctx.names.get(node.id)
            if isinstance(local, InitTensor):  # a function target's `w = torch.zeros(3, 5)`
                return local
        if isinstance(value, LayerRef) and isinstance(node, ast.Attribute):
            return None
        return None

    def derive(self, node: ast.expr) -> tuple[Transform, ...] | None:
        """The transforms from the tracked parameter to ``node``'s value, or None when
        ``node`` is not (a shape-kept form of) the parameter."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
            left = self.derive(node.left)
            return left if left is not None else self.derive(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.derive(node.operand)
        if isinstance(node, ast.IfExp):
            body = self.derive(node.body)
            return body if body is not None else self.derive(node.orelse)
        if isinstance(node, ast.Subscript):
            base = self.derive(node.value)
            index = self.index_transform(node.slice) if base is not None else None
            return None if base is None or index is None else (*base, index)
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.derive(func.value)
            if receiver is not None:
                return self.method_transform(func.attr, node, receiver)
        callee = self.callee(func)
        if callee is None or not node.args:
            return None
        first = node.args[0]
        transforms = self.derive(first) if not isinstance(first, ast.Starred) else None
        if transforms is None:
            return None
        kind, target = callee
        if kind == "layer":
            try:
                need = self.finder.layer_need(target, 0, None, None)
            except NoShape:
                return None
            return transforms if need is PASS else None
        if kind == "function" and any(target.startswith(p) for p in _TORCH_PREFIXES):
            name = target.rsplit(".", 1)[-1]
            if name in ("transpose", "swapaxes") and len(node.args) >= 3:
                dims = self.constants(node.args[1:3])
                return (*transforms, ("transpose", *dims)) if dims else None
            if name == "permute" and len(node.args) >= 2:
                dims = self.constants(node.args[1:])
                if dims and len(dims) == 1 and isinstance(dims[0], (tuple, list)):
                    dims = list(dims[0])
                return (*transforms, ("permute", tuple(dims))) if dims else None
            if name == "unsqueeze" and len(node.args) >= 2:
                dims = self.constants(node.args[1:2])
                return (*transforms, ("unsqueeze", dims[0])) if dims else None
            if name in _KEEP_FUNCTIONS:
                return (*transforms, ("opaque",)) if name in _OPAQUE else transforms
        return None

    def index_transform(self, index: ast.expr) -> Transform | None:
        """``x[:, t]`` keeps dim 0 and removes dim 1: ("index", ("keep", t))."""
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        ops: list[Any] = []
        for element in elements:
            if isinstance(element, ast.Slice):
                ops.append("keep")
            elif isinstance(element, ast.Constant) and element.value is None:
                ops.append("new")
            elif isinstance(element, ast.Constant) and element.value is Ellipsis:
                return None
            elif isinstance(element, ast.Constant) and isinstance(element.value, int):
                ops.append(element.value)
            elif isinstance(element, (ast.Name, ast.BinOp, ast.UnaryOp)):
                ops.append(-1)
            else:
                return None
        return ("index", tuple(ops))

    def method_transform(
        self, name: str, call: ast.Call, transforms: tuple[Transform, ...]
    ) -> tuple[Transform, ...] | None:
        if name in ("transpose", "swapaxes") and len(call.args) == 2:
            dims = self.constants(call.args)
            return (*transforms, ("transpose", *dims)) if dims else None
        if name == "permute" and call.args:
            dims = self.constants(call.args)
            if dims and len(dims) == 1 and isinstance(dims[0], (tuple, list)):
                dims = list(dims[0])
            return (*transforms, ("permute", tuple(dims))) if dims else None
        if name == "unsqueeze" and len(call.args) == 1:
            dims = self.constants(call.args)
            return (*transforms, ("unsqueeze", dims[0])) if dims else None
        if name in _KEEP_METHODS or name.endswith("_") and name[:-1] in _KEEP_METHODS:
            return (*transforms, ("opaque",)) if name in _OPAQUE else transforms
        return None

    def constants(self, nodes: Sequence[ast.expr]) -> list[Any] | None:
        try:
            return [evaluate(n, InitScope(self.ctx.model, {}, None, {})) for n in nodes]
        except NotConstant:
            return None
