"""The `roofline` config of the Hub export, read as a consumer reads it (the real
`datasets.load_dataset` on the exported folder, offline) and checked row by row against what
`kerneltrace roofline` prints and what the site's Speed of light section shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.analyse.roofline import format_count, format_ratio, format_seconds, sol_sections
from generator.cli import main
from generator.export import export_dataset
from generator.load import DEFAULT_DATASET, load

from dataset_factory import write_dataset


@pytest.fixture(scope="module")
def bundled(bundled_export) -> tuple[Path, Path]:
    return DEFAULT_DATASET, bundled_export


def cli_table(capsys, dataset: Path) -> dict[tuple[str, str], dict[str, str]]:
    """`kerneltrace roofline`'s table: (definition, workload id prefix) -> {column: cell}."""
    assert main(["roofline", "--dataset", str(dataset)]) == 0
    table, definition, header = {}, None, None
    for line in capsys.readouterr().out.splitlines():
        if line and not line.startswith(" ") and not line.startswith("T_SOL"):
            definition, header = line, None
        elif line.startswith("  workload "):
            header = line.split()
        elif line.startswith("  ") and header:
            # The axes column holds "name=value" words; every other cell is one word or "<number> <unit> <C|M>".
            words = line.split()
            axes = [w for w in words[1:] if "=" in w]
            rest = words[1 + len(axes):]
            cells = {"workload": words[0], "FLOPs": rest[0], "FLOPs at": rest[1], "bytes": rest[2], "FLOP/B": rest[3]}
            times = rest[4:]
            for i, hw in enumerate(header[header.index("FLOP/B") + 1:]):
                cells[hw] = " ".join(times[3 * i:3 * i + 3])
            table[(definition, words[0])] = cells
    return table


def mismatches(rows, table, sections) -> list[str]:
    """Every way an exported row disagrees with the CLI's table or the site's section."""
    out = []
    for r in rows:
        key = (r["definition"], r["workload_uuid"][:8])
        cells = table.get(key)
        if cells is None:
            out.append(f"{key}: not in kerneltrace roofline")
            continue
        letter = "C" if r["bound"] == "compute" else "M"
        want = {"FLOPs": format_count(r["flops"]), "bytes": format_count(r["min_bytes"]) + "B",
                "FLOP/B": format_ratio(r["arithmetic_intensity"]),
                r["hardware"]: f"{format_seconds(r['t_sol_s'])} {letter}"}
        for column, value in want.items():
            if cells.get(column) != value:
                out.append(f"{key} {column}: export {value!r}, kerneltrace roofline {cells.get(column)!r}")
        if r["flops"] != 2 * r["macs"] + r["elementwise_ops"] or r["t_sol_s"] != max(r["compute_s"], r["memory_s"]):
            out.append(f"{key} {r['hardware']}: flops or t_sol_s do not follow from their parts")
        section = sections[r["definition"]]
        site = next((s for s in section.rows if s.uuid == r["workload_uuid"]), None)
        cell = f"{format_seconds(r['t_sol_s']).replace('us', 'µs')} ({r['bound']})"
        if site is None or site.cells[section.hardware.index(r["hardware"])] != cell:
            out.append(f"{key} {r['hardware']}: the site shows something else than {cell!r}")
    return out


def test_roofline_config_matches_kerneltrace_roofline_row_by_row(bundled, load_offline, capsys):
    root, out = bundled
    rows = list(load_offline(out, "roofline"))
    ds = load(root)
    # One row per workload of each definition with a cascade and per hardware spec (every spec has a rate
    # for every dtype the dataset uses, directly or by a wider fallback).
    expected = sum(len(ds.workloads_by_definition.get(n, [])) for n in ds.einsums) * len(ds.hardware)
    assert len(rows) == expected > 5000
    assert len({(r["workload_uuid"], r["hardware"]) for r in rows}) == len(rows)
    assert all(isinstance(r["axes"], dict) and r["axes"] for r in rows)  # Json: dicts again
    table = cli_table(capsys, root)
    assert len(table) == len(rows) // len(ds.hardware)
    sections = sol_sections(ds)
    assert mismatches(rows, table, sections) == []
    # Which rate decides: an NVFP4 GEMM's FLOPs at FP4 on B200, at FP8 on H100 (no FP4 units), never float32.
    nvfp4 = [r for r in rows if r["definition"] == "gemm_nvfp4_n4096_k4096" and r["axes"]["M"] == 2048]
    assert {r["hardware"]: r["compute_dtype"] for r in nvfp4 if r["hardware"] in ("B200", "H100_SXM")} == {
        "B200": "float4_e2m1", "H100_SXM": "float8_e4m3"}
    assert {c["FLOPs at"] for (d, _), c in table.items() if d == "gemm_nvfp4_n4096_k4096"} == {"float4_e2m1"}

    # A wrong row fails: each kind of corruption is caught.
    row = next(r for r in rows if r["definition"] == "gemm_n4096_k4096" and r["hardware"] == "H100_SXM")
    for wrong in ({"flops": row["flops"] * 2, "macs": row["macs"] * 2}, {"min_bytes": row["min_bytes"] * 1.5},
                  {"t_sol_s": row["t_sol_s"] * 1.1, "compute_s": row["compute_s"] * 1.1},
                  {"bound": "memory" if row["bound"] == "compute" else "compute"}, {"hardware": "H200"},
                  {"workload_uuid": "00000000-" + row["workload_uuid"][9:]}):
        bad = [{**row, **wrong}]
        assert mismatches(bad, table, sections), wrong


def test_roofline_rows_by_hand(tmp_path, load_offline):
    """The factory dataset's rmsnorm_h128 (batch 4, hidden 128, bf16 input/output/weight, fp32 eps) on its
    made-up CPU (50 GB/s): numbers worked out by hand, not by the code under test."""
    root = write_dataset(tmp_path / "ds")
    export_dataset(root, tmp_path / "hub")
    rows = {r["workload_uuid"]: r for r in load_offline(tmp_path / "hub", "roofline")}
    assert set(rows) == {"wl-0001", "wl-0002", "wl-0003", "wl-0004", "wl-0005"}
    r = rows["wl-0001"]
    assert (r["definition"], r["type"], r["hardware"], r["axes"]) == ("rmsnorm_h128", "norm", "test_cpu",
                                                                      {"batch_size": 4})
    # One element-wise Einsum over b, h: 4 * 128 = 512 points, nothing summed.
    assert (r["macs"], r["elementwise_ops"], r["flops"]) == (0, 512, 512)
    # input and output 4 * 128 * 2 bytes each, weight 128 * 2, eps 4: 2048 + 256 + 4 = 2308.
    assert r["min_bytes"] == 2308.0 and r["arithmetic_intensity"] == pytest.approx(512 / 2308)
    assert r["memory_s"] == pytest.approx(2308 / 50e9) and r["bound"] == "memory"
    assert r["t_sol_s"] == r["memory_s"] > r["compute_s"] > 0
    assert r["source_path"] == "einsums/norm/rmsnorm_h128.yaml"


def test_card_explains_the_roofline_config(bundled):
    root, out = bundled
    text = (out / "README.md").read_text(encoding="utf-8")
    assert "- config_name: roofline" in text and "## Speed of light" in text
    ds = load(root)
    rows = sum(len(ds.workloads_by_definition.get(n, [])) for n in ds.einsums) * len(ds.hardware)
    assert re.search(rf"\| `roofline` \| {rows} \|", text), rows
    assert 'load_dataset("kerneltrace/kerneltrace", "roofline", split="train")' in text


def test_mismatches_reads_every_field():
    """The checker itself: a row it has never seen is reported, not skipped."""
    assert mismatches([{"definition": "x", "workload_uuid": "12345678-..."}], {}, {}) == [
        "('x', '12345678'): not in kerneltrace roofline"]


def test_the_cards_sol_percent_is_the_sites(bundled, bundled_card):
    """The card's SOL% snippet, run against the export, prints the SOL% the site computes for those traces."""
    from generator.analyse.roofline import trace_sol

    root, _ = bundled
    blocks = {block: output for block, output in bundled_card}
    [speed] = [o for b, o in blocks.items() if 'groupby("bound")' in b]
    [sol] = [o for b, o in blocks.items() if '"sol_percent"' in b]
    assert re.search(r"^compute\s+\d+$", speed, re.M) and re.search(r"^memory\s+\d+$", speed, re.M)
    ds = load(root)
    lines = sol.splitlines()
    assert lines[0].split() == ["definition", "solution", "hardware", "latency_ms", "sol_percent"]
    assert len(lines) == 6
    for line in lines[1:]:
        _, definition, solution, hardware, latency_ms, sol_percent = line.split()
        # pandas prints a few digits: the trace is the one of that solution and machine nearest in latency.
        trace = min((t for t in ds.traces if t.solution == solution and t.hardware == hardware and t.status == "PASSED"),
                    key=lambda t: abs(t.latency_ms - float(latency_ms)))
        assert trace.definition == definition and trace.latency_ms == pytest.approx(float(latency_ms), rel=1e-3)
        assert float(sol_percent) == pytest.approx(trace_sol(ds, trace).sol_percent, rel=1e-3)
