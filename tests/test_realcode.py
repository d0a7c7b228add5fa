"""The analysis over every .py file of seven known-good PyTorch libraries (torchvision, timm,
all of transformers/, diffusers, speechbrain, torchrl, open_clip): no exception, no syntax error
where `ast.parse` accepts the file, and exactly the Error-level findings listed below: the real
bugs proven by running them (ALLOWED_ERRORS) and the false ones the analyzer must fix
(KNOWN_FALSE_ERRORS).

Each file is analysed with its path in a workspace rooted at the unpacked wheel, as
`inplace-lsp check` analyses it: imports resolve, so a model whose base class comes from
`...modeling_utils` is known to be an nn.Module. (Without a path transformers' mbart/plbart
findings below do not show, because no imported base class is known.)

The sources are downloaded once into a cache outside the repository (benchmarks/_sources.py);
without network a corpus's tests skip, unless INPLACE_LSP_REQUIRE_REALCODE=1 makes that a
failure. The minimal reproductions of the false findings, with torch runs proving the code
fine, are in tests/test_realcode_snippets.py.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import random
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest
from edits import parses, semantic_edits

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.findings import Finding, Severity
from inplace_lsp.analysis.workspace import Workspace

pytestmark = pytest.mark.realcode

REPO = Path(__file__).resolve().parents[1]
REQUIRE_ENV = "INPLACE_LSP_REQUIRE_REALCODE"

Key = tuple[str, int, str]  # (path inside the wheel, line, code)

# Error findings that are real autograd bugs. Every entry needs a comment saying how it was
# proven by running it (torch 2.13 CPU); the test_*_fails_backward tests below run them again.
ALLOWED_ERRORS: frozenset[Key] = frozenset(
    {
        # Proven by running: the same statements, `x = x0.clone();
        # x[:, :4] = conv(x[:, :4]); x.sum().backward()` with nn.Conv2d(4, 4, 3, 1, 1),
        # raise "one of the variables needed for gradient computation has been modified by an
        # inplace operation", also when x0 does not require grad (Conv2d saves its input for
        # the weight's gradient). timm comments this forward "only for inference".
        ("timm/models/fasternet.py", 55, "IPL001"),
        # Proven by running: DogeCDMoE.forward's router with norm_topk_prob=True (router_gate
        # Linear, two topk, F.softmax, then `routing_weights /= routing_weights.sum(...)`) on a
        # hidden state that requires grad: backward raises "modified by an inplace operation
        # ... output 0 of Softmax" (softmax saved its output). tests/cases/105.
        ("transformers/models/doge/modeling_doge.py", 426, "IPL001"),
        ("transformers/models/doge/modular_doge.py", 371, "IPL001"),  # the same code
        # Proven by running speechbrain 1.1.2's own Gev beamformer (multi_mic.py and
        # decomposition.py loaded from the wheel) on STFT covariances SSs, NNs that require
        # grad: backward raises "modified by an inplace operation ... output 0 of AsStrided"
        # (`F_re**2` saved F_re, a view of the eigenvectors; `F_re *= F_norm` overwrites it).
        # With only Xs requiring grad it runs. Rewritten out of place, backward gets one step
        # further and stops at torch.unique(dim=...), which has no derivative: this beamformer
        # is not differentiable in its covariances at all, so nobody backpropagates there.
        ("speechbrain/processing/multi_mic.py", 644, "IPL001"),
    }
)

# Error findings that are FALSE: torch runs the code path fine with realistic inputs (each
# proven in tests/test_realcode_snippets.py, which also holds a minimal reproduction). The
# analyzer must fix them; the test fails both when a new false error appears and when one of
# these is no longer reported (then delete its entry). Value: the fact the analyzer assumed.
KNOWN_FALSE_ERRORS: Mapping[Key, str] = {
    # None now. The 17 this list held (integer token ids, `.long()` results, max's discarded
    # values, `requires_grad = False` around a copy, a tuple forward input, a method's number
    # arguments, len() as a repeat count, register_parameter(name, None), parameters frozen in
    # a base class) are fixed; tests/test_realcode_snippets.py keeps one reproduction of each.
}

# Fewer files than this means a broken download or unpack, not a smaller library.
MIN_FILES: Mapping[str, int] = {
    "torchvision": 150,
    "timm": 250,
    "transformers": 2500,
    "diffusers": 1000,
    "speechbrain": 200,
    "torchrl": 400,
    "open_clip": 30,
}


@dataclass
class RealcodeRun:
    files: int = 0
    errors: dict[Key, Finding] = field(default_factory=dict)
    crashes: list[str] = field(default_factory=list)
    bad_splits: list[str] = field(default_factory=list)


def _load_sources() -> ModuleType:
    path = REPO / "benchmarks" / "_sources.py"
    spec = importlib.util.spec_from_file_location("inplace_lsp_bench_sources", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


SOURCES = _load_sources()
CORPUS_NAMES = list(SOURCES.CORPORA)


class Corpora:
    """Each corpus analysed once per session, when a test first asks for it."""

    def __init__(self) -> None:
        self._runs: dict[str, RealcodeRun | str] = {}

    def run(self, name: str) -> RealcodeRun:
        if name not in self._runs:
            try:
                paths = SOURCES.corpus_files([name])[name]
            except SOURCES.SourcesUnavailable as exc:
                self._runs[name] = f"{name} sources unavailable: {exc}"
            else:
                self._runs[name] = _analyse(name, paths)
        found = self._runs[name]
        if isinstance(found, str):
            _unavailable(found)
        return found


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(reason)
    pytest.skip(f"{reason} (set {REQUIRE_ENV}=1 to make this a failure)")


def _corpus_root(name: str) -> Path:
    """The unpacked wheel (downloaded when not cached); the test skips without it."""
    corpus = SOURCES.CORPORA[name]
    try:
        return SOURCES.fetch({corpus.distribution: corpus.version})[corpus.distribution]
    except SOURCES.SourcesUnavailable as exc:
        _unavailable(f"{name} sources unavailable: {exc}")


def _analyse(name: str, paths: list[Path]) -> RealcodeRun:
    root = _corpus_root(name)
    workspace = Workspace(root, use_jedi=False)
    run = RealcodeRun()
    for path in paths:
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        run.files += 1
        analysis = DocumentAnalysis(
            parse_cache=workspace.parse_cache, path=str(path), workspace=workspace
        )
        analysis.log_notes = False
        try:
            result = analysis.update(text)
        except Exception as exc:  # the point of the test: report every file that crashes
            run.crashes.append(f"{relative}: {type(exc).__name__}: {exc}")
            continue
        if result.syntax_errors and parses(text):
            first = result.syntax_errors[0]
            run.bad_splits.append(f"{relative}:{first.line}: {first.message}")
        for finding in result.findings:
            if finding.severity is Severity.ERROR:
                run.errors[(relative, finding.span.line, finding.code)] = finding
    return run


def _in_corpus(name: str, keys: Iterable[Key]) -> set[Key]:
    packages = SOURCES.CORPORA[name].packages
    return {key for key in keys if key[0].split("/")[0] in packages}


@pytest.fixture(scope="session")
def corpora() -> Corpora:
    return Corpora()


corpus_param = pytest.mark.parametrize("name", CORPUS_NAMES)


def test_every_listed_finding_belongs_to_a_corpus() -> None:
    packages = {p for corpus in SOURCES.CORPORA.values() for p in corpus.packages}
    listed = set(ALLOWED_ERRORS) | set(KNOWN_FALSE_ERRORS)
    assert {key[0].split("/")[0] for key in listed} <= packages
    assert not set(ALLOWED_ERRORS) & set(KNOWN_FALSE_ERRORS)


@corpus_param
def test_sources_are_there(corpora: Corpora, name: str) -> None:
    run = corpora.run(name)
    assert run.files >= MIN_FILES[name], f"only {run.files} files: is the download complete?"


@corpus_param
def test_no_exception(corpora: Corpora, name: str) -> None:
    run = corpora.run(name)
    assert not run.crashes, "the analysis raised on:\n" + "\n".join(run.crashes)


@corpus_param
def test_no_syntax_error_where_the_file_parses(corpora: Corpora, name: str) -> None:
    run = corpora.run(name)
    assert not run.bad_splits, (
        "syntax errors reported in files that ast.parse accepts (block splitting):\n"
        + "\n".join(run.bad_splits)
    )


@corpus_param
def test_error_findings_are_the_listed_ones(corpora: Corpora, name: str) -> None:
    """Found == proven real + known false, exactly: a new Error finding fails (prove it real
    by a run, or list it as false), and so does a listed one that is no longer found."""
    run = corpora.run(name)
    found = set(run.errors)
    real = _in_corpus(name, ALLOWED_ERRORS)
    false = _in_corpus(name, KNOWN_FALSE_ERRORS)
    lines = [
        f"{path}:{line}: {code} new Error finding: {run.errors[(path, line, code)].message}"
        for path, line, code in sorted(found - real - false)
    ]
    lines += [
        f"{path}:{line}: {code} in ALLOWED_ERRORS but no longer found"
        for path, line, code in sorted(real - found)
    ]
    lines += [
        f"{path}:{line}: {code} fixed, delete it from KNOWN_FALSE_ERRORS"
        for path, line, code in sorted(false - found)
    ]
    assert not lines, (
        "Error-level findings on known-good code differ from ALLOWED_ERRORS + "
        "KNOWN_FALSE_ERRORS:\n" + "\n".join(lines)
    )


@pytest.mark.torch
def test_fasternet_slicing_forward_fails_backward() -> None:
    """The allow-listed finding, proven: FasterNet's `forward_slicing` pattern (clone, then
    write a convolution of a slice back into that slice) breaks backward, because Conv2d saved
    the slice it read (a view sharing the clone's version counter)."""
    torch = pytest.importorskip("torch")
    conv = torch.nn.Conv2d(4, 4, 3, 1, 1)
    x0 = torch.randn(2, 8, 5, 5)
    x = x0.clone()
    x[:, :4, :, :] = conv(x[:, :4, :, :])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


@pytest.mark.torch
def test_doge_router_renormalized_softmax_fails_backward() -> None:
    """transformers' DogeCDMoE router with norm_topk_prob=True: `/=` on the softmax output,
    which softmax saved for backward."""
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    router_gate = torch.nn.Linear(8, 6, bias=False)
    hidden_states = torch.randn(2, 3, 8, requires_grad=True)
    router_logits = router_gate(hidden_states).view(2, 6, -1)
    (scores_x, scores_y), _ = router_logits.topk(2, dim=-1)
    all_scores = (scores_x.unsqueeze(-1) + scores_y.unsqueeze(-2)).flatten(-2)
    scores, _ = all_scores.topk(2, dim=-1)
    routing_weights = functional.softmax(scores, dim=-1)
    routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
    with pytest.raises(RuntimeError, match="output 0 of Softmax"):
        routing_weights.sum().backward()


@pytest.mark.torch
def test_gev_normalization_of_eigenvector_view_fails_backward() -> None:
    """speechbrain's Gev._gev: `F_re = Vs[..., n - 1, 0]`, `F_re**2` saves that view, then
    `F_re *= F_norm` overwrites it; Vs stands for the eigenvectors of covariances that require
    grad (the library's own gevd was run too, see ALLOWED_ERRORS)."""
    torch = pytest.importorskip("torch")
    covariance = torch.randn(1, 2, 5, 4, 2, requires_grad=True)
    Vs = covariance * 2  # differentiable in the covariance, as the eigenvectors are
    F_re = Vs[..., 3, 0]
    F_im = Vs[..., 3, 1]
    F_norm = 1.0 / (torch.sum(F_re**2 + F_im**2, dim=2, keepdim=True) ** 0.5).repeat(1, 1, 5)
    F_re *= F_norm
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        F_re.sum().backward()


@pytest.mark.torch
def test_speechbrain_gev_fails_backward_in_the_library_code() -> None:
    """The Gev entry of ALLOWED_ERRORS on speechbrain's own code (multi_mic.py and the
    decomposition.py it imports, both torch-only), with covariances that require grad."""
    torch = pytest.importorskip("torch")
    processing = _corpus_root("speechbrain") / "speechbrain" / "processing"
    decomposition = ModuleType("speechbrain.processing.decomposition")
    exec(
        compile((processing / "decomposition.py").read_text("utf-8"), "decomposition.py", "exec"),
        decomposition.__dict__,
    )
    source = (processing / "multi_mic.py").read_text("utf-8")
    source = source.replace("import speechbrain.processing.decomposition as eig", "")
    multi_mic = ModuleType("speechbrain.processing.multi_mic")
    multi_mic.__dict__["eig"] = decomposition
    exec(compile(source, "multi_mic.py", "exec"), multi_mic.__dict__)

    def stft(x: Any) -> Any:  # [batch, time, mics] -> speechbrain's [batch, frames, bins, 2, mics]
        frames = torch.stft(
            x.transpose(1, 2).reshape(-1, x.shape[1]),
            64,
            window=torch.hann_window(64),
            return_complex=True,
        )
        frames = torch.view_as_real(frames).reshape(x.shape[0], x.shape[2], 33, -1, 2)
        return frames.permute(0, 3, 2, 4, 1)

    torch.manual_seed(0)
    speech, noise = torch.randn(1, 2000, 4), 0.05 * torch.randn(1, 2000, 4)
    covariance = multi_mic.Covariance()
    SSs = covariance(stft(speech)).detach().requires_grad_()
    NNs = covariance(stft(noise)).detach().requires_grad_()
    Ys = multi_mic.Gev()(stft(speech + noise), SSs, NNs)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        Ys.sum().backward()


def _library_function(path: Path, name: str, namespace: dict[str, Any]) -> Any:
    """One top-level function of a library file, compiled alone into `namespace` (the rest of
    the module imports what this checkout has not installed)."""
    tree = ast.parse(path.read_text("utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    node.decorator_list = []
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)  # noqa: S102
    return namespace[name]


def test_torchvision_hue_adjustment_refuses_an_image_that_requires_grad() -> None:
    """The IPL009 warnings on torchvision's transforms/v2/functional/_color.py ("fails if
    `image` requires grad"), proven on its own code: `_rgb_to_hsv` and `adjust_hue_image` write
    in place into the channels `unbind` returns, which torch refuses while they require grad."""
    torch = pytest.importorskip("torch")
    color = _corpus_root("torchvision") / "torchvision/transforms/v2/functional/_color.py"
    namespace: dict[str, Any] = {"torch": torch}
    rgb_to_hsv = _library_function(color, "_rgb_to_hsv", namespace)
    _library_function(color, "_hsv_to_rgb", namespace)
    image = torch.rand(3, 4, 4)
    rgb_to_hsv(image)  # runs on an image that does not require grad
    with pytest.raises(RuntimeError, match="returns multiple views"):
        rgb_to_hsv(image.clone().requires_grad_())
    # adjust_hue_image's own `h.add_(hue_factor)` (line 392), past the conversion: an HSV image
    # that requires grad (its float conversion and _rgb_to_hsv stand in as copies).
    namespace["to_dtype_image"] = lambda image, dtype, scale: image
    namespace["_rgb_to_hsv"] = lambda image: image * 1.0
    adjust_hue = _library_function(color, "adjust_hue_image", namespace)
    adjust_hue(image, 0.1)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        adjust_hue(image.clone().requires_grad_(), 0.1)


@pytest.mark.parametrize(
    ("name", "relative"),
    [
        ("torchvision", "torchvision/models/resnet.py"),
        ("transformers", "transformers/models/llama/modeling_llama.py"),
        ("timm", "timm/models/vision_transformer.py"),
    ],
)
def test_incremental_equals_fresh_on_real_model_files(name: str, relative: str) -> None:
    """Edits that change what real model code means (an `inplace=` flag, an op, a base class,
    a line dropped or doubled): after each, the editor's incremental analysis (which keeps
    each entry point's findings while what it read is unchanged) equals a fresh one."""
    root = _corpus_root(name)
    path = root / relative
    text = path.read_text(encoding="utf-8")
    workspace = Workspace(root, use_jedi=False)
    live = DocumentAnalysis(parse_cache=workspace.parse_cache, path=str(path), workspace=workspace)
    live.log_notes = False
    live.update(text)
    for version in semantic_edits(text, random.Random(relative), count=12):
        fresh = DocumentAnalysis(path=str(path), workspace=workspace)
        fresh.log_notes = False
        assert live.update(version).findings == fresh.update(version).findings
