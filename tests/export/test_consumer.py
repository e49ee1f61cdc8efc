"""The dataset consumer's path, end to end, against the Hub export of the bundled dataset.

With nothing but the exported folder: load every config with the real `datasets.load_dataset`
offline; make every workload's inputs with the exported `kerneltrace_inputs.py` (imported as a
lone file, as a consumer who copied it would) and get bit-identical tensors to the bench's
`generator.bench.shared.inputs.make_inputs` called as the bench calls it; run every reference from the
`reference` column; join traces to solutions and workloads; and check what the card's snippets
print against the site's own numbers (leaderboards, the Models page's per-step estimate).

Memory bound (the suite runs in 4 GB): random tensors of more than MAX_ELEMENTS elements are not
made (a few weight matrices: the LM heads, Qwen's expert weights, the FP8 MoE's). Every input has
its own generator, so leaving one out does not change the others: the check on the rest is the
same. References run on the smallest workload of each definition; the definitions whose smallest
workload is over the bound are listed in TOO_LARGE_FOR_CI and run by tests/dataset/test_references.py at
small sizes of their var axes instead.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from generator.analyse.estimates import step_estimates
from generator.analyse.leaderboard import all_leaderboards
from generator.bench.shared import inputs as bench_inputs
from generator.export import export_dataset
from generator.load import DEFAULT_DATASET, load

from card_run import output_of, run_card_blocks

MAX_ELEMENTS = 1 << 18  # per random input compared (half of them; the rest are KV caches and weights)
SECOND_SET_ELEMENTS = 1 << 14  # input set 1 (a timing set) is compared for inputs up to this size
# Definitions whose smallest workload needs more than REFERENCE_TOTAL_ELEMENTS random elements: their
# reference is not run here (tests/dataset/test_references.py checks them at small sizes of their var axes).
TOO_LARGE_FOR_CI = {
    "dsa_indexer_logits_ragged_prefill_h64_d128", "embedding_scaled_v131104_h5376", "embedding_v10240_h7168",
    "embedding_v128256_h4096", "embedding_v131072_h4480", "embedding_v151936_h2048", "embedding_v16032_h8192",
    "embedding_v16160_h7168", "embedding_v201088_h2880", "embedding_v32064_h8192", "embedding_v37984_h2048",
    "embedding_v8080_h7168", "gemm_bias_n5120_k2880", "gemm_fp16_n4096_k4096", "gemm_fp8_block128_n2112_k7168",
    "gemm_fp8_block128_n2304_k7168", "gemm_fp8_block128_n4608_k7168", "gemm_fp8_block128_n7168_k2048",
    "gemm_fp8_block128_n7168_k2304", "gemm_fp8_block128_n8192_k1536", "gemm_n10240_k7168", "gemm_n128256_k4096",
    "gemm_n131072_k4480", "gemm_n131104_k5376", "gemm_n14336_k8192", "gemm_n151936_k2048", "gemm_n15680_k4480",
    "gemm_n16032_k8192", "gemm_n16160_k7168", "gemm_n201088_k2880", "gemm_n21504_k5376", "gemm_n22656_k4480",
    "gemm_n2560_k8192", "gemm_n28672_k4096", "gemm_n32064_k8192", "gemm_n37984_k2048", "gemm_n4096_k14336",
    "gemm_n4096_k4096", "gemm_n4096_k5376", "gemm_n4480_k10240", "gemm_n4480_k15680", "gemm_n4480_k5120",
    "gemm_n5376_k10752", "gemm_n6144_k4096", "gemm_n7168_k4480", "gemm_n7168_k8192", "gemm_n8080_k7168",
    "gemm_n8192_k2048", "gemm_n8192_k3584", "gemm_n8192_k7168", "gqa_paged_decode_h16_kv2_d128_ps16",
    "gqa_paged_decode_h16_kv8_d128_ps16", "gqa_paged_decode_h32_kv4_d128_ps16", "gqa_paged_decode_h32_kv8_d128_ps1",
    "gqa_paged_decode_h32_kv8_d128_ps16", "gqa_paged_decode_h40_kv8_d128_ps672",
    "gqa_paged_decode_h4_kv1_d256_ps16", "gqa_paged_decode_sink_h64_kv8_d64_ps16",
    "gqa_paged_decode_sink_swa128_h64_kv8_d64_ps16", "gqa_paged_decode_swa1024_h16_kv8_d128_ps16",
    "grouped_gemm_e128_n1536_k2048", "grouped_gemm_e128_n2048_k192", "grouped_gemm_e128_n2048_k768",
    "grouped_gemm_e128_n384_k2048", "grouped_gemm_e512_n2048_k128", "grouped_gemm_e512_n256_k2048",
    "grouped_gemm_fp8_block128_sorted_e16_n4096_k7168", "grouped_gemm_fp8_block128_sorted_e32_n4096_k7168",
    "grouped_gemm_fp8_block128_sorted_e384_n256_k7168", "grouped_gemm_fp8_block128_sorted_weighted_e16_n7168_k2048",
    "grouped_gemm_fp8_block128_sorted_weighted_e32_n7168_k2048",
    "grouped_gemm_fp8_block128_sorted_weighted_e384_n7168_k128", "grouped_gemm_mxfp4_scatter_e128_n2880_k2880",
    "grouped_gemm_mxfp4_swiglu_e128_n5760_k2880", "grouped_gemm_n4096_k4096",
    "mla_paged_decode_h16_ckv512_kpe64_ps1", "mla_paged_decode_h16_ckv512_kpe64_ps64",
    "mla_paged_decode_h4_ckv512_kpe64_ps1", "mla_paged_decode_h8_ckv512_kpe64_ps1",
    "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1", "mla_paged_prefill_causal_h8_ckv512_kpe64_ps1",
    "mla_ragged_prefill_causal_h16_qk192_vo128", "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
    "quantized_gemm_n4096_k4096_ng128_kg128", "quantized_grouped_gemm_n4096_k4096_kg128",
    "rope_gemma3_global_h16_kv8_d128", "rope_gemma3_local_h16_kv8_d128",
    # Qwen3-8B, Qwen3-14B, Qwen3-32B TP4, Llama-3.2-3B and Qwen2.5-7B (weights, tables and KV pools of their serving shapes)
    "embedding_v128256_h3072", "embedding_v151936_h4096", "embedding_v151936_h5120", "embedding_v152064_h3584",
    "embedding_v37984_h5120", "gemm_bias_n4608_k3584", "gemm_n12800_k5120", "gemm_n128256_k3072",
    "gemm_n151936_k4096", "gemm_n151936_k5120", "gemm_n152064_k3584", "gemm_n16384_k3072", "gemm_n24576_k4096",
    "gemm_n2560_k5120", "gemm_n3072_k8192", "gemm_n34816_k5120", "gemm_n3584_k18944", "gemm_n3584_k3584",
    "gemm_n37888_k3584", "gemm_n37984_k5120", "gemm_n4096_k12288", "gemm_n5120_k17408", "gemm_n5120_k3072",
    "gemm_n5120_k5120", "gemm_n5120_k6400", "gemm_n7168_k5120", "gqa_paged_decode_h24_kv8_d128_ps1",
    "gqa_paged_decode_h24_kv8_d128_ps16", "gqa_paged_decode_h28_kv4_d128_ps16",
    "gqa_paged_decode_h40_kv8_d128_ps16", "rope_neox_h28_kv4_d128",
    # The public FlashInfer-Trace variants (tests/reference_cases/variants.py: KV pools of their serving shapes)
    "gqa_paged_decode_h16_kv2_d128_ps64", "gqa_paged_decode_h20_kv4_d128_ps64", "gqa_paged_decode_h24_kv4_d128_ps64",
    "gqa_paged_decode_h24_kv8_d128_ps64", "gqa_paged_decode_h32_kv16_d128_ps1", "gqa_paged_decode_h32_kv16_d128_ps64",
    "gqa_paged_decode_h32_kv4_d128_ps64", "gqa_paged_decode_h32_kv8_d128_ps64", "gqa_paged_decode_h48_kv8_d128_ps1",
    "mla_paged_prefill_causal_h16_ckv512_kpe64_ps64",
    # The public FlashInfer-Trace set's unsharded Llama-3.3-70B and Gemma-3-27B GEMMs; MiniMax-M2's 196608-row RoPE cache
    "gemm_n10240_k8192", "gemm_n8192_k8192", "gemm_n57344_k8192", "gemm_n8192_k28672", "gemm_n5376_k4096",
    "gemm_n5376_k21504", "rope_with_cos_sin_cache_neox_style_d128_rd64",
    # The public set's other fused FP8 MoEs (0.4-17 GB of expert weights; checked shrunk in test_references)
    "moe_fp8_block_scale_ds_routing_topk8_ng1_kg1_e384_h7168_i2048",
    "moe_fp8_block_scale_ds_routing_topk8_ng1_kg1_e48_h7168_i2048", "moe_fp8_block_scale_renorm_topk10_e128_h2048_i512",
    "moe_fp8_block_scale_renorm_topk8_e128_h2048_i768", "moe_fp8_block_scale_renorm_topk8_e128_h4096_i1536",
    # The public set's TRT-LLM fused MoEs (1-17 GB of expert weights; checked shrunk in test_references)
    *(f"{kind}_topk{k}_e{e}_h{h}_i{i}"
      for kind in ("trtllm_fp4_block_scale_moe", "trtllm_fp4_block_scale_routed_moe", "trtllm_fp8_per_tensor_scale_moe")
      for k, e, h, i in ((10, 128, 2048, 512), (1, 128, 5120, 8192), (1, 16, 5120, 8192), (8, 128, 2048, 768),
                         (8, 64, 4096, 1536))
      if not (kind.startswith("trtllm_fp8") and (k, e) in ((10, 128), (8, 64)))),
}
# The served models of issue #26 step 4 (gpt-oss-20b, Qwen3-235B-A22B TP8, Mistral-7B-Instruct-v0.3): their wide
# weights, vocabularies and expert tables.
TOO_LARGE_FOR_CI |= {
    "embedding_v18992_h4096", "embedding_v32768_h4096", "gemm_n18992_k4096", "gemm_n32768_k4096",
    "grouped_gemm_e128_n384_k4096", "grouped_gemm_e128_n4096_k192", "grouped_gemm_mxfp4_scatter_e32_n2880_k2880",
    "grouped_gemm_mxfp4_swiglu_e32_n5760_k2880",
}
# The minimax-m2, llama-4-scout and glm-4.5 records' vocabulary shards, lm_heads and expert GEMMs.
TOO_LARGE_FOR_CI |= {
    "embedding_v18944_h5120", "embedding_v25008_h3072", "embedding_v25256_h5120", "gemm_fp8_rowwise_n3072_k5120",
    "gemm_n18944_k5120", "gemm_n25008_k3072", "gemm_n25256_k5120", "grouped_gemm_e16_n5120_k1024",
    "grouped_gemm_fp8_block128_sorted_e32_n3072_k3072", "grouped_gemm_fp8_block128_sorted_weighted_e32_n3072_k1536",
    "grouped_gemm_fp8_rowwise_sorted_e160_n384_k5120", "grouped_gemm_fp8_rowwise_sorted_weighted_e160_n5120_k192",
    "grouped_gemm_weighted_e16_n2048_k5120",
}
# Session 11: the NVFP4 GEMMs' weights (Llama-3.1-8B and Llama-3.3-70B TP4 shards) and MiniMax-M2's unsharded
# qkv/o GEMMs of the public set (tests/reference_cases/nvfp4.py and public_gemms.py check them at small sizes).
TOO_LARGE_FOR_CI |= {
    "gemm_nvfp4_n6144_k4096", "gemm_nvfp4_n14336_k8192", "gemm_nvfp4_n28672_k4096", "gemm_nvfp4_n4096_k14336",
    "gemm_nvfp4_n8192_k7168", "gemm_n3072_k6144", "gemm_n8192_k3072",
}
# The cascade decodes at the other vLLM models' heads: their workloads are the batches of 64 and more that vLLM's rule
# runs as cascade (tests/reference_cases/cascade_variants.py checks them at small sizes).
TOO_LARGE_FOR_CI |= {f"gqa_cascade_decode_{heads}_d128_ps16" for heads in
                     ("h16_kv2", "h16_kv8", "h24_kv8", "h28_kv4", "h32_kv4", "h40_kv8", "h8_kv1")}
# The NVFP4 MoE of DeepSeek-R1-FP4 at EP8 (0.8 GB of expert codes and scales; checked shrunk in test_references) and
# gpt-oss's MXFP4 x MXFP8 MoEs on Blackwell (0.5 / 1.9 GB of expert codes and scales).
TOO_LARGE_FOR_CI |= {"moe_nvfp4_routed_topk8_e32_h7168_i2048", "trtllm_fp4_block_scale_moe_mxfp8_topk4_e32_h3072_i3072",
                     "trtllm_fp4_block_scale_moe_mxfp8_topk4_e128_h3072_i3072"}
# gpt-oss's decode with sinks over an FP8 KV cache: the bfloat16 twins' decode steps (32k-token pools and more; checked
# at small sizes by tests/reference_cases/sink_fp8kv.py).
TOO_LARGE_FOR_CI |= {"gqa_paged_decode_fp8kv_sink_h64_kv8_d64_ps16", "gqa_paged_decode_fp8kv_sink_swa128_h64_kv8_d64_ps16"}
REFERENCE_TOTAL_ELEMENTS = 12_000_000  # random elements of one reference call, all inputs together


@pytest.fixture(scope="module")
def hub(bundled_export) -> Path:
    return bundled_export


@pytest.fixture
def rows(hub, load_offline):
    return lambda cfg: load_offline(hub, cfg)


def lone_module(path: Path):
    """The exported module imported from its file alone (not as part of the generator package)."""
    spec = importlib.util.spec_from_file_location("kerneltrace_inputs_copy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_exported_input_module_needs_only_torch(hub, tmp_path):
    copy = tmp_path / "elsewhere" / "kerneltrace_inputs.py"
    copy.parent.mkdir()
    copy.write_bytes((hub / "kerneltrace_inputs.py").read_bytes())
    assert copy.read_bytes() == Path(bench_inputs.__file__).read_bytes()  # the bench's own module
    code = (f"import sys; sys.path.insert(0, {str(copy.parent)!r}); import kerneltrace_inputs as m; "
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('generator', 'safetensors', 'numpy_', "
            "'datasets', 'pyarrow'))); print(m.TORCH_DTYPES['float8_e4m3'])")
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=copy.parent, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "torch.float8_e4m3fn"]


def test_the_input_dtype_table_agrees_with_model_dtypes():
    from generator.model.dtypes import DTYPE, TORCH_TENSOR_DTYPES

    assert bench_inputs.TORCH_DTYPE_NAMES == TORCH_TENSOR_DTYPES
    for code, torch_name in bench_inputs.SAFETENSORS_DTYPES.items():
        if code != "F64":
            (name,) = [d.name for d in DTYPE.values() if d.safetensors == code]
            assert TORCH_TENSOR_DTYPES[name] == torch_name
    assert bench_inputs.FP8_MAX == {n: DTYPE[n].float_max for n in bench_inputs.FP8_MAX}


def test_every_workloads_inputs_regenerate_bit_identically(hub, rows):
    mod = lone_module(hub / "kerneltrace_inputs.py")
    definitions = {d["name"]: d for d in rows("definitions")}
    ds = load(DEFAULT_DATASET)
    by_uuid = {w.uuid: w for w in ds.workloads}
    compared = left_out = 0
    workloads = rows("workloads")
    assert workloads.num_rows == len(ds.workloads)
    for w in workloads:
        d = definitions[w["definition"]]
        column = {r["name"]: {k: v for k, v in r.items() if v is not None and k != "name"} for r in w["input_recipes"]}
        record = bench_inputs.input_recipes(ds.definitions[w["definition"]].data, by_uuid[w["uuid"]].data["workload"])
        for recipe in column.values():
            if "value" in recipe:
                recipe["value"] = json.loads(recipe["value"])
        assert column == record  # the column is what the bench does, floats exact
        bench_w = by_uuid[w["uuid"]]
        for index, bound in ((0, MAX_ELEMENTS), (1, SECOND_SET_ELEMENTS)):  # the first set and a timing set
            mine = mod.make_inputs(d, w, blob_root=hub, index=index, max_elements=bound)
            theirs = bench_inputs.make_inputs(ds.definitions[w["definition"]].data, bench_w.data["workload"],
                                              DEFAULT_DATASET, index, "cpu", max_elements=bound)
            assert list(mine) == list(theirs) == list(d["inputs"])
            for name, value in mine.items():
                if value is None:
                    left_out += 1
                    assert theirs[name] is None and column[name]["type"] == "random"
                    continue
                if isinstance(value, torch.Tensor):
                    assert value.dtype == theirs[name].dtype and torch.equal(value, theirs[name]), (w["uuid"], name)
                    compared += 1
                else:
                    assert value == theirs[name] and type(value) is type(theirs[name]), (w["uuid"], name)
    assert compared > 1000, (compared, left_out)


def test_inputs_honour_their_distributions(hub, rows):
    """What the recipes promise holds for the tensors (the sampling probs are rows of a distribution,
    the scales positive): a plain randn would fail here."""
    mod = lone_module(hub / "kerneltrace_inputs.py")
    definitions = {d["name"]: d for d in rows("definitions")}
    seen = set()
    for w in rows("workloads"):
        d = definitions[w["definition"]]
        for recipe in w["input_recipes"]:
            name = recipe["name"]
            if recipe["type"] != "random" or recipe["distribution"] == "normal":
                continue
            if math.prod(recipe["data_shape"] or recipe["shape"]) > 1 << 20:  # a block scale redraws its data
                continue
            x = mod.draw({k: v for k, v in recipe.items() if v is not None}).float()
            kind = recipe["distribution"]
            if kind in ("softmax_normal", "power_law_probs"):
                assert (x >= 0).all() and torch.allclose(x.sum(-1), torch.ones(x.shape[:-1]), atol=1e-4)
            if kind == "power_law_probs":  # peaked like a served model's next token: top-p 0.9 keeps a few
                ordered = x.double().sort(-1, descending=True).values
                assert ((ordered.cumsum(-1) - ordered < 0.9).sum(-1) <= 1000).all(), w["uuid"]
            elif kind == "uniform":  # the bounds as the input's dtype holds them (bfloat16 may round up to high)
                low, high = (torch.tensor(recipe[b]).to(mod.TORCH_DTYPES[recipe["dtype"]]).float() for b in ("low", "high"))
                assert (x >= low).all() and (x <= high).all()
            elif kind == "fp8_blockwise":  # the format's range is used: the largest value is +-fp8_max
                assert x.abs().max() == mod.FP8_MAX[recipe["dtype"]], w["uuid"]
            elif kind == "fp8_block_scale":
                assert (x > 0).all() and (x < 1).all(), w["uuid"]
            elif kind == "rope_cos_sin":  # rows of (cos | sin) times YaRN's attention factor
                half = x.shape[-1] // 2
                norm = x[..., :half].double() ** 2 + x[..., half:].double() ** 2
                factor = mod.rope_attention_factor(recipe)
                eps = torch.finfo(mod.TORCH_DTYPES[recipe["dtype"]]).eps  # a bfloat16 cache rounds cos and sin
                assert torch.allclose(norm, torch.full_like(norm, factor**2), atol=4 * eps * factor**2), w["uuid"]
            elif kind == "skewed_logits":
                assert torch.isfinite(x).all()
            seen.add(kind)
            assert d["inputs"][name]["dtype"] == recipe["dtype"]
    assert seen >= {"power_law_probs", "skewed_logits", "fp8_blockwise", "fp8_block_scale", "rope_cos_sin", "uniform"}
    plain = {"type": "random", "distribution": "normal", "mean": 0.0, "std": 1.0, "dtype": "float32",
             "shape": [4, 1000], "seed": 1}
    assert (mod.draw(plain) < 0).any()  # what top_p_sampling got before the probs said softmax


def test_a_wrong_distribution_is_a_validation_error(good_dataset):
    from generator.validate import validate

    path = good_dataset / "definitions/norm/rmsnorm_h128.json"
    d = json.loads(path.read_text())
    d["inputs"]["input"]["random"] = {"distribution": "gaussian"}
    path.write_text(json.dumps(d, indent=2))
    errors = [x.format_human() for x in validate(load(good_dataset)) if x.is_error]
    assert errors and "random" in errors[0] and "rmsnorm_h128.json" in errors[0]
    d["inputs"]["input"]["random"] = {"distribution": "uniform", "low": 0.0}  # high missing
    path.write_text(json.dumps(d, indent=2))
    assert any(x.is_error for x in validate(load(good_dataset)))


def test_every_reference_runs_from_the_export(hub, rows):
    """Each reference, from the export's rows and its input module, on its smallest workload: outputs of the declared
    dtype and shape, finite. Siblings (the same reference text, tensors and axes; only const values differ) run the
    same code on other sizes: one of each group runs, the one with the smallest workload."""
    mod = lone_module(hub / "kerneltrace_inputs.py")
    smallest: dict = {}
    for w in rows("workloads"):
        size = sum(math.prod(r["shape"]) for r in w["input_recipes"] if r["type"] == "random")
        if w["definition"] not in smallest or size < smallest[w["definition"]][0]:
            smallest[w["definition"]] = (size, w)
    definitions = list(rows("definitions"))
    too_large = {d["name"] for d in definitions if smallest[d["name"]][0] > REFERENCE_TOTAL_ELEMENTS}
    groups: dict = {}
    for d in definitions:
        if d["name"] not in too_large:
            key = (d["reference"], json.dumps([d["inputs"], d["outputs"]], sort_keys=True),
                   json.dumps({n: a["type"] for n, a in d["axes"].items()}))
            groups.setdefault(key, []).append(d)
    ran = set()
    for group in groups.values():
        d = min(group, key=lambda x: (smallest[x["name"]][0], x["name"]))
        w = smallest[d["name"]][1]
        namespace: dict = {}
        exec(compile(d["reference"], f"<{d['name']} reference>", "exec"), namespace)
        torch.manual_seed(0)  # the samplers draw
        result = namespace["run"](*mod.make_inputs(d, w, blob_root=hub).values())
        assert set(result) == set(d["outputs"]), d["name"]
        axes = mod.axis_values(d, w)
        for name, spec in d["outputs"].items():
            value = result[name]
            if isinstance(value, torch.Tensor):
                assert value.dtype == mod.TORCH_DTYPES[spec["dtype"]], (d["name"], name)
                assert tuple(value.shape) == mod.shape_of(spec, axes), (d["name"], name)
                if value.is_floating_point():
                    v = value.float()
                    ok = torch.isfinite(v)
                    if "-inf" in spec.get("description", ""):  # an output that says it masks with -inf (min-p)
                        ok |= v == -math.inf
                    assert ok.all(), (d["name"], name)
        ran.add(d["name"])
    assert too_large == TOO_LARGE_FOR_CI  # a new definition is never skipped silently
    assert len(ran) == len(groups) and len(ran) >= 30
    assert sum(map(len, groups.values())) + len(too_large) == rows("definitions").num_rows


def test_traces_join_solutions_and_workloads(rows):
    solutions = {s["name"]: s for s in rows("solutions")}
    workloads = {w["uuid"]: w for w in rows("workloads")}
    traces = rows("traces")
    assert traces.num_rows > 0
    for t in traces:
        s = solutions[t["solution"]]
        assert s["definition"] == t["definition"] and s["author"] == t["author"]
        w = workloads[t["workload_uuid"]]
        assert w["definition"] == t["definition"] and w["axes"] == t["workload"]["axes"]
        if t["status"] == "PASSED":
            assert t["samples"] > 0 and t["timer"] and t["matched_ratio"] is not None
            # element-wise checks say their tolerance; the samplers are checked statistically
            assert (t["atol"] is not None and t["rtol"] is not None) or t["type"] == "sampling"
            assert t["p20_ms"] <= t["latency_ms"] <= t["p80_ms"] or t["unstable"]


def test_card_snippets_print_the_sites_numbers(bundled_card):
    printed = bundled_card
    best_out, estimate_out = output_of(printed, '"geomean_speedup"'), output_of(printed, "best_ms")
    ds = load(DEFAULT_DATASET)
    boards = all_leaderboards(ds)
    expected_best = {(lb.definition, lb.hardware): lb.entries[0].solution
                     for lbs in boards.values() for lb in lbs if lb.entries and lb.entries[0].geomean_speedup}
    got_best = {}
    for line in best_out.splitlines()[1:]:
        definition, hardware, solution = line.split()[:3]
        got_best[(definition, hardware)] = solution
    assert got_best == expected_best and len(got_best) > 40
    expected = {(name, e.stage, e.hardware): e for name, es in step_estimates(ds, boards).items() for e in es}
    got = {}
    for line in estimate_out.splitlines():
        name, stage, hw, best, base, traced, sol, none = line.split()
        got[(name, stage, hw)] = (float(best), float(base), int(traced), int(sol), int(none))
    assert set(got) == set(expected) and got
    for key, (best, base, traced, sol, none) in got.items():
        e = expected[key]
        assert math.isclose(base, e.baseline_ms, rel_tol=1e-5) and math.isclose(best, e.best_ms, rel_tol=1e-5), key
        assert (traced, sol, none) == (e.calls("trace"), e.calls("speed of light"), e.calls("none")), key
    assert any(e.calls("trace") for e in expected.values())  # the bundled traces stand in somewhere


def test_best_solution_snippet_is_not_the_fastest_trace(tmp_path, load_offline, monkeypatch, capsys):
    """Two solutions on two workloads: `fast_small` wins the smallest workload (the fastest single
    trace) but loses the larger one by more; the snippet must name `good`."""
    from dataset_factory import SOLUTION, TRACE, WORKLOAD, write_dataset

    def trace(solution, uuid, latency):
        ev = json.loads(json.dumps(TRACE["evaluation"]))
        ev["performance"].update(latency_ms=latency, reference_latency_ms=1.0, speedup_factor=1.0 / latency)
        for k in ("p20_ms", "p80_ms", "mean_ms", "stderr_ms", "unstable"):
            ev["performance"].pop(k, None)
        axes = WORKLOAD["workload"]["axes"] if uuid == "wl-0001" else {"batch_size": 64}
        return {**TRACE, "solution": solution, "workload": {**TRACE["workload"], "uuid": uuid, "axes": axes},
                "evaluation": ev}

    w2 = {**WORKLOAD, "workload": {**WORKLOAD["workload"], "uuid": "wl-0003", "axes": {"batch_size": 64}}}
    root = write_dataset(tmp_path / "ds", workloads=[WORKLOAD, w2], traces=[
        trace("rmsnorm_h128_torch", "wl-0001", 0.010), trace("rmsnorm_h128_torch", "wl-0003", 1.0)])
    for name, author, small, large in (("fast_small", "alice", 0.005, 4.0), ("good", "bob", 0.008, 0.5)):
        folder = root / f"solutions/{author}/norm/rmsnorm_h128"
        folder.mkdir(parents=True)
        (folder / f"{name}.json").write_text(json.dumps({**SOLUTION, "name": name, "author": author}))
        lines = [trace(name, "wl-0001", small), trace(name, "wl-0003", large)]
        (root / f"traces/{author}/norm").mkdir(parents=True)
        (root / f"traces/{author}/norm/rmsnorm_h128.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    export_dataset(root, tmp_path / "out")
    printed = run_card_blocks(tmp_path / "out", load_offline, monkeypatch)
    best = output_of(printed, '"geomean_speedup"')
    assert best.splitlines()[1].split()[:3] == ["rmsnorm_h128", "test_cpu", "good"]
    assert re.search(r"fast_small", best) is None


def test_stage_and_token_count_columns_answer_decode_at_batch_64(rows):
    workloads = rows("workloads").to_pandas()
    assert workloads["num_tokens"].notna().all()
    unknown = workloads[workloads["stage"].isna()]
    # Unknown only where the workload is either step's: the seed's grouped GEMM examples, and an lm_head
    # whose workloads are "N requests: logits of N sequences" (one row per sequence in decode and prefill).
    assert set(unknown["definition"]) <= {"grouped_gemm_n4096_k4096", "quantized_grouped_gemm_n4096_k4096_kg128",
                                          "gemm_n131072_k4480"}
    decode_64 = workloads[(workloads["stage"] == "decode") & (workloads["num_tokens"] == 64)]
    # one filter finds the step across kernels whose axes are named batch_size, M, num_tokens, ...
    assert {"gemm", "norm", "gqa", "sampling", "rope", "grouped_gemm"} <= set(decode_64["type"])
    by = {r["uuid"]: r for r in rows("workloads")}
    for r in by.values():
        axes = r["axes"]
        if r["type"] == "gemm" and "M" in axes:
            assert r["num_tokens"] == axes["M"]
        if "total_q" in axes:  # prefill: the new tokens, not the sequences
            assert r["num_tokens"] == axes["total_q"] and r["stage"] == "prefill"
        picks = re.search(r" tokens x (\d+) experts", r["description"] or "")
        if "total_tokens" in axes and picks:  # token x expert pairs: tokens times experts per token
            assert r["num_tokens"] * int(picks.group(1)) == axes["total_tokens"] or "imbalanced" in r["description"]
