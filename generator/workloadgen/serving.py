"""Stage and token count of a workload whose recipe did not state them.

Recipes made by the engine from data (recipe.py) state both for every workload. The modules still
written in Python leave them unset on most Specs; for those, this derives them once, at generation
time, by the rules the export applied to every workload before the fields existed (the definition's
one stage tag, the token axis, the scenario words the module writes). The result is written into the
workload file, so a rewording shows up in the committed diff and `workloads --check`, never silently
in an exported column. It goes away with the last Python recipe module.
"""

from __future__ import annotations

import re
from typing import Optional

_STAGE_WORDS = re.compile(r"\b(decod(?:e|ing)|prefill|prompts?)\b")
_RUNNING = re.compile(r"\b\d+ (requests|short chats) around\b")
_MOE_TOKENS = re.compile(r"\b(\d+) tokens x \d+ experts\b")
_EACH_TOKEN = re.compile(r"\beach of the (\d+) tokens\b")


def legacy_stage(definition: dict, description: str) -> Optional[str]:
    stages = [t.split(":", 1)[1] for t in definition.get("tags") or () if t.startswith("stage:")]
    if len(stages) == 1:
        return stages[0]
    m = _STAGE_WORDS.search(description)
    if m is None:  # "64 requests around 1k context": running requests, one new token each
        return "decode" if _RUNNING.search(description) else None
    return "decode" if m.group(1).startswith("decod") else "prefill"


def legacy_tokens(definition: dict, axes: dict, description: str) -> Optional[int]:
    for name in ("total_q", "num_tokens", "seq_len", "num_q"):
        if name in axes:
            return int(axes[name])
    if "total_tokens" in axes:  # MoE rows are token x expert pairs; elsewhere tokens
        if definition.get("type") not in ("grouped_gemm", "moe"):
            return int(axes["total_tokens"])
        m = _MOE_TOKENS.search(description)
        return int(m.group(1)) if m else None
    if "B" in axes and "Q" in axes:
        return int(axes["B"]) * int(axes["Q"])
    if "G" in axes and "M" in axes:
        return int(axes["G"]) * int(axes["M"])
    for name in ("M", "batch_size"):
        if name in axes:
            return int(axes[name])
    m = _EACH_TOKEN.search(description)
    if m is not None:
        return int(m.group(1))
    return int(axes["num_rows"]) if "num_rows" in axes else None
