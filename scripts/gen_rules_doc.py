"""Generates docs/rules.md from the rule classes: their CODE, NAME, DEFAULT_SEVERITY, docstring
and VALID / INVALID examples. The page is never edited by hand. The same page is written into
the package (inplace_lsp/data/rules.md), where diagnostics link to it in an installed copy.

    python scripts/gen_rules_doc.py            # rewrite docs/rules.md and the package's copy
    python scripts/gen_rules_doc.py --check    # exit 1 when either is stale

`render()` returns the page and `stale_message()` says what is wrong with the file on disk;
tests call both in-process.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from inplace_lsp.analysis.rules import RULES
from inplace_lsp.analysis.rules.base import Rule
from inplace_lsp.problems import FILE_PROBLEMS

REPO = Path(__file__).resolve().parent.parent
DOC_PATH = REPO / "docs" / "rules.md"
PACKAGED = REPO / "inplace_lsp" / "data" / "rules.md"
REGENERATE = "python scripts/gen_rules_doc.py"


def anchor(rule: type[Rule]) -> str:
    """GitHub's slug of the rule's heading "IPL001 inplace-on-saved"."""
    return f"{rule.CODE}-{rule.NAME}".lower()


def _docstring(rule: type[Rule]) -> str:
    return inspect.cleandoc(rule.__doc__ or "")


def summary(rule: type[Rule]) -> str:
    """The docstring's first paragraph on one line (some summaries wrap in the source)."""
    first = _docstring(rule).split("\n\n", 1)[0]
    return " ".join(first.split()) or rule.NAME


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code_block(code: str) -> list[str]:
    fence = "```"
    while fence in code:  # an example that itself contains a fence
        fence += "`"
    return [f"{fence}python", code.rstrip("\n"), fence, ""]


def _section(rule: type[Rule]) -> list[str]:
    severity = rule.DEFAULT_SEVERITY.value
    lines = [
        # The short anchor is what the CLI and the LSP's codeDescription link to.
        f'<a id="{rule.CODE.lower()}"></a>',
        "",
        f"## {rule.CODE} {rule.NAME}",
        "",
        f"Default severity: **{severity}**. Suppress one line with `# noqa: {rule.CODE}`.",
        "",
        _docstring(rule),
        "",
    ]
    if rule.VALID:
        lines += ["### Valid", ""]
        for code in rule.VALID:
            lines += _code_block(code)
    if rule.INVALID:
        lines += ["### Invalid", ""]
        for example in rule.INVALID:
            lines += _code_block(example.code)
            if example.fixed is not None:
                lines += ["Fixed:", ""]
                lines += _code_block(textwrap.dedent(example.fixed))
    return lines


# What each severity promises (the analysis is held to it: tests/test_programs.py, the
# differential benchmark and the known-good libraries of tests/test_realcode.py).
SEVERITIES = [
    "## What a severity promises",
    "",
    "- **Error**: proven from known facts. When the flagged line runs, torch raises (at",
    "  backward(), or at the write itself for IPL002 and IPL009): the tensor requires grad",
    "  because a parameter, a tensor created with `requires_grad=True` or an input of an",
    "  `nn.Module`'s `forward` feeds it (the one stated assumption: where code of the same file",
    "  calls it and is followed to the end, that call site's facts win and the assumption's",
    "  findings go); the",
    "  write reaches the saved tensor itself or a view of it; grad mode is on at the save; and",
    "  every path that reaches the write went through the save. Code that never runs (after",
    "  `return`, `raise`, `break`, `continue`, or under a condition on known constants that is",
    "  false) gets nothing.",
    "- **Warning**: the failure rests on something not known, and the message names it:",
    '  "fails if `labels` requires grad" or "fails if `w` or `x` requires grad" (arguments of',
    '  a plain function or of a method other than `forward`), "may fail (when `if mask is',
    '  None:` (line 6) is true)" (the branch the save ran on), "fails if the tensor is',
    '  already float32" (an op that returns its input or a copy, by dtype or layout), "may',
    '  fail (on some paths)" (a conditional submodule, a value that may be one of several',
    '  tensors), "fails if `self.act` keeps it" (a layer or function the analysis cannot',
    "  read, whose output is written). Integer and bool tensors never require grad, so they",
    "  are never the reason for a finding. A write that torch does not catch but that",
    "  makes gradients silently wrong (through `.data`, IPL005) is a Warning too: the program",
    "  runs, and whether those gradients are used is not known.",
    '- **Information / Hint**: notes ("too deep to analyse", "not analysed: its analysis took',
    '  longer than 1.5 s") and "checked: safe" hints, which editors show only with `showHints`.',
    "  A hint is a proof: it is given only where every fact it rests on is known (no call the",
    "  analysis does not follow was given the tensor, every run of the line was checked).",
]


def render(rules: Sequence[type[Rule]] = RULES) -> str:
    """The whole docs/rules.md page."""
    lines = [
        "# Rules",
        "",
        f"<!-- Generated by `{REGENERATE}` from inplace_lsp/analysis/rules/. Do not edit. -->",
        "",
        *SEVERITIES,
        "",
        "| Code | Name | Default severity | Summary |",
        "| --- | --- | --- | --- |",
    ]
    for rule in rules:
        lines.append(
            f"| [{rule.CODE}](#{anchor(rule)}) | `{rule.NAME}` "
            f"| {rule.DEFAULT_SEVERITY.value} | {_cell(summary(rule))} |"
        )
    lines.append("")
    for rule in rules:
        lines += _section(rule)
    lines += [
        "## File problems",
        "",
        "What keeps `inplace-lsp check` from checking all of a file: error-severity diagnostics",
        "in every output format (exit code 1). They are not rules: `select`, `ignore` and `noqa`",
        "do not turn them off (a CI job must not pass a file it never read); `exclude` leaves a",
        "file out of the run.",
        "",
    ]
    for kind in FILE_PROBLEMS:
        lines += [
            f'<a id="{kind.code.lower()}"></a>',
            "",
            f"### {kind.code} {kind.name}",
            "",
            kind.summary,
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


def stale_message(paths: Sequence[Path] = (DOC_PATH, PACKAGED)) -> str | None:
    """None when the files equal `render()`; else what is wrong and how to fix it."""
    page = render()
    for path in paths:
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return f"{path} does not exist; run `{REGENERATE}`"
        if current != page:
            return f"{path} is stale (the rule classes changed); run `{REGENERATE}`"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    parser.add_argument(
        "--output",
        type=Path,
        nargs="*",
        default=[DOC_PATH, PACKAGED],
        help="default: docs/rules.md and inplace_lsp/data/rules.md",
    )
    args = parser.parse_args(argv)
    if args.check:
        message = stale_message(args.output)
        if message is not None:
            print(message, file=sys.stderr)
            return 1
        print(f"{', '.join(map(str, args.output))}: up to date")
        return 0
    for path in args.output:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8", newline="\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
