"""Per-stage step estimates of a model at a named serving point: where one decode (or prefill) step's kernel
time goes on a hardware, each kernel's part from its traces where they exist and from the speed of light
where they do not, every part labelled with where its number came from.

The serving point: a stage and the tokens one step of it processes (DECODE_TOKENS running requests, one new
token each; a PREFILL_TOKENS-token prefill chunk), on the hardware the calling record is served on (its
`serving.hardware`) and on every other hardware where the step's kernels have traces. Each kernel of the
step stands at one workload: the workload of that stage whose tokens are nearest the serving point's (ties:
the larger, then the first by uuid); its context is the one that workload states. Where the stage's workloads lie
on both sides of the serving point (prefill chunks of 2,048 and 8,192 tokens around 4,096), the time per call is
interpolated between the nearest on each side (log-log, exact for a kernel linear in tokens) rather than taken
at either, which would be half or twice the step's. (A kernel a step calls in
two roles, such as one transform over index keys and over query heads, stands at one of them.) The kernel's
time per call is then

- "trace": the baseline's latency on that very workload and hardware (stable, passed), and the best stable
  passing latency there (the baseline's own when nothing beats it);
- "speed of light": T_SOL of that workload on that hardware (a lower bound: no trace there);
- "none": nothing to go on (no definition, no workload of the stage, no cascade or no spec), left out of
  the step's time and counted apart.

A workload's stage and tokens are its structured fields (Workload.stage, Workload.num_tokens), which its
recipe states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from ..einsum import workload_counts
from ..einsum.speed_of_light import speed_of_light
from ..model.dataset import Dataset
from .results import Leaderboard

__all__ = ["DECODE_TOKENS", "PREFILL_TOKENS", "EstimatePart", "StepEstimate", "representative_workload", "step_estimates"]

DECODE_TOKENS = 64  # running requests of a decode step, one new token each
PREFILL_TOKENS = 4096  # tokens of a prefill chunk
STAGES = (("decode", DECODE_TOKENS), ("prefill", PREFILL_TOKENS))
TRACE, SOL, NONE = "trace", "speed of light", "none"


@dataclass(frozen=True)
class EstimatePart:
    """One kernel of the step: its calls per step and its time per step (calls x time per call), ms."""

    kernel: str
    calls: int
    source: str  # TRACE, SOL or NONE
    workload: str = ""  # the uuid it stands at ("" with NONE)
    tokens: Optional[int] = None  # that workload's tokens
    description: str = ""  # that workload's description (names its context), or why NONE
    baseline_ms: float = 0.0  # per step: the baseline's latency (TRACE) or T_SOL (SOL)
    best_ms: float = 0.0  # per step: the best passing latency (TRACE) or T_SOL (SOL)


@dataclass(frozen=True)
class StepEstimate:
    stage: str
    tokens: int  # the serving point's tokens per step
    hardware: str
    serving: bool  # the hardware the calling record is served on
    parts: tuple[EstimatePart, ...]  # by best_ms, largest first; NONE parts last

    def _sum(self, attr: str, source: Optional[str] = None) -> float:
        return math.fsum(getattr(p, attr) for p in self.parts if source is None or p.source == source)

    @property
    def baseline_ms(self) -> float:
        return self._sum("baseline_ms")

    @property
    def best_ms(self) -> float:
        return self._sum("best_ms")

    @property
    def speedup(self) -> float:
        """Of the traced parts only (the speed of light has no baseline to beat)."""
        best = self._sum("best_ms", TRACE)
        return self._sum("baseline_ms", TRACE) / best if best > 0 else 1.0

    def calls(self, source: str) -> int:
        return sum(p.calls for p in self.parts if p.source == source)

    def kernels(self, source: str) -> int:
        return sum(1 for p in self.parts if p.source == source)

    def share_ms(self, source: str) -> float:
        """The step time (at the best solutions) the parts from `source` account for."""
        return self._sum("best_ms", source)

    @property
    def step_calls(self) -> int:
        return sum(p.calls for p in self.parts)


def _pick(ds: Dataset, kernel: str, stage: str, target: int) -> Any:
    """The workload of `kernel` for `stage` whose tokens are nearest `target` (log scale; ties: the larger, then
    the first by uuid):
    among the workloads of that stage, else those of no known stage; None if there are none."""
    ws = ds.workloads_by_definition.get(kernel, [])
    staged = [w for w in ws if w.stage == stage] or [w for w in ws if w.stage is None]
    if not staged:
        return None

    def distance(w: Any) -> tuple[float, int, str]:
        t = w.num_tokens
        return (abs(math.log(t / target)), -t, w.uuid) if t else (math.inf, 0, w.uuid)

    return min(staged, key=distance)


def representative_workload(ds: Dataset, definition: str) -> Any:
    """The workload that stands for a definition where definitions are compared (the kernels index): its decode
    workload nearest DECODE_TOKENS, else its prefill workload nearest PREFILL_TOKENS, else its first; None
    without workloads."""
    return (_pick(ds, definition, "decode", DECODE_TOKENS) or _pick(ds, definition, "prefill", PREFILL_TOKENS)
            or next(iter(ds.workloads_by_definition.get(definition, [])), None))


def _traced(lb: Optional[Leaderboard], uuid: str) -> Optional[tuple[float, float]]:
    """(baseline ms, best ms) per call of workload `uuid` on a board; None without a stable baseline there."""
    row = next((r for r in lb.rows if r.uuid == uuid), None) if lb is not None else None
    if row is None or row.baseline_latency_ms is None or not row.baseline_stable:
        return None
    base = row.baseline_latency_ms
    return base, min([base, *(r.latency_ms for r in row.results if r.ranked and r.latency_ms)])


def _bracket(ds: Dataset, kernel: str, stage: str, target: int) -> Optional[tuple[Any, Any]]:
    """The workloads of `stage` nearest below and above `target` tokens (first by uuid on equal tokens); None
    unless there is one on each side and none at `target` itself."""
    ws = sorted((w for w in ds.workloads_by_definition.get(kernel, []) if w.stage == stage and w.num_tokens),
                key=lambda w: (w.num_tokens, w.uuid))
    below = [w for w in ws if w.num_tokens < target]
    above = [w for w in ws if w.num_tokens > target]
    if not below or not above or any(w.num_tokens == target for w in ws):
        return None
    return min(below, key=lambda w: (-w.num_tokens, w.uuid)), above[0]


def _per_call(ds: Dataset, lb: Optional[Leaderboard], d: Any, w: Any, hardware: str,
              cache: dict) -> tuple[str, float, float, str]:
    """(source, baseline ms, best ms, why when NONE) of one call of the kernel at workload `w` on `hardware`."""
    traced = _traced(lb, w.uuid)
    if traced is not None:
        return TRACE, traced[0], traced[1], ""
    spec = ds.hardware_spec(hardware)
    if spec is None or d.name not in ds.einsums:
        why = "no Einsum cascade" if spec is not None else f"no spec for {hardware}"
        return NONE, 0.0, 0.0, f"no trace there, {why}"
    try:
        t_ms = speed_of_light(workload_counts(ds, d, w.axes, cache), spec).t_sol_s * 1e3
    except Exception:  # noqa: BLE001 - a bad cascade or a dtype the spec lacks: validate reports it
        return NONE, 0.0, 0.0, "no trace there, the cascade does not count"
    return SOL, t_ms, t_ms, ""


def _describe(w: Any) -> str:
    return w.data["workload"].get("description") or " ".join(f"{k}={v}" for k, v in w.axes.items())


def _part(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]], kernel: str, calls: int, stage: str,
          target: int, hardware: str, cache: dict) -> EstimatePart:
    """The kernel at the serving point: where its workloads of the stage lie on both sides of `target` (2,048 and
    8,192 around a 4,096-token prefill), its time per call interpolated between them on a log-log scale (exact for
    a kernel linear in tokens), when both take their numbers from the same source; else at its nearest workload."""
    d = ds.definitions.get(kernel)
    if d is None:
        return EstimatePart(kernel, calls, NONE, description="no definition yet")
    w = _pick(ds, kernel, stage, target)
    if w is None:
        return EstimatePart(kernel, calls, NONE, description=f"no {stage} workload")
    lb = next((b for b in boards.get(kernel, ()) if b.hardware == hardware), None)
    pair = _bracket(ds, kernel, stage, target)
    if pair is not None:
        (lo, hi), (a, b) = pair, [_per_call(ds, lb, d, x, hardware, cache) for x in pair]
        if a[0] == b[0] != NONE:
            at = math.log(target / lo.num_tokens) / math.log(hi.num_tokens / lo.num_tokens)
            base, best = (x * (y / x) ** at if x > 0 and y > 0 else (x + y) / 2 for x, y in ((a[1], b[1]), (a[2], b[2])))
            desc = (f"interpolated between {lo.num_tokens} tokens ({_describe(lo)}) and {hi.num_tokens} tokens "
                    f"({hi.uuid[:8]}: {_describe(hi)})")
            return EstimatePart(kernel, calls, a[0], lo.uuid, target, desc, calls * base, calls * best)
    source, base, best, why = _per_call(ds, lb, d, w, hardware, cache)
    return EstimatePart(kernel, calls, source, w.uuid, w.num_tokens, why or _describe(w), calls * base, calls * best)


def step_estimates(ds: Dataset, boards: Mapping[str, Sequence[Leaderboard]]) -> dict[str, tuple[StepEstimate, ...]]:
    """Per calling record (by file stem): one estimate per stage and hardware (its serving hardware first,
    then every hardware where a kernel of the record has a trace, by name)."""
    cache: dict = {}
    out: dict[str, tuple[StepEstimate, ...]] = {}
    for name, record in sorted(ds.models.items()):
        serving = ((record.data.get("serving") or {}).get("hardware")) or ""
        serving_hw = ds.hardware_spec(serving).name if ds.hardware_spec(serving) else serving
        traced_hw = sorted({lb.hardware for k in record.kernels for lb in boards.get(k.id, ())} - {serving_hw})
        estimates = []
        for stage, target in STAGES:
            calls: dict[str, int] = {}
            for k in record.kernels:
                if k.stage in (None, stage):
                    calls[k.id] = calls.get(k.id, 0) + k.count
            for hw in ([serving_hw] if serving_hw else []) + traced_hw:
                parts = [_part(ds, boards, kid, c, stage, target, hw, cache) for kid, c in calls.items()]
                parts.sort(key=lambda p: (p.source == NONE, -p.best_ms, p.kernel))
                estimates.append(StepEstimate(stage, target, hw, hw == serving_hw, tuple(parts)))
        out[name] = tuple(estimates)
    return out
