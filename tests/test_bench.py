"""kerneltrace bench: inputs, tolerances, isolation, atomic append and resume, every planted cheat,
sharding and merge, and the schema of every trace written. Runs on the CPU; GPU-only paths have
their own tests that skip without CUDA (they are not faked)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from dataset_factory import DEFINITION, WORKLOAD, dump, dump_lines, write_dataset
from generator.bench import merge, run_bench
from generator.bench.check import Verdict, chi2_sf, compare, compare_samples, tolerance_for
from generator.bench.inputs import make_inputs
from generator.bench.plan import make_plan, parse_shard, shard_of
from generator.bench.store import append_line, read_traces
from generator.model.errors import KernelTraceError
from generator.load import load
from generator.validate import validate_path

FAST = {"warmup": 1, "min_samples": 3, "max_samples": 5, "budget_s": 0.05}
CORRECT = (
    "import torch\n\n"
    "def compute(input, weight, eps):\n"
    "    x = input.float()\n"
    "    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(input.dtype)\n\n"
)


def add_solution(root: Path, name: str, source: str, author: str = "cheat", dps: bool = False) -> None:
    dump(root / f"solutions/{author}/norm/rmsnorm_h128/{name}.json", {
        "name": name, "definition": "rmsnorm_h128", "author": author, "description": f"planted: {name}",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": dps, "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": source}]})


def workloads(n: int) -> list[dict]:
    out = []
    for i in range(n):
        w = json.loads(json.dumps(WORKLOAD))
        w["workload"].update(uuid=f"wl-{i:04d}", axes={"batch_size": 1 + 3 * i}, seed=100 + i)
        out.append(w)
    return out


CHEATS = {
    # name: (source, expected status, words the log must contain)
    "mutates_input": (CORRECT + "def run(input, weight, eps):\n    out = compute(input, weight, eps)\n"
                      "    weight.zero_()\n    return out\n", "REWARD_HACK", "modified its input"),
    "reuses_output": (CORRECT + "_cache = {}\n\ndef run(input, weight, eps):\n    key = input.data_ptr()\n"
                      "    if key not in _cache:\n        _cache[key] = compute(input, weight, eps)\n"
                      "    return _cache[key]\n", "REWARD_HACK", "reuses an earlier result"),
    "calls_reference_file": (
        "import json, pathlib\n\ndef run(input, weight, eps):\n"
        "    d = json.loads(pathlib.Path(DEFINITION_PATH).read_text())\n    ns = {}\n"
        "    exec(d['reference'], ns)\n    return ns['run'](input, weight, eps)\n",
        "REWARD_HACK", "read the definition file"),
    "calls_reference_object": (
        "import gc\n\ndef run(input, weight, eps):\n"
        "    ref = next(o for o in gc.get_objects() if callable(o) and getattr(o, '__name__', '') == 'reference')\n"
        "    return ref(input, weight, eps)\n", "REWARD_HACK", "called the definition's reference"),
    "subclassed_output": (CORRECT + "class Lazy(torch.Tensor):\n    def __eq__(self, other):\n        return True\n\n"
                          "def run(input, weight, eps):\n    return compute(input, weight, eps).as_subclass(Lazy)\n",
                          "REWARD_HACK", "not a plain torch.Tensor"),
    "lazy_output": (CORRECT + "class Later:\n    def __init__(self, f):\n        self.f = f\n\n"
                    "def run(input, weight, eps):\n    return {'output': Later(lambda: compute(input, weight, eps))}\n",
                    "REWARD_HACK", "not a plain torch.Tensor"),
    "patches_timer": (CORRECT + "import time\n_real = time.perf_counter\n\n"
                      "def run(input, weight, eps):\n    time.perf_counter = lambda: _real() / 1000\n"
                      "    return compute(input, weight, eps)\n", "REWARD_HACK", "time.perf_counter"),
    "patches_synchronize": (CORRECT + "def run(input, weight, eps):\n"
                            "    torch.cuda.synchronize = lambda *args, **kwargs: None\n"
                            "    return compute(input, weight, eps)\n", "REWARD_HACK", "torch.cuda.synchronize"),
    "outlives_call_thread": (CORRECT + "import threading, time\n\ndef run(input, weight, eps):\n"
                             "    out = torch.zeros_like(input)\n"
                             "    def work():\n        time.sleep(0.01)\n        out.copy_(compute(input, weight, eps))\n"
                             "    threading.Thread(target=work).start()\n    return out\n",
                             "REWARD_HACK", "left thread"),
    "leaves_outputs_unwritten": (CORRECT + "def run(input, weight, eps, output):\n"
                                 "    output[:-1] = compute(input, weight, eps)[:-1]\n",
                                 "INCORRECT_NUMERICAL", "NaN"),
    "wrong_answer": (CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps) * 1.05\n",
                     "INCORRECT_NUMERICAL", "within atol"),
    "wrong_shape": (CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)[:, :64]\n",
                    "INCORRECT_SHAPE", "shape"),
    "wrong_dtype": (CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps).float()\n",
                    "INCORRECT_DTYPE", "dtype"),
    "raises": ("def run(input, weight, eps):\n    raise RuntimeError('boom in the kernel')\n",
               "RUNTIME_ERROR", "boom in the kernel"),
    "exits": ("import os\n\ndef run(input, weight, eps):\n    os._exit(3)\n", "RUNTIME_ERROR", "exit code 3"),
    "segfaults": ("import ctypes\n\ndef run(input, weight, eps):\n    ctypes.string_at(0)\n", "RUNTIME_ERROR", "signal"),
    "hangs": ("def run(input, weight, eps):\n    while True:\n        pass\n", "TIMEOUT", "limit"),
    "does_not_compile": ("def run(input, weight, eps:\n    return input\n", "COMPILE_ERROR", "SyntaxError"),
}


@pytest.fixture(scope="module")
def benched(tmp_path_factory):
    """One bench run over a dataset with a correct solution and every planted cheat."""
    root = write_dataset(tmp_path_factory.mktemp("bench"), traces=[], workloads=workloads(2))
    for name, (source, _, _) in CHEATS.items():
        source = source.replace("DEFINITION_PATH", repr(str(root / "definitions/norm/rmsnorm_h128.json")))
        add_solution(root, name, source, dps=(name == "leaves_outputs_unwritten"))
    summary = run_bench(root, device="cpu", timeout_s=8, timing=FAST, progress=False)
    return root, summary


def statuses(summary, solution):
    return [o for o in summary.outcomes if o.pair.solution.name == solution]


def test_correct_solution_passes_with_full_trace(benched):
    root, summary = benched
    [good, *_] = statuses(summary, "rmsnorm_h128_torch"), None
    assert [o.status for o in good] == ["PASSED", "PASSED"]
    ev = good[0].record["evaluation"]
    assert ev["correctness"]["input_sets"] == 3 and ev["correctness"]["matched_ratio"] == 1.0
    perf = ev["performance"]
    assert perf["timer"] == "host_perf_counter" and perf["samples"] >= 3
    assert perf["min_ms"] <= perf["latency_ms"] <= perf["max_ms"]
    assert perf["speedup_factor"] == pytest.approx(perf["reference_latency_ms"] / perf["latency_ms"])
    assert ev["environment"]["hardware"].startswith("CPU_") and ev["environment"]["libs"]["torch"] == torch.__version__
    assert ev["seed"] == good[0].pair.workload.seed


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_planted_problem_is_caught(benched, name):
    _, summary = benched
    _, status, words = CHEATS[name]
    outcomes = statuses(summary, name)
    assert len(outcomes) == 2, "every pair gets a trace, whatever happened"
    for o in outcomes:
        log = o.record["evaluation"]["log"] or ""
        assert o.status == status, f"{name}: {o.status} ({log[-500:]})"
        assert words in log, f"{name}: log does not say {words!r}: {log[-500:]}"


def test_every_trace_written_is_valid(benched):
    root, summary = benched
    assert len(summary.outcomes) == 2 * (1 + len(CHEATS))
    # (The validator rightly rejects the planted solution that does not compile; traces must be clean.)
    errors = [d for d in validate_path(root) if d.is_error and d.file.startswith("traces/")]
    assert not errors, "\n".join(str(d) for d in errors[:5])
    lines = [r for p in sorted((root / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    assert len(lines) == len(summary.outcomes)


# --------------------------------------------------------------------------------------------------
# Inputs and tolerances
# --------------------------------------------------------------------------------------------------

def test_inputs_are_seeded_and_sets_differ(tmp_path):
    root = write_dataset(tmp_path)
    d, w = DEFINITION, WORKLOAD["workload"]
    a, b = make_inputs(d, w, root, 0, "cpu"), make_inputs(d, w, root, 0, "cpu")
    c = make_inputs(d, w, root, 1, "cpu")
    assert torch.equal(a["input"], b["input"]) and not torch.equal(a["input"], c["input"])
    assert a["input"].dtype == torch.float16 and a["input"].shape == (4, 128) and a["eps"] == 1e-5
    blob_w = json.loads((root / "workloads/norm/rmsnorm_h128.jsonl").read_text().splitlines()[1])["workload"]
    blob = make_inputs(d, blob_w, root, 0, "cpu")
    assert torch.equal(blob["input"], make_inputs(d, blob_w, root, 2, "cpu")["input"])  # blobs do not vary


def test_special_input_distributions(tmp_path):
    d = {"name": "x", "axes": {"b": {"type": "const", "value": 3}, "v": {"type": "const", "value": 50}},
         "inputs": {"probs": {"shape": ["b", "v"], "dtype": "float32"},
                    "a_scale": {"shape": ["b"], "dtype": "float32"},
                    "q": {"shape": ["b", "v"], "dtype": "float8_e4m3"}}}
    w = {"axes": {}, "inputs": {k: {"type": "random"} for k in d["inputs"]}, "seed": 1}
    x = make_inputs(d, w, tmp_path, 0, "cpu")
    assert torch.allclose(x["probs"].sum(-1), torch.ones(3)) and (x["probs"] >= 0).all()
    assert (x["a_scale"] > 0).all()
    assert torch.isfinite(x["q"].float()).all()


def test_tolerance_is_per_dtype():
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "bfloat16"}}}
    e = torch.linspace(1, 2, 64)
    one_ulp = (e * (1 + 2**-8)).to(torch.bfloat16)  # within half an ulp of bf16 rounding
    assert compare(d, {"o": one_ulp}, {"o": e}, {"n": 64}).ok
    assert not compare(d, {"o": (e * 1.05).to(torch.bfloat16)}, {"o": e}, {"n": 64}).ok
    d16 = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float16"}}}
    assert not compare(d16, {"o": (e * 1.01).half()}, {"o": e}, {"n": 64}).ok  # fine for bf16, not for fp16
    assert tolerance_for("t", "o", "float16").rtol < tolerance_for("t", "o", "bfloat16").rtol
    di = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "int32"}}}
    ids = torch.arange(64, dtype=torch.int32)
    assert compare(di, {"o": ids}, {"o": ids}, {"n": 64}).ok
    assert not compare(di, {"o": ids + (ids == 5).int()}, {"o": ids}, {"n": 64}).ok


def test_nan_where_reference_is_finite_fails_and_matched_ratio_is_recorded():
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float32"}}}
    e = torch.ones(10)
    a = e.clone()
    a[3] = float("nan")
    v = compare(d, {"o": a}, {"o": e}, {"n": 10})
    assert v.status == "INCORRECT_NUMERICAL" and "NaN" in v.message and v.matched_ratio == pytest.approx(0.9)


def test_sampling_is_checked_statistically():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(4, 20, generator=g) * 2, -1)
    d = {"name": "s", "outputs": {"samples": {"shape": ["b"], "dtype": "int64"}}}

    def draws(fn, n=400):
        return [{"samples": fn()} for _ in range(n)]

    ref = draws(lambda: torch.multinomial(probs, 1, generator=g).squeeze(1))
    same = draws(lambda: torch.multinomial(probs, 1, generator=g).squeeze(1))
    greedy = draws(lambda: probs.argmax(-1))
    assert compare_samples(d, same, ref, probs).ok
    assert compare_samples(d, greedy, ref, probs).status == "INCORRECT_NUMERICAL"
    zero = probs.clone()
    zero[:, 0] = 0
    forced = draws(lambda: torch.zeros(4, dtype=torch.int64))
    assert "probability 0" in compare_samples(d, forced, ref, zero).message
    assert chi2_sf(10.0, 10) == pytest.approx(0.44, abs=0.02)  # table value 0.4405


# --------------------------------------------------------------------------------------------------
# Atomic append, kill and resume
# --------------------------------------------------------------------------------------------------

def test_append_cuts_a_torn_last_line(tmp_path):
    path = tmp_path / "t.jsonl"
    append_line(path, {"a": 1})
    with open(path, "ab") as f:
        f.write(b'{"a": 2, "half')  # what a kill during a write would leave
    assert append_line(path, {"a": 3}) == len(b'{"a": 2, "half')
    assert [json.loads(x) for x in path.read_text().splitlines()] == [{"a": 1}, {"a": 3}]


def test_killed_run_loses_nothing_and_resume_finishes(tmp_path):
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(8))
    add_solution(root, "slow", CORRECT + "import time\n\ndef run(input, weight, eps):\n    time.sleep(0.3)\n"
                 "    return compute(input, weight, eps)\n", author="baseline")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "generator.cli", "bench", "--dataset", str(root), "--out", str(out),
           "--solutions", "slow", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    trace_file = out / "traces/baseline/norm/rmsnorm_h128.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if trace_file.is_file() and len(trace_file.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the bench and its worker, mid-run
    proc.wait()
    first = trace_file.read_text(encoding="utf-8").splitlines()
    assert 2 <= len(first) < 8, "killed too late to test anything"
    assert all(json.loads(line)["evaluation"]["status"] == "PASSED" for line in first)
    summary = run_bench(root, out=out, solutions=["slow"], resume=True, timing=FAST, progress=False)
    assert summary.plan.already_done == len(first) and len(summary.outcomes) == 8 - len(first)
    uuids = [json.loads(x)["workload"]["uuid"] for x in trace_file.read_text().splitlines()]
    assert sorted(uuids) == [f"wl-{i:04d}" for i in range(8)]  # each pair exactly once


# --------------------------------------------------------------------------------------------------
# Plan: sharding, cost limit, device fit; merge
# --------------------------------------------------------------------------------------------------

def test_shards_cover_every_pair_exactly_once(tmp_path):
    root = write_dataset(tmp_path, traces=[], workloads=workloads(30))
    for i in range(3):
        add_solution(root, f"s{i}", CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
    ds = load(root)
    everything = {p.key for p in make_plan(ds, "cpu").pairs}
    assert len(everything) == 4 * 30
    shards = [{p.key for p in make_plan(ds, "cpu", shard=(k, 4)).pairs} for k in range(1, 5)]
    assert set().union(*shards) == everything and sum(map(len, shards)) == len(everything)
    assert all(shards), "every shard gets work"
    assert shard_of("a/b", 7) == shard_of("a/b", 7)


@pytest.mark.parametrize("text", ["3/2", "0/4", "x", "1/0"])
def test_bad_shard_is_a_clear_error(text):
    with pytest.raises(KernelTraceError, match="--shard"):
        parse_shard(text)


def test_cpu_cost_limit_skips_and_reports(tmp_path):
    big = workloads(2)
    big[1]["workload"]["axes"]["batch_size"] = 100_000  # 2 * 100k * 128 * 2 bytes = 49 MiB
    root = write_dataset(tmp_path, traces=[], workloads=big)
    plan = make_plan(load(root), "cpu", max_bytes=16 * 2**20)
    assert [p.workload.uuid for p in plan.pairs] == ["wl-0000"]
    assert len(plan.skipped) == 1 and "MiB per call > limit 16 MiB" in plan.skipped[0][1]


def test_gpu_only_solutions_are_not_run_on_the_cpu(tmp_path):
    root = write_dataset(tmp_path, traces=[])
    sol = json.loads((root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json").read_text())
    sol["spec"]["target_hardware"] = ["H100_SXM"]
    dump(root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json", sol)
    plan = make_plan(load(root), "cpu")
    assert not plan.pairs and plan.skipped == [("rmsnorm_h128_torch", "targets H100_SXM, not cpu")]


def test_merge_combines_shards_without_duplicates(tmp_path, benched):
    root, _ = benched
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


def test_cuda_requested_without_cuda_is_a_clear_error(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error path is for machines without it")
    root = write_dataset(tmp_path, traces=[])
    with pytest.raises(KernelTraceError, match="no CUDA device"):
        run_bench(root, device="cuda", progress=False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_side_stream_work_is_caught_on_cuda(tmp_path):
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    add_solution(root, "side_stream", CORRECT + "_s = torch.cuda.Stream()\n\ndef run(input, weight, eps):\n"
                 "    out = torch.zeros_like(input)\n    with torch.cuda.stream(_s):\n"
                 "        torch.cuda._sleep(10_000_000)\n        out.copy_(compute(input, weight, eps))\n    return out\n")
    for sol in (root / "solutions/cheat/norm/rmsnorm_h128").glob("*.json"):
        s = json.loads(sol.read_text())
        s["spec"]["target_hardware"] = ["H100_SXM"]
        dump(sol, s)
    summary = run_bench(root, device="cuda", solutions=["side_stream"], progress=False)
    assert [o.status for o in summary.outcomes] == ["REWARD_HACK"]


def test_cpu_flop_limit_uses_the_einsum_cascade(tmp_path):
    from generator.bench.plan import call_flops

    root = write_dataset(tmp_path, traces=[], workloads=workloads(3))  # batch 1, 4, 7
    ds = load(root)
    d = ds.definitions["rmsnorm_h128"]
    flops = [call_flops(ds, d, w, {}) for w in sorted(ds.workloads, key=lambda w: w.uuid)]
    assert flops[0] < flops[1] < flops[2], flops  # counted from the cascade, growing with batch_size
    plan = make_plan(ds, "cpu", max_flops=flops[1])
    assert [p.workload.uuid for p in plan.pairs] == ["wl-0000", "wl-0001"]
    assert "GFLOP per call > limit" in plan.skipped[0][1]


def test_bad_selection_and_device_are_clear_errors(tmp_path, capsys):
    from generator import cli

    root = write_dataset(tmp_path, traces=[])
    with pytest.raises(KernelTraceError, match="--definitions: no definition named 'rmsnorm_h999'"):
        make_plan(load(root), "cpu", definitions=["rmsnorm_h999"])
    assert cli.main(["bench", "--dataset", str(root), "--device", "tpu", "--quiet"]) == 2
    assert "--device 'tpu': use cpu or cuda" in capsys.readouterr().err
