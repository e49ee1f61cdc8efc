"""Speed of light: FLOPs, minimum bytes and the roofline bound of every workload (pure functions).

The model, per workload of a definition (its Einsum cascade rendered with the workload's axes):

- MACs of an Einsum: the points of its iteration space (the product of its rank variables'
  sizes, fewer where iteration_space_shape couples them, e.g. a causal mask) times its
  n_instances and the workload's; zero for copies.
- FLOPs: an Einsum that sums over a rank variable (one that indexes no output) does a
  multiply and an add per point: 2 FLOPs per MAC. An Einsum that sums over nothing is
  element-wise: 1 operation per point (exp, silu, a scale), counted as one FLOP.
- Minimum bytes: every input read once and every output written once, at its bits per
  value; intermediates cost nothing (they may live in registers or shared memory);
  persistent tensors count once however many instances run. A tensor's size is the part
  its projections reach (a paged KV cache counts the pages the workload reads, not the pool).
- T_SOL = max(compute time, memory time): compute time sums each Einsum's FLOPs over the
  hardware's peak for its dtype (Einsums that sum over a rank variable and read two or more
  tensors run at the rate of their inputs' dtype, e.g. tensor cores; the rest at the
  float32 rate); memory time is bytes over the memory bandwidth.
- SOL% = T_SOL / measured latency; SOL score = 1 / (1 + (T - T_SOL) / (T_baseline - T_SOL))
  (SOL-ExecBench): 1 at the speed of light, 0.5 at the baseline's latency.

Left out: caches and on-chip reuse limits (a tiled kernel may have to re-read inputs), launch
overhead, the cost of data-dependent control (top-k, sorting, sampling), the rate of
transcendental functions, and anything the cascade itself approximates (see its comments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import yaml

from ..einsum.cascade import (BITS_DTYPE, Cascade, ExprError, Problem, access_bits, count_points, parse_cascade,
                     render_template)

# Wider dtypes to fall back to when a machine lists no peak for a dtype (it has no faster unit for it).
FALLBACK = {
    "float4_e2m1": ("float8_e4m3", "bfloat16", "float16", "float32"),
    "float8_e4m3": ("float8_e5m2", "bfloat16", "float16", "float32"),
    "float8_e5m2": ("float8_e4m3", "bfloat16", "float16", "float32"),
    "int8": ("float8_e4m3", "bfloat16", "float16", "float32"),
    "uint8": ("int8", "float8_e4m3", "bfloat16", "float16", "float32"),
    "float16": ("bfloat16", "float32"),
    "bfloat16": ("float16", "float32"),
    "int16": ("bfloat16", "float16", "float32"),
    "int32": ("float32",),
    "int64": ("float32",),
    "bool": ("float32",),
    "float32": (),
}
VECTOR_DTYPE = "float32"  # element-wise work and single-input reductions run on the vector units


class CascadeProblem(ValueError):
    """The cascade cannot be counted; carries the problems (the validator reports them in full)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        first = problems[0] if problems else Problem("", "unknown problem", "")
        super().__init__(f"{first.pointer or '$'}: {first.message}")


@dataclass(frozen=True)
class EinsumCount:
    name: str
    kind: str  # "copy" | "contraction" (sums, reads >= 2 tensors) | "reduction" | "elementwise"
    macs: int  # iteration points x instances (the issue's "MACs per Einsum"); 0 for copies
    flops: int
    dtype: str  # whose peak rate applies


@dataclass(frozen=True)
class TensorBytes:
    name: str
    role: str  # "input" | "output" | "intermediate"
    elements: int  # reached by the projections, times instances unless persistent
    bits: int
    bytes: float

    @property
    def counted(self) -> bool:
        return self.role != "intermediate"


@dataclass(frozen=True)
class Counts:
    einsums: tuple[EinsumCount, ...]
    tensors: tuple[TensorBytes, ...]

    @property
    def macs(self) -> int:
        """MACs of the Einsums that sum over a rank variable (2 FLOPs each)."""
        return sum(e.macs for e in self.einsums if e.kind in ("contraction", "reduction"))

    @property
    def elementwise_ops(self) -> int:
        return sum(e.macs for e in self.einsums if e.kind == "elementwise")

    @property
    def flops(self) -> int:
        return sum(e.flops for e in self.einsums)

    @property
    def bytes(self) -> float:
        return sum(t.bytes for t in self.tensors if t.counted)

    @property
    def intensity(self) -> float:
        """FLOPs per byte (0 when nothing moves)."""
        return self.flops / self.bytes if self.bytes else 0.0


def _bits_dtype(bits: int) -> str:
    return BITS_DTYPE.get(bits, "float32")


def count(cascade: Cascade, dtypes: Optional[Mapping[str, str]] = None) -> Counts:
    """MACs, FLOPs and minimum bytes of a parsed cascade. `dtypes`: the definition's tensors.

    Raises CascadeProblem when an iteration space cannot be counted.
    """
    dtypes = dict(dtypes or {})
    bits = access_bits(cascade, dtypes)
    einsums = []
    for e in cascade.einsums:
        instances = e.n_instances * cascade.n_instances
        if e.is_copy:
            einsums.append(EinsumCount(e.name, "copy", 0, 0, VECTOR_DTYPE))
            continue
        try:
            points = count_points(e.rank_variables, e.bounds, e.constraints)
        except ExprError as ex:
            raise CascadeProblem([Problem(e.pointer, f"iteration space of Einsum '{e.name}' {ex}",
                                          "split the Einsum or loosen its iteration_space_shape")]) from None
        macs = points * instances
        sums = bool(e.reduced_variables)
        if sums and len(e.inputs) >= 2:
            kind, dtype = "contraction", _compute_dtype(cascade, e, bits, dtypes)
        else:
            kind, dtype = ("reduction" if sums else "elementwise"), VECTOR_DTYPE
        einsums.append(EinsumCount(e.name, kind, macs, 2 * macs if sums else macs, dtype))
    return Counts(tuple(einsums), _tensor_bytes(cascade, bits))


def _compute_dtype(cascade: Cascade, e, bits, dtypes: Mapping[str, str]) -> str:
    """The dtype whose peak rate a contraction runs at: the widest of the data it is fed from outside
    the cascade (floating-point tensors before index tensors, which steer rather than feed the units);
    intermediates only when it reads nothing else (their dtype follows their bits)."""
    def dtype_of(a) -> str:
        b, origin = bits[(e.name, a.tensor)]
        return dtypes[a.tensor] if origin.startswith("dtype") else _bits_dtype(b)

    outside = [a for a in e.inputs if a.tensor not in cascade.intermediates]
    floating = [a for a in outside if dtype_of(a).startswith(("float", "bfloat"))]
    chosen = floating or outside or list(e.inputs)
    best = max(chosen, key=lambda a: bits[(e.name, a.tensor)][0])
    return dtype_of(best)


def _tensor_bytes(cascade: Cascade, bits) -> tuple[TensorBytes, ...]:
    out = []
    for t in cascade.tensors:
        role = cascade.role(t)
        elements, width, persistent, instances = 0, 0, False, 1
        for e in cascade.einsums:
            for a in e.accesses:
                if a.tensor != t:
                    continue
                # An input's bits are those it is read with; an output's, those it is written with.
                if role == "intermediate" or a.output == (role == "output"):
                    width = max(width, bits[(e.name, t)][0])
                elements = max(elements, _footprint(e, a))
                persistent = persistent or a.persistent
                instances = max(instances, e.n_instances * cascade.n_instances)
        if not persistent:
            elements *= instances
        out.append(TensorBytes(t, role, elements, width, elements * width / 8))
    return tuple(out)


def _footprint(e, a) -> int:
    """Elements of the tensor one access reaches: per rank, the distinct in-range index values."""
    n = 1
    for rank, idx in zip(a.ranks, a.indices):
        lo, hi = idx.interval(e.bounds)
        lo, hi = max(lo, 0), min(hi, e.rank_sizes[rank] - 1)
        n *= max(0, hi - lo + 1)
    return n


# -- hardware -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpeedOfLight:
    hardware: str
    compute_s: float
    memory_s: float
    dtypes: tuple[tuple[str, str], ...]  # (dtype asked for, dtype whose peak was used)

    @property
    def t_sol_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "memory"


def peak_tflops(peaks: Mapping[str, float], dtype: str) -> tuple[str, float]:
    """The peak for `dtype`, or for the first wider dtype the machine lists; KeyError if none."""
    for d in (dtype,) + FALLBACK.get(dtype, ("float32",)):
        if d in peaks:
            return d, peaks[d]
    raise KeyError(dtype)


def speed_of_light(counts: Counts, hardware) -> SpeedOfLight:
    """T_SOL of `counts` on a HardwareSpec (peak_tflops per dtype, memory_bandwidth_gb_s)."""
    compute, used = 0.0, {}
    for e in counts.einsums:
        if not e.flops:
            continue
        d, tflops = peak_tflops(hardware.peak_tflops, e.dtype)
        used[e.dtype] = d
        compute += e.flops / (tflops * 1e12)
    memory = counts.bytes / (hardware.memory_bandwidth_gb_s * 1e9)
    return SpeedOfLight(hardware.name, compute, memory, tuple(sorted(used.items())))


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
def axis_values(definition, axes: Mapping[str, int]) -> dict[str, int]:
    """What a cascade template is rendered with: the workload's var axes and the const axes."""
    return {**{a: axes[a] for a in definition.var_axes if a in axes}, **definition.const_axes}


def tensor_dtypes(definition) -> dict[str, str]:
    return {**{n: t.dtype for n, t in definition.inputs.items()}, **{n: t.dtype for n, t in definition.outputs.items()}}


def load_cascade(text: str, values: Mapping[str, int]) -> Cascade:
    """Render, read and parse a cascade template; CascadeProblem (or a jinja2/YAML error) when it is bad."""
    from ..model import schema_check
    from ..model.records import Source

    data = yaml.safe_load(render_template(text, values))
    schema = schema_check.schema_diagnostics("einsum", data, Source("cascade"))
    if schema:
        raise CascadeProblem([Problem(d.pointer, d.message, d.hint) for d in schema])
    cascade, problems = parse_cascade(data)
    errors = [p for p in problems if p.severity == "error"]
    if cascade is None or errors:
        raise CascadeProblem(errors)
    return cascade


def workload_counts(ds, definition, axes: Mapping[str, int], cache: Optional[dict] = None) -> Counts:
    """Counts of one workload of a definition (its cascade rendered with the workload's axes)."""
    key = (definition.name, tuple(sorted(axes.items())))
    if cache is not None and key in cache:
        return cache[key]
    cascade_record = ds.einsums[definition.name]
    cascade = load_cascade(cascade_record.template, axis_values(definition, axes))
    counts = count(cascade, tensor_dtypes(definition))
    if cache is not None:
        cache[key] = counts
    return counts


def hardware_for(ds, name: str):
    """The hardware spec a trace's environment.hardware names (by name or alias); None if none."""
    if name in ds.hardware:
        return ds.hardware[name]
    for h in ds.hardware.values():
        if name in h.aliases:
            return h
    return None


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
    h = hardware_for(ds, trace.hardware)
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
    import os
    import tempfile
    from pathlib import Path

    from ..einsum.cascade import plain_document

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
                      f"# Rendered from einsums/{d.type}/{name}.yaml by kerneltrace roofline --export.\n")
            text = header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)
            rel = f"{d.type}/{name}/{w.uuid}.yaml"
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            written.append(rel)
    return written


def verify_export(ds, out, written: Iterable[str]) -> list[str]:
    """Re-read exported files with parse_cascade (no template, no definition) and compare their
    MACs, FLOPs and bytes with the dataset's; one line per file that differs or does not read."""
    from pathlib import Path

    from ..einsum.cascade import parse_cascade

    problems = []
    for rel in written:
        _type, name, stem = rel.split("/")
        d = ds.definitions[name]
        w = next(w for w in ds.workloads_by_definition[name] if w.uuid == stem[:-len(".yaml")])
        expected = workload_counts(ds, d, w.axes)
        try:
            cascade, issues = parse_cascade(yaml.safe_load((Path(out) / rel).read_text(encoding="utf-8")))
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


def format_roofline(rows: list[RooflineRow]) -> str:
    """Plain-text table: per definition, one line per workload with FLOPs, bytes, FLOP/B and
    T_SOL per hardware (C = compute-bound, M = memory-bound)."""
    if not rows:
        return "no workloads of definitions with an Einsum cascade"
    hardware = sorted({s.hardware for r in rows for s in r.sol})
    header = ["workload", "axes", "FLOPs", "bytes", "FLOP/B"] + hardware
    out = []
    for name in dict.fromkeys(r.definition for r in rows):
        table = [header]
        for r in (r for r in rows if r.definition == name):
            axes = " ".join(f"{k}={v}" for k, v in r.axes)
            if r.counts is None:
                table.append([r.workload[:8], axes, "cascade does not count: " + r.problem, "", ""] + [""] * len(hardware))
                continue
            sols = {s.hardware: s for s in r.sol}
            table.append([r.workload[:8], axes, format_count(r.counts.flops), format_count(r.counts.bytes) + "B",
                          format_ratio(r.counts.intensity)]
                         + [f"{format_seconds(sols[h].t_sol_s)} {sols[h].bound[0].upper()}" if h in sols else "-"
                            for h in hardware])
        widths = [max(len(row[i]) for row in table if len(row) > i) for i in range(len(header))]
        out.append(name)
        for row in table:
            out.append("  " + "  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i])
                                        for i, cell in enumerate(row)).rstrip())
        out.append("")
    out.append("T_SOL = max(FLOPs / peak for the dtype, bytes / memory bandwidth); C = compute-bound, M = memory-bound.")
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


def sol_sections(ds) -> dict[str, SolSection]:
    """The speed-of-light section of every definition that has a cascade."""
    rows = roofline_rows(ds)
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
            for name, e in sorted(ds.einsums.items()) if name in ds.definitions}
