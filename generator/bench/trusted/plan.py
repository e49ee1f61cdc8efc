"""Which (solution, workload) pairs a bench run covers: filters, device fit, the CPU cost limit,
sharding and resume. Pure functions over the loaded dataset; no torch."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Optional

from ...model.contender_kinds import COMPILER, kind_of
from ...model.dtypes import DTYPE_BYTES
from ...model.errors import KernelTraceError
from ...model.layout import CANONICAL
from .dependencies import installed_version, unmet

if TYPE_CHECKING:  # annotations only: every sandboxed worker imports this package before torch
    from ...model.dataset import Dataset
    from ...model.records import Definition, Solution, Workload


# A CPU run takes a workload when one call touches at most this many bytes of inputs and outputs (a
# kernel reads each input and writes each output at least once, so this bounds the memory traffic
# from below) and does at most this many FLOPs by the definition's Einsum cascade (the roofline
# analysis). A step-by-step float32 reference on a small CPU runs at a few tens of GFLOP/s, so the
# checks and timing of one pair stay within seconds.
DEFAULT_CPU_MAX_BYTES = 64 * 2**20
DEFAULT_CPU_MAX_FLOPS = 5e9
# Samplers cost what no Einsum counts: their references sort every row of the vocabulary, and
# a pair compares hundreds of draws as distributions. On a 2-core CPU a batch-64 sampler over 201k tokens took
# past 300 s; a CPU run takes a sampling workload of at most this many probabilities per call (batch 8 at
# vocabularies up to 262k).
DEFAULT_CPU_MAX_SAMPLER_ELEMENTS = 8 * 262208


@dataclass(frozen=True)
class Pair:
    definition: Definition
    solution: Solution
    workload: Workload

    @property
    def key(self) -> str:
        return f"{self.solution.name}/{self.workload.uuid}"


@dataclass
class Plan:
    pairs: list[Pair] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    already_done: int = 0


def parse_shard(text: Optional[str]) -> Optional[tuple[int, int]]:
    if not text:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise KernelTraceError(f"--shard {text!r}: write it as K/N, e.g. 2/4 (shard 2 of 4)") from None
    if not (n >= 1 and 1 <= k <= n):
        raise KernelTraceError(f"--shard {text!r}: K must be between 1 and N, and N at least 1")
    return k, n


def shard_of(pair_key: str, n: int) -> int:
    """1-based shard of a pair: a stable hash, so every machine agrees and adding a pair moves no other."""
    digest = hashlib.sha256(pair_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def _elements(d: Definition, w: Workload, specs: Iterable) -> list[int]:
    """Elements of each tensor spec in one call of workload `w` (const axes from the definition)."""
    axes = {n: a.value for n, a in d.axes.items() if a.kind == "const"}
    axes.update(w.axes)
    out = []
    for spec in specs:
        n = 1
        for a in spec.shape:
            n *= int(axes.get(a, 1))
        out.append(n)
    return out


def call_bytes(d: Definition, w: Workload) -> int:
    specs = list(d.inputs.values()) + list(d.outputs.values())
    return int(sum(n * DTYPE_BYTES[spec.dtype] for n, spec in zip(_elements(d, w, specs), specs)))


def call_flops(ds: Dataset, d: Definition, w: Workload, cache: dict) -> Optional[int]:
    """FLOPs of one call from the definition's Einsum cascade; None without a (countable) cascade."""
    if d.name not in ds.einsums:
        return None
    from ...einsum import workload_counts

    try:
        return workload_counts(ds, d, w.axes, cache).flops
    except Exception:  # noqa: BLE001 - a bad cascade is the validator's to report; fall back to bytes
        return None


def sampler_elements(d: Definition, w: Workload) -> Optional[int]:
    """Elements of a sampling definition's largest input in one call (its probabilities); None for other types."""
    if d.type != "sampling":
        return None
    return max(_elements(d, w, d.inputs.values()), default=0)


def worker_owner(solution: Solution) -> str:
    """Who a solution's worker is shared with: its author folder in the dataset layout (never the `author` field a
    file can claim), or the solution alone where the path names no author folder (a FlashInfer-Trace layout)."""
    return CANONICAL.solution_author(solution.source.path) or f"solution:{solution.name}"


def claimed_author(solution: Solution) -> Optional[str]:
    """Why the bench refuses a solution whose `author` field names another author than its folder, else None."""
    folder = CANONICAL.solution_author(solution.source.path)
    if not folder or folder == solution.author:
        return None
    return (f"refused: its author field says {solution.author!r} but it is stored in solutions/{folder}/ (the folder "
            f"is who it runs as and is ranked as); move it to solutions/{solution.author}/ or set its author to "
            f"{folder!r} (kerneltrace validate says the same)")


def why_not_on(ds: Dataset, solution: Solution, device: str, hardware: str = "",
               capability: Optional[str] = None) -> Optional[str]:
    """None when a run on `device` takes `solution`, else why not. A CPU run takes what targets cpu. A GPU run
    (`hardware`: the device's spec name, `capability`: its CUDA compute capability, e.g. "9.0") takes what
    targets that hardware, by a spec's name or alias, or another GPU of the same compute capability (code
    written for an H100 runs on an H200); never what targets only GPUs of another one (a B200's FP4 kernels
    on an H100). Without either (a device nothing describes), any GPU target will do."""
    listed = ", ".join(solution.target_hardware)
    if device == "cpu":
        return None if "cpu" in {t.lower() for t in solution.target_hardware} else f"targets {listed}, not cpu"
    gpus = [t for t in solution.target_hardware if t.lower() != "cpu"]
    if not gpus:
        return f"targets {listed}, not a GPU"
    if not hardware and not capability:
        return None
    specs = [ds.hardware_spec(t) for t in gpus]
    if any(t.lower() == hardware.lower() or (s is not None and s.name == hardware) for t, s in zip(gpus, specs)):
        return None
    if capability and any(s is not None and s.compute_capability == capability for s in specs):
        return None
    return (f"targets {listed}, not {hardware or 'this GPU'} (compute capability {capability or 'unknown'}); "
            "a solution that runs there lists it in spec.target_hardware")


def make_plan(ds: Dataset, device: str, *, definitions: Iterable[str] = (), solutions: Iterable[str] = (),
              authors: Iterable[str] = (), shard: Optional[tuple[int, int]] = None,
              max_bytes: Optional[int] = None, max_flops: Optional[float] = None,
              max_sampler_elements: Optional[int] = None, done: frozenset = frozenset(), hardware: str = "", breadth_first: bool = False,
              rejected: Optional[dict] = None, counts_cache: Optional[dict] = None,
              capability: Optional[str] = None, version_of: Callable[[str], Optional[str]] = installed_version) -> Plan:
    """The pairs to run, ordered by author, definition and solution (the bench reuses a worker for an author's
    next solution); `breadth_first`: first every solution on one representative workload of its definition
    (the median by bytes per call), those of definitions with several solutions first, then the rest, so a
    run cut short by its time budget has covered the contested definitions, then every definition, once (a
    compiler contender's workloads all come with its first: one compile each). `rejected`: definition name ->
    why validate rejects it (rejected_definitions); their solutions are skipped, saying so. `counts_cache`:
    the Einsum counts of workloads (einsum.workload_counts), shared with whoever counts them next. `hardware`
    and `capability`: the device's, for which solutions a GPU run takes (why_not_on). `version_of`: the installed
    version of a distribution, or None; a solution whose spec.dependencies it does not meet is skipped, saying why."""
    definitions, solutions, authors = set(definitions), set(solutions), set(authors)
    for name in sorted(definitions - set(ds.definitions)):
        raise KernelTraceError(f"--definitions: no definition named {name!r} in {ds.root}")
    for name in sorted(solutions - set(ds.solutions)):
        raise KernelTraceError(f"--solutions: no solution named {name!r} in {ds.root}")
    plan = Plan()
    workloads = ds.workloads_by_definition
    counts_cache = {} if counts_cache is None else counts_cache
    for solution in sorted(ds.solutions.values(), key=lambda s: (worker_owner(s), s.definition, s.name)):
        if definitions and solution.definition not in definitions:
            continue
        if (solutions and solution.name not in solutions) or (authors and solution.author not in authors):
            continue
        d = ds.definitions.get(solution.definition)
        if d is None:
            continue
        if rejected and d.name in rejected:
            plan.skipped.append((solution.name, f"not run: validate rejects its definition or workloads: {rejected[d.name]}"))
            continue
        why = (claimed_author(solution) or why_not_on(ds, solution, device, hardware, capability)
               or unmet(solution.dependencies, version_of))
        if why:
            plan.skipped.append((solution.name, why))
            continue
        for w in sorted(workloads.get(d.name, []), key=lambda w: w.uuid):
            pair = Pair(d, solution, w)
            if shard and shard_of(pair.key, shard[1]) != shard[0]:
                continue
            if max_bytes is not None and call_bytes(d, w) > max_bytes:
                plan.skipped.append((f"{solution.name} on {w.uuid[:8]} {dict(w.axes)}",
                                     f"{call_bytes(d, w) / 2**20:.0f} MiB per call > limit {max_bytes / 2**20:.0f} MiB"))
                continue
            if max_flops is not None:
                flops = call_flops(ds, d, w, counts_cache)
                if flops is not None and flops > max_flops:
                    plan.skipped.append((f"{solution.name} on {w.uuid[:8]} {dict(w.axes)}",
                                         f"{flops / 1e9:.1f} GFLOP per call > limit {max_flops / 1e9:g} GFLOP"))
                    continue
            elements = sampler_elements(d, w) if max_sampler_elements is not None else None
            if elements is not None and elements > max_sampler_elements:
                plan.skipped.append((f"{solution.name} on {w.uuid[:8]} {dict(w.axes)}",
                                     f"{elements:,d} probabilities per call > limit {max_sampler_elements:,d} for "
                                     "samplers on this device (their references sort every row)"))
                continue
            if (solution.name, w.uuid, hardware) in done:
                plan.already_done += 1
                continue
            plan.pairs.append(pair)
    if breadth_first:
        planned: dict[str, dict] = {}
        for p in plan.pairs:
            planned.setdefault(p.definition.name, {})[p.workload.uuid] = p.workload
        first = {d: representative(list(ws.values()), ds.definitions[d]) for d, ws in planned.items()}
        contested = {d for d, n in Counter(p.definition.name for p in plan.pairs
                                           if first.get(p.definition.name) == p.workload.uuid).items() if n > 1}
        # A compiler contender's workloads stay together in the first round: its compile is paid once per worker
        # (a second round would load it again and compile again), and its other workloads cost only their timing.
        early = [first.get(p.definition.name) == p.workload.uuid or kind_of(p.solution.author) == COMPILER
                 for p in plan.pairs]
        rounds = (sorted([p for p, e in zip(plan.pairs, early) if e], key=lambda p: p.definition.name not in contested),
                  [p for p, e in zip(plan.pairs, early) if not e])
        plan.pairs = rounds[0] + rounds[1]
    return plan


def rejected_definitions(ds: Dataset, names: Optional[Collection[str]] = None) -> dict[str, str]:
    """Definition name -> the first error validate finds in it or its workloads (file:line $.path: message):
    the bench runs nothing for those, since their inputs cannot be made as declared. `names`: the definitions the
    run can bench (checking all 653 definitions' reference code took 4 s of a one-definition run); None: all."""
    from ...validate.definitions import check_definitions
    from ...validate.workloads import check_workloads

    out: dict[str, str] = {}
    for diag in [*check_definitions(ds, names), *check_workloads(ds, names)]:
        if diag.is_error:
            name = diag.file.rsplit("/", 1)[-1].split(".", 1)[0]
            out.setdefault(name, diag.format_human())
    return out


def representative(workloads: list, definition: Definition) -> str:
    """The uuid of a definition's representative workload: the median by bytes per call (ties by uuid)."""
    ordered = sorted(workloads, key=lambda w: (call_bytes(definition, w), w.uuid))
    return ordered[(len(ordered) - 1) // 2].uuid
