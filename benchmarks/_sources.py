"""Fetches the Python sources of known-good PyTorch code for the benchmarks and the realcode
tests, and caches them outside the repository: the libraries of `CORPORA` (torchvision, timm,
transformers, diffusers, speechbrain, torchrl, open_clip) and the training scripts, recipes and
algorithm training loops of `TRAINING` (cleanrl, stable-baselines3, sb3-contrib, skrl, tianshou,
pfrl, d2l, labml-nn, lightning-bolts, pytorch-lightning, litgpt, trl, torchtune, torchrl's
sota-implementations, rl-games, elegantrl, torchgan).

The distributions come from the package index through `pip download --no-deps`: wheels with
`--only-binary=:all:`, or, for the few projects whose wheel lacks its scripts or that publish
no wheel (cleanrl, pfrl, elegantrl), the sdist with `--no-binary=:all:`. Only their .py files
are unpacked, into `~/.cache/inplace-lsp/realcode/<name>-<version>/` (override the root with
INPLACE_LSP_REALCODE_DIR); an sdist loses its top `<name>-<version>/` folder so that it is laid
out as a wheel is. Versions are pinned so that line numbers, and therefore the realcode test's
allow-list, do not move under us; a cached copy is used without the network. These sources are
never committed.

    python benchmarks/_sources.py              # fetch every corpus and print where it is
    python benchmarks/_sources.py timm diffusers    # only these corpora
    python benchmarks/_sources.py --training [cleanrl trl ...]  # the training-code corpora

`PACKAGES` (torchvision and timm) stays the default of `fetch` and `python_files`, so the
throughput and latency figures measured on it keep comparing; `CORPORA` names every library
corpus and `corpus_files` lets a caller choose among them; `TRAINING` and `training_files` do
the same for the training code.

When the download fails (no network, no pip) `SourcesUnavailable` says why: tests turn it into
a skip, benchmarks into a message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Corpus:
    """One corpus: the distribution pip downloads, its pinned version, and what of it we read.

    `packages` are paths inside the unpacked distribution: a directory (every .py file under
    it), a file, or a glob pattern (`cleanrl/*.py`, `trl/experimental/**/*_trainer.py`). The
    libraries name their top-level package directories (open_clip_torch ships `open_clip` and
    `open_clip_train`; torchrl's wheel also carries example scripts we leave out); the training
    corpora name only the scripts, recipes and training loops. `sdist` downloads the source
    distribution instead of the wheel."""

    distribution: str
    version: str
    packages: tuple[str, ...]
    sdist: bool = False


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
# Training code, pinned to the newest releases on the index on 2026-12-02 (cleanrl, pfrl and
# elegantrl publish sdists only; cleanrl's last release, 0.4.8, predates its 1.x scripts but
# ships dqn.py, ppo.py, sac_continuous_action.py, td3_continuous_action.py and the others).
# The parts are the training scripts, recipes and the algorithms' train()/update() loops, not
# the model libraries around them.
TRAINING: Mapping[str, Corpus] = {
    # single-file RL scripts: DQN, C51, PPO, PPG, RND, DDPG, TD3, SAC, offline DQN/CQL, Ape-X
    "cleanrl": Corpus("cleanrl", "0.4.8", ("cleanrl/*.py",), sdist=True),
    # each algorithm's train(), the on/off-policy collect-and-train loops
    "stable_baselines3": Corpus(
        "stable-baselines3",
        "2.9.2",
        (
            "stable_baselines3/a2c",
            "stable_baselines3/ddpg",
            "stable_baselines3/dqn",
            "stable_baselines3/her",
            "stable_baselines3/ppo",
            "stable_baselines3/sac",
            "stable_baselines3/td3",
            "stable_baselines3/common/on_policy_algorithm.py",
            "stable_baselines3/common/off_policy_algorithm.py",
        ),
    ),
    # RecurrentPPO (LSTM states across rollouts), TRPO, QR-DQN, TQC, CrossQ, ARS, MaskablePPO
    "sb3_contrib": Corpus(
        "sb3-contrib",
        "2.9.2",
        (
            "sb3_contrib/ars",
            "sb3_contrib/crossq",
            "sb3_contrib/ppo_mask",
            "sb3_contrib/ppo_recurrent",
            "sb3_contrib/qrdqn",
            "sb3_contrib/tqc",
            "sb3_contrib/trpo",
            "sb3_contrib/common/recurrent",
        ),
    ),
    # the PyTorch agents (soft target updates), multi-agent IPPO/MAPPO and the trainers
    "skrl": Corpus(
        "skrl", "2.1.1", ("skrl/agents/torch", "skrl/multi_agents/torch", "skrl/trainers/torch")
    ),
    # every algorithm's learn step (model-free, imitation, model-based, MARL) and the trainer
    "tianshou": Corpus("tianshou", "2.0.1", ("tianshou/algorithm", "tianshou/trainer.py")),
    "pfrl": Corpus("pfrl", "0.4.0", ("pfrl/agents",), sdist=True),
    # the PyTorch code of Dive into Deep Learning: Trainer, RNN/seq2seq training, GAN updates
    "d2l": Corpus("d2l", "1.0.3", ("d2l/torch.py",)),
    # the annotated GAN and RL implementations and every experiment/training script
    "labml_nn": Corpus(
        "labml-nn",
        "0.5.1",
        (
            "labml_nn/gan",
            "labml_nn/rl",
            "labml_nn/experiments",
            "labml_nn/**/experiment*.py",
            "labml_nn/**/*train*.py",
        ),
    ),
    # GAN and RL LightningModules, the self-supervised modules (BYOL/MoCo momentum updates)
    "lightning_bolts": Corpus(
        "lightning-bolts",
        "0.7.0",
        (
            "pl_bolts/models/gans",
            "pl_bolts/models/rl",
            "pl_bolts/models/self_supervised/*/*_module.py",
            "pl_bolts/models/self_supervised/**/*finetuner.py",
            "pl_bolts/callbacks/byol_updates.py",
            "pl_bolts/callbacks/ssl_online.py",
        ),
    ),
    # the demos (LSTM, transformer LM, boring model) and the optimization loops
    "pytorch_lightning": Corpus(
        "pytorch-lightning",
        "2.6.6",
        ("pytorch_lightning/demos", "pytorch_lightning/loops/optimization"),
    ),
    "litgpt": Corpus("litgpt", "0.5.13", ("litgpt/finetune", "litgpt/pretrain.py")),
    # the HF Trainer overrides (SFT, DPO, KTO, GRPO, RLOO, reward, distillation, experimental)
    "trl": Corpus(
        "trl",
        "1.16.0",
        (
            "trl/trainer/*_trainer.py",
            "trl/trainer/utils.py",
            "trl/experimental/**/*_trainer.py",
            "trl/scripts",
        ),
    ),
    "torchtune": Corpus("torchtune", "0.6.1", ("recipes", "torchtune/rlhf")),
    # the same wheel as CORPORA["torchrl"]: its training scripts rather than the library
    "torchrl_sota": Corpus("torchrl", "0.14.1", ("sota-implementations",)),
    "rl_games": Corpus(
        "rl-games",
        "1.6.5",
        (
            "rl_games/algos_torch/a2c_continuous.py",
            "rl_games/algos_torch/a2c_discrete.py",
            "rl_games/algos_torch/central_value.py",
            "rl_games/algos_torch/sac_agent.py",
            "rl_games/algos_torch/players.py",
            "rl_games/common/a2c_common.py",
            "rl_games/common/common_losses.py",
            "rl_games/common/player.py",
        ),
    ),
    "elegantrl": Corpus(
        "elegantrl", "0.3.6", ("elegantrl/agents", "elegantrl/train", "examples"), sdist=True
    ),
    # the trainers and the losses, whose train_ops run each GAN step
    "torchgan": Corpus("torchgan", "0.1.0", ("torchgan/trainer", "torchgan/losses")),
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


def _download(name: str, version: str, into: Path, *, sdist: bool = False) -> Path:
    """The wheel, or with `sdist` the source distribution, of name==version, into `into`."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary=:all:" if sdist else "--only-binary=:all:",
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
    archives = sorted(into.glob("*.tar.gz" if sdist else "*.whl"))
    if done.returncode != 0 or not archives:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise SourcesUnavailable(
            f"pip download {name}=={version} failed (exit {done.returncode}; no network?):\n{tail}"
        )
    return archives[0]


def _safe_member(name: str) -> bool:
    """A .py file whose path stays inside the folder it is extracted into."""
    return name.endswith(".py") and not name.startswith("/") and ".." not in name.split("/")


def _extract_wheel(wheel: Path, staging: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if _safe_member(member.filename):
                archive.extract(member, staging)


def _extract_sdist(sdist: Path, staging: Path) -> None:
    """The regular .py files of a .tar.gz, less its top `<name>-<version>/` folder, so that
    the package directories lie at the top as they do in a wheel."""
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive.getmembers():
            inner = member.name.partition("/")[2]
            if not member.isfile() or not inner or not _safe_member(inner):
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            destination = staging / inner
            destination.parent.mkdir(parents=True, exist_ok=True)
            with source:
                destination.write_bytes(source.read())


def _unpack(archive: Path, target: Path) -> None:
    """Only the .py files: the wheels also carry compiled extensions we never read, the sdists
    build files and data."""
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        if archive.name.endswith(".tar.gz"):
            _extract_sdist(archive, staging)
        else:
            _extract_wheel(archive, staging)
        (staging / _COMPLETE).write_text(archive.name + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise SourcesUnavailable(f"cannot unpack {archive.name}: {exc}") from exc


def _make_root(root: Path | None) -> Path:
    root = root or cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourcesUnavailable(f"cannot create the cache directory {root}: {exc}") from exc
    return root


def _fetch_one(name: str, version: str, root: Path, *, sdist: bool = False) -> Path:
    """The directory of name==version's sources under `root`, downloaded when not cached."""
    target = root / f"{name}-{version}"
    if not (target / _COMPLETE).is_file():
        with tempfile.TemporaryDirectory(prefix="inplace-lsp-wheel-") as tmp:
            _unpack(_download(name, version, Path(tmp), sdist=sdist), target)
    return target


def fetch(packages: Mapping[str, str] = PACKAGES, root: Path | None = None) -> dict[str, Path]:
    """name -> directory holding the package's sources (downloaded when not cached)."""
    root = _make_root(root)
    return {name: _fetch_one(name, version, root) for name, version in packages.items()}


def corpus_dir(corpus: Corpus, root: Path | None = None) -> Path:
    """Where the corpus's distribution is unpacked, the root its imports resolve from."""
    return (root or cache_root()) / f"{corpus.distribution}-{corpus.version}"


def _package_dirs(distribution: str) -> tuple[str, ...]:
    for corpus in CORPORA.values():
        if corpus.distribution == distribution:
            return corpus.packages
    return (distribution,)


def _files_under(directory: Path, packages: tuple[str, ...]) -> list[Path]:
    """The .py files the entries name: every one under a directory, a file itself, or the
    matches of a glob pattern; sorted per entry, each file once."""
    files: dict[Path, None] = {}
    for package in packages:
        if any(char in package for char in "*?["):
            matches = sorted(p for p in directory.glob(package) if p.suffix == ".py")
            if not matches:
                raise SourcesUnavailable(f"{directory} has no file matching {package}")
        elif (directory / package).is_dir():
            matches = sorted((directory / package).rglob("*.py"))
        elif (directory / package).is_file() and package.endswith(".py"):
            matches = [directory / package]
        elif package.endswith(".py"):
            raise SourcesUnavailable(f"{directory} has no {package} file")
        else:
            raise SourcesUnavailable(f"{directory} has no {package}/ package directory")
        files.update(dict.fromkeys(matches))
    return list(files)


def python_files(packages: Mapping[str, str] = PACKAGES, root: Path | None = None) -> list[Path]:
    """Every .py file of the packages' own code (not their .dist-info), sorted."""
    files: list[Path] = []
    for name, directory in fetch(packages, root).items():
        files += _files_under(directory, _package_dirs(name))
    return files


def _chosen_files(
    corpora: Mapping[str, Corpus], names: Iterable[str] | None, root: Path | None
) -> dict[str, list[Path]]:
    chosen = list(corpora) if names is None else list(names)
    unknown = [name for name in chosen if name not in corpora]
    if unknown:
        raise ValueError(f"unknown corpus {', '.join(unknown)} (known: {', '.join(corpora)})")
    root = _make_root(root)
    found: dict[str, list[Path]] = {}
    for name in chosen:
        corpus = corpora[name]
        directory = _fetch_one(corpus.distribution, corpus.version, root, sdist=corpus.sdist)
        found[name] = _files_under(directory, corpus.packages)
    return found


def corpus_files(
    names: Iterable[str] | None = None, root: Path | None = None
) -> dict[str, list[Path]]:
    """corpus name -> its .py files, for the chosen corpora of CORPORA (all when None)."""
    return _chosen_files(CORPORA, names, root)


def training_files(
    names: Iterable[str] | None = None, root: Path | None = None
) -> dict[str, list[Path]]:
    """corpus name -> its training-code .py files, for the chosen corpora of TRAINING (all
    when None)."""
    return _chosen_files(TRAINING, names, root)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    training = "--training" in args
    names = [arg for arg in args if arg != "--training"] or None
    corpora = TRAINING if training else CORPORA
    try:
        found = training_files(names) if training else corpus_files(names)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SourcesUnavailable as exc:
        print(f"sources unavailable: {exc}", file=sys.stderr)
        return 1
    for name, files in found.items():
        corpus = corpora[name]
        print(f"{name} {corpus.version}: {len(files)} .py files in {corpus_dir(corpus)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
