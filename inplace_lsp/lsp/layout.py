"""Where the lines of an analysed program live in the editor: one file, or a notebook's code
cells concatenated in cell order (LSP 3.17 notebook sync), with positions mapped both ways.

The logic is pure and shared with `inplace-lsp check`; it lives in `inplace_lsp.notebook`.
"""

from __future__ import annotations

from inplace_lsp.notebook import PYTHON_CELL_MAGICS, Cell, Layout, mask_magics, notebook_program

__all__ = ["PYTHON_CELL_MAGICS", "Cell", "Layout", "mask_magics", "notebook_program"]
