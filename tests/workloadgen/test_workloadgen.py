"""The structured workload generator: coherent index inputs, reproducible bytes, committed files current."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from generator.cli import main as cli_main
from generator.model.errors import KernelTraceError
from generator.workloadgen import core
from generator.workloadgen.recipe import read, recipe_specs
from generator.workloadgen.spec import Spec
from generator.workloadgen.write import prune, render, stale

DATASET = Path(__file__).resolve().parents[2] / "dataset"


def test_paged_kv_is_a_coherent_layout():
    g = core.rng(7)
    lens = core.seq_lens(g, 33, 700, high=4096)
    layout = core.paged_kv(g, lens, 16)
    indptr, indices, last = layout["kv_indptr"], layout["kv_indices"], layout["kv_last_page_len"]
    assert indptr[0] == 0 and (np.diff(indptr) >= 1).all() and indptr[-1] == len(indices)
    assert len(set(indices.tolist())) == len(indices) and indices.max() < layout["num_pages"]
    assert ((last >= 1) & (last <= 16)).all()
    # Tokens held = full pages + last page, per sequence.
    assert ((np.diff(indptr) - 1) * 16 + last == lens).all()
    # A fragmented allocator: pages are not handed out in order.
    assert not (np.diff(indices) == 1).all()


def test_paged_kv_rejects_empty_sequences():
    with pytest.raises(ValueError, match="at least one token"):
        core.paged_kv(core.rng(0), [3, 0], 16)


def test_generators_are_reproducible_from_the_seed():
    a = core.paged_kv(core.rng(3), core.seq_lens(core.rng(3), 8, 100), 1)
    b = core.paged_kv(core.rng(3), core.seq_lens(core.rng(3), 8, 100), 1)
    assert all(np.array_equal(a[k], b[k]) for k in ("kv_indptr", "kv_indices", "kv_last_page_len"))
    c = core.paged_kv(core.rng(4), core.seq_lens(core.rng(4), 8, 100), 1)
    assert not np.array_equal(a["kv_indices"], c["kv_indices"])


def test_skewed_counts_sum_and_skew():
    counts = core.skewed_counts(core.rng(1), 8 * 4096, 128, alpha=1.1, empty_fraction=0.1)
    assert counts.sum() == 8 * 4096 and len(counts) == 128
    assert (counts == 0).sum() >= 12
    top = np.sort(counts)[::-1]
    assert top[:8].sum() > 0.3 * counts.sum()  # a few hot experts take a large share


def test_render_writes_blobs_and_lines(tmp_path):
    (tmp_path / "definitions" / "gqa").mkdir(parents=True)
    definition = {"name": "toy", "type": "gqa", "axes": {"n": {"type": "var"}, "len_indptr": {"type": "var"}},
                  "inputs": {"x": {"shape": ["n"], "dtype": "bfloat16"},
                             "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
                             "scale": {"shape": [], "dtype": "float32"}},
                  "outputs": {"y": {"shape": ["n"], "dtype": "bfloat16"}},
                  "reference": "def run(x, kv_indptr, scale):\n    return x\n"}
    (tmp_path / "definitions" / "gqa" / "toy.json").write_text(json.dumps(definition))
    spec = Spec("toy", "k1", {"n": 4, "len_indptr": 3},
                {"scale": 0.5, "x": "random", "kv_indptr": np.array([0, 2, 5])}, seed=9, description="toy")
    files = render(tmp_path, [spec])
    line = json.loads(files[tmp_path / "workloads/gqa/toy.jsonl"])
    assert list(line["workload"]["inputs"]) == ["x", "kv_indptr", "scale"]  # the definition's order
    blob = tmp_path / line["workload"]["inputs"]["kv_indptr"]["path"]
    assert stale(tmp_path, files) == [f"{blob.relative_to(tmp_path)}: missing", "workloads/gqa/toy.jsonl: missing"]
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert stale(tmp_path, files) == []
    loaded = load_file(str(blob))["kv_indptr"]
    assert loaded.dtype == np.int32 and loaded.tolist() == [0, 2, 5]
    assert render(tmp_path, [spec]) == files  # same bytes every time
    # stage and num_tokens are workload fields as the recipe states them (never read from prose)
    stated = Spec("toy", "k2", {"n": 4, "len_indptr": 3}, {"scale": 0.5, "x": "random", "kv_indptr": "random"},
                  description="a prefill chunk, by its words", stage="decode", num_tokens=7)
    line = json.loads(render(tmp_path, [stated])[tmp_path / "workloads/gqa/toy.jsonl"])
    assert (line["workload"]["stage"], line["workload"]["num_tokens"]) == ("decode", 7)


def test_identical_blobs_are_written_once_and_dropped_ones_removed(tmp_path, capsys):
    # The same page table under two definitions (a head-configuration variant, say) is one file: the later
    # workload names the earlier one's blob. A blob nothing names any more is --check's problem, and
    # `kerneltrace workloads` removes it.
    (tmp_path / "definitions" / "gqa").mkdir(parents=True)
    for name in ("toy_a", "toy_b"):
        definition = {"name": name, "type": "gqa", "axes": {"len_indptr": {"type": "var"}},
                      "inputs": {"kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"}},
                      "outputs": {"y": {"shape": ["len_indptr"], "dtype": "int32"}},
                      "reference": "def run(kv_indptr):\n    return kv_indptr\n"}
        (tmp_path / "definitions" / "gqa" / f"{name}.json").write_text(json.dumps(definition))
    table = np.array([0, 2, 5])
    specs = [Spec(n, "k", {"len_indptr": 3}, {"kv_indptr": table}, seed=1) for n in ("toy_a", "toy_b")]
    specs.append(Spec("toy_b", "other", {"len_indptr": 3}, {"kv_indptr": table + 1}, seed=1))
    files = render(tmp_path, specs)
    paths = [[json.loads(row)["workload"]["inputs"]["kv_indptr"]["path"] for row in files[tmp_path / f].splitlines()]
             for f in ("workloads/gqa/toy_a.jsonl", "workloads/gqa/toy_b.jsonl")]
    assert paths[1][0] == paths[0][0] and paths[1][1] != paths[0][0]
    assert sorted(p.name for p in files if p.suffix == ".safetensors") == sorted(
        Path(p).name for p in (paths[0][0], paths[1][1]))
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    copy = tmp_path / Path(paths[0][0]).parent.parent / "toy_b" / "copy.safetensors"
    copy.write_bytes((tmp_path / paths[0][0]).read_bytes())
    assert stale(tmp_path, files) == [f"{copy.relative_to(tmp_path)}: no recipe generates it"]
    assert prune(tmp_path, files) == [copy] and not copy.exists() and stale(tmp_path, files) == []
    lone = tmp_path / "blob/workloads/gqa/toy_a/lone.safetensors"
    lone.write_bytes(b"")
    (tmp_path / paths[0][0]).unlink()  # as if toy_a's workload had been dropped: its folder goes with it
    assert prune(tmp_path, {p: d for p, d in files.items() if p.name != Path(paths[0][0]).name}) == [lone]
    assert not lone.parent.exists()


def test_committed_recipe_workloads_are_current(capsys):
    # Every blob in the dataset is the output of the documented generator with its recorded seed.
    assert cli_main(["workloads", "--dataset", str(DATASET), "--check"]) == 0, capsys.readouterr().err


def test_every_recipe_is_data():
    # An edit to one model's scenarios must not change another model's workloads: shared sets and family
    # builders live in the engine, and every model's recipe is a file of dataset/recipes/. A Python module
    # yielding Specs (a `workloads()` function in generator/workloadgen/) would not be run: none may creep back.
    import ast

    for path in sorted((DATASET.parent / "generator" / "workloadgen").glob("*.py")):
        tree = ast.parse(path.read_text())
        assert not any(isinstance(n, ast.FunctionDef) and n.name == "workloads" for n in tree.body), path.name


def _recipe(root: Path, data: dict) -> Path:
    import yaml

    path = root / "recipes" / "toy-model.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_recipe_file_states_stage_and_tokens_and_names_its_mistakes(tmp_path):
    data = {"model": "Toy", "constants": {"scale": 0.5},
            "scenarios": {"steps": [{"tokens": 3, "stage": "prefill", "what": "a chunk"}], "prefill": "PREFILL_STEPS"},
            "workloads": [{"family": "tokens", "definition": "toy", "scenarios": "steps", "key": "t{m}",
                           "axes": {"n": "{m}"}, "inputs": {"x": "random", "s": "$scale"},
                           "description": "{what}: {m} tokens ({model})"}]}
    [spec] = read(_recipe(tmp_path, data)).specs()
    assert (spec.key, spec.axes, spec.inputs["s"], spec.description) == ("t3", {"n": 3}, 0.5, "a chunk: 3 tokens (Toy)")
    assert (spec.stage, spec.num_tokens) == ("prefill", 3)
    for bad, said in (({"family": "nope"}, "workloads[0].family: one of tokens, "),
                      ({"scenarios": "missing"}, "no scenario list named 'missing'"),
                      ({"inputs": {"x": "$nope"}}, "no constant named 'nope'"),
                      ({"descripton": "typo"}, "workloads[0].descripton: not a key of tokens")):
        path = _recipe(tmp_path, {**data, "workloads": [{**data["workloads"][0], **bad}]})
        with pytest.raises(KernelTraceError, match=re.escape(said)) as caught:
            recipe_specs(tmp_path)
        assert str(caught.value).startswith(str(path))  # the file to fix
    _recipe(tmp_path, {**data, "scenarios": {"steps": "NO_SUCH_SET"}})
    with pytest.raises(KernelTraceError, match="no set named 'NO_SUCH_SET'"):
        recipe_specs(tmp_path)


# --------------------------------------------------------------------------------------------------
# Every workload in the dataset: index inputs are coherent with each other and with the axes.
# --------------------------------------------------------------------------------------------------

def _workloads():
    for path in sorted((DATASET / "workloads").glob("*/*.jsonl")):
        d = json.loads((DATASET / "definitions" / path.parent.name / f"{path.stem}.json").read_text())
        for line in path.read_text().splitlines():
            if line.strip():
                w = json.loads(line)["workload"]
                yield pytest.param(d, w, id=f"{d['name']}:{w['uuid'][:8]}")


@pytest.mark.parametrize("d,w", list(_workloads()))
def test_index_inputs_are_coherent(d, w):
    axes = {n: a["value"] for n, a in d["axes"].items() if a["type"] == "const"} | w["axes"]
    blobs = {}
    for name, spec in w["inputs"].items():
        if spec["type"] == "safetensors":
            blobs[name] = load_file(str(DATASET / spec["path"]))[spec["tensor_key"]]
    for name, value in blobs.items():  # shapes as the definition says
        assert list(value.shape) == [axes[a] for a in d["inputs"][name]["shape"]], name
    if "kv_indptr" in blobs:
        indptr = blobs["kv_indptr"].astype(np.int64)
        assert indptr[0] == 0 and (np.diff(indptr) >= 0).all(), "kv_indptr must start at 0 and not decrease"
        if "kv_indices" in blobs:
            indices = blobs["kv_indices"].astype(np.int64)
            assert indptr[-1] == len(indices), "kv_indptr[-1] must equal the number of kv_indices"
            if "num_pages" in axes:
                assert len(np.unique(indices)) == len(indices), "a page is used twice"
                assert indices.min() >= 0 and indices.max() < axes["num_pages"], "page id out of the pool"
        if "kv_last_page_len" in blobs and "page_size" in axes:
            last = blobs["kv_last_page_len"]
            assert ((last >= 1) & (last <= axes["page_size"])).all(), "kv_last_page_len outside 1..page_size"
            assert (np.diff(indptr) >= 1).all(), "a sequence with a last page has at least one page"
    if "qo_indptr" in blobs:
        qo = blobs["qo_indptr"].astype(np.int64)
        assert qo[0] == 0 and (np.diff(qo) >= 0).all(), "qo_indptr must start at 0 and not decrease"
        token_axes = [a for a in ("total_q", "num_qo_tokens", "num_tokens", "total_tokens") if a in axes]
        if token_axes:
            assert qo[-1] == axes[token_axes[0]], f"qo_indptr[-1] must equal {token_axes[0]}"
    if "positions" in blobs and "max_position" in axes:
        pos = blobs["positions"]
        assert pos.min() >= 0 and pos.max() < axes["max_position"], "positions outside the cos/sin cache"


def test_dataset_stays_small_enough_to_clone():
    # Issue bar: the whole dataset under 50 MB (blobs hold only index inputs; big tensors are drawn
    # from seeds by the bench).
    total = sum(p.stat().st_size for p in DATASET.rglob("*") if p.is_file())
    assert total < 50 * 2**20, f"dataset/ is {total / 2**20:.1f} MiB"


# Memory: every workload fits the hardware the calling records that call its definition serve it on
# (generator/validate/memory.py, part of `kerneltrace validate`).

def _served(tmp_path: Path, monkeypatch, situations, weights_gb=None) -> Path:
    """A dataset with Llama-3.1-8B's calling record (one H100, 0.9 of 80 GB), its ps16 paged decode
    definition and the decode workloads the Llama recipe writes for `situations`."""
    import shutil

    from generator.workloadgen.write import write

    root = tmp_path / "ds"
    for rel in ("models/llama-3.1-8b.json", "hardware/H100_SXM.json",
                "definitions/gqa/gqa_paged_decode_h32_kv8_d128_ps16.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATASET / rel, root / rel)
    if weights_gb is not None:
        record = json.loads((root / "models/llama-3.1-8b.json").read_text())
        record["serving"]["weights_gb_per_gpu"] = weights_gb
        (root / "models/llama-3.1-8b.json").write_text(json.dumps(record, indent=2))
    _recipe(root, {"model": "Llama-3.1-8B TP1", "scenarios": {"decode": [
        {"batch": s.batch, "context": s.median, "sigma": s.sigma, "what": s.what} for s in situations]},
        "workloads": [{"family": "paged_decode", "definition": "gqa_paged_decode_h32_kv8_d128_ps16",
                       "scenarios": "decode", "page_size": 16, "sm_scale": 0.08838834764831843}]})
    list(write(root, render(root, recipe_specs(root))))
    return root


def _memory_errors(root: Path) -> list:
    from generator.load import load
    from generator.validate import validate

    return [d for d in validate(load(root)) if d.is_error and "does not fit" in d.message]


def test_a_decode_batch_too_big_for_its_gpu_fails_validate(tmp_path, monkeypatch):
    from generator.workloadgen.scenarios import Decode

    # 32 requests around 16k context: the Llama workload the memory check caught (89 GB on an 80 GB H100).
    # Third, so that it has seed 2, as it had in the recipe.
    root = _served(tmp_path, monkeypatch, [Decode(1, 32768, 0.0, "fits"), Decode(20, 16384, 0.5, "fits"),
                                           Decode(32, 16384, 0.5, "too big")])
    [problem] = _memory_errors(root)
    assert problem.file == "workloads/gqa/gqa_paged_decode_h32_kv8_d128_ps16.jsonl" and problem.line == 3
    assert "H100_SXM" in problem.message and "models/llama-3.1-8b.json" in problem.message
    assert "557,088 KV tokens x 131,072 bytes = 73.0 GB" in problem.message  # pages in use x page size
    assert "16.06 GB of weights = 89.1 GB per GPU" in problem.message and "0.9 x 80 GB = 72.0 GB" in problem.message
    assert "under 426,788 tokens" in problem.hint and "generator/workloadgen/" in problem.hint
    # The same workloads on a record whose weights leave no room: the record itself is the error.
    root = _served(tmp_path / "heavy", monkeypatch, [Decode(1, 1024, 0.0, "tiny")], weights_gb=75.0)
    from generator.load import load
    from generator.validate import validate

    [weights] = [d for d in validate(load(root)) if d.is_error and "do not fit" in d.message]
    assert weights.file == "models/llama-3.1-8b.json" and weights.pointer == "/serving/weights_gb_per_gpu"


def test_kv_tokens_reads_pages_in_use_ragged_keys_or_the_pool():
    from generator.validate.memory import kv_tokens

    assert kv_tokens({"page_size": 16}, {"num_kv_indices": 10, "num_pages": 99}) == 160
    assert kv_tokens({}, {"total_q": 7, "total_kv": 300}) == 300
    assert kv_tokens({"page_size": 64}, {"num_pages": 5, "num_tokens": 3}) == 320
    assert kv_tokens({"hidden_size": 4096}, {"batch_size": 8}) is None


def test_the_llama_qwen_and_seed_recipes_fit_their_hardware():
    from generator.load import load
    from generator.validate.memory import check_memory
    mine = {s.definition for model in ("llama-3.1-8b", "qwen3-30b-a3b", "seed-000")
            for s in read(DATASET / "recipes" / f"{model}.yaml").specs()}
    problems = [d.format_human() for d in check_memory(load(DATASET)) if Path(d.file).stem in mine]
    assert not problems, "\n".join(problems)


def test_token_ids_are_numpys_weighted_choice_and_leave_the_generator_where_it_left_it():
    """token_ids takes numpy's steps for g.choice(vocab, size=n, p=...) with its cdf made once per vocabulary: the
    ids, and the generator's state after (every later draw of a recipe), must be those of the call itself."""
    from generator.workloadgen.families import token_ids

    for seed, n, vocab in ((0, 1, 7), (1, 33, 32000), (2, 300, 151936), (3, 4096, 262208)):
        g, h = core.rng(seed), core.rng(seed)
        weights = np.arange(1, vocab + 1, dtype=np.float64) ** -1.1
        ranks = h.choice(vocab, size=n, p=weights / weights.sum())
        expected = h.permutation(vocab)[ranks]
        got = token_ids(g, n, vocab)
        assert np.array_equal(got, expected) and got.dtype == expected.dtype, (seed, n, vocab)
        assert g.random() == h.random()


@pytest.mark.parametrize("keys", ["distinct", "ties", "tied_top", "minus_inf", "small_ints"])
def test_top_k_rows_is_a_stable_sorts_first_k(keys):
    g = np.random.default_rng(5)
    x = g.standard_normal((200, 96))
    # tied_top: equal keys among the k picked (index order decides), none at the k-th place (no whole-row sort)
    x = {"distinct": x, "ties": np.round(x, 1), "small_ints": g.integers(0, 4, x.shape).astype(np.float32),
         "tied_top": np.where(np.arange(96) % 40 == 1, 9.0, x),
         "minus_inf": np.where(np.arange(96) % 3 == 0, -np.inf, x)}[keys]
    for k in (1, 8, 33, 95, 96):
        assert np.array_equal(core.top_k_rows(x, k), np.argsort(-x, axis=1, kind="stable")[:, :k]), k
