"""Einsum cascades: the seed 003 format (parsing, renames, set expressions), the cascades of the
dataset (one per definition, all valid), the checks' messages, and the plain-YAML export."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml

from generator.analyse.roofline import export_cascades, verify_export
from generator.cli import main
from generator.einsum import (
    ExprError,
    SetError,
    bits_problems,
    count,
    count_points,
    load_cascade,
    parse_cascade,
    parse_constraints,
    parse_set_expression,
    resolve_renames,
    workload_counts,
)
from generator.load import DEFAULT_DATASET, load
from generator.validate import validate_path

from dataset_factory import EINSUM, write_dataset

SEED = Path(__file__).parent.parent / "data" / "einsum_seed003"
EIN = "einsums/norm/rmsnorm_h128.yaml"


@pytest.fixture(scope="module")
def ds():
    return load(DEFAULT_DATASET)


# -- seed 003 -----------------------------------------------------------------------------------------------
def test_seed_three_matmuls():
    c = load_cascade((SEED / "three_matmuls.yaml").read_text(), {})  # renders, schema-checks, parses
    results, problems = resolve_renames(c)
    assert problems == [] and bits_problems(c) == []
    # Matmul1 overrides 'input' with T0; elsewhere Inputs & Intermediates is the previous product.
    got = {(r.einsum, r.rename.name): r.members for r in results}
    assert got[("Matmul1", "input")] == ("T0",) and got[("Matmul2", "input")] == ("T1",)
    assert got[("Matmul3", "weight")] == ("W2",) and got[("Matmul3", "output")] == ("T3",)
    n = count(c)
    assert n.macs == 3 * 128**3 == 6_291_456  # three 128^3 products
    assert n.flops == 2 * n.macs
    # 8 bits per value: T0, W0, W1, W2 read once and T3 written once, 128*128 bytes each; T1, T2 stay on chip.
    assert n.bytes == 5 * 128 * 128 == 81_920
    assert {t.name for t in n.tensors if not t.counted} == {"T1", "T2"}


def test_seed_transformer_block_with_its_defaults():
    text = (SEED / "transformer_block.yaml").read_text()
    c = load_cascade(text, {})  # BATCH_SIZE and N_TOKENS come from {% set ... | default(...) %}
    assert resolve_renames(c)[1] == [] and bits_problems(c) == []
    n = count(c)
    macs = {e.name: e.macs for e in n.einsums}
    # B=1, M=P=8192, H=32, E=F=128, D=4096, G=J=4096, C=16384
    assert macs["I"] == 0  # a copy
    assert macs["V"] == macs["K"] == macs["Q"] == 8192 * 4096 * 32 * 128 == 2**37
    assert macs["QK"] == macs["AV"] == 8192 * 32 * 128 * 8192 == 2**38  # p indexes M through the map form
    assert macs["QK_softmax"] == 8192 * 8192 * 32 == 2**31  # element-wise
    assert macs["Z"] == 2**37 and macs["FFA"] == macs["FFB"] == 8192 * 4096 * 16384 == 2**39
    assert n.macs == 2**41 and n.elementwise_ops == 2**31 and n.flops == 2**42 + 2**31
    # I_in 8192*4096 + WV, WK, WQ, WZ 32*128*4096 each + WFFA, WFFB 4096*16384 each + FFB 8192*4096, 1 byte each
    assert n.bytes == 2 * 8192 * 4096 + 4 * 32 * 128 * 4096 + 2 * 4096 * 16384 == 2**28


def test_seed_transformer_block_rendered_with_values():
    n = count(load_cascade((SEED / "transformer_block.yaml").read_text(), {"N_TOKENS": 128, "BATCH_SIZE": 2}))
    # QK: b m h e p = 2 * 128 * 32 * 128 * 128
    assert next(e.macs for e in n.einsums if e.name == "QK") == 2 * 128 * 32 * 128 * 128


# -- pieces of the format -------------------------------------------------------------------------------------
@pytest.mark.parametrize("expr, expected", [
    ("Inputs & Intermediates", {"T1"}),
    ("~(input | output)", {"W1"}),
    ("All - Outputs", {"T1", "W1"}),
    ("Inputs | Outputs()", {"T1", "W1", "T2"}),  # Outputs() is accepted as in the seed's prose
    ("Nothing", set()),
    ("~Nothing & ~W1", {"T1", "T2"}),
    ("All - T1 & W1 | T2", {"W1", "T2"}),  # Python precedence: (All - T1) & W1 | T2
])
def test_set_expressions(expr, expected):
    sets = {"All": frozenset({"T1", "W1", "T2"}), "Nothing": frozenset(), "Inputs": frozenset({"T1", "W1"}),
            "Outputs": frozenset({"T2"}), "Intermediates": frozenset({"T1", "T2"}),
            "input": frozenset({"T1"}), "output": frozenset({"T2"}), "T1": frozenset({"T1"}),
            "W1": frozenset({"W1"}), "T2": frozenset({"T2"})}
    assert parse_set_expression(expr)(sets.__getitem__) == expected


@pytest.mark.parametrize("expr, message", [
    ("Inputs &", "is incomplete"), ("(Inputs", "unclosed"), ("Inputs + Outputs", "unexpected '+ Outputs'"),
    ("", "is empty"), ("Inputs Outputs", "where an operator"),
])
def test_bad_set_expressions(expr, message):
    with pytest.raises(SetError, match=message.replace("(", r"\(").replace("+", r"\+")):
        parse_set_expression(expr)


def test_constraints_and_counting():
    cs = parse_constraints("0 <= j < 8 and j <= i + 2")
    assert len(cs) == 3
    # i in [0, 4), j in [0, 8) with j <= i + 2: i=0..3 -> 3, 4, 5, 6 keys = 18 points.
    coupled = [c for c in cs if len(c.coefs) > 1]
    assert count_points(["i", "j"], {"i": (0, 3), "j": (0, 7)}, coupled) == 18
    with pytest.raises(ExprError, match="not a condition"):
        parse_constraints("m = 3")


def test_list_and_map_projections_are_the_same():
    a = yaml.safe_load("workload: {rank_sizes: {M: 3, K: 5}, einsums: [{name: E, tensor_accesses: ["
                       "{name: X, projection: [m, k]}, {name: Y, projection: [m], output: true}]}]}")
    b = yaml.safe_load("workload: {rank_sizes: {M: 3, K: 5}, einsums: [{name: E, tensor_accesses: ["
                       "{name: X, projection: {M: m, K: k}}, {name: Y, projection: {M: m}, output: true}]}]}")
    ca, cb = parse_cascade(a)[0], parse_cascade(b)[0]
    assert ca.einsums[0].accesses == cb.einsums[0].accesses
    assert count(ca).macs == count(cb).macs == 15


def test_a_parenthesised_variable_is_the_variable():
    """An expression `(m)` in a map projection indexes as `m` does: its bounds come from the rank it indexes (it once crashed validate: KeyError)."""
    text = ("workload: {rank_sizes: {M: 3, K: 5}, einsums: [{name: E, tensor_accesses: ["
            "{name: X, projection: {M: %s, K: k}}, {name: Y, projection: [m], output: true}]}]}")
    plain, wrapped = (parse_cascade(yaml.safe_load(text % v)) for v in ("m", "'(m)'"))
    assert plain[1] == wrapped[1] == []
    assert plain[0].einsums[0].bounds == wrapped[0].einsums[0].bounds == {"m": (0, 2), "k": (0, 4)}
    assert count(plain[0]).macs == count(wrapped[0]).macs == 15


def test_renames_expected_count_fails_with_a_clear_message():
    text = (SEED / "three_matmuls.yaml").read_text().replace("    renames: {input: T0}\n", "")
    _, problems = resolve_renames(load_cascade(text, {}))
    p, weight = problems  # weight = ~(input | output) then holds T0 and W0: reported too
    assert weight.message.startswith(
        "rename 'weight' of Einsum 'Matmul1': '~(input | output)' gives 2 tensors (T0, W0)")
    assert p.message == ("rename 'input' of Einsum 'Matmul1': 'Inputs & Intermediates' gives 0 tensors (none), "
                         "expected_count is 1")
    assert p.pointer == "/renames/einsums/0/tensor_accesses/0"
    assert "Inputs = {T0, W0}" in p.hint and "Intermediates = {T1}" in p.hint and "override" in p.hint


# -- the dataset's cascades ------------------------------------------------------------------------------------
def test_every_definition_has_a_cascade(ds):
    missing = sorted(n for n in ds.definitions if n not in ds.einsums)
    assert missing == [], f"definitions without einsums/<type>/<definition>.yaml: {missing}"
    for name, e in ds.einsums.items():
        assert e.type == ds.definitions[name].type


# The bundled cascades' validation (the einsum and hardware checks over every workload) is not repeated here:
# it runs in CI's `kerneltrace validate` and before every export of the bundled dataset (the shared export of
# tests/conftest.py), which refuses a dataset with errors.


def test_every_cascade_counts_its_smallest_and_largest_workloads(ds):
    # Every workload's counting runs in validate (test_validate_good: no error on the bundled dataset); here the
    # counts' own invariants at each definition's smallest and largest workloads (the rank sizes are all that differ).
    for name, d in ds.definitions.items():
        ws = sorted(ds.workloads_by_definition.get(name, []), key=lambda w: (math.prod(w.axes.values()), w.uuid))
        for w in ws[:1] + ws[-1:]:
            c = workload_counts(ds, d, w.axes)
            assert c.bytes > 0 and c.flops >= 0, (name, w.uuid)
            # Every input and output of the definition is counted once.
            assert {t.name for t in c.tensors if t.counted} == set(d.inputs) | set(d.outputs), name


def test_renderings_read_as_yaml_reads_them(ds):
    """render.yaml_data reads a rendering's rank sizes apart from the rest of its text: the same data as
    yaml.safe_load, key order included, at every definition's smallest and largest workloads, and for blocks
    it must read whole (a comment, a float, a YAML 1.1 octal, a key twice, a size past the block)."""
    from generator.einsum.render import axis_values, render_template, yaml_data
    from generator.model.fileio import SAFE_YAML_LOADER

    def same(text: str) -> None:  # against the whole text read by the same YAML library (libyaml where built)
        assert json.dumps(yaml_data(text)) == json.dumps(yaml.load(text, Loader=SAFE_YAML_LOADER)), text

    for name, e in ds.einsums.items():
        d = ds.definitions[name]
        ws = sorted(ds.workloads_by_definition.get(name, []), key=lambda w: (math.prod(w.axes.values()), w.uuid))
        for w in ws[:1] + ws[-1:]:
            same(render_template(e.template, axis_values(d, w.axes)))
    body = "  einsums:\n  - name: E\n    tensor_accesses:\n    - {name: x, projection: [m]}\n"
    for sizes in ("    M: 4\n    N: 8\n", "    M: 4  # rows\n    N: 8\n", "    M: 4\n    N: 2.5\n",
                  "    M: 010\n    N: 8\n", "    M: 4\n    M: 9\n", "    M: -3\n    N: 0\n"):
        same("# c\nworkload:\n  rank_sizes:\n" + sizes + body)
    same("workload:\n  rank_sizes:\n    M: 4\n    N: 2.5\n    K: 8\n" + body)  # a size past the float
    same("workload:\n  renames: {}\n  rank_sizes:\n    M: 4\n" + body)  # sizes not first: read whole
    from generator.einsum.render import _read_skeleton

    before = _read_skeleton.cache_info().hits
    same("workload:\n  rank_sizes:\n    M: 5\n    N: 7\n" + body)
    same("workload:\n  rank_sizes:\n    M: 6\n    N: 9\n" + body)
    assert _read_skeleton.cache_info().hits > before  # the second one's rest was read once, for both


def test_renderings_that_differ_in_sizes_parse_as_their_own_text():
    """read_rendered builds a template's structure once (with every rank size 1) and sizes it per rendering: each
    rendering's cascade (sizes, bounds) and problems are those parse_cascade finds in its own text. A local rank
    size that agrees with the workload's in one rendering and not in another (a tensor has one shape) tells
    them apart, as it does the skeleton (M: 1), which has the problem."""
    from generator.einsum.render import _skeleton_structure, read_rendered, render_template

    template = ("workload:\n  rank_sizes:\n    M: {{ m }}\n    K: 8\n  einsums:\n"
                "  - name: A\n    rank_sizes: {M: 4}\n    tensor_accesses:\n    - {name: x, projection: [m, k]}\n"
                "    - {name: t, projection: [m], output: true}\n"
                "  - name: B\n    tensor_accesses:\n    - {name: t, projection: [m]}\n"
                "    - {name: y, projection: [m], output: true}\n")
    before = _skeleton_structure.cache_info().misses
    for m in (4, 6, 3):
        text = render_template(template, {"m": m})
        r = read_rendered(text)
        cascade, problems = parse_cascade(yaml.safe_load(text))
        assert r.problems == tuple(problems), m
        assert [p.message for p in problems] == ([] if m == 4 else [
            f"rank 'M' of tensor 't' has size {m} in Einsum 'B' but 4 in Einsum 'A'"]), m
        assert (r.cascade is None) == (cascade is None) == (m != 4)
    ok = read_rendered(render_template(template, {"m": 4})).cascade
    assert [(dict(e.rank_sizes), dict(e.bounds)) for e in ok.einsums] == [
        ({"M": 4, "K": 8}, {"m": (0, 3), "k": (0, 7)}), ({"M": 4, "K": 8}, {"m": (0, 3)})]
    assert _skeleton_structure.cache_info().misses == before + 1  # one structure for the three renderings


def test_checking_an_iteration_space_raises_where_counting_does():
    """validate checks that every iteration space can be counted without counting it (countable_points): it
    raises exactly where count_points does, which stops at a coupled group with no points before reaching a
    later one too large to count, but not at an empty uncoupled variable."""
    from generator.einsum.constraints import MAX_ENUMERATION, countable_points

    def coupled(text):
        return [c for c in parse_constraints(text) if len(c.coefs) > 1]

    big = (0, MAX_ENUMERATION)  # two such variables coupled: too many points to enumerate
    cases = [  # (variables in order, bounds, constraints, whether counting raises)
        ("cd", {"c": big, "d": big}, coupled("c <= d"), True),
        ("abcd", {"a": (5, 9), "b": (0, 3), "c": big, "d": big}, coupled("a <= b") + coupled("c <= d"), False),
        ("abcd", {"a": (0, 3), "b": (0, 3), "c": big, "d": big}, coupled("a <= b") + coupled("c <= d"), True),
        ("ecd", {"e": (0, -1), "c": big, "d": big}, coupled("c <= d"), True),
        ("eabcd", {"e": (0, -1), "a": (0, 3), "b": (0, 3), "c": big, "d": big},
         coupled("a <= b") + coupled("c <= d"), False),
        ("cdab", {"a": (5, 9), "b": (0, 3), "c": big, "d": big}, coupled("a <= b") + coupled("c <= d"), True),
    ]
    for variables, bounds, constraints, raises in cases:
        outcomes = []
        for how in (count_points, countable_points):
            try:
                how(list(variables), bounds, constraints)
                outcomes.append(None)
            except ExprError as e:
                outcomes.append(str(e))
        assert outcomes[0] == outcomes[1], variables
        assert (outcomes[1] is not None) == raises, variables
        assert outcomes[1] is None or "at most 4000000 can be counted" in outcomes[1]


def test_export_reads_back_to_the_same_counts(ds, tmp_path: Path):
    # Every definition's cascade, at its workload with the largest sizes (the numbers a text round trip
    # could spoil): the template and its constructs are the definition's, the other workloads only change
    # the rank sizes, and all ~1900 files took 25 s of pure-Python YAML for the same check.
    def largest(ws):
        return max(ws, key=lambda w: (math.prod(w.axes.values()), w.uuid))
    one_each = dataclasses.replace(ds, workloads=[largest(ws) for ws in ds.workloads_by_definition.values()])
    written = export_cascades(one_each, tmp_path)
    assert len(written) == sum(1 for n in ds.einsums if ds.workloads_by_definition.get(n))
    assert verify_export(one_each, tmp_path, written) == []
    # Plain YAML: no template left, every access carries its bits.
    sample = (tmp_path / written[0]).read_text()
    assert "{{" not in sample and "{%" not in sample
    doc = yaml.safe_load(sample)
    assert all("bits_per_value" in a for e in doc["workload"]["einsums"] for a in e["tensor_accesses"])


def test_cli_roofline_and_export(tmp_path: Path, capsys):
    assert main(["roofline", "--definition", "rmsnorm_h4096", "--hardware", "H100_SXM"]) == 0
    out = capsys.readouterr().out
    assert "rmsnorm_h4096" in out and "H100_SXM" in out and " M" in out
    assert main(["roofline", "--definition", "nope"]) == 2
    assert main(["roofline", "--definition", "gemm_n4096_k4096", "--export", str(tmp_path)]) == 0
    assert "same counts" in capsys.readouterr().out
    assert len(list(tmp_path.rglob("*.yaml"))) == 9


# -- the checks -------------------------------------------------------------------------------------------------
def _diags(tmp_path: Path, einsum: str):
    return validate_path(write_dataset(tmp_path / "ds", einsum=einsum))


def test_factory_cascade_is_clean(tmp_path: Path):
    assert _diags(tmp_path, EINSUM) == []


def test_shape_mismatch_names_the_workload(tmp_path: Path):
    bad = EINSUM.replace("B: {{ batch_size }}", "B: 4")  # right for wl-0001 (batch 4), wrong for the other four
    [d] = [d for d in _diags(tmp_path, bad) if "tensor 'input'" in d.message]
    assert d.message == ("rank 'B' of tensor 'input' has size 4, but dimension 0 of 'input' is batch_size = 2 "
                         "(workload wl-0002, and 3 other rendering(s))")
    assert (d.line, d.pointer) == (6, "/workload/einsums/0/tensor_accesses/0/projection")
    assert "{{ batch_size }}" in d.hint


def test_template_failure_is_reported_once(tmp_path: Path):
    diags = _diags(tmp_path, EINSUM.replace("{{ hidden_size }}", "{{ hidden_size // 0 }}"))
    assert [d.message for d in diags] == [
        "template fails to render (workload wl-0001): ZeroDivisionError: integer division or modulo by zero"]
    assert (diags[0].line, diags[0].pointer) == (2, "/workload/rank_sizes/H")


# A cascade whose failing construct sits deep in the document, after a {% set %} line, and second on
# its line, so neither "line 1" nor "the first construct of the line" would pass.
DEEP = ("{% set HALF = hidden_size // 2 %}\n"
        "workload:\n"
        "  rank_sizes: {B: {{ batch_size }}, H: {{ hidden_size }}}\n"
        "  einsums:\n"
        "  - name: Square\n"
        "    rank_sizes: {B: {{ batch_size }}, H: {{ WRONG }}}\n"
        "    tensor_accesses:\n"
        "    - {name: input, projection: [b, h]}\n"
        "    - {name: output, projection: [b, h], output: true}\n"
        "    - {name: weight, projection: [h]}\n"
        "    - {name: eps, projection: []}\n")


@pytest.mark.parametrize("wrong, line, pointer, message", [
    # An unknown name: jinja2's message, the line and the field, and the axis it probably meant.
    ("hiden_size", 6, "/workload/einsums/0/rank_sizes/H", "template uses an unknown name: 'hiden_size' is undefined"),
    # A failure while rendering (1/0): the second construct of line 6, not the first.
    ("hidden_size // 0", 6, "/workload/einsums/0/rank_sizes/H",
     "template fails to render (workload wl-0001): ZeroDivisionError: integer division or modulo by zero"),
    # A syntax error (an unknown filter) is found when the template compiles; still its line and field.
    ("hidden_size | nosuch", 6, "/workload/einsums/0/rank_sizes/H", "template does not parse: No filter named 'nosuch'."),
])
def test_template_errors_name_their_line_and_field(tmp_path: Path, wrong, line, pointer, message):
    [d] = _diags(tmp_path, DEEP.replace("WRONG", wrong))
    assert (d.line, d.pointer, d.message) == (line, pointer, message)
    assert d.format_human().startswith(f"{EIN}:{line}: $.workload.einsums[0].rank_sizes.H error: ")
    if "unknown name" in message:
        assert d.hint.endswith("did you mean 'hidden_size'?")
    # The same mistake in the first construct of the line is reported at the first field of the line.
    [first] = _diags(tmp_path / "first", DEEP.replace("WRONG", "hidden_size").replace("{B: {{ batch_size }}, H: {{ hid",
                                                                                         "{B: {{ " + wrong + " }}, H: {{ hid", 1))
    assert (first.line, first.pointer) == (3, "/workload/rank_sizes/B")


def test_template_error_in_a_set_statement_names_its_line(tmp_path: Path):
    [d] = _diags(tmp_path, DEEP.replace("WRONG", "hidden_size").replace("hidden_size // 2", "hidden_size // 0"))
    assert (d.line, d.pointer) == (1, "")  # a {% set %} line holds no field
    assert "ZeroDivisionError" in d.message


def test_output_read_again_must_go_through_a_copy(tmp_path: Path):
    bad = EINSUM + ("  - name: Again\n    tensor_accesses:\n    - {name: output, projection: [b, h]}\n"
                    "    - {name: twice, projection: [b, h], output: true}\n")
    messages = {d.message for d in _diags(tmp_path, bad)}
    assert "Einsum 'Again' reads 'output', an output of rmsnorm_h128" in messages
    assert "tensor 'twice' is written but never read, and rmsnorm_h128 has no output 'twice'" in messages


def test_hardware_json_is_valid_json():
    for path in (DEFAULT_DATASET / "hardware").glob("*.json"):
        assert json.loads(path.read_text())["name"] == path.stem
