"""`python -m inplace_lsp`: the same command line as the `inplace-lsp` script."""

from inplace_lsp.cli import entry

entry()
