"""Runs the inplace-lsp that the VS Code extension bundles, with this interpreter.

    python serve.py serve      the language server (any `inplace-lsp` command works)
    python serve.py --where    prints where inplace_lsp is imported from: the extension's
                               check before it starts the server

`../libs.zip` (made by scripts/bundle_server.py) holds the server and its dependencies:
`common/` for every Python, `cp3XY/` for what has native code (libcst). The first run of a
Python unpacks those two into `../libs` (or, where the extension's folder cannot be written,
into the user's cache folder), once per archive; they then go first on sys.path, so the
bundled copies win over any the interpreter has installed. Exits 3, with one line on stderr,
when nothing is bundled for this Python; the extension then looks for another.

Runs on any Python 3 far enough to say so: no syntax newer than 3.0 before the version test.
"""

import json
import os
import shutil
import sys
import tempfile
import zipfile

UNSUPPORTED = 3  # the exit code when this Python has no bundled build
BUNDLED = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = ".unpacked"  # in each unpacked folder: the archive's id, once every file is in place


def _cache_home():
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches")
    return os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")


def _unpacked(folder, archive_id):
    try:
        with open(os.path.join(folder, MARKER)) as marker:
            return marker.read().strip() == archive_id
    except OSError:
        return False


def _unpack(archive, root, part, archive_id):
    """Unpacks the archive's folder `part` to `root/part`: into a new folder first, renamed
    into place once complete, so a run that stops halfway, or two windows starting at once,
    never leave a partial one."""
    folder = os.path.join(root, part)
    if _unpacked(folder, archive_id):
        return
    if not os.path.isdir(root):
        os.makedirs(root)
    staging = tempfile.mkdtemp(prefix=".unpacking-", dir=root)
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.namelist() if m.startswith(part + "/")]
            zipped.extractall(staging, members)
        if not os.path.isdir(os.path.join(staging, part)):  # nothing of its own
            os.mkdir(os.path.join(staging, part))
        with open(os.path.join(staging, part, MARKER), "w") as marker:
            marker.write(archive_id)
        if os.path.isdir(folder):
            shutil.rmtree(folder, ignore_errors=True)  # an older archive's
        try:
            os.rename(os.path.join(staging, part), folder)
        except OSError:
            if not _unpacked(folder, archive_id):  # another run did not just win the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _bundled_paths():
    """This Python's folder and the common one, unpacked (beside the archive, else in the
    user's cache folder): only what this Python needs is unpacked."""
    with open(os.path.join(BUNDLED, "manifest.json")) as manifest_file:
        manifest = json.load(manifest_file)
    version = "{}.{}".format(*sys.version_info[:2])
    if version not in manifest["pythons"]:
        sys.stderr.write(
            "inplace-lsp (bundled): Python {} is not supported; the extension bundles the server "
            "for Python {} ({})\n".format(version, ", ".join(manifest["pythons"]), sys.executable)
        )
        sys.exit(UNSUPPORTED)
    archive_id = manifest["id"]
    parts = ["cp" + version.replace(".", ""), "common"]
    roots = [
        os.path.join(BUNDLED, "libs"),
        os.path.join(_cache_home(), "inplace-lsp", "bundled-" + archive_id),
    ]
    problem = None
    for root in roots:
        try:
            for part in parts:
                _unpack(os.path.join(BUNDLED, "libs.zip"), root, part, archive_id)
            return [os.path.join(root, part) for part in parts]
        except (OSError, zipfile.BadZipFile) as error:
            problem = error
    message = "inplace-lsp (bundled): cannot unpack the server: {}\n"
    sys.stderr.write(message.format(problem))  # no f-string: see the module's docstring
    sys.exit(1)


def _load_native():
    """Loads libcst's extension module by itself: the bundled native code runs here (the
    same Python ABI, the same C library) or the check fails, not the server later. Importing
    libcst would take half a second of the editor's start; its extension alone, a millisecond."""
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("libcst")
    folder = os.path.dirname(spec.origin) if spec is not None and spec.origin else ""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for name in sorted(os.listdir(folder)) if folder else ():
        if name.startswith("native.") and name.endswith(suffixes):
            native = importlib.util.spec_from_file_location(
                "libcst.native", os.path.join(folder, name)
            )
            native.loader.exec_module(importlib.util.module_from_spec(native))
            return
    raise ImportError("no libcst extension module for this Python in the bundle (" + folder + ")")


def main(argv):
    sys.path[0:0] = _bundled_paths()
    if argv == ["--where"]:
        # The native part loads here or not at all: a failure is the check's, not the server's.
        _load_native()
        import pygls  # noqa: F401

        import inplace_lsp

        sys.stdout.write(inplace_lsp.__file__ or "")
        return 0
    from inplace_lsp.cli import main as cli

    return cli(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
