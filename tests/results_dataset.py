"""A small dataset with benchmark results, for the site's tests (rendered pages and the browser).

rmsnorm_h128 (from dataset_factory) with four workloads, traced on two machines: the baseline, a
fast solution by alice that fails the largest workload, and a slow one by bob; an agent trace for
alice's solution; and a second definition whose description plants a <script>.

On each machine (latencies scale by 1 on H100_SXM and 2 on test_cpu) alice's speedups are 4x, 2x,
1.33x and a RUNTIME_ERROR: geomean 2.20x, pass rate 75%, fast_1 75%; bob's are 0.8x everywhere.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from dataset_factory import DEFINITION, EINSUM, SOLUTION, TRACE, WORKLOAD, dump, dump_lines, write_dataset
from dataset_factory import HARDWARE as CPU_SPEC

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


# The contenders beside the baseline on rmsnorm_h128, traced on test_cpu only (so the H100_SXM board keeps its three
# solutions): torch.compile at 0.5x the baseline's time and liger-kernel at 0.25x, so liger-kernel is fastest there,
# 2x over the compiler. On test_cpu the baseline takes 0.08 ms.
COMPILED, LIBRARY = "rmsnorm_h128_torch_compile", "rmsnorm_h128_liger"
LIBRARY_VERSION = "liger-kernel>=0.5,<0.7"


def contenders_dataset(root: Path) -> Path:
    """browser_dataset with a compiler and a library contender on test_cpu, a second calling record (other-model,
    whose kernel planted_h128 has prefill workloads at 2,048 and 8,192 tokens around the 4,096 of a prefill step), an L2
    size on test_cpu's spec, and a model tag on planted_h128 that names no calling record."""
    browser_dataset(root)
    for name, author, share, deps in ((COMPILED, "torch-compile", 0.5, ["torch>=2.5"]),
                                      (LIBRARY, "liger-kernel", 0.25, ["torch", LIBRARY_VERSION])):
        s = copy.deepcopy(SOLUTION)
        s.update(name=name, author=author, description=f"{author}'s call.")
        s["spec"]["dependencies"] = deps
        dump(root / f"solutions/{author}/norm/{DEF}/{name}.json", s)
        dump_lines(root / f"traces/{author}/norm/{DEF}.jsonl",
                   [trace(name, w, "test_cpu", 0.08 * share) for w in WORKLOADS])
    # planted_h128's two workloads become prefill chunks of 2,048 and 8,192 tokens, the baseline 0.04 and 0.16 ms there
    path = root / "workloads/norm/planted_h128.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for w, tokens in zip(rows, (2048, 8192)):
        w["workload"].update(stage="prefill", num_tokens=tokens, axes={"batch_size": tokens})
    dump_lines(path, rows)
    traces = [dict(trace("planted_h128_torch", w, "test_cpu", 0.04 * (1 + 3 * i)), definition="planted_h128")
              for i, w in enumerate(rows)]
    dump_lines(root / "traces/baseline/norm/planted_h128.jsonl", traces)
    dump(root / "models/other-model.json", {"model": "other/model", "framework": "SGLang",
                                            "serving": {"hardware": "test_cpu", "gpus": 1, "tensor_parallel": 1},
                                            "kernels": [{"id": "planted_h128", "count": 2}]})
    dump(root / "hardware/test_cpu.json", dict(CPU_SPEC, l2_cache_bytes=50 * 2 ** 20))
    # a model with no calling record (so no page), tagged model-alt: (a model: tag would be a validate error): the
    # kernels index's Model filter leaves it out
    path = root / "definitions/norm/planted_h128.json"
    planted = json.loads(path.read_text(encoding="utf-8"))
    planted["tags"].append("model-alt:ghost-model")
    dump(path, planted)
    return root
