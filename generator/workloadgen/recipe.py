"""Recipes as data: dataset/recipes/<model>.yaml, one per model, named as its calling record
(models/<model>.json). A recipe holds the model's constants, its serving scenarios and one entry per
definition it writes workloads for; this module turns it into Specs with the builders of families.py.

    model: Llama-3.1-8B TP1            # the label descriptions use: {model}
    constants: {sm_scale: 0.0883...}   # {name} in templates; "$name" as a value
    scenarios:                         # a list, or the name of a set in scenarios.SETS
      decode:  [{batch: 1, context: 32768, sigma: 0.0, what: "..."}, ...]
      prefill: PREFILL_STEPS
      tokens:  [{tokens: 1, stage: decode, what: "decode, batch 1"}, ...]
      # a prefill step: {batch, tokens, prefix, sigma, what}
    workloads:
      - {family: paged_decode, definition: ..., scenarios: decode, page_size: 16, sm_scale: $sm_scale,
         description: "{model} decode, {what} ..."}

Families (FAMILIES below) and the fields their templates get: tokens (m, what, seed, rows), paged_decode,
paged_prefill, ragged_prefill, rope, sampling, embedding_shard, listed, moe_grouped_gemm; and, run by
runners.py: slot_state and kv_append (state.py), dsa (dsa.py), mla, biased_routing and fp8_moe_rank (mla.py),
biased_sorted_moe, gathered_moe and routed_align (moe.py), embedding and temperature, shared_prefix_decode
(cascade.py), penalties, min_p and token_bitmask (logits.py), lora_batch (lora.py), ep_alltoall (alltoall.py),
packed_routed_moe (packed_routing.py), routed_topk_rank (fp4moe.py); see each builder.
Every entry's seed is its scenario's index in its list (rope: decode steps first, then prefill, counting on),
from `first_seed` where the family takes it. A MoE step is {tokens, alpha, stage, what}.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import yaml

from ..model.errors import KernelTraceError
from ..model.fileio import SAFE_YAML_LOADER
from ..model.layout import CANONICAL
from . import core, families, moe, runners
from .scenarios import SETS, Decode, MoeStep, Prefill, Tokens
from .spec import Spec


class RecipeError(KernelTraceError):
    pass


class Recipe:
    """One recipe file, read: its constants and scenarios resolved, its entries not yet run."""

    def __init__(self, path: Path, data: Any):
        self.path = path
        if not isinstance(data, dict) or not isinstance(data.get("workloads"), list):
            raise RecipeError(f"{path}: a recipe is a mapping with model, constants, scenarios and a workloads list")
        self.model = str(data.get("model", ""))
        self.constants = dict(data.get("constants") or {})
        self.scenarios = {name: self._steps(name, value) for name, value in (data.get("scenarios") or {}).items()}
        self.entries = data["workloads"]

    def where(self, i: int, key: str = "") -> str:
        return f"{self.path}: workloads[{i}]" + (f".{key}" if key else "")

    def _steps(self, name: str, value: Any) -> list:
        if isinstance(value, str):
            if value not in SETS:
                raise RecipeError(f"{self.path}: scenarios.{name}: no set named {value!r} (known: {', '.join(SETS)})")
            return list(SETS[value])
        if not isinstance(value, list):
            raise RecipeError(f"{self.path}: scenarios.{name}: a list of steps or the name of a set")
        return [self._step(f"scenarios.{name}[{j}]", step) for j, step in enumerate(value)]

    def _step(self, where: str, step: Any):
        keys = set(step) if isinstance(step, dict) else set()
        try:
            if keys == {"batch", "context", "sigma", "what"}:
                return Decode(int(step["batch"]), int(step["context"]), float(step["sigma"]), str(step["what"]))
            if keys == {"batch", "tokens", "prefix", "sigma", "what"}:
                return Prefill(int(step["batch"]), int(step["tokens"]), int(step["prefix"]), float(step["sigma"]),
                               str(step["what"]))
            # stage null: the workloads record no stage (a step written down before workloads had one)
            if keys == {"tokens", "stage", "what"} and step["stage"] in ("decode", "prefill", None):
                return Tokens(int(step["tokens"]), str(step["what"]), step["stage"])
            # a routed MoE step (moe.routed_counts' skew alpha); without a stage its workloads record none
            if keys in ({"tokens", "alpha", "what"}, {"tokens", "alpha", "stage", "what"}) and \
                    step.get("stage") in ("decode", "prefill", None):
                return MoeStep(int(step["tokens"]), float(step["alpha"]), str(step["what"]), step.get("stage"))
        except (TypeError, ValueError) as exc:
            raise RecipeError(f"{self.path}: {where}: {exc}") from None
        raise RecipeError(f"{self.path}: {where}: a step is {{batch, context, sigma, what}} (decode), {{batch, tokens, "
                          f"prefix, sigma, what}} (prefill), {{tokens, stage: decode|prefill|null, what}} or {{tokens, "
                          f"alpha, stage, what}} (MoE)")

    def value(self, v: Any) -> Any:
        """A constant's value for "$name"; anything else as written."""
        if isinstance(v, str) and v.startswith("$"):
            if v[1:] not in self.constants:
                raise RecipeError(f"{self.path}: no constant named {v[1:]!r}")
            return self.constants[v[1:]]
        return v

    def fields(self, **more) -> dict:
        return {**self.constants, "model": self.model, **more}

    def specs(self) -> Iterator[Spec]:
        for i, entry in enumerate(self.entries):
            if not isinstance(entry, dict) or entry.get("family") not in FAMILIES:
                raise RecipeError(f"{self.where(i, 'family')}: one of {', '.join(FAMILIES)}")
            run, required, optional = FAMILIES[entry["family"]]
            missing = [k for k in required if k not in entry]
            if missing:
                raise RecipeError(f"{self.where(i)}: {entry['family']} needs {', '.join(missing)}")
            unknown = sorted(set(entry) - {"family", *required, *optional})
            if unknown:  # a misspelt key would otherwise fall back to a default silently
                raise RecipeError(f"{self.where(i, unknown[0])}: not a key of {entry['family']} (its keys: "
                                  f"{', '.join((*required, *optional))})")
            try:
                yield from run(self, entry)
            except (KeyError, IndexError, ValueError) as exc:
                raise RecipeError(f"{self.where(i)}: {type(exc).__name__}: {exc}") from None

    def steps(self, entry: dict, key: str = "scenarios") -> list:
        name = entry[key]
        if name not in self.scenarios:
            raise KeyError(f"no scenario list named {name!r} (this recipe has {', '.join(self.scenarios)})")
        steps = self.scenarios[name]
        return [steps[j] for j in entry[f"{key}_pick"]] if f"{key}_pick" in entry else steps

    def seeded(self, entry: dict, key: str = "scenarios"):
        """(seed, step) of an entry's steps: seeds count from `first_seed` (default 0)."""
        return enumerate(self.steps(entry, key), start=int(entry.get("first_seed", 0)))


def _tokens(r: Recipe, e: dict) -> Iterator[Spec]:
    """A kernel whose var axes follow the step's token count m: `axes` values are templates ("{m}") or numbers.
    `each` (optional): a list of field sets, one workload per set and step (e.g. q and k heads of one norm).
    `per_token` (optional): rows per token, the field {rows} (e.g. tokens x routed experts); a field set of
    `each` may give its own per_token and description. `count_rows` (optional): num_tokens is the rows, not
    the step's tokens (pair-row workloads written so before the field was stated)."""
    for seed, t in r.seeded(e):
        for more in e.get("each", [{}]):
            rows = t.count * int(more.get("per_token", e.get("per_token", 1)))
            f = r.fields(m=t.count, what=t.what, seed=seed, rows=rows, **more)
            axes = {k: int(v.format_map(f)) if isinstance(v, str) else int(v) for k, v in e["axes"].items()}
            inputs = {k: r.value(v) for k, v in e["inputs"].items()}
            yield Spec(e["definition"], e["key"].format_map(f), axes, inputs, seed,
                       more.get("description", e["description"]).format_map(f), stage=t.stage,
                       num_tokens=rows if e.get("count_rows") else t.count)


def _paged_decode(r: Recipe, e: dict) -> Iterator[Spec]:
    """inputs (optional): more inputs of the definition (e.g. sinks: random)."""
    for seed, s in enumerate(r.steps(e)):
        yield families.paged_decode(e["definition"], s, seed, int(e["page_size"]), r.value(e["sm_scale"]),
                                    e.get("description", families.PAGED_DECODE_TEXT), r.fields(), _extra(r, e))


def _paged_prefill(r: Recipe, e: dict) -> Iterator[Spec]:
    """q_first (optional): total_q is the first axis, as some definitions list it."""
    for seed, s in enumerate(r.steps(e)):
        yield families.paged_prefill(e["definition"], s, seed, int(e["page_size"]), r.value(e["sm_scale"]),
                                     e.get("description", families.PAGED_PREFILL_TEXT), r.fields(),
                                     q_first=bool(e.get("q_first", False)), extra=_extra(r, e))


def _extra(r: Recipe, e: dict) -> dict:
    return {k: r.value(v) for k, v in e.get("inputs", {}).items()}


def _ragged_prefill(r: Recipe, e: dict) -> Iterator[Spec]:
    for seed, s in enumerate(r.steps(e)):
        yield families.ragged_prefill(e["definition"], s, seed, r.value(e["sm_scale"]), e["description"], r.fields(),
                                      q_first=bool(e.get("q_first", False)))


def _listed(r: Recipe, e: dict) -> Iterator[Spec]:
    """Shapes given one by one: `shapes` is a list of {key, axes, tokens, stage, what}; seed = its index."""
    for seed, shape in enumerate(e["shapes"]):
        f = r.fields(what=shape["what"], m=shape["tokens"], seed=seed)
        yield Spec(e["definition"], shape["key"], {k: int(v) for k, v in shape["axes"].items()},
                   {k: r.value(v) for k, v in e["inputs"].items()}, seed, e["description"].format_map(f),
                   stage=shape["stage"], num_tokens=int(shape["tokens"]))


def _moe_grouped_gemm(r: Recipe, e: dict) -> Iterator[Spec]:
    """The expert GEMMs of routed MoE steps ({tokens, alpha, what}): moe.grouped_gemms, one workload per
    step and entry of `gemms` ([definition, role], or [definition, role, {input: value}] for a definition
    with more inputs than A, B and m_indptr, e.g. per-row weights); description: moe.MOE_TEXT's fields."""
    extra = {g[0]: {k: r.value(v) for k, v in g[2].items()} for g in e["gemms"] if len(g) > 2}
    for seed, st in enumerate(r.steps(e)):
        for spec in moe.grouped_gemms([tuple(g[:2]) for g in e["gemms"]], st.tokens, st.alpha, st.what, seed,
                                      int(r.value(e["num_experts"])), int(r.value(e["top_k"])),
                                      e.get("description", moe.MOE_TEXT), r.fields(), st.stage):
            yield replace(spec, inputs={**spec.inputs, **extra[spec.definition]}) if spec.definition in extra else spec


def _rope(r: Recipe, e: dict) -> Iterator[Spec]:
    """Decode steps (`decode`, `decode_pick`) then prefill steps; max_position: the cache's rows, "largest + 1"
    (the rows the step's positions need), or absent for the largest position rounded up to a multiple of
    4096. description: {decode: ..., prefill: ...}. inputs (optional): the definition's inputs, "@positions"
    for the positions (default families.ROPE_INPUTS). axes (optional): more axes, the same in every workload
    (the per-rank head counts of a definition whose heads are var axes)."""
    max_position = r.value(e["max_position"]) if "max_position" in e else None
    inputs = {k: r.value(v) for k, v in e["inputs"].items()} if "inputs" in e else None
    more = {k: int(r.value(v)) for k, v in e.get("axes", {}).items()}
    for s, positions, seed in families.rope_steps(r.steps(e, "decode"), r.steps(e, "prefill")):
        text = e["description"]["decode" if isinstance(s, Decode) else "prefill"]
        spec = families.rope(e["definition"], s, positions, seed, max_position, text, r.fields(**more), inputs)
        yield replace(spec, axes={**spec.axes, **more}) if more else spec


def _sampling(r: Recipe, e: dict) -> Iterator[Spec]:
    """One token for each of b sequences; per-request top_k then top_p drawn from core.rng(seed) with the
    menus ((value, share of requests), ...), both drawn whichever the kernel takes (`inputs`)."""
    k_menu, p_menu = r.value(e["top_k_menu"]), r.value(e["top_p_menu"])
    for seed, b in enumerate(r.value(e["batches"])):
        g = core.rng(seed)
        drawn = {"top_k": families.per_request(g, b, k_menu).astype(np.int32),
                 "top_p": families.per_request(g, b, p_menu).astype(np.float32)}
        f = r.fields(b=b, seed=seed, top_k_menu=families.menu_text(k_menu), top_p_menu=families.menu_text(p_menu))
        inputs = {"probs": "random", **{k: drawn[k] for k in e["inputs"]}}
        yield Spec(e["definition"], f"b{b}", {"batch_size": b}, inputs, seed, e["description"].format_map(f),
                   stage="decode", num_tokens=b)


def _embedding_shard(r: Recipe, e: dict) -> Iterator[Spec]:
    """One rank's vocabulary shard (vocab / shards rows) looking up uniform token ids g.integers(0, vocab);
    the rank is the one holding the step's first token. description_one_token: the text for m == 1."""
    vocab, shards = int(r.value(e["vocab"])), int(e["shards"])
    shard = vocab // shards
    for seed, t in enumerate(r.steps(e)):
        ids = core.rng(seed).integers(0, vocab, size=t.count)
        rank = families.shard_rank(ids, shard)
        f = r.fields(m=t.count, what=t.what, seed=seed, rank=rank, shard=shard)
        text = e["description_one_token"] if t.count == 1 and "description_one_token" in e else e["description"]
        yield Spec(e["definition"], f"t{t.count}", {"num_tokens": t.count},
                   {"input_ids": families.i32(ids), "weight": "random", "vocab_start": rank * shard}, seed,
                   text.format_map(f), stage=t.stage, num_tokens=t.count)


# family -> (builder, required keys, optional keys)
FAMILIES: dict[str, tuple[Callable[[Recipe, dict], Iterator[Spec]], tuple[str, ...], tuple[str, ...]]] = {
    "tokens": (_tokens, ("definition", "scenarios", "key", "axes", "inputs", "description"),
               ("scenarios_pick", "each", "per_token", "first_seed", "count_rows")),
    "paged_decode": (_paged_decode, ("definition", "scenarios", "page_size", "sm_scale"),
                     ("scenarios_pick", "description", "inputs")),
    "paged_prefill": (_paged_prefill, ("definition", "scenarios", "page_size", "sm_scale"),
                      ("scenarios_pick", "description", "q_first", "inputs")),
    "ragged_prefill": (_ragged_prefill, ("definition", "scenarios", "sm_scale", "description"),
                       ("scenarios_pick", "q_first")),
    "listed": (_listed, ("definition", "shapes", "inputs", "description"), ()),
    "moe_grouped_gemm": (_moe_grouped_gemm, ("scenarios", "gemms", "num_experts", "top_k"),
                         ("scenarios_pick", "description")),
    "rope": (_rope, ("definition", "decode", "prefill", "description"),
             ("decode_pick", "prefill_pick", "max_position", "inputs", "axes")),
    "sampling": (_sampling, ("definition", "batches", "top_k_menu", "top_p_menu", "inputs", "description"), ()),
    "embedding_shard": (_embedding_shard, ("definition", "scenarios", "vocab", "shards", "description"),
                        ("scenarios_pick", "description_one_token")),
    **runners.FAMILIES,
}




def read(path: Path) -> Recipe:
    try:
        return Recipe(path, yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_YAML_LOADER))
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path}: not YAML: {exc}") from None


def recipe_specs(root: Path) -> list[Spec]:
    """The Specs of every recipe file of the dataset at `root`, in file-name order."""
    specs: list[Spec] = []
    for path in sorted(root.glob(CANONICAL["recipes"].glob)):
        specs.extend(read(path).specs())
    return specs
