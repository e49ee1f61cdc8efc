"""The per-workload rows of the result pages, as HTML built in Python.

A definition page has (workloads x solutions) result cells and a solution page a row and a detail
view per workload: at 1,000 definitions x 10 solutions x 50 workloads that is a million cells, which
a template engine renders some 50 times slower than these f-strings. Every value from the dataset
goes through `esc`; the numbers are formatted by the same filters the templates use.
"""

from __future__ import annotations

from html import escape
from typing import Optional, Sequence

from markupsafe import Markup

from ..analyse.results import Leaderboard, Result, WorkloadRow
from .results import LOG_LIMIT, fmt_err, fmt_ms, fmt_speedup, fmt_value, fmt_when, sort_key, trend


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def fmt_spread(spread: Optional[tuple[float, float]]) -> str:
    return "—" if not spread else f"{fmt_ms(spread[0])}–{fmt_ms(spread[1])}"


UNSTABLE = '<span class="kt-status kt-unstable" title="timing too noisy to rank">unstable</span>'
UNSANDBOXED = ('<span class="kt-status kt-unstable" title="measured without the bench\'s sandbox: not ranked">'
               'unsandboxed</span>')


def status(r: Result) -> str:
    if r.passed:
        return ('<span class="kt-status kt-ok">passed</span>'
                + (" " + UNSTABLE if r.unstable else " " + UNSANDBOXED if r.unsandboxed else ""))
    if not r.ran:
        return '<span class="kt-status kt-none">not run</span>'
    return f'<span class="kt-status kt-bad">{esc(r.status)}</span>'


PROVENANCE = {"measured": "measured", "recorded": "recorded", "unknown": "before provenance was recorded"}
PROVENANCE_TITLE = {"measured": "measured by this project's bench", "recorded": "imported from another tool's records",
                    "unknown": "written before traces recorded how they were produced"}


def provenance(r: Result, titled: bool = True) -> str:
    """How a result was produced, as a badge ("" when it did not run); `titled`: with its explanation on hover
    (a table's column header carries it once instead)."""
    if not r.provenance:
        return ""
    kind = r.provenance if r.provenance in PROVENANCE else "unknown"
    title = f' title="{PROVENANCE_TITLE[kind]}"' if titled else ""
    return f'<span class="kt-badge kt-prov-{kind}"{title}>{PROVENANCE[kind]}</span>'


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


def cell(r: Result) -> str:
    """A result on the definition page: latency (spread on hover) and speedup, or its status."""
    if not r.passed:
        return f'<td class="kt-cell" data-sort="">{status(r)}</td>'
    spread = f' title="p20–p80 {fmt_spread(r.spread)} ms"' if r.spread else ""
    mark = (" " + UNSTABLE if r.unstable else " " + UNSANDBOXED if r.unsandboxed else
            f' <span class="kt-speedup {trend(r.speedup)}">{fmt_speedup(r.speedup)}</span>')
    noisy = " kt-noisy" if not r.ranked else ""
    return (f'<td class="kt-cell" data-sort="{sort_key(r.speedup)}"><span class="kt-lat{noisy}"{spread}>'
            f"{fmt_ms(r.latency_ms)}</span>{mark}</td>")


def _axes(row: WorkloadRow) -> str:
    return "".join(f"<td>{esc(fmt_value(v))}</td>" for _, v in row.axes)


def _baseline(row: WorkloadRow) -> str:
    unstable = " " + UNSTABLE if row.baseline_latency_ms is not None and not row.baseline_stable else ""
    return f'<td data-sort="{sort_key(row.baseline_latency_ms)}">{fmt_ms(row.baseline_latency_ms)}{unstable}</td>'


def board_rows(lb: Leaderboard) -> Markup:
    """The body rows of a definition's per-workload results table."""
    return Markup("\n".join(
        f"<tr><td><code>{esc(row.uuid)}</code></td>{_axes(row)}{_baseline(row)}{''.join(cell(r) for r in row.results)}</tr>"
        for row in lb.rows))


def solution_rows(rows: Sequence[tuple[WorkloadRow, Result]], anchor: str) -> Markup:
    """The body rows of a solution's results table on one hardware (with links to the trace details)."""
    out = []
    for i, (row, r) in enumerate(rows, 1):
        detail = f'<a href="#{esc(anchor)}-t{i}">details</a>' if r.ran else ""
        out.append(
            f"<tr><td><code>{esc(row.uuid)}</code></td>{_axes(row)}"
            f'<td data-sort="{sort_key(row.baseline_latency_ms)}">{fmt_ms(row.baseline_latency_ms)}</td>'
            f'<td data-sort="{sort_key(r.latency_ms)}">{fmt_ms(r.latency_ms)}</td><td>{fmt_spread(r.spread)}</td>'
            f'<td data-sort="{sort_key(r.speedup)}"><span class="kt-speedup {trend(r.speedup)}">{fmt_speedup(r.speedup)}</span></td>'
            f'<td data-sort="{sort_key(r.max_absolute_error)}">{fmt_err(r.max_absolute_error)}</td>'
            f'<td data-sort="{sort_key(r.max_relative_error)}">{fmt_err(r.max_relative_error)}</td>'
            f'<td data-sort="{esc(r.status)}">{status(r)}</td><td>{provenance(r, titled=False)}</td><td>{detail}</td></tr>')
    return Markup("\n".join(out))


TRACE_FACTS = ("Trace file", "Line", "Run at", "Provenance")


def _facts(r: Result, dataset: str) -> dict[str, str]:
    """What a trace's detail view says besides its timing and log, by label (its environment flattened)."""
    file, _, line = r.trace_path.rpartition(":")
    facts = {"Trace file": f"<code>{esc(dataset)}/{esc(file)}</code>", "Line": esc(line),
             "Run at": esc(fmt_when(r.timestamp)), "Provenance": provenance(r)}
    facts.update((esc(k), esc(v)) for k, v in r.environment)
    return facts


def trace_details(rows: Sequence[tuple[WorkloadRow, Result]], anchor: str, dataset: str) -> Markup:
    """A closed detail view per trace: its file and line, when it ran, its timing, its environment, its log.

    What every trace on the board shares (most often its file, provenance and environment) is said once above
    them, not in each of 50 views: at the field's scale the repeats were two fifths of a solution page."""
    ran = [(i, row, r) for i, (row, r) in enumerate(rows, 1) if r.ran]
    facts = {i: _facts(r, dataset) for i, _, r in ran}
    first = next(iter(facts.values()), {})
    shared = {k: v for k, v in first.items() if k != "Line" and all(f.get(k) == v for f in facts.values())}
    out = []
    if len(ran) > 1 and shared:
        out.append('<p class="kt-common-title">Every trace below:</p><dl class="kt-env kt-common">'
                   + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in shared.items()) + "</dl>")
    else:
        shared = {}
    for i, row, r in ran:
        latency = f" · {fmt_ms(r.latency_ms)} ms" if r.latency_ms is not None else ""
        own = [(k, v) for k, v in facts[i].items() if k not in shared]
        if r.passed:
            timing = f"median {fmt_ms(r.latency_ms)} ms"
            if r.spread:
                timing += f", p20–p80 {fmt_spread(r.spread)} ms"
            if r.samples:
                timing += f", {r.samples} samples"
            if r.timer:
                timing += f", timer {esc(r.timer)}"
            head = sum(1 for k, _ in own if k in TRACE_FACTS)  # after the trace's own facts, before its environment
            own.insert(head, ("Timing", timing))
        log = ""
        if r.log:
            cut = max(0, len(r.log) - LOG_LIMIT)
            note = f'<p class="kt-cut">The first {cut} characters of the log are left out.</p>' if cut else ""
            log = f'{note}<pre class="kt-log"><code>{esc(r.log[cut:])}</code></pre>'
        elif r.failed:
            log = "<p>No log recorded.</p>"
        kind = " kt-failure" if r.failed else ""
        out.append(
            f'<details class="kt-trace{kind}" id="{esc(anchor)}-t{i}"><summary><code>{esc(r.workload)}</code> · '
            f'{status(r)}{latency}</summary><dl class="kt-env">'
            + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in own) + f"</dl>{log}</details>")
    return Markup("\n".join(out))
