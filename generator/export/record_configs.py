"""The configs of the exported record kinds: definitions, workloads, solutions, traces, models, einsums,
hardware (tables.py registers them, in the kind registry's order)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pyarrow as pa

from ..bench.shared.inputs import input_recipes
from ..model.dataset import Dataset
from ..model.dtypes import DTYPE
from ..model.layout import CANONICAL
from .columns import JSON, SOURCE_FILES, SOURCE_LINE, SOURCE_PATH, STRING_LIST, Column, Config

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
    # Parameters of the structured distributions (bench/shared/inputs.py DISTRIBUTIONS), null elsewhere.
    pa.field("alpha", pa.float64()), pa.field("block", pa.list_(pa.int64())), pa.field("of", pa.string()),
    pa.field("order", pa.list_(pa.int64())), pa.field("data_shape", pa.list_(pa.int64())),
    pa.field("data_dtype", pa.string()), pa.field("theta", pa.float64()), pa.field("rope_type", pa.string()),
    *(pa.field(p, pa.float64()) for p in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position",
                                          "beta_fast", "beta_slow", "mscale", "mscale_all_dim")),
    pa.field("truncate", pa.bool_())]))
PEAK_TFLOPS = pa.struct([pa.field(name, pa.float64()) for name in DTYPE])


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
    """A field of the trace's typed evaluation.performance (model/evaluation.py); None without one."""
    def get(t: Any, ds: Dataset) -> Any:  # noqa: ARG001 - a column's derive signature
        p = t.evaluation.performance
        return getattr(p, name) if p is not None else None
    return get


def _samples(t: Any, ds: Dataset) -> Any:  # noqa: ARG001 - a column's derive signature
    """Timed calls: 0 for a result without a timing (so the column stays an integer column in pandas, where one
    null makes it float), null only for a PASSED one that did not record its count."""
    p = t.evaluation.performance
    return 0 if p is None else p.samples


def _correctness(name: str) -> Callable[[Any, Dataset], Any]:
    """A field of the trace's typed evaluation.correctness; None without one."""
    def get(t: Any, ds: Dataset) -> Any:  # noqa: ARG001 - a column's derive signature
        c = t.evaluation.correctness
        return getattr(c, name) if c is not None else None
    return get


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
                                      "calls it.", derive=lambda d, ds: d.status),
        Column("models", STRING_LIST, "Calling records that call the kernel (the `name` of rows of the models "
                                      "config; validate keeps the `model:` tags the same).",
               derive=lambda d, ds: list(ds.callers.get(d.name, ()))),
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
                                     "does not say).", ("workload", "stage"), optional=True),
        Column("num_tokens", pa.int64(), "Tokens of that model step, whatever the definition calls the axis "
                                         "(batch_size, M, num_tokens, total_q, ...).", ("workload", "num_tokens"),
               optional=True),
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
               derive=_correctness("atol")),
        Column("rtol", pa.float64(), "Relative tolerance the check used.", derive=_correctness("rtol")),
        Column("matched_ratio", pa.float64(), "Share of output elements within tolerance.",
               derive=_correctness("matched_ratio")),
        Column("input_sets", pa.int64(), "Input sets the outputs were checked on.",
               derive=_correctness("input_sets")),
        Column("samples", pa.int64(), "Timed calls behind the latency: 0 where nothing was timed (not PASSED), "
                                       "null only for a PASSED result that did not record it.", derive=_samples),
        Column("mean_ms", pa.float64(), "Mean of the timed calls, ms.", derive=_performance("mean_ms")),
        Column("min_ms", pa.float64(), "Fastest timed call, ms.", derive=_performance("min_ms")),
        Column("max_ms", pa.float64(), "Slowest timed call, ms.", derive=_performance("max_ms")),
        Column("p20_ms", pa.float64(), "20th percentile, ms.", derive=_performance("p20_ms")),
        Column("p80_ms", pa.float64(), "80th percentile, ms.", derive=_performance("p80_ms")),
        Column("stderr_ms", pa.float64(), "Standard error of the mean, ms (the spread).",
               derive=_performance("stderr_ms")),
        Column("unstable", pa.bool_(), "Timing too noisy to rank (the bench's mark, else the spread; the site's "
                                        "rule): such a PASSED trace is correct but gives no speedup.",
               derive=lambda t, ds: t.evaluation.performance is not None and t.evaluation.performance.unstable),
        Column("provenance", pa.string(), "How the result was produced: measured (by this project's bench), "
                                          "recorded (imported from another tool's records) or unknown (written "
                                          "before traces recorded it); `evaluation.environment.provenance` has "
                                          "the details.", derive=lambda t, ds: t.provenance),
        Column("timer", pa.string(), "What timed the calls (`host_perf_counter` on a CPU, device events on a GPU).",
               derive=_performance("timer")),
        Column("seed", pa.int64(), "Seed the run's inputs came from (traces of the earlier bench; null since "
                                   "the bench draws a secret seed per call).", derive=lambda t, ds: t.evaluation.seed),
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
        Column("engine_version", pa.string(), "Release of the framework the record describes.", ("engine_version",),
               optional=True),
        Column("engine_checked", pa.string(), "When the record was last checked against that release (YYYY-MM-DD).",
               ("engine_checked",), optional=True),
        Column("engine_source", pa.string(), "What of that release was read to check the record.", ("engine_source",),
               optional=True),
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
        Column("compute_capability", pa.string(), "GPUs: CUDA compute capability, e.g. 9.0.", ("compute_capability",),
               optional=True),
        Column("source", pa.string(), "Where the numbers come from.", ("source",)),
        SOURCE_PATH,
    ),
    records=lambda ds: ds.hardware.values(),
    sort_key=lambda h: (h.name, *_where(h)),
    constants={},
)

