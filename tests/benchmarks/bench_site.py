"""Site build at scale: 1,000 definitions x 10 solutions x 50 workloads, every pair traced.

Writes the synthetic dataset (500,000 traces at scale 1), builds the site in a copy of the
project's mkdocs.yml and site_src/ (the checkout's site_src/generated/ is left alone), and prints
the time of each step (wall clock), the CPU time of all its processes with the load average (a figure
for a quiet machine wants it below 1.5), the site's size, the largest pages and the search index's
size. Not collected by pytest; run it by hand:

    python tests/benchmarks/bench_site.py [--scale 0.1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from generator.site import build as site_build  # noqa: E402
from generator.site.build import build_site  # noqa: E402
from tests.benchmarks.synthetic import SOURCE, write_synthetic  # noqa: E402

DEFINITIONS, SOLUTIONS, WORKLOADS = 1000, 10, 50
AUTHORS = ("baseline", "alice", "bob", "carol", "dave")
HARDWARE = "H100_SXM"


def write(root: Path, scale: float) -> dict[str, int]:
    """The synthetic dataset; solution 0 of each definition is the baseline. Deterministic."""
    def workloads(i: int) -> list[dict]:
        return [{"uuid": f"w{i:05d}-{j:02d}", "axes": {"batch_size": j + 1},
                 "inputs": {"input": {"type": "random"}, "weight": {"type": "random"},
                            "eps": {"type": "scalar", "value": 1e-6}}, "seed": j} for j in range(WORKLOADS)]

    def solutions(i: int, name: str) -> list[dict]:
        return [{"name": f"{name}_s{k}", "definition": name,
                 "author": AUTHORS[0] if k == 0 else AUTHORS[1 + (k - 1) % (len(AUTHORS) - 1)],
                 "description": f"Synthetic solution {k} of {name}.",
                 "spec": {"language": "triton" if k % 2 else "python", "target_hardware": ["cuda"],
                          "entry_point": "main.py::run", "destination_passing_style": False, "dependencies": ["torch"]},
                 "sources": [{"path": "main.py", "content": SOURCE}]} for k in range(SOLUTIONS)]

    def results(i: int, k: int, sol: dict, wls: list[dict]) -> Iterator[tuple[dict, dict]]:
        for j, w in enumerate(wls):
            failed = k and (i + j * k) % 23 == 0
            lat = 0.01 * (1 + j) * (1.0 if k == 0 else 0.5 + ((i + k * 7 + j) % 13) / 10)
            yield w, {"status": "RUNTIME_ERROR" if failed else "PASSED",
                      "log": "CUDA error: an illegal memory access was encountered" if failed else "",
                      "correctness": None if failed else {"max_absolute_error": 0.001, "max_relative_error": 0.002},
                      "performance": None if failed else {"latency_ms": lat, "reference_latency_ms": 0.01 * (1 + j),
                                                          "speedup_factor": 0.01 * (1 + j) / lat, "samples": 100},
                      "environment": {"hardware": HARDWARE, "libs": {"torch": "2.13.0"}},
                      "timestamp": f"2026-11-{1 + (i + k) % 28:02d}T10:00:00Z"}

    return write_synthetic(root, max(1, int(DEFINITIONS * scale)), workloads, solutions, results)


def project_copy(root: Path) -> Path:
    root.mkdir(parents=True)
    shutil.copy2(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(ROOT / "site_src", root / "site_src", ignore=shutil.ignore_patterns("generated", ".*"))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="share of the 1,000 definitions (default 1)")
    parser.add_argument("--keep", type=Path, help="write the dataset and the site here and keep them")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="kt-bench-site-"))
    try:
        started = time.perf_counter()
        counts = write(work / "dataset", args.scale)
        wrote = time.perf_counter() - started
        print(f"dataset: {counts} written in {wrote:.1f} s", flush=True)

        project = project_copy(work / "project")
        timings: dict[str, float] = {}
        load_before = os.getloadavg()[0]
        cpu_before = os.times()
        started = time.perf_counter()
        with timed_steps(timings):
            build_site(work / "dataset", work / "site", strict=True, project_root=project)
        total = time.perf_counter() - started
        cpu = sum(os.times()[:4]) - sum(cpu_before[:4])  # this process and its helpers (waited for)

        pages = sorted(((p.stat().st_size, p.relative_to(work / "site").as_posix())
                        for p in (work / "site").rglob("*.html")), reverse=True)
        files = [p for p in (work / "site").rglob("*") if p.is_file()]
        steps = {"load": "load_dataset", "analyse + render": "render_site", "mkdocs (list pages and the shell)":
                 "run_mkdocs", "item pages into the shell + search index": "fill",
                 "waiting for validate (run aside meanwhile)": "verdict"}
        shown = ", ".join(f"{label} {timings.get(name, 0.0):.1f} s" for label, name in steps.items())
        other = total - sum(timings.get(name, 0.0) for name in steps.values())
        print(f"build: {total:.1f} s in all: {shown}, other {other:.1f} s")
        print(f"cpu: {cpu:.1f} s of CPU time in all processes ({cpu / total:.2f} cores busy on average); "
              f"load average {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end "
              f"({os.cpu_count()} CPUs): a figure for a quiet machine wants it below 1.5")
        print(f"pages: {len(pages)} HTML pages, {len(files)} files, "
              f"{sum(p.stat().st_size for p in files) / 1e6:.1f} MB in all")
        for size, rel in pages[:3]:
            print(f"largest page: {rel} {size / 1e3:.0f} KB")
        index = work / "site" / "search" / "search_index.json"
        if index.is_file():
            print(f"search index: {index.stat().st_size / 1e6:.2f} MB "
                  f"({len(json.loads(index.read_text())['docs'])} entries)")
        serve_edit(work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def timed_steps(timings: dict[str, float]) -> Iterator[None]:
    """Time the steps of build_site (wall clock): each named function, and the wait for validate's verdict at the
    end of the block it runs aside of."""
    originals = {name: getattr(site_build, name) for name in ("load_dataset", "render_site", "run_mkdocs",
                                                               "validated_aside")}
    fill = site_build.shell.fill

    def timed(name, fn):
        def step(*args, **kwargs):
            t = time.perf_counter()
            out = fn(*args, **kwargs)
            timings[name] = time.perf_counter() - t
            return out
        return step

    @contextlib.contextmanager
    def aside(*args):
        left = time.perf_counter()
        with originals["validated_aside"](*args):
            try:
                yield
            finally:
                left = time.perf_counter()
        timings["verdict"] = time.perf_counter() - left

    for name, fn in originals.items():
        setattr(site_build, name, aside if name == "validated_aside" else timed(name, fn))
    site_build.shell.fill = timed("fill", fill)
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(site_build, name, fn)
        site_build.shell.fill = fill


def serve_edit(work: Path) -> None:
    """`kerneltrace serve`'s rebuild after one definition's edit (its description and one trace),
    against its first build of the same dataset in this run."""
    from generator.site.serve import SiteMemo, rebuild

    memo, out, scratch = SiteMemo(), work / "served", work / "serve-work"
    started = time.perf_counter()
    rebuild(memo, work / "dataset", out, work / "project", scratch)
    first = time.perf_counter() - started
    d_path = next((work / "dataset/definitions").rglob("*.json"))
    d = json.loads(d_path.read_text())
    d["description"] = "Edited while serving. " + d["description"]
    d_path.write_text(json.dumps(d, indent=2) + "\n")
    t_path = next((work / "dataset/traces/alice").rglob(f"{d['name']}.jsonl"))
    t_path.write_text(t_path.read_text().replace('"max_absolute_error": 0.001', '"max_absolute_error": 0.0015'))
    started = time.perf_counter()
    did = rebuild(memo, work / "dataset", out, work / "project", scratch)
    edit = time.perf_counter() - started
    assert "Edited while serving." in (out / f"generated/definitions/{d['name']}.html").read_text()
    print(f"serve: first build {first:.1f} s; after editing {d['name']} and one of its trace files: {edit:.2f} s "
          f"({did}); ratio edit / first build = {edit / first:.3f}")


if __name__ == "__main__":
    main()
