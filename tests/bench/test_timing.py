"""The clock and its bound, end to end: the warm-up both workers get, work hidden from the worker's clock charged
back by the outside bound (a batch answered in its first call, a clock stopped for one read), honest solutions
not charged, and the bundled baseline traces not far slower than the reference beside them."""

from __future__ import annotations

import pytest
import torch

from generator.bench import run_bench
from generator.bench.trusted.plan import make_plan
from generator.bench.trusted.store import read_traces
from generator.load import load

from dataset_factory import write_dataset
from planted import DATASET, FAST, add_solution, target_hardware, workloads


def test_cuda_batches_start_with_the_warm_up_and_both_workers_get_it(tmp_path):
    """Every worker's load message carries the timing's warm-up (the reference's and the solution's alike, so
    both are timed with the clocks up), and the flush repeated for it keeps the device busy at least that long
    at a full-speed write rate; the CPU gets none."""
    from types import SimpleNamespace

    from generator.bench import CPU_TIMING, CUDA_TIMING
    from generator.bench.sandboxed.clock import WRITE_BYTES_PER_MS, L2Flusher
    from generator.bench.trusted.runner import Options, _load_message

    root = write_dataset(tmp_path)
    pair = make_plan(load(root), "cpu").pairs[0]
    for reference in (True, False):
        assert _load_message(pair, Options(device="cuda", timing=CUDA_TIMING), reference)["warmup_ms"] == 10.0
        assert _load_message(pair, Options(device="cpu", timing=CPU_TIMING), reference)["warmup_ms"] == 0.0
    flusher = L2Flusher.__new__(L2Flusher)
    flusher.buffer = torch.empty(256 * 2**20 // 4, dtype=torch.int32)
    n = flusher.launches(30.0)
    assert n * 256 * 2**20 / WRITE_BYTES_PER_MS >= 30.0 > (n - 1) * 256 * 2**20 / WRITE_BYTES_PER_MS
    assert flusher.launches(0.0) == 0
    calls = []
    flusher.buffer = SimpleNamespace(numel=lambda: 2**26, zero_=lambda: calls.append(1))
    flusher.warm(30.0)
    assert len(calls) == flusher.launches(30.0) > 0


# Every input set of a batch is drawn before its first call: this one finds the batch's other sets (its caller's
# frame holds them), answers them all in the first call and returns those answers at once in the others. The first
# call of a batch is no sample and the median of the others is nothing. Each answer costs WORK_MS (its honest twin
# spends it in every call).
WORK_MS = 2


def test_a_batch_answered_in_one_call_is_charged(bench_root):
    """The batch's time beyond n times its median call, beyond the reference's spread and the harness's work, is
    charged: the cheat's latency is its honest twin's (WORK_MS a call), not the nothing of its median call. In the
    same run, a solution that computes a batch's stream of elementwise inputs once (they were windows of one stream
    per batch: 2.8x to 7.5x) finds no stream (each call draws from seeds of its own) and pays its twin's cost."""
    root = bench_root
    # One author's worker serves the three in turn (neither cheat patches anything or leaves a thread).
    for name, file in (("batch_in_one_call", None), ("computes_the_stream_once", None),
                       ("honest_twin", "honest/works_each_call")):
        add_solution(root, name, file, author="twins", work_s=WORK_MS / 1e3)
    timing = {"min_samples": 5, "max_samples": 30, "budget_s": 0.5, "min_batches": 3}  # batches of ten calls or so
    summary = run_bench(root, device="cpu", timeout_s=20, timing=timing, progress=False,
                        solutions=["batch_in_one_call", "honest_twin", "computes_the_stream_once"])
    got = {o.pair.solution.name: o for o in summary.outcomes}
    honest = got["honest_twin"].record["evaluation"]["performance"]["latency_ms"]
    assert got["honest_twin"].status == "PASSED" and honest >= WORK_MS
    stream = got["computes_the_stream_once"]
    assert stream.status == "PASSED", stream.log[-400:]
    assert stream.record["evaluation"]["performance"]["latency_ms"] >= 0.8 * honest, stream.record["evaluation"]
    cheat = got["batch_in_one_call"]
    assert cheat.status in ("PASSED", "REWARD_HACK"), cheat.log
    if cheat.status == "PASSED":
        # Each call's input set is drawn just before it: the first call finds no later set to answer ahead, so the
        # cheat pays its honest twin's cost call by call (before, it found them all and the bound charged ~2/3 back).
        assert cheat.record["evaluation"]["performance"]["latency_ms"] >= 0.8 * honest, cheat.record["evaluation"]


def test_a_stopped_clock_cannot_hide_a_millisecond_a_call_at_the_cpu_default_timing(bench_root):
    """The CPU's slack for a busy host is 5 ms a batch: in batches of 5 calls it forgave 1 ms a call, so a kernel under
    that which stops the worker's clock for the one read that ends each call reported what it liked. Batches as long as
    a quarter of the budget allows (CPU_TIMING, the default here) charge it back: judged against its honest twin."""
    root = bench_root
    # One worker, the honest twin first (by name): the clock's patch comes after it, and each call restores it.
    add_solution(root, "honest_ms", "honest/works_each_call", author="twins", work_s=0.001)
    add_solution(root, "stops_the_clock_ms", "stops_the_clock_for_one_read", author="twins", work_s=0.001)
    summary = run_bench(root, device="cpu", timeout_s=30, progress=False, solutions=["honest_ms", "stops_the_clock_ms"])
    got = {o.pair.solution.name: o.record["evaluation"] for o in summary.outcomes}
    honest, cheat = (got[n]["performance"]["latency_ms"] for n in ("honest_ms", "stops_the_clock_ms"))
    assert honest >= 1.0 and cheat >= 0.5 * honest, (honest, cheat, got["stops_the_clock_ms"]["log"])


def test_honest_solutions_are_not_distorted(tmp_path):
    """The outside bound charges only work hidden from the clock: honest solutions (the reference's own
    code, and a different correct one) keep medians near the reference's, in a run as the CLI makes it on
    the CPU (no worker started alongside the timed batches). A charge of the harness's own work would
    add ~0.3 ms per call here, several times these kernels' time."""
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    add_solution(root, "honest_other", "honest/rmsnorm", author="baseline")  # one worker serves both
    summary = run_bench(root, device="cpu", timing={**FAST, "max_samples": 20}, progress=False)
    assert len(summary.outcomes) == 4
    for o in summary.outcomes:
        perf = o.record["evaluation"]["performance"]
        assert o.status == "PASSED" and perf["latency_ms"] < 3 * perf["reference_latency_ms"] + 0.05, \
            (o.pair.solution.name, perf, o.record["evaluation"]["log"])


def test_no_committed_stable_baseline_trace_is_far_slower_than_the_reference_beside_it():
    """A baseline is the definition's reference in eager torch: timed beside it in one pair, it cannot be several
    times slower unless the host disturbed the pair. Such a trace must be re-measured or marked unstable (issue 37)."""
    from generator.model.contender_kinds import BASELINE_AUTHOR
    from generator.model.evaluation import performance_is_unstable

    far = []
    for path in sorted((DATASET / "traces" / BASELINE_AUTHOR).rglob("*.jsonl")):
        for t in read_traces(path):
            perf = t["evaluation"].get("performance")
            if t["evaluation"]["status"] == "PASSED" and perf and not performance_is_unstable(perf) \
                    and perf["latency_ms"] > 5 * perf["reference_latency_ms"]:
                far.append(f"{path.relative_to(DATASET)}: {t['solution']} {t['workload']['axes']} {perf['latency_ms']:.3g} ms "
                           f"vs reference {perf['reference_latency_ms']:.3g} ms")
    assert not far, "\n".join(far)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_side_stream_work_is_caught_on_cuda(bench_root):
    root = bench_root
    add_solution(root, "side_stream")
    target_hardware(root, ["H100_SXM"], "solutions/cheat")
    summary = run_bench(root, device="cuda", solutions=["side_stream"], progress=False)
    # The worker synchronises the whole device before it answers and the outside clock sees that:
    # the side stream's 10M-cycle sleep is in the number (or the call is caught outright).
    [o] = summary.outcomes
    # Or its answer is wrong: `out` was made on the default stream and written on the side stream unsynchronised.
    assert o.status in ("REWARD_HACK", "INCORRECT_NUMERICAL") or (
        o.status == "PASSED" and o.record["evaluation"]["performance"]["latency_ms"] > 2), (o.status, o.log)
