"""Spec, one workload as a recipe writes it down; recipes are what one model's serving produces.

A recipe file (dataset/recipes/<model>.yaml, run by recipe.py and the family builders) describes them. `kerneltrace workloads` writes them:
workloads/<type>/<definition>.jsonl (the whole file, for each definition a recipe covers) and
blob/workloads/<type>/<definition>/<uuid>.safetensors for inputs given as arrays (a blob byte-identical to one
written before is not written again: the workload names the earlier file, often another definition's). `--check` rebuilds everything in memory and fails if a committed file differs,
so a blob in the dataset is always the output of the documented generator with its recorded seed.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

# Fixed namespace: a workload's uuid follows from its definition and key, so regenerating a recipe
# rewrites the same files instead of piling up new ones.
NAMESPACE = uuidlib.UUID("5b0c3c9e-6f0e-4a57-9d84-3f2a3a8f4f11")

Input = Union[str, float, int, bool, np.ndarray]  # "random", a scalar value, or an array for a blob


@dataclass(frozen=True)
class Spec:
    """One workload. inputs: name -> "random" | scalar | np.ndarray (stored as a safetensors blob,
    cast to the definition's dtype). seed: drives every "random" input (the bench draws them from it)
    and, by convention, the structured generator that made the arrays. description: how it was made
    (the generator call and the serving situation it stands for). stage and num_tokens: the
    step as data, set by the engine's family builders (prose is never parsed for them)."""

    definition: str
    key: str  # unique within the definition, e.g. "decode_b64_ctx2k"
    axes: dict
    inputs: dict = field(default_factory=dict)
    seed: int = 0
    description: str = ""
    # The model step the workload stands for, written as workload fields (the export reads them):
    # "decode" or "prefill", and the tokens of that step (new tokens; decode: one per sequence).
    stage: Optional[str] = None
    num_tokens: Optional[int] = None

    @property
    def uuid(self) -> str:
        return str(uuidlib.uuid5(NAMESPACE, f"{self.definition}/{self.key}"))


def as_jsonable(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value
