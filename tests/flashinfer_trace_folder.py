"""FlashInfer-Trace folders written by flashinfer-bench 0.1.2 itself (its pydantic models and
JSON writers), in each layout and vocabulary its datasets have had.

One definition per op_type of the public FlashInfer-Trace dataset (gqa_paged, gqa_ragged,
rmsnorm, gdn, mla_paged, mla_ragged, dsa_paged, mamba_ssu, gemm, moe, sampling), tags in its
namespaces (fi_api:, gpu:, layout:, routing:, sparse:, quant:), two workloads each (paged
indices as safetensors blobs where flashinfer-bench puts them), solutions by an agent whose
folder is not its author's name, and traces carrying reference_latency_ms / speedup_factor.
Tensors are tiny: the point is the format.

Layouts (what TraceSet.from_path reads; it globs each folder recursively):
  by_author   definitions/<op_type>/<def>.json   solutions/<folder>/<op_type>/<def>/<sol>.json
              traces/<folder>/<op_type>/<def>.jsonl
  by_op_type  solutions/<op_type>/<def>/<sol>.json   traces/<op_type>/<def>.jsonl  (TraceSet.add_traces)
  flat        definitions/<def>.json  workloads/<def>.jsonl  solutions/<sol>.json  traces/<def>.jsonl
Vocabulary: "op_type" (0.1.x) or "older" (the field was `type`; flashinfer-bench 0.1.2 cannot read it).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import torch
from flashinfer_bench.data import (
    AxisConst,
    AxisVar,
    BuildSpec,
    Correctness,
    Definition,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    RandomInput,
    SafetensorsInput,
    ScalarInput,
    Solution,
    SourceFile,
    TensorSpec,
    Trace,
    Workload,
    save_json_file,
    save_jsonl_file,
)
from safetensors.torch import save_file

LAYOUTS = ("by_author", "by_op_type", "flat")
VOCABULARIES = ("op_type", "older")
AUTHOR, AUTHOR_FOLDER = "gpt-5.2", "gpt-5.2_n"  # an agent run's folder, named apart from its author


def _t(shape, dtype, description=None):
    return TensorSpec(shape=shape, dtype=dtype, description=description)


def _const(v):
    return AxisConst(value=v)


def _var(description=None):
    return AxisVar(description=description)


_PAGED_ATTENTION = '''import torch


def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
    batch_size, num_qo_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    group = num_qo_heads // num_kv_heads
    output = torch.zeros_like(q)
    lse = torch.zeros((batch_size, num_qo_heads), dtype=torch.float32, device=q.device)
    for b in range(batch_size):
        pages = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()
        k = k_cache[pages].reshape(-1, num_kv_heads, head_dim).float()
        v = v_cache[pages].reshape(-1, num_kv_heads, head_dim).float()
        for h in range(num_qo_heads):
            logits = (k[:, h // group] @ q[b, h].float()) * sm_scale
            lse[b, h] = torch.logsumexp(logits, dim=0) / torch.log(torch.tensor(2.0))
            output[b, h] = (torch.softmax(logits, dim=0) @ v[:, h // group]).to(q.dtype)
    return output, lse
'''

_RAGGED_ATTENTION = '''import torch


def run(q, k, v, qo_indptr, kv_indptr, sm_scale):
    output = torch.zeros_like(q)
    group = q.shape[1] // k.shape[1]
    for b in range(qo_indptr.shape[0] - 1):
        qs = q[int(qo_indptr[b]):int(qo_indptr[b + 1])].float()
        ks = k[int(kv_indptr[b]):int(kv_indptr[b + 1])].float()
        vs = v[int(kv_indptr[b]):int(kv_indptr[b + 1])].float()
        for h in range(q.shape[1]):
            logits = (qs[:, h] @ ks[:, h // group].T) * sm_scale
            output[int(qo_indptr[b]):int(qo_indptr[b + 1]), h] = (torch.softmax(logits, dim=-1) @ vs[:, h // group]).to(q.dtype)
    return output
'''

_MLA_PAGED = '''import torch


def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, sm_scale):
    output = torch.zeros_like(q_nope)
    for b in range(q_nope.shape[0]):
        pages = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()
        ckv = ckv_cache[pages].reshape(-1, ckv_cache.shape[-1]).float()
        kpe = kpe_cache[pages].reshape(-1, kpe_cache.shape[-1]).float()
        logits = (q_nope[b].float() @ ckv.T + q_pe[b].float() @ kpe.T) * sm_scale
        output[b] = (torch.softmax(logits, dim=-1) @ ckv).to(q_nope.dtype)
    return output
'''

_DSA = '''import torch


def run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
    ckv_all = ckv_cache.reshape(-1, ckv_cache.shape[-1]).float()
    kpe_all = kpe_cache.reshape(-1, kpe_cache.shape[-1]).float()
    output = torch.zeros_like(q_nope)
    for t in range(q_nope.shape[0]):
        rows = sparse_indices[t].long()
        ckv, kpe = ckv_all[rows], kpe_all[rows]
        logits = (q_nope[t].float() @ ckv.T + q_pe[t].float() @ kpe.T) * sm_scale
        output[t] = (torch.softmax(logits, dim=-1) @ ckv).to(q_nope.dtype)
    return output
'''

_GDN = '''import torch


def run(q, k, v, g, beta, state):
    new_state = state.float().clone()
    output = torch.zeros_like(v)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = new_state[b, h] * torch.exp(g[b, h].float())
            kk, vv = k[b, h].float(), v[b, h].float()
            s = s + beta[b, h].float() * torch.outer(kk, vv - kk @ s)
            new_state[b, h] = s
            output[b, h] = (q[b, h].float() @ s).to(v.dtype)
    return output, new_state
'''

_MAMBA = '''import torch


def run(state, x, dt, A, B, C, D):
    dA = torch.exp(dt.float()[:, :, None, None] * A.float()[None, :, None, None])
    dBx = dt.float()[:, :, None, None] * x.float()[:, :, :, None] * B.float()[:, None, None, :]
    new_state = state.float() * dA + dBx
    out = (new_state * C.float()[:, None, None, :]).sum(-1) + D.float()[None, :, None] * x.float()
    return out.to(x.dtype), new_state
'''

_RMSNORM = '''import torch


def run(hidden_states, weight):
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (x * inv_rms * weight.to(torch.float32)).to(hidden_states.dtype)
'''

_GEMM = '''import torch


def run(A, B):
    return (A.to(torch.float32) @ B.to(torch.float32).T).to(A.dtype)
'''

_MOE = '''import torch


def run(hidden_states, router_logits, w13, w2):
    weights, experts = torch.topk(torch.softmax(router_logits.float(), dim=-1), 2, dim=-1)
    output = torch.zeros_like(hidden_states, dtype=torch.float32)
    inter = w2.shape[2]
    for t in range(hidden_states.shape[0]):
        for j in range(2):
            e = int(experts[t, j])
            h = w13[e].float() @ hidden_states[t].float()
            act = h[:inter] * torch.sigmoid(h[:inter]) * h[inter:]
            output[t] += weights[t, j] * (w2[e].float() @ act)
    return output.to(hidden_states.dtype)
'''

_SAMPLING = '''import torch


def run(probs, top_k):
    samples = torch.zeros(probs.shape[0], dtype=torch.int64, device=probs.device)
    for b in range(probs.shape[0]):
        values, ids = torch.topk(probs[b].float(), int(top_k[b]))
        samples[b] = ids[torch.argmax(values)]
    return samples
'''


def _ragged(name: str, op_type: str, kv_heads: int, tags: list[str]) -> Definition:
    """Prefill attention over ragged (indptr-delimited) sequences, 4 query heads of 8."""
    bf16 = "bfloat16"
    return Definition(name=name, op_type=op_type, tags=tags,
                      axes={"total_q": _var(), "total_kv": _var(), "len_indptr": _var(), "num_qo_heads": _const(4),
                            "num_kv_heads": _const(kv_heads), "head_dim": _const(8)},
                      inputs={"q": _t(["total_q", "num_qo_heads", "head_dim"], bf16),
                              "k": _t(["total_kv", "num_kv_heads", "head_dim"], bf16),
                              "v": _t(["total_kv", "num_kv_heads", "head_dim"], bf16),
                              "qo_indptr": _t(["len_indptr"], "int32"), "kv_indptr": _t(["len_indptr"], "int32"),
                              "sm_scale": _t(None, "float32")},
                      outputs={"output": _t(["total_q", "num_qo_heads", "head_dim"], bf16)},
                      reference=_RAGGED_ATTENTION)


def definitions() -> list[Definition]:
    bf16, f32, i32 = "bfloat16", "float32", "int32"
    paged = dict(batch_size=_var(), num_pages=_var(), len_indptr=_var("Length of kv_indptr."),
                 num_kv_indices=_var("Total number of KV page indices."))
    return [
        Definition(name="gemm_n8_k16", op_type="gemm", tags=["status:reference", "fi_api:flashinfer.gemm.mm_bf16",
                                                             "gpu:H100"],
                   axes={"M": _var(), "N": _const(8), "K": _const(16)},
                   inputs={"A": _t(["M", "K"], bf16), "B": _t(["N", "K"], bf16)},
                   outputs={"C": _t(["M", "N"], bf16)}, reference=_GEMM),
        Definition(name="gqa_paged_decode_h4_kv2_d8_ps1", op_type="gqa_paged",
                   tags=["stage:decode", "status:reference", "model:qwen3-235b", "tp:4", "layout:NHD",
                         "fi_api:flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper"],
                   axes={**paged, "num_qo_heads": _const(4), "num_kv_heads": _const(2), "head_dim": _const(8),
                         "page_size": _const(1)},
                   constraints=["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
                   inputs={"q": _t(["batch_size", "num_qo_heads", "head_dim"], bf16),
                           "k_cache": _t(["num_pages", "page_size", "num_kv_heads", "head_dim"], bf16),
                           "v_cache": _t(["num_pages", "page_size", "num_kv_heads", "head_dim"], bf16),
                           "kv_indptr": _t(["len_indptr"], i32, "KV page offsets for each sequence."),
                           "kv_indices": _t(["num_kv_indices"], i32, "Page IDs for the KV cache lookups."),
                           "sm_scale": _t(None, f32, "Softmax scale.")},
                   outputs={"output": _t(["batch_size", "num_qo_heads", "head_dim"], bf16),
                            "lse": _t(["batch_size", "num_qo_heads"], f32, "Log-sum-exp, base 2.")},
                   reference=_PAGED_ATTENTION),
        _ragged("gqa_ragged_prefill_h4_kv2_d8", "gqa_ragged", 2,
                ["stage:prefill", "status:reference", "fi_api:flashinfer.prefill.BatchPrefillWithRaggedKVCacheWrapper"]),
        Definition(name="rmsnorm_h16", op_type="rmsnorm",
                   tags=["status:reference", "fi_api:flashinfer.norm.rmsnorm", "quant:none"],
                   axes={"batch_size": _var(), "hidden_size": _const(16)},
                   inputs={"hidden_states": _t(["batch_size", "hidden_size"], bf16),
                           "weight": _t(["hidden_size"], bf16)},
                   outputs={"output": _t(["batch_size", "hidden_size"], bf16)}, reference=_RMSNORM),
        Definition(name="gdn_decode_h2_d8", op_type="gdn", tags=["stage:decode", "status:reference"],
                   axes={"batch_size": _var(), "num_heads": _const(2), "head_dim": _const(8)},
                   inputs={"q": _t(["batch_size", "num_heads", "head_dim"], bf16),
                           "k": _t(["batch_size", "num_heads", "head_dim"], bf16),
                           "v": _t(["batch_size", "num_heads", "head_dim"], bf16),
                           "g": _t(["batch_size", "num_heads"], f32, "Log of the state's decay gate."),
                           "beta": _t(["batch_size", "num_heads"], f32, "Delta-rule write strength."),
                           "state": _t(["batch_size", "num_heads", "head_dim", "head_dim"], f32)},
                   outputs={"output": _t(["batch_size", "num_heads", "head_dim"], bf16),
                            "new_state": _t(["batch_size", "num_heads", "head_dim", "head_dim"], f32)},
                   reference=_GDN),
        Definition(name="mla_paged_decode_h4_ckv16_kpe8_ps1", op_type="mla_paged",
                   tags=["stage:decode", "status:reference", "model:deepseek-v3"],
                   axes={**paged, "num_qo_heads": _const(4), "head_dim_ckv": _const(16), "head_dim_kpe": _const(8),
                         "page_size": _const(1)},
                   constraints=["len_indptr == batch_size + 1"],
                   inputs={"q_nope": _t(["batch_size", "num_qo_heads", "head_dim_ckv"], bf16),
                           "q_pe": _t(["batch_size", "num_qo_heads", "head_dim_kpe"], bf16),
                           "ckv_cache": _t(["num_pages", "page_size", "head_dim_ckv"], bf16),
                           "kpe_cache": _t(["num_pages", "page_size", "head_dim_kpe"], bf16),
                           "kv_indptr": _t(["len_indptr"], i32), "kv_indices": _t(["num_kv_indices"], i32),
                           "sm_scale": _t(None, f32)},
                   outputs={"output": _t(["batch_size", "num_qo_heads", "head_dim_ckv"], bf16)},
                   reference=_MLA_PAGED),
        _ragged("mla_ragged_prefill_h4_d8", "mla_ragged", 4, ["stage:prefill", "status:reference"]),
        Definition(name="dsa_sparse_attention_h4_ckv16_kpe8_topk2_ps1", op_type="dsa_paged",
                   tags=["stage:decode", "status:reference", "sparse:topk", "model:deepseek-v3.2"],
                   axes={"num_tokens": _var(), "num_pages": _var(), "num_qo_heads": _const(4),
                         "head_dim_ckv": _const(16), "head_dim_kpe": _const(8), "page_size": _const(1),
                         "topk": _const(2)},
                   inputs={"q_nope": _t(["num_tokens", "num_qo_heads", "head_dim_ckv"], bf16),
                           "q_pe": _t(["num_tokens", "num_qo_heads", "head_dim_kpe"], bf16),
                           "ckv_cache": _t(["num_pages", "page_size", "head_dim_ckv"], bf16),
                           "kpe_cache": _t(["num_pages", "page_size", "head_dim_kpe"], bf16),
                           "sparse_indices": _t(["num_tokens", "topk"], i32),
                           "sm_scale": _t(None, f32)},
                   outputs={"output": _t(["num_tokens", "num_qo_heads", "head_dim_ckv"], bf16)},
                   reference=_DSA),
        Definition(name="mamba_ssu_decode_h2_d4_s8", op_type="mamba_ssu", tags=["stage:decode", "status:reference"],
                   axes={"batch_size": _var(), "num_heads": _const(2), "head_dim": _const(4), "state_dim": _const(8)},
                   inputs={"state": _t(["batch_size", "num_heads", "head_dim", "state_dim"], f32),
                           "x": _t(["batch_size", "num_heads", "head_dim"], bf16),
                           "dt": _t(["batch_size", "num_heads"], f32), "A": _t(["num_heads"], f32),
                           "B": _t(["batch_size", "state_dim"], bf16), "C": _t(["batch_size", "state_dim"], bf16),
                           "D": _t(["num_heads"], f32)},
                   outputs={"out": _t(["batch_size", "num_heads", "head_dim"], bf16),
                            "new_state": _t(["batch_size", "num_heads", "head_dim", "state_dim"], f32)},
                   reference=_MAMBA),
        Definition(name="moe_topk2_e4_h8_i16", op_type="moe", tags=["status:reference", "routing:softmax_topk", "ep:1"],
                   axes={"num_tokens": _var(), "num_experts": _const(4), "hidden_size": _const(8),
                         "gate_up_size": _const(32), "intermediate_size": _const(16)},
                   constraints=["gate_up_size == 2 * intermediate_size"],
                   inputs={"hidden_states": _t(["num_tokens", "hidden_size"], bf16),
                           "router_logits": _t(["num_tokens", "num_experts"], f32),
                           "w13": _t(["num_experts", "gate_up_size", "hidden_size"], bf16),
                           "w2": _t(["num_experts", "hidden_size", "intermediate_size"], bf16)},
                   outputs={"output": _t(["num_tokens", "hidden_size"], bf16)}, reference=_MOE),
        Definition(name="top_k_sampling_v32", op_type="sampling", tags=["status:reference"],
                   axes={"batch_size": _var(), "vocab_size": _const(32)},
                   inputs={"probs": _t(["batch_size", "vocab_size"], f32), "top_k": _t(["batch_size"], i32)},
                   outputs={"samples": _t(["batch_size"], "int64")}, reference=_SAMPLING),
    ]


def _sizes(d: Definition, n: int) -> dict[str, int]:
    """Var axes of a workload of size n (1 or 2) that satisfies the definition's constraints."""
    sizes = {}
    for name, axis in d.axes.items():
        if isinstance(axis, AxisVar):
            sizes[name] = n
    if "len_indptr" in sizes:
        sizes["len_indptr"] = sizes.get("batch_size", n) + 1
    if "num_kv_indices" in sizes:
        sizes["num_kv_indices"] = 2 * sizes["batch_size"]
    if "num_pages" in sizes:
        sizes["num_pages"] = 4
    if "total_kv" in sizes:
        sizes["total_kv"] = 2 * n
    return sizes


def workloads(root: Path, d: Definition, layout: str) -> list[Trace]:
    """Two workload lines; index inputs are blobs at flashinfer-bench's own blob path."""
    out = []
    for n in (1, 2):
        uuid = f"{zlib.crc32(d.name.encode()):08x}-{n:04d}"
        sizes = _sizes(d, n)
        inputs, blobs = {}, {}
        for name, spec in d.inputs.items():
            if spec.shape is None:
                inputs[name] = ScalarInput(value=0.125)
            elif name in ("kv_indptr", "qo_indptr"):
                step = 2 if name == "kv_indptr" else 1  # kv: two pages or rows per sequence; q: one row
                blobs[name] = torch.arange(0, sizes["len_indptr"] * step, step, dtype=torch.int32)
            elif name == "kv_indices":
                blobs[name] = torch.arange(sizes["num_kv_indices"], dtype=torch.int32) % sizes["num_pages"]
            else:
                inputs[name] = RandomInput()
        if blobs:
            rel = f"blob/workloads/{d.op_type}/{d.name}/{d.name}_{uuid}.safetensors"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            save_file(blobs, str(root / rel))
            for name in blobs:
                inputs[name] = SafetensorsInput(path=rel, tensor_key=name)
        inputs = {k: inputs[k] for k in d.inputs}
        out.append(Trace(definition=d.name, workload=Workload(axes=sizes, inputs=inputs, uuid=uuid)))
    return out


def solutions() -> list[Solution]:
    return [
        Solution(name="gemm_n8_k16_agent", definition="gemm_n8_k16", author=AUTHOR,
                 spec=BuildSpec(language="python", target_hardware=["cpu"], entry_point="main.py::run",
                                destination_passing_style=False),
                 sources=[SourceFile(path="main.py", content="import torch\n\n\ndef run(A, B):\n"
                                                             "    return (A.float() @ B.float().T).to(A.dtype)\n")]),
        # destination_passing_style left out: flashinfer-bench's default (true) applies
        Solution(name="rmsnorm_h16_agent", definition="rmsnorm_h16", author=AUTHOR,
                 spec=BuildSpec(language="python", target_hardware=["cpu"], entry_point="main.py::run"),
                 sources=[SourceFile(path="main.py", content=(
                     "import torch\n\n\ndef run(hidden_states, weight, output):\n"
                     "    x = hidden_states.float()\n"
                     "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight.float()\n"
                     "    output.copy_(y.to(output.dtype))\n"))]),
    ]


def traces(wl: dict[str, list[Trace]]) -> list[Trace]:
    out = []
    for s in solutions():
        for i, w in enumerate(wl[s.definition]):
            ev = Evaluation(status=EvaluationStatus.PASSED, environment=Environment(hardware="NVIDIA_H100",
                                                                                     libs={"torch": "2.8.0"}),
                            timestamp=f"2026-01-0{i + 1}T10:00:00.000001", log="",
                            correctness=Correctness(max_relative_error=1e-3, max_absolute_error=1e-4),
                            performance=Performance(latency_ms=0.01 * (i + 1), reference_latency_ms=0.03 * (i + 1),
                                                    speedup_factor=3.0))
            out.append(Trace(definition=s.definition, workload=w.workload, solution=s.name, evaluation=ev))
    return out


def write(root: Path, layout: str = "by_op_type", vocabulary: str = "op_type") -> dict[str, int]:
    """Write the folder; the counts of each record kind."""
    defs = definitions()
    by_name = {d.name: d for d in defs}
    wl: dict[str, list[Trace]] = {}
    for d in defs:
        place = f"{d.op_type}/{d.name}" if layout != "flat" else d.name
        save_json_file(d, root / f"definitions/{place}.json")
        wl[d.name] = workloads(root, d, layout)
        save_jsonl_file(wl[d.name], root / f"workloads/{place}.jsonl")
    for s in solutions():
        d = by_name[s.definition]
        where = {"by_author": f"{AUTHOR_FOLDER}/{d.op_type}/{d.name}/{s.name}",
                 "by_op_type": f"{d.op_type}/{d.name}/{s.name}", "flat": s.name}[layout]
        save_json_file(s, root / f"solutions/{where}.json")
    by_definition: dict[str, list[Trace]] = {}
    for t in traces(wl):
        by_definition.setdefault(t.definition, []).append(t)
    for name, ts in by_definition.items():
        d = by_name[name]
        where = {"by_author": f"{AUTHOR_FOLDER}/{d.op_type}/{name}", "by_op_type": f"{d.op_type}/{name}",
                 "flat": name}[layout]
        save_jsonl_file(ts, root / f"traces/{where}.jsonl")
    if vocabulary == "older":
        for path in (root / "definitions").rglob("*.json"):
            doc = json.loads(path.read_text())
            path.write_text(json.dumps({("type" if k == "op_type" else k): v for k, v in doc.items()}, indent=2))
    return {"definitions": len(defs), "workloads": sum(map(len, wl.values())), "solutions": len(solutions()),
            "traces": sum(map(len, by_definition.values()))}
