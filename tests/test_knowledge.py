"""Checks inplace_lsp/data/autograd.json: its facts as loaded by knowledge.load(), and (marked
torch) that re-probing a sample with the installed torch reproduces it exactly."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from inplace_lsp.analysis.knowledge import Knowledge, load

FN = "torch.nn.functional."
GENERATOR = Path(__file__).resolve().parent.parent / "scripts" / "gen_autograd_table.py"

# torch.nn modules whose constructor takes `inplace` (torch 2.13; the torch-marked test below
# re-derives the list with inspect)
INPLACE_MODULES = (
    "AlphaDropout CELU Dropout Dropout1d Dropout2d Dropout3d ELU FeatureAlphaDropout Hardsigmoid "
    "Hardswish Hardtanh LeakyReLU Mish RReLU ReLU ReLU6 SELU SiLU Threshold"
).split()
INPLACE_FUNCTIONS = (
    "alpha_dropout celu dropout dropout1d dropout2d dropout3d elu feature_alpha_dropout "
    "hardsigmoid hardswish hardtanh leaky_relu mish relu relu6 rrelu selu silu threshold"
).split()

SAMPLE_OPS = [
    "torch.sigmoid",
    "Tensor.sigmoid_",
    "torch.tanh",
    "torch.exp",
    "torch.relu",
    "torch.relu_",
    "Tensor.chunk",
    "Tensor.tensor_split",
    "torch.softmax",
    "torch.max",
    "torch.matmul",
    "torch.chunk",
    "torch.where",
    "Tensor.__mul__",
    "Tensor.__imul__",
    "Tensor.__getitem__",
    "Tensor.__setitem__",
    "Tensor.__rpow__",
    "Tensor.mul",
    "Tensor.contiguous",
    "Tensor.to",
    "Tensor.masked_fill_",
    "Tensor.index_add_",
    FN + "gelu",
    FN + "silu",
    FN + "elu",
    FN + "relu",
    FN + "dropout",
    FN + "linear",
    FN + "batch_norm",
    FN + "scaled_dot_product_attention",
]
SAMPLE_MODULES = [
    "torch.nn.Linear",
    "torch.nn.BatchNorm2d",
    "torch.nn.Dropout",
    "torch.nn.ReLU",
    "torch.nn.Hardtanh",
    "torch.nn.Identity",
    "torch.nn.Flatten",
    "torch.nn.MultiheadAttention",
    "torch.nn.LSTM",
    "torch.nn.Embedding",
]

SLOT = re.compile(r"arg\d+|output\d*")
MODULE_SLOT = re.compile(r"input\d*|output\d*|param:[\w.]+|buffer:[\w.]+")
SIGNATURE = re.compile(r"(T1|T0|S)(,(T1|T0|S))*(;inplace)?")
MODULE_KEY = re.compile(r"input_(grad|nograd|frozen)(;inplace)?")


@pytest.fixture(scope="module")
def kb() -> Knowledge:
    return load()


def raw_table() -> dict[str, Any]:
    text = resources.files("inplace_lsp.data").joinpath("autograd.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


# --------------------------------------------------------------------------- the table


def test_counts(kb: Knowledge) -> None:
    assert kb.torch_version not in ("", "unknown")
    assert len(kb.ops) >= 150
    assert len(kb.modules) >= 40


def test_shape_of_entries(kb: Knowledge) -> None:
    for op in kb.ops.values():
        assert op.saves, op.name
        for sig, slots in op.saves.items():
            assert SIGNATURE.fullmatch(sig), (op.name, sig)
            assert all(SLOT.fullmatch(s) for s in slots), (op.name, sig, slots)
            operands = sig.split(";")[0].split(",")
            args = {int(s[3:]) for s in slots if s.startswith("arg")}
            assert all(i < len(operands) and operands[i] != "S" for i in args), (op.name, sig)
            if "T1" not in operands:
                assert not slots, (op.name, sig)  # nothing requires grad: no graph
    for mod in kb.modules.values():
        assert mod.saves, mod.name
        for key, slots in mod.saves.items():
            assert MODULE_KEY.fullmatch(key), (mod.name, key)
            assert all(MODULE_SLOT.fullmatch(s) for s in slots), (mod.name, key, slots)
            params = {s.removeprefix("param:") for s in slots if s.startswith("param:")}
            assert params <= set(mod.params), mod.name


def test_variant_pairs_are_symmetric(kb: Knowledge) -> None:
    for op in kb.ops.values():
        if op.inplace_variant is not None:
            other = kb.ops[op.inplace_variant]
            assert other.outofplace_variant == op.name
        if op.outofplace_variant is not None:
            assert kb.ops[op.outofplace_variant].inplace_variant == op.name
    assert kb.ops["Tensor.add"].inplace_variant == "Tensor.add_"
    assert kb.ops["torch.relu"].inplace_variant == "torch.relu_"
    assert kb.ops["torch.sigmoid_"].outofplace_variant == "torch.sigmoid"
    assert kb.ops["Tensor.__add__"].inplace_variant == "Tensor.__iadd__"
    assert kb.ops["Tensor.__itruediv__"].outofplace_variant == "Tensor.__truediv__"
    assert kb.ops[FN + "relu"].inplace_variant == FN + "relu_"


@pytest.mark.parametrize("name", ["sigmoid", "tanh", "exp", "relu", "softmax"])
def test_saves_output(kb: Knowledge, name: str) -> None:
    for qual in (f"torch.{name}", f"Tensor.{name}"):
        op = kb.ops[qual]
        assert op.saved_slots(["T1"]) == {"output"}, qual
        assert op.saved_slots(["T0"]) == frozenset(), qual
        assert op.saves_output
    if f"{FN}{name}" in kb.ops:
        assert kb.ops[f"{FN}{name}"].saved_slots(["T1"]) == {"output"}


@pytest.mark.parametrize("name", ["gelu", "silu", "elu", "leaky_relu"])
def test_saves_input(kb: Knowledge, name: str) -> None:
    op = kb.ops[FN + name]
    assert op.saved_slots(["T1"]) == {"arg0"}
    assert op.saved_slots(["T0"]) == frozenset()


def test_inplace_activations_save_what_the_write_leaves(kb: Knowledge) -> None:
    # relu/elu/leaky_relu in place save the written tensor (the output); silu and hardtanh in
    # place save a private copy of the input taken before the write
    assert kb.ops[FN + "relu"].saves["T1;inplace"] == {"output"}
    assert kb.ops[FN + "elu"].saves["T1;inplace"] == {"output"}
    assert kb.ops[FN + "leaky_relu"].saves["T1;inplace"] == {"output"}
    assert kb.ops[FN + "silu"].saves["T1;inplace"] == frozenset()
    assert kb.ops[FN + "hardtanh"].saves["T1;inplace"] == frozenset()
    assert kb.ops["Tensor.relu_"].saved_slots(["T1"]) == {"output"}
    assert kb.ops["Tensor.sigmoid_"].saved_slots(["T1"]) == {"output"}


def test_mul(kb: Knowledge) -> None:
    for name in ("Tensor.__mul__", "Tensor.mul", "torch.mul", "Tensor.__rmul__"):
        op = kb.ops[name]
        assert op.saved_slots(["T1", "S"]) == frozenset(), name  # x * 2 saves nothing
        assert op.saved_slots(["T1", "T0"]) == {"arg1"}, name  # a * b saves b for a's grad
        assert op.saved_slots(["T0", "T1"]) == {"arg0"}, name  # ... and a for b's grad
        assert op.saved_slots(["T1", "T1"]) == {"arg0", "arg1"}, name
    assert kb.ops["torch.mul"].saved_slots(["S", "T1"]) == frozenset()
    assert kb.ops["Tensor.add"].saved_slots(["T1", "T1"]) == frozenset()
    # a *= b keeps b; its own old value is copied before the write
    assert kb.ops["Tensor.__imul__"].saved_slots(["T1", "T1"]) == {"arg1"}


def test_views_and_inplace(kb: Knowledge) -> None:
    for name in (
        "Tensor.__getitem__",
        "Tensor.view",
        "Tensor.transpose",
        "Tensor.t",
        "Tensor.expand",
        "Tensor.detach",
        "Tensor.contiguous",  # already contiguous: returns self
        "torch.chunk",
        "torch.split",
        "torch.narrow",
        "torch.select",
        "torch.reshape",
        "torch.squeeze",
        "torch.unsqueeze",
    ):
        op = kb.ops[name]
        assert op.view and not op.inplace, name
    for name in ("Tensor.clone", "torch.cat", "Tensor.float", "torch.sigmoid"):
        assert not kb.ops[name].view, name
    # Views of a multi-output node: writing into one raises while grad is recorded.
    multi = {name for name, op in kb.ops.items() if op.multi_output_view}
    assert {"Tensor.chunk", "torch.split", "Tensor.unbind", "Tensor.split_with_sizes"} <= multi
    assert not multi & {"Tensor.tensor_split", "Tensor.hsplit", "Tensor.view", "Tensor.select"}
    for name in (
        "Tensor.__setitem__",
        "Tensor.__iadd__",
        "Tensor.add_",
        "Tensor.fill_",
        "Tensor.zero_",
        "Tensor.copy_",
        "Tensor.masked_fill_",
        "Tensor.index_add_",
        "Tensor.scatter_",
        "torch.relu_",
        "torch.sigmoid_",
    ):
        assert kb.ops[name].inplace, name
    for name in ("Tensor.add", "Tensor.__add__", "torch.relu", "Tensor.masked_fill"):
        assert not kb.ops[name].inplace, name
    assert kb.ops["Tensor.__setitem__"].grad_fn == "CopySlices"
    assert kb.ops["torch.sigmoid"].grad_fn == "SigmoidBackward0"
    assert kb.ops["torch.sigmoid"].out_kwarg
    assert not kb.ops["Tensor.add"].out_kwarg


def test_inplace_functions(kb: Knowledge) -> None:
    for name in INPLACE_FUNCTIONS:
        op = kb.ops[FN + name]
        assert op.inplace_kwarg, name
        assert any(sig.endswith(";inplace") for sig in op.saves), name
    assert not kb.ops[FN + "gelu"].inplace_kwarg


def test_linear_module(kb: Knowledge) -> None:
    linear = kb.modules["torch.nn.Linear"]
    assert linear.params == ("weight", "bias")
    assert linear.saved_slots(True) == {"input", "param:weight"}
    assert linear.saved_slots(False) == {"input"}  # weight needs grad, so the input is kept
    assert linear.grad_fn == "AddmmBackward0"


def test_norm_modules(kb: Knowledge) -> None:
    for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
        bn = kb.modules[f"torch.nn.{name}"]
        assert "input" in bn.saved_slots(True) and "output" not in bn.saved_slots(True)
        assert {"buffer:running_mean", "buffer:running_var"} <= bn.saved_slots(False)
    assert "input" in kb.modules["torch.nn.LayerNorm"].saved_slots(True)


def test_activation_modules(kb: Knowledge) -> None:
    for name in ("ReLU", "Sigmoid", "Tanh", "Softmax"):
        assert kb.modules[f"torch.nn.{name}"].saved_slots(True) == {"output"}, name
    for name in ("GELU", "SiLU", "ELU", "LeakyReLU"):
        assert kb.modules[f"torch.nn.{name}"].saved_slots(True) == {"input"}, name
    assert kb.modules["torch.nn.ReLU"].saved_slots(False) == frozenset()


def test_inplace_modules(kb: Knowledge) -> None:
    for name in INPLACE_MODULES:
        mod = kb.modules[f"torch.nn.{name}"]
        assert mod.inplace_kwarg, name
        assert not mod.inplace_default, name
        assert "input_grad;inplace" in mod.saves, name
    assert not kb.modules["torch.nn.Linear"].inplace_kwarg


def test_aliasing_modules(kb: Knowledge) -> None:
    for name in ("Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "Identity"):
        assert kb.modules[f"torch.nn.{name}"].eval_alias, name
    for name in ("Identity", "Flatten", "Unflatten"):
        assert kb.modules[f"torch.nn.{name}"].view, name
    for name in ("Dropout", "ReLU", "Linear", "BatchNorm2d"):
        assert not kb.modules[f"torch.nn.{name}"].view, name
    assert not kb.modules["torch.nn.BatchNorm2d"].eval_alias
    mha = kb.modules["torch.nn.MultiheadAttention"]
    assert "input" in mha.saved_slots(True)


# --------------------------------------------------------------------------- runtime truth


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    torch = pytest.importorskip("torch")
    recorded = str(raw_table()["torch_version"])
    if torch.__version__.split("+")[0] != recorded.split("+")[0]:
        pytest.skip(f"autograd.json was generated with torch {recorded}, not {torch.__version__}")
    spec = importlib.util.spec_from_file_location("gen_autograd_table", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module
    spec.loader.exec_module(module)
    return module


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLE_OPS)
def test_reprobe_op(generator: ModuleType, name: str) -> None:
    assert generator.probe_op(name) == raw_table()["ops"][name]


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLE_MODULES)
def test_reprobe_module(generator: ModuleType, name: str) -> None:
    assert generator.probe_module(name) == raw_table()["modules"][name]


@pytest.mark.torch
def test_inplace_coverage(generator: ModuleType) -> None:
    table = raw_table()
    found = generator.modules_with_inplace()
    assert found == sorted(f"torch.nn.{n}" for n in INPLACE_MODULES)
    for name in found:
        assert table["modules"][name]["inplace_kwarg"] is True, name
    for name in generator.functions_with_inplace():
        assert table["ops"][name]["inplace_kwarg"] is True, name


def _backward_survives(torch: Any, outputs: list[Any], bump: Any | None) -> bool:
    """Runs backward after bumping `bump`'s version; False when autograd reports the write."""
    if bump is not None:
        torch.autograd.graph.increment_version(bump)
    differentiable = [o for o in outputs if o.grad_fn is not None]
    try:
        torch.autograd.backward(differentiable, [torch.ones_like(o) for o in differentiable])
    except RuntimeError as exc:
        assert "modified by an inplace operation" in str(exc)
        return False
    return True


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLE_OPS)
def test_op_slots_are_what_backward_checks(generator: ModuleType, name: str) -> None:
    """Bumping the version of a saved slot breaks backward; of an unsaved operand or output,
    not (where that tensor is not also a saved one: in-place ops and views alias arg0)."""
    import torch

    spec = generator.OP_SPECS[name]
    fn = generator.resolve(name)
    sig = next(iter(generator._signatures(spec)))
    entry = raw_table()["ops"][name]
    slots = set(entry["saves"][",".join(sig)])

    def tensors() -> tuple[dict[str, Any], list[Any]]:
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(0)
        values = [generator._value(o, k, gen) for o, k in zip(spec.operands, sig, strict=False)]
        outputs = generator._flat_tensors(spec.invoke(fn, values, {})) or [values[0]]
        named = {f"arg{i}": v for i, v in enumerate(values) if isinstance(v, torch.Tensor)}
        named.update(generator._output_names(outputs))
        return named, outputs

    names, _ = tensors()
    assert _backward_survives(torch, tensors()[1], None)
    for slot in names:
        aliased = slot == "arg0" or slot.startswith("output")
        if aliased and (entry["inplace"] or entry["view"]) and slot not in slots:
            continue  # the output is arg0 or shares its version counter
        named, outputs = tensors()
        survived = _backward_survives(torch, outputs, named[slot])
        assert survived == (slot not in slots), f"{name}: bumping {slot}"


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLE_MODULES)
def test_module_slots_are_what_backward_checks(generator: ModuleType, name: str) -> None:
    import torch

    spec = generator.MOD_SPECS[name]
    entry = raw_table()["modules"][name]
    for key, slots in entry["saves"].items():
        if ";" in key:
            continue
        kind = "T0" if key == "input_nograd" else "T1"

        def tensors(dtype: Any) -> tuple[dict[str, Any], list[Any]]:
            module = generator._make_module(spec, {}, train=True, dtype=dtype)  # noqa: B023
            module.requires_grad_(key != "input_frozen")  # noqa: B023
            call, inputs = generator._module_call(spec, module, kind, dtype)  # noqa: B023
            outputs = generator._flat_tensors(call())
            named = dict(inputs)
            named.update(generator._output_names(outputs))
            named.update((f"param:{n}", p) for n, p in module.named_parameters())
            named.update((f"buffer:{n}", b) for n, b in module.named_buffers())
            return named, outputs

        # A slot of the table breaks backward in one of the dtypes modules are probed in (the
        # kernel, and what it saves, depends on it); any other slot in none.
        broken: dict[str, bool] = {}
        for dtype in generator.MODULE_DTYPES:
            names, _ = tensors(dtype)
            assert _backward_survives(torch, tensors(dtype)[1], None)
            for slot in names:
                if entry["view"] and slot in ("input", "output"):
                    continue
                named, outputs = tensors(dtype)
                survived = _backward_survives(torch, outputs, named[slot])
                broken[slot] = broken.get(slot, False) or not survived
        for slot, breaks in broken.items():
            assert breaks == (slot in slots), f"{name} {key}: bumping {slot}"


@pytest.mark.torch
def test_reprobe_tensor_facts(generator: ModuleType) -> None:
    assert generator.probe_tensor_facts() == raw_table()["tensor"]


def test_tensor_facts_the_analysis_reads(kb: Knowledge) -> None:
    """The facts that were hand-written name tables before, as the probe measured them."""
    facts = kb.tensor
    fresh = {"zeros", "ones", "empty", "randn", "rand", "arange", "eye", "zeros_like", "tensor"}
    assert all(facts.factories[f"torch.{n}"].result == "fresh" for n in fresh)
    assert facts.factories["torch.as_tensor"].result == "alias_of_tensor"  # as_tensor(t) is t
    assert "torch.bernoulli" not in facts.factories  # bernoulli(p) is in p's graph
    assert facts.factories["torch.randn"].dtype == "float32"
    assert facts.factories["torch.full"].dtype == ""  # full(shape, 1) is int64
    assert {"size", "item", "numel", "dim", "tolist", "is_contiguous"} <= facts.python_methods
    assert {"shape", "dtype", "device", "requires_grad", "is_leaf"} <= facts.python_attrs
    assert facts.view_attrs["T"] == facts.view_attrs["mT"] == "permutes"
    assert {n: c.unless for n, c in facts.conversions.items()} == {
        **{f"Tensor.{n}": "dtype" for n in "float double half bfloat16 to type type_as".split()},
        **{f"Tensor.{n}": "device" for n in ("cpu", "cuda")},
        **{f"Tensor.{n}": "layout" for n in ("contiguous", "reshape", "flatten")},
    }
    assert not facts.conversions["Tensor.reshape"].itself  # a view, not the tensor itself
    assert facts.conversions["Tensor.half"].dtype == "float16"
    assert facts.floating_dtypes["float"] == "float32"
    assert {"relu", "leaky_relu", "gelu", "silu", "hardtanh", "sigmoid"} <= facts.activations
    layouts = {n: op.layout for n, op in kb.ops.items() if op.layout}
    assert {layouts[f"Tensor.{n}"] for n in ("t", "transpose", "permute", "movedim")} == {
        "permutes"
    }
    assert layouts["Tensor.expand"] == "broadcasts"
    assert {layouts[f"Tensor.{n}"] for n in ("view", "unsqueeze", "squeeze")} == {"keeps"}
    assert "Tensor.narrow" not in layouts  # which part decides
    assert {facts.grad_modes[f"torch.{n}"] for n in ("no_grad", "autograd.no_grad")} == {"off"}
    assert facts.grad_modes["torch.inference_mode"] == "inference"
    assert facts.grad_modes["torch.enable_grad"] == "on"
    assert facts.grad_modes["torch.set_grad_enabled"] == "argument"
    assert facts.tensor_types["LongTensor"] == "int64"
    assert facts.tensor_types["BoolTensor"] == "bool"
    assert "torch.autograd.Function" in facts.autograd_function
