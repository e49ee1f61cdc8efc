"""Logits processing before the sampler: per-request penalties (repetition, frequency, presence) over each
sequence's prompt and generated tokens, and min-p filtering.

A batch of b sequences draws its per-request settings from menus ((value, share of requests), ...) with
families.per_request, as the samplers' workloads do. The engine runs these kernels only for a step in which
some request sets the setting (vLLM: no_penalties, min_p_count), so a draw where none does is drawn again
from the same generator (the description records the call; `attempts` says how many draws it took).
Token ids come from families.token_ids (Zipf-distributed natural-looking text), one draw per request for its
prompt and output together, so a request's output repeats its prompt's frequent tokens as text does.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from . import core, families
from .spec import Spec

MAX_ATTEMPTS = 100


def _settings(g: np.random.Generator, b: int, menus: Mapping[str, Sequence], unset: Mapping[str, float]):
    """Per-request values for each menu, redrawn until some request sets one (value != unset)."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        drawn = {k: families.per_request(g, b, m).astype(np.float32) for k, m in menus.items()}
        if any((drawn[k] != unset[k]).any() for k in menus):
            return drawn, attempt
    raise ValueError(f"no request of {b} set any of {', '.join(menus)} in {MAX_ATTEMPTS} draws")


def padded(rows: Sequence[np.ndarray], pad: int) -> np.ndarray:
    """Rows of token ids padded to the longest with `pad` (vLLM pads with vocab_size), int64."""
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), pad, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def penalties(name: str, b: int, seed: int, vocab: int, prompt: Mapping, output: Mapping, menus: Mapping,
              text: str, fields: Optional[Mapping] = None) -> Spec:
    """Penalties over b sequences: prompt and output lengths log-normal ({median, sigma, high}, at least 1), token
    ids token_ids(g, prompt + output, vocab) per request, then the three per-request penalties (presence,
    frequency, repetition menus). Fields: b, seed, call, attempts, menus (text)."""
    g = core.rng(seed)
    p_lens = core.seq_lens(g, b, int(prompt["median"]), low=1, high=int(prompt["high"]), sigma=float(prompt["sigma"]))
    o_lens = core.seq_lens(g, b, int(output["median"]), low=1, high=int(output["high"]), sigma=float(output["sigma"]))
    ids = [families.token_ids(g, int(p + o), vocab) for p, o in zip(p_lens, o_lens)]
    unset = {"presence_penalties": 0.0, "frequency_penalties": 0.0, "repetition_penalties": 1.0}
    drawn, attempts = _settings(g, b, {k: menus[k] for k in unset}, unset)
    call = (f"g = core.rng({seed}); prompt_lens = core.seq_lens(g, {b}, {prompt['median']}, low=1, high={prompt['high']}, "
            f"sigma={prompt['sigma']}); output_lens = core.seq_lens(g, {b}, {output['median']}, low=1, "
            f"high={output['high']}, sigma={output['sigma']}); ids of request i = families.token_ids(g, prompt_lens[i] + "
            f"output_lens[i], {vocab}), its prompt then its output, padded with {vocab}")
    f = {**(fields or {}), "b": b, "seed": seed, "call": call, "attempts": attempts,
         **{f"{k}_menu": families.menu_text(menus[k]) for k in unset}}
    return Spec(name, f"b{b}",
                {"batch_size": b, "max_prompt_len": int(p_lens.max()), "max_output_len": int(o_lens.max())},
                {"logits": "random", "prompt_token_ids": padded([r[:p] for r, p in zip(ids, p_lens)], vocab),
                 "output_token_ids": padded([r[p:] for r, p in zip(ids, p_lens)], vocab), **drawn},
                seed, text.format_map(f), stage="decode", num_tokens=b)


def min_p(name: str, b: int, seed: int, menu: Sequence, text: str, fields: Optional[Mapping] = None) -> Spec:
    """Min-p filtering of b sequences' logits: min_p = per_request(g, b, menu), redrawn until some request sets it.
    Fields: b, seed, attempts, menu (text)."""
    drawn, attempts = _settings(core.rng(seed), b, {"min_p": menu}, {"min_p": 0.0})
    f = {**(fields or {}), "b": b, "seed": seed, "attempts": attempts, "menu": families.menu_text(menu)}
    return Spec(name, f"b{b}", {"batch_size": b}, {"logits": "random", "min_p": drawn["min_p"]}, seed,
                text.format_map(f), stage="decode", num_tokens=b)
