"""python -m generator.workloadgen [--dataset DIR] [--check]: write or check recipe workloads."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..model.errors import KernelTraceError
from ..model.layout import CANONICAL
from .write import all_specs, render, stale, write


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generator.workloadgen", description=(
        "Write the workloads the recipes in generator/workloadgen describe (JSONL lines and "
        "safetensors blobs for index inputs), or with --check verify the committed files match."))
    parser.add_argument("--dataset", type=Path, default=Path("dataset"),
                        help="dataset root (default: ./dataset in the current folder)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    try:
        files = render(args.dataset, all_specs())
    except KernelTraceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        problems = stale(args.dataset, files)
        for p in problems:
            print(f"stale: {p}", file=sys.stderr)
        made = {Path(f).resolve() for f in files}
        orphans = [w for w in sorted(args.dataset.glob(CANONICAL["workloads"].glob)) if w.resolve() not in made]
        for w in orphans:
            print(f"no recipe: {w}: no module of generator/workloadgen writes it (add the definition's "
                  f"workloads() there, or remove the file)", file=sys.stderr)
        problems = [*problems, *orphans]
        if problems:
            print("run `python -m generator.workloadgen` to regenerate", file=sys.stderr)
            return 1
        print(f"{len(files)} recipe files up to date")
        return 0
    changed = list(write(args.dataset, files))
    for path in changed:
        print(f"wrote {path}")
    print(f"{len(files)} recipe files, {len(changed)} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
