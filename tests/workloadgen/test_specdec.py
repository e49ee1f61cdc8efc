"""Speculative decoding's workloads (generator/workloadgen/specdec.py): the verify steps' page tables hold every
sequence's verify tokens behind its context, and the EAGLE draft trees are trees as SGLang's drafter selects them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from generator.workloadgen import core
from generator.workloadgen.specdec import eagle_tree, tree_mask, zipf_norm

DATASET = Path(__file__).resolve().parents[2] / "dataset"
VERIFY = ("gqa/gqa_paged_verify_causal_h32_kv8_d128_ps16", "gqa/gqa_paged_verify_tree_h32_kv8_d128_ps1")


def _workloads(name: str) -> list[dict]:
    lines = (DATASET / "workloads" / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line)["workload"] for line in lines if line.strip()]


def _blob(w: dict, name: str) -> np.ndarray:
    spec = w["inputs"][name]
    return load_file(str(DATASET / spec["path"]))[spec["tensor_key"]]


# Every verify step's definition (the other models' chain verify and MLA verify too, tests/reference_cases/
# specdec_variants.py): type/name.
ALL_VERIFY = sorted(f"{p.parent.name}/{p.stem}" for p in (DATASET / "definitions").glob("*/*_verify_*.json"))


def test_every_verify_sequence_holds_its_verify_tokens():
    assert set(VERIFY) < set(ALL_VERIFY)
    for name in ALL_VERIFY:
        page_size = json.loads((DATASET / "definitions" / f"{name}.json").read_text())["axes"]["page_size"]["value"]
        for w in _workloads(name):
            indptr, last = _blob(w, "kv_indptr").astype(np.int64), _blob(w, "kv_last_page_len").astype(np.int64)
            kv_len = (np.diff(indptr) - 1) * page_size + last
            assert (kv_len >= w["axes"]["num_verify_tokens"] + 16).all(), f"{name} {w['uuid']}: a context under 16"


def test_draft_trees_are_trees_with_parents_first():
    masks = [_blob(w, "tree_mask") for w in _workloads(VERIFY[1])]
    assert any(not np.array_equal(m[0], np.tril(np.ones_like(m[0]))) for m in masks), "no branching tree"
    assert any(np.array_equal(m[0], np.tril(np.ones_like(m[0]))) for m in masks), "no chain (top-1 drafting)"
    for m in masks:
        n = m.shape[-1]
        for tree in m:
            assert tree.diagonal().all() and tree[:, 0].all() and not np.triu(tree, 1).any()
            for i in range(1, n):  # token i sees its parent's row and itself: parent = its latest ancestor
                parent = max(j for j in range(i) if tree[i, j])
                assert np.array_equal(tree[i, :i], tree[parent, :i]), "a row is not its parent's row plus itself"


def test_eagle_tree_keeps_the_best_candidates_and_a_chain_at_top_1():
    g = core.rng(3)
    parents = eagle_tree(g, 8, steps=5, topk=4, vocab=1000)
    assert parents[0] == -1 and all(0 <= p < i for i, p in enumerate(parents) if i)
    assert max(np.bincount(parents[1:])) <= 4  # at most top-k children per node
    chain = eagle_tree(core.rng(0), 4, steps=3, topk=1, vocab=1000)
    assert list(chain) == [-1, 0, 1, 2] and np.array_equal(tree_mask(chain), np.tril(np.ones((4, 4), dtype=bool)))


def test_zipf_norm_is_the_sum_over_the_vocabulary():
    for s in (1.4, 1.9, 2.5):
        exact = np.sum(np.arange(1, 128257, dtype=np.float64) ** -s)
        assert abs(zipf_norm(s, 128256) - exact) < 1e-9 * exact
