"""Analyse stage: pure functions over loaded records (coverage, leaderboards, Einsum cascades, speed of light)."""
