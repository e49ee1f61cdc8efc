"""The FP8-query prefill over an FP8 KV cache (tests/reference_cases/fp8q_prefill.py) is what its table renders: the
bfloat16-query template with the query's dtype, its q_scale and the lines using them changed, nothing else. Its
mathematics is checked by tests/dataset/test_references.py (a dropped q_scale is planted there)."""

from __future__ import annotations

import json

from reference_cases import fp8q_prefill as fq


def test_committed_fp8q_prefill_is_what_the_table_renders():
    stale = [rel for rel, text in fq.files().items()
             if not (fq.DATASET / rel).is_file() or (fq.DATASET / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"{stale}: run `cd tests && python -m reference_cases.fp8q_prefill` and commit the result"


def test_fp8q_prefill_differs_from_the_bf16_query_template_in_the_query_only():
    d, t = fq.render(), fq._template("definition")
    assert d["inputs"]["q"]["dtype"] == "float8_e4m3" and t["inputs"]["q"]["dtype"] == "bfloat16"
    assert set(d["inputs"]) - set(t["inputs"]) == {"q_scale"} and d["outputs"] == t["outputs"]
    changed = [(a, b) for a, b in zip(d["reference"].splitlines(), t["reference"].splitlines()) if a != b]
    assert len(d["reference"].splitlines()) == len(t["reference"].splitlines()) + 1 and len(changed) >= 2
    assert fq.NAME in json.dumps(fq.files()) and "query quantisation disabled" in t["description"]
