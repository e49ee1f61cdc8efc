"""Every definition's bench check bites: wrong answers of three kinds fail it.

For each definition of the bundled dataset, on the bench's own inputs (make_inputs, a dataset
workload; const axes shrunk so that one call's inputs fit MAX_CALL_BYTES), the reference's outputs are
compared by the bench's compare() with
- all zeros,
- an input passed through (an input of the output's shape, or the first input's values laid out in it),
- the reference run on inputs with one kernel-specific mistake: a dropped dequantisation scale, a
  dropped last page (or KV token), the wrong EP rank's experts, a dropped norm weight, or the last
  eighth of the largest input's last dimension left out (a missed remainder loop).
Sampling definitions are checked the way the bench checks them: draws against draws.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from generator.bench.check import compare, compare_samples
from generator.bench.inputs import make_inputs
from generator.bench.plan import call_bytes
from generator.load import load

DATASET = Path(__file__).resolve().parent.parent / "dataset"
_DS = load(DATASET)
NAMES = sorted(_DS.definitions)

# Const axes made smaller where one call at the real sizes needs hundreds of MB (the references'
# code reads sizes from the tensors; block counts follow their sizes). Every variant is still checked:
# zeros and a passed-through input do not depend on a width, and the kernel-specific mistake (a dropped
# scale, the wrong experts, a cut remainder of the last dimension) is made on the shrunk tensors alike.
# Each input has its own generator (make_inputs), so ids, routing and indptrs are the real workload's.
SHRINK = {
    "grouped_gemm_e128_n1536_k2048": {"N": 128, "K": 256},
    "grouped_gemm_e128_n2048_k768": {"N": 128, "K": 256},
    "grouped_gemm_e128_n2048_k192": {"N": 512},
    "grouped_gemm_e128_n384_k2048": {"K": 256},
    "grouped_gemm_e512_n256_k2048": {"K": 128},
    "grouped_gemm_e512_n2048_k128": {"N": 128},
    "grouped_gemm_n4096_k4096": {"N": 256, "K": 512},
    "quantized_grouped_gemm_n4096_k4096_kg128": {"N": 256},  # K real: its FP8 scales are drawn with the data's block grid
    # 128-wide weight blocks: N and K shrink by whole blocks.
    "grouped_gemm_fp8_block128_sorted_e384_n256_k7168": {"K": 512, "num_k_blocks": 4},
    # MXFP4: K (with its packed bytes and 32-wide scale blocks) real; N interleaves gate and linear (I = N / 2).
    "grouped_gemm_mxfp4_swiglu_e128_n5760_k2880": {"N": 256, "I": 128},
    "grouped_gemm_mxfp4_scatter_e128_n2880_k2880": {"N": 256},
    # Index heads only add terms to each logit (a weighted sum over heads): 8 of 64 check the same, the
    # real 8192 x 8192 ragged prefill kept (its ks/ke ranges are the workload's).
    "dsa_indexer_logits_ragged_prefill_h64_d128": {"num_index_heads": 8},
    "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048": {
        "hidden_size": 512, "intermediate_size": 256, "gemm1_out_size": 512, "num_hidden_blocks": 4,
        "num_intermediate_blocks": 2, "num_gemm1_out_blocks": 4},
}


def shrunk(name: str, axes: dict) -> dict:
    """The SHRINK entry, or a family's rule: plain GEMMs keep K and get N = 256 (the wide lm_head ones
    are 100k+); embeddings keep the vocabulary (the ids index it) and get hidden_size = 128; the sorted
    FP8 grouped GEMMs get N = 256 (two 128-wide blocks)."""
    if name in SHRINK:
        return SHRINK[name]
    value = {n: a.get("value") for n, a in axes.items()}
    if name.startswith("gemm_n") and value.get("N", 0) > 256:
        return {"N": 256}
    if name.startswith("embedding_") and value.get("hidden_size", 0) > 128:
        return {"hidden_size": 128}
    if name.startswith("grouped_gemm_fp8_block128_sorted") and value.get("N", 0) > 256:
        return {"N": 256, "num_n_blocks": 2}
    return {}


# Every chosen call (inputs and outputs) must fit this after shrinking, so that the file stays within
# the test suite's memory budget; a new definition over it needs a SHRINK entry or a family rule. The
# largest left are the DSA indexer's prefill logits (num_q x num_k, from its workload) and the Gemma 3
# rope caches, both about 64 MiB.
MAX_CALL_BYTES = 72 * 2**20
SAMPLING_DRAWS = 64


def definition_dict(name: str) -> dict:
    d = copy.deepcopy(_DS.definitions[name].data)
    for axis, value in shrunk(name, d["axes"]).items():
        d["axes"][axis]["value"] = value
    return d


def small_paged_workload(d: dict, w: dict) -> dict:
    """The real paged workloads hold thousands of pages: two sequences of 3 and 5 pages (pages in
    reverse order), the last one half full; for prefill, 2 and 3 new tokens at their ends."""
    ps = d["axes"]["page_size"]["value"]
    w = copy.deepcopy(w)
    pages, last = [3, 5], [ps, max(1, ps // 2)]
    w["axes"].update(batch_size=2, num_pages=sum(pages) + 2, len_indptr=3, num_kv_indices=sum(pages))
    w["inputs"]["kv_indptr"] = {"type": "tensor", "value": [0, pages[0], sum(pages)]}
    w["inputs"]["kv_indices"] = {"type": "tensor", "value": list(range(sum(pages), 0, -1))}
    w["inputs"]["kv_last_page_len"] = {"type": "tensor", "value": last}
    if "qo_indptr" in d["inputs"]:
        w["axes"]["total_q"] = 5
        w["inputs"]["qo_indptr"] = {"type": "tensor", "value": [0, 2, 5]}
    return w


def workload_for(name: str, d: dict) -> dict:
    ws = sorted(_DS.workloads_by_definition[name], key=lambda w: (call_bytes(_DS.definitions[name], w), w.uuid))
    if name.startswith("moe_fp8"):  # enough tokens that some pick a local expert
        ws = sorted(ws, key=lambda w: abs(int(w.axes["seq_len"]) - 32))
    w = ws[0].data["workload"]
    if "kv_indices" in d["inputs"]:
        w = small_paged_workload(d, w)
    return w


def inputs_of(d: dict, w: dict) -> dict:
    explicit = {k: v for k, v in w["inputs"].items() if v.get("type") == "tensor"}
    if not explicit:
        return make_inputs(d, w, DATASET, 0, "cpu")
    from generator.bench.inputs import TORCH_DTYPES

    base = copy.deepcopy(w)
    for k in explicit:
        base["inputs"][k] = {"type": "random"}
    x = make_inputs(d, base, DATASET, 0, "cpu")
    for k, v in explicit.items():
        x[k] = torch.tensor(v["value"], dtype=TORCH_DTYPES[d["inputs"][k]["dtype"]])
    return x


def run_reference(d: dict, inputs: dict) -> dict:
    ns: dict = {"__name__": "reference"}
    exec(compile(d["reference"], d["name"], "exec"), ns)
    with torch.no_grad():
        out = ns["run"](*inputs.values())
    names = list(d["outputs"])
    if isinstance(out, dict):
        return out
    if isinstance(out, (tuple, list)):
        return dict(zip(names, out))
    return {names[0]: out}


def perturbed(d: dict, x: dict) -> tuple[str, dict]:
    """The kernel-specific mistake for this definition, as changed inputs to the reference."""
    x = dict(x)
    names = list(d["inputs"])
    if "local_expert_offset" in x:
        local = d["axes"]["num_local_experts"]["value"]
        total = d["axes"]["num_experts"]["value"]
        off = x["local_expert_offset"]
        x["local_expert_offset"] = ((int(off) + local) % total if not isinstance(off, torch.Tensor)
                                    else (off + local) % total)
        return "the wrong EP rank's experts", x
    scales = [n for n in names if "scale" in n and isinstance(x[n], torch.Tensor) and x[n].is_floating_point()
              and x[n].numel() > 1]
    if scales:
        x[scales[-1]] = torch.ones_like(x[scales[-1]])
        return f"dropped scale {scales[-1]}", x
    if "kv_indptr" in x:
        indptr = x["kv_indptr"].clone()
        if "kv_last_page_len" in x and int(indptr[-1] - indptr[-2]) > 1:
            indptr[-1] -= 1
            x["kv_indptr"] = indptr
            if "kv_last_page_len" in x:
                last = x["kv_last_page_len"].clone()
                last[-1] = d["axes"]["page_size"]["value"] if "page_size" in d["axes"] else 1
                x["kv_last_page_len"] = last
            return "dropped the last page", x
        indptr[-1] -= 1
        x["kv_indptr"] = indptr
        return "dropped the last KV token", x
    if d["type"] == "routing":
        logits = names[0]
        x[logits] = torch.roll(x[logits], 1, dims=-1)
        return "expert ids off by one", x
    if "weight" in x and "rmsnorm" in d["name"]:
        x["weight"] = torch.ones_like(x["weight"])
        return "dropped the norm weight", x
    tensors = [n for n in names if isinstance(x[n], torch.Tensor) and x[n].is_floating_point() and x[n].dim() >= 2]
    if not tensors:
        return "no float input to cut short", None
    largest = max(tensors, key=lambda n: x[n].numel())
    t = x[largest].clone()
    t[..., -max(1, t.shape[-1] // 8):] = 0
    x[largest] = t
    return f"the last eighth of {largest}'s last dimension left out (a missed remainder loop)", x


def passed_through(d: dict, x: dict, axes: dict) -> dict:
    out = {}
    tensors = [v for v in x.values() if isinstance(v, torch.Tensor) and v.numel()]
    for name, spec in d["outputs"].items():
        from generator.bench.inputs import TORCH_DTYPES

        shape = tuple(int(axes[a]) for a in spec["shape"])
        dtype = TORCH_DTYPES[spec["dtype"]]
        same = [t for t in tensors if tuple(t.shape) == shape]
        src = same[0] if same else tensors[0].reshape(-1)
        n = 1
        for s in shape:
            n *= s
        flat = src.reshape(-1).float()
        flat = flat.repeat(n // max(flat.numel(), 1) + 1)[:n]
        out[name] = flat.reshape(shape).to(dtype)
    return out


# Wrong answers the check does NOT catch on the bench's inputs for these definitions, each for a stated
# reason. The test asserts they still pass the check, so an entry goes (and the check is enforced again)
# the day the workloads or the check change; nothing here is skipped silently.
_SHARD_ZEROS = ("observed on the chosen workload, cause not yet confirmed: likely token ids outside this vocab shard "
                "(zero rows in the reference); needs ids drawn inside the shard")
_SORTED_ZEROS = ("observed on the chosen (shrunk) workload, cause not yet confirmed: likely no sorted pair routed to "
                 "this rank's experts, so every output row is zero")
_PEAKED = ("peaked (power-law) next-token probs: 64 draws concentrate on the top token, so this variant's draws "
           "look like the reference's; needs more draws or a flatter set")
KNOWN_GAPS = {
    **{n: {"an input passed through": "an all-gather's answer is its input laid out whole (a pure copy)"}
       for n in NAMES if n.startswith("allgather_")},
    **{n: {"all zeros": _SHARD_ZEROS,
           "the last eighth of weight's last dimension left out (a missed remainder loop)": _SHARD_ZEROS}
       for n in ("embedding_scaled_v131104_h5376", "embedding_v10240_h7168",
                                                "embedding_v16160_h7168", "embedding_v37984_h2048",
                                                "embedding_v8080_h7168")},
    **{n: {"all zeros": _SORTED_ZEROS, "dropped scale B_scale": _SORTED_ZEROS} for n in (
        "grouped_gemm_fp8_block128_sorted_e16_n4096_k7168", "grouped_gemm_fp8_block128_sorted_e32_n4096_k7168",
        "grouped_gemm_fp8_block128_sorted_weighted_e16_n7168_k2048",
        "grouped_gemm_fp8_block128_sorted_weighted_e32_n7168_k2048")},
    **{n: {"the last eighth of cos_sin_cache's last dimension left out (a missed remainder loop)":
           "observed on the chosen workload, cause not yet confirmed (the cut columns change q, k by less than "
           "the tolerance there)"}
       for n in ("rope_llama3_h16_kv2_d128", "rope_llama3_h8_kv1_d128")},
    **{n: {"greedy": _PEAKED, "top-k filter dropped": _PEAKED} for n in (
        "top_k_sampling_from_probs_v128256", "top_k_top_p_sampling_from_probs_v128256",
        "top_k_top_p_sampling_from_probs_v262208")},
    "top_p_sampling_from_probs_v128256": {"greedy": _PEAKED},
    **{n: {"top-k filter dropped": _PEAKED} for n in (
        "top_k_sampling_from_probs_v151936", "top_k_top_p_joint_sampling_from_probs_v129280",
        "top_k_top_p_sampling_from_probs_v131072", "top_k_top_p_sampling_from_probs_v151936")},
}


def assert_caught(name: str, label: str, caught: bool) -> None:
    gap = KNOWN_GAPS.get(name, {}).get(label)
    if gap is None:
        assert caught, f"{name}: {label} passes the check"
    else:
        assert not caught, f"{name}: {label} is caught now: remove its KNOWN_GAPS entry ({gap})"


@pytest.mark.parametrize("name", NAMES)
def test_wrong_variants_fail_the_check(name):
    d = definition_dict(name)
    w = workload_for(name, d)
    axes = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"}
    axes.update(w["axes"])
    x = inputs_of(d, w)
    size = sum(v.numel() * v.element_size() for v in x.values() if isinstance(v, torch.Tensor))
    assert size <= MAX_CALL_BYTES, f"{name}: {size / 2**20:.0f} MiB of inputs: add a SHRINK entry"
    what, bad_inputs = perturbed(d, x)
    if d["type"] == "sampling":
        torch.manual_seed(0)
        ref = [run_reference(d, x) for _ in range(SAMPLING_DRAWS)]
        out = next(iter(d["outputs"]))
        probs = x.get("probs")
        zeros = [{out: torch.zeros_like(r[out])} for r in ref]
        greedy = [{out: probs.argmax(-1).to(ref[0][out].dtype)} for _ in ref]
        unfiltered = [{out: torch.multinomial(probs.float(), 1).squeeze(-1).to(ref[0][out].dtype)} for _ in ref]
        variants = [("all zeros", zeros), ("greedy", greedy)]
        if "top_k" in d["inputs"]:
            # Dropping a top-p filter alone is not detectable this way: with p in [0.5, 1) over 128k
            # tokens, 64 draws from the nucleus and from the whole distribution look alike.
            variants.append(("top-k filter dropped", unfiltered))
        for label, draws in variants:
            assert_caught(name, label, not compare_samples(d, draws, ref, probs).ok)
        return
    expected = run_reference(d, x)
    assert compare(d, expected, expected, axes).ok
    variants = {"all zeros": {k: torch.zeros_like(v) for k, v in expected.items()},
                "an input passed through": passed_through(d, x, axes)}
    if bad_inputs is not None:  # kernels with only integer inputs (sorts, alignments) have no such mistake
        variants[what] = run_reference(d, bad_inputs)
    for label, outputs in variants.items():
        assert_caught(name, label, not compare(d, outputs, expected, axes).ok)
