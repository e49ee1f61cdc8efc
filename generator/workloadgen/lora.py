"""Multi-LoRA batches: which adapter each request of a step runs with.

A server holds max_loras adapter slots (vLLM --max-loras, SGLang --max-loras-per-batch); each request names an
adapter or none (the base model). A step's requests draw their slot from a menu ((slot, share of requests), ...;
slot -1: no LoRA) with families.per_request, as the samplers' settings are drawn. The engines skip the LoRA
kernels in a step where no request has an adapter (vLLM's no_lora_flag), so such a draw is drawn again from the
same generator (`attempts` says how many draws it took).

Two layouts of the step's tokens, over decode steps (scenarios.Decode: one new token per request) or prefill
steps (scenarios.Prefill: each prompt's new tokens, q_lens):
- bgmv: token_lora_indices, the slot of every token (vLLM's token_lora_mapping);
- sgmv: one segment per request, seg_indptr = core.indptr(tokens per request) and seg_lora_indices = its slot
  (SGLang's seg_indptr and weight_indices; vLLM's sgmv merges neighbouring requests of one adapter into one
  segment, which computes the same).
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from . import core, families
from .scenarios import Decode, Prefill
from .spec import Spec

MAX_ATTEMPTS = 100
LAYOUTS = ("bgmv", "sgmv")


def request_slots(g: np.random.Generator, n: int, menu: Sequence) -> tuple[np.ndarray, int]:
    """The adapter slot of each of n requests (-1: none), per_request(g, n, menu), drawn again until some
    request has an adapter; (slots as int32, draws it took)."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        slots = families.per_request(g, n, menu).astype(np.int32)
        if (slots >= 0).any():
            return slots, attempt
    raise ValueError(f"no request of {n} drew an adapter from {families.menu_text(menu)} in {MAX_ATTEMPTS} draws")


def lora_step(name: str, step, seed: int, layout: str, menu: Sequence, inputs: Mapping, text: str,
              fields: Optional[Mapping] = None) -> Spec:
    """One LoRA shrink or expand workload of a decode or prefill step in the `layout` (bgmv or sgmv); `inputs`:
    the definition's other inputs ("random" or a scalar). Fields: what, seed, call, tokens, requests, with_lora
    (requests with an adapter), adapters (distinct slots in use), attempts, menu (text)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
    g = core.rng(seed)
    if isinstance(step, Decode):
        lens = np.ones(step.batch, dtype=np.int64)
        call = f"g = core.rng({seed})"
        stage = "decode"
    elif isinstance(step, Prefill):
        lens, _ = step.lens(g)  # the prompts' new tokens (a cached prefix has no LoRA work)
        call = step.call(seed)
        stage = "prefill"
    else:
        raise ValueError(f"a LoRA step is a decode or a prefill step, not {step!r}")
    slots, attempts = request_slots(g, len(lens), menu)
    call += f"; slots = lora.request_slots(g, {len(lens)}, menu)"
    tokens = int(lens.sum())
    if layout == "bgmv":
        axes = {"num_tokens": tokens}
        index = {"token_lora_indices": np.repeat(slots, lens).astype(np.int32)}
        call += "; token_lora_indices = the slot of each token's request"
    else:
        axes = {"num_tokens": tokens, "num_segments": len(lens), "len_seg_indptr": len(lens) + 1}
        index = {"seg_indptr": core.indptr(lens).astype(np.int32), "seg_lora_indices": slots}
        call += "; seg_indptr = core.indptr(tokens of each request); seg_lora_indices = slots"
    f = {**(fields or {}), "what": step.what, "seed": seed, "call": call, "tokens": tokens, "requests": len(lens),
         "with_lora": int((slots >= 0).sum()), "adapters": len(np.unique(slots[slots >= 0])), "attempts": attempts,
         "menu": families.menu_text(menu)}
    return Spec(name, step.key, axes, {**dict(inputs), **index}, seed, text.format_map(f), stage=stage,
                num_tokens=tokens)
