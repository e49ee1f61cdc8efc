"""plan.py: the order of pairs (by author, breadth-first), shards, the CPU's cost, FLOP and sampler limits, which
solutions a device takes, and clear errors for a bad selection, shard or device."""

from __future__ import annotations

import json

import pytest

from generator.bench.trusted.plan import make_plan, parse_shard, shard_of
from generator.load import load
from generator.model.errors import KernelTraceError
from generator.validate import validate_path

from dataset_factory import dump, write_dataset
from planted import DATASET, add_solution, copy_definition, workloads


def test_the_plan_runs_each_author_in_one_stretch_and_contested_definitions_first(tmp_path):
    """Pairs come by author (a worker serves an author's solutions in turn), then definition and solution; a
    breadth-first plan first runs every solution on one workload of its definition, those of definitions
    with several solutions (what a leaderboard compares) before the rest, then the other workloads."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(2))
    [w] = workloads(1)
    copy_definition(root, "rmsnorm_h128_alone", w)
    add_solution(root, "alone_torch", "honest/rmsnorm",
                 author="alice", definition="rmsnorm_h128_alone")
    add_solution(root, "zed_torch", "honest/rmsnorm",
                 author="zed")
    ds = load(root)
    order = [(p.solution.author, p.definition.name, p.workload.uuid) for p in make_plan(ds, "cpu").pairs]
    assert order == [("alice", "rmsnorm_h128_alone", "wl-0000"),
                     ("baseline", "rmsnorm_h128", "wl-0000"), ("baseline", "rmsnorm_h128", "wl-0001"),
                     ("zed", "rmsnorm_h128", "wl-0000"), ("zed", "rmsnorm_h128", "wl-0001")]
    first = make_plan(ds, "cpu", breadth_first=True).pairs
    rep = first[0].workload.uuid
    assert [(p.solution.author, p.definition.name, p.workload.uuid) for p in first] == [
        ("baseline", "rmsnorm_h128", rep), ("zed", "rmsnorm_h128", rep), ("alice", "rmsnorm_h128_alone", "wl-0000"),
        *[(a, "rmsnorm_h128", u) for a in ("baseline", "zed") for u in ("wl-0000", "wl-0001") if u != rep]]


def test_shards_cover_every_pair_exactly_once(tmp_path):
    root = write_dataset(tmp_path, traces=[], workloads=workloads(30))
    for i in range(3):
        add_solution(root, f"s{i}", "honest/rmsnorm")
    ds = load(root)
    everything = {p.key for p in make_plan(ds, "cpu").pairs}
    assert len(everything) == 4 * 30
    shards = [{p.key for p in make_plan(ds, "cpu", shard=(k, 4)).pairs} for k in range(1, 5)]
    assert set().union(*shards) == everything and sum(map(len, shards)) == len(everything)
    assert all(shards), "every shard gets work"
    assert shard_of("a/b", 7) == shard_of("a/b", 7)


@pytest.mark.parametrize("text", ["3/2", "0/4", "x", "1/0"])
def test_bad_shard_is_a_clear_error(text):
    with pytest.raises(KernelTraceError, match="--shard"):
        parse_shard(text)


def test_cpu_cost_limit_skips_and_reports(tmp_path):
    big = workloads(2)
    big[1]["workload"]["axes"]["batch_size"] = 100_000  # 2 * 100k * 128 * 2 bytes = 49 MiB
    root = write_dataset(tmp_path, traces=[], workloads=big)
    plan = make_plan(load(root), "cpu", max_bytes=16 * 2**20)
    assert [p.workload.uuid for p in plan.pairs] == ["wl-0000"]
    assert len(plan.skipped) == 1 and "MiB per call > limit 16 MiB" in plan.skipped[0][1]


def test_gpu_only_solutions_are_not_run_on_the_cpu(tmp_path):
    root = write_dataset(tmp_path, traces=[])
    sol = json.loads((root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json").read_text())
    sol["spec"]["target_hardware"] = ["H100_SXM"]
    dump(root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json", sol)
    plan = make_plan(load(root), "cpu")
    assert not plan.pairs and plan.skipped == [("rmsnorm_h128_torch", "targets H100_SXM, not cpu")]


def test_a_gpu_run_takes_what_targets_its_hardware_or_its_compute_capability(tmp_path):
    """H100 code runs on an H200 (same compute capability, 9.0); a B200-only solution is not run on an H100,
    nor one whose target names no spec; a device nothing describes takes any GPU target; validate warns
    about a target that names no spec, and not about one named by a spec's alias."""
    root = write_dataset(tmp_path, traces=[])
    for name in ("H100_SXM", "H200", "B200"):
        (root / f"hardware/{name}.json").write_bytes((DATASET / f"hardware/{name}.json").read_bytes())
    targets = {"hopper": ["cpu", "H100_SXM"], "blackwell": ["cpu", "B200"], "by_alias": ["NVIDIA H200"],
               "elsewhere": ["RTX_9090"]}
    for name, target in targets.items():
        path = add_solution(root, name, "honest/rmsnorm")
        sol = json.loads(path.read_text())
        sol["spec"]["target_hardware"] = target
        dump(path, sol)
    ds = load(root)

    def taken(**device) -> set[str]:
        plan = make_plan(ds, "cuda", solutions=targets, **device)
        assert {s for s, _ in plan.skipped}.isdisjoint(p.solution.name for p in plan.pairs)
        return {p.solution.name for p in plan.pairs}

    assert taken(hardware="H200", capability="9.0") == {"hopper", "by_alias"}
    assert taken(hardware="H100_SXM", capability="9.0") == {"hopper", "by_alias"}
    assert taken(hardware="B200", capability="10.0") == {"blackwell"}
    assert taken(hardware="RTX_9090", capability="12.0") == {"elsewhere"}
    assert taken() == set(targets)
    why = dict(make_plan(ds, "cuda", solutions=["blackwell"], hardware="H100_SXM", capability="9.0").skipped)
    assert why == {"blackwell": "targets cpu, B200, not H100_SXM (compute capability 9.0); a solution that runs "
                                "there lists it in spec.target_hardware"}
    warned = [d for d in validate_path(root) if "names no hardware spec" in d.message]
    assert [(d.file.rsplit("/", 1)[-1], d.pointer) for d in warned] == [("elsewhere.json", "/spec/target_hardware/0")]


def test_cpu_flop_limit_uses_the_einsum_cascade(tmp_path):
    from generator.bench.trusted.plan import call_flops

    root = write_dataset(tmp_path, traces=[], workloads=workloads(3))  # batch 1, 4, 7
    ds = load(root)
    d = ds.definitions["rmsnorm_h128"]
    flops = [call_flops(ds, d, w, {}) for w in sorted(ds.workloads, key=lambda w: w.uuid)]
    assert flops[0] < flops[1] < flops[2], flops  # counted from the cascade, growing with batch_size
    plan = make_plan(ds, "cpu", max_flops=flops[1])
    assert [p.workload.uuid for p in plan.pairs] == ["wl-0000", "wl-0001"]
    assert "GFLOP per call > limit" in plan.skipped[0][1]


def test_cpu_sampler_limit_skips_large_batches_saying_why():
    """Samplers' references draw row by row, a cost the Einsum FLOP limit does not see: on the CPU a sampling
    workload runs up to the probabilities limit (batch 8 of the bundled vocabularies), the rest are skipped
    with the reason; other definitions are untouched."""
    from generator.bench.trusted.plan import DEFAULT_CPU_MAX_SAMPLER_ELEMENTS

    ds = load(DATASET)
    names = ["sampling_from_probs_v201088", "top_k_top_p_sampling_from_probs_v262208", "rmsnorm_h4096"]
    every = make_plan(ds, "cpu", definitions=names)
    plan = make_plan(ds, "cpu", definitions=names, max_sampler_elements=DEFAULT_CPU_MAX_SAMPLER_ELEMENTS)
    kept = {(p.definition.name, p.workload.axes.get("batch_size")) for p in plan.pairs}
    assert {b for d, b in kept if d != "rmsnorm_h4096"} == {1, 8}
    assert {p.key for p in every.pairs if p.definition.name == "rmsnorm_h4096"} == \
        {p.key for p in plan.pairs if p.definition.name == "rmsnorm_h4096"}
    assert any("probabilities per call > limit" in why and "'batch_size': 64" in what for what, why in plan.skipped)


def test_bad_selection_and_device_are_clear_errors(tmp_path, capsys):
    from generator import cli

    root = write_dataset(tmp_path, traces=[])
    with pytest.raises(KernelTraceError, match="--definitions: no definition named 'rmsnorm_h999'"):
        make_plan(load(root), "cpu", definitions=["rmsnorm_h999"])
    assert cli.main(["bench", "--dataset", str(root), "--device", "tpu", "--quiet"]) == 2
    assert "--device 'tpu': use cpu or cuda" in capsys.readouterr().err


def test_a_run_limited_to_some_definitions_checks_those_and_still_refuses_a_broken_one(tmp_path):
    """rejected_definitions checks only the definitions a run can bench (all 653 references took 4 s of a
    one-definition run, all 4,270 workloads' inputs 1.4 s); a named definition's error, or its workload's, is still
    found, one not named is not looked at."""
    from generator.bench.trusted.plan import rejected_definitions
    from generator.bench.trusted.run import _named

    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    [w] = workloads(1)
    w["workload"]["uuid"] = "wl-broken"
    copy_definition(root, "rmsnorm_h128_broken", w)
    broken = root / "definitions/norm/rmsnorm_h128_broken.json"
    d = json.loads(broken.read_text())
    dump(broken, {**d, "reference": d["reference"].replace("def run(", "def not_run(")})
    [bad] = workloads(1)
    bad["workload"]["uuid"], bad["workload"]["axes"] = "wl-bad-axis", {"batch_size": 2, "tokens": 3}
    copy_definition(root, "rmsnorm_h128_bad_workload", bad)
    ds = load(root)
    assert "'tokens' is not an axis" in rejected_definitions(ds)["rmsnorm_h128_bad_workload"]
    assert "'tokens' is not an axis" in rejected_definitions(ds, {"rmsnorm_h128_bad_workload"})["rmsnorm_h128_bad_workload"]
    assert "rmsnorm_h128_bad_workload" not in rejected_definitions(ds, {"rmsnorm_h128_broken"})
    assert "no top-level function 'run'" in rejected_definitions(ds)["rmsnorm_h128_broken"]
    assert "rmsnorm_h128_broken" in rejected_definitions(ds, _named(ds, ["rmsnorm_h128_broken"], []))
    assert rejected_definitions(ds, _named(ds, [], ["rmsnorm_h128_torch"])) == {}
    assert _named(ds, [], []) is None
