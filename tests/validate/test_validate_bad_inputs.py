"""Known-bad inputs: each case starts from the good dataset, breaks one thing, and checks the
exact diagnostic (file, line, JSON pointer, severity, a specific message, a hint).

A case names the file it breaks; `line` is either a number (JSON Lines: the record's line)
or `At(...)`, which finds the line by plain text search in the file as written, so the test
does not share the locating code it checks.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Union

import pytest

from generator.model.diagnostics import ERROR, WARNING
from generator.validate import validate_path

from dataset_factory import DEFINITION, SOLUTION, WORKLOAD, dump, safetensors_bytes, write_dataset

DEF = "definitions/norm/rmsnorm_h128.json"
WL = "workloads/norm/rmsnorm_h128.jsonl"
SOL = "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json"
TR = "traces/baseline/norm/rmsnorm_h128.jsonl"
MODEL = "models/test-model.json"
HW = "hardware/test_cpu.json"
AT = "agent_traces/baseline/rmsnorm_h128_torch.json"
EIN = "einsums/norm/rmsnorm_h128.yaml"
BLOB = "blob/workloads/norm/rmsnorm_h128/wl-0002.safetensors"


# -- locating lines by text ------------------------------------------------------------------
@dataclass(frozen=True)
class At:
    """The line of the last needle, each searched for after the previous one."""

    needles: tuple[str, ...]

    def __init__(self, *needles: str):
        object.__setattr__(self, "needles", needles)

    def resolve(self, text: str) -> int:
        pos = 0
        for needle in self.needles:
            found = text.find(needle, pos)
            assert found >= 0, f"test bug: {needle!r} not in the file"
            line_at = found
            pos = found + 1
        return text.count("\n", 0, line_at) + 1


Line = Union[int, At]


# -- mutations -------------------------------------------------------------------------------
Mutation = Callable[[Path], None]


def _read(root: Path, rel: str) -> Any:
    text = (root / rel).read_text(encoding="utf-8")
    if rel.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _write(root: Path, rel: str, data: Any) -> None:
    path = root / rel
    if rel.endswith(".jsonl"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    else:
        dump(path, data)


def _walk(data: Any, pointer: str) -> tuple[Any, Union[str, int]]:
    """(container, last key) of a JSON pointer; list indices become ints."""
    parts = pointer.split("/")[1:]
    for part in parts[:-1]:
        data = data[int(part)] if isinstance(data, list) else data[part]
    last = parts[-1]
    return data, (int(last) if isinstance(data, list) and last != "-" else last)


def edit(rel: str, fn: Callable[[Any], Any]) -> Mutation:
    """Apply fn to the parsed file (a list of records for .jsonl); a non-None result replaces it."""
    def apply(root: Path) -> None:
        data = _read(root, rel)
        out = fn(data)
        _write(root, rel, data if out is None else out)
    return apply


def put(rel: str, pointer: str, value: Any) -> Mutation:
    """Set the value at pointer ('/-' appends to a list). In .jsonl files the first part is the line index."""
    def fn(data):
        parent, key = _walk(data, pointer)
        if key == "-":
            parent.append(copy.deepcopy(value))
        else:
            parent[key] = copy.deepcopy(value)
    return edit(rel, fn)


def drop(rel: str, pointer: str) -> Mutation:
    def fn(data):
        parent, key = _walk(data, pointer)
        del parent[key]
    return edit(rel, fn)


def rename_key(rel: str, pointer: str, new: str) -> Mutation:
    """Rename the member at pointer, keeping its place in the object."""
    def fn(data):
        parent, key = _walk(data, pointer)
        items = [(new if k == key else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
    return edit(rel, fn)


def text_replace(rel: str, old: str, new: str) -> Mutation:
    def apply(root: Path) -> None:
        text = (root / rel).read_text(encoding="utf-8")
        assert old in text, f"test bug: {old!r} not in {rel}"
        (root / rel).write_text(text.replace(old, new, 1), encoding="utf-8")
    return apply


def write(rel: str, content: Union[str, bytes, dict, list]) -> Mutation:
    def apply(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            _write(root, rel, content)
    return apply


def delete(rel: str) -> Mutation:
    return lambda root: (root / rel).unlink()


def move(rel: str, to: str) -> Mutation:
    def apply(root: Path) -> None:
        (root / to).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).rename(root / to)
    return apply


def chain(*mutations: Mutation) -> Mutation:
    def apply(root: Path) -> None:
        for m in mutations:
            m(root)
    return apply


def with_reference(text: str) -> Mutation:
    return put(DEF, "/reference", text)


def with_solution_code(text: str, **spec: Any) -> Mutation:
    return chain(put(SOL, "/sources/0/content", text),
                 *(put(SOL, f"/spec/{k}", v) for k, v in spec.items()))


def second_definition(name: str = "rmsnorm_h256", **changes: Any) -> Mutation:
    d = copy.deepcopy(DEFINITION)
    d["name"] = name
    d["axes"]["hidden_size"]["value"] = 256
    d.update(changes)
    return write(f"definitions/{d['type']}/{name}.json", d)


REF = DEFINITION["reference"]
SRC = SOLUTION["sources"][0]["content"]
DEF_TEXT = json.dumps(DEFINITION, indent=2) + "\n"


# -- the table -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    breaks: Mutation
    file: str
    line: Line
    pointer: str
    message: str
    severity: str = ERROR


CASES = [
    # ---- files: syntax, encoding, layout -------------------------------------------------
    Case("json-syntax-trailing-comma", write(DEF, DEF_TEXT.replace('"type": "norm",', '"type": "norm",,')),
         DEF, 3, "", "invalid JSON: Expecting property name enclosed in double quotes (column 18)"),
    Case("json-syntax-truncated", write(DEF, DEF_TEXT[:DEF_TEXT.index('"Tokens.') + 4]),
         DEF, 13, "", "invalid JSON: Unterminated string starting at (column 22)"),
    Case("json-syntax-empty-file", write(HW, ""), HW, 1, "", "invalid JSON: Expecting value"),
    Case("jsonl-syntax-second-line", text_replace(WL, '{"definition": "rmsnorm_h128", "workload": {"uuid": "wl-0002"',
                                                  '{"definition": "rmsnorm_h128" "workload": {"uuid": "wl-0002"'),
         WL, 2, "", "invalid JSON: Expecting ',' delimiter (column 31)"),
    Case("jsonl-syntax-trace", write(TR, '{"definition": "rmsnorm_h128", \n'), TR, 1, "", "invalid JSON:"),
    Case("not-utf8", write(DEF, b'{"name": "rmsnorm_h128\xff"}'), DEF, 0, "",
         "file is not UTF-8 text (invalid start byte at byte 22)"),
    Case("not-utf8-solution", write(SOL, "{\"name\": \"é\"}".encode("latin-1")), SOL, 0, "",
         "file is not UTF-8 text"),
    # (shallower files fit a FlashInfer-Trace layout and are read in place: tests/formats/test_flashinfer_trace.py)
    Case("wrong-depth-definition", write("definitions/norm/extra/rmsnorm_h64.json", {}),
         "definitions/norm/extra/rmsnorm_h64.json", 0, "", "file is at the wrong depth for definitions/; not loaded"),
    Case("wrong-depth-solution", move(SOL, "solutions/baseline/norm/rmsnorm_h128/extra/rmsnorm_h128_torch.json"),
         "solutions/baseline/norm/rmsnorm_h128/extra/rmsnorm_h128_torch.json", 0, "",
         "file is at the wrong depth for solutions/"),
    Case("wrong-extension", write("definitions/norm/notes.txt", "hello"), "definitions/norm/notes.txt", 0, "",
         "unexpected file in definitions/ (not .json); ignored", WARNING),
    Case("wrong-extension-workloads", write("workloads/norm/rmsnorm_h128.json", "{}"),
         "workloads/norm/rmsnorm_h128.json", 0, "", "unexpected file in workloads/ (not .jsonl)", WARNING),
    Case("unknown-top-level-entry", write("defintions/norm/x.json", "{}"), "defintions", 0, "",
         "unknown entry 'defintions' at the dataset root; ignored", WARNING),

    # ---- definition: schema ------------------------------------------------------------------
    Case("def-missing-required", drop(DEF, "/reference"), DEF, 1, "/reference",
         "missing required field 'reference'"),
    Case("def-missing-required-dtype", drop(DEF, "/inputs/weight/dtype"), DEF, At('"weight": {'),
         "/inputs/weight/dtype", "missing required field 'dtype'"),
    Case("def-unknown-field", rename_key(DEF, "/description", "descripton"), DEF, At('"descripton"'),
         "/descripton", "unknown field 'descripton'"),
    Case("def-unknown-field-in-tensor", put(DEF, "/inputs/input/dtyp", "float16"), DEF, At('"dtyp"'),
         "/inputs/input/dtyp", "unknown field 'dtyp'"),
    Case("def-wrong-type", put(DEF, "/constraints", "batch_size >= 1"), DEF, At('"constraints"'),
         "/constraints", "'constraints' must be a list, not a string"),
    Case("def-wrong-type-shape", put(DEF, "/inputs/weight/shape", "hidden_size"), DEF, At('"weight"', '"shape"'),
         "/inputs/weight/shape", "'shape' must be a list, not a string"),
    Case("def-bad-type-enum", put(DEF, "/type", "normalization"), DEF, 3, "/type",
         "'normalization' is not an allowed value of 'type'"),
    Case("def-bad-dtype", put(DEF, "/inputs/weight/dtype", "complex64"), DEF, At('"weight"', '"dtype"'),
         "/inputs/weight/dtype", "'complex64' is not an allowed value of 'dtype'"),
    # Short spellings (the legacy Kernel Signature's bf16, fp16 ...) are not the FlashInfer-Trace dialect either:
    # the same error as any misspelling, with the canonical name as the fix.
    Case("def-short-dtype-bf16", put(DEF, "/inputs/weight/dtype", "bf16"), DEF, At('"weight"', '"dtype"'),
         "/inputs/weight/dtype", "'bf16' is not an allowed value of 'dtype'"),
    # Any namespace is allowed (arch:hopper, fi_api:...); a tag with a space is not a tag.
    # model:<name> means models/<name>.json calls it: a tag naming no record is caught (the guide's other direction).
    Case("def-model-tag-without-record", put(DEF, "/tags/1", "model:test-modle"), DEF, At('"model:test-modle"'),
         "/tags/1", "tagged model:test-modle but the dataset has no calling record models/test-modle.json"),
    Case("def-bad-tag-namespace", put(DEF, "/tags/1", "arch: hopper"), DEF, At('"arch: hopper"'), "/tags/1",
         "'arch: hopper' is not a valid value of item 1 of 'tags'"),
    Case("def-bad-known-tag-value", put(DEF, "/tags/1", "stage:(decode)"), DEF, At('"stage:(decode)"'), "/tags/1",
         "the value of a stage: tag must be letters, digits"),
    Case("def-bare-tag", put(DEF, "/tags/1", "hopper"), DEF, At('"hopper"'), "/tags/1", "tag 'hopper' has no namespace",
         WARNING),
    Case("def-duplicate-tags", put(DEF, "/tags/2", "status:verified"), DEF, At('"tags"'), "/tags",
         "'tags' has duplicate entries"),
    Case("def-two-status-tags", put(DEF, "/tags/2", "status:draft"), DEF, At('"tags"'), "/tags",
         "more than one status tag: verified, draft"),
    Case("def-bad-axis-type", put(DEF, "/axes/batch_size/type", "variable"), DEF, At('"batch_size": {', '"type"'),
         "/axes/batch_size/type", "'variable' is not an allowed value of 'type'"),
    Case("def-const-without-value", drop(DEF, "/axes/hidden_size/value"), DEF, At('"hidden_size": {'),
         "/axes/hidden_size/value", "missing required field 'value'"),
    Case("def-const-non-integer", put(DEF, "/axes/hidden_size/value", 128.5), DEF, At('"value"'),
         "/axes/hidden_size/value", "'value' must be an integer, not a number"),
    Case("def-const-zero", put(DEF, "/axes/hidden_size/value", 0), DEF, At('"value"'),
         "/axes/hidden_size/value", "'value' is 0: less than the minimum of 1"),
    Case("def-var-axis-with-value", put(DEF, "/axes/batch_size/value", 4), DEF, At('"batch_size": {', '"value"'),
         "/axes/batch_size/value", "unknown field 'value'"),
    Case("def-axis-name-not-identifier", rename_key(DEF, "/axes/batch_size", "batch-size"), DEF,
         At('"batch-size": {'), "/axes/batch-size", "name 'batch-size' is not allowed in 'axes'"),
    Case("def-input-name-not-identifier", rename_key(DEF, "/inputs/eps", "1eps"), DEF, At('"1eps"'),
         "/inputs/1eps", "name '1eps' is not allowed in 'inputs'"),
    Case("def-empty-outputs", put(DEF, "/outputs", {}), DEF, At('"outputs"'), "/outputs",
         "'outputs' must not be empty"),
    Case("def-bad-name-pattern", put(DEF, "/name", "rms/norm"), DEF, 2, "/name",
         "'rms/norm' is not a valid value of 'name'"),

    # ---- definition: semantics ---------------------------------------------------------------
    Case("def-name-vs-file", put(DEF, "/name", "rmsnorm_h128_v2"), DEF, 2, "/name",
         "name 'rmsnorm_h128_v2' does not match the file name 'rmsnorm_h128.json'"),
    Case("def-type-vs-folder", put(DEF, "/type", "activation"), DEF, 3, "/type",
         "type 'activation' does not match the folder definitions/norm/"),
    Case("def-naming-convention", second_definition("RmsNorm_h256"), "definitions/norm/RmsNorm_h256.json", 2,
         "/name", "name 'RmsNorm_h256' does not follow the convention {type}_{props}_{constants}"),
    Case("def-name-hides-constant", second_definition("rmsnorm_big"), "definitions/norm/rmsnorm_big.json", 2,
         "/name", "name 'rmsnorm_big' does not show the constant axes hidden_size=256", WARNING),
    Case("def-undeclared-axis", put(DEF, "/inputs/weight/shape/0", "hiden_size"), DEF, At('"hiden_size"'),
         "/inputs/weight/shape/0", "axis 'hiden_size' of input 'weight' is not declared"),
    Case("def-undeclared-output-axis", put(DEF, "/outputs/output/shape/0", "tokens"), DEF, At('"tokens"'),
         "/outputs/output/shape/0", "axis 'tokens' of output 'output' is not declared"),
    Case("def-bad-parent", put(DEF, "/axes/batch_size/parent", "tokens"), DEF, At('"parent"'),
         "/axes/batch_size/parent", "parent 'tokens' of axis 'batch_size' is not declared"),
    Case("def-own-parent", put(DEF, "/axes/batch_size/parent", "batch_size"), DEF, At('"parent"'),
         "/axes/batch_size/parent", "axis 'batch_size' is its own parent"),
    Case("def-axis-unused", put(DEF, "/axes/num_heads", {"type": "const", "value": 128}), DEF, At('"num_heads"'),
         "/axes/num_heads", "axis 'num_heads' is used by no tensor, constraint or child axis", WARNING),
    Case("def-input-output-clash", put(DEF, "/outputs/weight", {"shape": ["hidden_size"], "dtype": "float16"}),
         DEF, At('"outputs"', '"weight"'), "/outputs/weight", "'weight' is both an input and an output"),
    Case("def-constraint-syntax", put(DEF, "/constraints/0", "batch_size >="), DEF, At('"batch_size >="'),
         "/constraints/0", "constraint 'batch_size >=' is not a Python expression"),
    Case("def-constraint-unknown-name", put(DEF, "/constraints/0", "batch_sz >= 1"), DEF, At('"batch_sz >= 1"'),
         "/constraints/0", "constraint 'batch_sz >= 1' names 'batch_sz', which is neither an axis nor an input"),
    Case("def-constraint-call", put(DEF, "/constraints/0", "__import__('os') == 1"), DEF, At('__import__'),
         "/constraints/0", "calls a function other than len/min/max/abs"),
    Case("def-reference-syntax", with_reference("def run(input, weight, eps)\n    return {}\n"), DEF,
         At('"reference"'), "/reference", "reference does not parse: expected ':' (line 1 of the reference)"),
    Case("def-reference-no-run", with_reference(REF.replace("def run(", "def forward(")), DEF, At('"reference"'),
         "/reference", "reference defines no top-level function 'run'"),
    Case("def-reference-wrong-params", with_reference(REF.replace("run(input, weight, eps)", "run(input, eps, weight)")),
         DEF, At('"reference"'), "/reference", "reference run(input, eps, weight) does not take the inputs in order"),
    Case("def-reference-missing-output", with_reference(REF.replace('{"output": output}', '{"out": output}')),
         DEF, At('"reference"'), "/reference",
         "reference run returns a dict that does not hold exactly the outputs (missing output; unknown out)"),
    Case("def-reference-functional", with_reference("import torch.nn.functional as F\n" + REF), DEF,
         At('"reference"'), "/reference", "reference uses torch.nn.functional (line 1 of the reference)", WARNING),
    Case("def-duplicate-name", second_definition("rmsnorm_h128", type="misc"), DEF, 2, "/name",
         "duplicate definition name 'rmsnorm_h128' (first defined in definitions/misc/rmsnorm_h128.json:2)"),

    # ---- workload ------------------------------------------------------------------------------
    Case("wl-bad-input-type", put(WL, "/0/workload/inputs/input/type", "randn"), WL, 1,
         "/workload/inputs/input/type", "'randn' is not an allowed value of 'type'"),
    Case("wl-scalar-without-value", drop(WL, "/0/workload/inputs/eps/value"), WL, 1,
         "/workload/inputs/eps/value", "missing required field 'value'"),
    Case("wl-scalar-value-string", put(WL, "/0/workload/inputs/eps/value", "1e-5"), WL, 1,
         "/workload/inputs/eps/value", "'value' must be a number or true or false, not a string"),
    Case("wl-safetensors-without-key", drop(WL, "/1/workload/inputs/input/tensor_key"), WL, 2,
         "/workload/inputs/input/tensor_key", "missing required field 'tensor_key'"),
    Case("wl-random-with-extra", put(WL, "/0/workload/inputs/weight/value", 1), WL, 1,
         "/workload/inputs/weight/value", "unknown field 'value'"),
    Case("wl-bad-uuid", put(WL, "/0/workload/uuid", "wl 0001"), WL, 1, "/workload/uuid",
         "'wl 0001' is not a valid value of 'uuid'"),
    Case("wl-axis-not-integer", put(WL, "/0/workload/axes/batch_size", "4"), WL, 1, "/workload/axes/batch_size",
         "'batch_size' must be an integer, not a string"),
    Case("wl-orphan", put(WL, "/0/definition", "rmsnorm_h64"), WL, 1, "/definition",
         "workload of unknown definition 'rmsnorm_h64' (orphan)"),
    Case("wl-wrong-file", write("workloads/norm/rmsnorm.jsonl", [{**WORKLOAD, "workload": {**WORKLOAD["workload"],
                                                                                      "uuid": "wl-0003"}}]),
         "workloads/norm/rmsnorm.jsonl", 1, "/definition",
         "workload of 'rmsnorm_h128' is stored in workloads/norm/rmsnorm.jsonl"),
    Case("wl-unknown-axis", put(WL, "/0/workload/axes/seq_len", 3), WL, 1, "/workload/axes/seq_len",
         "'seq_len' is not an axis of rmsnorm_h128"),
    Case("wl-const-axis-bound", put(WL, "/0/workload/axes/hidden_size", 128), WL, 1, "/workload/axes/hidden_size",
         "'hidden_size' is a const axis (128); workloads bind only var axes"),
    Case("wl-missing-var-axis", put(WL, "/0/workload/axes", {}), WL, 1, "/workload/axes",
         "var axes not bound: batch_size"),
    Case("wl-non-positive-axis", put(WL, "/1/workload/axes/batch_size", 0), WL, 2, "/workload/axes/batch_size",
         "axis 'batch_size' is 0; it must be a positive integer"),
    Case("wl-constraint-broken", put(DEF, "/constraints/0", "batch_size >= 3"), WL, 2, "/workload/axes",
         "axes break the constraint 'batch_size >= 3' of rmsnorm_h128 (batch_size=2)"),
    Case("wl-missing-input", drop(WL, "/0/workload/inputs/eps"), WL, 1, "/workload/inputs",
         "input 'eps' has no entry"),
    Case("wl-unknown-input", put(WL, "/0/workload/inputs/bias", {"type": "random"}), WL, 1,
         "/workload/inputs/bias", "'bias' is not an input of rmsnorm_h128"),
    Case("wl-scalar-for-tensor", put(WL, "/0/workload/inputs/weight", {"type": "scalar", "value": 1.0}), WL, 1,
         "/workload/inputs/weight", "input 'weight' has shape ['hidden_size'], so it cannot be a scalar"),
    Case("wl-scalar-float16-range", chain(put(DEF, "/inputs/eps/dtype", "float16"),
                                          put(WL, "/0/workload/inputs/eps/value", 70000)),
         WL, 1, "/workload/inputs/eps/value", "scalar 'eps': 70000 is outside the float16 range ±65504"),
    Case("wl-scalar-int8-range", chain(put(DEF, "/inputs/eps/dtype", "int8"),
                                       put(WL, "/0/workload/inputs/eps/value", 200)),
         WL, 1, "/workload/inputs/eps/value", "scalar 'eps': 200 is outside the int8 range [-128, 127]"),
    Case("wl-scalar-int-not-integer", put(DEF, "/inputs/eps/dtype", "int32"),
         WL, 2, "/workload/inputs/eps/value", "scalar 'eps': 1e-06 is not an integer"),
    Case("wl-scalar-bool-given-1", chain(put(DEF, "/inputs/eps/dtype", "bool"),
                                         put(WL, "/0/workload/inputs/eps/value", 1)),
         WL, 1, "/workload/inputs/eps/value", "scalar 'eps': 1 is not true or false"),
    Case("wl-scalar-bool-for-float", put(WL, "/0/workload/inputs/eps/value", True),
         WL, 1, "/workload/inputs/eps/value", "scalar 'eps': True is a boolean, but the dtype is float32"),
    Case("wl-duplicate-uuid", put(WL, "/1/workload/uuid", "wl-0001"), WL, 2, "/workload/uuid",
         f"workload uuid 'wl-0001' is used twice (first at {WL}:1)"),
    Case("wl-blob-missing", delete(BLOB), WL, 2, "/workload/inputs/input/path",
         f"blob {BLOB} does not exist"),
    Case("wl-blob-dotdot", put(WL, "/1/workload/inputs/input/path", "blob/../../secret.safetensors"), WL, 2,
         "/workload/inputs/input/path", "blob path 'blob/../../secret.safetensors' contains '..'"),
    Case("wl-blob-absolute", put(WL, "/1/workload/inputs/input/path", "/tmp/x.safetensors"), WL, 2,
         "/workload/inputs/input/path", "blob path '/tmp/x.safetensors' is absolute"),
    Case("wl-blob-missing-key", put(WL, "/1/workload/inputs/input/tensor_key", "x"), WL, 2,
         "/workload/inputs/input/tensor_key", f"blob {BLOB} has no tensor 'x'"),
    Case("wl-blob-wrong-shape", write(BLOB, safetensors_bytes({"input": ("F16", [2, 64])})), WL, 2,
         "/workload/inputs/input",
         "blob tensor 'input' has shape [2, 64], but input 'input' needs [2, 128] (batch_size, hidden_size)"),
    Case("wl-blob-wrong-dtype", write(BLOB, safetensors_bytes({"input": ("F32", [2, 128])})), WL, 2,
         "/workload/inputs/input", "blob tensor 'input' has dtype float32, but input 'input' is float16"),
    Case("wl-blob-not-safetensors", write(BLOB, b"abc"), WL, 2, "/workload/inputs/input/path",
         f"blob {BLOB} is too short to be a safetensors file"),
    Case("wl-blob-bad-header", write(BLOB, safetensors_bytes({})[:8] + b"x" * 2), WL, 2,
         "/workload/inputs/input/path", f"blob {BLOB} cannot be read as safetensors"),

    # ---- solution ------------------------------------------------------------------------------
    Case("sol-bad-language", put(SOL, "/spec/language", "rust"), SOL, At('"language"'), "/spec/language",
         "'rust' is not an allowed value of 'language'"),
    Case("sol-bad-entry-point", put(SOL, "/spec/entry_point", "main.py:run"), SOL, At('"entry_point"'),
         "/spec/entry_point", "'main.py:run' is not a valid value of 'entry_point'"),
    Case("sol-empty-target-hardware", put(SOL, "/spec/target_hardware", []), SOL, At('"target_hardware"'),
         "/spec/target_hardware", "'target_hardware' must not be empty"),
    Case("sol-missing-sources", drop(SOL, "/sources"), SOL, 1, "/sources", "missing required field 'sources'"),
    # An author folder named apart from the author is an error: the folder is who it runs and ranks as (issue 38).
    Case("sol-author-folder-mismatch", put(SOL, "/author", "someone"), SOL, 4, "/author",
         "solution by 'someone' is stored in the folder solutions/baseline/", ERROR),
    Case("sol-location-mismatch", move(SOL, "solutions/baseline/norm/rmsnorm_h64/rmsnorm_h128_torch.json"),
         "solutions/baseline/norm/rmsnorm_h64/rmsnorm_h128_torch.json", 3, "/definition",
         "solution is stored at solutions/baseline/norm/rmsnorm_h64/rmsnorm_h128_torch.json, but its author, "
         "definition and name place it at " + SOL),
    Case("sol-orphan", put(SOL, "/definition", "rmsnorm_h64"), SOL, 3, "/definition",
         "solution of unknown definition 'rmsnorm_h64' (orphan)"),
    Case("sol-entry-file-missing", put(SOL, "/spec/entry_point", "kernel.py::run"), SOL, At('"entry_point"'),
         "/spec/entry_point", "entry file 'kernel.py' is not among the sources"),
    Case("sol-syntax-error", with_solution_code("import torch\n\ndef run(input, weight, eps)\n    pass\n"), SOL,
         At('"content"'), "/sources/0/content", "main.py does not parse: expected ':' (line 3)"),
    Case("sol-missing-entry-function", put(SOL, "/spec/entry_point", "main.py::forward"), SOL, At('"entry_point"'),
         "/spec/entry_point", "main.py defines no top-level function 'forward'"),
    Case("sol-wrong-param-count", with_solution_code(SRC.replace("run(input, weight, eps)", "run(input, weight)")),
         SOL, At('"entry_point"'), "/spec/entry_point",
         "run(input, weight) takes 2 parameters; a value-returning (inputs only) solution of rmsnorm_h128 "
         "takes 3: (input, weight, eps)"),
    Case("sol-dps-signature-without-flag",
         with_solution_code(SRC.replace("run(input, weight, eps)", "run(input, weight, eps, output)")),
         SOL, At('"entry_point"'), "/spec/entry_point",
         "run(input, weight, eps, output) takes 4 parameters; a value-returning (inputs only) solution"),
    Case("sol-dps-flag-without-outputs", with_solution_code(SRC, destination_passing_style=True),
         SOL, At('"entry_point"'), "/spec/entry_point",
         "run(input, weight, eps) takes 3 parameters; a destination-passing (inputs, then outputs) solution of "
         "rmsnorm_h128 takes 4: (input, weight, eps, output)"),
    Case("sol-param-names-differ", with_solution_code(SRC.replace("run(input, weight, eps)", "run(x, w, eps)")),
         SOL, At('"entry_point"'), "/spec/entry_point",
         "run names its parameters differently from the definition: 'x' for 'input', 'w' for 'weight'", WARNING),
    Case("sol-dotdot-source", put(SOL, "/sources/-", {"path": "../evil.py", "content": ""}), SOL,
         At('"../evil.py"'), "/sources/1/path", "source path '../evil.py' contains '..'"),
    Case("sol-absolute-source", put(SOL, "/sources/-", {"path": "/etc/evil.py", "content": ""}), SOL,
         At('"/etc/evil.py"'), "/sources/1/path", "source path '/etc/evil.py' is absolute"),
    Case("sol-backslash-source", put(SOL, "/sources/-", {"path": "kernels\\a.py", "content": ""}), SOL,
         At('"kernels\\\\a.py"'), "/sources/1/path", "source path 'kernels\\\\a.py' uses '\\'"),
    Case("sol-duplicate-source", put(SOL, "/sources/-", {"path": "main.py", "content": ""}), SOL,
         At('"path"', '"path"'), "/sources/1/path", "source path 'main.py' appears twice"),
    Case("sol-cuda-missing-function",
         chain(put(SOL, "/spec/language", "cuda"), put(SOL, "/spec/entry_point", "kernel.cu::rmsnorm"),
               put(SOL, "/sources/0", {"path": "kernel.cu", "content": "__global__ void other(float* x) {}\n"})),
         SOL, At('"content"'), "/sources/0/content", "entry function 'rmsnorm' is not found in kernel.cu"),
    Case("sol-duplicate-name",
         write("solutions/other/norm/rmsnorm_h128/rmsnorm_h128_torch.json", {**SOLUTION, "author": "other"}),
         "solutions/other/norm/rmsnorm_h128/rmsnorm_h128_torch.json", 2, "/name",
         f"duplicate solution name 'rmsnorm_h128_torch' (first defined in {SOL}:2)"),

    # ---- trace -----------------------------------------------------------------------------------
    Case("tr-bad-status", put(TR, "/0/evaluation/status", "PASS"), TR, 1, "/evaluation/status",
         "'PASS' is not an allowed value of 'status'"),
    Case("tr-negative-latency", put(TR, "/0/evaluation/performance/latency_ms", -1.0), TR, 1,
         "/evaluation/performance/latency_ms", "'latency_ms' is -1.0: less than or equal to the minimum of 0"),
    Case("tr-missing-environment", drop(TR, "/0/evaluation/environment"), TR, 1, "/evaluation/environment",
         "missing required field 'environment'"),
    Case("tr-bad-timestamp", put(TR, "/0/evaluation/timestamp", "2026-11-21 10:00"), TR, 1, "/evaluation/timestamp",
         "'2026-11-21 10:00' is not a valid value of 'timestamp'"),
    Case("tr-negative-error", put(TR, "/0/evaluation/correctness/max_absolute_error", -0.5), TR, 1,
         "/evaluation/correctness/max_absolute_error", "'max_absolute_error' is -0.5"),
    Case("tr-orphan", put(TR, "/0/definition", "rmsnorm_h64"), TR, 1, "/definition",
         "trace of unknown definition 'rmsnorm_h64' (orphan)"),
    Case("tr-unknown-solution", put(TR, "/0/solution", "rmsnorm_h128_triton"), TR, 1, "/solution",
         "trace of unknown solution 'rmsnorm_h128_triton'"),
    Case("tr-unknown-workload", put(TR, "/0/workload/uuid", "wl-9999"), TR, 1, "/workload/uuid",
         "workload 'wl-9999' is not a workload of rmsnorm_h128"),
    Case("tr-workload-axes-differ", put(TR, "/0/workload/axes/batch_size", 8), TR, 1, "/workload/axes",
         "axes differ from those of workload 'wl-0001' ({'batch_size': 4})"),
    Case("tr-solution-of-other-definition",
         chain(second_definition("rmsnorm_h256"),
               write("solutions/baseline/norm/rmsnorm_h256/rmsnorm_h256_torch.json",
                     {**SOLUTION, "name": "rmsnorm_h256_torch", "definition": "rmsnorm_h256"}),
               put(TR, "/0/solution", "rmsnorm_h256_torch")),
         TR, 1, "/solution", "solution 'rmsnorm_h256_torch' implements 'rmsnorm_h256', not 'rmsnorm_h128'"),
    Case("tr-author-folder-mismatch", move(TR, "traces/other/norm/rmsnorm_h128.jsonl"),
         "traces/other/norm/rmsnorm_h128.jsonl", 1, "/solution",
         "trace of rmsnorm_h128_torch by 'baseline' is stored in the folder traces/other/", WARNING),
    Case("tr-wrong-file", move(TR, "traces/baseline/gemm/rmsnorm_h128.jsonl"), "traces/baseline/gemm/rmsnorm_h128.jsonl",
         1, "/definition", "trace of rmsnorm_h128_torch by baseline is stored in traces/baseline/gemm/rmsnorm_h128.jsonl"),
    Case("tr-passed-without-performance", put(TR, "/0/evaluation/performance", None), TR, 1,
         "/evaluation/performance", "status PASSED requires evaluation.performance"),
    Case("tr-incorrect-with-performance", put(TR, "/0/evaluation/status", "INCORRECT_NUMERICAL"), TR, 1,
         "/evaluation/performance", "status INCORRECT_NUMERICAL must not carry evaluation.performance"),
    Case("tr-runtime-error-with-correctness",
         chain(put(TR, "/0/evaluation/status", "RUNTIME_ERROR"), drop(TR, "/0/evaluation/performance")), TR, 1,
         "/evaluation/correctness", "status RUNTIME_ERROR must not carry evaluation.correctness"),
    Case("tr-speedup-inconsistent", put(TR, "/0/evaluation/performance/speedup_factor", 3.0), TR, 1,
         "/evaluation/performance/speedup_factor",
         "speedup_factor 3 is not reference_latency_ms / latency_ms = 2.5"),
    # A hand-written trace that is self-consistent (speedup = reference / latency) but faster than the machine
    # can be: the workload's speed-of-light time on test_cpu is 4.6e-05 ms.
    Case("tr-latency-below-speed-of-light",
         chain(put(TR, "/0/evaluation/performance/latency_ms", 1e-06),
               put(TR, "/0/evaluation/performance/speedup_factor", 0.05 / 1e-06)), TR, 1,
         "/evaluation/performance/latency_ms",
         "latency_ms 1e-06 is below this workload's speed-of-light time on test_cpu, 4.616e-05 ms"),
    # Numbers no measurement gives: a call past the bench's timeout, statistics of one sample set out of order,
    # Infinity (JSON allows it in Python; one such number must never make the dataset unreadable).
    Case("tr-latency-past-timeout",
         chain(put(TR, "/0/evaluation/performance/latency_ms", 5e6),
               put(TR, "/0/evaluation/performance/speedup_factor", 0.05 / 5e6)), TR, 1,
         "/evaluation/performance/latency_ms", "latency_ms 5e+06 is past the bench's timeout of 300 s"),
    Case("tr-min-above-median-above-max",
         edit(TR, lambda lines: [{**lines[0], "evaluation": {**lines[0]["evaluation"], "performance": {
             **lines[0]["evaluation"]["performance"], "min_ms": 0.03, "max_ms": 0.01}}}]), TR, 1,
         "/evaluation/performance/latency_ms", "latency_ms 0.02 is below min_ms 0.03"),
    Case("tr-p20-above-p80",
         edit(TR, lambda lines: [{**lines[0], "evaluation": {**lines[0]["evaluation"], "performance": {
             **lines[0]["evaluation"]["performance"], "p20_ms": 0.019, "p80_ms": 0.018}}}]), TR, 1,
         "/evaluation/performance/p80_ms", "p80_ms 0.018 is below latency_ms 0.02"),
    Case("tr-latency-below-any-call", text_replace(TR, '"latency_ms": 0.02', '"latency_ms": 5e-324'), TR, 1,
         "/evaluation/performance/latency_ms", "latency_ms 4.94066e-324 is below 0.0001 ms: no kernel call completes"),
    Case("tr-latency-overflows", text_replace(TR, '"latency_ms": 0.02', '"latency_ms": 1e400'), TR, 1,
         "/evaluation/performance/latency_ms", "latency_ms is inf: a measurement is a finite number"),
    # Provenance: measured means by this project's bench, which names its version and run.
    Case("tr-provenance-measured-by-other-tool",
         put(TR, "/0/evaluation/environment/provenance", {"kind": "measured", "tool": "my-script", "version": "1",
                                                          "run_id": "r1"}), TR, 1,
         "/evaluation/environment/provenance/tool",
         "provenance 'measured' names the tool 'my-script': measured means by kerneltrace bench"),
    Case("tr-provenance-measured-without-run",
         put(TR, "/0/evaluation/environment/provenance", {"kind": "measured", "tool": "kerneltrace bench",
                                                          "version": "0.1.0"}), TR, 1,
         "/evaluation/environment/provenance/run_id", "missing required field 'run_id'"),
    Case("tr-provenance-bad-kind", put(TR, "/0/evaluation/environment/provenance", {"kind": "guessed"}), TR, 1,
         "/evaluation/environment/provenance/kind", "'guessed' is not an allowed value of 'kind'"),
    # A hardware name with no spec (the bench names an unknown CPU after its model): said once per file.
    Case("tr-unknown-hardware",
         chain(put(TR, "/0/evaluation/environment/hardware", "CPU_Intel_R_Xeon_R_Processor_2T"),
               edit(TR, lambda lines: lines + [{**lines[0], "workload": {**lines[0]["workload"]}}])), TR, 1,
         "/evaluation/environment/hardware",
         "hardware 'CPU_Intel_R_Xeon_R_Processor_2T' names no hardware spec", WARNING),

    # ---- kernel calling record -----------------------------------------------------------------
    Case("model-unknown-kernel", put(MODEL, "/kernels/0/id", "rmsnorm_h64"), MODEL, At('"id"'), "/kernels/0/id",
         "kernel 'rmsnorm_h64' names no definition: it counts as not covered", severity=WARNING),
    Case("model-bad-framework", put(MODEL, "/framework", "sglang"), MODEL, At('"framework"'), "/framework",
         "'sglang' is not an allowed value of 'framework'"),
    Case("model-count-zero", put(MODEL, "/kernels/0/count", 0), MODEL, At('"count"'), "/kernels/0/count",
         "'count' is 0: less than the minimum of 1"),
    Case("model-bad-stage", put(MODEL, "/kernels/0/stage", "both"), MODEL, At('"stage"'), "/kernels/0/stage",
         "'both' is not an allowed value of 'stage'"),
    Case("model-kernel-not-object", put(MODEL, "/kernels/0", "rmsnorm_h128"), MODEL, At('"rmsnorm_h128"'),
         "/kernels/0", "item 0 of 'kernels' must be an object, not a string"),

    # ---- agent trace ---------------------------------------------------------------------------
    Case("agent-unknown-solution", move(AT, "agent_traces/baseline/rmsnorm_h128_cuda.json"),
         "agent_traces/baseline/rmsnorm_h128_cuda.json", 1, "", "agent trace of unknown solution 'rmsnorm_h128_cuda'"),
    Case("agent-wrong-author-folder", move(AT, "agent_traces/someone/rmsnorm_h128_torch.json"),
         "agent_traces/someone/rmsnorm_h128_torch.json", 1, "",
         "solution 'rmsnorm_h128_torch' is by 'baseline', but the agent trace is under agent_traces/someone/"),
    Case("agent-bad-role", put(AT, "/conversation/1/role", "bot"), AT, At('"bot"'), "/conversation/1/role",
         "'bot' is not an allowed value of 'role'"),
    Case("agent-solution-vs-file", put(AT, "/solution", "rmsnorm_h128_fast"), AT, At('"solution"'), "/solution",
         "agent trace names solution 'rmsnorm_h128_fast' but is stored as rmsnorm_h128_torch.json"),
    Case("agent-list-bad-entry-type", write(AT, [{"type": "llm_call", "model": "x"}]), AT, At('"llm_call"'),
         "/0/type", "'llm_call' is not an allowed value of 'type'"),
    Case("agent-tool-call-missing-result", write(AT, [{"type": "tool_call", "tool_name": "x", "arguments": {}}]),
         AT, At("{"), "/0/result", "missing required field 'result'"),

    # ---- hardware ------------------------------------------------------------------------------
    Case("hw-name-vs-file", put(HW, "/name", "test_gpu"), HW, 2, "/name",
         "hardware name 'test_gpu' does not match the file name test_cpu.json"),
    Case("hw-missing-source", drop(HW, "/source"), HW, 1, "/source", "missing required field 'source'"),
    Case("hw-bad-peak-dtype", put(HW, "/peak_tflops", {"fp32": 1.0}), HW, At('"fp32"'), "/peak_tflops/fp32",
         "name 'fp32' is not allowed in 'peak_tflops'"),
    Case("hw-zero-bandwidth", put(HW, "/memory_bandwidth_gb_s", 0), HW, At('"memory_bandwidth_gb_s"'),
         "/memory_bandwidth_gb_s", "'memory_bandwidth_gb_s' is 0: less than or equal to the minimum of 0"),
    Case("hw-bad-kind", put(HW, "/kind", "tpu"), HW, At('"kind"'), "/kind", "'tpu' is not an allowed value of 'kind'"),

    # ---- Einsum cascade --------------------------------------------------------------------------
    Case("einsum-unknown-definition", move(EIN, "einsums/norm/rmsnorm_h64.yaml"), "einsums/norm/rmsnorm_h64.yaml",
         1, "", "Einsum cascade of unknown definition 'rmsnorm_h64'"),
    Case("einsum-wrong-folder", move(EIN, "einsums/gemm/rmsnorm_h128.yaml"), "einsums/gemm/rmsnorm_h128.yaml", 1, "",
         "Einsum cascade of rmsnorm_h128 is under einsums/gemm/"),
    Case("einsum-jinja-syntax", text_replace(EIN, "{{ hidden_size }}", "{{ hidden_size + }}"), EIN, 2, "/workload/rank_sizes/H",
         "template does not parse: unexpected 'end of print statement'"),
    Case("einsum-unknown-name", text_replace(EIN, "{{ hidden_size }}", "{{ hiden_size }}"), EIN, 2, "/workload/rank_sizes/H",
         "template uses an unknown name: 'hiden_size' is undefined"),
    Case("einsum-invalid-yaml", text_replace(EIN, "  - name: Square\n", "  - name: Square\n   bad: [\n"), EIN, At("bad: ["), "",
         "rendered template is not valid YAML"),
    Case("einsum-schema-missing-name", text_replace(EIN, "  - name: Square\n    tensor_accesses:",
                                                    "  - tensor_accesses:"), EIN, 4, "/workload/einsums/0/name",
         "missing required field 'name'"),
    Case("einsum-schema-bad-type", text_replace(EIN, "output: true", "output: yes please"), EIN, 7,
         "/workload/einsums/0/tensor_accesses/1/output", "'output' must be true or false, not a string"),
    Case("einsum-schema-unknown-field", text_replace(EIN, "  einsums:", "  einsum:"), EIN, 3, "/workload/einsum",
         "unknown field 'einsum'"),
    Case("einsum-unknown-rank", text_replace(EIN, "{name: weight, projection: [h]}", "{name: weight, projection: [w]}"),
         EIN, At("[w]"), "/workload/einsums/0/tensor_accesses/2/projection/0",
         "rank 'W' of tensor 'weight' (Einsum 'Square') has no size"),
    Case("einsum-boolean-rank-name", text_replace(EIN, "H: {{ hidden_size }}}", "H: {{ hidden_size }}, ON: 2}"), EIN,
         At("rank_sizes"), "/workload/rank_sizes",
         "a key of this mapping is read by YAML as the boolean true, not as a name"),
    Case("einsum-missing-input", text_replace(EIN, "    - {name: eps, projection: []}\n", ""), EIN, At("einsums:"),
         "/workload/einsums", "input 'eps' of rmsnorm_h128 appears in no Einsum"),
    Case("einsum-rank-size-vs-shape", text_replace(EIN, "H: {{ hidden_size }}", "H: 64"), EIN, At("{name: input"),
         "/workload/einsums/0/tensor_accesses/0/projection",
         "rank 'H' of tensor 'input' has size 64, but dimension 1 of 'input' is hidden_size = 128"),
    Case("einsum-rank-count-vs-shape", text_replace(EIN, "{name: weight, projection: [h]}",
                                                    "{name: weight, projection: [b, h]}"),
         EIN, At("{name: weight"), "/workload/einsums/0/tensor_accesses/2/projection",
         "tensor 'weight' is projected into 2 rank(s) [B, H], but rmsnorm_h128 gives it 1 dimension(s) [hidden_size]"),
    Case("einsum-expected-count", text_replace(EIN, "    - {name: eps, projection: []}\n",
                                               "    - {name: eps, projection: []}\nrenames:\n  einsums:\n"
                                               "  - name: default\n    tensor_accesses:\n"
                                               "    - {name: weight, source: Inputs, expected_count: 1}\n"),
         EIN, At("source: Inputs"), "/renames/einsums/0/tensor_accesses/0",
         "rename 'weight' of Einsum 'Square': 'Inputs' gives 3 tensors (eps, input, weight), expected_count is 1"),
    Case("einsum-bad-set-expression", text_replace(EIN, "    - {name: eps, projection: []}\n",
                                                   "    - {name: eps, projection: []}\n    renames: {weight: Inputs &}\n"),
         EIN, At("weight: Inputs &"), "/workload/einsums/0/renames/weight",
         "rename 'weight' of Einsum 'Square': 'Inputs &' is incomplete"),
    Case("einsum-unbounded-variable", text_replace(EIN, "{name: weight, projection: [h]}",
                                                   "{name: weight, projection: {H: h + x}}"),
         EIN, At("- name: Square"), "/workload/einsums/0",
         "rank variable 'x' of Einsum 'Square' has no size: it only appears inside expressions (in weight)"),
    Case("einsum-expression-in-list", text_replace(EIN, "{name: weight, projection: [h]}",
                                                   "{name: weight, projection: [h + 1]}"),
         EIN, At("{name: weight"), "/workload/einsums/0/tensor_accesses/2/projection/0",
         "projection entry 'h + 1' of tensor 'weight' is not a single rank variable"),
    Case("einsum-bad-index-expression", text_replace(EIN, "{name: weight, projection: [h]}",
                                                     "{name: weight, projection: {H: h ** 2}}"),
         EIN, At("{name: weight"), "/workload/einsums/0/tensor_accesses/2/projection/H",
         "index 'h ** 2' of rank 'H' of tensor 'weight' uses 'h ** 2'"),
    Case("einsum-writes-an-input", text_replace(EIN, "{name: weight, projection: [h]}",
                                                "{name: weight, projection: [h], output: true}"),
         EIN, At("{name: weight"), "/workload/einsums/0/tensor_accesses/2/output",
         "Einsum 'Square' writes 'weight', an input of rmsnorm_h128"),
    Case("einsum-reads-unknown-tensor", text_replace(EIN, "    - {name: eps, projection: []}\n",
                                                     "    - {name: eps, projection: []}\n    - {name: wieght, projection: [h]}\n"),
         EIN, At("wieght"), "/workload/einsums/0/tensor_accesses/4/name",
         "tensor 'wieght' is read but no Einsum writes it, and rmsnorm_h128 has no input 'wieght'"),
    Case("einsum-bad-iteration-space", text_replace(EIN, "  einsums:\n", "  iteration_space_shape: {h: 0 <= h <}\n  einsums:\n"),
         EIN, At("iteration_space_shape"), "/workload/iteration_space_shape/h",
         "iteration_space_shape of 'h': '0 <= h <' is not a condition"),
    Case("einsum-bits-vs-dtype", text_replace(EIN, "  einsums:\n", "  bits_per_value: {All: 8}\n  einsums:\n"),
         EIN, At("bits_per_value"), "/workload/bits_per_value",
         "'input' has 8 bits per value (bits_per_value All), but its dtype float16 has 16", WARNING),
    Case("einsum-duplicate-name", text_replace(EIN, "    - {name: eps, projection: []}\n",
                                               "    - {name: eps, projection: []}\n  - name: Square\n    tensor_accesses:\n"
                                               "    - {name: input, projection: [b, h]}\n    - {name: x, projection: [b, h], output: true}\n"),
         EIN, At("- name: Square", "- name: Square"), "/workload/einsums/1/name",
         "Einsum name 'Square' is used twice (first at einsums[0])"),
]


def _ids(cases):
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return ids


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_bad_input(tmp_path: Path, case: Case) -> None:
    root = write_dataset(tmp_path / "ds")
    case.breaks(root)
    diags = validate_path(root)
    listing = "\n".join(d.format_human() for d in diags)
    matches = [d for d in diags if d.file == case.file and d.pointer == case.pointer
               and d.severity == case.severity and case.message in d.message]
    assert len(matches) == 1, f"expected one {case.severity} at {case.file} {case.pointer!r}: {case.message!r}\n" \
                              f"got:\n{listing}"
    d = matches[0]
    line = case.line.resolve((root / case.file).read_text(encoding="utf-8")) if isinstance(case.line, At) else case.line
    assert d.line == line, f"line {d.line}, expected {line}\n{listing}"
    assert d.hint.strip(), f"no hint for {d}"


def test_enough_cases() -> None:
    assert len(CASES) >= 70
    kinds = {c.file.split("/")[0] for c in CASES}
    assert {"definitions", "workloads", "solutions", "traces", "models", "agent_traces", "hardware",
            "einsums"} <= kinds


def test_hints_name_the_fix(tmp_path: Path) -> None:
    """Spot checks of hints that matter: 'did you mean', the DPS flag, allowed values."""
    cases = {c.id: c for c in CASES}

    def diag(case_id: str):
        root = write_dataset(tmp_path / case_id)
        c = cases[case_id]
        c.breaks(root)
        return next(d for d in validate_path(root) if d.pointer == c.pointer and c.message in d.message)

    assert diag("def-unknown-field").hint.startswith("did you mean 'description'?")
    assert "did you mean 'PASSED'?" in diag("tr-bad-status").hint
    assert "did you mean 'SGLang'?" in diag("model-bad-framework").hint
    assert "destination_passing_style" in diag("sol-dps-signature-without-flag").hint
    assert "destination_passing_style to false" in diag("sol-dps-flag-without-outputs").hint
    assert "take the definition's inputs in order" in diag("sol-wrong-param-count").hint
    assert "'<source path>::<function>'" in diag("sol-bad-entry-point").hint
    assert "did you mean 'hidden_size'?" in diag("def-undeclared-axis").hint
    assert diag("def-short-dtype-bf16").hint.startswith("did you mean 'bfloat16'?")
    assert "add hardware/CPU_Intel_R_Xeon_R_Processor_2T.json" in diag("tr-unknown-hardware").hint
    assert "kerneltrace bench" in diag("tr-latency-below-speed-of-light").hint
    assert "float32" in diag("hw-bad-peak-dtype").hint
    assert "identifier" in diag("def-axis-name-not-identifier").hint
    assert "'namespace:value'" in diag("def-bad-tag-namespace").hint
    assert "did you mean 'test-model'?" in diag("def-model-tag-without-record").hint
    assert diag("wl-blob-missing").hint.startswith("run `kerneltrace workloads`")
    assert "model-alt:test-modle" in diag("def-model-tag-without-record").hint


def test_one_diagnostic_per_problem(tmp_path: Path) -> None:
    """A bad axis type is one problem: the if/then/else branches must not report it twice."""
    root = write_dataset(tmp_path / "ds")
    put(DEF, "/axes/batch_size/type", "variable")(root)
    at_type = [d for d in validate_path(root) if d.pointer == "/axes/batch_size/type"]
    assert len(at_type) == 1, at_type


def test_a_definition_named_unlike_its_file_is_one_error(tmp_path: Path) -> None:
    """The workloads, solution, trace, cascade and calling record beside it name it by its file's name: they are
    not orphans, the one error says how many name it, and no completeness or tag finding follows from it."""
    root = write_dataset(tmp_path / "ds")
    put(DEF, "/name", "rmsnorm_h128_v2")(root)
    errors = [d for d in validate_path(root) if d.severity == ERROR]
    assert [(d.file, d.pointer) for d in errors] == [(DEF, "/name")], "\n".join(d.format_human() for d in errors)
    assert "which 5 workloads, 1 solution, 1 trace, 1 Einsum cascade, 1 calling record name" in errors[0].message
    assert not [d for d in validate_path(root) if "has no workloads" in d.message or "orphan" in d.message]
