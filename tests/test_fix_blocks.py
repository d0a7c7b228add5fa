"""The fixes cut a document into top-level blocks as the analysis does (`analysis.blocks`,
issue 24 "One of each"): a column-0 line inside a triple-quoted string is no statement, and a
decorated definition's block starts at its decorators."""

from __future__ import annotations

import ast

from inplace_lsp import fixes
from inplace_lsp.analysis import blocks, engine
from inplace_lsp.analysis.lines import lines_with_ends
from inplace_lsp.fixes.source import Source

STEP = """import torch


def step(w, h):
    y = w * h
    h += 1
    return y


USAGE = \"\"\"
out = step(w, h)
print(h)
\"\"\"


@torch.jit.unused
def helper(x):
    return x


def main():
    w = torch.ones(2, requires_grad=True)
    h = torch.ones(2, requires_grad=True) * 2
    step(w, h).sum().backward()
"""


def test_a_string_that_reads_like_a_call_site_is_no_caller() -> None:
    """`h += 1` in `step` is fixable (no caller reads `h` after the call). The old splitter of
    the fixes took the string's column-0 lines for statements, found a "call" of `step` whose
    "caller" reads `h` afterwards, and offered no fix."""
    (finding,) = [f for f in engine.analyze_document(STEP).findings if f.code == "IPL001"]
    edits = fixes.edits_for(STEP, finding)
    assert edits and [e.new_text for e in edits] == ["= h +"]


def test_source_blocks_are_the_analysis_blocks() -> None:
    source = Source(STEP)
    whole = blocks.Splitter().split(STEP)
    for block in whole:
        last = block.start_line + block.line_count - 1
        for line in range(block.start_line, last + 1):
            found = source.block(line)
            assert (found.first, found.last >= last) == (block.start_line, True)
            assert block.tree is not None
            assert ast.dump(found.tree) == ast.dump(block.tree)
    helper = source.block(STEP.splitlines().index("def helper(x):") + 1)
    assert helper.first == STEP.splitlines().index("@torch.jit.unused") + 1
    assert len(blocks.pieces(lines_with_ends(STEP))) == len(whole)
