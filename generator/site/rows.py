"""Small HTML pieces of the result pages built in Python: provenance badges and the timing spread.

The per-workload rows themselves (a definition's matrix, a solution's rows and trace views) are drawn in the
browser from each definition's data file (data.py), not written into every page.
"""

from __future__ import annotations

from typing import Optional, Sequence

from markupsafe import Markup

from ..analyse.results import Result
from .results import fmt_ms


def fmt_spread(spread: Optional[tuple[float, float]]) -> str:
    return "—" if not spread else f"{fmt_ms(spread[0])}–{fmt_ms(spread[1])}"


PROVENANCE = {"measured": "measured", "recorded": "recorded", "unknown": "before provenance was recorded"}
PROVENANCE_TITLE = {"measured": "measured by this project's bench", "recorded": "imported from another tool's records",
                    "unknown": "written before traces recorded how they were produced"}


def provenance_summary(results: Sequence[Result]) -> Markup:
    """How a solution's results on a board were produced: one badge per kind, with a count when they mix."""
    counts: dict[str, int] = {}
    for r in results:
        if r.provenance:
            kind = r.provenance if r.provenance in PROVENANCE else "unknown"
            counts[kind] = counts.get(kind, 0) + 1
    badges = []
    for kind in PROVENANCE:
        if kind in counts:
            n = f"{counts[kind]} " if len(counts) > 1 else ""
            badges.append(f'<span class="kt-badge kt-prov-{kind}" title="{PROVENANCE_TITLE[kind]}">{n}{PROVENANCE[kind]}</span>')
    return Markup(" ".join(badges))
