"""The specs `verify` hands the harness (the vocabulary of a target's JSON: tensors by maker
and shape, literals, containers; targets.py assembles them), the sizes they are made with, and
the error that says a target cannot be run.
"""

from __future__ import annotations

from typing import Any

from inplace_lsp.analysis.constants import NotConstant

BATCH = 2
SEQ = 8
MAX_COMBOS = 8
# Spatial sizes tried, in order, for convolution inputs (a Linear after the convolutions often
# fixes one size: 32 for CIFAR nets, 28 for MNIST nets, 224 for ImageNet nets).
SPATIAL: dict[int, tuple[int, ...]] = {
    1: (32, 64, 128, 16),
    2: (32, 28, 64, 224, 16),
    3: (16, 8, 32),
}

Spec = dict[str, Any]


class VerifyError(Exception):
    """Verify cannot run this target; the message says what is missing and how to provide it."""

    def __str__(self) -> str:
        return f"VerifyError: {self.args[0]}" if self.args else "VerifyError"

    @property
    def reason(self) -> str:
        return str(self.args[0]) if self.args else ""


# --------------------------------------------------------------------------- value specs


def randn(*shape: int) -> Spec:
    return {"tensor": "randn", "shape": list(shape)}


def randint(high: int, *shape: int) -> Spec:
    return {"tensor": "randint", "high": high, "shape": list(shape)}


def literal_spec(value: object) -> Spec:
    """The value spec of a Python literal (numbers, strings, None, tuples, lists, dicts)."""
    if isinstance(value, tuple):
        return {"tuple": [literal_spec(v) for v in value]}
    if isinstance(value, list):
        return {"list": [literal_spec(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): literal_spec(v) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise NotConstant(f"{type(value).__name__} is not a literal")


def describe_value(spec: Spec) -> str:
    """Python source that builds the value a spec describes (for messages)."""
    if "tensor" in spec:
        shape = ", ".join(str(n) for n in spec["shape"])
        if spec["tensor"] == "randint":
            comma = "," if len(spec["shape"]) == 1 else ""
            return f"torch.randint(0, {spec['high']}, ({shape}{comma}))"
        dtype = ", dtype=torch.bool" if spec.get("dtype") == "bool" else ""
        return f"torch.{spec['tensor']}({shape}{dtype})"
    if "tuple" in spec:
        items = [describe_value(v) for v in spec["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if "list" in spec:
        return "[" + ", ".join(describe_value(v) for v in spec["list"]) + "]"
    if "dict" in spec:
        return "{" + ", ".join(f"{k!r}: {describe_value(v)}" for k, v in spec["dict"].items()) + "}"
    return repr(spec.get("value"))
