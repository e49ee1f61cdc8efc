"""Every definition's bench check bites: wrong answers of three kinds fail it.

For each definition of the bundled dataset (one of siblings that differ only in const-axis values: CHECKED), on the
bench's own inputs (make_inputs, a dataset workload; const axes shrunk so that one call's inputs fit MAX_CALL_BYTES),
the reference's outputs are compared by the bench's compare() with
- all zeros,
- an input passed through (an input of the output's shape, or the first input's values laid out in it),
- the reference run on inputs with one kernel-specific mistake: a dropped dequantisation scale, a
  dropped last page (or KV token), the wrong EP rank's experts, a dropped norm weight, or the last
  eighth of the largest input's last dimension left out (a missed remainder loop).
Sampling definitions are checked the way the bench checks them: SAMPLING_DRAWS draws of a wrong sampler
(all zeros, greedy, the top-k filter dropped) against SAMPLING_DRAWS draws of the reference on one input
set, by compare_samples (the support check of the definition's filters, then a two-sample chi-square).
An all-gather's answer is its input laid out whole: there, an input passed through IS the expected output
(asserted bit for bit, and not counted as a wrong answer).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from generator.bench.shared.inputs import make_inputs
from generator.bench.trusted.check import SAMPLING_DRAWS, Verdict, check_support, compare, compare_samples
from generator.bench.trusted.plan import call_bytes
from generator.load import load

from reference_check import SIBLING_OF

DATASET = Path(__file__).resolve().parents[2] / "dataset"
_DS = load(DATASET)
NAMES = sorted(_DS.definitions)


def _sampler_key(name: str) -> tuple:
    """A sampler's kind and reference, its vocabulary size written out of both."""
    d = _DS.definitions[name].data
    vocab = str(d["axes"]["vocab_size"]["value"])
    return (name.rsplit("_v", 1)[0], d["reference"].replace(vocab, "<V>"), tuple(d["inputs"]), tuple(d["outputs"]))


# Samplers that differ from another only in the vocabulary size (the same reference with another constant):
# their wrong variants are checked once, on the smallest vocabulary of the group, since the check is the same
# (and each costs SAMPLING_DRAWS real draws over a vocabulary of 128k-262k). The groups are recomputed from
# the references, so a sampler whose reference differs in anything but that constant is checked on its own.
# The logits processors of every vocabulary (tests/reference_cases/logits_vocab.py) likewise: one reference per kernel.
VOCAB_SIBLINGS = ("logits_penalties_v", "min_p_logits_v", "apply_token_bitmask_v")
_SAMPLERS = sorted((n for n in NAMES if _DS.definitions[n].type == "sampling" or n.startswith(VOCAB_SIBLINGS)),
                   key=lambda n: (_DS.definitions[n].data["axes"]["vocab_size"]["value"], n))
SAMPLER_TWIN: dict[str, str] = {}  # name -> the sampler checked for it
for _name in _SAMPLERS:
    SAMPLER_TWIN[_name] = next((m for m in _SAMPLERS if _sampler_key(m) == _sampler_key(_name)), _name)
# Siblings (the same reference text, input and output specs and independent check, differing only in const-axis
# values: tests/reference_check.SIBLING_OF) are the same code under the same check: their wrong variants are checked
# once, on the sibling with the smallest const axes, as test_references.py runs every input set only there.
CHECKED = [n for n in NAMES if SAMPLER_TWIN.get(n, n) == n and (n in SAMPLER_TWIN or SIBLING_OF.get(n, n) == n)]

# Const axes made smaller where one call at the real sizes needs hundreds of MB (the references'
# code reads sizes from the tensors; block counts follow their sizes). Every variant is still checked:
# zeros and a passed-through input do not depend on a width, and the kernel-specific mistake (a dropped
# scale, the wrong experts, a cut remainder of the last dimension) is made on the shrunk tensors alike.
# Each input has its own generator (make_inputs), so ids, routing and indptrs are the real workload's.
SHRINK = {
    "grouped_gemm_e128_n2048_k192": {"N": 512},
    "grouped_gemm_e128_n384_k2048": {"K": 256},
    "grouped_gemm_e512_n256_k2048": {"K": 128},
    "grouped_gemm_e512_n2048_k128": {"N": 128},
    "grouped_gemm_n4096_k4096": {"N": 256, "K": 512},
    "grouped_gemm_e16_n5120_k1024": {"N": 512},
    "grouped_gemm_weighted_e16_n2048_k5120": {"K": 512},
    # Per-channel FP8 (one scale per row of the whole K): N or K shrink freely, the scales follow the rows.
    "grouped_gemm_fp8_rowwise_sorted_e160_n384_k5120": {"N": 128, "K": 256},
    "grouped_gemm_fp8_rowwise_sorted_weighted_e160_n5120_k192": {"N": 256},
    **{name: {"N": 256} for name in ("gemm_fp8_rowwise_bias_n1792_k5120", "gemm_fp8_rowwise_n5120_k192")},
    "quantized_grouped_gemm_n4096_k4096_kg128": {"N": 256},  # K real: its FP8 scales are drawn with the data's block grid
    # 128-wide weight blocks: N and K shrink by whole blocks.
    "grouped_gemm_fp8_block128_sorted_e384_n256_k7168": {"K": 512, "num_k_blocks": 4},
    # MXFP4: K (with its packed bytes and 32-wide scale blocks) real; N interleaves gate and linear (I = N / 2).
    "grouped_gemm_mxfp4_swiglu_e32_n5760_k2880": {"N": 256, "I": 128},
    "grouped_gemm_mxfp4_scatter_e32_n2880_k2880": {"N": 256},
    # Index heads only add terms to each logit (a weighted sum over heads): 8 of 64 check the same, the
    # real 8192 x 8192 ragged prefill kept (its ks/ke ranges are the workload's).
    "dsa_indexer_logits_ragged_prefill_h64_d128": {"num_index_heads": 8},
    "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048": {
        "hidden_size": 512, "intermediate_size": 256, "gemm1_out_size": 512, "num_hidden_blocks": 4,
        "num_intermediate_blocks": 2, "num_gemm1_out_blocks": 4},
    # The other fused FP8 MoEs likewise (two 128-blocks of hidden, one or two of intermediate): every expert of
    # the real count holds weights, so the 384-expert layer keeps one intermediate block to stay under the bound.
    "moe_fp8_block_scale_ds_routing_topk8_ng1_kg1_e384_h7168_i2048": {
        "hidden_size": 256, "intermediate_size": 128, "gemm1_out_size": 256, "num_hidden_blocks": 2,
        "num_intermediate_blocks": 1, "num_gemm1_out_blocks": 2},
    **{name: {"hidden_size": 256, "intermediate_size": 256, "gemm1_out_size": 512, "num_hidden_blocks": 2,
              "num_intermediate_blocks": 2, "num_gemm1_out_blocks": 4}
       for name in ("moe_fp8_block_scale_ds_routing_topk8_ng1_kg1_e48_h7168_i2048",
                    "moe_fp8_block_scale_renorm_topk8_e128_h2048_i768", "moe_fp8_block_scale_renorm_topk10_e128_h2048_i512")},
    # The TRT-LLM fused MoEs (reference_cases/trtllm_moe_variants.py): hidden 256 and intermediate 64 (two or more
    # 32-wide e8m0 blocks a row; hidden_states the largest float input, whose cut-short last eighth must fail),
    # the real expert counts and top k.
    **{f"{kind}_topk{k}_e{e}_h{h}_i{i}": {"hidden_size": 256, "intermediate_size": 64, "gemm1_out_size": 128,
                                            **({} if kind.startswith("trtllm_fp8") else {
                                                "hidden_size_packed": 128, "num_hidden_blocks": 8,
                                                "intermediate_size_packed": 32, "num_intermediate_blocks": 2})}
       for kind in ("trtllm_fp4_block_scale_moe", "trtllm_fp4_block_scale_routed_moe", "trtllm_fp8_per_tensor_scale_moe")
       for k, e, h, i in ((10, 128, 2048, 512), (1, 128, 5120, 8192), (1, 16, 5120, 8192), (8, 128, 2048, 768),
                          (8, 64, 4096, 1536))
       if not (kind.startswith("trtllm_fp8") and (k, e) in ((10, 128), (8, 64)))},
    # The NVFP4 MoE (reference_cases/fp4_moe.py): whole 128-row scale tiles of w13 and w2, 4-column tiles of their
    # scales; the real 32 local experts of 256 (the routing blobs index them).
    "moe_nvfp4_routed_topk8_e32_h7168_i2048": {
        "hidden_size": 256, "hidden_packed": 128, "hidden_sf": 16, "intermediate_size": 128, "gemm1_out_size": 256,
        "intermediate_packed": 64, "intermediate_sf": 8},
    # The MXFP4 x MXFP8 MoEs of gpt-oss (fp4_moe.py): hidden and intermediate to 128 (four 32-value scale blocks),
    # the real expert counts (the routing picks among them).
    "trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072": {
        "hidden_size": 128, "hidden_packed": 64, "hidden_sf": 4, "intermediate_size": 128, "gemm1_out_size": 256,
        "intermediate_packed": 64, "intermediate_sf": 4},
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
    q = int(w["axes"].get("num_verify_tokens", 0))  # a speculative verify step: q tokens per sequence
    if q and ps == 1:  # at page size 1 the sequences hold 3 and 5 context tokens behind their q verify tokens
        pages = [q + 3, q + 5]
    if "tree_mask" in d["inputs"]:  # the verify tokens' trees: a chain in sequence 0, the root's q - 1 children in 1
        w["inputs"]["tree_mask"] = {"type": "tensor", "value": [[[j <= i for j in range(q)] for i in range(q)],
                                                                [[j in (0, i) for j in range(q)] for i in range(q)]]}
    w["axes"].update(batch_size=2, num_pages=sum(pages) + 2, len_indptr=3, num_kv_indices=sum(pages))
    w["inputs"]["kv_indptr"] = {"type": "tensor", "value": [0, pages[0], sum(pages)]}
    w["inputs"]["kv_indices"] = {"type": "tensor", "value": list(range(sum(pages), 0, -1))}
    w["inputs"]["kv_last_page_len"] = {"type": "tensor", "value": last}
    if "shared_kv_indices" in d["inputs"]:  # a cascade's shared prefix: the two pages the sequences leave free
        w["axes"]["num_shared_pages"] = 2
        w["inputs"]["shared_kv_indices"] = {"type": "tensor", "value": [sum(pages) + 1, 0]}
    if "qo_indptr" in d["inputs"]:
        w["axes"]["total_q"] = 5
        w["inputs"]["qo_indptr"] = {"type": "tensor", "value": [0, 2, 5]}
    return w


def filters_active(d: dict, w: dict, which: str) -> bool:
    """Whether some row of the workload has the sampling filter `which` (top_k / top_p) set."""
    if which not in d["inputs"]:
        return False
    x = make_inputs({**d, "inputs": {which: d["inputs"][which]}},
                    {**w, "inputs": {which: w["inputs"][which]}}, DATASET, 0, "cpu")
    v = x[which]
    return bool((v < d["axes"]["vocab_size"]["value"]).any() if which == "top_k" else (v < 1.0).any())


def workload_for(name: str, d: dict) -> dict:
    ws = sorted(_DS.workloads_by_definition[name], key=lambda w: (call_bytes(_DS.definitions[name], w), w.uuid))
    if name.startswith("moe_fp8"):  # enough tokens that some pick a local expert
        ws = sorted(ws, key=lambda w: abs(int(w.axes["seq_len"]) - 32))
    if "vocab_start" in d["inputs"]:  # a shard with tokens of its own and of other shards (two or more tokens)
        ws = [w for w in ws if int(w.axes["num_tokens"]) >= 2]
    if "top_k" in d["inputs"]:
        # The smallest workload where top-k is set on some row: where every row has top_k = vocab_size
        # ("not set"), dropping the filter changes nothing, so it cannot show a dropped top-k.
        ws = [w for w in ws if filters_active(d, w.data["workload"], "top_k")]
    if "draft_token_ids" in d["inputs"]:
        # Rejection sampling: one request reads a few probabilities at its drafts and one row at its stop, which need
        # not touch the last eighth of the vocabulary (a missed remainder); among 8 requests' reads some do.
        # A greedy-draft sampler reads no draft row: its stop-row draw lands in the last eighth for about one request
        # in eight, so it takes 16 requests or more.
        ws = [w for w in ws if int(w.axes["batch_size"]) >= (8 if "draft_probs" in d["inputs"] else 16)]
    if "has_initial_state" in d["inputs"] and "initial_state" in d["outputs"]:
        # A state gather (gdn_state_gather_*): where every sequence is a fresh prompt the answer is all zeros, which
        # cannot tell a zero output from a right one; the smallest workload with a continued sequence.
        ws = [w for w in ws if some_inputs(d, w.data["workload"], ("has_initial_state",), 0)["has_initial_state"].any()]
    w = ws[0].data["workload"]
    if "kv_indices" in d["inputs"]:
        w = small_paged_workload(d, w)
    return w


def inputs_of(d: dict, w: dict) -> dict:
    explicit = {k: v for k, v in w["inputs"].items() if v.get("type") == "tensor"}
    if not explicit:
        return make_inputs(d, w, DATASET, 0, "cpu")
    from generator.bench.shared.inputs import TORCH_DTYPES

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
    # Where every expert is local (expert parallelism 1) there is no other rank: a dropped scale below instead.
    if "local_expert_offset" in x and d["axes"]["num_local_experts"]["value"] < d["axes"]["num_experts"]["value"]:
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
        if "bitmatrix" in d["outputs"]:
            # A bit matrix does not depend on the order of a token's slots (rolling them is no mistake): the
            # ids themselves off by one instead (a cyclic shift over 0..max keeps a token's ids distinct).
            x[logits] = (x[logits] + 1) % (int(x[logits].max()) + 1)
            return "expert ids off by one", x
        x[logits] = torch.roll(x[logits], 1, dims=-1)
        return "expert ids off by one", x
    if "weight" in x and "rmsnorm" in d["name"]:
        x["weight"] = torch.ones_like(x["weight"])
        return "dropped the norm weight", x
    tensors = [n for n in names if isinstance(x[n], torch.Tensor) and x[n].is_floating_point() and x[n].dim() >= 2]
    if not tensors:
        return "no float input to cut short", None
    largest = max(tensors, key=lambda n: x[n].numel())
    if "cos_sin" in largest:
        # A RoPE cache's last columns are the sines of the lowest frequencies: at the positions of a short
        # step (0..127 in the Llama-3 prefill workloads) they are below 1e-3, so zeroing them alone moves no
        # output past bf16 rounding (no wrong answer there). A kernel whose head_dim loop stops an eighth
        # short leaves out the last eighth of every head: of q, k and the cache alike.
        for n in tensors:
            t = x[n].clone()
            t[..., -max(1, t.shape[-1] // 8):] = 0
            x[n] = t
        return f"the last eighth of head_dim left out of {', '.join(tensors)} (a missed remainder loop)", x
    t = x[largest].clone()
    t[..., -max(1, t.shape[-1] // 8):] = 0
    x[largest] = t
    return f"the last eighth of {largest}'s last dimension left out (a missed remainder loop)", x


def passed_through(d: dict, x: dict, axes: dict) -> dict:
    out = {}
    tensors = [v for v in x.values() if isinstance(v, torch.Tensor) and v.numel()]
    for name, spec in d["outputs"].items():
        from generator.bench.shared.inputs import TORCH_DTYPES

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
# the day the workloads or the check change; nothing here is skipped silently. Empty: every variant of
# every definition is caught.
KNOWN_GAPS: dict[str, dict[str, str]] = {}

# Definitions whose answer is an input laid out whole (an all-gather concatenates the ranks' shards; on the
# chosen batch-1 workload the shards' bytes in order ARE the gathered row). "An input passed through" is
# then the right answer, not a wrong one: the test asserts it equals the expected output bit for bit (so
# the case still proves something: the reference is a pure copy) instead of expecting the check to fail it.
# A dtype cast (bfloat16 -> float32, exact) likewise: its answer is its input's values.
PASS_THROUGH_IS_ANSWER = {n for n in NAMES if n.startswith(("allgather_", "cast_to_"))}


def assert_caught(name: str, label: str, caught: bool) -> None:
    gap = KNOWN_GAPS.get(name, {}).get(label)
    if gap is None:
        assert caught, f"{name}: {label} passes the check"
    else:
        assert not caught, f"{name}: {label} is caught now: remove its KNOWN_GAPS entry ({gap})"


def test_every_shrink_entry_is_a_checked_definition():
    """A sibling's wrong variants run on its representative: an entry for another definition would never apply."""
    assert not set(SHRINK) - set(CHECKED), sorted(set(SHRINK) - set(CHECKED))


def test_every_sampler_is_checked_itself_or_through_a_twin_with_the_same_reference():
    groups = {}
    for name, twin in SAMPLER_TWIN.items():
        assert _sampler_key(name) == _sampler_key(twin) and twin in CHECKED, name
        groups.setdefault(twin, []).append(name)
    assert len(groups) < len(SAMPLER_TWIN), "no two samplers share a reference: drop SAMPLER_TWIN"


@pytest.mark.parametrize("name", CHECKED)
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
        check_sampling(name, d, x, w)
        return
    expected = run_reference(d, x)
    assert compare(d, expected, expected, axes).ok
    variants = {"all zeros": {k: torch.zeros_like(v) for k, v in expected.items()},
                "an input passed through": passed_through(d, x, axes)}
    if name in PASS_THROUGH_IS_ANSWER:  # not a wrong answer here: the very bytes expected (see above)
        copy_ = variants.pop("an input passed through")
        assert all(torch.equal(copy_[k], expected[k]) for k in expected), f"{name}: the pass-through is not the answer"
    if bad_inputs is not None:  # kernels with only integer inputs (sorts, alignments) have no such mistake
        variants[what] = run_reference(d, bad_inputs)
    if "vocab_start" in x:  # a vocabulary shard: the tokens of other shards must come out as zero rows
        start, shard = int(x["vocab_start"]), d["axes"]["vocab_shard"]["value"]
        ids = x["input_ids"]
        mine = (ids >= start) & (ids < start + shard)
        assert mine.any() and not mine.all(), f"{name}: the workload needs tokens in the shard and outside it"
        unmasked = dict(x, input_ids=torch.where(mine, ids, torch.full_like(ids, start)))
        variants["tokens of other shards not zeroed (they read row 0)"] = run_reference(d, unmasked)
    for label, outputs in variants.items():
        assert_caught(name, label, not compare(d, outputs, expected, axes).ok)


def some_inputs(d: dict, w: dict, names: tuple, seed: int) -> dict:
    """Only these inputs of the workload (the index inputs: no large weight drawn), with this seed."""
    part = {**d, "inputs": {n: d["inputs"][n] for n in names}}
    return make_inputs(part, {**w, "inputs": {n: w["inputs"][n] for n in names}}, DATASET, 0, "cpu", seed=seed)


SEEDS = (0, 1, 7, 123456789)  # the bench draws from a secret per-run seed: the index inputs must not depend on it


@pytest.mark.parametrize("name", [n for n in NAMES if "vocab_start" in _DS.definitions[n].data["inputs"]])
def test_every_vocabulary_shard_workload_has_tokens_in_the_shard(name):
    """All-zeros is a right answer for a shard that holds none of the step's tokens: every workload has
    tokens in its shard, and (with two or more tokens) tokens of other shards (zero rows), for any seed."""
    d = _DS.definitions[name].data
    shard = d["axes"]["vocab_shard"]["value"]
    for wl in _DS.workloads_by_definition[name]:
        w = wl.data["workload"]
        for seed in SEEDS:
            x = some_inputs(d, w, ("input_ids", "vocab_start"), seed)
            start = int(x["vocab_start"])
            mine = (x["input_ids"] >= start) & (x["input_ids"] < start + shard)
            assert mine.any(), f"{name} {w['uuid']} seed {seed}: no token in [{start}, {start + shard})"
            assert len(mine) == 1 or not mine.all(), f"{name} {w['uuid']} seed {seed}: no token of another shard"


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("grouped_gemm_fp8_block128_sorted")])
def test_every_sorted_grouped_gemm_workload_routes_pairs_to_the_rank(name):
    """All-zeros is a right answer for an EP rank that none of the step's pairs is routed to: every
    workload has real (non-padding) sorted rows in blocks of a local expert, and every local expert block
    in use holds at least one real row, for any seed."""
    d = _DS.definitions[name].data
    names = ("sorted_token_ids", "expert_ids", "num_tokens_post_padded", "block_size")
    for wl in _DS.workloads_by_definition[name]:
        w = wl.data["workload"]
        pairs = int(w["axes"]["num_pairs"])
        for seed in SEEDS:
            x = some_inputs(d, w, names, seed)
            bs, total = int(x["block_size"]), int(x["num_tokens_post_padded"])
            rows = x["sorted_token_ids"][:total].reshape(-1, bs)
            local = x["expert_ids"][:total // bs] >= 0
            real = (rows < pairs).any(1)
            assert (local & real).any(), f"{name} {w['uuid']} seed {seed}: no pair routed to this rank"
            assert real[local].all(), f"{name} {w['uuid']} seed {seed}: a local expert block with no pair"


# --------------------------------------------------------------------------------------------------
# Sampling: draws against draws, as the bench compares them
# --------------------------------------------------------------------------------------------------

def draws_of(fn, n: int = SAMPLING_DRAWS) -> list[dict]:
    return [fn() for _ in range(n)]


def top_k_kept(probs: torch.Tensor, top_k: torch.Tensor) -> torch.Tensor:
    """probs with every token below its row's k-th largest zeroed (ties at the pivot kept)."""
    k = top_k.long().clamp(1, probs.shape[-1])
    pivot = torch.sort(probs, -1, descending=True).values.gather(1, (k - 1)[:, None])
    return torch.where(probs >= pivot, probs, torch.zeros_like(probs))


# The bench compares a sampler on every batch of SAMPLING_DRAWS calls, each batch on a fresh input set, and
# checks every draw's support (check_support); the test follows the first batch with this many more.
LATER_SETS = 3


def check_sampling(name: str, d: dict, x: dict, w: dict) -> None:
    """SAMPLING_DRAWS reference draws (the real reference, seeded) against SAMPLING_DRAWS draws of each
    wrong sampler on the first input set, through compare_samples with the call's inputs, as the bench's
    first batch. The workload (workload_for) has top-k set on some row where the definition has top_k:
    the smallest such (batch 1 with top_k 40 in this dataset); its top_p is 1.0 ("not set"), so a
    dropped top-p is checked in test_support_check_catches_a_dropped_top_p, on the smallest workload
    where it is set.

    A greedy sampler (and all zeros) must fail the first batch. A dropped top-k may pass one batch: on a
    row as peaked as power_law_probs draws them (exponent up to 2.5) the tokens past the 40th hold as
    little as 0.2% of the mass (input set 0 here), so SAMPLING_DRAWS draws of the unfiltered row often
    hold none of them and look like the reference's; the bench's later batches (fresh input sets, every
    draw support-checked) catch it, and so must LATER_SETS of them here."""
    out = next(iter(d["outputs"]))
    torch.manual_seed(0)
    ref = draws_of(lambda: run_reference(d, x))
    dtype = ref[0][out].dtype
    for r in ref:  # no false alarm on the reference's own draws
        assert check_support(d, r, x).ok, f"{name}: a reference draw fails the support check"
    half = SAMPLING_DRAWS // 2
    assert compare_samples(d, ref[:half], ref[half:], x).ok, f"{name}: the reference's draws fail against each other"

    def greedy(inputs):
        return {out: inputs["probs"].argmax(-1).to(dtype)}

    def unfiltered(inputs):
        return {out: torch.multinomial(inputs["probs"].float(), 1).squeeze(-1).to(dtype)}

    def zeros(inputs):
        return {out: torch.zeros_like(ref[0][out])}

    variants = [("all zeros", zeros), ("greedy", greedy)]
    if "top_k" in d["inputs"]:
        variants.append(("top-k filter dropped", unfiltered))
    later = [make_inputs(d, w, DATASET, i, "cpu") for i in range(1, LATER_SETS + 1)] if "top_k" in d["inputs"] else []
    for label, sampler in variants:
        caught = not compare_samples(d, draws_of(lambda: sampler(x)), ref, x).ok
        if not caught and label == "top-k filter dropped":
            caught = any(not check_support(d, sampler(xi), xi).ok for xi in later for _ in range(SAMPLING_DRAWS))
        assert_caught(name, label, caught)


@pytest.mark.parametrize("name", [n for n in CHECKED if "top_p" in _DS.definitions[n].data["inputs"]])
def test_support_check_catches_a_dropped_top_p(name):
    """On the smallest workload where top-p is set on some row: the reference's draws pass the support
    check, and a sampler that applies top-k (where the definition has it) but drops top-p is caught by it
    within SAMPLING_DRAWS draws (one bench batch), for several input seeds."""
    d = definition_dict(name)
    ws = sorted(_DS.workloads_by_definition[name], key=lambda w: (call_bytes(_DS.definitions[name], w), w.uuid))
    w = next(wl.data["workload"] for wl in ws if filters_active(d, wl.data["workload"], "top_p"))
    out = next(iter(d["outputs"]))
    torch.manual_seed(0)
    for seed in SEEDS[:2]:
        x = make_inputs(d, w, DATASET, 0, "cpu", seed=seed)
        assert check_support(d, run_reference(d, x), x).ok, f"{name}: a reference draw fails the support check"
        kept = top_k_kept(x["probs"].float(), x["top_k"]) if "top_k" in x else x["probs"].float()
        draws = (torch.multinomial(kept, SAMPLING_DRAWS, replacement=True).t()).to(torch.int64)
        caught = [not check_support(d, {out: row}, x).ok for row in draws]
        assert any(caught), f"{name} seed {seed}: a dropped top-p passes {SAMPLING_DRAWS} support checks"


# --------------------------------------------------------------------------------------------------
# The support check's rules and compare_samples on bad output, on small hand-made rows
# --------------------------------------------------------------------------------------------------

def sampler(name: str, vocab: int, inputs: tuple = ("probs", "top_k", "top_p")) -> dict:
    specs = {"probs": {"shape": ["batch_size", "vocab_size"], "dtype": "float32"},
             "top_k": {"shape": ["batch_size"], "dtype": "int32"}, "top_p": {"shape": ["batch_size"], "dtype": "float32"}}
    return {"name": name, "type": "sampling", "inputs": {n: specs[n] for n in inputs},
            "axes": {"batch_size": {"type": "var"}, "vocab_size": {"type": "const", "value": vocab}},
            "outputs": {"samples": {"shape": ["batch_size"], "dtype": "int64"}}}


def ok(d, ids, x) -> bool:
    return check_support(d, {"samples": torch.tensor(ids, dtype=torch.int64)}, x).ok


def test_support_check_top_k_is_by_rank_with_ties_at_the_pivot_kept():
    d = sampler("top_k_sampling_from_probs_v6", 6, ("probs", "top_k"))
    probs = torch.tensor([[0.4, 0.2, 0.2, 0.1, 0.1, 0.0]])
    x = {"probs": probs, "top_k": torch.tensor([2], dtype=torch.int32)}
    assert ok(d, [0], x) and ok(d, [1], x) and ok(d, [2], x)  # 0.2 ties the 2nd largest: both kept
    assert not ok(d, [3], x)
    assert not ok(d, [5], x) and not ok(d, [6], x) and not ok(d, [-1], x)  # probability 0, out of range
    x["top_k"] = torch.tensor([6], dtype=torch.int32)  # vocab_size: not set
    assert ok(d, [4], x) and not ok(d, [5], x)
    x["top_k"][0] = 1  # changed in place: the rules of the input set are worked out again, not reused
    assert ok(d, [0], x) and not ok(d, [1], x)


def test_support_check_top_p_keeps_a_superset_of_the_nucleus():
    d = sampler("top_p_sampling_from_probs_v5", 5, ("probs", "top_p"))
    probs = torch.tensor([[0.5, 0.25, 0.125, 0.0625, 0.0625]])
    x = {"probs": probs, "top_p": torch.tensor([0.7])}  # mass before: 0, 0.5, 0.75, ...
    assert ok(d, [0], x) and ok(d, [1], x) and not ok(d, [2], x)
    x["top_p"] = torch.tensor([0.748])  # mass before token 2 is 0.75: out, past the slack (1e-3) too
    assert not ok(d, [2], x)
    x["top_p"] = torch.tensor([0.7495])  # within the slack for float sums: kept (a superset)
    assert ok(d, [2], x)
    x["top_p"] = torch.tensor([0.8])  # token 3 and 4 tie: mass strictly before either is 0.875: both out
    assert ok(d, [2], x) and not ok(d, [3], x) and not ok(d, [4], x)
    x["top_p"] = torch.tensor([0.9])  # either tie may come first in the reference's sort: both kept
    assert ok(d, [3], x) and ok(d, [4], x)


def test_support_check_knows_the_order_of_top_k_and_top_p():
    probs = torch.tensor([[0.4, 0.3, 0.2, 0.1]])
    x = {"probs": probs, "top_k": torch.tensor([2], dtype=torch.int32), "top_p": torch.tensor([0.5])}
    # Top-k first, renormalised (0.4, 0.3) / 0.7: the mass before token 1 is 0.57 >= 0.5: only token 0.
    seq = sampler("top_k_top_p_sampling_from_probs_v4", 4)
    assert ok(seq, [0], x) and not ok(seq, [1], x)
    # Joint, on the raw row: the mass before token 1 is 0.4 < 0.5: kept; token 2 is past top-k.
    joint = sampler("top_k_top_p_joint_sampling_from_probs_v4", 4)
    assert ok(joint, [0], x) and ok(joint, [1], x) and not ok(joint, [2], x)


def test_compare_samples_fails_bad_solution_output_and_never_raises():
    d = sampler("top_k_sampling_from_probs_v6", 6, ("probs", "top_k"))
    x = {"probs": torch.tensor([[0.4, 0.2, 0.2, 0.1, 0.1, 0.0]] * 3), "top_k": torch.tensor([6, 6, 6], dtype=torch.int32)}
    g = torch.Generator().manual_seed(0)
    ref = [{"samples": torch.multinomial(x["probs"], 1, generator=g).squeeze(1)} for _ in range(200)]
    same = [{"samples": torch.multinomial(x["probs"], 1, generator=g).squeeze(1)} for _ in range(200)]
    assert compare_samples(d, same, ref, x).ok

    class Sub(torch.Tensor):
        pass

    bad = {
        "INCORRECT_SHAPE": [{"samples": torch.zeros(2, dtype=torch.int64)}, {"samples": torch.zeros(3, 1, dtype=torch.int64)},
                            {"other": ref[0]["samples"]}, None],
        "INCORRECT_DTYPE": [{"samples": torch.zeros(3, dtype=torch.int32)}, {"samples": torch.zeros(3)}],
        "REWARD_HACK": [{"samples": [0, 1, 2]}, {"samples": ref[0]["samples"].as_subclass(Sub)}],
    }
    for status, outputs in bad.items():
        for o in outputs:
            for k in (0, 199):  # first or last draw wrong; the others right
                draws = list(same)
                draws[k] = o
                v = compare_samples(d, draws, ref, x)
                assert isinstance(v, Verdict) and v.status == status and v.message, (status, o, v)
                if isinstance(o, dict):
                    assert check_support(d, o, x).status == status
    assert compare_samples(d, [], ref, x).status == "INCORRECT_SHAPE"
    assert not compare_samples(d, [{"samples": torch.full((3,), 6, dtype=torch.int64)}] * 200, ref, x).ok  # out of range
