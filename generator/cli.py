"""Command line: `kerneltrace <command>`. Thin: each command parses arguments and calls one stage."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from . import __version__
from .model.errors import KernelTraceError
from .model.evaluation import BENCH_TIMEOUT_S
from .model.layout import CANONICAL
from .model.repo_id import DEFAULT_REPO_ID
from .model.status import NOT_MEASURED


def _add_dataset(p: argparse.ArgumentParser) -> None:
    # ./dataset of the folder you stand in (your clone), never the installed package's own copy
    p.add_argument("--dataset", type=Path, default=Path("dataset"), metavar="DIR",
                   help="dataset folder (default: ./dataset in the current folder)")


def _repo_relative(dataset: Path) -> str:
    """The dataset folder as a prefix relative to the current folder (the repository root in CI: GitHub
    resolves annotation paths from there), e.g. 'dataset/'; '' when it is the current folder itself or
    outside it (GitHub cannot place those; the paths stay relative to the dataset)."""
    try:
        rel = dataset.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return ""
    return "" if rel == "." else rel + "/"


def cmd_validate(args: argparse.Namespace) -> int:
    from .model.diagnostics import count_errors, format_report
    from .validate import validate_path

    fmt = args.format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "human")
    diags = validate_path(args.dataset)
    if not args.warnings:
        shown = [d for d in diags if d.is_error]
    else:
        shown = diags
    report = format_report(shown, fmt, github_prefix=_repo_relative(args.dataset))
    if report:
        print(report)
    errors = count_errors(diags)
    if fmt != "json":
        print(f"kerneltrace validate: {args.dataset}: " + ("OK" if not errors else f"{errors} error(s)"),
              file=sys.stderr)
    return 1 if errors else 0


def cmd_build(args: argparse.Namespace) -> int:
    from .site import build_site

    build_site(args.dataset, args.out, strict=not args.no_strict)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .site import serve_site

    serve_site(args.dataset, args.addr)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from .formats.importer import run_import

    return run_import(args.paths, args.dataset, dry_run=args.dry_run, workload_uuid=args.workload)


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_dataset

    print(export_dataset(args.dataset, args.out, fmt=args.format, repo_id=args.repo).format_human())
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from .export.publish import publish

    result = publish(args.dataset, args.repo, revision=args.revision, create_pr=args.create_pr,
                     dry_run=args.dry_run, export_dir=args.export_dir)
    print(result.report())
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    summary = run_bench(args.dataset, device=args.device, out=args.out, definitions=args.definitions or (),
                        solutions=args.solutions or (), authors=args.authors or (), shard=args.shard,
                        resume=args.resume, correctness_only=args.correctness_only,
                        max_bytes=int(args.max_mib * 2**20) if args.max_mib is not None else None,
                        max_flops=args.max_gflop * 1e9 if args.max_gflop is not None else None,
                        timeout_s=args.timeout, progress=not args.quiet, breadth_first=args.breadth_first,
                        budget_s=args.budget_s)
    plan = summary.plan
    if plan.skipped:
        print(f"skipped {len(plan.skipped)}:")
        for what, why in plan.skipped:
            print(f"  {what}: {why}")
    if plan.already_done:
        print(f"{plan.already_done} pair(s) already have a trace on {summary.hardware} (--resume)")
    counts = summary.counts()
    where = "checked, no traces written" if args.correctness_only else f"traces in {(args.out or args.dataset) / CANONICAL['traces'].name}"
    print(f"{len(summary.outcomes)} pair(s) on {summary.hardware}: "
          + (", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing to do") + f"; {where}")
    if summary.outcomes:
        spent = sum(o.seconds for o in summary.outcomes)
        slowest = sorted(summary.outcomes, key=lambda o: -o.seconds)[:5]
        print(f"{len(summary.outcomes) / max(spent, 1e-9) * 60:.1f} pairs per minute ({spent:.0f} s in pairs, of which "
              f"{sum(o.setup_s for o in summary.outcomes):.0f} s starting and loading workers); slowest: "
              + ", ".join(f"{o.pair.solution.name} on {o.pair.workload.uuid[:8]} {o.seconds:.1f} s" for o in slowest))
    left = len(plan.pairs) - len(summary.outcomes)
    if left:
        print(f"{left} pair(s) not started: the --budget-s of {args.budget_s:g} s was spent; "
              "`kerneltrace bench --resume` with the same selection goes on from here")
    return _failures(summary.outcomes, strict=args.strict or args.correctness_only)


def _failures(outcomes, strict: bool) -> int:
    """End the run's report with every pair that ran and did not pass (skips are listed above, with their
    reasons); the exit status: 1 for any NOT_MEASURED pair, and for any failed pair when `strict` (a
    correctness-only run is the contributor's check, so a failure must fail it)."""
    failed = [o for o in outcomes if not o.passed]
    if not failed:
        if outcomes:
            print(f"all {len(outcomes)} pair(s) passed")
        return 0
    print(f"{len(failed)} of {len(outcomes)} pair(s) did not pass:")
    for o in failed:
        reason = _failure_reason(o)
        print(f"  {o.status}: {o.pair.solution.name} on workload {o.pair.workload.uuid}"
              + (f": {reason}" if reason else ""))
    if any(o.status == NOT_MEASURED for o in failed):
        print("NOT_MEASURED pairs have no trace: their definition's reference failed, not the solution; "
              "fix the reference (kerneltrace validate, tests/dataset/test_references.py) and run them again")
        return 1
    return 1 if strict else 0


def _failure_reason(outcome) -> str:
    """The last line of the pair's log (the outcome's own, or its trace's), shortened for a terminal."""
    log = outcome.log or ((outcome.record or {}).get("evaluation") or {}).get("log") or ""
    lines = [x.strip() for x in str(log).splitlines() if x.strip()]
    return (lines[-1][:197] + "...") if lines and len(lines[-1]) > 200 else (lines[-1] if lines else "")


def cmd_merge(args: argparse.Namespace) -> int:
    from .bench import merge

    summary = merge(args.dataset, args.folders)
    for line in summary.skipped:
        print(f"skipped {line}", file=sys.stderr)
    print(f"merged into {args.dataset / CANONICAL['traces'].name}: {summary.added} added, {summary.replaced} replaced by newer, "
          f"{summary.unchanged} already there; {summary.files} file(s) rewritten")
    return 0


def _checked(command: str, problems: list, up_to_date: str) -> int:
    """A generating command's --check: each problem on stderr and the command that fixes them (exit 1), else the
    line that says all is current (exit 0)."""
    for p in problems:
        print(f"kerneltrace {command}: {p}", file=sys.stderr)
    if problems:
        print(f"run `kerneltrace {command}` to regenerate", file=sys.stderr)
        return 1
    print(up_to_date)
    return 0


def cmd_workloads(args: argparse.Namespace) -> int:
    from .workloadgen.write import all_specs, check, prune, render, write

    files = render(args.dataset, all_specs(args.dataset))
    if args.check:
        return _checked("workloads", check(args.dataset, files), f"{len(files)} recipe files up to date")
    changed = list(write(args.dataset, files))
    for path in changed:
        print(f"wrote {path}")
    removed = prune(args.dataset, files)
    for path in removed:
        print(f"removed {path}")
    print(f"{len(files)} recipe files, {len(changed)} changed" + (f", {len(removed)} blobs removed" if removed else ""))
    return 0


def cmd_contenders(args: argparse.Namespace) -> int:
    from .contenders import contenders

    report = contenders(args.dataset, definitions=args.definitions or (), check=args.check, probe=args.probe)
    for why, names in report.by_reason().items():
        print(f"no contender for {len(names)} definition(s): {why}: " + ", ".join(names))
    if args.check:
        return _checked("contenders", report.problems, f"{report.files} generated contenders up to date")
    for path in report.changed:
        print(f"wrote {path}")
    for path in report.removed:
        print(f"removed {path}")
    print(f"{report.files} generated contenders, {len(report.changed)} changed"
          + (f", {len(report.removed)} removed" if report.removed else ""))
    return 0


def cmd_definitions(args: argparse.Namespace) -> int:
    from .definitions import definitions

    report = definitions(args.dataset, check=args.check)
    if args.check:
        return _checked("definitions", report.problems, f"{report.files} family files up to date")
    for path in report.changed:
        print(f"wrote {path}")
    print(f"{report.files} family files, {len(report.changed)} changed")
    return 0


def cmd_roofline(args: argparse.Namespace) -> int:
    from .analyse.roofline import export_cascades, format_roofline, roofline_rows, verify_export
    from .load import load

    ds = load(args.dataset)
    unknown = [n for n in args.definition or () if n not in ds.definitions]
    unknown += [n for n in args.hardware or () if n not in ds.hardware]
    if unknown:
        print(f"kerneltrace roofline: unknown definition or hardware: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.export:
        written = export_cascades(ds, args.export, args.definition)
        mismatches = verify_export(ds, args.export, written)
        for line in mismatches:
            print(f"kerneltrace roofline: {line}", file=sys.stderr)
        print(f"wrote {len(written)} rendered cascade(s) under {args.export}; re-read: "
              + ("same counts" if not mismatches else f"{len(mismatches)} mismatch(es)"))
        return 1 if mismatches else 0
    rows = roofline_rows(ds, args.definition, args.hardware)
    print(format_roofline(rows))
    return 1 if any(r.counts is None for r in rows) else 0


def cmd_kit(args: argparse.Namespace) -> int:
    from . import kit

    if args.kit_command == "prepare":
        try:
            report = kit.prepare(args.out, python=args.python, platforms=args.platform or kit.DEFAULT_PLATFORMS,
                                 download=not args.no_download, extra=args.extra or ())
        except RuntimeError as e:
            raise KernelTraceError(str(e)) from None
        print(report.format())
        print(f"run it on the GPU machine, from the repository root: python3 {args.out}/run.py --budget-s 480 "
              '--out "$OUT"')
        return 0
    bench_args = list(args.bench_args or ())
    if bench_args[:1] == ["--"]:
        bench_args = bench_args[1:]
    return kit.run_kit(args.kit, out=args.out, budget_s=args.budget_s, device=args.device, dataset=args.dataset,
                       work=args.work, skip=args.skip, tests=args.tests, tests_s=args.tests_s,
                       harness_s=args.harness_s, harness=args.harness, pair_timeout=args.pair_timeout,
                       sandbox=args.sandbox, bench_args=bench_args)


# -- arguments, one function per command -----------------------------------------------------

def _validate_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--format", choices=["human", "json", "github"], help="output format (default: human; github in Actions)")
    p.add_argument("--no-warnings", dest="warnings", action="store_false", help="print errors only")


def _bench_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    p.add_argument("--definitions", nargs="+", metavar="NAME", help="only these definitions")
    p.add_argument("--solutions", nargs="+", metavar="NAME", help="only these solutions")
    p.add_argument("--authors", nargs="+", metavar="NAME", help="only solutions by these authors")
    p.add_argument("--shard", metavar="K/N", help="run shard K of N (1-based): N machines cover every pair once")
    p.add_argument("--resume", action="store_true", help="skip pairs that already have a trace on this hardware")
    p.add_argument("--correctness-only", action="store_true", help="check correctness only; write no traces; exit 1 if any pair did not pass")
    p.add_argument("--out", type=Path, metavar="DIR", help="write traces under DIR/traces/ (default: the dataset)")
    p.add_argument("--max-mib", type=float, metavar="MIB",
                   help="skip workloads whose inputs and outputs exceed MIB per call "
                        "(default on the CPU: 64; no limit on GPUs)")
    p.add_argument("--max-gflop", type=float, metavar="GFLOP",
                   help="skip workloads whose Einsum cascade counts more than GFLOP per call "
                        "(default on the CPU: 5; no limit on GPUs). Samplers, whose cost no Einsum counts, "
                        "run on the CPU up to batch 8 (2.1M probabilities per call)")
    p.add_argument("--timeout", type=float, default=BENCH_TIMEOUT_S, metavar="S",
                   help=f"seconds one workload (or building a solution) may take (default: {BENCH_TIMEOUT_S:g}; "
                        "validate refuses a timing past the default)")
    p.add_argument("--breadth-first", action="store_true",
                   help="first every selected solution on one representative workload of its definition (those "
                        "of definitions with several solutions first), then the other workloads (a run cut short "
                        "has covered every definition once)")
    p.add_argument("--budget-s", type=float, metavar="S",
                   help="start no new pair after S seconds; --resume goes on where the run stopped")
    p.add_argument("--strict", action="store_true", help="exit 1 if any pair did not pass (always so with --correctness-only)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _merge_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("folders", nargs="+", type=Path, metavar="FOLDER", help="shard output folders")


def _build_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--out", type=Path, default=Path("site"), metavar="DIR", help="where the built site goes (default: site/)")
    p.add_argument("--no-strict", action="store_true", help="do not fail on mkdocs warnings")


def _serve_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--addr", default="127.0.0.1:8000", help="address to serve on (default: 127.0.0.1:8000)")


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to import")
    _add_dataset(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")
    p.add_argument("--workload", metavar="UUID",
                   help="workload uuid to attach legacy benchmark-result records to (they name none)")


def _export_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--out", type=Path, default=Path("export"), metavar="DIR", help="output folder (default: export/)")
    p.add_argument("--format", choices=["hub", "flashinfer-trace"], default="hub", help="layout to write (default: hub)")
    p.add_argument("--repo", default=DEFAULT_REPO_ID, metavar="ORG/NAME",
                   help=f"repo id the dataset card's examples name (default: {DEFAULT_REPO_ID})")


def _publish_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--repo", required=True, metavar="ORG/NAME", help="the dataset repo on the Hub (must exist)")
    p.add_argument("--revision", default="main", metavar="BRANCH", help="branch to commit to (default: main)")
    p.add_argument("--create-pr", action="store_true", help="open a pull request on the Hub instead of committing")
    p.add_argument("--dry-run", action="store_true", help="list the files that would be sent, send nothing")
    p.add_argument("--export-dir", type=Path, metavar="DIR",
                   help="publish this folder written by `kerneltrace export` instead of exporting again")


def _workloads_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed file is not "
                                                        "what the recipes make")


def _definitions_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 listing the files that are not what "
                                                        "their family renders")


def _contenders_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--definitions", nargs="+", metavar="NAME", help="only these definitions")
    p.add_argument("--check", action="store_true", help="write nothing, compile nothing; exit 1 listing the "
                                                        "generated solutions that differ, are missing or are stale")
    p.add_argument("--probe", action="store_true", help="trace the references again (TorchDynamo, nothing runs) "
                                                        f"and update {CANONICAL['contenders'].pattern}")


def _roofline_args(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument("--definition", action="append", metavar="NAME", help="only this definition (repeatable)")
    p.add_argument("--hardware", action="append", metavar="NAME", help="only this hardware spec (repeatable)")
    p.add_argument("--export", type=Path, metavar="DIR",
                   help="write DIR/<type>/<definition>/<workload uuid>.yaml instead of printing the table")


def _kit_args(p: argparse.ArgumentParser) -> None:
    from .kit import DEFAULT_PYTHON, add_run_arguments

    sub = p.add_subparsers(dest="kit_command", required=True, metavar="STEP")
    prep = sub.add_parser("prepare", help="here: download the wheels, copy bwrap, write run.py and README.txt",
                          description="Fill DIR with what the offline GPU machine lacks: the wheels the bench "
                                      "imports (jsonschema and its dependencies) for the target Python and platform, "
                                      "this machine's bwrap, and the run step (run.py, run.sh).")
    prep.add_argument("--out", type=Path, default=Path(".kit"), metavar="DIR", help="the kit folder (default: .kit, git-ignored)")
    prep.add_argument("--python", default=DEFAULT_PYTHON, metavar="X.Y", help="the GPU machine's Python (default: %(default)s)")
    prep.add_argument("--platform", action="append", metavar="TAG",
                      help="wheel platform tag, repeatable (default: manylinux_2_17/2014/2_28/... x86_64)")
    prep.add_argument("--extra", action="append", metavar="REQ", help="another distribution to download (repeatable)")
    prep.add_argument("--no-download", action="store_true", help="download nothing: leave DIR/wheels as it is (tests)")
    run = sub.add_parser("run", help="there: install the wheels, describe the machine, run the CUDA tests, the "
                                     "harness benchmark and the bench, pack the results",
                         description="The kit's run step (what DIR/run.py runs). Bench options go after --.")
    run.add_argument("--kit", type=Path, default=Path(".kit"), metavar="DIR", help="the kit folder (default: .kit)")
    add_run_arguments(run)
    run.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="-- BENCH_OPTION",
                     help="options for kerneltrace bench, after --")

@dataclass(frozen=True)
class Command:
    name: str
    run: Callable[[argparse.Namespace], int]
    arguments: Callable[[argparse.ArgumentParser], None]
    help: str
    description: Optional[str] = None


# The commands in the order `kerneltrace --help` lists them.
COMMANDS = (
    Command("validate", cmd_validate, _validate_args, "check the dataset; exit 1 on any error",
            "Schema and semantic checks of every record. Prints file:line $.field: message, "
            "with a hint. Writes GitHub annotations when run inside GitHub Actions."),
    Command("bench", cmd_bench, _bench_args, "run solutions on workloads; append one trace per pair",
            "Runs every selected (solution, workload) pair in its own process with a "
            "timeout: seeded inputs, checks against the reference on several input sets, "
            "anti-cheat checks, timing (cold L2 and CUDA events on GPUs, a host clock on "
            f"the CPU). Appends traces to <out>/{CANONICAL['traces'].pattern}."),
    Command("merge", cmd_merge, _merge_args, "fold traces from bench shards into the dataset, without duplicates",
            "Reads the traces/ of each folder (outputs of `kerneltrace bench --out`) and "
            "adds them to the dataset's traces: one per (solution, workload, hardware), "
            "the newest winning."),
    Command("build", cmd_build, _build_args, "render the site and build it with mkdocs --strict"),
    Command("serve", cmd_serve, _serve_args, "render the site and preview it live: an edit to one kernel's files "
                                            "rebuilds only its pages, in seconds, and open pages reload"),
    Command("import", cmd_import, _import_args, "rewrite files in other dialects as canonical dataset files",
            "Reads Kernel Signature (seed 001), schema-set (seed 002) and FlashInfer-Trace "
            "files and writes canonical files into the dataset; says what could not be carried over."),
    Command("export", cmd_export, _export_args, "write a Hub-ready folder: Parquet per record kind and a dataset card",
            "Validates, then writes one Parquet config per record kind, a generated dataset "
            "card (README.md) and the blobs; the same dataset gives byte-identical output. "
            "--format flashinfer-trace writes the FlashInfer-Trace layout instead."),
    Command("publish", cmd_publish, _publish_args,
            "upload the export to a Hugging Face dataset repo, only what changed",
            "Exports the dataset, compares it with what the Hub repo holds and uploads only "
            "the files that changed, in one commit (deleting files the export no longer has). "
            "The token comes from HF_TOKEN; HF_ENDPOINT selects another Hub."),
    Command("workloads", cmd_workloads, _workloads_args,
            "write the workloads the model recipes describe, or --check the committed ones",
            f"Runs every recipe ({CANONICAL['recipes'].pattern}, run by the engine of generator/workloadgen) "
            "and writes the JSONL lines and the safetensors blobs of index inputs. "
            "--check writes nothing and fails if a committed file differs from what its recipe makes."),
    Command("definitions", cmd_definitions, _definitions_args,
            "write the definition families (siblings of a template), or --check the committed ones",
            f"Renders every family ({CANONICAL['families'].pattern}: a template definition and, per sibling, what "
            "differs from it) into the siblings' definitions, Einsum cascades and baselines, and writes those that "
            "differ. --check writes nothing and fails if a committed file differs from what its family renders."),
    Command("contenders", cmd_contenders, _contenders_args,
            "write the generated contenders (torch.compile of every reference, library kernels), or --check them",
            "Writes a torch.compile solution (solutions/torch-compile/) for every definition whose reference traces "
            "as one graph with dynamic shapes, from the reference itself, and the library contenders "
            "(generator/contenders/libraries). Whether a reference compiles is the probe's verdict, kept in "
            f"{CANONICAL['contenders'].pattern} (--probe traces again; a changed reference is traced on the next "
            "write). --check writes and compiles nothing and fails on a file that differs, is missing or is stale."),
    Command("roofline", cmd_roofline, _roofline_args,
            "FLOPs, bytes and speed-of-light time of every workload, per hardware",
            "Renders each definition's Einsum cascade with every workload's axes and prints "
            "MACs/FLOPs, minimum bytes, arithmetic intensity and T_SOL = max(FLOPs / peak, "
            "bytes / bandwidth) with the bound that binds, for each hardware spec. "
            "--export writes the rendered cascades as plain YAML (the workload-and-renames "
            "format AccelForge reads) and checks that they read back to the same counts."),
    Command("kit", cmd_kit, _kit_args, "a kit for an offline GPU machine: tests, harness and bench in one call",
            "`kit prepare` (here, online) puts the wheels the bench needs, bwrap and run.py into a folder; "
            "`kit run` (there, offline, from the repository root) installs them, writes env.txt, runs the "
            "CUDA tests, the harness benchmark and the bench within one time budget, and packs the traces "
            "and logs into at most 8 files."),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kerneltrace", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"kerneltrace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        command.arguments(p)
        p.set_defaults(func=command.run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KernelTraceError as e:
        print(f"kerneltrace {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kerneltrace {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
