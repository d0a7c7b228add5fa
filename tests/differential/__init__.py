"""Differential testing of the analyzer: generated PyTorch programs, labelled by running them.

``generator`` writes seeded programs, ``oracle`` runs them under torch and records the outcome
and the guilty lines, ``scorer`` compares the analyzer's Error-level findings with that truth.
"""
