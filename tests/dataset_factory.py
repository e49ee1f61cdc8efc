"""Build small, complete datasets in a folder for tests: one valid record of every kind.

`write_dataset(root)` writes the good dataset; tests then break one thing and check the
diagnostic. Everything a record refers to exists, so a good dataset validates clean.
"""

from __future__ import annotations

import copy
import json
import struct
from pathlib import Path

REFERENCE = (
    "import torch\n\n"
    "def run(input, weight, eps):\n"
    "    x = input.to(torch.float32)\n"
    "    variance = x.pow(2).mean(-1, keepdim=True)\n"
    "    output = (x * torch.rsqrt(variance + eps) * weight.to(torch.float32)).to(input.dtype)\n"
    "    return {\"output\": output}\n"
)

DEFINITION = {
    "name": "rmsnorm_h128",
    "type": "norm",
    "tags": ["status:verified", "model:test-model", "stage:decode"],
    "description": "RMSNorm over a hidden size of 128.",
    "axes": {
        "batch_size": {"type": "var", "description": "Tokens."},
        "hidden_size": {"type": "const", "value": 128, "description": "Hidden size."},
    },
    "inputs": {
        "input": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"},
        "weight": {"shape": ["hidden_size"], "dtype": "float16"},
        "eps": {"shape": [], "dtype": "float32"},
    },
    "outputs": {"output": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"}},
    "reference": REFERENCE,
    "constraints": ["batch_size >= 1"],
}

WORKLOAD = {
    "definition": "rmsnorm_h128",
    "workload": {
        "uuid": "wl-0001",
        "axes": {"batch_size": 4},
        "inputs": {"input": {"type": "random"}, "weight": {"type": "random"},
                   "eps": {"type": "scalar", "value": 1e-5}},
        "seed": 7,
    },
    "solution": None,
    "evaluation": None,
}

BLOB_WORKLOAD = {
    "definition": "rmsnorm_h128",
    "workload": {
        "uuid": "wl-0002",
        "axes": {"batch_size": 2},
        "inputs": {"input": {"type": "safetensors", "path": "blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors",
                             "tensor_key": "input"},
                   "weight": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-6}},
    },
    "solution": None,
    "evaluation": None,
}

# Three more plain random workloads, so the verified definition meets the minimum of 5 workloads that
# validate warns below (generator/validate/completeness.py).
MORE_WORKLOADS = [
    {**WORKLOAD, "workload": {**WORKLOAD["workload"], "uuid": f"wl-{i:04d}", "axes": {"batch_size": batch}, "seed": i}}
    for i, batch in ((3, 1), (4, 16), (5, 64))
]

SOLUTION_SOURCE = (
    "import torch\n\n"
    "def run(input, weight, eps):\n"
    "    x = input.float()\n"
    "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()\n"
    "    return y.to(input.dtype)\n"
)

SOLUTION = {
    "name": "rmsnorm_h128_torch",
    "definition": "rmsnorm_h128",
    "author": "baseline",
    "description": "PyTorch baseline.",
    "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
             "destination_passing_style": False, "dependencies": ["torch"]},
    "sources": [{"path": "main.py", "content": SOLUTION_SOURCE}],
}

TRACE = {
    "definition": "rmsnorm_h128",
    "workload": WORKLOAD["workload"],
    "solution": "rmsnorm_h128_torch",
    "evaluation": {
        "status": "PASSED",
        "log": "",
        "correctness": {"max_absolute_error": 0.0, "max_relative_error": 0.0},
        "performance": {"latency_ms": 0.02, "reference_latency_ms": 0.05, "speedup_factor": 2.5},
        "environment": {"hardware": "test_cpu", "libs": {"torch": "2.13.0"}},
        "timestamp": "2026-11-21T10:00:00Z",
    },
}

MODEL = {"model": "test/model", "framework": "SGLang", "kernels": [{"id": "rmsnorm_h128", "count": 3}]}

HARDWARE = {"name": "test_cpu", "kind": "cpu", "peak_tflops": {"float32": 1.0}, "memory_bandwidth_gb_s": 50.0,
            "source": "made up for tests"}

AGENT_TRACE = {"model": "some-llm", "annotation": "wrote the baseline",
               "conversation": [{"role": "user", "content": "write rmsnorm"},
                                {"role": "assistant", "content": "done"}]}

EINSUM = (
    "workload:\n"
    "  rank_sizes: {B: {{ batch_size }}, H: {{ hidden_size }}}\n"
    "  einsums:\n"
    "  - name: Square\n"
    "    tensor_accesses:\n"
    "    - {name: input, projection: [b, h]}\n"
    "    - {name: output, projection: [b, h], output: true}\n"
    "    - {name: weight, projection: [h]}\n"
    "    - {name: eps, projection: []}\n"
)


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A minimal safetensors file: {key: (dtype code, shape)} with zero-filled data."""
    sizes = {"F16": 2, "F32": 4, "BF16": 2, "I32": 4, "I64": 8, "U8": 1, "I8": 1, "BOOL": 1}
    header, offset = {}, 0
    for key, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for s in shape:
            n *= s
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def dump(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def dump_lines(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_dataset(root: Path, **override) -> Path:
    """Write the good dataset under `root`; keyword overrides replace whole records
    (definition=..., workloads=[...], solution=..., traces=[...], model=..., hardware=...,
    agent_trace=..., einsum=...). Returns root."""
    def pick(key, default):
        return copy.deepcopy(override.get(key, default))

    dump(root / "definitions/norm/rmsnorm_h128.json", pick("definition", DEFINITION))
    dump_lines(root / "workloads/norm/rmsnorm_h128.jsonl", pick("workloads", [WORKLOAD, BLOB_WORKLOAD, *MORE_WORKLOADS]))
    blob = root / "blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(safetensors_bytes({"input": ("F16", [2, 128])}))
    dump(root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json", pick("solution", SOLUTION))
    dump_lines(root / "traces/baseline/norm/rmsnorm_h128.jsonl", pick("traces", [TRACE]))
    dump(root / "models/test-model.json", pick("model", MODEL))
    dump(root / "hardware/test_cpu.json", pick("hardware", HARDWARE))
    dump(root / "agent_traces/baseline/rmsnorm_h128_torch.json", pick("agent_trace", AGENT_TRACE))
    einsum = root / "einsums/norm/rmsnorm_h128.yaml"
    einsum.parent.mkdir(parents=True, exist_ok=True)
    einsum.write_text(override.get("einsum", EINSUM), encoding="utf-8")
    return root
