"""Every planted cheat (tests/bench/cheats/) against one bench run: the guards and the clock inside the worker,
the sandbox around it, the untrusted messages it sends, and the traces, logs and processes it leaves. The tests
here only read that run's results (the `benched` fixture); the bench's modules have their own files beside this."""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from generator.bench import merge, run_bench
from generator.bench.trusted.plan import Plan
from generator.bench.trusted.run import BenchSummary
from generator.bench.trusted.store import append_line, read_traces
from generator.validate import validate_path

from dataset_factory import write_dataset
from planted import (
    CHEATS_DIR,
    FAST,
    HONEST_DIR,
    add_solution,
    copy_definition,
    kt_temp_folders,
    private_tempdir,
    workloads,
)

PASSES = ("PASSED",)  # a sniffing cheat that finds nothing to sniff computes honestly every call
# A cached answer is wrong in its values, or, when the address was last used by another workload's input, in
# its shape.
CAUGHT_OR_HONEST = ("PASSED", "INCORRECT_NUMERICAL", "INCORRECT_SHAPE")
CHEATS = {
    # name (its file under cheats/): (allowed statuses, words the log must contain when not PASSED)
    "mutates_input": (("REWARD_HACK",), "modified its input"),
    # Caching: every call gets fresh input tensors with new values; an address reused by the allocator
    # returns a stale answer, which a checked call catches.
    "caches_on_data_ptr": (CAUGHT_OR_HONEST, ("within atol", "has shape")),
    "caches_on_values": (CAUGHT_OR_HONEST, ("within atol", "has shape")),
    # The sandbox holds no dataset: the definition file (with the reference) and the workloads (seeds)
    # are not there to read.
    "calls_reference_file": (("RUNTIME_ERROR",), "No such file"),
    "regenerates_inputs_from_job": (("COMPILE_ERROR",), "No such file"),
    # The reference lives in another process: no object to find, no frame holding expected outputs.
    "calls_reference_through_gc": (("RUNTIME_ERROR",), "StopIteration"),
    "reads_expected_from_frame": (("INCORRECT_NUMERICAL",), "within atol"),
    # Telling timed calls from checked ones: every call is the same call, so these compute honestly
    # or, where their guess says "timed", return garbage that a randomly checked timed call catches.
    "sniffs_frame": (CAUGHT_OR_HONEST, "within atol"),
    "sniffs_version_identity": (CAUGHT_OR_HONEST, "within atol"),
    "sniffs_nan_poison": (PASSES, ""),
    # Its error reaches the bench's terminal summary: escape sequences there would change the window title, erase
    # the line and print a fake PASSED line.
    "injects_terminal_escapes": (("RUNTIME_ERROR",), "PASSED fake"),
    "counts_calls": (("INCORRECT_NUMERICAL",), "within atol"),
    # Patching the harness from inside: the comparison is not in this process; the clock is bounded
    # from outside (test_work_outside_the_clock_is_charged).
    "patches_comparison_and_timing": (("PASSED", "REWARD_HACK"), "generator.bench.sandboxed.clock.time_calls"),
    # The worker's own clock (sandboxed/clock.py binds time.perf_counter at import, so patching time.perf_counter does nothing):
    # stopped, every call reads 0.5 us. Plainly patched, the guard names it; patched for the one read that ends each
    # call and restored by it, the guard sees the original, and the outside bound charges the work (10 ms a call).
    "stops_the_workers_clock": (("REWARD_HACK",), "generator.bench.sandboxed.clock._perf_counter"),
    "stops_the_clock_for_one_read": (PASSES, ""),
    "writes_fake_results_and_exits": (("RUNTIME_ERROR",), "bad message"),
    "forges_messages": (("RUNTIME_ERROR",), "bad message"),
    # Outputs that come with the answer (every call compared) are untrusted too: a tensor for a call that was not
    # in the batch is a bad message, not a crash of the run.
    "forges_inline_outputs": (("RUNTIME_ERROR",), ("bad message", "not asked for")),
    # Slowing the reference: it runs in its own process, timed in the same loop.
    "slows_reference_via_torch_op": (PASSES, ""),
    # The grandchild leaves the worker's session; the worker then never returns.
    "setsid_grandchild": (("TIMEOUT",), "limit"),
    "huge_stdout": (("RUNTIME_ERROR",), "earlier bytes of output not kept"),
    "subclassed_output": (("REWARD_HACK",), "not a plain torch.Tensor"),
    "lazy_output": (("REWARD_HACK",), "not a plain torch.Tensor"),
    "patches_timer": (("REWARD_HACK",), "time.perf_counter"),
    "patches_synchronize": (("REWARD_HACK",), "torch.cuda.synchronize"),
    "outlives_call_thread": (("REWARD_HACK",), "left thread"),
    "leaves_outputs_unwritten": (("INCORRECT_NUMERICAL",), "NaN"),
    "wrong_answer": (("INCORRECT_NUMERICAL",), "within atol"),
    "wrong_shape": (("INCORRECT_SHAPE",), "shape"),
    "wrong_dtype": (("INCORRECT_DTYPE",), "dtype"),
    "raises": (("RUNTIME_ERROR",), "boom in the kernel"),
    "exits": (("RUNTIME_ERROR",), "exit code 3"),
    "segfaults": (("RUNTIME_ERROR",), "signal"),
    "hangs": (("TIMEOUT",), "limit"),
    "does_not_compile": (("COMPILE_ERROR",), "SyntaxError"),
    # -- work outside the clock (each sleeps 10 ms where it does the work; a latency under 5 ms is unearned:
    # test_work_outside_the_clock_is_charged) --
    "computes_before_the_calls": (PASSES, ""),
    # Returns garbage fast and computes the real answers only for the calls the harness asks to see,
    # after the batch answered (the commitment made then does not match).
    "computes_after_done_when_revealed": (("REWARD_HACK", "PASSED"), "committed"),
    "lazy_mapping_computes_on_read": (PASSES, ""),
    "lazy_list_computes_on_read": (PASSES, ""),
    # Work on a thread that outlives the call (one worker thread, calls queued in order), joined before the
    # worker digests the outputs.
    "finishes_on_a_thread_before_digest": (PASSES, ""),
    # -- forged marks: each call's work (FORGED_WORK_MS of CPU) moved after its end mark, where no clock and no mark
    # sees it; the CPU-time floor charges it (test_work_after_forged_marks_is_charged_by_the_cpu_time_floor) --
    "works_between_its_marks": (PASSES, ""),
    # -- the same work on a helper thread started when it loaded, beside the main thread's harness work: the floor's
    # bound by the next busiest thread charges it (test_work_on_a_helper_thread_is_charged_by_the_cpu_time_floor) --
    "works_on_a_helper_thread": (PASSES, ""),
    # -- precomputation from the public seeds: a table of every input set the workload's seed makes --
    "precomputes_from_public_seeds": (("INCORRECT_NUMERICAL",), "within atol"),
    # -- statistics: wrong answers on every call after the first batch --
    "zeros_after_the_first_batch": (("INCORRECT_NUMERICAL",), "within atol"),
    # -- untrusted messages: each writes one bad message where "done" is due, then waits to be killed --
    "message_nested_deep": (("RUNTIME_ERROR",), "nested too deep"),
    "message_huge_float": (("RUNTIME_ERROR",), "bad message"),
    "message_huge_integer": (("RUNTIME_ERROR",), "not JSON we accept"),
    "message_lone_surrogate": (("RUNTIME_ERROR",), "boom"),
    # Stops reading its input pipe: the workload's blob (256 KiB) does not fit the pipe; the bench's
    # write has a deadline.
    "stops_reading_its_pipe": (("TIMEOUT",), "limit"),
    # -- disclosure: what the sandbox lets a solution read goes into its error text, and so into the trace --
    "reads_the_bench_environment": (("RUNTIME_ERROR",), "pid1:"),
    # -- resources: memory and /tmp are limited; the pair fails, the bench goes on --
    "fills_tmp": (("RUNTIME_ERROR",), "Error"),
    "fills_dev_shm": (("RUNTIME_ERROR",), "Error"),
    "allocates_too_much": (("RUNTIME_ERROR",), "Error"),
}
DPS_CHEATS = {"leaves_outputs_unwritten", "sniffs_nan_poison"}
# Cheats that change nothing outside their own module (no patched function, thread, process, file or exit):
# one author runs them all, in one worker, in turn (a worker start is ~1.5 s of this module's time each). What one
# leaves is dropped when the next loads (its module and sys.path entry), so each is still caught on its own;
# the others, which patch, spawn, crash or hang, stand for an attacker each.
PLAIN_CHEATS = {"mutates_input", "injects_terminal_escapes", "caches_on_data_ptr", "caches_on_values",
                "calls_reference_file", "regenerates_inputs_from_job", "calls_reference_through_gc",
                "reads_expected_from_frame", "sniffs_frame", "sniffs_version_identity", "sniffs_nan_poison",
                "counts_calls", "subclassed_output", "lazy_output", "leaves_outputs_unwritten", "wrong_answer",
                "wrong_shape", "wrong_dtype", "raises", "does_not_compile", "lazy_mapping_computes_on_read",
                "lazy_list_computes_on_read", "precomputes_from_public_seeds", "zeros_after_the_first_batch",
                "reads_the_bench_environment"}
# Cheats whose pairs mostly wait on the bench's limits (a timeout, 4 s in this run, or the 2 s the bench gives a
# process that sent a bad message to exit before it kills it), and three that end their own worker: they run in a
# second bench over the same dataset, alongside the first (in a thread: both mostly wait on their workers; the two
# take about as long), each pair as it would alone. None of their tests reads a time.
ALONGSIDE = {"hangs", "setsid_grandchild", "stops_reading_its_pipe", "message_nested_deep", "message_huge_float",
             "message_huge_integer", "forges_messages", "forges_inline_outputs", "segfaults", "exits",
             "writes_fake_results_and_exits"}
# Cheats that lose their worker on the first call run on a copy of the definition with one workload:
# a second workload would only show again that a fresh worker takes the remaining ones (one more
# Python+torch start each, and 4 s more for a timeout). `exits` keeps two workloads and shows it.
ONCE_DEFINITION = "rmsnorm_h128_once"
ONCE = {"forges_messages", "forges_inline_outputs", "writes_fake_results_and_exits", "segfaults", "setsid_grandchild",
        "message_nested_deep", "message_huge_float", "message_huge_integer", "message_lone_surrogate",
        "reads_the_bench_environment", "fills_tmp", "fills_dev_shm", "allocates_too_much", "computes_after_done_when_revealed",
        "works_between_its_marks", "works_on_a_helper_thread"}
# These run on a definition whose one workload has a 256 KiB blob input (more than a pipe holds).
BLOB_ONCE = {"stops_reading_its_pipe"}
# Each sleeps 10 ms per call where it does its work, outside the calls' reported time.
# A call's CPU work that the forger moves after its end mark, and its honest twin does inside the call: more than the
# batch bound forgives at the 4 calls a batch of this run (5 ms a batch), and 2 to 3 times the harness's CPU a call,
# whose noise between two workers (up to 0.15 ms a call here) the floor's tolerance allows for.
FORGED_WORK_MS = 1.0
TWIN = "works_on_the_cpu"  # cheats/honest/works_on_the_cpu.py, in the plain cheats' worker (it patches nothing)
# The helper thread's work a call: a small kernel's, under the harness's CPU a call at this run's 4 calls a batch
# (~0.3 to 0.5 ms), behind which it hid. (At 0.15 ms the forger's own calls, slowed by its helper in some batches,
# sat near the floor there: 0.075 to 0.14 ms charged, too near the test's line.)
HELPER_WORK_MS = 0.3
# Cheats that share a worker (one author) with another: each leaves only inert residue (an idle thread, a patched
# send that does nothing for another solution's calls), and a worker start is ~1.5 s of this module's time.
SHARED_AUTHOR = {"works_on_a_helper_thread": "cheat-works_between_its_marks"}
OUTSIDE_THE_CLOCK = ("patches_comparison_and_timing", "stops_the_clock_for_one_read", "computes_before_the_calls",
                     "lazy_mapping_computes_on_read", "lazy_list_computes_on_read", "finishes_on_a_thread_before_digest")


def add_once_definition(root: Path) -> None:
    [w] = workloads(1)
    w["workload"].update(uuid="wl-once", seed=200)
    copy_definition(root, ONCE_DEFINITION, w)


BLOB_DEFINITION = "rmsnorm_h128_blob"


def add_blob_definition(root: Path) -> None:
    """A copy of the definition whose one workload reads its input from a 256 KiB blob."""
    from safetensors.torch import save_file

    blob = f"blob/workloads/norm/{BLOB_DEFINITION}/wl-blob.safetensors"
    (root / blob).parent.mkdir(parents=True, exist_ok=True)
    save_file({"input": torch.randn(1024, 128).half()}, str(root / blob))
    [w] = workloads(1)
    w["workload"].update(uuid="wl-blob", axes={"batch_size": 1024}, seed=300)
    w["workload"]["inputs"]["input"] = {"type": "safetensors", "path": blob, "tensor_key": "input"}
    copy_definition(root, BLOB_DEFINITION, w)


def definition_of(name: str) -> str:
    return BLOB_DEFINITION if name in BLOB_ONCE else ONCE_DEFINITION if name in ONCE else "rmsnorm_h128"


# Run on two workloads, it times out on the first and is not run on the second (one timeout, not one per workload).
SKIPPED_AFTER_TIMEOUT = {"hangs"}


def expected_pairs(name: str) -> int:
    return 1 if name in ONCE | BLOB_ONCE | SKIPPED_AFTER_TIMEOUT else 2


NEEDS_SANDBOX = {"calls_reference_file", "regenerates_inputs_from_job", "setsid_grandchild", "fills_dev_shm",
                 "reads_the_bench_environment", "fills_tmp"}
SECRET = f"kt-bench-secret-{os.getpid()}"  # in the bench's environment during the run: never in a trace
ORPHAN_MARKER = f"kt-orphan-marker-{os.getpid()}"


def marked_processes(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def benched(tmp_path_factory):
    """Two bench runs at once over one dataset with a correct solution and every planted cheat (ALONGSIDE in the
    second), returned as one summary."""
    from generator.bench.trusted.sandbox import sandbox_mode

    root = write_dataset(tmp_path_factory.mktemp("bench"), traces=[], workloads=workloads(2))
    add_once_definition(root)
    add_blob_definition(root)
    values = {"definition_path": str(root / "definitions/norm/rmsnorm_h128.json"),
              "workloads_path": str(root / "workloads/norm/rmsnorm_h128.jsonl"),
              "orphan_marker": ORPHAN_MARKER, "work_s": 0.01, "work_ms": FORGED_WORK_MS,
              "helper_work_ms": HELPER_WORK_MS}
    for name in CHEATS:
        # One worker serves an author's solutions in turn: a cheat that could reach the next stands for an attacker.
        author = "cheat-plain" if name in PLAIN_CHEATS else SHARED_AUTHOR.get(name, f"cheat-{name}")
        add_solution(root, name, author=author, dps=name in DPS_CHEATS, definition=definition_of(name), **values)
    add_solution(root, TWIN, f"honest/{TWIN}", author="cheat-plain", definition=ONCE_DEFINITION, **values)
    assert not ALONGSIDE & {*OUTSIDE_THE_CLOCK, "slows_reference_via_torch_op"}  # timed ones run alone

    def bench(solutions):
        return run_bench(root, device="cpu", solutions=sorted(solutions), timeout_s=4, timing=FAST, progress=False,
                         prefetch=True)

    os.environ["KT_BENCH_SECRET"] = SECRET  # what a leak of the bench's environment would show
    try:
        with private_tempdir(tmp_path_factory.mktemp("tmp")) as temps, ThreadPoolExecutor(1) as pool:
            alongside = pool.submit(bench, ALONGSIDE)
            rest = bench({"rmsnorm_h128_torch", TWIN, *CHEATS} - ALONGSIDE)
            alongside = alongside.result()
    finally:
        del os.environ["KT_BENCH_SECRET"]
    plan = Plan(rest.plan.pairs + alongside.plan.pairs, rest.plan.skipped + alongside.plan.skipped)
    summary = BenchSummary(plan, rest.outcomes + alongside.outcomes, rest.hardware)
    return root, summary, sandbox_mode("cpu")[0], temps


def statuses(summary, solution):
    return [o for o in summary.outcomes if o.pair.solution.name == solution]


def test_every_planted_solution_is_a_file_a_test_plants_and_says_what_it_tries():
    """Each file under cheats/ is planted by a test of tests/bench (by its name) and opens with a one-line docstring;
    the folder is no package and holds no test file, so nothing imports or collects it by accident."""
    import ast

    tests = "\n".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_*.py"))
    files = sorted(CHEATS_DIR.rglob("*.py"))
    assert set(CHEATS) <= {p.stem for p in files}
    assert not list(CHEATS_DIR.rglob("__init__.py")) and not list(CHEATS_DIR.rglob("test_*.py"))
    for path in files:
        name = path.relative_to(CHEATS_DIR).with_suffix("").as_posix()
        assert f'"{name}"' in tests or f'"{path.stem}"' in tests, f"{path}: no test plants it"
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith('"""') and first.endswith('"""') and len(first) > 12, f"{path}: {first!r}"
        if path.stem != "does_not_compile":
            ast.parse(path.read_text(encoding="utf-8"))
    assert HONEST_DIR.is_dir()
def test_correct_solution_passes_with_full_trace(benched):
    root, summary, mode, _ = benched
    good = statuses(summary, "rmsnorm_h128_torch")
    assert [o.status for o in good] == ["PASSED", "PASSED"]
    ev = good[0].record["evaluation"]
    assert ev["correctness"]["input_sets"] >= 3 + 2 and ev["correctness"]["matched_ratio"] == 1.0
    perf = ev["performance"]
    assert perf["timer"] in ("host_perf_counter", "wall_clock_outside_process") and perf["samples"] >= 3
    assert perf["min_ms"] <= perf["latency_ms"] <= perf["max_ms"]
    assert perf["speedup_factor"] == pytest.approx(perf["reference_latency_ms"] / perf["latency_ms"])
    assert ev["environment"]["hardware"].startswith("CPU_") and ev["environment"]["libs"]["torch"] == torch.__version__
    assert ev["environment"]["sandbox"] == mode
    assert "seed" not in ev  # inputs come from secret seeds drawn per call, not from the workload's seed


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_planted_problem_is_caught(benched, name):
    _, summary, mode, _ = benched
    if name in NEEDS_SANDBOX and mode != "bwrap":
        pytest.skip("bubblewrap is missing or refused here: without the sandbox the dataset is readable "
                    "and a setsid grandchild can escape (the bench says so and records sandbox: none)")
    allowed, words = CHEATS[name]
    outcomes = statuses(summary, name)
    assert len(outcomes) == expected_pairs(name), "every pair gets a trace, whatever happened"
    for o in outcomes:
        log = o.record["evaluation"]["log"] or ""
        assert o.status in allowed, f"{name}: {o.status} ({log[-500:]})"
        if o.status != "PASSED":  # `words`: what the log says (one of them, where a cheat can be caught two ways)
            assert any(w in log for w in ((words,) if isinstance(words, str) else words)), \
                f"{name}: log does not say {words!r}: {log[-500:]}"


def test_a_hang_costs_one_timeout_and_the_solutions_other_workloads_are_skipped_saying_why(benched):
    _, summary, _, _ = benched
    [o] = statuses(summary, "hangs")
    assert o.status == "TIMEOUT" and o.seconds - o.setup_s < 4 + 3, o  # --timeout 4 in this run, paid once
    skipped = [(what, why) for what, why in summary.plan.skipped if what.startswith("hangs on ")]
    assert len(skipped) == 1 and "ran past the 4 s timeout on workload" in skipped[0][1], skipped
    assert not [p for p in summary.plan.pairs if p.solution.name == "hangs" and p is not o.pair]


def test_nothing_a_solution_wrote_reaches_a_terminal_with_control_characters(benched, capsys):
    """Every pair's log (what the CLI's summary prints) and trace log is free of the characters a terminal acts on
    (escape sequences, carriage returns, C1 controls, bidirectional overrides): injects_terminal_escapes wrote them."""
    from generator.cli import _failure_reason

    _, summary, _, _ = benched
    control = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069]")
    [o] = [o for o in statuses(summary, "injects_terminal_escapes")][:1]
    assert "PASSED fake" in o.log  # the text is kept, its controls are not
    for o in summary.outcomes:
        for text in (o.log, (o.record or {}).get("evaluation", {}).get("log") or "", _failure_reason(o)):
            assert not control.search(text), (o.pair.solution.name, repr(text[-300:]))


@pytest.mark.parametrize("name", OUTSIDE_THE_CLOCK)
def test_work_outside_the_clock_is_charged(benched, name):
    """Each of these does 10 ms of work per call where the worker's clock does not see it: before the
    calls (while the inputs are drawn), in a patched clock, when the harness reads a lazy result, on a
    thread joined before the digests. The batch's wall clock outside the process, less the harness's
    own work measured on the reference's worker, charges it back beyond the tolerance for a busy host's noise
    (on the CPU 5 ms a batch, 2.5 ms a call at these batch sizes): no latency under 5 ms."""
    _, summary, _, _ = benched
    outcomes = statuses(summary, name)
    assert outcomes
    for o in outcomes:
        ev = o.record["evaluation"]
        if o.status == "PASSED":
            assert ev["performance"]["latency_ms"] >= 5.0, (name, ev["performance"], ev["log"])
        else:
            assert o.status == "REWARD_HACK", (name, o.status, ev["log"])


def test_work_after_forged_marks_is_charged_by_the_cpu_time_floor(benched):
    """works_between_its_marks ends each call at once and does its work (FORGED_WORK_MS of CPU) in a patched send,
    just after the call's end mark: no clock, no mark and (at 4 calls a batch) no batch bound sees it. Its sandbox's
    CPU time does (trusted/cpufloor.py): judged as a ratio to its honest twin in this run, which works as long inside
    its calls and is not charged. Without the floor the forger reported 0.10 to 0.45 of its twin's time.
    Where no CPU cgroup can be made the floor is not applied, the trace says so, and this test is skipped."""
    _, summary, _, _ = benched
    [cheat], [twin] = statuses(summary, "works_between_its_marks"), statuses(summary, TWIN)
    logs = {o.pair.solution.name: o.record["evaluation"]["log"] or "" for o in (cheat, twin)}
    if any("CPU-time floor was not applied" in log for log in logs.values()):
        pytest.skip(f"no CPU cgroup here: {logs['works_between_its_marks'][-300:]}")
    assert (cheat.status, twin.status) == ("PASSED", "PASSED"), logs
    forged = cheat.record["evaluation"]["performance"]["latency_ms"]
    honest, fastest = (twin.record["evaluation"]["performance"][k] for k in ("latency_ms", "min_ms"))
    print(f"forger {forged:.4g} ms, honest twin {honest:.4g} ms (fastest call {fastest:.4g}): ratios "
          f"{forged / honest:.3f} ({forged / fastest:.3f})")  # pytest -s: for the record
    # Against the twin's fastest call: CPU time counts no time the host took the CPU away, which the twin's reported
    # wall time holds (its median was 2.6 ms for its 1 ms at a load of 7 on 2 cores), so the forger's moved work is
    # charged its CPU time, not its wall time (the Benchmarking page says so).
    assert fastest >= FORGED_WORK_MS and forged >= 0.7 * fastest, (forged, honest, fastest, logs)
    assert "CPU-time floor" in logs["works_between_its_marks"]
    assert "CPU-time floor" not in logs[TWIN], logs[TWIN]  # its median was not moved by 2 % or more


def test_work_on_a_helper_thread_is_charged_by_the_cpu_time_floor(benched):
    """works_on_a_helper_thread returns each call at once and does HELPER_WORK_MS of CPU on a thread it started when
    loaded (in torch ops, which release the GIL), beside the main thread's harness work. The floor took the harness's
    CPU (~0.5 ms a call here) from the busiest thread, the main one, and hid the helper behind it: where a core is
    free for the helper, the forger reported its bare computation (~0.03 ms). Its next busiest thread's CPU bounds
    its calls too, less only what the reference's worker spends beside its main thread (nothing here), with no
    harness noise to allow for: at least 0.6 of the hidden work. (On a saturated host the helper also slows the main
    thread's calls, which then report more without any floor: tests/bench/test_outside_bound.py has the numbers.)"""
    _, summary, _, _ = benched
    [cheat] = statuses(summary, "works_on_a_helper_thread")
    log = cheat.record["evaluation"]["log"] or ""
    if "CPU-time floor was not applied" in log:
        pytest.skip(f"no CPU cgroup here: {log[-300:]}")
    assert cheat.status == "PASSED", log
    forged = cheat.record["evaluation"]["performance"]["latency_ms"]
    print(f"helper-thread forger {forged:.4g} ms for {HELPER_WORK_MS} ms of hidden work")  # pytest -s: for the record
    assert forged >= 0.6 * HELPER_WORK_MS, (forged, log)


def test_no_trace_holds_the_bench_environment_or_host_secrets(benched):
    root, summary, mode, _ = benched
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "traces").rglob("*.jsonl")))
    assert SECRET not in text, "the bench's environment reached a trace"
    if mode == "bwrap":
        [o] = statuses(summary, "reads_the_bench_environment")
        log = o.record["evaluation"]["log"]
        assert "pid1:" in log and "shadow: <No such file" in log, log[-600:]


def test_slowed_reference_does_not_fake_a_speedup(benched):
    _, summary, _, _ = benched
    for o in statuses(summary, "slows_reference_via_torch_op"):
        perf = o.record["evaluation"]["performance"]
        assert perf["reference_latency_ms"] < 150, perf  # the 300 ms sleep per reference call is not there


def test_no_process_or_temp_folder_is_left(benched):
    _, _, mode, temps = benched
    assert not kt_temp_folders(temps)
    if mode == "bwrap":
        deadline = time.monotonic() + 10
        while marked_processes(ORPHAN_MARKER) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not marked_processes(ORPHAN_MARKER), "a setsid grandchild outlived its sandbox"


def test_every_trace_written_is_valid(benched):
    root, summary, _, _ = benched
    assert len(summary.outcomes) == 2 + 1 + sum(expected_pairs(name) for name in CHEATS)  # the baseline's, the twin's
    # (The validator rightly rejects the planted solution that does not compile; traces must be clean.)
    errors = [d for d in validate_path(root) if d.is_error and d.file.startswith("traces/")]
    assert not errors, "\n".join(str(d) for d in errors[:5])
    lines = [r for p in sorted((root / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    assert len(lines) == len(summary.outcomes)


def test_merge_combines_shards_without_duplicates(tmp_path, benched):
    root, *_ = benched
    traces = [r for p in sorted((root / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    target = write_dataset(tmp_path / "ds", traces=[])
    (target / "traces/baseline/norm/rmsnorm_h128.jsonl").unlink()
    shard_a, shard_b = tmp_path / "a", tmp_path / "b"
    for folder, part in ((shard_a, traces[::2]), (shard_b, traces[1::2] + traces[:3])):  # overlap
        for r in part:
            author = "baseline" if r["solution"] == "rmsnorm_h128_torch" else "cheat"
            append_line(folder / "traces" / author / "norm/rmsnorm_h128.jsonl", r)
    first = merge(target, [shard_a, shard_b])
    assert first.added == len(traces) and first.unchanged == 3
    again = merge(target, [shard_a, shard_b])
    assert again.added == 0 and again.replaced == 0
    merged = [r for p in sorted((target / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    assert len(merged) == len(traces)
