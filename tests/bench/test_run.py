"""run.py and the CLI's bench command, a run as a whole: resume after a torn line or a kill -9 (no worker
outlives the bench), two resumed runs at once, the correctness-only check and its exit code, a definition
validate rejects, hardware without a spec, and CUDA asked for where there is none."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from generator.bench import run_bench
from generator.bench.trusted.plan import make_plan
from generator.load import load
from generator.model.errors import KernelTraceError

from dataset_factory import write_dataset
from planted import FAST, add_solution, workloads


def test_resume_repairs_a_torn_last_line_and_goes_on(tmp_path, capsys):
    from generator import cli

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    assert cli.main(["bench", "--dataset", str(root), "--quiet", "--solutions", "rmsnorm_h128_torch"]) == 0
    path = root / "traces/baseline/norm/rmsnorm_h128.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2], encoding="utf-8")  # a kill mid-write
    code = cli.main(["bench", "--dataset", str(root), "--quiet", "--resume", "--solutions", "rmsnorm_h128_torch"])
    captured = capsys.readouterr()
    assert code == 0 and "cut a torn last line" in captured.err, captured
    assert "1 pair(s) already have a trace" in captured.out and "1 PASSED" in captured.out, captured.out
    # The run reports its throughput and where its slowest pairs went (the GPU kit's log shows it).
    assert re.search(r"[0-9.]+ pairs per minute \([0-9]+ s in pairs, of which [0-9]+ s starting and loading "
                     r"workers\); slowest: rmsnorm_h128_torch on wl-0001 [0-9.]+ s", captured.out), captured.out
    assert sorted(json.loads(x)["workload"]["uuid"] for x in path.read_text().splitlines()) == ["wl-0000", "wl-0001"]


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_kill_9_of_the_bench_leaves_no_process_and_resume_finishes(tmp_path):
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(8))
    add_solution(root, "slow", "honest/works_each_call", author="baseline", work_s=0.05)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "generator.cli", "bench", "--dataset", str(root), "--out", str(out),
           "--solutions", "slow", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trace_file = out / "traces/baseline/norm/rmsnorm_h128.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if trace_file.is_file() and len(trace_file.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    workers = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)  # the bench alone, mid-run: its workers must follow it
    proc.wait()
    assert workers, "the bench had no worker to kill: the test proves nothing"
    deadline = time.monotonic() + 20
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in workers if alive(p)], "a worker outlived the bench's kill -9"
    first = trace_file.read_text(encoding="utf-8").splitlines()
    assert 2 <= len(first) < 8, "killed too late to test anything"
    assert all(json.loads(line)["evaluation"]["status"] == "PASSED" for line in first)
    summary = run_bench(root, out=out, solutions=["slow"], resume=True, timing=FAST, progress=False)
    assert summary.plan.already_done == len(first) and len(summary.outcomes) == 8 - len(first)
    uuids = [json.loads(x)["workload"]["uuid"] for x in trace_file.read_text().splitlines()]
    assert sorted(uuids) == [f"wl-{i:04d}" for i in range(8)]  # each pair exactly once


def test_concurrent_resume_benches_write_each_pair_once(tmp_path):
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    script = ("import sys; from pathlib import Path; from generator.bench import run_bench; "
              f"run_bench(Path(sys.argv[1]), resume=True, timing={FAST!r}, progress=False)")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root)], stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=280)
        assert p.returncode == 0, err.decode()[-2000:]
    lines = (root / "traces/baseline/norm/rmsnorm_h128.jsonl").read_text().splitlines()
    keys = [(r["solution"], r["workload"]["uuid"]) for r in map(json.loads, lines)]
    assert sorted(keys) == [("rmsnorm_h128_torch", f"wl-{i:04d}") for i in range(2)]


def test_correctness_only_run_fails_and_ends_naming_the_pairs_that_did_not_pass(bench_root, capsys):
    """The check a contributor runs before a pull request: no trace is written, so the reason comes with the
    outcome; a pair that did not pass makes it exit 1 (without --strict), and the report ends with them."""
    from generator import cli

    root = bench_root
    add_solution(root, "raises", author="baseline")  # in the baseline's worker: one worker start less
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--correctness-only", "--quiet",
                     "--solutions", "raises", "rmsnorm_h128_torch", "--timeout", "60"])
    out = capsys.readouterr().out
    assert code == 1, out
    tail = out.strip().splitlines()[-2:]
    assert tail[0] == "1 of 2 pair(s) did not pass:", out
    assert tail[1].startswith("  RUNTIME_ERROR: raises on workload wl-0000") and "boom in the kernel" in tail[1], out


def test_a_strict_run_whose_pairs_all_passed_exits_0_and_says_so(capsys):
    from types import SimpleNamespace

    from generator.cli import _failures

    passed = [SimpleNamespace(passed=True, status="PASSED")] * 3
    assert _failures(passed, strict=True) == 0 and capsys.readouterr().out == "all 3 pair(s) passed\n"
    assert _failures([], strict=True) == 0


def test_a_definition_validate_rejects_is_not_run_and_the_bench_says_why(tmp_path, capsys):
    """A workload missing a var axis once crashed the bench (KeyError: 'batch_size' while making inputs): the
    bench runs nothing for a definition validate rejects, and names the file, line and field."""
    from generator import cli

    bad = workloads(2)
    del bad[1]["workload"]["axes"]["batch_size"]
    root = write_dataset(tmp_path / "ds", traces=[], workloads=bad)
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "0 pair(s)" in out or "nothing to do" in out, out
    assert "validate rejects" in out and "workloads/norm/rmsnorm_h128.jsonl:2" in out and "batch_size" in out, out


def test_a_run_on_hardware_without_a_spec_warns_that_no_floor_bounds_it(bench_root, capsys):
    root = bench_root
    for spec in (root / "hardware").glob("*.json"):  # whatever the factory wrote: this host's spec is gone
        spec.unlink()
    from generator.bench.trusted.run import floors_ms
    from generator.model.evaluation import MIN_CALL_MS

    ds = load(root)
    # Still bounded by the time no call beats: a reported 5e-324 ms made an infinite speedup, written as Infinity.
    assert floors_ms(ds, make_plan(ds, "cpu"), "CPU_NOWHERE_1T", {}) == {("rmsnorm_h128", "wl-0000"): MIN_CALL_MS}
    err = capsys.readouterr().err
    assert "no hardware spec named" in err and "no speed-of-light floor" in err and "hardware/" in err


def test_cuda_requested_without_cuda_is_a_clear_error(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error path is for machines without it")
    root = write_dataset(tmp_path, traces=[])
    with pytest.raises(KernelTraceError, match="no CUDA device"):
        run_bench(root, device="cuda", progress=False)
