"""The dataset card's "Speed of light" section, about the `roofline` config (roofline_table.py)."""

from __future__ import annotations


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
passed = traces[traces["status"] == "PASSED"]
sol = passed.merge(roofline[["workload_uuid", "hardware", "t_sol_s"]], on=["workload_uuid", "hardware"])
sol["sol_percent"] = 100 * sol["t_sol_s"] / (sol["latency_ms"] / 1e3)
print(sol[["definition", "solution", "hardware", "latency_ms", "sol_percent"]].head().to_string())
```"""
    return text
