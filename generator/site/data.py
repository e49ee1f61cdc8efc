"""Each definition's per-workload results, written once as a script the item pages draw their tables from.

At the field's scale (1,000 definitions x 10 solutions x 50 workloads) the per-workload tables were most of
the site: the definition page's matrix, and each solution page's rows and trace views, repeating the same
results in markup eleven times over. They are now one file per definition, data/<definition>.js, which assigns
window.__ktResults; kerneltrace.js draws it into the tables the pages leave empty. A script, not JSON read with
fetch, so that the pages work opened from disk (file://), where browsers refuse fetch. Every number is formatted
here by the filters the rendered pages use, so a drawn cell shows what a rendered one showed; every text is
drawn as text (textContent), never as markup.

The file's shape (`results_data`; positions keep 500 results a definition small):

    {"definition": name, "labels": {...texts the drawing needs...}, "strings": [repeated texts],
     "envs": [[[key, value], ...], ...],
     "boards": [{"hardware", "anchor", "axes": [axis names], "solutions": [entry names, ranked],
                 "rows": [[uuid, [axis values], baseline latency, 1 if the baseline is unstable else 0]],
                 "results": [[result per solution] per row], "chart": the fast_p chart (results.fastp_spec)}]}

A result is 0 when the solution has no trace on that workload, else a list of RESULT_FIELDS (trailing empty
ones left out); status, provenance, file, run-at and timer are indexes into "strings", env into "envs".
"""

from __future__ import annotations

import json
from typing import Any, Optional

from ..analyse.results import Leaderboard, Result
from ..model.status import TraceStatus
from .results import LOG_LIMIT, board_chart, fmt_err, fmt_ms, fmt_speedup, fmt_when
from .rows import PROVENANCE, PROVENANCE_TITLE, fmt_spread
from .urls import board_anchor

GLOBAL = "__ktResults"  # the variable the file assigns (kerneltrace.js reads it)
RESULT_FIELDS = ("status", "latency", "spread", "speedup", "flags", "abs", "rel", "provenance", "file", "line",
                 "when", "env", "samples", "timer", "log", "cut")
UNSTABLE, UNSANDBOXED, FASTER, SLOWER = 1, 2, 4, 8  # bits of "flags"

# What the drawing says, from the one place each is said (rows.py, results.py).
LABELS = {
    "none": fmt_ms(None),  # an absent number
    "provenance": {kind: [PROVENANCE[kind], PROVENANCE_TITLE[kind]] for kind in PROVENANCE},
    "unstable": ["unstable", "timing too noisy to rank"],
    "unsandboxed": ["unsandboxed", "measured without the bench's sandbox: not ranked"],
    "passed": TraceStatus.PASSED.value,
}


class _Strings:
    """Repeated texts, each kept once: a board's 500 results share a few files, run times and statuses."""

    def __init__(self) -> None:
        self.items: list = []
        self.index: dict = {}
        self.made: dict = {}  # (kind, value) -> the index of what it is shown as

    def shown(self, kind: str, value: str, show) -> int:
        """The index of `show(value)`, made once per value of that kind (a trace file's path, a time)."""
        key = (kind, value)
        at = self.made.get(key)
        if at is None:
            at = self.made[key] = self(show(value))
        return at

    def __call__(self, value) -> int:
        at = self.index.get(value)
        if at is None:
            at = self.index[value] = len(self.items)
            self.items.append(value)
        return at


def _shown(value: Optional[float], fmt) -> Optional[str]:
    return None if value is None else fmt(value)


def _result(r: Result, strings: _Strings, envs: _Strings, dataset: str) -> Any:
    """One result as RESULT_FIELDS (half a million of them at the field's scale: kept to plain steps)."""
    if not r.ran:
        return 0
    file, _, line = r.trace_path.rpartition(":")
    lat, speedup, absolute, relative, spread = r.latency_ms, r.speedup, r.max_absolute_error, r.max_relative_error, r.spread
    flags = ((UNSTABLE if r.unstable else 0) | (UNSANDBOXED if r.unsandboxed else 0)
             | (0 if speedup is None or speedup == 1.0 else FASTER if speedup > 1.0 else SLOWER))  # results.trend
    out = [strings(r.status), None if lat is None else fmt_ms(lat), fmt_spread(spread) if spread else None,
           None if speedup is None else fmt_speedup(speedup), flags,
           None if absolute is None else fmt_err(absolute), None if relative is None else fmt_err(relative),
           strings(r.provenance if r.provenance in PROVENANCE else "unknown") if r.provenance else None,
           strings.shown("file", file, lambda f: f"{dataset}/{f}"), int(line) if line.isdigit() else line,
           strings.shown("when", r.timestamp, fmt_when),
           envs(r.environment), r.samples]
    if r.timer or r.log:
        cut = max(0, len(r.log) - LOG_LIMIT)
        out += [strings(r.timer) if r.timer else None, r.log[cut:], cut or None]
    while out[-1] is None or out[-1] == "":  # trailing empty fields left out (an index 0 is no empty field)
        out.pop()
    return out


def _board(lb: Leaderboard, strings: _Strings, envs: _Strings, dataset: str) -> dict[str, Any]:
    axes = [name for name, _ in lb.rows[0].axes] if lb.rows else []
    rows, results = [], []
    for row in lb.rows:
        rows.append([row.uuid, [None if v is None else str(v) for _, v in row.axes],
                     _shown(row.baseline_latency_ms, fmt_ms),
                     1 if row.baseline_latency_ms is not None and not row.baseline_stable else 0])
        results.append([_result(r, strings, envs, dataset) for r in row.results])
    return {"hardware": lb.hardware, "anchor": board_anchor(lb.hardware), "axes": axes,
            "solutions": [e.solution for e in lb.entries], "rows": rows, "results": results, "chart": board_chart(lb)}


def results_data(name: str, boards: tuple[Leaderboard, ...], dataset: str) -> dict[str, Any]:
    """A definition's per-workload results on every hardware, as the data file holds them."""
    strings, envs = _Strings(), _Strings()
    drawn = [_board(lb, strings, envs, dataset) for lb in boards]
    return {"definition": name, "fields": RESULT_FIELDS, "labels": LABELS, "strings": strings.items, "envs": [list(map(list, e)) for e in envs.items],
            "boards": drawn}


def results_script(name: str, boards: tuple[Leaderboard, ...], dataset: str) -> str:
    """The data file's text: one assignment of `results_data` to window.__ktResults."""
    data = json.dumps(results_data(name, boards, dataset), ensure_ascii=False, separators=(",", ":"))
    return f"window.{GLOBAL}={data};\n"
