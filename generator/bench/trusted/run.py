"""`kerneltrace bench`'s entry on the trusted side: the plan, the sandbox check, the run's environment, the
progress bar, then runner.run_plan. Needs the bench extra (torch, numpy, safetensors): this process makes the
inputs and compares outputs."""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from ...model.errors import KernelTraceError
from ...model.evaluation import MIN_CALL_MS
from ...model.status import TraceStatus
from . import cpufloor
from .options import DEVICE_TIMING
from .plan import (
    DEFAULT_CPU_MAX_BYTES,
    DEFAULT_CPU_MAX_FLOPS,
    DEFAULT_CPU_MAX_SAMPLER_ELEMENTS,
    Plan,
    make_plan,
    parse_shard,
    rejected_definitions,
)
from .store import done_keys

if TYPE_CHECKING:
    from .runner import Outcome


@dataclass
class BenchSummary:
    plan: Plan
    outcomes: list[Outcome] = field(default_factory=list)
    hardware: str = ""

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes:
            out[o.status] = out.get(o.status, 0) + 1
        return out


def floors_ms(ds, plan: Plan, hardware: str, cache: dict) -> dict:
    """(definition, workload uuid) -> the workload's speed-of-light time on `hardware`, in ms: the physical
    floor no reported latency may go below; MIN_CALL_MS where the dataset has no spec of this hardware or the
    workload's cascade does not count. `cache`: the
    Einsum counts the plan already made (its CPU FLOP limit counts the same workloads)."""
    from ...einsum import workload_counts
    from ...einsum.speed_of_light import speed_of_light

    spec = ds.hardware_spec(hardware)
    # Where no speed of light is known, the physical minimum of any call: a reported 5e-324 ms made an infinite
    # speedup, written as Infinity, and no later run could read the dataset.
    floors: dict = {(p.definition.name, p.workload.uuid): MIN_CALL_MS for p in plan.pairs}
    if spec is None:
        if plan.pairs:  # the traces will name this hardware, and validate warns about it too
            print(f"kerneltrace bench: WARNING: no hardware spec named {hardware!r} in {ds.root / 'hardware'}: no "
                  f"speed-of-light floor bounds this run's latencies (only the {MIN_CALL_MS:g} ms no call beats), and "
                  f"the site shows no SOL% for them. Add hardware/{hardware}.json (peaks measured with "
                  "tests/benchmarks/measure_cpu_peaks.py on a CPU), or an alias in an existing spec.", file=sys.stderr)
        return floors
    done: set = set()
    for pair in plan.pairs:
        d, w = pair.definition, pair.workload
        if (d.name, w.uuid) in done or d.name not in ds.einsums:
            continue
        done.add((d.name, w.uuid))
        try:
            sol_ms = speed_of_light(workload_counts(ds, d, w.axes, cache), spec).t_sol_s * 1e3
            floors[(d.name, w.uuid)] = max(sol_ms, MIN_CALL_MS)
        except Exception:  # noqa: BLE001 - a cascade that does not count is the validator's to report
            continue
    return floors


def _check_device(device: str) -> None:
    try:
        import torch
    except ImportError:
        raise KernelTraceError("kerneltrace bench needs torch: pip install torch, then pip install -e '.[bench]'") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise KernelTraceError(f"--device {device}: torch sees no CUDA device here (torch {torch.__version__}); "
                               "use --device cpu")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise KernelTraceError(f"--device {device!r}: use cpu or cuda (or cuda:N)")


def _capability(device: str) -> Optional[str]:
    """The CUDA compute capability of `device` ("9.0"); None on the CPU."""
    if device == "cpu":
        return None
    import torch

    return "{}.{}".format(*torch.cuda.get_device_capability(torch.device(device)))


# The devices' timing as plain dicts (the shape `timing=` overrides take); options.DEVICE_TIMING owns the values.
CPU_TIMING = dataclasses.asdict(DEVICE_TIMING["cpu"])
CUDA_TIMING = dataclasses.asdict(DEVICE_TIMING["cuda"])


def _sandbox(device: str) -> tuple[str, str]:
    """The sandbox the workers run in, and why not bwrap; a GPU run refuses to run without it."""
    from .sandbox import sandbox_mode

    mode, why = sandbox_mode(device)
    if mode != "bwrap" and device != "cpu" and os.environ.get("KERNELTRACE_SANDBOX", "").strip().lower() != "none":
        # A GPU window is where numbers are ranked from: it fails closed. (The CPU run warns: contributors' checks.)
        raise KernelTraceError(f"--device {device}: solutions would run WITHOUT the bubblewrap sandbox ({why}), where "
                               "they can read the dataset's references and seeds; a GPU run refuses that. Install "
                               "bubblewrap, or set KERNELTRACE_SANDBOX=none to run unsandboxed anyway (its traces say "
                               "environment.sandbox \"none\" and are never ranked on the site).")
    return mode, why


def _environment(ds, device: str, mode: str, why: str) -> dict:
    """The run's traces' evaluation.environment: the machine, one provenance (one run id) and the sandbox."""
    from .environment import describe, provenance

    environment = describe(device, ds)
    environment["provenance"] = provenance()
    environment["sandbox"] = mode
    if mode != "bwrap":
        print(f"kerneltrace bench: WARNING: solutions run WITHOUT the bubblewrap sandbox: {why}. They can "
              "read any file this user can (the dataset, its seeds and references) and reach the network, "
              "and a process they start can outlive them; outputs are still compared here and the clock "
              "still bounded from outside. Traces record environment.sandbox = \"none\" and are never ranked on "
              "the site.", file=sys.stderr)
    return environment


def _progress(summary: BenchSummary, progress: bool):
    """(the progress bar or None, the callback that files each outcome in `summary` and moves the bar)."""
    bar = None
    if progress and summary.plan.pairs:
        from tqdm import tqdm
        bar = tqdm(total=len(summary.plan.pairs), unit="pair", desc=f"bench {summary.hardware}",
                   file=sys.stderr, dynamic_ncols=True)

    def on_outcome(o: Outcome) -> None:
        summary.outcomes.append(o)
        if bar is not None:
            counts = summary.counts()
            bar.set_postfix(passed=counts.get(TraceStatus.PASSED, 0),
                            failed=sum(v for k, v in counts.items() if k != TraceStatus.PASSED), refresh=False)
            bar.update(1)
    return bar, on_outcome


def _named(ds, definitions: Sequence[str], solutions: Sequence[str]) -> Optional[set[str]]:
    """The definitions a run limited by --definitions or --solutions can bench (None: any): only theirs are checked."""
    if not definitions and not solutions:
        return None
    named = {ds.solutions[s].definition for s in solutions if s in ds.solutions}
    return (set(definitions) & named if definitions and solutions else set(definitions) | named)


def run_bench(dataset_root: Path, *, device: str = "cpu", out: Optional[Path] = None,
              definitions: Sequence[str] = (), solutions: Sequence[str] = (), authors: Sequence[str] = (),
              shard: Optional[str] = None, resume: bool = False, correctness_only: bool = False,
              max_bytes: Optional[int] = None, max_flops: Optional[float] = None, timeout_s: float = 300.0, timing: Optional[dict] = None,
              progress: bool = True, prefetch: Optional[bool] = None, breadth_first: bool = False,
              budget_s: Optional[float] = None) -> BenchSummary:
    import time

    from .sandbox import Worker

    started = time.monotonic()
    _check_device(device)
    mode, why = _sandbox(device)
    # The reference's worker and the first solution's start now (Python and torch, a few seconds each), while
    # this process imports torch and loads the dataset.
    ahead = [Worker(device, mode) for _ in range(2)]
    if device == "cpu" and ahead[0].cpu_group is None:  # each trace's log says so too (pair.py)
        print(f"kerneltrace bench: WARNING: {cpufloor.not_applied(ahead[0].cpu_why)}", file=sys.stderr)
    try:
        from ...load import load
        from .runner import Options, run_plan  # torch comes with it: not needed to merge or read traces
        from .store import repair_tails

        out = out or dataset_root
        if resume:  # a kill during a write leaves a torn last line: cut it back before reading what is done
            for path, cut in repair_tails(out):
                print(f"kerneltrace bench: {path}: cut a torn last line ({cut} bytes) left by an interrupted run",
                      file=sys.stderr)
        ds = load(dataset_root)
        if ds.load_diagnostics and any(d.is_error for d in ds.load_diagnostics):
            raise KernelTraceError(f"{dataset_root} has errors; run `kerneltrace validate --dataset {dataset_root}` first")
        environment = _environment(ds, device, mode, why)
        if device == "cpu":
            max_bytes = DEFAULT_CPU_MAX_BYTES if max_bytes is None else max_bytes
            max_flops = DEFAULT_CPU_MAX_FLOPS if max_flops is None else max_flops
        sampler_limit = DEFAULT_CPU_MAX_SAMPLER_ELEMENTS if device == "cpu" else None
        done = frozenset(done_keys(out)) if resume else frozenset()
        einsum_counts: dict = {}  # per workload: the CPU limit and the physical floor both use them
        plan = make_plan(ds, device, definitions=definitions, solutions=solutions, authors=authors,
                         shard=parse_shard(shard), max_bytes=max_bytes, max_flops=max_flops,
                         max_sampler_elements=sampler_limit, done=done, hardware=environment["hardware"],
                         breadth_first=breadth_first, rejected=rejected_definitions(ds, _named(ds, definitions, solutions)),
                         counts_cache=einsum_counts,
                         capability=_capability(device))
        summary = BenchSummary(plan, hardware=environment["hardware"])
        opts = Options(device=device, out=out, timeout_s=timeout_s, correctness_only=correctness_only, sandbox=mode,
                       prefetch=(device != "cpu" or correctness_only) if prefetch is None else prefetch,
                       timing=dict(timing or {}),
                       floors_ms=floors_ms(ds, plan, environment["hardware"], einsum_counts),
                       deadline=None if budget_s is None else started + budget_s)
        bar, on_outcome = _progress(summary, progress)
        try:
            taken, ahead[:] = list(ahead), []
            run_plan(plan, opts, dataset_root, environment, on_outcome, started=taken)
        finally:
            if bar is not None:
                bar.close()
        return summary
    finally:
        for worker in ahead:  # those run_plan did not take (it kills those it took)
            worker.kill()
