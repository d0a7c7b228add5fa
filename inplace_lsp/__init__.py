"""inplace-lsp: finds PyTorch in-place operations that break autograd.

``inplace_lsp.detect()`` is the runtime detector (see ``inplace_lsp.detector``); importing this
package imports nothing else until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"
__all__ = ["InplaceWarning", "__version__", "detect"]

if TYPE_CHECKING:
    from inplace_lsp.detector import InplaceWarning, detect


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext inplace_lsp``: the ``%inplace_detect`` magics (see
    ``inplace_lsp.integrations.ipython``)."""
    from inplace_lsp.integrations import ipython

    ipython.load(shell)


def __getattr__(name: str) -> Any:
    if name in ("detect", "InplaceWarning"):
        from inplace_lsp import detector

        return getattr(detector, name)
    raise AttributeError(f"module 'inplace_lsp' has no attribute {name!r}")
