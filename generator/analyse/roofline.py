"""Speed of light: T_SOL of every workload on every machine, SOL% and SOL score (pure functions).

Counts (MACs, FLOPs, minimum bytes, each Einsum's dtype) come from the Einsum cascade
(generator/einsum/counting.py); this module turns them into time on a hardware spec:

- T_SOL = max(compute time, memory time): compute time sums each Einsum's FLOPs over the
  hardware's peak for its dtype (or the first wider dtype the machine lists); memory time is
  bytes over the memory bandwidth.
- SOL% = T_SOL / measured latency; SOL score = 1 / (1 + (T - T_SOL) / (T_baseline - T_SOL))
  (SOL-ExecBench): 1 at the speed of light, 0.5 at the baseline's latency.

Left out: caches and on-chip reuse limits (a tiled kernel may have to re-read inputs), launch
overhead, the cost of data-dependent control (top-k, sorting, sampling), the rate of
transcendental functions, and anything the cascade itself approximates (see its comments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional

import yaml

from ..einsum import Counts, axis_values, load_cascade, tensor_dtypes, workload_counts
from ..einsum.speed_of_light import FALLBACK, SpeedOfLight, peak_tflops, speed_of_light  # noqa: F401 - re-exported
from ..model.fileio import SAFE_YAML_LOADER, write_atomic
from ..model.layout import CANONICAL


def sol_percent(t_sol_s: float, latency_ms: float) -> Optional[float]:
    """T_SOL as a percentage of the measured latency (100 = at the speed of light)."""
    if not latency_ms or latency_ms <= 0 or not math.isfinite(latency_ms):
        return None
    return 100.0 * t_sol_s / (latency_ms * 1e-3)


def sol_score(latency_ms: float, baseline_ms: Optional[float], t_sol_s: float) -> Optional[float]:
    """SOL-ExecBench's score 1 / (1 + (T - T_SOL) / (T_baseline - T_SOL)): 1 at T_SOL, 0.5 at the
    baseline, towards 0 when slower. None without a baseline or when the baseline is not slower than
    T_SOL (the gap it measures against is empty)."""
    if baseline_ms is None or latency_ms is None:
        return None
    t, tb = latency_ms * 1e-3, baseline_ms * 1e-3
    if not (math.isfinite(t) and math.isfinite(tb)) or tb <= t_sol_s:
        return None
    return 1.0 / (1.0 + (t - t_sol_s) / (tb - t_sol_s))


# -- over the dataset -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RooflineRow:
    definition: str
    workload: str  # uuid
    axes: tuple[tuple[str, int], ...]
    counts: Optional[Counts]
    sol: tuple[SpeedOfLight, ...]  # one per hardware
    problem: str = ""  # why there are no counts


def roofline_rows(ds, definitions: Optional[Iterable[str]] = None,
                  hardware: Optional[Iterable[str]] = None) -> list[RooflineRow]:
    """One row per workload of each definition that has a cascade, sorted by definition then workload order."""
    wanted = set(definitions) if definitions else None
    specs = [h for n, h in sorted(ds.hardware.items()) if not hardware or n in set(hardware)]
    rows, cache = [], {}
    for name, d in sorted(ds.definitions.items()):
        if wanted is not None and name not in wanted:
            continue
        if name not in ds.einsums:
            continue
        for w in ds.workloads_by_definition.get(name, []):
            try:
                c = workload_counts(ds, d, w.axes, cache)
            except Exception as ex:  # noqa: BLE001 - a bad cascade is reported by validate; keep the table going
                rows.append(RooflineRow(name, w.uuid, tuple(w.axes.items()), None, (), str(ex) or type(ex).__name__))
                continue
            sols = []
            for h in specs:
                try:
                    sols.append(speed_of_light(c, h))
                except KeyError:
                    continue
            rows.append(RooflineRow(name, w.uuid, tuple(w.axes.items()), c, tuple(sols)))
    return rows


@dataclass(frozen=True)
class TraceSOL:
    hardware: str
    t_sol_s: float
    bound: str
    sol_percent: Optional[float]
    sol_score: Optional[float]


def trace_sol(ds, trace, cache: Optional[dict] = None) -> Optional[TraceSOL]:
    """SOL% and SOL score of one trace; None when its definition has no cascade, its hardware no
    spec, or it has no latency."""
    d = ds.definitions.get(trace.definition)
    h = ds.hardware_spec(trace.hardware)
    if d is None or h is None or trace.definition not in ds.einsums or trace.latency_ms is None:
        return None
    try:
        c = workload_counts(ds, d, trace.workload_axes, cache)
        s = speed_of_light(c, h)
    except Exception:  # noqa: BLE001 - reported by validate
        return None
    return TraceSOL(h.name, s.t_sol_s, s.bound, sol_percent(s.t_sol_s, trace.latency_ms),
                    sol_score(trace.latency_ms, trace.reference_latency_ms, s.t_sol_s))


# -- export for AccelForge ----------------------------------------------------------------------------------
def export_cascades(ds, out, definitions: Optional[Iterable[str]] = None) -> list[str]:
    """Write every workload's rendered cascade as plain YAML: out/<type>/<definition>/<uuid>.yaml.

    Each access carries its bits_per_value (from the definition's dtypes), so a reader without
    the definition (AccelForge, or parse_cascade) counts the same MACs and bytes. Files are
    written to a temporary name and renamed. Returns the paths written, relative to `out`.
    """
    from pathlib import Path

    from ..einsum import plain_document

    out = Path(out)
    wanted = set(definitions) if definitions else None
    written = []
    for name, d in sorted(ds.definitions.items()):
        if (wanted is not None and name not in wanted) or name not in ds.einsums:
            continue
        for w in ds.workloads_by_definition.get(name, []):
            cascade = load_cascade(ds.einsums[name].template, axis_values(d, w.axes))
            doc = plain_document(cascade, tensor_dtypes(d))
            header = (f"# {name}, workload {w.uuid}: {dict(w.axes)}\n"
                      f"# Rendered from {CANONICAL.einsum_file(d.type, name)} by kerneltrace roofline --export.\n")
            text = header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)
            rel = f"{d.type}/{name}/{w.uuid}.yaml"
            write_atomic(out / rel, text)
            written.append(rel)
    return written


def verify_export(ds, out, written: Iterable[str]) -> list[str]:
    """Re-read exported files with parse_cascade (no template, no definition) and compare their
    MACs, FLOPs and bytes with the dataset's; one line per file that differs or does not read."""
    from pathlib import Path

    from ..einsum import count, parse_cascade

    problems = []
    for rel in written:
        _type, name, stem = rel.split("/")
        d = ds.definitions[name]
        w = next(w for w in ds.workloads_by_definition[name] if w.uuid == stem[:-len(".yaml")])
        expected = workload_counts(ds, d, w.axes)
        try:
            cascade, issues = parse_cascade(yaml.load((Path(out) / rel).read_text(encoding="utf-8"), Loader=SAFE_YAML_LOADER))
            if cascade is None:
                problems.append(f"{rel}: does not read back: {issues[0].message if issues else 'unknown'}")
                continue
            got = count(cascade)
        except Exception as ex:  # noqa: BLE001 - reported, not raised
            problems.append(f"{rel}: does not read back: {ex}")
            continue
        if (got.macs, got.elementwise_ops, got.flops, got.bytes) != (expected.macs, expected.elementwise_ops,
                                                                      expected.flops, expected.bytes):
            problems.append(f"{rel}: re-read counts differ: MACs {got.macs} vs {expected.macs}, "
                            f"FLOPs {got.flops} vs {expected.flops}, bytes {got.bytes:g} vs {expected.bytes:g}")
    return problems


# -- the table ------------------------------------------------------------------------------------------------
def format_seconds(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def format_count(n: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.3g}"


def format_ratio(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def format_flops_dtype(counts: Counts) -> str:
    """The dtype most FLOPs are counted at, with its share when others carry more than 0.5 %."""
    by = counts.flops_by_dtype
    if not by:
        return "-"
    dtype, flops = next(iter(by.items()))
    share = flops / counts.flops
    return dtype if share > 0.995 else f"{dtype}:{share:.0%}"


def format_roofline(rows: list[RooflineRow]) -> str:
    """Plain-text table: per definition, one line per workload with FLOPs, the dtype whose peak rate most of
    them are counted at, bytes, FLOP/B and T_SOL per hardware (C = compute-bound, M = memory-bound)."""
    if not rows:
        return "no workloads of definitions with an Einsum cascade"
    hardware = sorted({s.hardware for r in rows for s in r.sol})
    header = ["workload", "axes", "FLOPs", "FLOPs at", "bytes", "FLOP/B"] + hardware
    out = []
    for name in dict.fromkeys(r.definition for r in rows):
        table = [header]
        for r in (r for r in rows if r.definition == name):
            axes = " ".join(f"{k}={v}" for k, v in r.axes)
            if r.counts is None:
                table.append([r.workload[:8], axes, "cascade does not count: " + r.problem, "", "", ""]
                             + [""] * len(hardware))
                continue
            sols = {s.hardware: s for s in r.sol}
            table.append([r.workload[:8], axes, format_count(r.counts.flops), format_flops_dtype(r.counts),
                          format_count(r.counts.bytes) + "B", format_ratio(r.counts.intensity)]
                         + [f"{format_seconds(sols[h].t_sol_s)} {sols[h].bound[0].upper()}" if h in sols else "-"
                            for h in hardware])
        widths = [max(len(row[i]) for row in table if len(row) > i) for i in range(len(header))]
        out.append(name)
        for row in table:
            out.append("  " + "  ".join(cell.ljust(widths[i]) if i in (0, 1, 3) else cell.rjust(widths[i])
                                        for i, cell in enumerate(row)).rstrip())
        out.append("")
    out.append("T_SOL = max(FLOPs / peak for the dtype, bytes / memory bandwidth); C = compute-bound, M = memory-bound.")
    out.append("FLOPs at: the dtype whose peak rate most FLOPs are counted at (a contraction's compute_dtype, else its "
               "inputs' dtype; other work float32), on a machine without that rate the next wider one it lists.")
    return "\n".join(out)


# -- for the site ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SolTableRow:
    workload: str  # the workload's var axes, e.g. "M=1"
    uuid: str
    flops: str
    bytes: str
    intensity: str
    cells: tuple[str, ...]  # per hardware: "40.1 µs (memory)"
    problem: str = ""


@dataclass(frozen=True)
class SolSection:
    """What a definition page shows under 'Speed of light': plain strings, one row per workload."""

    cascade_path: str  # relative to the dataset root
    cascade: str  # the template text, shown as code
    hardware: tuple[str, ...]
    rows: tuple[SolTableRow, ...]


def sol_sections(ds, definitions: Optional[Iterable[str]] = None) -> dict[str, SolSection]:
    """The speed-of-light section of every definition (or of these `definitions`) that has a cascade."""
    wanted = None if definitions is None else set(definitions)
    rows = roofline_rows(ds, wanted) if wanted is None or wanted else []
    hardware = tuple(sorted(ds.hardware))
    by_def: dict[str, list[SolTableRow]] = {}
    for r in rows:
        label = " ".join(f"{k}={v}" for k, v in r.axes)
        if r.counts is None:
            by_def.setdefault(r.definition, []).append(
                SolTableRow(label, r.workload, "", "", "", ("",) * len(hardware), r.problem))
            continue
        sols = {s.hardware: s for s in r.sol}
        cells = tuple(f"{format_seconds(sols[h].t_sol_s).replace('us', 'µs')} ({sols[h].bound})" if h in sols else "—"
                      for h in hardware)
        by_def.setdefault(r.definition, []).append(SolTableRow(
            label, r.workload, format_count(r.counts.flops), format_count(r.counts.bytes) + "B",
            format_ratio(r.counts.intensity), cells))
    return {name: SolSection(e.source.path, e.template, hardware, tuple(by_def.get(name, ())))
            for name, e in sorted(ds.einsums.items()) if name in ds.definitions and (wanted is None or name in wanted)}
