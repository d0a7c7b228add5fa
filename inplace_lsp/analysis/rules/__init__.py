"""The rule registry: one class per file, IPL001-IPL009."""

from __future__ import annotations

from inplace_lsp.analysis.rules.base import Rule
from inplace_lsp.analysis.rules.ipl001_inplace_on_saved import InplaceOnSaved
from inplace_lsp.analysis.rules.ipl002_inplace_on_leaf import InplaceOnLeaf
from inplace_lsp.analysis.rules.ipl003_inplace_activation import InplaceActivation
from inplace_lsp.analysis.rules.ipl004_graph_accumulation import GraphAccumulation
from inplace_lsp.analysis.rules.ipl005_mutated_detached_alias import MutatedDetachedAlias
from inplace_lsp.analysis.rules.ipl006_anomaly_left_on import AnomalyLeftOn
from inplace_lsp.analysis.rules.ipl007_step_before_backward import StepBeforeBackward
from inplace_lsp.analysis.rules.ipl008_silent_alias_change import SilentAliasChange
from inplace_lsp.analysis.rules.ipl009_inplace_refused import InplaceRefused

RULES: tuple[type[Rule], ...] = (
    InplaceOnSaved,
    InplaceOnLeaf,
    InplaceActivation,
    GraphAccumulation,
    MutatedDetachedAlias,
    AnomalyLeftOn,
    StepBeforeBackward,
    SilentAliasChange,
    InplaceRefused,
)


def all_rules() -> tuple[type[Rule], ...]:
    return RULES


__all__ = ["RULES", "Rule", "all_rules"]
