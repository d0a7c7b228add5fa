"""The whole suite runs the analyzer in strict mode: a syntax node the interpreter has no
handler for raises instead of being skipped (`evaluator.STRICT`), so the test that meets it
fails and unknown syntax cannot hide. Servers and CLIs the tests start inherit it.

`inplace-lsp check` keeps a cache of results in the user's cache directory; the suite's runs
keep theirs in a directory of their own, removed at the end, so no test reads another run's
results (tests of the cache set their own directory)."""

import atexit
import os
import shutil
import tempfile

os.environ["INPLACE_LSP_STRICT"] = "1"
_CACHE = tempfile.mkdtemp(prefix="inplace-lsp-test-cache-")
os.environ.setdefault("INPLACE_LSP_CACHE_DIR", _CACHE)
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
