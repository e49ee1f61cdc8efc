"""Every definition's reference, and every baseline solution, checked on the CPU.

The references are the mathematical specification of the dataset, so they are checked here against
an *independent* formulation of the same mathematics (a different algorithm, float64, library calls
the references are not allowed to use), on several seeded input sets at small sizes of the var axes
(and of a few const axes where the check is the same at any size: see reference_cases.common.shrunk).
The baseline solutions are checked the same way and against the reference, on the same sets: the tests
of one definition run together and share its sets, which are dropped before the next definition's.
Siblings (definitions that differ only in const-axis values: the same reference text, input and output
specs and check, e.g. the GEMMs of every model) are the same code: each runs its first set at its own
constants, and the one with the smallest constants runs every set (SIBLING_OF).

The files are read with plain `json`, not with the project's loader, so that this test does not depend
on the generator package: it checks the data, not the code that reads it.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
import torch  # the test extra installs it; a missing torch must fail, not skip

from generator.model.contender_kinds import COMPILER_AUTHOR

from reference_cases import _MODULES, CASES
from reference_check import (
    DATASET,
    DEFINITION_FILES,
    SIBLING_OF,
    SOLUTION_FILES,
    WORKLOAD_FILES,
    InputSets,
    as_output_dict,
    assert_inputs_unchanged,
    assert_planted_mistake_fails,
    check_outputs,
    check_statistically,
    clone_inputs,
    exec_function,
    is_representative,
    load_definition,
    sibling_key,
)
from tolerances import SOLUTION_TOLERANCE


def python_solutions_of(name: str) -> list[Path]:
    return [path for path in SOLUTION_FILES if path.parent.name == name
            and json.loads(path.read_text(encoding="utf-8"))["spec"]["language"] == "python"
            and (path.parts[-4] != COMPILER_AUTHOR or name in COMPILED_SAMPLE)]


def _compiled_sample() -> set[str]:
    """The definitions whose generated torch.compile contender runs here: per definition type, the first (by name)
    that is its siblings' representative. A compiled contender is its reference's text and one compile line
    (`kerneltrace contenders --check` keeps it so), and one inductor compile costs seconds on the CPU: the run of
    every one is a bench command (`kerneltrace bench --device cpu --correctness-only --authors torch-compile`),
    not a test. The sample found the fused all-reduce + RMSNorm contenders wrong (contenders.compiler)."""
    first: dict[str, str] = {}
    for path in sorted(SOLUTION_FILES):
        if path.parts[-4] == COMPILER_AUTHOR and is_representative(path.parent.name):
            first.setdefault(path.parts[-3], path.parent.name)
    return set(first.values()) | ROUNDING_SENSITIVE


# Compiled contenders whose result depends on inductor keeping the reference's roundings (a bfloat16 residual sum
# before a norm: without emulate_precision_casts, max abs err 1.84 at scale 4.58), in the sample whatever their type.
ROUNDING_SENSITIVE = {"allreduce_fused_add_rmsnorm_tp2_h4096"}


COMPILED_SAMPLE = _compiled_sample()


def compiled_indices(d: dict, sizes: list[dict]) -> list[int]:
    """The one input set a compiled contender runs on: the last with no var axis of size 1. The test sets shrink
    const axes differently and start at a batch of 1, which TorchDynamo specialises, so each set of a definition
    was a compile of its own (up to three inductor compiles a contender, ~60 % of the sample's time); one graph
    traced with symbolic sizes on one set checks the compiled numerics, and the bench runs every workload."""
    var = {name for name, axis in d["axes"].items() if axis["type"] == "var"}
    plain = [i for i, s in enumerate(sizes) if all(v != 1 for name, v in s.items() if name in var)]
    return [(plain or list(range(len(sizes))))[-1]]


def python_sources(name: str) -> list[str]:
    """The sources of a definition's Python solutions, as comparable text."""
    return sorted(json.dumps(json.loads(p.read_text(encoding="utf-8"))["sources"], sort_keys=True)
                  for p in python_solutions_of(name))


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------

def test_dataset_has_definitions():
    assert DEFINITION_FILES, f"no definitions under {DATASET / 'definitions'}"


@pytest.mark.parametrize("path", DEFINITION_FILES, ids=lambda p: p.stem)
def test_reference_is_plain_step_by_step_pytorch(path):
    d = load_definition(path)
    assert d["name"] == path.stem and d["type"] == path.parent.name
    ref = d["reference"]
    assert "torch.nn.functional" not in ref and not re.search(r"\bF\.", ref), "the reference must not use F.*"
    run = exec_function(ref, f"{d['name']}.reference")
    assert list(inspect.signature(run).parameters) == list(d["inputs"]), \
        "run() must take the inputs in the order of 'inputs'"


# One intra-op thread for the whole module (conftest.one_torch_thread says why).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module", params=DEFINITION_FILES, ids=lambda p: p.stem)
def sets(request) -> InputSets:
    """One definition's input sets. pytest groups the tests that use a parametrized module-scoped
    fixture by its parameter and tears the instance down before the next one, so the reference checks
    and the solution checks of a definition share its sets, and the tensors alive at any time are one
    definition's (the suite once kept every definition's three sets to the end: about 10 GB)."""
    d = load_definition(request.param)
    # Every definition must be checked: a definition without an independent formulation fails.
    assert d["name"] in CASES, (
        f"no independent check for {d['name']} ({request.param.relative_to(DATASET.parent)}): add a Case to "
        f"CASES in the module of its model, one of tests/reference_cases/{{{','.join(_MODULES)}}}.py, or in a "
        "new tests/reference_cases/<model>.py (every module there that defines CASES is collected)")
    return InputSets(d)


def test_reference_matches_independent_formulation(sets):
    d, case = sets.definition, sets.case
    for index in sets.indices:
        axes, inputs, expected = sets[index]
        if case.check is not None:  # sampling: statistical check on repeated calls
            run = exec_function(d["reference"], f"{d['name']}.reference")
            check_statistically(run, d, axes, inputs, case, f"reference (set {index})")
            continue
        check_outputs(sets.reference_outputs(index), d, axes, expected, f"reference (set {index})")


def test_reference_runs_on_the_inputs_device(sets):
    """The reference on its first input set with every input on a second device, emulated on the CPU
    (tests/device_emulation.py): the same outputs, bit for bit, on that device."""
    from device_emulation import run_on_other_device

    d = sets.definition
    axes, inputs, _ = sets[0]
    plain = sets.reference_outputs(0) if sets.case.check is None else None  # a sampler draws: run it seeded
    run_on_other_device(d["reference"], d, axes, inputs, plain)


def test_siblings_differ_only_in_constants():
    """The grouping that lets a sibling run its first input set only: it bites on a changed reference."""
    gemms = [n for n in SIBLING_OF if n.startswith("gemm_n") and SIBLING_OF[n] != n]
    assert len(gemms) >= 20, "the GEMMs of the models are one sibling group"
    one = load_definition(next(p for p in DEFINITION_FILES if p.stem == gemms[0]))
    other = load_definition(next(p for p in DEFINITION_FILES if p.stem == SIBLING_OF[gemms[0]]))
    assert sibling_key(one) == sibling_key(other)
    assert one["axes"] != other["axes"]
    changed = {**one, "reference": one["reference"].replace("\n", "\n\n", 1)}
    assert sibling_key(changed) != sibling_key(other)


# Mistakes planted in references whose checks run at shrunk sizes, with the input sets that must catch them:
# the smaller sizes keep what each check is about (a partial last N block of scales, the sliding window's
# cut past position 1024, the N groups of scales, the top-p filter at the small vocabulary).
PLANTED = [
    ("gemm_fp8_block128_n2112_k7168", "repeat_interleave(block, dim=0)[:N]", "repeat_interleave(block, dim=0)[-N:]",
     [0, 1, 2]),
    ("gemm_fp8_block128_n4608_k7168", "b_scale[:, kb][None, :]", "b_scale[:, 0][None, :]", [0, 1, 2]),
    ("gqa_paged_prefill_causal_swa1024_h16_kv8_d128_ps16", "window = 1024", "window = 0", [2]),
    # The decode's window dropped: set 2 has sequences longer than 1024 keys.
    ("gqa_paged_decode_swa1024_h16_kv8_d128_ps16", "window = 1024", "window = 0", [2]),
    ("quantized_gemm_n4096_k4096_ng128_kg128", "B_scale.to(torch.float32).repeat_interleave(block_n, dim=0)",
     "B_scale.flip(0).to(torch.float32).repeat_interleave(block_n, dim=0)", [0, 1, 2]),
    ("top_p_sampling_from_probs_v128256", "mass_before < p)", "mass_before < 2.0)", [0, 1, 2]),
    # The renormalisation of the softmax top-k dropped (every set has a token with a local pick).
    ("moe_fp8_block_scale_renorm_topk8_e128_h2048_i768", "topk_weights = picked / picked.sum(dim=-1, keepdim=True)",
     "topk_weights = picked", [0, 1, 2]),
    # Every token of a GDN verify step decayed by the first token's gate.
    ("gdn_mtp_qk4_v8_d128", "S = S * torch.exp(g[:, t])", "S = S * torch.exp(g[:, 0])", [0, 1, 2]),
    # Qwen3-Next GDN glue (tests/reference_cases/qwen3_next_gdn_glue.py): q/k/v laid out per key-head group instead of
    # all q, all k, all v; v read from z's columns; b read from a's; fresh prompts' rows not zeroed; wrong slots written.
    ("gdn_qkvzba_split_h4_v8_d128", "torch.cat(q_parts + k_parts + v_parts, dim=1)",
     "torch.cat([p for h in range(num_k_heads) for p in (q_parts[h], k_parts[h], v_parts[h])], dim=1)", [0, 1, 2]),
    ("gdn_qkvzba_split_h4_v8_d128", "v_parts.append(group[:, 2 * head_k_dim:2 * head_k_dim + v_width])",
     "v_parts.append(group[:, 2 * head_k_dim + v_width:group_width])", [0, 1, 2]),
    ("gdn_qkvzba_split_h4_v8_d128", "b_parts.append(ba[:, 0:r])", "b_parts.append(ba[:, r:2 * r])", [0, 1, 2]),
    ("gdn_state_gather_v8_d128", "initial_state = torch.where(fresh[:, None, None, None], 0.0, initial_state)",
     "initial_state = initial_state", [0, 1, 2]),
    ("gdn_state_scatter_v8_d128", "index_copy(0, state_indices.to(torch.int64),",
     "index_copy(0, torch.arange(state_indices.shape[0]),", [0, 1, 2]),
    # pack_bitmatrix with the bits of a word in reversed order (bit 31 - e % 32 differs from bit e % 32 for any e).
    ("moe_pack_bitmatrix_e32_topk4", "<< (ids[:, k] % 32)", "<< (31 - ids[:, k] % 32)", [0, 1, 2]),
    # ... and expert e in word e % 4 instead of e // 32 (set 0's expert 31 lands in word 3; the larger sets hold
    # such ids too).
    ("moe_pack_bitmatrix_e128_topk4", "(ids[:, k] // 32) == w", "(ids[:, k] % 4) == w", [0, 1, 2]),
    # The serving families (reference_cases/serving_families.py): each entry says why the sets it names catch it.
    # The value scale dropped: every set has v_scale != 1.
    ("gqa_paged_decode_fp8kv_h32_kv8_d128_ps16", "contiguous_format) * v_scale", "contiguous_format)", [0, 1, 2]),
    # The key scale dropped: set 2 has k_scale = 1.0 (vLLM's value for a checkpoint without scales), where it is moot.
    ("gqa_paged_decode_fp8kv_h32_kv8_d128_ps16", "contiguous_format) * k_scale", "contiguous_format)", [0, 1]),
    # The base-2 lse merged in natural log: wrong wherever both parts carry weight (every set).
    ("merge_state_h32_d128", "s_merged = s_max + torch.log2(denom)", "s_merged = s_max + torch.log(denom)", [0, 1, 2]),
    # The parts' weights swapped: wrong unless the two lse are equal; set 2's are equal or one ulp apart (even
    # weights), where swapping them is harmless.
    ("merge_state_h32_d128", "v_a.to(torch.float32) * (w_a / denom)", "v_a.to(torch.float32) * (w_b / denom)",
     [0, 1]),
    # The prefix left out of the sequence's length: it attends to its first own_len tokens only.
    ("gqa_cascade_decode_h32_kv8_d128_ps16", "kv_len = shared.numel() * page_size + own_len", "kv_len = own_len",
     [0, 1, 2]),
    # The repetition penalty's two branches swapped (positive logits multiplied): every set has a seen token with a
    # positive logit in a row whose repetition penalty is not 1.
    ("logits_penalties_v128256", "torch.where(out > 0, out / r, out * r)", "torch.where(out > 0, out * r, out / r)",
     [0, 1, 2]),
    # The presence penalty charged for prompt tokens too: the prompts hold tokens the outputs do not (set 0's one
    # row, whose presence penalty is 0.5, included).
    ("logits_penalties_v128256", "presence_penalties.to(torch.float32)[:, None] * in_output.to(torch.float32)",
     "presence_penalties.to(torch.float32)[:, None] * seen.to(torch.float32)", [0, 1, 2]),
    # min_p taken as an absolute probability threshold instead of relative to the most likely token's.
    ("min_p_logits_v128256", "threshold = probs.max(dim=-1, keepdim=True).values * min_p.to(torch.float32)[:, None]",
     "threshold = min_p.to(torch.float32)[:, None]", [0, 1, 2]),
    # Ties with the threshold filtered too: only the min_p = 1.0 row (sets 1 and 2) keeps a token exactly at it.
    ("min_p_logits_v128256", "torch.where(probs < threshold,", "torch.where(probs <= threshold,", [1, 2]),
    # The grammar bitmask (reference_cases/logits_vocab.py). The bits of a word read from the most significant: every
    # set has a row with a mask other than all ones.
    ("apply_token_bitmask_v128256", "allowed = ((words >> (token % 32)) & 1) == 1",
     "allowed = ((words >> (31 - token % 32)) & 1) == 1", [0, 1, 2]),
    # The tokens of a last, partial word left unmasked: sets 1 and 2 (vocabularies of 1000 and 77) end inside a word;
    # set 0's 128256 does not.
    ("apply_token_bitmask_v128256", "allowed = ((words >> (token % 32)) & 1) == 1",
     "allowed = (((words >> (token % 32)) & 1) == 1) | (token >= vocab_size // 32 * 32)", [1, 2]),
    # Every row masked, not only those in indices: sets 1 and 2 have rows without a grammar (set 0's two rows both have one).
    ("apply_token_bitmask_v128256", "    structured[indices.to(torch.int64)] = True",
     "    structured[:] = True", [1, 2]),
    # Multi-LoRA (reference_cases/lora.py). The scaling dropped: sets 0 and 1 scale by 2.0 and 0.5; set 2 by 1.0 (what
    # vLLM passes, its scaling folded into lora_B), where dropping it is moot.
    ("lora_bgmv_shrink_s3_l4_r16_k4096", ") * scaling", ")", [0, 1]),
    ("lora_sgmv_shrink_s3_l4_r16_k4096", ") * scaling", ")", [0, 1]),
    ("lora_bgmv_shrink_s1_l4_r64_k14336", ") * scaling", ")", [0, 1]),
    # Slot -1 (no LoRA) read as adapter 0: every BGMV set has a token without a LoRA; the SGMV sets 1 and 2 have a
    # request without one (set 0 is one request with an adapter).
    ("lora_bgmv_shrink_s3_l4_r16_k4096", "(lora >= 0)[:, None, None]", "(lora >= -1)[:, None, None]", [0, 1, 2]),
    ("lora_bgmv_expand_s3_l4_r16_n6144", "(lora >= 0)[:, None], updated, y)", "(lora >= -1)[:, None], updated, y)",
     [0, 1, 2]),
    ("lora_sgmv_shrink_s3_l4_r16_k4096", "lora = int(seg_lora_indices[b])", "lora = max(int(seg_lora_indices[b]), 0)",
     [1, 2]),
    ("lora_sgmv_expand_s3_l4_r16_n6144", "lora = int(seg_lora_indices[b])", "lora = max(int(seg_lora_indices[b]), 0)",
     [1, 2]),
    # The wrong slice offset: v's update written at k's offset (k's lost), up's at gate's; every set has a token with
    # an adapter.
    ("lora_bgmv_expand_s3_l4_r16_n6144", "(q_size + kv_size, kv_size)", "(q_size, kv_size)", [0, 1, 2]),
    ("lora_sgmv_expand_s3_l4_r16_n6144", "(q_size + kv_size, kv_size)", "(q_size, kv_size)", [0, 1, 2]),
    ("lora_bgmv_expand_s2_l4_r64_n28672", "(slice_size, slice_size)]", "(0, slice_size)]", [0, 1, 2]),
    # The fused collectives (reference_cases/collective_fusion.py).
    # The residual left out of the norm (added after it: only residual_out carries it): every set.
    ("allreduce_fused_add_rmsnorm_tp4_h8192", "x = residual_out.to(torch.float32)", "x = allreduced.to(torch.float32)",
     [0, 1, 2]),
    # The sum over ranks missing the last rank: every set.
    ("allreduce_fused_add_rmsnorm_tp8_h8192", "for r in range(tp_size):", "for r in range(tp_size - 1):", [0, 1, 2]),
    # Multiplied by the FP8 scale instead of divided: every set (no scale is 1).
    ("allreduce_fused_add_rmsnorm_fp8_tp4_h8192", "inv_scale = 1.0 / torch.as_tensor(",
     "inv_scale = 1.0 * torch.as_tensor(", [0, 1, 2]),
    # The sources in the wrong order (the last rank's tokens first): every destination rank of every set receives
    # from two or more ranks.
    ("ep_dispatch_ep4_e128_topk8_h2048", "for src in range(ep_size):", "for src in reversed(range(ep_size)):",
     [0, 1, 2]),
    # The weights of picks on other ranks passed on instead of zeroed: every set sends a token with such a pick.
    ("ep_dispatch_ep4_e128_topk8_h2048",
     "torch.where(is_local, topk_weights[src], torch.zeros_like(topk_weights[src]))", "topk_weights[src]",
     [0, 1, 2]),
    # The last rank's rows left out of the combine: set 0's last rank receives nothing (no pick of the step is
    # there), where that is harmless.
    ("ep_combine_ep4_topk8_h2048", "for dst in range(ep_size):", "for dst in range(ep_size - 1):", [1, 2]),
    # The routing weights dropped (the picks' outputs summed unweighted): every set.
    ("ep_combine_ep4_topk8_h2048", " * recv_topk_weights.to(torch.float32)[:, :, None]", "", [0, 1, 2]),
    # Speculative decoding (reference_cases/specdec.py). The verify tokens aligned top-left, as if they were the
    # sequence's first tokens: set 0's one sequence has no context (kv_len == num_verify_tokens), where that is right.
    ("gqa_paged_verify_causal_h32_kv8_d128_ps16", "kv_len[seq][:, None] - num_verify_tokens + ",
     "0 * kv_len[seq][:, None] + ", [1, 2]),
    # No causal order among the verify tokens (each sees every draft): wrong for every token but the last.
    ("gqa_paged_verify_causal_h32_kv8_d128_ps16", "visible = (pos[:, None, :] <= q_pos[:, :, None])",
     "visible = (pos[:, None, :] < kv_len[seq][:, None, None] + 0 * q_pos[:, :, None])", [0, 1, 2]),
    # The tree mask transposed (a token sees its descendants instead of its ancestors): wrong in every set.
    ("gqa_paged_verify_tree_h32_kv8_d128_ps1", "in_tree = tree_mask[seq",
     "in_tree = tree_mask.transpose(1, 2)[seq", [0, 1, 2]),
    # The mask ignored for the causal one: right only for chains (set 2, top-1 drafting), wrong for branching trees.
    ("gqa_paged_verify_tree_h32_kv8_d128_ps1",
     "in_tree = tree_mask[seq[:, None, None], verify_token[None, :, None], node_in[:, None, :]]",
     "in_tree = node_in[:, None, :] <= verify_token[None, :, None]", [0, 1]),
    # FlashInfer's strict test (u * p_d < p_t) for vLLM's >=: set 2 has a ratio exactly u and a u = 0 with p_t = 0.
    ("chain_speculative_sampling_v128256", "(p_target / p_draft >= u)", "(p_target / p_draft > u)", [2]),
    # The draft probability 0 not rejected (p_t / 0 = inf accepts): set 2 has such a draft.
    ("chain_speculative_sampling_v128256", "(p_draft > 0) & ", "", [2]),
    # The recovered token drawn from the target row instead of the residual max(0, p_t - p_d).
    ("chain_speculative_sampling_v128256",
     "target_probs[requests, last].to(torch.float32) - draft_probs[requests, last].to(torch.float32)",
     "target_probs[requests, last].to(torch.float32)", [0, 1, 2]),
    # The bonus token drawn from the last draft's target row: every set has a request that accepts all its drafts.
    ("chain_speculative_sampling_v128256", "bonus = target_probs[:, num_speculative_tokens]",
     "bonus = target_probs[:, num_speculative_tokens - 1]", [0, 1, 2]),
    # The FP8-query prefill (reference_cases/fp8q_prefill.py): the query's scale dropped (sets 0 and 1 have q_scale
    # 0.02 and 1/64; set 2's is 1.0, a checkpoint without a calibrated scale).
    ("gqa_paged_prefill_causal_fp8q_fp8kv_h32_kv8_d128_ps16", "to(torch.float32) * q_scale", "to(torch.float32)",
     [0, 1]),
    # The greedy-draft sampler (reference_cases/specdec_greedy.py): the probabilistic residual with the draft
    # probabilities absent (read as 0, max(0, p_t - 0)): the rejected draft kept in the recovered token's row, which
    # every set's first request (a rejected draft holding 0.99 of its row) draws back.
    ("greedy_draft_speculative_sampling_v128256", "weights = torch.where(removed, torch.zeros_like(weights), weights)",
     "weights = torch.clamp(weights - 0.0, min=0.0)", [0, 1, 2]),
    # The probabilistic acceptance with those absent draft probabilities (p_d = 0 rejects every draft).
    ("greedy_draft_speculative_sampling_v128256", "p_draft = 1.0", "p_draft = 0.0", [0, 1, 2]),
    # The strict test (p_t > u): each set's second request has a draft probability exactly u.
    ("greedy_draft_speculative_sampling_v128256", "(p_target / p_draft >= u)", "(p_target / p_draft > u)",
     [0, 1, 2]),
    # The bonus token drawn from the last draft's row: each set's last request accepts every draft.
    ("greedy_draft_speculative_sampling_v128256", "weights = target_probs[requests, pos]",
     "weights = target_probs[requests, pos.clamp(max=num_speculative_tokens - 1)]", [0, 1, 2]),
    # The kernels of the minimax-m2, llama-4-scout and glm-4.5 records (reference_cases/{minimax_m2,llama4_scout,glm45}.py).
    # MiniMax-M2's TP q/k norm taking the mean over the rank's own slice (tp 1): the mean of squares is over 8 slices.
    ("qk_rmsnorm_tp8_apply_q768_k128", "tp, eps = 8, 1e-6", "tp, eps = 1, 1e-6", [0, 1, 2]),
    # Llama 4's temperature factor off by one position: it changes at (p + 1) = 8192; the sets after the first hold
    # positions 8191 and 16383 (set 0 has position 0 only).
    ("llama4_attn_temperature_h5_d128", "torch.floor((pos + 1.0) / floor_scale)", "torch.floor(pos / floor_scale)",
     [1, 2]),
    # The top-1 router taking the LAST maximum: only set 2 has a tie for the largest logit.
    ("moe_routing_top1_sigmoid_e16", "ids, torch.full_like(ids, num_experts)).min(dim=-1",
     "ids, torch.full_like(ids, -1)).max(dim=-1", [2]),
    # The routing weight dropped from Llama 4's first expert GEMM (apply_router_weight_on_input).
    ("grouped_gemm_weighted_e16_n2048_k5120", "    C = C * row_weight.to(torch.float32)[:, None]\n", "", [0, 1, 2]),
    # GLM-4.5's per-channel weight scales dropped, in the dense and the grouped FP8 GEMMs.
    ("gemm_fp8_rowwise_n5120_k1536", " * B_scale.to(torch.float32).T", "", [0, 1, 2]),
    ("grouped_gemm_fp8_rowwise_sorted_e160_n384_k5120", " * B_scale[e].to(torch.float32)[:, 0][None, :]", "", [0, 1, 2]),
    # GLM-4.5's routed_scaling_factor left out of the expert sum.
    ("moe_sum_scaled_topk8_h5120", "routed_scaling_factor = 2.5", "routed_scaling_factor = 1.0", [0, 1, 2]),
    # The per-token quantiser's range of float8_e4m3fnuz (240) instead of e4m3fn's 448.
    ("quantize_fp8_per_token_h192", "fp8_max = 448.0", "fp8_max = 240.0", [0, 1, 2]),
    # NVFP4 (reference_cases/nvfp4.py). The quantiser: the nibbles of each byte swapped (every set).
    ("quantize_nvfp4_h4096", "codes[:, 0::2] | (codes[:, 1::2] << 4)", "codes[:, 1::2] | (codes[:, 0::2] << 4)",
     [0, 1, 2]),
    # The encode scale from the unrounded block scale: set 0's block scales are powers of two (exact in e4m3).
    ("quantize_nvfp4_h4096", "sf_value = sf_e4m3.to(torch.float32)", "sf_value = sf", [1, 2]),
    # The global scale applied twice to the values: set 0's global scale is 1.
    ("quantize_nvfp4_h4096", "v = x * out_scale[:, :, None]", "v = x * out_scale[:, :, None] * g", [1, 2]),
    # The midpoint 1.25 rounded away from even (to 1.5): set 0 is made of exact ties, set 1 has one by chance.
    ("quantize_nvfp4_h4096", "(a > 1.25)", "(a >= 1.25)", [0, 1]),
    # The GEMM (the nibbles swapped in both operands alike is the same product, so not a mistake there): code 1
    # decoded as 1 instead of 0.5 (its subnormal), alpha applied twice, the scales read row-major (not swizzled).
    ("gemm_nvfp4_n8192_k2048", "subnormal = 0.5 * mantissa", "subnormal = 1.0 * mantissa", [0, 1, 2]),
    ("gemm_nvfp4_n8192_k2048", "C = acc * torch.as_tensor(alpha", "C = acc * alpha * torch.as_tensor(alpha", [0, 1, 2]),
    ("gemm_nvfp4_n8192_k2048", "tiles.permute(0, 3, 2, 1, 4).reshape(rows_padded, C)[:rows]",
     "tiles.reshape(rows_padded, C)[:rows]", [0, 1, 2]),
    # The TRT-LLM fused MoEs (reference_cases/trtllm_moe.py). Up and gate halves of gemm1 swapped.
    ("trtllm_fp4_block_scale_moe_topk1_e128_h5120_i8192",
     "up, gate = h[:, :intermediate_size], h[:, intermediate_size:]",
     "gate, up = h[:, :intermediate_size], h[:, intermediate_size:]", [0, 1, 2]),
    # The e8m0 exponent bias off by one (every weight halved).
    ("trtllm_fp4_block_scale_moe_topk1_e128_h5120_i8192", "scales.to(torch.float32) - 127.0",
     "scales.to(torch.float32) - 128.0", [0, 1, 2]),
    # The nibble order swapped (element 2i read from the high nibble).
    ("trtllm_fp4_block_scale_moe_topk1_e128_h5120_i8192", "torch.stack([blocks & 0x0F, blocks >> 4], dim=-1)",
     "torch.stack([blocks >> 4, blocks & 0x0F], dim=-1)", [0, 1, 2]),
    # Softmax over all experts before the top-k, not renormalised: the picks' weights no longer sum to 1.
    ("trtllm_fp4_block_scale_moe_topk10_e128_h2048_i512", "torch.softmax(logits.gather(1, ids), dim=-1)",
     "torch.softmax(logits, dim=-1).gather(1, ids)", [0, 1, 2]),
    # Llama4 routing weighted 1 (a softmax over the one pick) instead of the pick's sigmoid.
    ("trtllm_fp4_block_scale_moe_topk1_e16_h5120_i8192", "torch.sigmoid(logits.gather(1, ids))",
     "torch.ones_like(logits.gather(1, ids))", [0, 1, 2]),
    # The packed routing's halves mixed up: the expert id read from the low 16 bits.
    ("trtllm_fp4_block_scale_routed_moe_topk1_e16_h5120_i8192", "ids = (topk_ids >> 16)",
     "ids = (topk_ids & 0xFFFF)", [0, 1, 2]),
    # Llama4 FP8: the routing weight on the up half only, i.e. linearly on the expert output, not on the input.
    ("trtllm_fp8_per_tensor_scale_moe_topk1_e16_h5120_i8192", "        gate = gate * w_tok[:, None]\n", "",
     [0, 1, 2]),
    # FP8: the gate's per-expert scale used for the up half too.
    ("trtllm_fp8_per_tensor_scale_moe_topk1_e128_h5120_i8192", "h[:, :intermediate_size] * output1_scales_scalar[e]",
     "h[:, :intermediate_size] * output1_scales_gate_scalar[e]", [0, 1, 2]),
    # Speculative decoding's MLA verify (reference_cases/specdec_mla.py). The verify tokens aligned top-left, as if
    # they were the sequence's first tokens: right only where a sequence has no context (set 0's one sequence).
    ("mla_paged_verify_causal_h16_ckv512_kpe64_ps1", "kv_len[seq][:, None] - num_verify_tokens + ",
     "0 * kv_len[seq][:, None] + ", [1, 2]),
    # The mask off by one: a verify token does not see itself (set 0's first token then sees nothing at all).
    ("mla_paged_verify_causal_h16_ckv512_kpe64_ps1", "visible = (pos[:, None, :] <= q_pos[:, :, None])",
     "visible = (pos[:, None, :] < q_pos[:, :, None])", [0, 1, 2]),
    # ... or sees the next verify token too.
    ("mla_paged_verify_causal_h16_ckv512_kpe64_ps1", "visible = (pos[:, None, :] <= q_pos[:, :, None])",
     "visible = (pos[:, None, :] <= q_pos[:, :, None] + 1)", [0, 1, 2]),
    # The rotary part of the logit dropped (q_pe . k_pe).
    ("mla_paged_verify_causal_h16_ckv512_kpe64_ps1", " + qp @ kpe.transpose(1, 2)", "", [0, 1, 2]),
    # FP4 MoE on Blackwell (reference_cases/fp4_moe.py). The NVFP4 MoE: w1 and w3 swapped (gate read from the
    # up rows), the SwiGLU output passed to GEMM 2 without its NVFP4 re-quantisation, DeepSeek's routed scale
    # 2.5 applied in the kernel (vLLM applies it after: twice in all), the routing weight applied twice, the
    # rank's expert offset ignored (set 0 is rank 0).
    ("moe_nvfp4_routed_topk8_e32_h7168_i2048", "up, gate = h[:, :I], h[:, I:]", "gate, up = h[:, :I], h[:, I:]",
     [0, 1, 2]),
    ("moe_nvfp4_routed_topk8_e32_h7168_i2048", "a = requantize(act, gemm2_input_scale)",
     "a = act.to(torch.float32) * gemm2_input_scale", [0, 1, 2]),
    ("moe_nvfp4_routed_topk8_e32_h7168_i2048", "output[rows] += weight[:, None] * y",
     "output[rows] += 2.5 * weight[:, None] * y", [0, 1, 2]),
    ("moe_nvfp4_routed_topk8_e32_h7168_i2048", "output[rows] += weight[:, None] * y",
     "output[rows] += weight[:, None] * weight[:, None] * y", [0, 1, 2]),
    ("moe_nvfp4_routed_topk8_e32_h7168_i2048", "e = offset + le", "e = le", [1, 2]),
    # The MXFP8 quantiser: the e8m0 scale rounded down instead of up (values past 448 saturate), the
    # float8_e4m3fnuz range 240 instead of 448.
    ("quantize_mxfp8_h3072", "e = torch.where(mantissa == 0.5, exponent - 1, exponent)", "e = exponent - 1",
     [0, 1, 2]),
    ("quantize_mxfp8_h3072", "inv_448 = torch.tensor(1.0 / 448.0", "inv_448 = torch.tensor(1.0 / 240.0", [0, 1, 2]),
    # The MXFP4 x MXFP8 MoE (gpt-oss-20b's; gpt-oss-120b's has the same reference): linear and gate halves
    # swapped, the e8m0 bias off by one, the nibbles of the weight bytes swapped, the intermediate's e8m0 scale
    # rounded down (its largest values saturate at 448), softmax over all experts before the top 4 without
    # renormalising, the gate's clamp dropped (every set's gate reaches its limit, 7 or 3).
    ("trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072", "linear, gate = h[:, :I], h[:, I:]",
     "gate, linear = h[:, :I], h[:, I:]", [0, 1, 2]),
    ("trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072", "scales.to(torch.float32) - 127.0",
     "scales.to(torch.float32) - 126.0", [0, 1, 2]),
    ("trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072", "torch.stack([blocks & 0x0F, blocks >> 4]",
     "torch.stack([blocks >> 4, blocks & 0x0F]", [0, 1, 2]),
    ("trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072",
     "e = torch.where(mantissa == 0.5, exponent - 1, exponent)", "e = exponent - 1", [0, 1, 2]),
    ("trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072", "torch.softmax(ranked.values[:, :top_k], dim=-1)",
     "torch.softmax(logits, dim=-1).gather(1, topk_ids)", [0, 1, 2]),
    ("trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072", "gate = torch.minimum(gate, limit)", "gate = gate",
     [0, 1, 2]),
    # The fused lightning indexer + top-2048 (set 0's short sequences select every token whatever the logits): the
    # key scale dropped (set 3's keys share one scale: the ranking stands), the head weights dropped, relu dropped
    # (set 3's 8 distinct keys happen to keep their order), and the top-k over the -inf padded row (short rows
    # list padding positions instead of -1).
    ("dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", "k = k * k_scale[:, None]", "k = k", [1, 2]),
    ("dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", "(weights[b].to(torch.float32)[:, None] * scores)", "scores",
     [1, 2, 3]),
    ("dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", "scores = torch.clamp(scores, min=0.0)  # relu", "", [1, 2]),
    ("dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", "torch.sort(logits[:n], descending", "torch.sort(logits, descending",
     [0, 1, 2, 3]),
    # The indexer's head-weight scaling (reference_cases/dsa_indexer_extras.py): softmax_scale missing, the head
    # factor squared (64^-1), q_scale left out, the float32 weights rounded to bfloat16.
    ("dsa_indexer_weights_scale_h64", "    w = w * head_dim ** -0.5  # softmax_scale\n", "", [0, 1, 2]),
    ("dsa_indexer_weights_scale_h64", "w * n_heads ** -0.5", "w * n_heads ** -1.0", [0, 1, 2]),
    ("dsa_indexer_weights_scale_h64", "w * q_scale.to(torch.float32)", "w", [0, 1, 2]),
    # DeepSeek-V3.2's weights_proj rounding its float32 result to bfloat16 (SGLang keeps it float32).
    ("gemm_n64_k7168", '    return {"C": C}', '    return {"C": C.to(torch.bfloat16).to(torch.float32)}', [0, 1, 2]),
    # The weights rounded to bfloat16 before the scaling (issue 40: neither SGLang nor DeepSeek's code rounds them).
    ("dsa_indexer_weights_scale_h64", "w = weights.to(torch.float32)", "w = weights.to(torch.bfloat16).to(torch.float32)",
     [0, 1, 2]),
    # The prefill key gather: pages read in reverse order, scales read in pool order instead of moving with
    # their keys, every sequence read through the first sequence's page table.
    ("dsa_indexer_k_gather_d128_ps64", "block_table[b, pos // page_size]", "block_table[b, pos // page_size].flip(0)",
     [1, 2]),  # set 0 is one page
    ("dsa_indexer_k_gather_d128_ps64", '"k_scale": scales[slots]', '"k_scale": scales[:slots.shape[0]]', [0, 1, 2]),
    ("dsa_indexer_k_gather_d128_ps64", "block_table[b, pos", "block_table[0, pos", [1, 2]),
]


@pytest.mark.parametrize("name, right, wrong, failing", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_reference_mistakes_fail_at_the_test_sizes(name, right, wrong, failing):
    assert_planted_mistake_fails(name, right, wrong, failing)


def test_every_python_solution_names_its_definition():
    for path in SOLUTION_FILES:
        sol = json.loads(path.read_text(encoding="utf-8"))
        def_path = DATASET / "definitions" / path.parent.parent.name / f"{sol['definition']}.json"
        assert sol["definition"] == path.parent.name and def_path.is_file(), \
            f"{path}: names definition {sol['definition']!r}, not found at {def_path}"


def test_python_solutions_match_reference(sets):
    """Every Python solution of the definition, on every input set, against the independent result and
    the reference's outputs."""
    d, case = sets.definition, sets.case
    solutions = python_solutions_of(d["name"])
    if not solutions:
        pytest.skip(f"{d['name']} has no Python solution")
    # A sibling whose solutions are its representative's code too runs them on its first set only (SIBLING_OF).
    same_code = python_sources(d["name"]) == python_sources(SIBLING_OF[d["name"]])
    for path in solutions:
        sol = json.loads(path.read_text(encoding="utf-8"))
        indices = sets.indices if same_code else range(len(case.sizes))
        if path.parts[-4] == COMPILER_AUTHOR:
            indices = compiled_indices(d, case.sizes)
        assert not sol["spec"].get("destination_passing_style", False), "only value-returning solutions are run here"
        file, function = sol["spec"]["entry_point"].split("::")
        sources = {s["path"]: s["content"] for s in sol["sources"]}
        assert file in sources, f"{sol['name']}: entry point file {file} is not among the sources"
        run = exec_function(sources[file], f"{sol['name']}/{file}", function)
        for index in indices:
            axes, inputs, expected = sets[index]
            if case.check is not None:
                check_statistically(run, d, axes, inputs, case, f"{sol['name']} (set {index})")
                continue
            before = clone_inputs(inputs)
            outputs = as_output_dict(run(*inputs.values()), d)
            assert_inputs_unchanged(before, inputs, sol["name"])
            check_outputs(outputs, d, axes, expected, f"{sol['name']} (set {index})", sets.reference_outputs(index),
                          SOLUTION_TOLERANCE)


@pytest.mark.parametrize("path", WORKLOAD_FILES, ids=lambda p: p.stem)
def test_workloads_fit_their_definition(path):
    d = load_definition(DATASET / "definitions" / path.parent.name / f"{path.stem}.json")
    var_axes = {n for n, a in d["axes"].items() if a["type"] == "var"}
    consts = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    # Seed 000's examples came with three or four shapes; every definition added since has five or more.
    assert len(lines) >= (3 if "status:draft" in d.get("tags", []) else 5), f"only {len(lines)} workloads"
    for record in lines:
        w = record["workload"]
        assert record["definition"] == d["name"]
        assert set(w["axes"]) == var_axes and all(isinstance(v, int) and v > 0 for v in w["axes"].values())
        assert list(w["inputs"]) == list(d["inputs"])
        for name, spec in w["inputs"].items():
            if not d["inputs"][name]["shape"]:
                assert spec["type"] == "scalar", f"{w['uuid']}: scalar input {name} must be given as a value"
            elif d["inputs"][name]["dtype"].startswith(("int", "uint", "bool")) and "random" not in d["inputs"][name]:
                # Index inputs must be coherent (monotone indptr, unique page ids...): uniform random
                # integers are not, so they come from a blob written by generator/workloadgen. Integer
                # payloads whose definition names how they are drawn (packed MXFP4 codes and e8m0 scales,
                # a GB per workload: never a blob) may be random.
                assert spec["type"] == "safetensors", f"{w['uuid']}: integer input {name} must be a blob"
            else:
                assert spec["type"] in ("random", "safetensors"), name
        for constraint in d.get("constraints", []):
            assert eval(constraint, {}, {**consts, **w["axes"]}), f"{w['uuid']} breaks {constraint!r}"


def test_gemma_embedding_normaliser_is_rounded_to_bfloat16():
    """Gemma scales its embedding by sqrt(hidden_size) held in bfloat16: 73.5, not 73.32 for 5376. The two
    differ by 0.24%, inside the bfloat16 tolerance of the general check, so that check cannot tell them apart;
    but a bfloat16 row times 73.5 (8 significant bits each) is exact in float32, so the output is exactly one
    rounding of it, and the reference and every Python solution must match that bit for bit. The inputs are
    checked to have teeth: many elements round differently with the unrounded normaliser."""
    import math
    name = "embedding_scaled_v131104_h5376"
    [path] = [p for p in DEFINITION_FILES if p.stem == name]
    sets = InputSets(load_definition(path))
    axes, inputs, _ = sets[2]
    ids = inputs["input_ids"].long() - int(inputs["vocab_start"])
    in_shard = ((ids >= 0) & (ids < axes["vocab_shard"]))[:, None]
    rows = inputs["weight"].double()[ids.clamp(0, axes["vocab_shard"] - 1)]
    exact = math.sqrt(axes["hidden_size"])
    rounded = float(torch.tensor(exact, dtype=torch.bfloat16))
    assert rounded == 73.5 != exact
    want = torch.where(in_shard, rows * rounded, 0.0).bfloat16()
    unrounded = torch.where(in_shard, rows * exact, 0.0).bfloat16()
    scaled_elements = in_shard.sum().item() * axes["hidden_size"]
    assert (want != unrounded).sum().item() > scaled_elements // 4, "the inputs do not tell the normalisers apart"
    who = {"reference": sets.reference_outputs(2)["output"]}
    for sol_path in python_solutions_of(name):
        sol = json.loads(sol_path.read_text(encoding="utf-8"))
        file, function = sol["spec"]["entry_point"].split("::")
        run = exec_function({s["path"]: s["content"] for s in sol["sources"]}[file], f"{sol['name']}/{file}", function)
        who[sol["name"]] = as_output_dict(run(*inputs.values()), sets.definition)["output"]
    for label, output in who.items():
        differ = (output != want).sum().item()
        assert differ == 0, (f"{label}: {differ} of {want.numel()} elements are not bf16(row * 73.5): the normaliser "
                             "must be sqrt(hidden_size) rounded to bfloat16, as Gemma stores it")
