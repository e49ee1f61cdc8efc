"""Library contenders: a well-kept library's kernel that computes exactly a definition.

`library_contenders(dataset)` returns (solutions, skipped): canonical Solution dicts (author = the
library's author name in model/contender_kinds.py) for every definition a library computes exactly,
and (definition name, reason) for the families it considered and does not claim.
"""

from __future__ import annotations


def library_contenders(dataset) -> tuple[list[dict], list[tuple[str, str]]]:  # noqa: ARG001 (filled in by the libraries' work)
    return [], []
