"""Records -> Arrow tables, one per config, and back.

Each config is a list of `Column`s. A column either carries one field of the record (`path`,
the keys that lead to it) or is a convenience value computed from the record and the dataset
(`derive`), which the record itself does not hold. Flat fields get flat Arrow types; nested
objects whose keys differ from row to row (axes, inputs, outputs, workload inputs, the
evaluation) are Arrow JSON columns (`pa.json_()`), which `datasets` reads back as the exact
dicts. Optional fields are null when the record omits them, so `record_from_row` rebuilds the
record with exactly the keys it had (`$schema`, an editor hint, is not exported).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa

from ..analyse.results import is_unstable
from ..bench.inputs import input_recipes
from ..model.dataset import Dataset
from ..model.dtypes import DTYPE
from ..model.kinds import KINDS
from ..model.layout import CANONICAL

JSON = pa.json_()
STRING_LIST = pa.list_(pa.string())
SOURCE_FILES = pa.list_(pa.struct([pa.field("path", pa.string()), pa.field("content", pa.string())]))
# Nested objects with uniform keys are structs (typed columns); an absent optional key is null there.
MODEL_KERNELS = pa.list_(pa.struct([pa.field("id", pa.string()), pa.field("count", pa.int64()),
                                    pa.field("stage", pa.string()), pa.field("note", pa.string())]))
# The calling record's serving block (every key optional but hardware, gpus, tensor_parallel).
MODEL_SERVING = pa.struct([
    pa.field("hardware", pa.string()), pa.field("gpus", pa.int64()), pa.field("nodes", pa.int64()),
    pa.field("tensor_parallel", pa.int64()), pa.field("expert_parallel", pa.int64()),
    pa.field("memory_utilization", pa.float64()), pa.field("weights_gb_per_gpu", pa.float64()),
    pa.field("kv_bytes_per_token", pa.int64()), pa.field("source", pa.string())])
# One struct per input, every field any recipe has (null where a recipe has none); floats stay exact,
# which JSON columns read by `datasets` do not (they keep about 15 significant digits).
INPUT_RECIPES = pa.list_(pa.struct([
    pa.field("name", pa.string()), pa.field("type", pa.string()), pa.field("dtype", pa.string()),
    pa.field("shape", pa.list_(pa.int64())), pa.field("distribution", pa.string()),
    *(pa.field(p, pa.float64()) for p in ("mean", "std", "low", "high", "scale", "p")),
    pa.field("seed", pa.int64()), pa.field("value", pa.string()), pa.field("path", pa.string()),
    pa.field("tensor_key", pa.string()),
    # Parameters of the structured distributions (bench/inputs.py DISTRIBUTIONS), null elsewhere.
    pa.field("alpha", pa.float64()), pa.field("block", pa.list_(pa.int64())), pa.field("of", pa.string()),
    pa.field("order", pa.list_(pa.int64())), pa.field("data_shape", pa.list_(pa.int64())),
    pa.field("data_dtype", pa.string()), pa.field("theta", pa.float64()), pa.field("rope_type", pa.string()),
    *(pa.field(p, pa.float64()) for p in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position",
                                          "beta_fast", "beta_slow", "mscale", "mscale_all_dim")),
    pa.field("truncate", pa.bool_())]))
PEAK_TFLOPS = pa.struct([pa.field(name, pa.float64()) for name in DTYPE])
EDITOR_KEYS = ("$schema",)
_MISSING = object()


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    path: Optional[tuple[str, ...]] = None  # where the value sits in the record; None: derived
    optional: bool = False  # the record may omit the field (null in the column)
    derive: Optional[Callable[[Any, Dataset], Any]] = None  # (record, dataset) -> value
    drop_nulls: bool = False  # a struct column: nulls stand for keys the record omits

    def __post_init__(self) -> None:
        object.__setattr__(self, "_json", self.type == JSON)  # asked once per cell: keep it cheap

    @property
    def is_json(self) -> bool:
        return self._json

    @property
    def is_convenience(self) -> bool:
        return self.path is None

    def value(self, record: Any, ds: Dataset) -> Any:
        if self.derive is not None:
            return self.derive(record, ds)
        value = _get(record.data, self.path)
        if value is _MISSING:
            return None
        return dump_json(value) if self._json else _plain(value)

    def type_name(self) -> str:
        """The type as the card shows it."""
        if self.is_json:
            return "json"
        if pa.types.is_struct(self.type):
            return "struct<" + ", ".join(f"{f.name}: {f.type}" for f in self.type).replace("double", "float64") + ">"
        if pa.types.is_list(self.type) and pa.types.is_struct(self.type.value_type):
            fields = ", ".join(f"{f.name}: {f.type}" for f in self.type.value_type)
            return f"list<struct<{fields}>>"
        return str(self.type).replace("list<item: ", "list<").replace("double", "float64")


@dataclass(frozen=True)
class Config:
    name: str
    doc: str  # what one row is
    columns: tuple[Column, ...]
    records: Callable[[Dataset], Iterable[Any]]
    sort_key: Callable[[Any], tuple]
    constants: Mapping[str, Any]  # top-level fields every record of this kind carries with a fixed value

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type, nullable=c.optional or c.is_convenience) for c in self.columns])

    def table(self, ds: Dataset) -> tuple[pa.Table, list[int]]:
        """One row per record, sorted (the sort key ends in the source location: a total order),
        and each row's estimated size in bytes (to cut shards and row groups by)."""
        records = sorted(self.records(ds), key=self.sort_key)
        sizes = [0] * len(records)
        arrays = []
        for c in self.columns:
            values = [c.value(r, ds) for r in records]
            for i, v in enumerate(values):
                sizes[i] += _size(v)
            arrays.append(pa.array(values, type=c.type))
        return pa.Table.from_arrays(arrays, schema=self.schema), sizes


# -- helpers -------------------------------------------------------------------------------

def dump_json(value: Any) -> str:
    """Compact JSON that keeps key order (input order is the kernel's interface)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _size(value: Any) -> int:
    """Estimated bytes of one cell (characters stand for bytes: an estimate, but a stable one)."""
    if type(value) is str:
        return len(value)
    if type(value) is list:
        return 4 + sum(_size(v) for v in value)
    if type(value) is dict:
        return sum(_size(v) for v in value.values())
    return 8


def _plain(value: Any) -> Any:
    if type(value) in (str, int, float, bool, list) or value is None:
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _get(data: Mapping, path: tuple[str, ...]) -> Any:
    for key in path:
        if not (type(data) is dict or isinstance(data, Mapping)) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _where(record: Any) -> tuple[str, int]:
    return (record.source.path, record.source.line)


def _definition_type(name: str, ds: Dataset) -> Optional[str]:
    d = ds.definitions.get(name)
    return d.type if d is not None else None


def _blob_paths(inputs: Mapping[str, Any]) -> list[str]:
    return sorted({i["path"] for i in inputs.values() if isinstance(i, Mapping) and i.get("type") == "safetensors"})


def _trace_author(trace: Any, ds: Dataset) -> str:
    solution = ds.solutions.get(trace.solution)
    if solution is not None:
        return solution.author
    return CANONICAL.trace_author(trace.source.path)


def _performance(name: str) -> Callable[[Any, Dataset], Any]:
    return lambda t, ds: getattr(t, name)


def _correctness(name: str) -> Callable[[Any, Dataset], Any]:
    def get(t: Any, ds: Dataset) -> Any:
        c = t.data["evaluation"].get("correctness")
        return c.get(name) if isinstance(c, Mapping) else None
    return get


def _evaluation(*path: str) -> Callable[[Any, Dataset], Any]:
    def get(t: Any, ds: Dataset) -> Any:
        value = t.data["evaluation"]
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return value
    return get


def _status(d: Any, ds: Dataset) -> str:
    found = [t.split(":", 1)[1] for t in d.data.get("tags") or () if t.startswith("status:")]
    return found[0] if found else "draft"  # untagged is not verified


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


def _input_recipes(w: Any, ds: Dataset) -> Optional[list]:
    d = ds.definitions.get(w.definition)
    if d is None:
        return None
    out = []
    for name, recipe in input_recipes(d.data, w.data["workload"]).items():
        row = {"name": name, **recipe}
        if "value" in row:
            row["value"] = json.dumps(row["value"])  # exact, and an int stays an int
        out.append(row)
    return out


def _source_path(r: Any, ds: Dataset) -> str:
    return r.source.path


def _source_line(r: Any, ds: Dataset) -> int:
    return r.source.line


SOURCE_PATH = Column("source_path", pa.string(), "File the record comes from, relative to the dataset root "
                     "(`dataset/` in the KernelTrace repository).", derive=_source_path)
SOURCE_LINE = Column("source_line", pa.int64(), "Line of that file (JSON Lines files hold one record per line).",
                     derive=_source_line)


# -- the configs ---------------------------------------------------------------------------

DEFINITIONS = Config(
    "definitions", "one kernel definition: what a kernel must compute",
    (
        Column("name", pa.string(), "Unique name, by the convention `{type}_{props}_{constants}`.", ("name",)),
        Column("type", pa.string(), "Compute category (gemm, gqa, norm, moe, ...).", ("type",)),
        Column("description", pa.string(), "What the kernel computes, in prose.", ("description",), optional=True),
        Column("tags", STRING_LIST, "Namespaced tags (`stage:decode`, `model:llama-3.1-8b`, `status:verified`, ...).",
               ("tags",), optional=True),
        Column("status", pa.string(), "draft or verified (the `status:` tag; untagged counts as draft). Verified: "
                                      "the reference passed an independent check and a model's calling record "
                                      "calls it.", derive=_status),
        Column("models", STRING_LIST, "Models that call the kernel (values of the `model:` tags).",
               derive=lambda d, ds: list(d.models)),
        Column("stages", STRING_LIST, "Inference stages that call it (values of the `stage:` tags).",
               derive=lambda d, ds: list(d.stages)),
        Column("axes", JSON, "Axis name -> `{type: const, value}` or `{type: var}`.", ("axes",)),
        Column("inputs", JSON, "Input name -> `{shape: [axis names], dtype}`, in call order; `shape: []` is a "
                               "scalar.", ("inputs",)),
        Column("outputs", JSON, "Output name -> `{shape, dtype}`.", ("outputs",)),
        Column("reference", pa.string(), "Plain PyTorch reference: `run(<inputs in order>)` returns a dict of every "
                                         "output.", ("reference",)),
        Column("constraints", STRING_LIST, "Python expressions over axes and inputs that must hold.",
               ("constraints",), optional=True),
        SOURCE_PATH,
    ),
    records=lambda ds: ds.definitions.values(),
    sort_key=lambda d: (d.name, *_where(d)),
    constants={},
)

WORKLOADS = Config(
    "workloads", "one concrete problem for a definition: values of its var axes and how to make each input",
    (
        Column("definition", pa.string(), "Name of the definition.", ("definition",)),
        Column("uuid", pa.string(), "Workload id, unique in the dataset.", ("workload", "uuid")),
        Column("type", pa.string(), "Type of the definition.", derive=lambda w, ds: _definition_type(w.definition, ds)),
        Column("axes", JSON, "Value of every var axis of the definition.", ("workload", "axes")),
        Column("inputs", JSON, "Input name -> `{type: random}`, `{type: scalar, value}` or `{type: safetensors, "
                               "path, tensor_key}`.", ("workload", "inputs")),
        Column("seed", pa.int64(), "Seed of the random inputs.", ("workload", "seed"), optional=True),
        Column("input_recipes", INPUT_RECIPES, "How each input is made, in call order, resolved: `random` with its "
                                               "distribution and parameters, dtype, shape and generator seed (input "
                                               "set 0); `scalar` with `value` as exact JSON text; `safetensors` with "
                                               "path and tensor_key. `kerneltrace_inputs.make_inputs` follows it.",
               derive=_input_recipes),
        Column("stage", pa.string(), "decode or prefill: the step of serving the workload stands for (null where it "
                                     "does not say).", derive=workload_stage),
        Column("num_tokens", pa.int64(), "Tokens of that model step, whatever the definition calls the axis "
                                         "(batch_size, M, num_tokens, total_q, ...).", derive=workload_tokens),
        Column("description", pa.string(), "Where the workload comes from.", ("workload", "description"),
               optional=True),
        Column("blob_paths", STRING_LIST, "Safetensors files the inputs read, relative to the repository root.",
               derive=lambda w, ds: _blob_paths(w.inputs)),
        SOURCE_PATH,
        SOURCE_LINE,
    ),
    records=lambda ds: ds.workloads,
    sort_key=lambda w: (w.definition, w.uuid, *_where(w)),
    # Workload lines are {definition, workload, solution: null, evaluation: null} (the
    # FlashInfer-Trace shape): the two nulls are the same in every row, so no column holds them.
    constants={"solution": None, "evaluation": None},
)

SOLUTIONS = Config(
    "solutions", "one implementation of a definition, with its source files",
    (
        Column("name", pa.string(), "Unique name of the solution.", ("name",)),
        Column("definition", pa.string(), "Name of the definition it implements.", ("definition",)),
        Column("author", pa.string(), "Author (person, team or agent).", ("author",)),
        Column("type", pa.string(), "Type of the definition.", derive=lambda s, ds: _definition_type(s.definition, ds)),
        Column("description", pa.string(), "The technique, in prose.", ("description",), optional=True),
        Column("language", pa.string(), "python, triton, cuda or cpp (`spec.language`).",
               derive=lambda s, ds: s.language),
        Column("target_hardware", STRING_LIST, "Hardware it is written for (`spec.target_hardware`).",
               derive=lambda s, ds: list(s.target_hardware)),
        Column("entry_point", pa.string(), "`<file>::<function>` (`spec.entry_point`).",
               derive=lambda s, ds: s.entry_point),
        Column("destination_passing_style", pa.bool_(), "True: the function takes the outputs as arguments; false "
                                                        "(the default): it returns them.",
               derive=lambda s, ds: s.destination_passing_style),
        Column("spec", JSON, "Build spec: language, target_hardware, entry_point, destination_passing_style, "
                             "binding, dependencies.", ("spec",)),
        Column("sources", SOURCE_FILES, "Source files, `{path, content}`, in order.", ("sources",)),
        SOURCE_PATH,
    ),
    records=lambda ds: ds.solutions.values(),
    sort_key=lambda s: (s.definition, s.name, *_where(s)),
    constants={},
)

TRACES = Config(
    "traces", "one benchmark result: a solution run on one workload on one machine",
    (
        Column("definition", pa.string(), "Name of the definition.", ("definition",)),
        Column("solution", pa.string(), "Name of the solution.", ("solution",)),
        Column("author", pa.string(), "Author of the solution.", derive=_trace_author),
        Column("type", pa.string(), "Type of the definition.", derive=lambda t, ds: _definition_type(t.definition, ds)),
        Column("hardware", pa.string(), "Machine it ran on (`evaluation.environment.hardware`).",
               derive=lambda t, ds: t.hardware),
        Column("status", pa.string(), "PASSED, INCORRECT_NUMERICAL, RUNTIME_ERROR, ... (`evaluation.status`).",
               derive=lambda t, ds: t.status),
        Column("latency_ms", pa.float64(), "Median latency of the solution in milliseconds; null unless PASSED.",
               derive=_performance("latency_ms")),
        Column("reference_latency_ms", pa.float64(), "Latency of the reference, timed the same way, in milliseconds.",
               derive=_performance("reference_latency_ms")),
        Column("speedup_factor", pa.float64(), "reference_latency_ms / latency_ms.",
               derive=_performance("speedup_factor")),
        Column("max_absolute_error", pa.float64(), "Largest absolute error against the reference.",
               derive=_correctness("max_absolute_error")),
        Column("max_relative_error", pa.float64(), "Largest relative error against the reference.",
               derive=_correctness("max_relative_error")),
        Column("atol", pa.float64(), "Absolute tolerance the check used (`evaluation.correctness.atol`).",
               derive=_evaluation("correctness", "atol")),
        Column("rtol", pa.float64(), "Relative tolerance the check used.", derive=_evaluation("correctness", "rtol")),
        Column("matched_ratio", pa.float64(), "Share of output elements within tolerance.",
               derive=_evaluation("correctness", "matched_ratio")),
        Column("input_sets", pa.int64(), "Input sets the outputs were checked on.",
               derive=_evaluation("correctness", "input_sets")),
        Column("samples", pa.int64(), "Timed calls behind the latency.", derive=_evaluation("performance", "samples")),
        Column("mean_ms", pa.float64(), "Mean of the timed calls, ms.", derive=_evaluation("performance", "mean_ms")),
        Column("min_ms", pa.float64(), "Fastest timed call, ms.", derive=_evaluation("performance", "min_ms")),
        Column("max_ms", pa.float64(), "Slowest timed call, ms.", derive=_evaluation("performance", "max_ms")),
        Column("p20_ms", pa.float64(), "20th percentile, ms.", derive=_evaluation("performance", "p20_ms")),
        Column("p80_ms", pa.float64(), "80th percentile, ms.", derive=_evaluation("performance", "p80_ms")),
        Column("stderr_ms", pa.float64(), "Standard error of the mean, ms (the spread).",
               derive=_evaluation("performance", "stderr_ms")),
        Column("unstable", pa.bool_(), "Timing too noisy to rank (the bench's mark, else the spread; the site's "
                                        "rule): such a PASSED trace is correct but gives no speedup.",
               derive=lambda t, ds: is_unstable(t.data["evaluation"].get("performance") or {})),
        Column("timer", pa.string(), "What timed the calls (`host_perf_counter` on a CPU, device events on a GPU).",
               derive=_evaluation("performance", "timer")),
        Column("seed", pa.int64(), "Seed the run's inputs came from (traces of the earlier bench; null since "
                                   "the bench draws a secret seed per call).", derive=_evaluation("seed")),
        Column("workload_uuid", pa.string(), "Id of the workload (`workload.uuid`).",
               derive=lambda t, ds: t.workload_uuid),
        Column("timestamp", pa.string(), "When it ran, ISO 8601 (`evaluation.timestamp`).",
               derive=lambda t, ds: t.timestamp),
        Column("workload", JSON, "The workload it ran: `{uuid, axes, inputs, seed}`.", ("workload",)),
        Column("evaluation", JSON, "Status, log, correctness, performance, environment, timestamp, seed.",
               ("evaluation",)),
        SOURCE_PATH,
        SOURCE_LINE,
    ),
    records=lambda ds: ds.traces,
    sort_key=lambda t: (t.definition, t.solution, t.workload_uuid, t.hardware, t.timestamp,
                        *_where(t)),
    constants={},
)

MODELS = Config(
    "models", "one kernel calling record: which kernels one step of a model calls in a framework, and how often",
    (
        Column("name", pa.string(), "Record name (its file name).", derive=lambda m, ds: m.name),
        Column("model", pa.string(), "Hugging Face model id.", ("model",)),
        Column("framework", pa.string(), "Inference framework (SGLang, vLLM, ...).", ("framework",)),
        Column("description", pa.string(), "Notes on the record.", ("description",), optional=True),
        Column("serving", MODEL_SERVING, "Where the step runs: hardware record, GPUs, nodes, tensor/expert-parallel "
                                         "degrees, memory utilisation, weights per GPU (GB), KV bytes per token, "
                                         "source; null when the record has none.", ("serving",), optional=True,
               drop_nulls=True),
        Column("kernel_ids", STRING_LIST, "Definition names it calls, in order.",
               derive=lambda m, ds: [k.id for k in m.kernels]),
        Column("kernels", MODEL_KERNELS, "Calls per step: `{id, count, stage, note}`; stage null means both "
                                         "decode and prefill.", ("kernels",), drop_nulls=True),
        SOURCE_PATH,
    ),
    records=lambda ds: ds.models.values(),
    sort_key=lambda m: (m.name, *_where(m)),
    constants={},
)


@dataclass(frozen=True)
class _EinsumView:
    """An Einsum cascade seen as a record (the cascade keeps its template text, not JSON)."""

    definition: str
    type: str
    template: str
    source: Any

    @property
    def data(self) -> dict[str, str]:
        return {"definition": self.definition, "type": self.type, "template": self.template}


EINSUMS = Config(
    "einsums", "one definition written as a cascade of Einsums (a jinja2 template of YAML over its axis names)",
    (
        Column("definition", pa.string(), "Name of the definition.", ("definition",)),
        Column("type", pa.string(), "Type of the definition.", ("type",)),
        Column("template", pa.string(), "The YAML template text; render it with the definition's axis values.",
               ("template",)),
        SOURCE_PATH,
    ),
    records=lambda ds: (_EinsumView(e.definition, e.type, e.template, e.source) for e in ds.einsums.values()),
    sort_key=lambda e: (e.definition, *_where(e)),
    constants={},
)

HARDWARE = Config(
    "hardware", "peak rates of one machine, for speed-of-light bounds",
    (
        Column("name", pa.string(), "Name traces use in `environment.hardware`.", ("name",)),
        Column("kind", pa.string(), "gpu or cpu.", ("kind",)),
        Column("vendor", pa.string(), "Vendor.", ("vendor",), optional=True),
        Column("description", pa.string(), "Notes.", ("description",), optional=True),
        Column("aliases", STRING_LIST, "Device names as drivers report them.", ("aliases",), optional=True),
        Column("peak_tflops", PEAK_TFLOPS, "Dense peak rate per dtype in TFLOP/s; null where the machine has "
                                           "no rate for it.", ("peak_tflops",), drop_nulls=True),
        Column("memory_bandwidth_gb_s", pa.float64(), "Peak memory bandwidth in GB/s.", ("memory_bandwidth_gb_s",)),
        Column("memory_gb", pa.float64(), "Memory size in GB.", ("memory_gb",), optional=True),
        Column("l2_cache_bytes", pa.int64(), "L2 cache size in bytes.", ("l2_cache_bytes",), optional=True),
        Column("source", pa.string(), "Where the numbers come from.", ("source",)),
        SOURCE_PATH,
    ),
    records=lambda ds: ds.hardware.values(),
    sort_key=lambda h: (h.name, *_where(h)),
    constants={},
)

# One config per exported record kind, in the registry's order (the card's); `definitions` is the default config.
_BY_NAME = {c.name: c for c in (DEFINITIONS, WORKLOADS, SOLUTIONS, TRACES, MODELS, EINSUMS, HARDWARE)}
from .roofline_table import ROOFLINE  # noqa: E402 - derived (not a record kind); builds on Column, Config
CONFIGS: tuple[Config, ...] = tuple(_BY_NAME[k.config] for k in KINDS if k.config) + (ROOFLINE,)
CONFIG_NAMES = tuple(c.name for c in CONFIGS)


def config(name: str) -> Config:
    for c in CONFIGS:
        if c.name == name:
            return c
    raise KeyError(name)


# -- back from rows ------------------------------------------------------------------------

def record_from_row(config_name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The record a row was made from (its `data`, without `$schema`). JSON columns may come as
    dicts (datasets) or as text (pandas, pyarrow); convenience columns are ignored."""
    cfg = config(config_name)
    out: dict[str, Any] = dict(cfg.constants)
    for col in cfg.columns:
        if col.is_convenience:
            continue
        value = row[col.name]
        if col.optional and _is_null(value):
            continue
        if col.is_json and isinstance(value, (str, bytes)):
            value = json.loads(value)
        value = _from_arrow(value)
        if col.drop_nulls:
            value = _without_nulls(value)
        _put(out, col.path, value)
    return out


def _without_nulls(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if not _is_null(v)}
    return value


def _is_null(value: Any) -> bool:
    # pandas reads a null in an integer or float column as NaN
    return value is None or (isinstance(value, float) and value != value)


def _from_arrow(value: Any) -> Any:
    # pandas gives numpy arrays for list columns
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, list):
        return [_from_arrow(v) for v in value]
    if isinstance(value, dict):
        return {k: _from_arrow(v) for k, v in value.items()}
    return value


def _put(out: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        out = out.setdefault(key, {})
    out[path[-1]] = value
