"""The whole suite runs the analyzer in strict mode: a syntax node the interpreter has no
handler for raises instead of being skipped (`dataflow.STRICT`), so the test that meets it
fails and unknown syntax cannot hide. Servers and CLIs the tests start inherit it."""

import os

os.environ["INPLACE_LSP_STRICT"] = "1"
