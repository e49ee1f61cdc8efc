"""Logits processing before the sampler: per-request penalties (repetition, frequency, presence) over each
sequence's prompt and generated tokens, min-p filtering, and the grammar bitmask of structured outputs.

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
              text: str, fields: Optional[Mapping] = None, random_ids: bool = False) -> Spec:
    """Penalties over b sequences: prompt and output lengths log-normal ({median, sigma, high}, at least 1), token
    ids token_ids(g, prompt + output, vocab) per request, then the three per-request penalties (presence,
    frequency, repetition menus). With random_ids the ids are left to the bench ("random": the definition's
    uniform draw over the vocabulary, no padding) and only the lengths' maxima are kept as the padded widths: no
    blob of ids. Fields: b, seed, call, attempts, menus (text)."""
    g = core.rng(seed)
    p_lens = core.seq_lens(g, b, int(prompt["median"]), low=1, high=int(prompt["high"]), sigma=float(prompt["sigma"]))
    o_lens = core.seq_lens(g, b, int(output["median"]), low=1, high=int(output["high"]), sigma=float(output["sigma"]))
    ids = [] if random_ids else [families.token_ids(g, int(p + o), vocab) for p, o in zip(p_lens, o_lens)]
    unset = {"presence_penalties": 0.0, "frequency_penalties": 0.0, "repetition_penalties": 1.0}
    drawn, attempts = _settings(g, b, {k: menus[k] for k in unset}, unset)
    call = (f"g = core.rng({seed}); prompt_lens = core.seq_lens(g, {b}, {prompt['median']}, low=1, high={prompt['high']}, "
            f"sigma={prompt['sigma']}); output_lens = core.seq_lens(g, {b}, {output['median']}, low=1, "
            f"high={output['high']}, sigma={output['sigma']}); ids of request i = families.token_ids(g, prompt_lens[i] + "
            f"output_lens[i], {vocab}), its prompt then its output, padded with {vocab}")
    if random_ids:
        call = (call.split("; ids of request i")[0] + f"; prompt and output ids drawn by the bench (uniform over the "
                f"{vocab} tokens, every row as wide as the longest: {int(p_lens.max())} and {int(o_lens.max())})")
    f = {**(fields or {}), "b": b, "seed": seed, "call": call, "attempts": attempts,
         **{f"{k}_menu": families.menu_text(menus[k]) for k in unset}}
    ids_in = ({"prompt_token_ids": "random", "output_token_ids": "random"} if random_ids else
              {"prompt_token_ids": padded([r[:p] for r, p in zip(ids, p_lens)], vocab),
               "output_token_ids": padded([r[p:] for r, p in zip(ids, p_lens)], vocab)})
    return Spec(name, f"b{b}",
                {"batch_size": b, "max_prompt_len": int(p_lens.max()), "max_output_len": int(o_lens.max())},
                {"logits": "random", **ids_in, **drawn}, seed, text.format_map(f), stage="decode", num_tokens=b)


def min_p(name: str, b: int, seed: int, menu: Sequence, text: str, fields: Optional[Mapping] = None) -> Spec:
    """Min-p filtering of b sequences' logits: min_p = per_request(g, b, menu), redrawn until some request sets it.
    Fields: b, seed, attempts, menu (text)."""
    drawn, attempts = _settings(core.rng(seed), b, {"min_p": menu}, {"min_p": 0.0})
    f = {**(fields or {}), "b": b, "seed": seed, "attempts": attempts, "menu": families.menu_text(menu)}
    return Spec(name, f"b{b}", {"batch_size": b}, {"logits": "random", "min_p": drawn["min_p"]}, seed,
                text.format_map(f), stage="decode", num_tokens=b)


# A structured-output request's next-token bitmask, as a JSON grammar's steps make it (xgrammar's masks): at a
# structural position (after "{", between members) only the tokens that can start what comes next are allowed, a
# few dozen to a thousand of them; in a number, the digit tokens (all numbers of one to three digits are single
# tokens in the Llama 3 and Qwen vocabularies: about 1110); inside a string almost everything but the tokens with a
# quote, a backslash or a control character. Kind -> (low, high) of the allowed count, or None: all but a share.
BITMASK_KINDS = {"structural": (16, 1024), "number": (1000, 1200), "string": None}
STRING_DISALLOWED = 0.03


def json_like_mask(g: np.random.Generator, kind: str, vocab: int) -> np.ndarray:
    """One row of allowed flags (bool [vocab]) of a JSON-grammar step of `kind` (BITMASK_KINDS); the allowed ids
    are spread over the vocabulary by g (ids carry no meaning here)."""
    if BITMASK_KINDS[kind] is None:
        allowed = np.ones(vocab, dtype=bool)
        allowed[g.choice(vocab, size=int(STRING_DISALLOWED * vocab), replace=False)] = False
        return allowed
    low, high = BITMASK_KINDS[kind]
    count = int(np.exp(g.uniform(np.log(low), np.log(high))))  # log-uniform
    allowed = np.zeros(vocab, dtype=bool)
    allowed[g.choice(vocab, size=count, replace=False)] = True
    return allowed


def pack_bitmask(allowed: np.ndarray) -> np.ndarray:
    """bool [rows, vocab] -> int32 [rows, ceil(vocab / 32)]: token j is bit j % 32 (the least significant first) of
    word j // 32, as xgrammar's fill_next_token_bitmask writes them; bits past the vocabulary are 0."""
    rows, vocab = allowed.shape
    words = -(-vocab // 32)
    bits = np.zeros((rows, words * 32), dtype=np.uint64)
    bits[:, :vocab] = allowed
    packed = (bits.reshape(rows, words, 32) << np.arange(32, dtype=np.uint64)).sum(-1)
    return packed.astype(np.uint32).view(np.int32)


def token_bitmask(name: str, b: int, seed: int, vocab: int, share: float, kinds: Sequence, mask: str, text: str,
                  fields: Optional[Mapping] = None) -> Spec:
    """The grammar bitmask over b sequences' logits: each request has a grammar with probability `share` (drawn
    until one does: the engines call the kernel only then), indices = the rows that have one, in batch order.
    mask "json": the bitmask as a blob, rows with a grammar from json_like_mask with a step kind per_request(g, ...,
    kinds), the others all ones (-1, vLLM's fill for a row without a grammar); mask "random": the bench draws
    the bitmask (every bit uniform: half the tokens allowed). Fields: b, seed, attempts, structured (count),
    kinds (the rows' kinds, json only), kinds_menu (text)."""
    g = core.rng(seed)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        has = g.random(b) < share
        if has.any():
            break
    else:
        raise ValueError(f"no request of {b} has a grammar in {MAX_ATTEMPTS} draws")
    indices = np.flatnonzero(has).astype(np.int32)
    if mask == "json":
        drawn = families.per_request(g, len(indices), kinds)
        allowed = np.ones((b, vocab), dtype=bool)
        for row, kind in zip(indices, drawn):
            allowed[row] = json_like_mask(g, str(kind), vocab)
        bitmask = pack_bitmask(allowed)
        kinds_text = ", ".join(str(k) for k in drawn)
    elif mask == "random":
        bitmask, kinds_text = "random", ""
    else:
        raise ValueError(f"mask is json or random, not {mask!r}")
    f = {**(fields or {}), "b": b, "seed": seed, "attempts": attempt, "structured": len(indices), "kinds": kinds_text,
         "kinds_menu": families.menu_text(kinds)}
    return Spec(name, f"b{b}", {"batch_size": b, "num_structured": len(indices)},
                {"logits": "random", "bitmask": bitmask, "indices": indices}, seed, text.format_map(f),
                stage="decode", num_tokens=b)
