"""Write a synthetic dataset of a chosen size (for load/validate throughput measurements).

Shape at scale 1.0: 1,000 definitions, 5,000 workloads, 10,000 solutions, 1,000,000 trace
lines. Every record is valid and every reference resolves, so the validator does its full
work on each record. Deterministic: the same scale writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Iterator

DEFINITIONS, WORKLOADS_PER_DEF, SOLUTIONS_PER_DEF, TRACES = 1000, 5, 10, 1_000_000
AUTHORS = ("baseline", "alice", "bob", "carol", "dave")

REFERENCE = ("import torch\n\ndef run(input, weight, eps):\n    x = input.to(torch.float32)\n"
             "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"
             "    return {\"output\": (y * weight).to(input.dtype)}\n")
SOURCE = "import torch\n\ndef run(input, weight, eps):\n    return torch.nn.functional.rms_norm(input, input.shape[-1:], weight, eps)\n"


def definition(i: int) -> dict:
    h = 128 * (i + 1)
    return {
        "name": f"rmsnorm_h{h}", "type": "norm", "tags": ["status:draft", "stage:decode"],
        "description": f"Synthetic RMSNorm {i}.",
        "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": h}},
        "inputs": {"input": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"},
                   "weight": {"shape": ["hidden_size"], "dtype": "bfloat16"},
                   "eps": {"shape": [], "dtype": "float32"}},
        "outputs": {"output": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"}},
        "reference": REFERENCE, "constraints": ["batch_size >= 1"],
    }


def workload(def_name: str, i: int, j: int) -> dict:
    return {"uuid": f"w{i:05d}-{j}", "axes": {"batch_size": 2 ** j},
            "inputs": {"input": {"type": "random"}, "weight": {"type": "random"},
                       "eps": {"type": "scalar", "value": 1e-6}}, "seed": j}


def write_synthetic(root: Path, n_defs: int, workloads_of: Callable[[int], list[dict]],
                  solutions_of: Callable[[int, str], list[dict]],
                  results_of: Callable[[int, int, dict, list[dict]], Iterator[tuple[dict, dict]]]) -> dict[str, int]:
    """The files of `n_defs` synthetic definitions (definition(i)), each with the workloads `workloads_of(i)`,
    the solutions `solutions_of(i, name)` and, per solution k, the traces of `results_of(i, k, solution,
    workloads)`: (workload, evaluation) pairs, stored under the solution's author. Returns the counts."""
    counts = {"definitions": 0, "workloads": 0, "solutions": 0, "traces": 0}
    for i in range(n_defs):
        d = definition(i)
        name = d["name"]
        path = root / "definitions/norm" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(d, indent=2) + "\n")
        wls = workloads_of(i)
        path = root / "workloads/norm" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"definition": name, "workload": w, "solution": None,
                                            "evaluation": None}) + "\n" for w in wls))
        counts["definitions"] += 1
        counts["workloads"] += len(wls)
        lines: dict[str, list[str]] = {}
        for k, sol in enumerate(solutions_of(i, name)):
            path = root / "solutions" / sol["author"] / "norm" / name / f"{sol['name']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(sol, indent=2) + "\n")
            counts["solutions"] += 1
            for w, ev in results_of(i, k, sol, wls):
                lines.setdefault(sol["author"], []).append(
                    json.dumps({"definition": name, "workload": w, "solution": sol["name"], "evaluation": ev}) + "\n")
                counts["traces"] += 1
        for author, rows in lines.items():
            path = root / "traces" / author / "norm" / f"{name}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(rows))
    return counts


def write(root: Path, scale: float) -> dict[str, int]:
    n_defs = max(1, int(DEFINITIONS * scale))
    traces_per_pair = max(1, int(TRACES * scale) // (n_defs * SOLUTIONS_PER_DEF))

    def solutions(i: int, name: str) -> list[dict]:
        return [{"name": f"{name}_s{k}", "definition": name, "author": AUTHORS[k % len(AUTHORS)],
                 "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                          "destination_passing_style": False, "dependencies": ["torch"]},
                 "sources": [{"path": "main.py", "content": SOURCE}]} for k in range(SOLUTIONS_PER_DEF)]

    def results(i: int, k: int, sol: dict, wls: list[dict]) -> Iterator[tuple[dict, dict]]:
        for t in range(traces_per_pair):
            lat = 0.01 + 0.001 * ((i + k + t) % 97)
            yield wls[t % len(wls)], {
                "status": "PASSED", "log": "",
                "correctness": {"max_absolute_error": 0.001, "max_relative_error": 0.002},
                "performance": {"latency_ms": lat, "reference_latency_ms": 0.05, "speedup_factor": 0.05 / lat},
                "environment": {"hardware": "H100_SXM", "libs": {"torch": "2.13.0"}},
                "timestamp": "2026-11-21T10:00:00Z"}

    return write_synthetic(root, n_defs, lambda i: [workload("", i, j) for j in range(WORKLOADS_PER_DEF)],
                         solutions, results)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    print(write(args.out, args.scale))
