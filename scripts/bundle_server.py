"""Bundles the language server and its dependencies into the VS Code extension
(`vscode-client/bundled`), for one `vsce package --target` platform and every Python the
package supports, so that the extension runs in any interpreter the user picked without
installing anything there.

    python scripts/bundle_server.py --target linux-x64 [--wheel dist/inplace_lsp-*.whl]

pip installs the wheel (built from this checkout unless given: see `build_wheel`; pip is all
it needs) with its dependencies once per Python version, binary wheels of that platform only
(libcst has native code, built per Python). What every version got alike and holds no
compiled code (pygls, lsprotocol, jedi, inplace_lsp itself...) goes to `common/`, the rest
(libcst, PyYAML, tomli for 3.10) to `cp3XY/`, all of it into one archive, `bundled/libs.zip`:
the .vsix then holds a few files instead of thousands (vsce packs and scans each; 7,500 files
took it 13 minutes). `bundled/tool/serve.py` unpacks it on its first run and puts the two
folders on `sys.path`. `bundled/manifest.json` says what is in it, and which Pythons it serves.
Each step says on stderr what it does and, when done, how long it took (the whole run takes a
minute or two: pip resolves the dependencies once per Python).
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "vscode-client" / "bundled"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")

# vsce's targets and the wheel platforms pip may take for each (newest first).
PLATFORMS = {
    "linux-x64": ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"],
    "linux-arm64": ["manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"],
    "alpine-x64": ["musllinux_1_2_x86_64", "musllinux_1_1_x86_64"],
    "alpine-arm64": ["musllinux_1_2_aarch64", "musllinux_1_1_aarch64"],
    "darwin-x64": ["macosx_10_13_x86_64", "macosx_10_12_x86_64", "macosx_10_9_x86_64"],
    "darwin-arm64": ["macosx_11_0_arm64"],
    "win32-x64": ["win_amd64"],
    "win32-arm64": ["win_arm64"],
}


@contextmanager
def step(what: str) -> Iterator[None]:
    """Says on stderr what is being done, then how long it took."""
    print(f"bundle_server: {what} ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    yield
    print(
        f"bundle_server: {what}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True
    )


# What the wheel is made of: the package, its metadata (README.md, LICENSE) and the files
# MANIFEST.in names.
WHEEL_SOURCES = ("pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "LICENSE")
WHEEL_FOLDERS = ("inplace_lsp", "examples")


def build_wheel(into: Path, repo: Path = REPO) -> Path:
    """The wheel of the checkout's package, built by `pip wheel` from a copy of what it is made
    of, with a new folder as the working directory. A `build/` folder in the checkout's root
    (`pip install .` leaves one) is then neither taken for a package of that name (as by
    `python -m build` run from the root without the `build` package installed) nor read by
    setuptools, which puts what it finds in `build/lib`, stale files too, into the wheel."""
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-source-") as tmp:
        source = Path(tmp) / "source"
        source.mkdir()
        for name in WHEEL_SOURCES:
            shutil.copy2(repo / name, source / name)
        for name in WHEEL_FOLDERS:
            junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
            shutil.copytree(repo / name, source / name, ignore=junk)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet"]
            + ["--disable-pip-version-check", "--wheel-dir", str(into), str(source)],
            check=True,
            cwd=tmp,
        )
    (wheel,) = into.glob("inplace_lsp-*.whl")
    return wheel


# What the server never reads: jedi's stubs of third-party packages (it asks jedi only where a
# module of the workspace is, never about a library's types). 4,800 of 7,500 files.
UNUSED = ("jedi/third_party/typeshed/stubs", "jedi/third_party/django-stubs")


def _install(wheel: Path, python: str, platforms: list[str], into: Path) -> None:
    """The wheel and its dependencies as `python` on those platforms would get them."""
    tag = "cp" + python.replace(".", "")
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        str(into),
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python,
        "--abi",
        tag,
        "--abi",
        "abi3",
        "--abi",
        "none",
        *(arg for platform in platforms for arg in ("--platform", platform)),
        str(wheel),
    ]
    subprocess.run(command, check=True)
    shutil.rmtree(into / "bin", ignore_errors=True)  # console scripts for another machine
    for unused in UNUSED:
        shutil.rmtree(into / unused)


def _native(entry: Path) -> bool:
    """Whether a package holds compiled code: built for one Python, it stays in its folder."""
    files = entry.rglob("*") if entry.is_dir() else [entry]
    return any(f.suffix in (".so", ".pyd", ".dylib") for f in files)


def _same(a: Path, b: Path) -> bool:
    if a.is_dir() != b.is_dir():
        return False
    if not a.is_dir():
        return filecmp.cmp(a, b, shallow=False)
    compared = filecmp.dircmp(a, b)
    if compared.left_only or compared.right_only or compared.funny_files:
        return False
    return all(_same(a / name, b / name) for name in compared.common)


def bundle(wheel: Path, target: str, out: Path, pythons: tuple[str, ...] = PYTHONS) -> dict:
    """Writes `out/libs.zip` and `out/manifest.json`; returns the manifest."""
    if target not in PLATFORMS:
        raise SystemExit(f"unknown target {target!r}; one of {', '.join(PLATFORMS)}")
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-bundle-") as tmp:
        libs = Path(tmp) / "libs"
        staged = {python: libs / ("cp" + python.replace(".", "")) for python in pythons}
        for number, (python, folder) in enumerate(staged.items(), 1):
            what = f"Python {python} ({number} of {len(staged)}): pip installs the wheel and its"
            with step(f"{what} dependencies for {target}"):
                _install(wheel, python, PLATFORMS[target], folder)
        common = libs / "common"
        common.mkdir()
        first, *others = staged.values()
        shared = sorted(
            entry.name
            for entry in first.iterdir()
            if not _native(entry)
            and all((o / entry.name).exists() and _same(entry, o / entry.name) for o in others)
        )
        for name in shared:
            shutil.move(str(first / name), str(common / name))
            for other in others:
                path = other / name
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        native = {f.name: sorted(p.name for p in f.iterdir()) for f in staged.values()}
        out.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(out / "libs", ignore_errors=True)  # unpacked from an older archive
        archive = out / "libs.zip"
        files = sorted(p for p in libs.rglob("*") if p.is_file())
        with (
            step(f"writing {len(files)} files ({len(shared)} packages shared) to {archive}"),
            zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zipped,
        ):
            for path in files:
                # A fixed time: the same inputs make the same archive.
                info = zipfile.ZipInfo(path.relative_to(libs).as_posix(), (1980, 1, 1, 0, 0, 0))
                info.external_attr = (path.stat().st_mode & 0o777) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zipped.writestr(info, path.read_bytes())
        unpacked = sum(p.stat().st_size for p in files)
    manifest = {
        "inplace_lsp": wheel.name.split("-")[1],
        "target": target,
        "pythons": list(pythons),
        # serve.py unpacks an archive once per id
        "id": hashlib.sha256(archive.read_bytes()).hexdigest()[:16],
        "files": len(files),
        "unpacked_bytes": unpacked,
        "common": shared,
        "native": native,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--target", required=True, choices=sorted(PLATFORMS))
    parser.add_argument("--wheel", type=Path, help="default: built from this checkout")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--python", action="append", help=f"default: {' '.join(PYTHONS)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="inplace-lsp-wheel-") as tmp:
        wheel = args.wheel
        if wheel is None:
            with step("building the wheel of this checkout"):
                wheel = build_wheel(Path(tmp))
        manifest = bundle(wheel.resolve(), args.target, args.out, tuple(args.python or PYTHONS))
    size = (args.out / "libs.zip").stat().st_size
    print(
        f"bundled inplace-lsp {manifest['inplace_lsp']} for {args.target}, Python "
        f"{', '.join(manifest['pythons'])}: {manifest['files']} files, "
        f"{manifest['unpacked_bytes'] / 1e6:.1f} MB in {args.out / 'libs.zip'} "
        f"({size / 1e6:.1f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
