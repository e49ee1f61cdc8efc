"""store.py: appends that survive a torn line, one trace file written by several processes at once, and the
provenance every trace carries."""

from __future__ import annotations

import json
import os
import signal
import time
import traceback
from pathlib import Path

from generator.bench.trusted.store import append_line, write_trace

from dataset_factory import WORKLOAD


def test_append_cuts_a_torn_last_line(tmp_path):
    path = tmp_path / "t.jsonl"
    append_line(path, {"a": 1})
    with open(path, "ab") as f:
        f.write(b'{"a": 2, "half')  # what a kill during a write would leave
    assert append_line(path, {"a": 3}) == len(b'{"a": 2, "half')
    assert [json.loads(x) for x in path.read_text().splitlines()] == [{"a": 1}, {"a": 3}]


def _write_traces(path: Path, who: str, n: int, writer: str) -> None:
    for i in range(n):
        write_trace(path, {"solution": who, "workload": {"uuid": f"w{i:05d}"}, "evaluation": {
            "environment": {"hardware": "HW"}, "pad": "x" * (i % 700), "writer": writer}})


def test_concurrent_writers_lose_and_duplicate_nothing(tmp_path):
    """Four processes write one trace file at once; two of them write the same keys (as two --resume
    runs of one plan would): every key ends up there exactly once and every line parses. The four are forked
    from this process, the store already imported (four fresh interpreters each imported torch first, seconds
    apart), and skip fsync: a replaced line rewrites the file, 600 fsyncs took ~7 s here, and what is checked is the
    lock around read, append and rename, not what a power cut would leave."""
    path = tmp_path / "traces/a/norm/d.jsonl"
    pids = []
    for k in range(4):
        pid = os.fork()
        if pid == 0:  # the child: write, then leave at once (no pytest teardown, no atexit handlers)
            code = 1
            os.fsync = lambda fd: None
            try:
                _write_traces(path, f"s{k % 2}", 300, str(k))
                code = 0
            except BaseException:  # noqa: BLE001 - said on stderr, and by the exit code the parent checks
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    codes, deadline = {}, time.monotonic() + 240
    while len(codes) < len(pids) and time.monotonic() < deadline:
        for pid in set(pids) - set(codes):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[pid] = os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    for pid in set(pids) - set(codes):  # still writing after 240 s: stopped, and the assertion below fails
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert [codes.get(pid) for pid in pids] == [0] * 4, codes
    records = [json.loads(line) for line in path.read_text().splitlines()]
    keys = [(r["solution"], r["workload"]["uuid"]) for r in records]
    assert len(keys) == len(set(keys)) == 600


def test_every_trace_says_how_it_was_produced(monkeypatch):
    """make_trace writes environment.provenance: measured by kerneltrace bench, its version, the checkout's commit
    where there is one, the run, and the CI workflow run from GITHUB_REPOSITORY / GITHUB_RUN_ID; run_bench's one
    per run is kept as given, and a caller that brings none gets the process's own."""
    from types import SimpleNamespace

    from generator import __version__
    from generator.bench.trusted import runner
    from generator.bench.trusted.environment import provenance

    monkeypatch.setenv("GITHUB_REPOSITORY", "org/kerneltrace")
    monkeypatch.setenv("GITHUB_RUN_ID", "123")
    run = provenance()
    assert run["kind"] == "measured" and run["tool"] == "kerneltrace bench" and run["version"] == __version__
    assert run["ci"] == {"repository": "org/kerneltrace", "run_id": "123"} and len(run["run_id"]) == 32
    assert provenance()["run_id"] != run["run_id"]  # one id per run
    pair = SimpleNamespace(definition=SimpleNamespace(name="rmsnorm_h128"), workload=SimpleNamespace(data=WORKLOAD),
                           solution=SimpleNamespace(name="rmsnorm_h128_torch"))
    result = {"status": "RUNTIME_ERROR", "log": "boom"}
    given = runner.make_trace(pair, result, {"hardware": "test_cpu", "provenance": run})
    assert given["evaluation"]["environment"]["provenance"] is run
    own = [runner.make_trace(pair, result, {"hardware": "test_cpu"})["evaluation"]["environment"]["provenance"]
           for _ in range(2)]
    assert own[0]["kind"] == "measured" and own[0]["run_id"] == own[1]["run_id"]  # the process's run
