"""`kerneltrace kit run` (run.py on the GPU machine): the CUDA tests, the harness benchmark and the bench
in one budget, the results packed whatever happens."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tarfile
import threading
from pathlib import Path
from typing import Optional, Sequence

from ..model.layout import CANONICAL
from .machine import describe_environment, install_wheels
from .probes import PYTEST_PLUGIN
from .steps import ARCHIVE, MAX_OUT_FILES, Run, Step, Stopped, cap_in_place


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help=f"where the results go ($OUT of the device tool): env.txt, summary.txt, the logs and "
                        f"{ARCHIVE}; at most {MAX_OUT_FILES} files")
    p.add_argument("--budget-s", type=float, required=True, metavar="S",
                   help="seconds the whole run may take; every step's limit comes from it (leave the device "
                        "command a minute more)")
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu to try the kit out")
    p.add_argument("--dataset", type=Path, default=None, metavar="DIR", help="dataset folder (default: <repo>/dataset)")
    p.add_argument("--work", type=Path, default=None, metavar="DIR",
                   help="the bench's output folder (traces/ under it; kept between runs, so --resume skips "
                        "finished pairs); default: <tmp>/kerneltrace-kit-work")
    p.add_argument("--skip", default="", metavar="STEPS",
                   help="comma-separated steps to leave out: tests, harness, bench")
    p.add_argument("--tests", choices=["cuda", "files"], default="cuda",
                   help="cuda: only the tests about CUDA in the test files that have any (default); files: "
                        "those files whole")
    p.add_argument("--tests-s", type=float, default=None, metavar="S", help="cap on the tests (default: 20%% of the budget)")
    p.add_argument("--harness-s", type=float, default=None, metavar="S",
                   help="cap on the harness benchmark (default: 15%% of the budget)")
    p.add_argument("--harness", default="tests/benchmarks/bench_harness.py", metavar="SCRIPT",
                   help="the harness benchmark script, relative to the repository (default: %(default)s)")
    p.add_argument("--pair-timeout", type=float, default=120.0, metavar="S",
                   help="the bench's --timeout per workload (default: 120; bench options after -- win)")
    p.add_argument("--sandbox", choices=["auto", "bwrap", "none"], default="auto",
                   help="auto: KERNELTRACE_SANDBOX=bwrap where the probe works, else unsandboxed with the reason "
                        "recorded; bwrap: require it (the bench fails without); none: never sandbox")


def run_main(argv: Sequence[str], *, kit: Path, repo: Optional[Path] = None) -> int:
    argv = list(argv)
    bench_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, bench_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(prog="run.py", description="Run the GPU kit: CUDA tests, harness benchmark, bench; "
                                "pack the results. Bench options go after --.")
    add_run_arguments(p)
    args = p.parse_args(argv)
    return run_kit(kit, repo=repo, bench_args=bench_args, **{k: v for k, v in vars(args).items()})


def cuda_test_files(repo: Path) -> list[str]:
    """The test files with tests that need CUDA (a skipif on CUDA, a cuda marker), relative to `repo`."""
    pattern = re.compile(r"skipif\([^\n]*cuda|mark\.cuda\b|requires_cuda|needs_cuda", re.IGNORECASE)
    return [p.relative_to(repo).as_posix() for p in sorted((repo / "tests").rglob("test_*.py"))
            if pattern.search(p.read_text(encoding="utf-8", errors="replace"))]


def _bench_flags(r: Run, python: str) -> set[str]:
    """The bench options this checkout's CLI knows (from `bench --help`)."""
    code, out = r.call([python, "-m", "generator.cli", "bench", "--help"], min(60.0, max(1.0, r.left() - r.reserve)))
    return set(re.findall(r"--[a-z][a-z0-9-]*", out)) if code == 0 else set()


def run_kit(kit: Path, *, out: Path, budget_s: float, repo: Optional[Path] = None, device: str = "cuda",
            dataset: Optional[Path] = None, work: Optional[Path] = None, skip: str = "", tests: str = "cuda",
            tests_s: Optional[float] = None, harness_s: Optional[float] = None,
            harness: str = "tests/benchmarks/bench_harness.py", pair_timeout: float = 120.0, sandbox: str = "auto",
            bench_args: Sequence[str] = ()) -> int:
    """The run step (see the module's docstring). Returns 0 when every step that ran passed, else 1."""
    kit = kit.resolve()
    repo = (repo or Path.cwd()).resolve()
    out = out.resolve()
    import tempfile
    work = (work or Path(tempfile.gettempdir()) / "kerneltrace-kit-work").resolve()
    dataset = (dataset or repo / "dataset").resolve()
    skipped = {x.strip() for x in skip.split(",") if x.strip()}
    unknown = skipped - {"tests", "harness", "bench"}
    if unknown:
        print(f"run.py: --skip: unknown step(s) {', '.join(sorted(unknown))} (use tests, harness, bench)", file=sys.stderr)
        return 2
    r = Run(kit, repo, out, work, budget_s)
    python = sys.executable
    floor = 0.0 if "bench" in skipped else 0.35 * budget_s  # kept for the bench while the tests and the harness run

    def on_signal(signum, frame):  # noqa: ARG001
        raise Stopped(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        r.say(f"kit {kit} on {device}, budget {budget_s:.0f} s (packing keeps {r.reserve:.0f} s), out {out}")
        _set_up(r, python, device, sandbox)
        if "tests" in skipped:
            r.step("tests", 0).status = "skipped: --skip"
        else:
            limit = min(tests_s if tests_s is not None else 0.2 * budget_s, r.left() - r.reserve - floor)
            _run_tests(r, python, limit, tests)
        if "harness" in skipped:
            r.step("harness", 0).status = "skipped: --skip"
        elif not (repo / harness).is_file():
            r.step("harness", 0).status = f"skipped: {harness} is missing"
        else:
            s = r.step("harness", min(harness_s if harness_s is not None else 0.15 * budget_s,
                                      r.left() - r.reserve - floor))
            r.timed(s, [python, harness, "--device", device, "--json", str(out / "harness.json")], out / "harness.log")
        if "bench" in skipped:
            r.step("bench", 0).status = "skipped: --skip"
        else:
            _run_bench(r, python, dataset, device, pair_timeout, bench_args)
    except Stopped as exc:
        r.say(f"stopped by {exc}: packing what there is")
        for s in r.steps:
            if s.status in ("not run", "stopped"):
                s.status = f"stopped ({exc})"
    except Exception as exc:  # noqa: BLE001 - the kit's own bug: still pack
        r.say(f"the kit failed: {type(exc).__name__}: {exc}")
        r.steps.append(Step("kit", status=f"failed: {type(exc).__name__}: {exc}"))
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        with r.lock:
            if r.child is not None:
                r.kill(r.child)
        code = finish(r)
    return code


def _set_up(r: Run, python: str, device: str, sandbox: str) -> None:
    """The children's environment: the kit's bin/ (bwrap) and site/ (its wheels) first, then the wheels installed
    and the machine described (which also decides the sandbox mode)."""
    bin_dir = r.kit / "bin"
    if (bin_dir / "bwrap").is_file():
        try:
            (bin_dir / "bwrap").chmod(0o755)  # a copy may lose its mode on the way
        except OSError:
            pass
    r.env["PATH"] = os.pathsep.join([str(bin_dir), *filter(None, r.env.get("PATH", os.defpath).split(os.pathsep))])
    r.env["PYTHONPATH"] = os.pathsep.join([str(r.repo), str(r.kit / "site"),
                                           *filter(None, r.env.get("PYTHONPATH", "").split(os.pathsep))])
    r.env["PYTHONUNBUFFERED"] = "1"
    r.env.pop("KERNELTRACE_SANDBOX", None)
    install_wheels(r, python)
    mode = describe_environment(r, python, device, sandbox)
    if mode:
        r.env["KERNELTRACE_SANDBOX"] = mode


def _run_tests(r: Run, python: str, limit: float, tests: str) -> None:
    """The test files with CUDA tests, only those tests unless `tests` is "all"."""
    files = cuda_test_files(r.repo)
    s = r.step("tests", limit)
    if not files:
        s.status = "skipped: no test file has CUDA tests"
        return
    plugin_dir = r.work / "pytest-plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    (plugin_dir / "kit_cuda_select.py").write_text(PYTEST_PLUGIN, encoding="utf-8")
    cmd = [python, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts=",
           "-q", "-rs", "--junitxml", str(r.work / "tests.xml")]
    if tests == "cuda":
        cmd += ["-p", "kit_cuda_select"]
    saved = r.env["PYTHONPATH"]
    r.env["PYTHONPATH"] = os.pathsep.join([saved, str(plugin_dir)])
    try:
        code = r.timed(s, cmd + files, r.out / "tests.log")
    finally:
        r.env["PYTHONPATH"] = saved
    s.detail = " ".join(files) + (" (the CUDA tests in them)" if tests == "cuda" else "")
    if code == 5:
        s.status = "ok"
        s.detail += ": no test selected"


def _run_bench(r: Run, python: str, dataset: Path, device: str, pair_timeout: float,
               bench_args: Sequence[str]) -> None:
    """`kerneltrace bench --resume` for the rest of the budget, breadth-first, the traces repacked every minute."""
    s = r.step("bench", r.left() - r.reserve)
    # The bench's own budget ends a little before the kill, so that it can stop between pairs.
    grace = min(60.0, max(5.0, 0.1 * s.limit))
    known = _bench_flags(r, python)
    s.limit = r.left() - r.reserve
    cmd = [python, "-m", "generator.cli", "bench", "--dataset", str(dataset), "--device", device,
           "--out", str(r.work), "--resume"]
    wanted = [["--breadth-first"], ["--budget-s", f"{max(1, int(s.limit - grace))}"]]
    if not any(a == "--timeout" or a.startswith("--timeout=") for a in bench_args):
        wanted.append(["--timeout", f"{pair_timeout:g}"])
    missing = []
    for flag in wanted:
        if flag[0] in known or not known:
            cmd += flag
        else:
            missing.append(flag[0])
    if missing:
        s.detail = (f"this checkout's bench has no {', '.join(missing)}: not passed (the kit's limit of "
                    f"{s.limit:.0f} s stops it)")
        r.say(f"bench: WARNING: {s.detail}")
    cmd += list(bench_args)
    stopper = threading.Event()

    def repack() -> None:  # the traces so far, in case the whole command is killed from outside
        while not stopper.wait(60.0):
            try:
                r.pack()
            except (OSError, tarfile.TarError):
                pass

    packer = threading.Thread(target=repack, daemon=True)
    packer.start()
    try:
        r.timed(s, cmd, r.out / "bench.log")
    finally:
        stopper.set()
        packer.join(timeout=30)
    traces = r.work / CANONICAL["traces"].name
    n = sum(1 for f in traces.rglob("*.jsonl") for line in open(f, encoding="utf-8") if line.strip()) \
        if traces.is_dir() else 0
    s.detail = (s.detail + "; " if s.detail else "") + f"{n} trace(s) in {traces}"


def finish(r: Run) -> int:
    """summary.txt, logs capped, the archive, the file count checked; the exit code."""
    lines = [f"KernelTrace GPU kit: {r.elapsed():.0f} s of a {r.budget:.0f} s budget"]
    lines += ["  " + s.line() for s in r.steps]
    failed = [s.name for s in r.steps if not s.ok]
    lines.append("result: " + ("every step that ran passed" if not failed else f"not ok: {', '.join(failed)}"))
    (r.out / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for line in lines:
        r.say(line)
    r.kit_log.close()
    for f in r.out.iterdir():
        if f.suffix in (".log", ".txt"):
            cap_in_place(f)
    try:
        archive = r.pack()
        note = f"packed {archive.name} ({archive.stat().st_size:,d} bytes)"
    except (OSError, tarfile.TarError) as exc:
        note = f"could not pack the results: {exc}"
        failed.append("pack")
    files = [f for f in r.out.rglob("*") if f.is_file()]
    if len(files) > MAX_OUT_FILES:
        note += f"; WARNING: {len(files)} files in {r.out}, more than the {MAX_OUT_FILES} that come back"
    try:
        print(f"[kit {r.elapsed():6.1f}s] {note}; {len(files)} file(s) in {r.out}", flush=True)
    except OSError:
        pass
    with open(r.out / "summary.txt", "a", encoding="utf-8") as f:
        f.write(note + "\n")
    return 1 if failed else 0
