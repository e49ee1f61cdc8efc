"""Speculative decoding's verify kernels for the other models whose published recipes run it: the same mathematics
as a checked template definition, other constants, written from the tables below.

- The MLA verify (DeepSeek-V3's MTP, template mla_paged_verify_causal_h16_ckv512_kpe64_ps1, checked in full by
  specdec_mla.py) at TP16 (8 heads per rank) and at page size 64 (vLLM's FlashMLA): variants.Substituted entries,
  the template's text with the replacements listed.
- The chain verify attention (template gqa_paged_verify_causal_h32_kv8_d128_ps16, checked by specdec.py) for GLM-4.5
  (SGLang EAGLE with its MTP layer, page size 1) and Qwen3-Next-80B-A3B's full-attention layers (vLLM
  qwen3_next_mtp): their own description, the template's axes, inputs, outputs, constraints and reference.
- The rejection sampler (template chain_speculative_sampling_v128256, vLLM's arithmetic) at the vocabularies of
  the models whose vLLM recipes enable MTP (DeepSeek-V3, GLM-4.5, Qwen3-Next): the template with the model's
  text and vocabulary; vLLM's opt-in probabilistic path, tagged so (its default greedy-draft sampler:
  specdec_greedy.py).

Every variant's reference, einsum cascade and baseline are its template's, byte for byte (the baseline renamed);
tests/test_specdec_variants.py proves every committed file is what files() writes (`cd tests && python -m
reference_cases.specdec_variants` rewrites them). Each gets a cheap check of its template's independent
formulation at tiny sizes with its real constants (the sampler's vocabulary shrunk, as the template's sets do).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from . import specdec, specdec_mla
from .common import Case, write_files
from .variants import Substituted, substituted_files

DATASET = Path(__file__).resolve().parents[2] / "dataset"
MLA_TEMPLATE = "mla_paged_verify_causal_h16_ckv512_kpe64_ps1"
GQA_TEMPLATE = "gqa_paged_verify_causal_h32_kv8_d128_ps16"
SAMPLER_TEMPLATE = "chain_speculative_sampling_v128256"


def _json(d: dict) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def _load(kind: str, name: str) -> dict:
    return json.loads((DATASET / "definitions" / kind / f"{name}.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------------
# MLA verify: DeepSeek-V3 at TP16 (the deepseek-v3-tp16-h100 record's 8 heads per rank) and with FlashMLA pages.
# --------------------------------------------------------------------------------------------------

MLA_TP16 = Substituted(
    "mla_paged_verify_causal_h8_ckv512_kpe64_ps1", "mla", MLA_TEMPLATE, {"num_qo_heads": 8},
    (("for DeepSeek-V3 at TP8", "for DeepSeek-V3 at TP16 (2 nodes x 8 H100, SGLang --tp 16, the same MTP flags)"),
     ("as mla_paged_decode_h16_ckv512_kpe64_ps1)", "as mla_paged_decode_h8_ckv512_kpe64_ps1)"),
     (" (FlashMLA, page size 64: mla_paged_verify_causal_h16_ckv512_kpe64_ps64)", " (FlashMLA, page size 64)"),
     ("The dataset's deepseek-v3 record serves without speculative decoding, so this kernel is tagged model-alt: it "
      "replaces mla_paged_decode_h16_ckv512_kpe64_ps1",
      "The dataset's deepseek-v3-tp16-h100 record serves without speculative decoding, so this kernel is tagged "
      "model-alt: it replaces mla_paged_decode_h8_ckv512_kpe64_ps1"),
     ("batch_gemm_mla_absorb_q_h16_d128_c512", "batch_gemm_mla_absorb_q_h8_d128_c512"),
     ("num_qo_heads = 16 = num_attention_heads 128 / TP 8", "num_qo_heads = 8 = num_attention_heads 128 / TP 16"),
     ("split over TP 8.", "split over TP 16.")),
    ("stage:decode", "model-alt:deepseek-v3-tp16-h100", "tp:16", "quantization:bf16", "speculative:verify",
     "status:draft"))

MLA_PS64 = Substituted(
    "mla_paged_verify_causal_h16_ckv512_kpe64_ps64", "mla", MLA_TEMPLATE, {"page_size": 64},
    ((" (FlashMLA, page size 64: mla_paged_verify_causal_h16_ckv512_kpe64_ps64)",
      " (FlashMLA, page size 64: this definition, the same mathematics as the page-size-1 "
      "mla_paged_verify_causal_h16_ckv512_kpe64_ps1 over 64-token pages; SGLang's FlashMLA backend pages at 64 too)"),
     ("it replaces mla_paged_decode_h16_ckv512_kpe64_ps1", "it replaces mla_paged_decode_h16_ckv512_kpe64_ps64"),
     ("Tokens per KV-cache page (1: SGLang's FlashInfer MLA backend).",
      "Tokens per KV-cache page (64: FlashMLA's block size, vLLM's MLA backend on Hopper).")),
    ("stage:decode", "model-alt:deepseek-v3", "tp:8", "quantization:bf16", "speculative:verify", "status:draft"))

MLA_VARIANTS = [MLA_TP16, MLA_PS64]


# --------------------------------------------------------------------------------------------------
# Chain verify attention (GQA) for GLM-4.5 and Qwen3-Next.
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verify:
    """One model's chain verify attention: heads per rank, page size and the serving text."""

    name: str
    label: str  # "GLM-4.5 at TP8"
    source: str  # the config the heads come from
    heads: int
    kv_heads: int
    head_dim: int
    tp: int
    page_size: int
    serving: str  # which published configuration runs speculative decoding, and how the engine calls the kernel
    pages: str  # why this page size
    scale: str  # sm_scale's value for the model
    calls: str  # how often a verify step calls it, and what it replaces
    tags: tuple

    @property
    def qo(self) -> int:
        return self.heads // self.tp

    @property
    def kv(self) -> int:
        return max(1, self.kv_heads // self.tp)


GQA_VARIANTS = [
    Verify("gqa_paged_verify_causal_h12_kv1_d128_ps1", "GLM-4.5 at TP8", "zai-org/GLM-4.5 config.json", 96, 8, 128, 8,
           1,
           "The zai-org/GLM-4.5 README launches SGLang with its MTP layer (num_nextn_predict_layers 1) as the EAGLE "
           "drafter: --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 "
           "--speculative-num-draft-tokens 4, so a chain of 3 drafts and num_verify_tokens = 4 per sequence (the last "
           "verified token and the drafts). With --speculative-eagle-topk 1 SGLang's FlashAttention-3 backend (the "
           "record's backend; python/sglang/srt/layers/attention/flashattention_backend.py) runs the target-verify "
           "forward as causal attention with cu_seqlens_q stepping by the draft token count and the cache lengths "
           "extended by it, no custom mask: this kernel (a tree, topk > 1, would add the tree's mask among the verify "
           "tokens, as gqa_paged_verify_tree_h32_kv8_d128_ps1). vLLM's GLM-4.5 recipe enables the same MTP layer "
           "(--speculative-config method mtp, num_speculative_tokens 1) at --tensor-parallel-size 4, 24 query and 2 "
           "KV heads per rank, another kernel.",
           "page_size = 1 (SGLang's default token-level KV cache, the record's)",
           "1 / sqrt(128) = 0.08838834764831845 for GLM-4.5",
           "Called once per layer (92 per verify step, plus the MTP layer's own attention in the draft steps) where "
           "plain decode would call gqa_paged_decode_h12_kv1_d128_ps1; the dataset's glm-4.5 record serves without "
           "speculative decoding, so it is tagged model-alt.",
           ("stage:decode", "model-alt:glm-4.5", "tp:8", "quantization:bf16", "speculative:verify", "status:draft")),
    Verify("gqa_paged_verify_causal_h4_kv1_d256_ps16", "Qwen3-Next-80B-A3B at TP4 (its full-attention layers)",
           "Qwen/Qwen3-Next-80B-A3B-Instruct config.json", 16, 2, 256, 4, 16,
           "Qwen's model card for Qwen3-Next-80B-A3B-Instruct serves multi-token prediction with vLLM as "
           "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}' (num_verify_tokens "
           "= 3 per sequence: the last sampled token and 2 drafts; SGLang's: --speculative-algo NEXTN "
           "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4, a chain of 4), at "
           "--tensor-parallel-size 4, the record's sharding. vLLM's attention backends run the verify tokens of the "
           "12 gated full-attention layers (full_attention_interval 4) as causal attention with k + 1 query tokens "
           "per sequence (FlashInfer's BatchPrefillWithPagedKVCacheWrapper with causal=True, FlashAttention's "
           "varlen kernel with causal=True: the same arithmetic); the 36 gated delta net layers verify with "
           "gdn_mtp_qk4_v8_d128. The queries come after the zero-centred q_norm and the partial RoPE; the sigmoid "
           "output gate (attn_output_gate) is applied afterwards, not here.",
           "page_size = 16: vLLM raises this hybrid model's KV-cache block to 528 tokens to hold one GDN state page "
           "and runs it as kernel blocks of 16, as gqa_paged_decode_h4_kv1_d256_ps16",
           "1 / sqrt(256) = 0.0625 for Qwen3-Next",
           "Called once per full-attention layer (12 per verify step) where plain decode would call "
           "gqa_paged_decode_h4_kv1_d256_ps16; the dataset's qwen3-next-80b-a3b record serves without speculative "
           "decoding, so it is tagged model-alt.",
           ("stage:decode", "model-alt:qwen3-next-80b-a3b", "tp:4", "quantization:bf16", "speculative:verify",
            "status:draft")),
]


PAGE_TEXT = {1: "SGLang's default token-level KV cache", 16: "vLLM's kernel block; the hybrid model's cache block "
             "of 528 tokens is 33 of them"}


def _heads_text(v: Verify) -> str:
    kv = (f"{v.kv_heads} / {v.tp} = {v.kv} KV head{'s' if v.kv > 1 else ''}" if v.kv_heads >= v.tp else
          f"{v.kv} KV head ({v.kv_heads} KV heads over {v.tp} ranks: each is replicated on {v.tp // v.kv_heads} ranks)")
    return (f"Heads from {v.source}: num_attention_heads = {v.heads} and num_key_value_heads = {v.kv_heads}, head_dim "
            f"= {v.head_dim}, split over tensor parallelism {v.tp}: {v.heads} / {v.tp} = {v.qo} query heads and {kv} "
            f"per rank; query head h reads KV head h // {v.qo // v.kv}.")


def gqa_description(v: Verify) -> str:
    g, p = v.qo // v.kv, v.page_size
    body = [
        f"Grouped-query attention of speculative decoding's verify step over a paged KV cache with {v.pages}, for "
        f"{v.label}: every sequence of the batch brings num_verify_tokens query tokens, its last verified token and "
        f"the draft tokens after it, whose K/V this step wrote to the cache behind the sequence's verified context, "
        f"and the target model scores all of them at once.",
        v.serving,
        "q is the step's flat [batch_size * num_verify_tokens, heads, head_dim] token buffer viewed per sequence, so "
        "there is no qo_indptr (it would be b * num_verify_tokens).",
        _heads_text(v),
        f"Sequence b owns the pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] in token order; all are full except the "
        f"last, which holds kv_last_page_len[b] tokens (1..{p}), so kv_len[b] = (pages - 1) * {p} + "
        f"kv_last_page_len[b], the verify tokens included. Page ids are distinct and below num_pages, and kv_len[b] "
        f">= num_verify_tokens (data properties).",
        "Causal, aligned bottom-right: verify token i of sequence b (0-based) sits at position kv_len[b] - "
        "num_verify_tokens + i and sees keys 0 .. kv_len[b] - num_verify_tokens + i: the whole verified context, the "
        "verify tokens before it and itself.",
        f"s[h, i, j] = sm_scale * q[b, i, h] . k[j, h // {g}]; output[b, i, h] = sum_j softmax_j(s)[j] * "
        f"v[j, h // {g}] over the visible keys; sm_scale is a scalar input, {v.scale}. lse[b, i, h] = "
        f"log2(sum_j exp(s[h, i, j])) over the visible keys, the base-2 log-sum-exp as FlashInfer returns it.",
        f"The same mathematics as {GQA_TEMPLATE} (Llama-3.1-8B's, checked there) with this model's constants.",
    ]
    return (" ".join(body) + "\n\nNumerics: float32 logits, softmax and weighted sum; output rounded to bfloat16 once; "
            "lse float32. " + v.calls)


def render_gqa(v: Verify) -> dict:
    t = _load("gqa", GQA_TEMPLATE)
    d = copy.deepcopy(t)
    per_rank = f" / tp {v.tp}"
    consts = {
        "num_qo_heads": (v.qo, f"num_attention_heads = {v.heads}{per_rank} from {v.source}."),
        "num_kv_heads": (v.kv, f"num_key_value_heads = {v.kv_heads}{per_rank} from {v.source}." if v.kv_heads >= v.tp
                         else f"num_key_value_heads = {v.kv_heads} from {v.source}, one per rank (replicated)."),
        "head_dim": (v.head_dim, f"head_dim = {v.head_dim} from {v.source}."),
        "page_size": (v.page_size, f"Tokens per KV cache page ({PAGE_TEXT[v.page_size]})."),
    }
    for axis, (value, text) in consts.items():
        d["axes"][axis].update(value=value, description=text)
    d["inputs"]["sm_scale"]["description"] = f"Softmax scale applied to q.k ({v.scale})."
    d["name"], d["description"], d["tags"] = v.name, gqa_description(v), list(v.tags)
    return {"name": d["name"], "description": d["description"],
            **{k: val for k, val in d.items() if k not in ("name", "description")}}


# --------------------------------------------------------------------------------------------------
# The rejection sampler at other vocabularies (vLLM's arithmetic, as the template).
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sampler:
    model: str  # "DeepSeek-V3"
    source: str  # config the vocabulary comes from
    vocab: int
    runs: str  # the sentence replacing the template's last one: who runs it, when
    tags: tuple

    @property
    def name(self) -> str:
        return f"chain_speculative_sampling_v{self.vocab}"


SAMPLERS = [
    Sampler("DeepSeek-V3", "deepseek-ai/DeepSeek-V3 config.json", 129280,
            "DeepSeek-V3 runs it once per verify step after the target model's LM head and softmax over the k + 1 "
            "rows of each request, as vLLM's DeepSeek recipe serves it with the MTP layer (--speculative-config "
            "method deepseek_mtp, num_speculative_tokens k) and a non-greedy request. SGLang (the dataset's "
            "deepseek-v3 record's engine; its MTP flags --speculative-algorithm EAGLE --speculative-num-steps 3 "
            "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4) accepts otherwise: greedy batches compare "
            "the drafts with the target's argmax (verify_tree_greedy), sampled ones run tree_speculative_sampling_"
            "target_only (accept a draft iff u <= its target probability, the draft probabilities unused, then an "
            "inverse-CDF draw over the target row with the rejected token removed), not this definition.",
            ("stage:decode", "model-alt:deepseek-v3", "tp:8", "speculative:verify", "draft_sample:probabilistic", "path:opt-in", "status:draft")),
    Sampler("GLM-4.5", "zai-org/GLM-4.5 config.json", 151552,
            "GLM-4.5 runs it once per verify step after the target model's LM head and softmax over the k + 1 rows "
            "of each request, as vLLM's GLM-4.5 recipe serves it with the MTP layer (--speculative-config method mtp, "
            "num_speculative_tokens 1) and a non-greedy request. SGLang (the model README's EAGLE command, the "
            "dataset's glm-4.5 record's engine) accepts with verify_tree_greedy or tree_speculative_sampling_target_"
            "only instead (see chain_speculative_sampling_v129280).",
            ("stage:decode", "model-alt:glm-4.5", "tp:8", "speculative:verify", "draft_sample:probabilistic", "path:opt-in", "status:draft")),
    Sampler("Qwen3-Next-80B-A3B", "Qwen/Qwen3-Next-80B-A3B-Instruct config.json", 151936,
            "Qwen3-Next-80B-A3B runs it once per verify step after the target model's LM head and softmax over the "
            "k + 1 rows of each request, as its model card serves it in vLLM (--speculative-config method "
            "qwen3_next_mtp, num_speculative_tokens 2; the dataset's qwen3-next-80b-a3b record is vLLM at TP4 without "
            "speculation) with a non-greedy request (the card's sampling: temperature 0.7, top_p 0.8, top_k 20).",
            ("stage:decode", "model-alt:qwen3-next-80b-a3b", "tp:4", "speculative:verify",
             "draft_sample:probabilistic", "path:opt-in", "status:draft")),
]

# The template's closing sentence: the probabilistic path is vLLM's opt-in one (issue 40); the greedy-draft sampler it
# names is reference_cases/specdec_greedy.py's, at the same vocabulary.
OPT_IN = (" This is vLLM's opt-in path (--speculative-config draft_sample_method probabilistic, which passes the drafter's "
          "probabilities); by default (draft_sample_method greedy) MTP and EAGLE drafts pass none and vLLM accepts with "
          "greedy_draft_speculative_sampling_v{vocab}.")

_SAMPLER_LAST = ("Llama-3.1-8B runs it once per verify step, after the target model's LM head and softmax over the "
                 "k + 1 rows of each request (vLLM with --speculative-config and a non-greedy request).")


def render_sampler(s: Sampler) -> dict:
    d = copy.deepcopy(_load("misc", SAMPLER_TEMPLATE))
    text = d["description"]
    for old, new in (("for Llama-3.1-8B (vocab_size = 128256, meta-llama/Llama-3.1-8B config.json)",
                      f"for {s.model} (vocab_size = {s.vocab}, {s.source})"), (_SAMPLER_LAST, s.runs),
                     (OPT_IN.format(vocab=128256), OPT_IN.format(vocab=s.vocab))):
        assert text.count(old) == 1, f"{s.name}: {old[:50]!r}... is no longer in {SAMPLER_TEMPLATE}'s text"
        text = text.replace(old, new)
    assert "128256" not in text and "Llama" not in text, f"{s.name}: the template's model is still in the text"
    d["name"], d["description"], d["tags"] = s.name, text, list(s.tags)
    d["axes"]["vocab_size"].update(value=s.vocab, description=f"vocab_size = {s.vocab} from {s.source}.")
    assert d["inputs"]["draft_token_ids"]["random"]["high"] == 128256
    d["inputs"]["draft_token_ids"]["random"]["high"] = s.vocab
    return d


# --------------------------------------------------------------------------------------------------
# Files and cases.
# --------------------------------------------------------------------------------------------------

def _copies(kind: str, template: str, name: str) -> dict:
    """The template's einsum cascade and baseline under the variant's name."""
    out = {f"einsums/{kind}/{name}.yaml": (DATASET / "einsums" / kind / f"{template}.yaml").read_text(encoding="utf-8")}
    for src in sorted((DATASET / "solutions" / "baseline" / kind / template).glob("*.json")):
        sol = json.loads(src.read_text(encoding="utf-8"))
        new = sol["name"].replace(template, name)
        out[f"solutions/baseline/{kind}/{name}/{new}.json"] = _json({**sol, "name": new, "definition": name})
    return out


def rendered() -> dict:
    """name -> (template, definition) of every GQA verify and sampler variant (the MLA ones: MLA_VARIANTS)."""
    out = {v.name: (GQA_TEMPLATE, render_gqa(v)) for v in GQA_VARIANTS}
    out.update({s.name: (SAMPLER_TEMPLATE, render_sampler(s)) for s in SAMPLERS})
    return out


def files() -> dict:
    """Every file the variants consist of: dataset-relative path -> text."""
    out = {}
    for v in MLA_VARIANTS:
        out.update(substituted_files(v))
    for name, (template, d) in rendered().items():
        kind = "gqa" if template == GQA_TEMPLATE else "misc"
        out[f"definitions/{kind}/{name}.json"] = _json(d)
        out.update(_copies(kind, template, name))
    return out


# Tiny sets with the variants' real heads, head_dim and page size (the templates' cases check the mathematics).
GQA_SETS = {1: [{"batch_size": 1, "num_verify_tokens": 4, "num_kv_indices": 4, "num_pages": 6},
                {"batch_size": 2, "num_verify_tokens": 3, "num_kv_indices": 11, "num_pages": 12},
                {"batch_size": 3, "num_verify_tokens": 2, "num_kv_indices": 10, "num_pages": 10}],
            16: [{"batch_size": 1, "num_verify_tokens": 3, "num_kv_indices": 1, "num_pages": 2},
                 {"batch_size": 2, "num_verify_tokens": 4, "num_kv_indices": 3, "num_pages": 5},
                 {"batch_size": 3, "num_verify_tokens": 2, "num_kv_indices": 4, "num_pages": 4}]}

CASES = {
    MLA_TP16.name: Case(specdec_mla.PS1_SETS, specdec_mla.mla_verify_inputs, specdec_mla.mla_verify_expected,
                        derived=specdec.verify_derived),
    MLA_PS64.name: Case(specdec_mla.PS64_SETS, specdec_mla.mla_verify_inputs, specdec_mla.mla_verify_expected,
                        derived=specdec.verify_derived),
    **{v.name: Case(GQA_SETS[v.page_size], specdec.verify_inputs, specdec.verify_expected,
                    derived=specdec.verify_derived) for v in GQA_VARIANTS},
    **{s.name: Case(specdec.SAMPLING_SETS, specdec.sampling_inputs, specdec.sampling_expected) for s in SAMPLERS},
}


def write(root: Path = DATASET) -> list:
    """Write every variant file under `root` that differs; returns the paths written."""
    return write_files(files(), root)


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p.relative_to(DATASET.parent)}")
