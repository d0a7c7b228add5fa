"""Fetches the Python sources of known-good PyTorch libraries (torchvision, timm, transformers,
diffusers, speechbrain, torchrl, open_clip) for the benchmarks and the realcode tests, and caches
them outside the repository.

The wheels come from the package index through `pip download --no-deps --only-binary=:all:`
and are unpacked with zipfile into `~/.cache/inplace-lsp/realcode/<name>-<version>/` (override
the root with INPLACE_LSP_REALCODE_DIR). Versions are pinned so that line numbers, and therefore
the realcode test's allow-list, do not move under us; a cached copy is used without the network.
These sources are never committed.

    python benchmarks/_sources.py              # fetch every corpus and print where it is
    python benchmarks/_sources.py timm diffusers    # only these corpora

`PACKAGES` (torchvision and timm) stays the default of `fetch` and `python_files`, so the
throughput and latency figures measured on it keep comparing; `CORPORA` names every corpus and
`corpus_files` lets a caller choose among them.

When the download fails (no network, no pip) `SourcesUnavailable` says why: tests turn it into
a skip, benchmarks into a message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Corpus:
    """One library: the distribution pip downloads, its pinned version, and the top-level
    directories of the wheel that hold its own code (open_clip_torch ships `open_clip` and
    `open_clip_train`; torchrl's wheel also carries example scripts we leave out)."""

    distribution: str
    version: str
    packages: tuple[str, ...]


# Pinned: torchvision 0.29 goes with torch 2.13, the version the knowledge table was probed on;
# the others are the newest wheels that downloaded on 2026-12-01 (torchrl's is per platform).
CORPORA: Mapping[str, Corpus] = {
    "torchvision": Corpus("torchvision", "0.29.1", ("torchvision",)),
    "timm": Corpus("timm", "1.0.31", ("timm",)),
    "transformers": Corpus("transformers", "5.24.0", ("transformers",)),
    "diffusers": Corpus("diffusers", "0.42.1", ("diffusers",)),
    "speechbrain": Corpus("speechbrain", "1.1.2", ("speechbrain",)),
    "torchrl": Corpus("torchrl", "0.14.1", ("torchrl",)),
    "open_clip": Corpus("open_clip_torch", "3.3.0", ("open_clip", "open_clip_train")),
}
# distribution -> version: what the benchmarks measured on before the other corpora came.
PACKAGES: Mapping[str, str] = {name: CORPORA[name].version for name in ("torchvision", "timm")}
ENV_DIR = "INPLACE_LSP_REALCODE_DIR"
_COMPLETE = ".complete"  # written last: a directory without it is a half-finished unpack
_PIP_TIMEOUT_S = 600


class SourcesUnavailable(RuntimeError):
    """The sources could not be downloaded or unpacked; the message says why."""


def cache_root() -> Path:
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "inplace-lsp" / "realcode"


def _download(name: str, version: str, into: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--timeout",
        "20",
        "--retries",
        "1",
        "-d",
        str(into),
        f"{name}=={version}",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourcesUnavailable(f"pip download {name}=={version} failed: {exc}") from exc
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise SourcesUnavailable(
            f"pip download {name}=={version} failed (exit {done.returncode}; no network?):\n{tail}"
        )
    return wheels[0]


def _unpack(wheel: Path, target: Path) -> None:
    """Only the .py files: the wheels also carry compiled extensions we never read."""
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                name = member.filename
                if not name.endswith(".py") or name.startswith("/") or ".." in name.split("/"):
                    continue
                archive.extract(member, staging)
        (staging / _COMPLETE).write_text(wheel.name + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except (OSError, zipfile.BadZipFile) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise SourcesUnavailable(f"cannot unpack {wheel.name}: {exc}") from exc


def fetch(packages: Mapping[str, str] = PACKAGES, root: Path | None = None) -> dict[str, Path]:
    """name -> directory holding the package's sources (downloaded when not cached)."""
    root = root or cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourcesUnavailable(f"cannot create the cache directory {root}: {exc}") from exc
    found: dict[str, Path] = {}
    for name, version in packages.items():
        target = root / f"{name}-{version}"
        if not (target / _COMPLETE).is_file():
            with tempfile.TemporaryDirectory(prefix="inplace-lsp-wheel-") as tmp:
                _unpack(_download(name, version, Path(tmp)), target)
        found[name] = target
    return found


def _package_dirs(distribution: str) -> tuple[str, ...]:
    for corpus in CORPORA.values():
        if corpus.distribution == distribution:
            return corpus.packages
    return (distribution,)


def _files_under(directory: Path, packages: tuple[str, ...]) -> list[Path]:
    files: list[Path] = []
    for package in packages:
        package_dir = directory / package
        if not package_dir.is_dir():
            raise SourcesUnavailable(f"{directory} has no {package}/ package directory")
        files += sorted(package_dir.rglob("*.py"))
    return files


def python_files(packages: Mapping[str, str] = PACKAGES, root: Path | None = None) -> list[Path]:
    """Every .py file of the packages' own code (not their .dist-info), sorted."""
    files: list[Path] = []
    for name, directory in fetch(packages, root).items():
        files += _files_under(directory, _package_dirs(name))
    return files


def corpus_files(
    names: Iterable[str] | None = None, root: Path | None = None
) -> dict[str, list[Path]]:
    """corpus name -> its .py files, for the chosen corpora of CORPORA (all when None)."""
    chosen = list(CORPORA) if names is None else list(names)
    unknown = [name for name in chosen if name not in CORPORA]
    if unknown:
        raise ValueError(f"unknown corpus {', '.join(unknown)} (known: {', '.join(CORPORA)})")
    found: dict[str, list[Path]] = {}
    for name in chosen:
        corpus = CORPORA[name]
        directory = fetch({corpus.distribution: corpus.version}, root)[corpus.distribution]
        found[name] = _files_under(directory, corpus.packages)
    return found


def main(argv: list[str] | None = None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or None
    try:
        corpora = corpus_files(names)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SourcesUnavailable as exc:
        print(f"sources unavailable: {exc}", file=sys.stderr)
        return 1
    for name, files in corpora.items():
        corpus = CORPORA[name]
        directory = cache_root() / f"{corpus.distribution}-{corpus.version}"
        print(f"{name} {corpus.version}: {len(files)} .py files in {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
