"""The runners of the engine's families for state caches, DeepSeek-style attention and MoE layouts, the
embedding lookup, the temperature softmax, cascade attention, logits processing, multi-LoRA batches and speculative
decoding's verify attention: each takes a recipe (recipe.Recipe: its value(), fields(),
steps() and seeded()) and one entry of its workloads list, and yields the entry's Specs; FAMILIES registers
them (recipe.FAMILIES merges it). `first_seed` (where a family takes it) starts the seeds at another number.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from . import alltoall, cascade, core, dsa, families, fp4moe, logits, lora, mla, moe, packed_routing, specdec, state
from .scenarios import TEMPERATURE_MENU, Decode
from .spec import Spec

Recipe = Any  # recipe.Recipe (imported there, not here: recipe.py imports this module)


def _slot_state(r: Recipe, e: dict) -> Iterator[Spec]:
    """A kernel on per-sequence state slots (state.slot_state): decode steps ({tokens, stage: decode, what})
    or prefill steps; `inputs` name the arrays the step draws as "@slots", "@cu_seqlens",
    "@has_initial_state"; `axes` are templates of state.py's fields; per_seq (optional): tokens per sequence
    of a decode step (speculative verify), the field {per_seq}."""
    for seed, s in r.seeded(e):
        yield state.slot_state(e["definition"], s, seed, e["axes"], {k: r.value(v) for k, v in e["inputs"].items()},
                               e["description"], r.fields(), int(e.get("per_seq", 1)))


def _kv_append(r: Recipe, e: dict) -> Iterator[Spec]:
    """The paged KV-cache append of decode or prefill steps (state.kv_append_step); description: a template,
    or {decode: ..., prefill: ...}; pad_to (optional): decode steps padded to that many slots (-1)."""
    text = e["description"]
    for seed, s in r.seeded(e):
        t = text if isinstance(text, str) else text["decode" if isinstance(s, Decode) else "prefill"]
        yield state.kv_append_step(e["definition"], s, seed, int(e["page_size"]), t, r.fields(), e.get("pad_to"))


def _dsa(r: Recipe, e: dict) -> Iterator[Spec]:
    """DeepSeek Sparse Attention kernels (dsa.py): `kernel` one of dsa.BUILDERS over decode or prefill steps;
    `config` {page, topk, sink, recent}; sparse_mla takes sm_scale; cache_store takes the other `inputs` and
    `slot_input`, the input that gets the slots."""
    c = dsa.DSA(**{k: int(v) for k, v in r.value(e["config"]).items()})
    build = dsa.BUILDERS[e["kernel"]]
    extra = {"sparse_mla": lambda: (float(r.value(e["sm_scale"])),),
             "cache_store": lambda: ({k: r.value(v) for k, v in e["inputs"].items()}, e["slot_input"])}
    more = extra.get(e["kernel"], tuple)()
    for seed, s in r.seeded(e):
        yield build(e["definition"], s, seed, c, *more)


def _mla(r: Recipe, e: dict) -> Iterator[Spec]:
    """DeepSeek-V3-style MLA kernels (mla.py): `kernel` paged (page_size, sm_scale; inputs: more inputs, optional),
    rope, rope_compact (its cache from the rope configuration of the model label's first word), per_token (inputs),
    cache_store, ragged_prefill (sm_scale) or concat_k, over decode or prefill steps."""
    k = e["kernel"]
    more = {"paged": lambda: (int(e["page_size"]), float(r.value(e["sm_scale"]))),
            "per_token": lambda: ({n: r.value(v) for n, v in e["inputs"].items()},),
            "ragged_prefill": lambda: (float(r.value(e["sm_scale"])),)}.get(k, tuple)()
    # lead, scale_text, raw_keys (optional): the description's lead and sm_scale wording, keys with raw numbers
    if k in ("paged", "ragged_prefill"):
        more += (fill_lead(r, e), e.get("scale_text", mla.SM_SCALE_TEXT), bool(e.get("raw_keys", False)))
    elif k == "concat_k":
        more += (fill_lead(r, e), bool(e.get("raw_keys", False)))
    elif k == "rope_compact":
        more += (fill_lead(r, e), r.model.split(" ")[0])
    build = {"paged": mla.paged, "rope": mla.rope, "per_token": mla.per_token, "cache_store": mla.cache_store,
             "ragged_prefill": mla.ragged_prefill, "concat_k": mla.concat_k, "rope_compact": mla.rope_compact}[k]
    if k == "paged" and "inputs" in e:  # more inputs of the definition (an FP8 cache's k_scale)
        more += ({n: r.value(v) for n, v in e["inputs"].items()},)
    for seed, s in r.seeded(e):
        yield build(e["definition"], s, seed, *more)


def fill_lead(r: Recipe, e: dict) -> str:
    return e.get("lead", "").format_map(r.fields())


def _biased_sorted_moe(r: Recipe, e: dict) -> Iterator[Spec]:
    """A sigmoid-routed MoE layer's steps through the sorted fused-MoE path (moe.biased_sorted_layer): `steps`
    {tokens, spread, stage, what} (and rank, with `ep`: one EP rank of ep); `kernels` [{definition, role,
    description, inputs, key}]; `layer`: a template the kernels' descriptions may use as {layer}."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield from moe.biased_sorted_layer(e["kernels"], step, seed, int(r.value(e["num_experts"])),
                                           int(r.value(e["top_k"])), int(e["n_group"]), int(e["topk_group"]),
                                           r.fields(), e.get("layer", ""), e.get("ep"))


def _biased_routing(r: Recipe, e: dict) -> Iterator[Spec]:
    """noaux_tc routing with a skewed bias (mla.biased_routing); `steps`: {tokens, spread, stage, what}."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield mla.biased_routing(e["definition"], step, seed, int(r.value(e["num_experts"])))


def _fp8_moe_rank(r: Recipe, e: dict) -> Iterator[Spec]:
    """One EP rank's fused FP8 MoE (mla.fp8_moe_rank); `steps`: {tokens, spread, rank, stage, what}."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield mla.fp8_moe_rank(e["definition"], step, seed, int(r.value(e["num_experts"])),
                               int(r.value(e["local_experts"])), int(e["ep"]), float(r.value(e["routed_scaling_factor"])))


def _embedding(r: Recipe, e: dict) -> Iterator[Spec]:
    """The token-embedding lookup (families.embedding) of token steps: whole table (tp 1) or one rank's
    vocabulary shard; id_dtype int32 or int64 (SGLang's input_ids)."""
    for seed, t in r.seeded(e):
        yield families.embedding(e["definition"], t, seed, int(r.value(e["vocab"])), int(e.get("tp", 1)),
                                 e.get("id_dtype", "int32"), e["description"], r.fields())


def _temperature(r: Recipe, e: dict) -> Iterator[Spec]:
    """The temperature softmax of b sequences' logits: per-request temperatures drawn from core.rng(seed) with
    `menu` ((value, share of requests), ...; default scenarios.TEMPERATURE_MENU). Fields: b, seed, menu."""
    menu = r.value(e.get("menu", TEMPERATURE_MENU))
    for seed, b in enumerate(r.value(e["batches"]), start=int(e.get("first_seed", 0))):
        temp = families.per_request(core.rng(seed), b, menu).astype(np.float32)
        f = r.fields(b=b, seed=seed, menu=families.menu_text(menu))
        yield Spec(e["definition"], f"b{b}", {"batch_size": b}, {"logits": "random", "temperature": temp}, seed,
                   e["description"].format_map(f), stage="decode", num_tokens=b)


def _gathered_moe(r: Recipe, e: dict) -> Iterator[Spec]:
    """A MoE layer's steps as gather / scatter GEMMs over expert-sorted rows (moe.gathered_layer): `steps`
    {tokens, alpha, stage, what}; `kernels` [{definition, role, description, inputs}]; `layer` a template the
    kernels' descriptions may use as {layer}."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield from moe.gathered_layer(e["kernels"], step, seed, int(r.value(e["num_experts"])),
                                      int(r.value(e["top_k"])), r.fields(), e.get("layer", ""))


def _routed_align(r: Recipe, e: dict) -> Iterator[Spec]:
    """moe_align_block_size of softmax-routed steps (moe.routed_align): `steps` {tokens, alpha, stage, what}."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield moe.routed_align(e["definition"], step, seed, int(r.value(e["num_experts"])), int(r.value(e["top_k"])),
                               e["description"], r.fields())


def _shared_prefix_decode(r: Recipe, e: dict) -> Iterator[Spec]:
    """Cascade attention decode (cascade.shared_prefix_decode): `steps` {batch, shared, context, sigma, what}."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield cascade.shared_prefix_decode(e["definition"], step, seed, int(e["page_size"]), float(r.value(e["sm_scale"])),
                                           e["description"], r.fields())


def _penalties(r: Recipe, e: dict) -> Iterator[Spec]:
    """Repetition / frequency / presence penalties of b sequences (logits.penalties): `prompt` and `output`
    {median, sigma, high}; `menus` {presence_penalties, frequency_penalties, repetition_penalties}."""
    menus = {k: r.value(v) for k, v in r.value(e["menus"]).items()}
    for seed, b in enumerate(r.value(e["batches"]), start=int(e.get("first_seed", 0))):
        yield logits.penalties(e["definition"], int(b), seed, int(r.value(e["vocab"])), e["prompt"], e["output"], menus,
                               e["description"], r.fields(), random_ids=bool(e.get("random_ids", False)))


def _min_p(r: Recipe, e: dict) -> Iterator[Spec]:
    """Min-p filtering of b sequences' logits (logits.min_p), min_p per request from `menu`."""
    for seed, b in enumerate(r.value(e["batches"]), start=int(e.get("first_seed", 0))):
        yield logits.min_p(e["definition"], int(b), seed, r.value(e["menu"]), e["description"], r.fields())


def _token_bitmask(r: Recipe, e: dict) -> Iterator[Spec]:
    """The grammar bitmask of structured outputs over b sequences' logits (logits.token_bitmask): `share` of requests
    with a grammar, `kinds` the menu of JSON step kinds, `mask` json (a blob) or random (the bench's draw)."""
    for seed, b in enumerate(r.value(e["batches"]), start=int(e.get("first_seed", 0))):
        yield logits.token_bitmask(e["definition"], int(b), seed, int(r.value(e["vocab"])), float(r.value(e["share"])),
                                   r.value(e["kinds"]), e["mask"], e["description"], r.fields())


def _lora_batch(r: Recipe, e: dict) -> Iterator[Spec]:
    """A LoRA shrink or expand over decode or prefill steps (lora.lora_step): `layout` bgmv or sgmv, `menu` each
    request's adapter slot ((slot, share of requests), -1: no LoRA), `inputs` the definition's other inputs."""
    menu = r.value(e["menu"])
    inputs = {k: r.value(v) for k, v in e["inputs"].items()}
    for seed, s in r.seeded(e):
        yield lora.lora_step(e["definition"], s, seed, e["layout"], menu, inputs, e["description"], r.fields())
def _ep_alltoall(r: Recipe, e: dict) -> Iterator[Spec]:
    """Expert-parallel dispatch or combine (alltoall.py, `kind`) of routed steps ({tokens, alpha, stage, what},
    tokens per rank) over `ep` ranks holding num_experts // ep experts each."""
    build = alltoall.BUILDERS[e["kind"]]
    for seed, s in r.seeded(e):
        yield build(e["definition"], s, seed, int(e["ep"]), int(r.value(e["num_experts"])), int(r.value(e["top_k"])),
                    e["description"], r.fields())
def _spec_verify(r: Recipe, e: dict) -> Iterator[Spec]:
    """Speculative decoding's verify attention (specdec.paged_verify): `steps` {batch, context, sigma, q, what}, a
    tree's also {steps, topk} (SGLang's EAGLE tree, drawn over `vocab` tokens); `layout` gqa (default) or mla."""
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield specdec.paged_verify(e["definition"], step, seed, int(e["page_size"]), float(r.value(e["sm_scale"])),
                                   e["description"], r.fields(), int(r.value(e.get("vocab", 0))),
                                   e.get("layout", "gqa"))


def _packed_routed_moe(r: Recipe, e: dict) -> Iterator[Spec]:
    """A fused MoE with pre-computed routing (packed_routing.packed_routed_moe): `steps` {tokens, alpha, stage, what},
    `routing` renormalize or llama4, `inputs` the definition's inputs after topk_ids."""
    inputs = {k: r.value(v) for k, v in e["inputs"].items()}
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield packed_routing.packed_routed_moe(e["definition"], step, seed, int(r.value(e["num_experts"])),
                                               int(r.value(e["top_k"])), e["routing"], inputs, e["description"],
                                               r.fields())


def _routed_topk_rank(r: Recipe, e: dict) -> Iterator[Spec]:
    """One EP rank's fused MoE with pre-computed grouped top-k routing (fp4moe.routed_topk_rank): `steps`
    {tokens, spread, rank, stage, what}; `inputs` the definition's other inputs."""
    inputs = {k: r.value(v) for k, v in e["inputs"].items()}
    for seed, step in enumerate(e["steps"], start=int(e.get("first_seed", 0))):
        yield fp4moe.routed_topk_rank(e["definition"], step, seed, int(r.value(e["num_experts"])),
                                      int(r.value(e["local_experts"])), int(e["ep"]), int(e["n_group"]),
                                      int(e["topk_group"]), int(r.value(e["top_k"])), inputs, e["description"],
                                      r.fields())


FAMILIES: dict[str, tuple[Callable[[Recipe, dict], Iterator[Spec]], tuple[str, ...], tuple[str, ...]]] = {
    "slot_state": (_slot_state, ("definition", "scenarios", "axes", "inputs", "description"), ("scenarios_pick", "first_seed", "per_seq")),
    "kv_append": (_kv_append, ("definition", "scenarios", "page_size", "description"),
                  ("scenarios_pick", "first_seed", "pad_to")),
    "dsa": (_dsa, ("kernel", "definition", "scenarios", "config"),
            ("scenarios_pick", "first_seed", "sm_scale", "inputs", "slot_input")),
    "mla": (_mla, ("kernel", "definition", "scenarios"),
            ("scenarios_pick", "first_seed", "page_size", "sm_scale", "inputs", "lead", "scale_text", "raw_keys")),
    "biased_routing": (_biased_routing, ("definition", "steps", "num_experts"), ("first_seed",)),
    "fp8_moe_rank": (_fp8_moe_rank, ("definition", "steps", "num_experts", "local_experts", "ep",
                                     "routed_scaling_factor"), ("first_seed",)),
    "biased_sorted_moe": (_biased_sorted_moe, ("steps", "kernels", "num_experts", "top_k", "n_group", "topk_group"),
                          ("first_seed", "layer", "ep")),
    "embedding": (_embedding, ("definition", "scenarios", "vocab", "description"),
                  ("scenarios_pick", "first_seed", "tp", "id_dtype")),
    "temperature": (_temperature, ("definition", "batches", "description"), ("menu", "first_seed")),
    "routed_align": (_routed_align, ("definition", "steps", "num_experts", "top_k", "description"), ("first_seed",)),
    "gathered_moe": (_gathered_moe, ("steps", "kernels", "num_experts", "top_k"), ("first_seed", "layer")),
    "shared_prefix_decode": (_shared_prefix_decode, ("definition", "steps", "page_size", "sm_scale", "description"),
                             ("first_seed",)),
    "penalties": (_penalties, ("definition", "batches", "vocab", "prompt", "output", "menus", "description"),
                  ("first_seed", "random_ids")),
    "token_bitmask": (_token_bitmask, ("definition", "batches", "vocab", "share", "kinds", "mask", "description"),
                      ("first_seed",)),
    "min_p": (_min_p, ("definition", "batches", "menu", "description"), ("first_seed",)),
    "lora_batch": (_lora_batch, ("definition", "scenarios", "layout", "menu", "inputs", "description"),
                   ("scenarios_pick", "first_seed")),
    "ep_alltoall": (_ep_alltoall, ("kind", "definition", "scenarios", "ep", "num_experts", "top_k", "description"),
                    ("scenarios_pick", "first_seed")),
    "spec_verify": (_spec_verify, ("definition", "steps", "page_size", "sm_scale", "description"), ("first_seed", "vocab", "layout")),
    "packed_routed_moe": (_packed_routed_moe, ("definition", "steps", "num_experts", "top_k", "routing", "inputs",
                                               "description"), ("first_seed",)),
    "routed_topk_rank": (_routed_topk_rank, ("definition", "steps", "num_experts", "local_experts", "ep", "n_group",
                                             "topk_group", "top_k", "inputs", "description"), ("first_seed",)),
}
