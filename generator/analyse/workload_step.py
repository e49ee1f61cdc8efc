"""The model step a workload stands for: its stage (decode or prefill) and its tokens, from the definition's
tags, the workload's axes and the description the recipes write."""

from __future__ import annotations

import re
from typing import Any, Optional

from ..model.dataset import Dataset

_STAGE_WORDS = re.compile(r"\b(decod(?:e|ing)|prefill|prompts?)\b")
_RUNNING = re.compile(r"\b\d+ (requests|short chats) around\b")
_MOE_TOKENS = re.compile(r"\b(\d+) tokens x \d+ experts\b")


def workload_stage(w: Any, ds: Dataset) -> Optional[str]:
    """decode or prefill: the definition's one `stage:` tag, else the first of decode/decoding or
    prefill/prompt in the workload's description (the recipes write the scenario there), else decode
    for 'N requests around <context>'; None if none of these."""
    d = ds.definitions.get(w.definition)
    stages = list(d.stages) if d is not None else []
    if len(stages) == 1:
        return stages[0]
    text = w.data["workload"].get("description") or ""
    m = _STAGE_WORDS.search(text)
    if m is None:  # "64 requests around 1k context": running requests, one new token each
        return "decode" if _RUNNING.search(text) else None
    return "decode" if m.group(1).startswith("decod") else "prefill"


_EACH_TOKEN = re.compile(r"\beach of the (\d+) tokens\b")


def workload_tokens(w: Any, ds: Dataset) -> Optional[int]:
    """Tokens of the model step the workload stands for, whatever the definition calls that axis:
    total_q (paged/ragged prefill: new tokens), num_tokens, seq_len, num_q, B x Q, G x M, M (GEMM
    rows), batch_size (decode: one token per sequence); for MoE grouped GEMMs over total_tokens rows
    (token x expert pairs), the tokens their description states ('8 tokens x 8 experts'), elsewhere
    total_tokens itself; for rows that are tokens x heads, the tokens the description states ('each of
    the 16 tokens'); else num_rows (one row per token)."""
    axes = w.data["workload"]["axes"]
    text = w.data["workload"].get("description") or ""
    for name in ("total_q", "num_tokens", "seq_len", "num_q"):
        if name in axes:
            return int(axes[name])
    if "total_tokens" in axes:
        d = ds.definitions.get(w.definition)
        if d is not None and d.type not in ("grouped_gemm", "moe"):
            return int(axes["total_tokens"])
        m = _MOE_TOKENS.search(text)
        return int(m.group(1)) if m else None
    if "B" in axes and "Q" in axes:
        return int(axes["B"]) * int(axes["Q"])
    if "G" in axes and "M" in axes:
        return int(axes["G"]) * int(axes["M"])
    for name in ("M", "batch_size"):
        if name in axes:
            return int(axes[name])
    m = _EACH_TOKEN.search(text)
    if m is not None:
        return int(m.group(1))
    return int(axes["num_rows"]) if "num_rows" in axes else None
