"""The GPU kit: everything one offline GPU machine needs to run the CUDA tests, the harness benchmark and
the bench in one call, and to bring the results back in a few files.

`kerneltrace kit prepare --out .kit` runs here (where the package registry can be reached): it downloads
the wheels the bench imports that the GPU image lacks (for the target Python and platform), copies the
bubblewrap binary, and writes run.py, run.sh and README.txt into the kit folder. On the GPU machine, from
the repository root, `python3 .kit/run.py --budget-s 480 --out "$OUT"` (or `bash .kit/run.sh ...`):

1. installs the wheels into <kit>/site (`pip install --no-index --no-deps --target`) and puts it and the
   repository root on PYTHONPATH (nothing is installed into the machine's Python), <kit>/bin on PATH;
2. writes env.txt (nvidia-smi, Python, torch, triton, CUDA, the GPU, bwrap and the sandbox probe) and sets
   KERNELTRACE_SANDBOX=bwrap only where the probe started a sandboxed torch that sees the device;
3. runs the tests that need CUDA, tests/benchmarks/bench_harness.py, then `kerneltrace bench --resume`
   into a work folder (traces are appended as pairs finish);
4. always (a failed step, a spent budget, SIGTERM) packs the traces and logs into one kit-results.tar.gz
   and leaves at most 8 files in --out.

Every step's time limit comes from the one --budget-s, so the run ends before the device command's limit.
This module imports only the standard library: it runs before the kit's wheels are installed.
"""

from .prepare import DEFAULT_PLATFORMS, DEFAULT_PYTHON, PrepareReport, prepare
from .run import add_run_arguments, cuda_test_files, run_kit, run_main

__all__ = ["DEFAULT_PLATFORMS", "DEFAULT_PYTHON", "PrepareReport", "add_run_arguments", "cuda_test_files", "prepare",
           "run_kit", "run_main"]
