"""Every workload fits the hardware its calling records serve it on.

A calling record with a `serving` block says where one step of the model runs: the hardware record
(its `memory_gb`), the share of that memory the engine may use (`memory_utilization`, 0.9 when
absent, as vLLM's gpu_memory_utilization), the weights one GPU holds and the KV-cache bytes one token
of context takes on one GPU, all layers together. A workload of a definition the record calls needs

    weights_gb_per_gpu + kv_tokens(workload) x kv_bytes_per_token / 1e9  <=  memory_utilization x memory_gb

(activations are not counted: the check is a lower bound on what the step needs, so a workload
that fails it cannot run on that hardware at all). kv_tokens is what the workload's KV cache holds:
- paged attention (a var axis num_kv_indices and a const page_size): the pages the batch's
  sequences occupy, num_kv_indices x page_size (whole pages: the allocator hands out pages);
- ragged attention over the step's own keys/values (an axis total_kv): total_kv;
- other kernels with a page pool but no page list (cache stores, appends: num_pages x page_size):
  the pool, since nothing says which pages are in use;
- anything else: no KV cache (the weights alone must still fit).
"""

from __future__ import annotations

from typing import Iterator, Mapping, Optional

from ..model.dataset import Dataset
from ..model.diagnostics import Diagnostic
from ..model.diagnostics import make_pointer as ptr
from ..model.layout import CANONICAL
from .common import error

DEFAULT_UTILIZATION = 0.9  # model.json: memory_utilization absent means 0.9


def kv_tokens(const_axes: Mapping[str, int], axes: Mapping[str, int]) -> Optional[int]:
    """Tokens of context a workload's KV cache holds (see the module docstring); None: no KV cache."""
    values = {**const_axes, **axes}
    page_size = values.get("page_size")
    if "num_kv_indices" in values and page_size is not None:
        return int(values["num_kv_indices"]) * int(page_size)
    if "total_kv" in values:
        return int(values["total_kv"])
    if "num_pages" in values and page_size is not None:
        return int(values["num_pages"]) * int(page_size)
    return None


def budget(serving: Mapping, memory_gb: float) -> float:
    return float(serving.get("memory_utilization", DEFAULT_UTILIZATION)) * float(memory_gb)


def check_memory(ds: Dataset) -> Iterator[Diagnostic]:
    callers: dict[str, list] = {}
    for m in ds.models.values():
        serving = m.data.get("serving") or {}
        hw = ds.hardware_spec(serving["hardware"]) if serving.get("hardware") else None
        memory_gb = hw.data.get("memory_gb") if hw is not None else None
        if memory_gb is None:
            continue  # no serving block, an unknown hardware record (check_models says so), or no memory size
        weights = float(serving.get("weights_gb_per_gpu", 0.0))
        limit = budget(serving, memory_gb)
        if weights > limit:
            yield error(m, ptr("serving", "weights_gb_per_gpu"),
                        f"{weights:g} GB of weights per GPU do not fit {hw.name}: memory_utilization "
                        f"{serving.get('memory_utilization', DEFAULT_UTILIZATION):g} x {memory_gb:g} GB = {limit:.1f} GB",
                        "shard the weights over more GPUs (tensor_parallel / expert_parallel) or serve on "
                        "hardware with more memory")
            continue
        for k in m.kernels:
            callers.setdefault(k.id, []).append((m, hw, memory_gb, weights, limit))
    for w in ds.workloads:
        d = ds.definitions.get(w.definition)
        if d is None or w.definition not in callers:
            continue
        tokens = kv_tokens(d.const_axes, w.axes)
        if not tokens:
            continue
        for m, hw, memory_gb, weights, limit in callers[w.definition]:
            per_token = int(m.data["serving"].get("kv_bytes_per_token", 0))
            kv_gb = tokens * per_token / 1e9
            if weights + kv_gb <= limit:
                continue
            fits = int((limit - weights) * 1e9 // per_token) if per_token else 0
            yield error(w, "/workload/axes",
                        f"workload {w.uuid} does not fit {hw.name} as models/{m.name}.json serves it: "
                        f"{tokens:,} KV tokens x {per_token:,} bytes = {kv_gb:.1f} GB of KV cache + {weights:g} GB "
                        f"of weights = {weights + kv_gb:.1f} GB per GPU, over memory_utilization "
                        f"{m.data['serving'].get('memory_utilization', DEFAULT_UTILIZATION):g} x {memory_gb:g} GB = "
                        f"{limit:.1f} GB",
                        f"keep the batch's context under {fits:,} tokens (a smaller batch or shorter contexts in "
                        f"the recipe that writes it: {CANONICAL.recipe_file('<model>')}, or a module of generator/workloadgen/), "
                        f"or serve on hardware with more memory")
