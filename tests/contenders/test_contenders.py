"""kerneltrace contenders: the compiler contender written from the reference, the probe's verdicts, --check, and a
generated contender through the real bench (one tiny torch.compile: the CPU's inductor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.cli import main
from generator.contenders import contenders
from generator.contenders.compiler import compiled_source, solution_name, static_dims
from generator.contenders.write import COMPILES, probe_path, reference_digest, write_verdicts
from generator.model.contender_kinds import LIBRARY_AUTHORS
from generator.model.layout import CANONICAL

from dataset_factory import DEFINITION, MORE_WORKLOADS, WORKLOAD, dump, write_dataset

COMPILER_FILE = CANONICAL.solution_file("torch-compile", "norm", "rmsnorm_h128", "rmsnorm_h128_compile")
# A reference whose control flow depends on its inputs' values: TorchDynamo cannot trace it as one graph.
DATA_DEPENDENT = ("import torch\n\ndef run(input, weight, eps):\n    if input.float().sum().item() > 0:\n"
                  "        return input\n    return input * weight\n")


def _two_definitions(root: Path) -> Path:
    """The good dataset plus rmsnorm_h128_branchy, whose reference branches on a value."""
    write_dataset(root, workloads=[WORKLOAD, MORE_WORKLOADS[0]])
    dump(root / "definitions/norm/rmsnorm_h128_branchy.json",
         {**DEFINITION, "name": "rmsnorm_h128_branchy", "reference": DATA_DEPENDENT})
    (root / "workloads/norm/rmsnorm_h128_branchy.jsonl").write_text(
        json.dumps({**WORKLOAD, "definition": "rmsnorm_h128_branchy"}) + "\n")
    return root


def _verdicts(root: Path, **verdicts: str) -> None:
    refs = {"rmsnorm_h128": DEFINITION["reference"], "rmsnorm_h128_branchy": DATA_DEPENDENT}
    write_verdicts(root, {"verdicts": {n: {"reference": reference_digest(refs[n]), "verdict": v}
                                       for n, v in verdicts.items()}})


def test_writer_gives_a_compiling_definition_its_contender_and_a_failing_one_a_reason(tmp_path):
    root = _two_definitions(tmp_path / "ds")
    _verdicts(root, rmsnorm_h128=COMPILES, rmsnorm_h128_branchy="Unsupported: data-dependent branching")
    report = contenders(root)
    compiler = [(n, why) for n, why in report.skipped if not why.startswith(tuple(LIBRARY_AUTHORS))]  # not the libraries'
    assert compiler == [("rmsnorm_h128_branchy", "Unsupported: data-dependent branching")]
    assert report.by_reason()["Unsupported: data-dependent branching"] == ["rmsnorm_h128_branchy"]
    written = sorted(p.relative_to(root).as_posix() for p in root.glob("solutions/torch-compile/**/*.json"))
    assert written == [COMPILER_FILE]
    s = json.loads((root / COMPILER_FILE).read_text())
    baseline = json.loads((root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json").read_text())
    assert s["name"] == solution_name("rmsnorm_h128") and s["author"] == "torch-compile"
    assert s["spec"]["target_hardware"] == baseline["spec"]["target_hardware"]
    assert s["spec"]["language"] == "python" and s["spec"]["dependencies"] == ["torch>=2.6"]
    main_py = s["sources"][0]["content"]
    assert DEFINITION["reference"].rstrip("\n") in main_py
    # The const axis (hidden_size) is static: dim 1 of input 0 and dim 0 of input 1, marked in the compiled call.
    assert static_dims(DEFINITION) == {0: (1,), 1: (0,)}
    assert main_py == compiled_source(DEFINITION["reference"], {0: (1,), 1: (0,)})
    assert "_KERNELTRACE_STATIC = {0: (1,), 1: (0,)}\n" in main_py
    assert main_py.rstrip().splitlines()[-1].startswith("run = _kerneltrace_torch.compile(_kerneltrace_static_call, ")
    assert "torch.compile of the definition's reference" in s["description"]
    assert main(["contenders", "--check", "--dataset", str(root)]) == 0


def test_check_fails_on_an_edited_a_missing_and_a_stale_file_and_a_changed_reference(tmp_path, capsys):
    root = _two_definitions(tmp_path / "ds")
    _verdicts(root, rmsnorm_h128=COMPILES, rmsnorm_h128_branchy="Unsupported: data-dependent branching")
    contenders(root)
    path = root / COMPILER_FILE
    good = path.read_text()
    stale = root / CANONICAL.solution_file("torch-compile", "norm", "rmsnorm_h128_branchy", "hand_made")
    cases = {"differs": lambda: path.write_text(good.replace("mode=", "mode= ")),
             "missing": path.unlink,
             "stale": lambda: dump(stale, json.loads(good)),
             "reference changed": lambda: dump(root / "definitions/norm/rmsnorm_h128.json",
                                               {**DEFINITION, "reference": DEFINITION["reference"] + "\n# edited\n"})}
    definition = (root / "definitions/norm/rmsnorm_h128.json").read_text()
    for word, plant in cases.items():
        plant()
        capsys.readouterr()
        assert main(["contenders", "--check", "--dataset", str(root)]) == 1, word
        err = capsys.readouterr().err
        assert word.split()[0] in err, (word, err)
        path.write_text(good)
        stale.unlink(missing_ok=True)
        (root / "definitions/norm/rmsnorm_h128.json").write_text(definition)
        assert main(["contenders", "--check", "--dataset", str(root)]) == 0, word
    probe_path(root).unlink()  # no verdicts at all: every definition is unprobed
    assert main(["contenders", "--check", "--dataset", str(root)]) == 1
    assert "never probed" in capsys.readouterr().err


def test_probe_passes_a_traceable_reference_and_gives_the_reason_for_a_data_dependent_one(tmp_path):
    root = _two_definitions(tmp_path / "ds")
    report = contenders(root, probe=True)  # traces only (TorchDynamo, fullgraph): nothing compiles
    verdicts = json.loads(probe_path(root).read_text())["verdicts"]
    assert verdicts["rmsnorm_h128"] == {"reference": reference_digest(DEFINITION["reference"]), "verdict": COMPILES}
    why = verdicts["rmsnorm_h128_branchy"]["verdict"]
    assert why != COMPILES and why.split(":")[0] in ("Unsupported", "UserError"), why
    compiler = [n for n, why in report.skipped if not why.startswith(tuple(LIBRARY_AUTHORS))]  # not the libraries'
    assert compiler == ["rmsnorm_h128_branchy"] and report.files == 1


def test_probe_allows_a_size_one_axis_its_own_graph_and_no_more(tmp_path):
    """One graph must serve the workloads but for a size-1 axis's own. A batch that happens to equal the hidden size
    (128) shares no symbol with it (no duck sizing, as in the contender: with it, batch 130 needs a second graph), so
    the batch-128 graph serves batches 130 and 140; a Python loop over the batch needs a graph for every size."""
    def workloads(name, sizes):
        return [{**WORKLOAD, "definition": name, "workload": {**WORKLOAD["workload"], "uuid": f"{name}-{b}",
                                                               "axes": {"batch_size": b}}} for b in sizes]
    root = write_dataset(tmp_path / "ds", workloads=workloads("rmsnorm_h128", (128, 130, 140)))
    loop = ("import torch\n\ndef run(input, weight, eps):\n"
            "    return torch.stack([input[i] * weight for i in range(input.shape[0])])\n")
    dump(root / "definitions/norm/rmsnorm_h128_loop.json", {**DEFINITION, "name": "rmsnorm_h128_loop", "reference": loop})
    (root / "workloads/norm/rmsnorm_h128_loop.jsonl").write_text(
        "".join(json.dumps(w) + "\n" for w in workloads("rmsnorm_h128_loop", (1, 2, 3))))
    contenders(root, probe=True)
    verdicts = json.loads(probe_path(root).read_text())["verdicts"]
    assert verdicts["rmsnorm_h128"]["verdict"] == COMPILES
    assert verdicts["rmsnorm_h128_loop"]["verdict"].startswith("recompiles per workload")


def test_probe_traces_new_sizes_of_every_var_axis_first():
    """Three prefills of one request would pass a loop over the requests: the probe takes the smallest workloads that
    bring every varying axis a new value first (batches 1, 4, 16), then fills with the smallest others."""
    from types import SimpleNamespace

    from generator.contenders.probe import _three_workloads

    sizes = [(1, 128), (1, 2048), (1, 8192), (4, 2727), (16, 4437)]
    ws = [SimpleNamespace(axes={"batch_size": b, "total_q": q}) for b, q in sizes]
    assert [w.axes["batch_size"] for w in _three_workloads(ws)] == [1, 4, 16]
    assert [w.axes["total_q"] for w in _three_workloads(ws[:3])] == [128, 2048, 8192]  # one batch size: the smallest


@pytest.mark.usefixtures("one_torch_thread")
def test_generated_contender_passes_the_bench_and_its_compile_is_recorded_apart(tmp_path):
    from generator.bench import run_bench

    root = _two_definitions(tmp_path / "ds")
    _verdicts(root, rmsnorm_h128=COMPILES, rmsnorm_h128_branchy="Unsupported: data-dependent branching")
    contenders(root)
    fast = {"min_samples": 3, "max_samples": 10, "budget_s": 0.05, "min_batches": 3}
    summary = run_bench(root, device="cpu", authors=["torch-compile"], timeout_s=240, timing=fast, progress=False)
    assert [o.status for o in summary.outcomes] == ["PASSED", "PASSED"], [o.log for o in summary.outcomes]
    traces = [json.loads(x) for x in (root / CANONICAL.trace_file("torch-compile", "norm", "rmsnorm_h128")).read_text().splitlines()]
    perf = [t["evaluation"]["performance"] for t in traces]
    # One worker serves both workloads: the first pays the compile (an inductor compile: far beyond a call), the
    # second (another batch size: dynamic shapes) does not.
    assert [p["first_call_after_load"] for p in perf] == [True, False]
    assert perf[0]["first_call_ms"] > 20 * perf[0]["latency_ms"] and perf[0]["first_call_ms"] > 200
    assert perf[1]["first_call_ms"] < perf[0]["first_call_ms"] / 5
