"""The per-call outside bound on the CPU, and each call's seeds sent only when the call before it has ended (generator/bench/trusted/outside.py): the trusted process timestamps a mark the
worker sends before and after each call, so a stopped clock shows at the scale of a call. Before it, the batch
bound forgave 5 ms a batch plus a quarter of the harness's work: a kernel under ~0.15 ms a call that stopped the
worker's clock reported what it liked (issue 38: 49x to 2,700x on rmsnorm_h4096, measured again here with
tests/benchmarks/bench_stopped_clock.py: median 0.03 of its honest twin before, 0.96 after)."""

from __future__ import annotations

import json
import statistics

import pytest

from generator.bench import run_bench
from generator.bench.trusted import cpufloor, outside

from dataset_factory import WORKLOAD, dump, write_dataset

COMPUTE = (
    "import time\nimport torch\n\n"
    "def compute(input, weight, eps):\n"
    "    x = input.float()\n"
    "    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(input.dtype)\n\n"
    "def work(ms):  # a kernel's time, spent on the CPU (a sleep would yield it)\n"
    "    end = time.perf_counter() + ms / 1e3\n    while time.perf_counter() < end:\n        pass\n\n"
    "def burn(ms):  # a kernel's CPU time: as much whatever the host takes away meanwhile\n"
    "    end = time.thread_time() + ms / 1e3\n    while time.thread_time() < end:\n        pass\n\n"
)
WORK_MS = 0.3  # under the 0.15 ms a call the batch bound forgave at 33 calls a batch, plus its share of the harness
HONEST = COMPUTE + f"def run(input, weight, eps):\n    work({WORK_MS})\n    return compute(input, weight, eps)\n"
# The attack of issue 38: honest work, then the worker's clock patched for the one read that ends the call.
STOPS_THE_CLOCK = (COMPUTE + "import generator.bench.sandboxed.clock as _t\n_real = _t._perf_counter\n\n"
                   f"def run(input, weight, eps):\n    start = _real()\n    burn({WORK_MS})\n"
                   "    out = compute(input, weight, eps)\n\n"
                   "    def _once():\n        _t._perf_counter = _real\n        return start + 5e-7\n"
                   "    _t._perf_counter = _once\n    return out\n")
# Marks are the worker's to send, so a solution can withhold them (or add its own): the count is checked.
DROPS_ITS_MARKS = (COMPUTE + "import generator.bench.shared.protocol as _p\n_send = _p.send\n\n"
                   "def _quiet(fd, header, *rest, **kw):\n    if header.get('op') != 'mark':\n"
                   "        _send(fd, header, *rest, **kw)\n\n"
                   "def run(input, weight, eps):\n    _p.send = _quiet\n    return compute(input, weight, eps)\n")
# A batch's seeds all came with the batch: a call could find the next call's in the worker's frames and draw its
# inputs ahead. This one answers wrongly whenever it finds them (so it fails only where it could have cheated).
READS_THE_NEXT_SEEDS = (COMPUTE + "import sys\n\n"
                        "def _next_seeds_visible():\n    f = sys._getframe(1)\n    while f is not None:\n"
                        "        calls, drawn = f.f_locals.get('calls'), f.f_locals.get('drawn')\n"
                        "        if isinstance(calls, list) and isinstance(drawn, dict) and drawn.get('call') in calls:\n"
                        "            i = calls.index(drawn['call'])\n"
                        "            return any(c is not None and c != calls[i] for c in calls[i + 1:])\n"
                        "        f = f.f_back\n    return False\n\n"
                        "def run(input, weight, eps):\n    out = compute(input, weight, eps)\n"
                        "    return out * 0 if _next_seeds_visible() else out\n")
SENDS_EXTRA_MARKS = (COMPUTE + "import generator.bench.shared.protocol as _p\n\n"
                     "def run(input, weight, eps):\n    _p.send(4, {'op': 'mark'})\n    return compute(input, weight, eps)\n")


def _solution(root, name: str, source: str, author: str) -> None:
    dump(root / f"solutions/{author}/norm/rmsnorm_h128/{name}.json", {
        "name": name, "definition": "rmsnorm_h128", "author": author, "description": f"planted: {name}",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": False, "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": source}]})


def _dataset(tmp_path, solutions: dict):
    workload = json.loads(json.dumps(WORKLOAD))
    workload["workload"].update(uuid="wl-0000", axes={"batch_size": 4}, seed=100)
    root = write_dataset(tmp_path, traces=[], workloads=[workload])
    for name, (source, author) in solutions.items():
        _solution(root, name, source, author)
    return root


def test_a_stopped_clock_is_charged_call_by_call(tmp_path):
    """A 0.3 ms kernel that stops the worker's clock: charged back to its honest twin's time, each in its own pair
    and judged as a ratio to it, in batches of 33 calls (the CPU's default timing, as a `kerneltrace bench` run)."""
    root = _dataset(tmp_path, {"honest": (HONEST, "honest"), "stops_the_clock": (STOPS_THE_CLOCK, "stopper")})
    summary = run_bench(root, device="cpu", timeout_s=60, progress=False, solutions=["honest", "stops_the_clock"])
    got = {o.pair.solution.name: o for o in summary.outcomes}
    assert {o.status for o in got.values()} == {"PASSED"}, {n: o.log[-300:] for n, o in got.items()}
    honest = got["honest"].record["evaluation"]["performance"]
    cheat = got["stops_the_clock"].record["evaluation"]["performance"]["latency_ms"]
    # Against the twin's fastest call: on a busy host its median holds time the host took away (1.55 ms for its
    # 0.3 ms at a load of 6 on 2 cores), which the CPU-time floor does not charge; the cheat burns CPU time.
    assert honest["min_ms"] >= WORK_MS and cheat >= 0.7 * honest["min_ms"], (honest, cheat, got["stops_the_clock"].log[-600:])
    # charged by this bound, by the CPU-time floor (where a CPU cgroup can be made) or by the batch bound
    assert "charged" in got["stops_the_clock"].log


@pytest.mark.parametrize("name, source, why", [
    ("drops_its_marks", DROPS_ITS_MARKS, "(one before and one after each)"),
    ("sends_extra_marks", SENDS_EXTRA_MARKS, "more marks than the"),
], ids=["drops", "adds"])
def test_marks_withheld_or_added_are_a_reward_hack(tmp_path, name, source, why):
    """...and the worker is replaced: a patch of the worker's messages, or a call message sent on a forged mark still
    in its pipe, would reach the same author's next solution (run after it: zz_); that honest one passes (it failed
    in the shared worker: "sent 0 marks", "a bad message")."""
    root = _dataset(tmp_path, {name: (source, "marker"), "zz_after_the_marker": (HONEST, "marker")})
    got = {o.pair.solution.name: o for o in run_bench(
        root, device="cpu", timeout_s=60, progress=False, solutions=[name, "zz_after_the_marker"],
        timing={"min_samples": 3, "max_samples": 10, "budget_s": 0.05, "min_batches": 3}).outcomes}
    o = got[name]
    assert o.status == "REWARD_HACK" and why in o.log, (o.status, o.log[-500:])
    assert got["zz_after_the_marker"].status == "PASSED", got["zz_after_the_marker"].log[-500:]


def test_no_later_calls_seeds_are_in_the_worker_while_a_call_runs(tmp_path):
    root = _dataset(tmp_path, {"reads_the_next_seeds": (READS_THE_NEXT_SEEDS, "reader")})
    [o] = run_bench(root, device="cpu", timeout_s=60, progress=False, solutions=["reads_the_next_seeds"],
                    timing={"min_samples": 3, "max_samples": 10, "budget_s": 0.05, "min_batches": 3}).outcomes
    assert o.status == "PASSED", o.log[-500:]


def test_the_bound_charges_a_shifted_batch_not_late_marks():
    """On numbers: the marks' cost (measured on the reference's calls) is not charged; one mark read late by a busy
    trusted process moves nothing (medians); a clock reporting nothing is raised to the outside's view, within the
    tolerance."""
    cost = outside.mark_cost([([0.55, 0.56, 0.54, 0.55], [0.50, 0.51, 0.49, 0.50])])
    assert cost == pytest.approx(0.05)
    honest_ms = [0.50, 0.52, 0.49, 0.51, 0.50]
    late = [m + 0.05 for m in honest_ms]
    late[2] += 3.0  # the trusted process read this call's end mark 3 ms late
    assert outside.charged(honest_ms, late, cost) == honest_ms
    stopped = outside.charged([0.0005] * 5, [m + 0.05 for m in honest_ms], cost)
    assert statistics.median(stopped) >= 0.95 * 0.50 - outside.CALL_SLACK_MS - 1e-9
    assert statistics.median(stopped) <= 0.51  # never beyond what the outside saw
    # A calls' worth hidden in each call beyond the tolerance: charged.
    slowed = outside.charged(honest_ms, [m + 0.05 + 0.2 for m in honest_ms], cost)
    assert statistics.median(slowed) == pytest.approx(statistics.median(honest_ms) + 0.2 - 0.05 * 0.7 - 0.01, abs=1e-3)


def _turns(ms: float, cpu: float, serial: float = 0.0, n: int = 4, batches: int = 3) -> list:
    """Batches of n calls reporting `ms` each, whose sandbox used `cpu` ms of CPU a call (`serial` on its busiest
    thread, with those that ended; all of it when 0)."""
    return [cpufloor.Turn([ms] * n, cpu * n, (serial or cpu) * n) for _ in range(batches)]


def test_the_cpu_time_floor_raises_work_moved_out_of_the_calls_not_honest_or_parallel_work():
    """On numbers (trusted/cpufloor.py): the reference's batches (0.1 ms calls, 0.4 ms of harness CPU a call) give the
    harness's CPU; a solution whose calls report 0.05 ms while its sandbox used 1 ms a call more is raised to about 1
    ms (the planted forger: without the floor it kept its 0.05); one reporting its 1 ms honestly, on one thread or
    on two (2 ms of CPU, 1 ms on its busiest thread), is left alone, as is harness noise within the tolerance."""
    ref = [cpufloor.Turn([0.10] * 4, 0.50 * 4, 0.50 * 4, [0.10] * 4) for _ in range(3)]
    assert cpufloor.harness(ref) == pytest.approx(0.40)
    forged = cpufloor.charged([[0.05] * 3] * 3, _turns(0.05, 1.05 + 0.40), ref)
    allowed = (outside.CALL_SHARE * 1.05 + outside.CALL_SLACK_MS + cpufloor.HARNESS_SHARE * 0.40
               + cpufloor.BATCH_CPU_SLACK_MS / 4)
    assert forged == pytest.approx([1.05 - allowed] * 9) and min(forged) > 0.7
    for honest in (_turns(1.0, 1.0 + 0.40), _turns(1.0, 2.0 + 0.40, serial=1.0 + 0.40), _turns(1.0, 1.0 + 0.50)):
        assert cpufloor.charged([[1.0] * 3] * 3, honest, ref) == [1.0] * 9
    # Threads that ended within the batch are counted as if serial: their CPU is known only in sum.
    from generator.bench.trusted.remote import _used

    used = _used((10.0, {"1": 5.0, "2": 1.0}), (14.0, {"1": 7.0, "3": 0.5}), None)
    assert (used.cpu, used.serial, used.second, used.others) == (4.0, 2.0 + (4.0 - 2.0 - 0.5), 0.5, None)
    # The host's other work meanwhile: its cgroup's CPU beyond the sandbox's and this process's, per ms of the batch.
    used = _used((10.0, {"1": 5.0}, 100.0), (14.0, {"1": 9.0}, 110.0), None, own=(1.0, 5.0))
    assert used.others == pytest.approx((10.0 - 4.0 - 1.0) / 5.0)


def test_the_cpu_time_floor_allows_the_harness_noise_measured_and_no_more():
    """At 33 calls a batch (the CPU's default) and 0.25 ms of harness CPU a call on the reference's worker: a forger
    reporting 0.05 ms while its sandbox used 0.15 ms a call more keeps 5 % + 10 us of the floor, 0.4 ms a batch and
    HARNESS_SHARE of the harness's CPU; an honest solution whose harness took 27 % more CPU than the reference's (the
    most measured on the saturated 2-core host) is not charged."""
    ref = [cpufloor.Turn([0.05] * 33, (0.25 + 0.05) * 33, (0.25 + 0.05) * 33, [0.05] * 33) for _ in range(3)]

    def turns(cpu: float) -> list:
        return [cpufloor.Turn([0.05] * 33, cpu * 33, cpu * 33) for _ in range(3)]

    forged = cpufloor.charged([[0.05] * 32] * 3, turns(0.25 + 0.05 + 0.15), ref)
    assert forged[0] == pytest.approx(0.05 + 0.15 - (outside.CALL_SHARE * 0.2 + outside.CALL_SLACK_MS
                                                    + cpufloor.HARNESS_SHARE * 0.25 + cpufloor.BATCH_CPU_SLACK_MS / 33))
    assert cpufloor.charged([[0.05] * 32] * 3, turns(0.25 * 1.27 + 0.05), ref) == [0.05] * 96


def test_the_cpu_time_floor_bounds_a_helper_thread_without_the_harness_noise():
    """The harness runs on the main thread: a helper thread that does 0.15 ms a call while the main thread runs the
    harness (0.25 ms a call) used to hide behind it (the floor took the harness from the busiest thread). The next
    busiest thread's CPU bounds the calls too, less what the reference's worker spends beside its main thread (digest
    threads for large outputs), with no share of the harness to allow for; an honest call on two threads is not
    charged, nor an honest solution whose digest threads work as the reference's did."""
    ref = [cpufloor.Turn([0.05] * 33, 0.30 * 33, 0.30 * 33, [0.05] * 33) for _ in range(3)]
    helper = [cpufloor.Turn([0.01] * 33, (0.30 + 0.15) * 33, 0.30 * 33, None, 0.15 * 33, 1.0) for _ in range(3)]
    assert cpufloor.floors(helper, ref) == pytest.approx([0.05] * 3)  # the main thread's bound alone: 0.01 + 0.04
    charged = cpufloor.charged([[0.01] * 32] * 3, helper, ref)
    assert charged[0] == pytest.approx(0.15 - outside.CALL_SHARE * 0.15 - outside.CALL_SLACK_MS)
    two_threads = [cpufloor.Turn([0.05] * 33, (0.25 + 0.10) * 33, 0.30 * 33, None, 0.05 * 33, 1.0) for _ in range(3)]
    assert cpufloor.charged([[0.05] * 32] * 3, two_threads, ref) == [0.05] * 96
    hashing = [t._replace(second=0.4 * 33) for t in ref]
    digesting = [cpufloor.Turn([0.05] * 33, 0.70 * 33, 0.30 * 33, None, 0.4 * 33, 1.0) for _ in range(3)]
    assert cpufloor.charged([[0.05] * 32] * 3, digesting, hashing) == [0.05] * 96


def test_where_no_cpu_cgroup_can_be_made_the_log_says_the_floor_was_not_applied():
    """A check skipped is never reported as passed: the trace's log says the CPU-time floor was not applied, and why
    (here: the read-only /sys/fs/cgroup of a container); the numbers are the other bounds' alone."""
    from types import SimpleNamespace

    from generator.bench.trusted.pair import WorkloadRun

    run = WorkloadRun.__new__(WorkloadRun)
    why = "cannot make a CPU accounting cgroup under /sys/fs/cgroup/cpuacct (Read-only file system)"
    run.notes = []
    run.solution = SimpleNamespace(worker=SimpleNamespace(cpu_why=why))
    run.ref = SimpleNamespace(worker=SimpleNamespace(cpu_why=""))
    assert run.charge_cpu([[0.05] * 3], [None], [0.05] * 3) == [0.05] * 3
    assert run.notes == [cpufloor.not_applied(why)] and "CPU-time floor was not applied: " + why in run.notes[0]
