"""What kind of contender an author is: the one owner of that fact.

A leaderboard compares the eager baseline, the compiler, libraries and hand-written kernels; the
kind follows from the author's folder (model/layout.py), never from a field a file can claim.
"""

from __future__ import annotations

import re

BASELINE = "baseline"
COMPILER = "compiler"
LIBRARY = "library"
HAND_WRITTEN = "hand-written"

BASELINE_AUTHOR = "baseline"
COMPILER_AUTHOR = "torch-compile"
# Library authors and the package whose kernels they call (its version range is in each solution's
# spec.dependencies).
LIBRARY_AUTHORS = {"torch-ops": "torch", "liger-kernel": "liger-kernel", "fla": "fla-core"}


def kind_of(author: str) -> str:
    """baseline, compiler, library or hand-written, for an author folder's name."""
    if author == BASELINE_AUTHOR:
        return BASELINE
    if author == COMPILER_AUTHOR:
        return COMPILER
    if author in LIBRARY_AUTHORS:
        return LIBRARY
    return HAND_WRITTEN


def library_requirement(author: str, dependencies) -> str:
    """The requirement (e.g. "liger-kernel>=0.5,<0.7") among a library author's solution's spec.dependencies that
    names the library it calls; "" for any other author or when the solution does not declare it."""
    package = LIBRARY_AUTHORS.get(author)
    if package is None:
        return ""
    for dep in dependencies:
        name = re.split(r"[<>=!~\[;@ ]", str(dep), maxsplit=1)[0].strip().lower().replace("_", "-")
        if name == package:
            return str(dep).strip()
    return ""
