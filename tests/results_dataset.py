"""A small dataset with benchmark results, for the site's tests (rendered pages and the browser).

rmsnorm_h128 (from dataset_factory) with four workloads, traced on two machines: the baseline, a
fast solution by alice that fails the largest workload, and a slow one by bob; an agent trace for
alice's solution; and a second definition whose description plants a <script>.

On each machine (latencies scale by 1 on H100_SXM and 2 on test_cpu) alice's speedups are 4x, 2x,
1.33x and a RUNTIME_ERROR: geomean 2.20x, pass rate 75%, fast_1 75%; bob's are 0.8x everywhere.
"""

from __future__ import annotations

import copy
from pathlib import Path

from dataset_factory import DEFINITION, EINSUM, SOLUTION, TRACE, WORKLOAD, dump, dump_lines, write_dataset

DEF = "rmsnorm_h128"
FAST, SLOW = "rmsnorm_h128_fast", "rmsnorm_h128_slow"
PLANTED = "<script>window.__planted = 1</script>"
# A source file of alice's solution that markdown would act on if it were not escaped.
TRICKY_SOURCE = ('// ```\n--8<-- "index.md"\n~~~\n;--8<-- "index.md"\n</code></pre><script>window.__planted = 2</script>\n'
                 '__global__ void k() {}\n')
HARDWARE = ("H100_SXM", "test_cpu")


def workload(i: int) -> dict:
    w = copy.deepcopy(WORKLOAD)
    w["workload"].update(uuid=f"wl-{i}", axes={"batch_size": 2 ** i}, seed=i, stage="decode", num_tokens=2 ** i)
    return w


WORKLOADS = [workload(i) for i in range(1, 5)]


def trace(solution: str, w: dict, hardware: str, latency: float | None, status: str = "PASSED", log: str = "") -> dict:
    t = copy.deepcopy(TRACE)
    t.update(solution=solution, workload=w["workload"])
    ev = t["evaluation"]
    ev.update(status=status, log=log)
    ev["environment"]["hardware"] = hardware
    if status == "PASSED":
        ev["performance"] = {"latency_ms": latency, "reference_latency_ms": 0.05, "speedup_factor": 0.05 / latency,
                             "samples": 50}
    else:
        ev["performance"] = None
        ev["correctness"] = None
    return t


def browser_dataset(root: Path) -> Path:
    """rmsnorm_h128 with the baseline and two solutions traced on two machines, plus a planted <script>."""
    write_dataset(root, workloads=WORKLOADS, traces=[])
    for name, author, language in ((FAST, "alice", "triton"), (SLOW, "bob", "python")):
        s = copy.deepcopy(SOLUTION)
        s.update(name=name, author=author, description=f"{author}'s kernel.")
        s["spec"]["language"] = language
        if name == FAST:
            s["sources"].append({"path": "notes.cu", "content": TRICKY_SOURCE})
        dump(root / f"solutions/{author}/norm/{DEF}/{name}.json", s)
    base, fast, slow = [], [], []
    for hw_index, hw in enumerate(HARDWARE):
        scale = 1.0 + hw_index
        for i, w in enumerate(WORKLOADS):
            base.append(trace("rmsnorm_h128_torch", w, hw, 0.04 * scale))
            fast.append(trace(FAST, w, hw, 0.01 * scale * (1 + i)) if i < 3 else
                        trace(FAST, w, hw, None, "RUNTIME_ERROR", log="CUDA error: an illegal memory access </pre>"))
            slow.append(trace(SLOW, w, hw, 0.05 * scale))
    # how the results were produced: alice's measured by the bench, bob's recorded from elsewhere, the
    # baseline's from before traces said (no provenance)
    for traces, kind, tool in ((fast, "measured", "kerneltrace bench"), (slow, "recorded", "FlashInfer-Trace")):
        for t in traces:
            t["evaluation"]["environment"]["provenance"] = dict(
                {"kind": kind, "tool": tool}, **({"version": "0.1.0", "run_id": "run-1"} if kind == "measured" else {}))
    dump_lines(root / f"traces/baseline/norm/{DEF}.jsonl", base)
    dump_lines(root / f"traces/alice/norm/{DEF}.jsonl", fast)
    dump_lines(root / f"traces/bob/norm/{DEF}.jsonl", slow)
    dump(root / f"agent_traces/alice/{FAST}.json", {
        "model": "some-llm", "annotation": "first try",
        "conversation": [{"role": "user", "content": "Write a fast RMSNorm."},
                         {"role": "assistant", "content": None,
                          "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "run_bench", "arguments": "{\"n\": 1}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "name": "run_bench", "content": "2.0x <b>faster</b>"},
                         {"role": "assistant", "content": "Done."}]})
    evil = dict(copy.deepcopy(DEFINITION), name="planted_h128", description=f"Planted {PLANTED} here.",
                tags=["stage:prefill", "model:other-model", "status:draft"])
    dump(root / "definitions/norm/planted_h128.json", evil)
    # model:<name> means that calling record calls it (validate checks both directions)
    dump(root / "models/other-model.json", {"model": "other/model", "framework": "SGLang",
                                            "kernels": [{"id": "planted_h128", "count": 1}]})
    # planted_h128 has only its baseline's results, on test_cpu: a board with nothing to rank
    alone = [copy.deepcopy(w) for w in WORKLOADS[:2]]
    for w in alone:
        w["definition"] = "planted_h128"
        w["workload"]["uuid"] = "p" + w["workload"]["uuid"]
    dump_lines(root / "workloads/norm/planted_h128.jsonl", alone)
    dump(root / "solutions/baseline/norm/planted_h128/planted_h128_torch.json",
         dict(copy.deepcopy(SOLUTION), name="planted_h128_torch", definition="planted_h128"))
    traces = [dict(trace("planted_h128_torch", w, "test_cpu", 0.08), definition="planted_h128") for w in alone]
    dump_lines(root / "traces/baseline/norm/planted_h128.jsonl", traces)
    (root / "einsums/norm/planted_h128.yaml").write_text(EINSUM, encoding="utf-8")
    return root
