"""Generated programs for the tests of the analysis's limits."""

from __future__ import annotations


def slow_function(statements: int) -> str:
    """A function whose analysis grows with the square of its length: each `if` joins two
    states that hold every tensor made before it. Its last line writes a saved tensor."""
    body = ["def slow(x, w):", "    h = x"]
    for i in range(statements):
        body += [f"    a{i} = torch.tanh(h @ w)", f"    if h.sum() > {i}:", f"        h = h * a{i}"]
        body.append(f"    h = torch.relu(h + a{i})")
    return "\n".join([*body, "    h.add_(1)", "    return h", ""])


def with_slow_function(statements: int) -> str:
    return (
        "import torch\n\n\n"
        + slow_function(statements)
        + "\n\ndef quick(x):\n    y = x.exp()\n    y.add_(1)\n    return y\n"
        + "\n\ndef calls_slow(x, w):\n    y = torch.sigmoid(x)\n    z = slow(y, w)\n"
        + "    y += 1\n    return y + z\n"
    )
