"""Minimal reproductions of the false Error findings the analyzer gave on known-good
libraries (tests/test_realcode.py), one per class of cause: each snippet keeps the library's
statements, and torch runs it fine with the inputs the library gives it.

`test_torch_runs_it` proves the code fine; `test_no_error_finding` holds the analyzer to it
(each of these was an Error before the analysis followed the fact in question: integer
tensors, `.long()`, unreachable graph nodes, `requires_grad` toggles, container inputs, a
method's arguments, Python ints, `register_parameter(name, None)`, frozen parameters).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Severity

Namespace = dict[str, Any]


@dataclass(frozen=True)
class Snippet:
    name: str
    source: str
    lines: tuple[int, ...]  # where the analyzer reported the false Error
    stands_for: str  # the realcode findings of this class
    run: Callable[[Namespace], None]  # runs the snippet under torch, the library's way


def _int_ids(ns: Namespace) -> None:
    torch = ns["torch"]
    model = ns["Decoder"]()
    labels = torch.randint(2, 50, (2, 7))
    model(labels).sum().backward()
    assert model.embed.weight.grad is not None
    with pytest.raises(RuntimeError, match="floating point"):
        labels.requires_grad_()  # token ids cannot require grad at all


INT_IDS = Snippet(
    "integer_token_ids",
    """
    import torch
    from torch import nn


    def shift_tokens_right(input_ids: torch.Tensor, pad_token_id: int):
        prev = input_ids.clone()
        index_of_eos = (prev.ne(pad_token_id).sum(dim=1) - 1).unsqueeze(-1)
        start = prev.gather(1, index_of_eos).squeeze()
        prev[:, 1:] = prev[:, :-1].clone()
        prev[:, 0] = start
        return prev


    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 4)

        def forward(self, labels: torch.LongTensor):
            return self.embed(shift_tokens_right(labels, 1))
    """,
    (9,),
    "transformers mbart:74, plbart:623",
    _int_ids,
)


def _long(ns: Namespace) -> None:
    torch = ns["torch"]
    noise_batch = torch.randn(3, 100, requires_grad=True)
    lengths = torch.tensor([150, 200, 120])
    noise, _ = ns["AddNoise"]()._load_noise(lengths, noise_batch, torch.tensor([0.5, 0.7, 0.9]))
    noise.sum().backward()
    assert noise_batch.grad is not None


LONG = Snippet(
    "long_cast_result",
    """
    import torch
    from torch import nn


    class AddNoise(nn.Module):
        def _load_noise(self, lengths, noise_batch, noise_len):
            noise_len = (noise_len * noise_batch.shape[1]).long()
            while torch.any(noise_len < lengths):
                min_len = torch.min(noise_len)
                noise_batch = torch.cat((noise_batch[:, :min_len], noise_batch), axis=1)
                noise_len += min_len
            return noise_batch, noise_len
    """,
    (11,),
    "speechbrain augment/time_domain.py:242",
    _long,
)


def _max_indices(ns: Namespace) -> None:
    torch = ns["torch"]
    xxs = torch.randn(2, 5, 16, 3, requires_grad=True)
    delays = ns["GccPhat"]()(xxs)
    assert delays.grad_fn is None  # integer indices: no graph through them
    (xxs.sum() * delays.sum()).backward()


MAX_INDICES = Snippet(
    "max_indices_values_discarded",
    """
    import torch
    from torch import nn


    class GccPhat(nn.Module):
        def forward(self, xxs: torch.Tensor):
            n_fft = xxs.shape[2]
            xxs_sliced = torch.cat((xxs[..., 0:4, :], xxs[..., -4:, :]), 2)
            _, delays = torch.max(xxs_sliced, 2)
            delays[delays >= 4] += n_fft - xxs_sliced.shape[2]
            return delays
    """,
    (10,),
    "speechbrain processing/multi_mic.py:817",
    _max_indices,
)


def _toggle(ns: Namespace) -> None:
    torch = ns["torch"]
    layer = torch.nn.Linear(6, 4)
    pruned = ns["prune_linear_layer"](layer, torch.tensor([0, 2]))
    pruned(torch.randn(3, 6, requires_grad=True)).sum().backward()
    assert torch.equal(pruned.weight, layer.weight[[0, 2]])
    assert pruned.weight.requires_grad and pruned.weight.grad is not None


TOGGLE = Snippet(
    "requires_grad_false_around_copy",
    """
    import torch
    from torch import nn


    def prune_linear_layer(layer: nn.Linear, index: torch.LongTensor) -> nn.Linear:
        W = layer.weight.index_select(0, index).detach().clone()
        new_layer = nn.Linear(layer.in_features, len(index))
        new_layer.weight.requires_grad = False
        new_layer.weight.copy_(W.contiguous())
        new_layer.weight.requires_grad = True
        return new_layer
    """,
    (9,),
    "transformers pytorch_utils.py:86, 90",
    _toggle,
)


def _tuple_floats(ns: Namespace) -> None:
    torch = ns["torch"]
    x = torch.randn(2, 4, 3, requires_grad=True)
    # diffusers' pipelines/ltx/*.py: (temporal_ratio / frame_rate, spatial_ratio, spatial_ratio)
    ns["RotaryCoords"]()(x, (8 / 25, 32, 32)).sum().backward()
    assert x.grad is not None


TUPLE_FLOATS = Snippet(
    "tuple_input_of_floats",
    """
    import torch
    from torch import nn


    class RotaryCoords(nn.Module):
        def forward(self, x: torch.Tensor, scale: tuple[torch.Tensor, float, float]):
            grid = torch.arange(4, dtype=torch.float32).repeat(x.size(0), 3, 1)
            grid[:, 0:1] = grid[:, 0:1] * scale[0] / 20
            grid[:, 1:2] = grid[:, 1:2] * scale[1] / 2048
            return x * grid.transpose(1, 2)
    """,
    (8, 9),
    "diffusers models/transformers/transformer_ltx.py:218-220",
    _tuple_floats,
)


def _numbers(ns: Namespace) -> None:
    torch = ns["torch"]
    kernel = ns["SSIMLoss"]().gaussian_filter(11, 1.5)
    x = torch.randn(1, 1, 20, 20, requires_grad=True)
    torch.nn.functional.conv2d(x, kernel.unsqueeze(0)).sum().backward()
    assert x.grad is not None and not kernel.requires_grad


NUMBERS = Snippet(
    "number_arguments_of_a_method",
    """
    import torch
    from torch import nn


    class SSIMLoss(nn.Module):
        def gaussian_filter(self, kernel_size, sigma):
            coords = torch.arange(kernel_size, dtype=torch.float32)
            coords -= (kernel_size - 1) / 2.0
            g = coords**2
            g = (-(g.unsqueeze(0) + g.unsqueeze(1)) / (2 * sigma**2)).exp()
            g /= g.sum()
            return g.unsqueeze(0)
    """,
    (11,),
    "speechbrain lobes/models/FastSpeech2.py:1527",
    _numbers,
)


def _len_count(ns: Namespace) -> None:
    torch = ns["torch"]
    trans_prob = ns["Aligner"]()._make_trans_prob(torch.tensor([3, 5]))
    emission = torch.randn(2, 5, 5, requires_grad=True)
    (emission.log_softmax(-1) + trans_prob).logsumexp(-1).sum().backward()
    assert emission.grad is not None and not trans_prob.requires_grad


LEN_COUNT = Snippet(
    "python_int_repeat_count",
    """
    import torch
    from torch import nn


    class Aligner(nn.Module):
        def _make_trans_prob(self, phn_lens_abs):
            U_max = int(phn_lens_abs.max())
            trans_prob = torch.eye(U_max).repeat(len(phn_lens_abs), 1, 1)
            mask = torch.arange(U_max)[None, :] < phn_lens_abs[:, None]
            trans_prob = trans_prob * mask.unsqueeze(2).float()
            trans_prob = torch.nn.functional.log_softmax(trans_prob, dim=2)
            trans_prob[trans_prob != trans_prob] = -1e5
            return trans_prob
    """,
    (12,),
    "speechbrain alignment/aligner.py:535",
    _len_count,
)


def _none_parameter(ns: Namespace) -> None:
    tracked = ns["ComplexBatchNorm"](4)
    tracked.reset_running_stats()
    assert "moving_mean" in dict(tracked.named_buffers())
    ns["ComplexBatchNorm"](4, track_running_stats=False).reset_running_stats()


NONE_PARAMETER = Snippet(
    "register_parameter_none",
    """
    import torch
    from torch import nn


    class ComplexBatchNorm(nn.Module):
        def __init__(self, n: int, track_running_stats: bool = True):
            super().__init__()
            if track_running_stats:
                self.register_buffer("moving_mean", torch.zeros(n))
            else:
                self.register_parameter("moving_mean", None)

        def reset_running_stats(self):
            if self.moving_mean is not None:
                self.moving_mean.zero_()
    """,
    (15,),
    "speechbrain nnet/complex_networks/c_normalization.py:136-141",
    _none_parameter,
)


def _frozen(ns: Namespace) -> None:
    torch = ns["torch"]
    vad = ns["VAD"]({"dnn": torch.nn.Linear(6, 1)})
    prob = vad.get_speech_prob_file(torch.randn(4, 9, 6))  # chunks read from an audio file
    assert prob.shape == (4, 8, 1) and not prob.requires_grad


FROZEN = Snippet(
    "parameters_frozen_in_base_class",
    """
    import torch


    class Pretrained(torch.nn.Module):
        def __init__(self, mods, freeze_params=True):
            super().__init__()
            self.mods = torch.nn.ModuleDict(mods)
            if freeze_params:
                for p in self.mods.parameters():
                    p.requires_grad = False


    class VAD(Pretrained):
        def get_speech_prob_chunk(self, wavs):
            return torch.sigmoid(self.mods.dnn(wavs))

        def get_speech_prob_file(self, chunks):
            prob = self.get_speech_prob_chunk(chunks)[:, :-1, :]
            window = torch.hamming_window(prob.shape[1])
            half = int(prob.shape[1] / 2)
            prob[0, half:] = prob[0, half:] * window[half:].unsqueeze(1)
            return prob
    """,
    (21,),
    "speechbrain inference/VAD.py:207",
    _frozen,
)

SNIPPETS = [
    INT_IDS,
    LONG,
    MAX_INDICES,
    TOGGLE,
    TUPLE_FLOATS,
    NUMBERS,
    LEN_COUNT,
    NONE_PARAMETER,
    FROZEN,
]


def _text(snippet: Snippet) -> str:
    return textwrap.dedent(snippet.source).lstrip("\n")


def test_snippets_are_short_and_distinct() -> None:
    assert len({s.name for s in SNIPPETS}) == len(SNIPPETS)
    for snippet in SNIPPETS:
        body = [line for line in _text(snippet).splitlines() if line.strip()]
        assert len(body) <= 20, f"{snippet.name}: {len(body)} lines"


@pytest.mark.torch
@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_torch_runs_it(snippet: Snippet) -> None:
    pytest.importorskip("torch")
    namespace: Namespace = {"__name__": f"_realcode_snippet_{snippet.name}"}
    exec(compile(_text(snippet), f"<{snippet.name}>", "exec"), namespace)
    snippet.run(namespace)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_the_analyzer_reports_it_where_the_library_does(snippet: Snippet) -> None:
    """Keeps the reproductions honest: each still shows the false finding (at the statement
    that reproduces the library's), or, once fixed, none; never an Error somewhere else."""
    errors = [f for f in analyze(_text(snippet), "x.py") if f.severity is Severity.ERROR]
    assert {f.line for f in errors} <= set(snippet.lines), [(f.line, f.message) for f in errors]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_no_error_finding(snippet: Snippet) -> None:
    errors = [f for f in analyze(_text(snippet), "x.py") if f.severity is Severity.ERROR]
    assert not errors, f"{snippet.stands_for}: " + "; ".join(
        f"{f.line}: {f.code} {f.message}" for f in errors
    )
