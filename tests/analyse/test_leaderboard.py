"""Leaderboards, fast_p and author rankings, checked against numbers worked out by hand.

The dataset: rmsnorm_h128 with four workloads (w1..w4), three solutions (the baseline by
`baseline`, alice's and bob's), traces on two machines (H100_SXM and test_cpu, the latter also
under an alias); plus a second definition with no traces at all.

On H100_SXM (latency in ms; speedup = baseline / solution):

    workload   baseline        alice                 bob
    w1         1.0             0.5  (2x)             2.0  (0.5x)
    w2         2.0             0.5  (4x)             1.0  (2x)
    w3         4.0             INCORRECT_NUMERICAL   2.0  (2x)
    w4         RUNTIME_ERROR   0.1  (no baseline)    (not run)
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from generator.analyse.hardware import hardware_summaries
from generator.analyse.latest import latest_traces
from generator.analyse.leaderboard import all_leaderboards, definition_leaderboards, latest_results, solution_boards
from generator.analyse.rankings import author_rankings
from generator.analyse.results import NOT_RUN, kernel_speedup
from generator.analyse.scores import competition_ranks, curve_end, fast_p, fast_p_curve, geomean, median
from generator.load import load

from dataset_factory import DEFINITION, HARDWARE, SOLUTION, WORKLOAD, dump, dump_lines, write_dataset

DEF = "rmsnorm_h128"
BASE, ALICE, BOB = "rmsnorm_h128_torch", "rmsnorm_h128_alice", "rmsnorm_h128_bob"


def workload(uuid: str, batch: int) -> dict:
    w = copy.deepcopy(WORKLOAD)
    w["workload"]["uuid"] = uuid
    w["workload"]["axes"] = {"batch_size": batch}
    w["workload"].update(stage="decode", num_tokens=batch)  # as a recipe writes them: the step it stands for
    return w


WORKLOADS = [workload(f"w{i}", 2 ** i) for i in range(1, 5)]


def trace(solution: str, wl: str, hardware: str, latency: float | None, status: str = "PASSED",
          timestamp: str = "2026-11-21T10:00:00Z", samples: int | None = None, log: str = "") -> dict:
    w = next(x for x in WORKLOADS if x["workload"]["uuid"] == wl)["workload"]
    ev: dict = {"status": status, "log": log, "environment": {"hardware": hardware}, "timestamp": timestamp,
                "correctness": None, "performance": None}
    if status in ("PASSED", "INCORRECT_NUMERICAL"):
        ev["correctness"] = {"max_absolute_error": 0.001, "max_relative_error": 0.002}
    if status == "PASSED":
        ev["performance"] = {"latency_ms": latency, "reference_latency_ms": 1.0, "speedup_factor": 1.0 / latency}
        if samples is not None:
            ev["performance"]["samples"] = samples
    return {"definition": DEF, "workload": w, "solution": solution, "evaluation": ev}


def solution(name: str, author: str, language: str = "triton") -> dict:
    s = copy.deepcopy(SOLUTION)
    s.update(name=name, author=author)
    s["spec"]["language"] = language
    return s


H100 = "H100_SXM"
H100_TRACES = {
    "baseline": [trace(BASE, "w1", H100, 1.0, samples=10), trace(BASE, "w2", H100, 2.0, samples=10),
                 trace(BASE, "w3", H100, 4.0, samples=10), trace(BASE, "w4", H100, None, "RUNTIME_ERROR", log="boom")],
    "alice": [trace(ALICE, "w1", H100, 0.5, samples=20), trace(ALICE, "w2", H100, 0.5),
              trace(ALICE, "w3", H100, None, "INCORRECT_NUMERICAL"), trace(ALICE, "w4", H100, 0.1, samples=5)],
    "bob": [trace(BOB, "w1", H100, 2.0), trace(BOB, "w2", H100, 1.0), trace(BOB, "w3", H100, 2.0)],
}
# On the CPU: w1 only. Alice's first run failed and a later one passed at the baseline's latency.
CPU_TRACES = {
    "baseline": [trace(BASE, "w1", "test_cpu", 1.0)],
    "alice": [trace(ALICE, "w1", "Test CPU 9000", 1.0, timestamp="2026-11-22T10:00:00+01:00"),
              trace(ALICE, "w1", "test_cpu", None, "COMPILE_ERROR", timestamp="2026-11-21T12:00:00Z", log="nvcc")],
}


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    root = write_dataset(tmp_path_factory.mktemp("lb") / "dataset", workloads=WORKLOADS,
                         hardware=dict(HARDWARE, aliases=["Test CPU 9000"]), traces=[])
    for author, name in (("alice", ALICE), ("bob", BOB)):
        dump(root / f"solutions/{author}/norm/{DEF}/{name}.json", solution(name, author))
    for author in ("baseline", "alice", "bob"):
        dump_lines(root / f"traces/{author}/norm/{DEF}.jsonl", H100_TRACES[author] + CPU_TRACES.get(author, []))
    quiet = dict(copy.deepcopy(DEFINITION), name="silent_h128")
    dump(root / "definitions/norm/silent_h128.json", quiet)
    loaded = load(root)
    assert [d.message for d in loaded.load_diagnostics if d.is_error] == []
    return loaded


@pytest.fixture(scope="module")
def boards(ds):
    return all_leaderboards(ds)


def board(boards, hardware):
    return next(lb for lb in boards[DEF] if lb.hardware == hardware)


# -- pure arithmetic -----------------------------------------------------------------------------

def test_geomean_and_median():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([0.5, 2.0, 2.0]) == pytest.approx(2 ** (1 / 3))
    assert geomean([]) is None
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([1.0, 2.0, 3.0, 10.0]) == 2.5 and median([]) is None


def test_fast_p_is_strict_and_counts_every_workload():
    speedups = [2.0, 4.0, None]  # three correct workloads, one without a known speedup; four in all
    assert fast_p(speedups, 4, 1.0) == 0.5
    assert fast_p(speedups, 4, 2.0) == 0.25  # 2.0 is not > 2.0
    assert fast_p(speedups, 4, 0.0) == 0.5  # the one without a baseline never counts
    assert fast_p([], 0, 1.0) == 0.0
    assert fast_p_curve(speedups, 4, 5.0) == ((0.0, 0.5), (2.0, 0.25), (4.0, 0.0), (5.0, 0.0))


def test_the_fast_p_curve_is_fast_p_at_each_of_its_points():
    import random

    rng = random.Random(7)
    speedups = [None if rng.random() < 0.1 else round(rng.uniform(0.2, 6.0), rng.choice((1, 3))) for _ in range(3000)]
    curve = fast_p_curve(speedups, 3500, 5.0)
    assert len(curve) > 500 and curve[0][0] == 0.0 and curve[-1][0] == 5.0
    assert all(value == fast_p(speedups, 3500, p) for p, value in curve)


def test_curve_end_and_competition_ranks():
    assert curve_end([None]) == 2.0 and curve_end([4.0]) == 4.5 and curve_end([1.2]) == 2.0
    assert competition_ranks([(3.0, 1.0), (2.0, 1.0), (2.0, 1.0), (1.0, 0.5)]) == [1, 2, 2, 4]
    assert competition_ranks([(1.0, 0.25), (1.0 + 1e-13, 0.25), (None, 0.5), (None, 0.5)]) == [1, 1, 3, 3]


# -- leaderboards ----------------------------------------------------------------------------------

def test_hardware_is_never_mixed(boards):
    assert [lb.hardware for lb in boards[DEF]] == [H100, "test_cpu"]  # the alias is filed under its spec
    h100, cpu = board(boards, H100), board(boards, "test_cpu")
    assert h100.baseline == BASE and cpu.baseline == BASE
    assert [e.solution for e in h100.entries] == [ALICE, BOB, BASE]
    assert [e.solution for e in cpu.entries] == [ALICE, BASE]  # bob never ran on the CPU
    assert h100.entry(ALICE).traces == 4 and cpu.entry(ALICE).traces == 2


def test_scores_on_h100(boards):
    lb = board(boards, H100)
    assert lb.workloads == ("w1", "w2", "w3", "w4")
    alice, bob, base = lb.entries
    assert (alice.rank, bob.rank, base.rank) == (1, 2, 3)
    assert alice.author == "alice" and alice.language == "triton" and base.is_baseline and not alice.is_baseline

    assert alice.geomean_speedup == pytest.approx(math.sqrt(8))  # 2x and 4x; w4 has no baseline
    assert (alice.passed, alice.failed, alice.not_run, alice.pass_rate) == (3, 1, 0, 0.75)
    assert alice.failures == (("INCORRECT_NUMERICAL", 1),) and alice.unstable == 0
    assert alice.fast_1 == 0.5
    assert alice.best_latency_ms == 0.1 and alice.median_latency_ms == 0.5
    assert alice.samples == 20 + 1 + 5  # w2 did not record its samples: counts once

    assert bob.geomean_speedup == pytest.approx(2 ** (1 / 3))
    # Pass rate is over the workloads it ran: w4 was not run, which is shown apart, not as a failure;
    # fast_1 is still over all four workloads.
    assert (bob.passed, bob.failed, bob.not_run, bob.pass_rate) == (3, 0, 1, 1.0)
    assert bob.failures == ()
    assert bob.fast_1 == 0.5
    assert bob.median_latency_ms == 2.0 and bob.samples == 3

    assert base.geomean_speedup == 1.0 and base.fast_1 == 0.0 and base.pass_rate == 0.75 and base.samples == 30

    assert lb.curve_end == 4.5
    assert alice.curve == ((0.0, 0.5), (2.0, 0.25), (4.0, 0.0), (4.5, 0.0))
    assert bob.curve == ((0.0, 0.75), (0.5, 0.5), (2.0, 0.0), (4.5, 0.0))


def test_a_failed_workload_lowers_pass_rate_and_fast_p(tmp_path):
    # Bob passes w3 at 2x (the table above); then the same run fails w3: pass rate and fast_p both fall.
    def bob_with(w3: dict):
        root = write_dataset(tmp_path / w3["evaluation"]["status"], workloads=WORKLOADS, traces=[])
        dump(root / f"solutions/bob/norm/{DEF}/{BOB}.json", solution(BOB, "bob"))
        dump_lines(root / f"traces/baseline/norm/{DEF}.jsonl", H100_TRACES["baseline"])
        dump_lines(root / f"traces/bob/norm/{DEF}.jsonl", H100_TRACES["bob"][:2] + [w3])
        return definition_leaderboards(load(root), DEF)[0].entry(BOB)

    passing = bob_with(trace(BOB, "w3", H100, 2.0))
    failing = bob_with(trace(BOB, "w3", H100, None, "TIMEOUT"))
    assert (passing.pass_rate, failing.pass_rate) == (1.0, pytest.approx(2 / 3))  # bob never ran w4
    assert failing.failures == (("TIMEOUT", 1),)
    assert (passing.fast_1, failing.fast_1) == (0.5, 0.25)
    assert (passing.failed, failing.failed) == (0, 1)
    assert passing.curve[0] == (0.0, 0.75) and failing.curve[0] == (0.0, 0.5)
    # The geomean is over the workloads passed: the failure shows in the pass rate, not hidden in the mean.
    assert passing.geomean_speedup == pytest.approx(2 ** (1 / 3)) and failing.geomean_speedup == pytest.approx(1.0)


def test_latest_trace_wins_and_ties_share_a_rank(ds, boards):
    cpu = board(boards, "test_cpu")
    alice, base = cpu.entries
    # 2026-11-22T10:00+01:00 is later than 2026-11-21T12:00Z: the passing run counts.
    assert cpu.results_of(ALICE)[0].status == "PASSED"
    assert (alice.rank, base.rank) == (1, 1)  # 1.0x each, 1 of 4 passed each; listed by name
    assert alice.geomean_speedup == base.geomean_speedup == 1.0 and alice.pass_rate == 1.0
    assert alice.not_run == 3
    latest = latest_traces(ds, ds.traces)
    assert latest[(ALICE, "w1", "test_cpu")].hardware == "Test CPU 9000"


def test_per_workload_rows(boards):
    rows = board(boards, H100).rows
    assert [r.uuid for r in rows] == ["w1", "w2", "w3", "w4"]
    assert rows[0].axes == (("batch_size", 2),)
    assert [r.baseline_latency_ms for r in rows] == [1.0, 2.0, 4.0, None]
    w3 = {r.solution: r for r in rows[2].results}
    assert w3[ALICE].status == "INCORRECT_NUMERICAL" and w3[ALICE].speedup is None and w3[ALICE].latency_ms is None
    assert w3[ALICE].max_absolute_error == 0.001
    assert w3[BOB].speedup == 2.0
    w4 = {r.solution: r for r in rows[3].results}
    assert w4[ALICE].passed and w4[ALICE].speedup is None and w4[ALICE].latency_ms == 0.1
    assert w4[BOB].status == NOT_RUN and w4[BASE].log == "boom"


def test_unstable_timings_are_marked_and_not_ranked(tmp_path):
    from generator.model.evaluation import performance_is_unstable as is_unstable

    assert is_unstable({"latency_ms": 3.9, "p20_ms": 1.27, "p80_ms": 11.3, "min_ms": 1.0})  # host noise
    assert is_unstable({"latency_ms": 48.0, "p20_ms": 40.0, "p80_ms": 50.0, "min_ms": 0.1})  # a far-off fast sample
    assert not is_unstable({"latency_ms": 1.0, "p20_ms": 0.95, "p80_ms": 1.1, "min_ms": 0.9})
    assert not is_unstable({"latency_ms": 1.0})  # no statistics: nothing to judge by
    assert is_unstable({"latency_ms": 1.0, "p20_ms": 0.95, "p80_ms": 1.1, "min_ms": 0.9, "unstable": True})  # the mark wins
    # Bob's w2 (2x) becomes noisy: still passed, but no speedup, latency score or rank from it.
    noisy = trace(BOB, "w2", H100, 1.0)
    noisy["evaluation"]["performance"].update(p20_ms=0.2, p80_ms=3.0, min_ms=0.15)
    root = write_dataset(tmp_path / "noisy", workloads=WORKLOADS, traces=[])
    dump(root / f"solutions/bob/norm/{DEF}/{BOB}.json", solution(BOB, "bob"))
    dump_lines(root / f"traces/baseline/norm/{DEF}.jsonl", H100_TRACES["baseline"])
    dump_lines(root / f"traces/bob/norm/{DEF}.jsonl", [H100_TRACES["bob"][0], noisy, H100_TRACES["bob"][2]])
    lb = definition_leaderboards(load(root), DEF)[0]
    bob = lb.entry(BOB)
    w2 = lb.results_of(BOB)[1]
    assert w2.passed and w2.unstable and w2.speedup is None and w2.spread == (0.2, 3.0)
    assert (bob.passed, bob.unstable, bob.pass_rate) == (3, 1, 1.0)
    assert bob.geomean_speedup == pytest.approx(1.0)  # 0.5x and 2x; the noisy 2x does not count
    assert bob.fast_1 == 0.25 and bob.median_latency_ms == 2.0


def test_unsandboxed_results_are_marked_and_never_ranked(tmp_path):
    """A trace measured without the bench's sandbox (environment.sandbox "none": its solution could read the
    references and seeds) counts as passed but gives no speedup, latency score or rank, and its cell says why."""
    from generator.site.data import UNSANDBOXED, results_data

    loose = trace(BOB, "w2", H100, 1.0)
    loose["evaluation"]["environment"]["sandbox"] = "none"
    root = write_dataset(tmp_path / "loose", workloads=WORKLOADS, traces=[])
    dump(root / f"solutions/bob/norm/{DEF}/{BOB}.json", solution(BOB, "bob"))
    dump_lines(root / f"traces/baseline/norm/{DEF}.jsonl", H100_TRACES["baseline"])
    dump_lines(root / f"traces/bob/norm/{DEF}.jsonl", [H100_TRACES["bob"][0], loose, H100_TRACES["bob"][2]])
    lb = definition_leaderboards(load(root), DEF)[0]
    bob, w2 = lb.entry(BOB), lb.results_of(BOB)[1]
    assert w2.passed and w2.unsandboxed and not w2.ranked and w2.speedup is None and w2.sol_percent is None
    assert (bob.passed, bob.pass_rate) == (3, 1.0) and bob.geomean_speedup == pytest.approx(1.0)  # the 2x is out
    data = results_data(DEF, (lb,), "dataset")  # what the pages draw: w2's result flagged, w1's not
    column = data["boards"][0]["solutions"].index(BOB)
    flags = [row[column][data["fields"].index("flags")] for row in data["boards"][0]["results"][:2]]
    assert flags[1] & UNSANDBOXED and not flags[0] & UNSANDBOXED


def test_a_definition_without_traces_has_no_leaderboard(ds, boards):
    assert boards["silent_h128"] == ()
    assert definition_leaderboards(ds, "silent_h128") == ()
    assert solution_boards(boards["silent_h128"], BASE) == ()


def test_a_definition_without_a_baseline_has_only_the_recorded_speedups(tmp_path):
    root = write_dataset(tmp_path / "d", workloads=WORKLOADS, traces=[])
    dump(root / f"solutions/alice/norm/{DEF}/{ALICE}.json", solution(ALICE, "alice"))
    dump_lines(root / f"traces/alice/norm/{DEF}.jsonl", H100_TRACES["alice"])
    (lb,) = definition_leaderboards(load(root), DEF)
    (alice,) = lb.entries
    # no baseline: the speedups the traces recorded against their reference (1.0 ms) are used, marked
    recorded = [1.0 / t["evaluation"]["performance"]["latency_ms"] for t in H100_TRACES["alice"]
                if t["evaluation"]["status"] == "PASSED"]
    assert lb.baseline is None and alice.recorded_speedups == len(recorded) == 3
    assert alice.geomean_speedup == pytest.approx(math.prod(recorded) ** (1 / 3))
    assert alice.pass_rate == 0.75 and alice.rank == 1


def test_author_rankings(ds, boards):
    rankings = author_rankings(ds, boards)
    assert [r.hardware for r in rankings] == [H100, "test_cpu"]
    h100 = rankings[0]
    assert (h100.definitions, h100.workloads) == (1, 4)
    alice, bob = h100.entries  # people and agents ranked among themselves: the baseline is not ranked against itself
    assert [e.author for e in h100.entries] == ["alice", "bob"] and [e.rank for e in h100.entries] == [1, 2]
    assert (alice.solved, alice.fast_1) == (3, 0.5) and alice.geomean_speedup == pytest.approx(math.sqrt(8))
    assert (bob.solved, bob.fast_1) == (3, 0.5) and bob.geomean_speedup == pytest.approx(2 ** (1 / 3))
    (base,) = h100.references
    assert (base.author, base.kind, base.rank) == ("baseline", "baseline", None)
    assert (base.solved, base.fast_1, base.geomean_speedup) == (3, 0.0, 1.0)
    cpu = rankings[1]
    assert [(e.author, e.rank, e.solved, e.workloads) for e in cpu.entries] == [("alice", 1, 1, 4)]
    assert [(e.author, e.rank) for e in cpu.references] == [("baseline", None)]


def test_author_counts_their_best_solution_per_workload(tmp_path):
    root = write_dataset(tmp_path / "d", workloads=WORKLOADS, traces=[])
    second = "rmsnorm_h128_alice2"
    for name in (ALICE, second):
        dump(root / f"solutions/alice/norm/{DEF}/{name}.json", solution(name, "alice"))
    dump_lines(root / f"traces/baseline/norm/{DEF}.jsonl", H100_TRACES["baseline"])
    dump_lines(root / f"traces/alice/norm/{DEF}.jsonl",
               H100_TRACES["alice"] + [trace(second, "w1", H100, 0.25), trace(second, "w3", H100, 8.0)])
    loaded = load(root)
    (ranking,) = author_rankings(loaded, all_leaderboards(loaded))
    alice = next(e for e in ranking.entries if e.author == "alice")
    # best per workload: w1 4x (second), w2 4x, w3 0.5x (second, the first was wrong), w4 passed without a speedup
    assert alice.solutions == 2 and alice.solved == 4
    assert alice.geomean_speedup == pytest.approx((4 * 4 * 0.5) ** (1 / 3))
    assert alice.fast_1 == 0.5


def test_ranked_results_without_provenance_are_counted_where_they_are_ranked(tmp_path):
    """A trace that does not say how it was produced stays readable and ranked, but its board entry and its
    author's ranking say how many of their ranked results are such (the site marks them)."""
    root = write_dataset(tmp_path / "d", workloads=WORKLOADS, traces=[])
    dump(root / f"solutions/alice/norm/{DEF}/{ALICE}.json", solution(ALICE, "alice"))
    measured = {"kind": "measured", "tool": "kerneltrace bench", "version": "0.1.0", "run_id": "r1"}
    known = [trace(ALICE, wl, H100, 0.5) for wl in ("w1", "w2")]
    for t in known:
        t["evaluation"]["environment"]["provenance"] = measured
    dump_lines(root / f"traces/baseline/norm/{DEF}.jsonl", H100_TRACES["baseline"])
    dump_lines(root / f"traces/alice/norm/{DEF}.jsonl", known + [trace(ALICE, "w4", H100, 0.1)])
    loaded = load(root)
    boards = all_leaderboards(loaded)
    entries = {e.solution: e for e in board(boards, H100).entries}
    assert (entries[ALICE].unknown_provenance, entries[BASE].unknown_provenance) == (1, 3)
    (ranking,) = author_rankings(loaded, boards)
    assert {e.author: e.unknown_provenance for e in ranking.entries + ranking.references} == {"alice": 1, "baseline": 3}


def test_hardware_summaries_and_latest_results(ds, boards):
    summaries = hardware_summaries(ds, boards)
    assert [(h.name, h.spec is not None, h.traces, len(h.leaderboards)) for h in summaries] == [
        (H100, False, 11, 1), ("test_cpu", True, 3, 1)]
    latest = latest_results(boards, limit=2)
    assert [(r.entry.solution, r.hardware, r.entry.updated) for r in latest] == [
        (ALICE, "test_cpu", "2026-11-22T10:00:00+01:00"), (ALICE, H100, "2026-11-21T10:00:00Z")]
    assert latest[0].entry.author == "alice" and latest[0].solutions == 2


def test_kernel_speedup_of_a_board(ds, boards):
    # H100: baseline 1, 2, 4 ms on w1..w3 (w4 failed); best passing 0.5, 0.5, 2 ms -> 2x, 4x, 2x
    time_ms, speedup = kernel_speedup(board(boards, H100))
    assert time_ms == 2.0 and speedup == pytest.approx(16 ** (1 / 3))
    assert kernel_speedup(board(boards, "test_cpu"))[1] == 1.0  # on the CPU nothing beats the baseline


def test_same_dataset_same_leaderboards(ds, boards):
    assert all_leaderboards(ds) == boards
    assert json.dumps(repr(boards)) == json.dumps(repr(all_leaderboards(ds)))


def test_empty_dataset(tmp_path):
    (tmp_path / "empty").mkdir()
    empty = load(tmp_path / "empty")
    assert all_leaderboards(empty) == {} and author_rankings(empty, {}) == () and hardware_summaries(empty, {}) == ()
    assert latest_results({}) == ()


def test_sol_percent_comes_from_the_cascade_and_the_hardware_spec(tmp_path):
    # The factory dataset has an Einsum cascade for rmsnorm_h128 and a hardware spec test_cpu; its
    # trace ran on test_cpu, so the leaderboard shows SOL% = T_SOL / latency for it.
    from generator.analyse.leaderboard import definition_leaderboards
    from generator.analyse.roofline import speed_of_light
    from generator.einsum import workload_counts
    from generator.load import load

    from dataset_factory import write_dataset

    ds = load(write_dataset(tmp_path))
    [board] = definition_leaderboards(ds, "rmsnorm_h128")
    [entry] = board.entries
    d = ds.definitions["rmsnorm_h128"]
    w = next(w for w in ds.workloads if w.uuid == "wl-0001")
    t_sol = speed_of_light(workload_counts(ds, d, dict(w.axes)), ds.hardware_spec("test_cpu")).t_sol_s
    assert entry.sol_percent == pytest.approx(t_sol * 1e3 / 0.02)  # the trace's latency_ms is 0.02
    other = write_dataset(tmp_path / "other", hardware={"name": "other_cpu", "kind": "cpu",
                                                        "peak_tflops": {"float32": 1.0}, "memory_bandwidth_gb_s": 50.0})
    [board] = definition_leaderboards(load(other), "rmsnorm_h128")
    assert board.entries[0].sol_percent is None  # no spec for the hardware the trace names


def test_step_estimates_are_per_stage_at_the_serving_point_from_traces_else_the_speed_of_light(tmp_path):
    """A record served on test_cpu: rmsnorm_h128 (decode only, 3 calls) and a kernel with no definition.
    At 64 decode tokens the kernel stands at w4 (batch 16, the nearest): its time is the baseline's trace on
    w4 itself (not a median over w1..w4), and without that trace the speed of light of w4; prefill has no
    workload of that stage, so nothing there is estimated (decode no longer equals prefill)."""
    from generator.analyse.estimates import NONE, SOL, TRACE, step_estimates

    record = {"model": "test/model", "framework": "SGLang", "serving": {"hardware": "test_cpu", "gpus": 1, "tensor_parallel": 1},
              "kernels": [{"id": DEF, "count": 3}, {"id": "missing_h1", "count": 2}]}
    traces = [trace(BASE, "w1", "test_cpu", 1.0), trace(BASE, "w4", "test_cpu", 4.0),
              trace(ALICE, "w4", "test_cpu", 2.0)]

    def estimates(traced):
        root = write_dataset(tmp_path / f"d{len(traced)}", workloads=WORKLOADS, traces=traced, model=record)
        dump(root / f"solutions/alice/norm/{DEF}/{ALICE}.json", solution(ALICE, "alice"))
        ds = load(root)
        return {(e.stage, e.hardware): e for e in step_estimates(ds, all_leaderboards(ds))["test-model"]}

    decode = estimates(traces)[("decode", "test_cpu")]
    assert decode.serving and decode.tokens == 64
    part, missing = decode.parts
    assert (part.kernel, part.source, part.workload, part.tokens) == (DEF, TRACE, "w4", 16)
    assert (part.baseline_ms, part.best_ms) == (12.0, 6.0) and decode.speedup == 2.0
    assert (missing.source, missing.calls, missing.description) == (NONE, 2, "no definition yet")
    assert (decode.calls(TRACE), decode.calls(NONE), decode.step_calls) == (3, 2, 5)
    prefill = estimates(traces)[("prefill", "test_cpu")]
    assert {p.kernel: (p.source, p.description) for p in prefill.parts}[DEF] == (NONE, "no prefill workload")
    sol = estimates(traces[:1])[("decode", "test_cpu")].parts[0]
    assert (sol.source, sol.workload) == (SOL, "w4") and 0 < sol.best_ms < 12.0
