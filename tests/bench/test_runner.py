"""runner.py: one worker serves an author's solutions in turn and never another author's (the author is the
folder, not the file's claim); a reference that fails is not the solution's failure; a worker that cannot start
(run unsandboxed here, so that it runs a broken Python) stops the run."""

from __future__ import annotations

import json

from generator.bench import run_bench
from generator.load import load
from generator.validate import validate_path

from dataset_factory import DEFINITION, dump, dump_lines, write_dataset
from planted import FAST, add_solution, text, workloads


def test_one_worker_serves_an_authors_solutions_in_turn_and_never_another_authors(bench_root):
    """An author's solutions run one after the other in one worker (one Python and torch start for them all),
    each importing its own files (both have a helper.py: the first's, still imported, would lack `compute`);
    another author's solution gets a worker of its own and sees nothing they left. Each solution raises at
    import where what it finds says otherwise."""
    root, honest = bench_root, text("honest/rmsnorm")
    mark = "import os, tempfile\nMARK = os.path.join(tempfile.gettempdir(), 'kt-test-mark')\n"
    solutions = {  # name: (author, main.py, helper.py); they run in this order (author, definition, name)
        "a_first": ("alice", mark + "open(MARK, 'w').close()\nfrom helper import compute_a as compute\n",
                    honest.replace("def compute(", "def compute_a(")),
        "b_second": ("alice", mark + "assert os.path.exists(MARK), 'not in the worker of a_first'\n"
                     "from helper import compute\n", honest),
        "c_other": ("bob", mark + "assert not os.path.exists(MARK), 'in a worker another author used'\n"
                    "from helper import compute\n", honest),
    }
    for name, (author, main, helper) in solutions.items():
        dump(root / f"solutions/{author}/norm/rmsnorm_h128/{name}.json", {
            "name": name, "definition": "rmsnorm_h128", "author": author, "description": "worker reuse",
            "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                     "dependencies": ["torch"]},
            "sources": [{"path": "main.py", "content": main + "\ndef run(input, weight, eps):\n"
                                                             "    return compute(input, weight, eps)\n"},
                        {"path": "helper.py", "content": helper}]})
    summary = run_bench(root, device="cpu", solutions=list(solutions), timeout_s=10, timing=FAST, progress=False)
    assert [(o.pair.solution.name, o.status) for o in summary.outcomes] == [
        ("a_first", "PASSED"), ("b_second", "PASSED"), ("c_other", "PASSED")], [o.log[-300:] for o in summary.outcomes]
    # b_second's worker was a_first's: no start of its own (its setup is its load); c_other's started.
    assert summary.outcomes[1].setup_s < summary.outcomes[2].setup_s


def test_a_file_cannot_claim_another_authors_worker_or_the_baseline(bench_root):
    """Workers are shared by author folder, never by the `author` field: a file stored under mallory/ naming
    "author": "baseline" (at import it patches torch.rsqrt to sleep, which in the baselines' worker made the real
    baseline 5x-50x slower) is refused by the bench and by validate, and the leaderboard's baseline is still the
    folder's. A later solution of one author finds nothing of the earlier one's folder."""
    from generator.analyse.leaderboard import definition_leaderboards

    root = bench_root
    add_solution(root, "claims_the_baseline", author="baseline")
    target = root / "solutions/mallory/norm/rmsnorm_h128/claims_the_baseline.json"
    target.parent.mkdir(parents=True)
    (root / "solutions/baseline/norm/rmsnorm_h128/claims_the_baseline.json").rename(target)
    add_solution(root, "zz_later_baseline", "looks_for_earlier_folders", author="baseline")  # runs after rmsnorm_h128_torch, in its worker
    assert any(d.is_error and "is stored in the folder solutions/mallory/" in d.message for d in validate_path(root))
    summary = run_bench(root, device="cpu", timeout_s=10, timing=FAST, progress=False)
    got = {o.pair.solution.name: o for o in summary.outcomes}
    assert set(got) == {"rmsnorm_h128_torch", "zz_later_baseline"}, [o.log[-300:] for o in summary.outcomes]
    assert all(o.status == "PASSED" for o in got.values()), [o.log[-300:] for o in got.values()]
    assert got["zz_later_baseline"].setup_s < 1.0  # it shared the baseline folder's worker (no start of its own)
    [(what, why)] = [x for x in summary.plan.skipped if x[0] == "claims_the_baseline"]
    assert "refused" in why and "solutions/mallory/" in why, why
    perf = got["rmsnorm_h128_torch"].record["evaluation"]["performance"]
    assert perf["latency_ms"] < 25, perf  # no 50 ms sleep of the claimer's in the baseline's calls
    # The leaderboard's baseline is the folder's, whatever a file claims (here: the claimer's traces, planted).
    trace = dict(got["rmsnorm_h128_torch"].record, solution="claims_the_baseline")
    trace["evaluation"] = dict(trace["evaluation"], performance=dict(perf, latency_ms=perf["latency_ms"] * 50))
    dump_lines(root / "traces/mallory/norm/rmsnorm_h128.jsonl", [trace])
    (board,) = definition_leaderboards(load(root), "rmsnorm_h128")
    assert board.baseline in ("rmsnorm_h128_torch", "zz_later_baseline"), board.baseline


def test_a_reference_that_fails_is_not_the_solutions_failure(tmp_path, capsys):
    """The reference's worker may end before it answers once (here its module exits on import): that is not
    the solution's failure, so no trace is written for its pairs; each is NOT_MEASURED with the reason, the
    bench goes on to the end and exits 1."""
    from generator import cli

    definition = json.loads(json.dumps(DEFINITION))
    definition["reference"] = "import os\nos._exit(7)\n" + definition["reference"]
    root = write_dataset(tmp_path / "ds", definition=definition, traces=[], workloads=workloads(2))
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--quiet", "--timeout", "60"])
    out = capsys.readouterr().out
    assert code == 1, out
    for uuid in ("wl-0000", "wl-0001"):
        assert f"NOT_MEASURED: rmsnorm_h128_torch on workload {uuid}" in out, out
    assert "the definition's reference failed" in out and "exit code 7" in out, out
    assert not any(p.read_text().strip() for p in (root / "traces").rglob("*.jsonl")), \
        "a trace was written for a pair the reference failed"


def test_a_worker_that_cannot_start_stops_the_run_and_writes_no_trace(tmp_path, monkeypatch, capsys, unsandboxed):
    """A broken environment (here: the worker's Python cannot import torch) is the harness's failure: the
    run stops with a message saying so, and no solution gets a RUNTIME_ERROR trace for it."""
    from generator import cli
    from generator.bench.trusted import sandbox

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(sandbox.sys, "executable", str(broken))
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--quiet", "--timeout", "60"])
    err = capsys.readouterr().err
    assert code != 0 and "could not start" in err and "No module named torch" in err, err
    assert not any(p.read_text().strip() for p in (root / "traces").rglob("*.jsonl"))
