"""What does reading the cascades cost in `roofline_rows` (the roofline table, the site's Speed of
light section, the export's `roofline` config)? The same rows with the pure-Python YAML loader and
with libyaml's, alternating, in one run; prints seconds per round and the ratio.

    python tests/benchmarks/bench_roofline.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import yaml

import generator.einsum.render as render
from generator.analyse.roofline import roofline_rows
from generator.load import DEFAULT_DATASET, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not hasattr(yaml, "CSafeLoader"):
        raise SystemExit("this PyYAML has no libyaml: both loaders would be the pure-Python one")
    ds = load(DEFAULT_DATASET)
    totals = {"SafeLoader": 0.0, "CSafeLoader": 0.0}
    rows = {}
    for r in range(args.rounds):
        for name in totals:
            render._LOADER = getattr(yaml, name)
            render.read_rendered.cache_clear()  # each round reads every rendering again
            render._read_skeleton.cache_clear()
            render._skeleton_structure.cache_clear()
            start = time.perf_counter()
            rows[name] = roofline_rows(ds)
            seconds = time.perf_counter() - start
            totals[name] += seconds
            print(f"round {r + 1}: {name:11s} {seconds:6.2f} s for {len(rows[name])} workloads")
    assert rows["SafeLoader"] == rows["CSafeLoader"], "the two loaders disagree"
    print(f"CSafeLoader / SafeLoader = {totals['CSafeLoader'] / totals['SafeLoader']:.2f} (same rows)")


if __name__ == "__main__":
    main()
