"""Samplers in a bench run: their draws are compared as distributions on every batch, timed ones included, and
every timed call draws from an input set of its own."""

from __future__ import annotations

import json

import pytest

from generator.bench import run_bench

from dataset_factory import dump, dump_lines, write_dataset
from planted import DATASET, FAST, add_solution, workloads

SAMPLER = "top_k_sampling_v512"
SAMPLER_WORK_MS = 2
SAMPLER_CHEATS = {
    # name: (its file under cheats/, allowed statuses)
    "sampler_honest": ("honest/top_k", ("PASSED",)),
    # Honest on the first batch (the draws it knows are compared), then greedy, then token 0.
    "sampler_greedy_after_first_batch": ("sampler_greedy_after_first_batch", ("INCORRECT_NUMERICAL",)),
    "sampler_token_zero_after_first_batch": ("sampler_token_zero_after_first_batch", ("INCORRECT_NUMERICAL",)),
    "sampler_without_top_k": ("sampler_without_top_k", ("INCORRECT_NUMERICAL",)),
    # Tables (a CDF) cost SAMPLER_WORK_MS to build: built once per input set (a timed batch was many calls on one set:
    # 17x to 290x) against its honest twin, which builds them every call. Both draw right; judged by their latency.
    "sampler_tables_once": ("sampler_tables_once", ("PASSED",)),
    "sampler_tables_every_call": ("honest/sampler_tables_every_call", ("PASSED",)),
    # Draws of another shape: a failed pair, never a crash of the comparison.
    "sampler_other_shape": ("sampler_other_shape", ("INCORRECT_SHAPE",)),
}


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    from generator.bench.trusted.check import sampling_draws

    root = write_dataset(tmp_path_factory.mktemp("sampler"), traces=[], workloads=workloads(1))
    d = json.loads((DATASET / "definitions/sampling/top_k_sampling_from_probs_v128256.json").read_text())
    d["name"] = SAMPLER
    d["axes"]["vocab_size"]["value"] = 512
    d["tags"] = [t for t in d.get("tags", []) if not t.startswith("model:")]
    dump(root / f"definitions/sampling/{SAMPLER}.json", d)
    dump_lines(root / f"workloads/sampling/{SAMPLER}.jsonl", [{
        "definition": SAMPLER, "workload": {"uuid": "wl-sample", "axes": {"batch_size": 4}, "seed": 5,
                                            "inputs": {"probs": {"type": "random"}, "top_k": {"type": "random"}}},
        "solution": None, "evaluation": None}])
    (root / "einsums/sampling").mkdir(parents=True, exist_ok=True)
    (root / f"einsums/sampling/{SAMPLER}.yaml").write_text(
        (DATASET / "einsums/sampling/top_k_sampling_from_probs_v128256.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    for name, (file, _) in SAMPLER_CHEATS.items():
        # One author, one worker, in turn: none of them patches anything or leaves a thread (a counter or a table of
        # its own module's, dropped when the next loads), so each is judged as it would be alone.
        add_solution(root, name, file, author="cheat-sampler", definition=SAMPLER, op_type="sampling",
                     first=sampling_draws(4), work_s=SAMPLER_WORK_MS / 1e3)
    return run_bench(root, device="cpu", definitions=[SAMPLER], timeout_s=60, timing=FAST, progress=False)


@pytest.mark.parametrize("name", sorted(SAMPLER_CHEATS))
def test_samplers_are_checked_on_every_batch(sampled, name):
    [o] = [o for o in sampled.outcomes if o.pair.solution.name == name]
    assert o.status in SAMPLER_CHEATS[name][1], (name, o.status, o.log[-500:])


def test_a_sampler_cannot_build_its_tables_once_per_batch(sampled):
    """Every timed call has an input set of its own (probs and top_k drawn per call), so tables built once per input
    set are built every call: the cheat's median call pays its SAMPLER_WORK_MS of sleep, as its honest twin's does (a
    draw over 4 x 512 probabilities takes a small part of that, so a cheat that built once per batch would report
    well under it). Compared with the work, not with the twin: on a loaded host the two ran 0.72x apart."""
    got = {o.pair.solution.name: o for o in sampled.outcomes}
    twin, once = (got[n].record["evaluation"]["performance"]["latency_ms"]
                  for n in ("sampler_tables_every_call", "sampler_tables_once"))
    assert twin >= SAMPLER_WORK_MS and once >= SAMPLER_WORK_MS, (twin, once, got["sampler_tables_once"].log[-400:])
