"""The `roofline` config of the Hub export: speed of light per (workload, hardware).

One row per workload of every definition with an Einsum cascade, per hardware spec that has a
peak rate for its dtypes. The numbers come from `analyse.roofline.roofline_rows`, the function
the site's Speed of light section renders, so the export and the site cannot disagree. This is
a derived table: its rows are computed from the definitions, workloads, Einsum cascades and
hardware specs, not read from a record file. The card's section about it is here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa

from ..analyse.roofline import roofline_rows
from ..model.dataset import Dataset
from ..model.status import TraceStatus
from .columns import JSON, Column, Config


@dataclass(frozen=True)
class RooflineRecord:
    """One (workload, hardware) pair with its counts and T_SOL, as a record the config's columns read."""

    data: dict[str, Any]
    source: Any  # the Einsum cascade's source: its file is where the numbers come from
    order: int  # the workload's position in the roofline table (its file order)


def roofline_records(ds: Dataset) -> Iterator[RooflineRecord]:
    for i, row in enumerate(roofline_rows(ds)):
        if row.counts is None:  # a cascade that does not count is an error; the export refuses such a dataset
            continue
        d, c = ds.definitions[row.definition], row.counts
        for sol in row.sol:
            yield RooflineRecord({
                "definition": row.definition, "type": d.type, "workload_uuid": row.workload, "axes": dict(row.axes),
                "hardware": sol.hardware, "macs": c.macs, "elementwise_ops": c.elementwise_ops, "flops": c.flops,
                "min_bytes": float(c.bytes), "arithmetic_intensity": c.intensity, "compute_s": sol.compute_s,
                "memory_s": sol.memory_s, "t_sol_s": sol.t_sol_s, "bound": sol.bound,
                **({"compute_dtype": sol.compute_dtype} if sol.compute_dtype else {}),  # absent: nothing computes
            }, ds.einsums[row.definition].source, i)


ROOFLINE = Config(
    "roofline", "the speed of light of one workload on one machine: what its Einsum cascade counts and the "
                "time no kernel can beat there (derived; the site's Speed of light section)",
    (
        Column("definition", pa.string(), "Name of the definition.", ("definition",)),
        Column("type", pa.string(), "Type of the definition.", ("type",)),
        Column("workload_uuid", pa.string(), "Id of the workload (the `workloads` config's `uuid`).",
               ("workload_uuid",)),
        Column("axes", JSON, "Value of every var axis of the workload.", ("axes",)),
        Column("hardware", pa.string(), "Hardware spec (the `hardware` config's `name`).", ("hardware",)),
        Column("macs", pa.int64(), "Multiply-accumulates of the Einsums that sum over a rank variable (points of "
                                   "their iteration spaces, masks applied, times instances).", ("macs",)),
        Column("elementwise_ops", pa.int64(), "Points of the Einsums that sum over nothing (exp, silu, a scale), "
                                              "one operation each.", ("elementwise_ops",)),
        Column("flops", pa.int64(), "2 x macs + elementwise_ops.", ("flops",)),
        Column("min_bytes", pa.float64(), "Minimum memory traffic in bytes: every input read once and every output "
                                          "written once at its bits per value (the part its projections reach); "
                                          "intermediates free.", ("min_bytes",)),
        Column("arithmetic_intensity", pa.float64(), "flops / min_bytes.", ("arithmetic_intensity",)),
        Column("compute_s", pa.float64(), "Seconds at the machine's peak rate for each Einsum's dtype.",
               ("compute_s",)),
        Column("memory_s", pa.float64(), "Seconds to move min_bytes at the machine's memory bandwidth.",
               ("memory_s",)),
        Column("t_sol_s", pa.float64(), "Speed-of-light time in seconds: max(compute_s, memory_s).", ("t_sol_s",)),
        Column("bound", pa.string(), "`compute` or `memory`: which of the two is larger.", ("bound",)),
        Column("compute_dtype", pa.string(), "The dtype whose peak rate on this machine most of compute_s is "
                                             "counted at (e.g. float4_e2m1 for an NVFP4 GEMM on B200, float8_e4m3 "
                                             "on H100, which has no FP4 rate); null when nothing computes.",
               ("compute_dtype",), optional=True),
        Column("source_path", pa.string(), "The Einsum cascade the numbers are counted from, relative to the "
                                           "dataset root.", derive=lambda r, ds: r.source.path),
    ),
    records=roofline_records,
    sort_key=lambda r: (r.data["definition"], r.order, r.data["hardware"]),
    constants={},
)


def roofline_card_section(repo_id: str, has_rows: bool, has_traces: bool) -> str:
    """The card's "Speed of light" section: what the numbers are, and how to use them ('' without rows)."""
    if not has_rows:
        return ""
    text = f"""## Speed of light

The `roofline` config holds, for every workload and every hardware spec, what the definition's Einsum
cascade counts (MACs, element-wise operations, FLOPs, minimum bytes) and the speed-of-light time
`t_sol_s = max(FLOPs / peak rate for each Einsum's dtype, min_bytes / memory bandwidth)`, with the
bound that binds. It is computed by the same code as the site's Speed of light section and as
`kerneltrace roofline`; caches, launch overhead and data-dependent control are left out, so no
kernel can be faster, and real ones are slower.

```python
from datasets import load_dataset

roofline = load_dataset("{repo_id}", "roofline", split="train").to_pandas()
print(roofline.groupby("bound").size().to_string())
print(roofline.sort_values("t_sol_s").tail(3)[["definition", "hardware", "flops", "min_bytes", "t_sol_s", "bound"]])
```"""
    if has_traces:
        text += f"""

A measured latency over `t_sol_s` says how far a solution is from the speed of light (the site's SOL%):

```python
traces = load_dataset("{repo_id}", "traces", split="train").to_pandas()
passed = traces[traces["status"] == "{TraceStatus.PASSED}"]
sol = passed.merge(roofline[["workload_uuid", "hardware", "t_sol_s"]], on=["workload_uuid", "hardware"])
sol["sol_percent"] = 100 * sol["t_sol_s"] / (sol["latency_ms"] / 1e3)
print(sol[["definition", "solution", "hardware", "latency_ms", "sol_percent"]].head().to_string())
```"""
    return text
