"""`kerneltrace import PATH...`: rewrite records in other dialects as canonical dataset files.

Reads .json and .jsonl files (folders recursively, in sorted order), recognises each record
(definition, solution, workload line, trace line, benchmark result, kernel calling record),
normalises it with `dialects`, checks it against its JSON Schema and writes it where the
dataset layout puts it:

    definitions/<type>/<name>.json
    solutions/<author>/<type>/<definition>/<name>.json
    workloads/<type>/<definition>.jsonl                  (lines appended)
    traces/<author>/<type>/<definition>.jsonl            (lines appended)
    models/<model>.json

Writes are atomic (temporary file + rename). An existing file with different content is
never overwritten; identical files and lines are skipped. For each input it says what could
not be carried over. Bad input gives a message naming the file and line, never a traceback.
Reading and writing the files is import_files.py; what each format maps is its own module.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

from ..model.layout import CANONICAL
from ..model.records import Source
from ..model.schema_check import schema_diagnostics
from . import benchmark_result, dialects, flashinfer_trace
from .import_files import Files, _Item, _Target


class _Importer(Files):
    def __init__(self, root: Path, dry_run: bool, workload_uuid: Optional[str]):
        self.root = root
        self.dry_run = dry_run
        self.workload_uuid = workload_uuid
        self.items: list[_Item] = []
        self.failed = 0  # records (or files) that could not be imported
        self.written = 0
        self.input_files: list[Path] = []
        self.blobs: dict[str, Path] = {}  # dataset-relative blob path -> the file it is copied from
        self.errors_by_file: dict[Path, list[str]] = defaultdict(list)

    # -- normalising -------------------------------------------------------------------------
    def normalise(self) -> None:
        flashinfer_args = set()
        for item in self.items:
            if item.kind == "definition":
                norm = dialects.normalise_definition(item.raw, item.path.stem, item.type_hint)
            elif item.kind == "workload":
                norm = dialects.normalise_workload(item.raw)
            elif item.kind in ("trace", "benchmark"):
                norm = dialects.normalise_trace(item.raw, self.workload_uuid)
            elif item.kind == "model":
                norm = dialects.Normalised(item.raw)
            else:
                continue
            item.data, item.dialect, item.notes = norm.data, norm.dialect, list(norm.notes)
            if norm.dialect == dialects.FLASHINFER_TRACE:
                flashinfer_args.add(item.arg)
        for item in self.items:
            if item.kind == "solution":
                # flashinfer-bench omits destination_passing_style when it is its default (true); in a
                # folder whose other records are FlashInfer-Trace, read an absent field that way.
                norm = dialects.normalise_solution(item.raw, flashinfer=item.arg in flashinfer_args)
                item.data, item.dialect, item.notes = norm.data, norm.dialect, list(norm.notes)

    # -- placing -----------------------------------------------------------------------------
    def check(self, item: _Item, kind: str) -> bool:
        problems = schema_diagnostics(kind, item.data, Source(str(item.path), item.line))
        for d in problems:
            where = d.file if d.line == 0 else f"{d.file}:{d.line}"
            field_ = d.pointer.replace("/", ".").lstrip(".") or "record"
            self.error(where, f"{field_}: {d.message}" + (f" (hint: {d.hint})" if d.hint else ""))
        if problems:
            item.ok = False
            self.failed += 1
            print(f"{item.where}: not imported: the {kind} does not pass the canonical schema after normalising "
                  f"(errors above)", file=sys.stderr)
        return not problems

    def dataset_definition_type(self, name: str) -> Optional[str]:
        for found in sorted(self.root.glob(CANONICAL.definition_file("*", name))):
            return CANONICAL.fields(found.relative_to(self.root).as_posix())["type"]
        return None

    def dataset_solution_author(self, definition: str, name: str) -> Optional[str]:
        for found in sorted(self.root.glob(CANONICAL.solution_file("*", "*", definition, name))):
            return CANONICAL.solution_author(found.relative_to(self.root).as_posix())
        return None

    def author_from_place(self, path: Path) -> Optional[str]:
        """The author folder of a trace file that already sits in this dataset's traces/<author>/<type>/."""
        try:
            rel = path.resolve().relative_to(self.root.resolve()).as_posix()
        except (OSError, ValueError):
            return None
        return CANONICAL.trace_author(rel) or None

    def dataset_definition(self, name: str, type_: str) -> Optional[dict]:
        try:
            data = json.loads((self.root / CANONICAL.definition_file(type_, name)).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return dialects.normalise_definition(data, name).data

    def dataset_workload(self, type_: str, definition: str, uuid: str) -> Optional[dict]:
        try:
            text = (self.root / CANONICAL.workload_file(type_, definition)).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        for line in text.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("workload"), dict) and obj["workload"].get("uuid") == uuid:
                return obj["workload"]
        return None

    def place(self) -> dict[str, _Target]:
        """Where each record goes: dataset-relative path -> the records written there."""
        self.targets: dict[str, _Target] = {}
        self.definitions: dict[str, tuple[str, dict]] = {}  # imported: name -> (type, data)
        self.solutions: dict[str, str] = {}  # imported: name -> author
        self.workloads: dict[tuple[str, str], dict] = {}  # imported: (definition, uuid) -> workload
        self.place_definitions()
        self.place_solutions()
        self.place_workloads()
        self.skip_benchmarks_without_workload()
        self.place_traces()
        for item in self.items:
            if item.kind == "model" and self.check(item, "model"):
                self.put(CANONICAL.model_file(item.path.stem), False, item)
        return self.targets

    def put(self, rel: str, lines: bool, item: _Item) -> None:
        self.targets.setdefault(rel, _Target(rel, lines)).items.append(item)

    def type_of(self, definition: str) -> Optional[str]:
        if definition in self.definitions:
            return self.definitions[definition][0]
        return self.dataset_definition_type(definition)

    def spec_of(self, definition: str) -> Optional[dict]:
        if definition in self.definitions:
            return self.definitions[definition][1]
        t = self.dataset_definition_type(definition)
        return self.dataset_definition(definition, t) if t else None

    def missing_definition(self, item: _Item, what: str, definition: Any) -> None:
        self.fail(item, f"{what} names definition '{definition}', which is neither in the dataset "
                        f"({self.root}) nor among the imported files; import the definition first")

    def place_definitions(self) -> None:
        for item in self.items:
            if item.kind == "definition" and self.check(item, "definition"):
                name, type_ = item.data["name"], item.data["type"]
                if name in self.definitions and self.definitions[name][1] != item.data:
                    self.fail(item, f"definition '{name}' is imported twice with different content")
                    continue
                self.definitions[name] = (type_, item.data)
                self.put(CANONICAL.definition_file(type_, name), False, item)

    def place_solutions(self) -> None:
        for item in self.items:
            if item.kind != "solution":
                continue
            self.fix_dps(item)
            if not self.check(item, "solution"):
                continue
            d = item.data
            t = self.type_of(d["definition"])
            if t is None:
                self.missing_definition(item, f"solution '{d['name']}'", d["definition"])
                continue
            self.solutions[d["name"]] = d["author"]
            self.put(CANONICAL.solution_file(d["author"], t, d["definition"], d["name"]), False, item)

    def place_workloads(self) -> None:
        for item in self.items:
            if item.kind == "workload" and self.check(item, "workload"):
                d = item.data
                t = self.type_of(d["definition"])
                if t is None:
                    self.missing_definition(item, f"workload '{d['workload']['uuid']}'", d["definition"])
                    continue
                if not self.carry_blobs(item, t):
                    continue
                self.workloads[(d["definition"], d["workload"]["uuid"])] = d["workload"]
                self.put(CANONICAL.workload_file(t, d["definition"]), True, item)

    def carry_blobs(self, item: _Item, type_: str) -> bool:
        """Safetensors inputs name files relative to the dataset they came from: find each above the
        workload's file, copy it to its canonical place and point the input there. A blob that is
        not there is noted (validate reports it until the file is added); the record comes through,
        as flashinfer-bench reads it. False (not imported) only for two blobs behind one workload."""
        d = item.data
        uuid, inputs = d["workload"]["uuid"], d["workload"]["inputs"]
        moved, copied = {}, False
        for name, spec in inputs.items():
            if spec.get("type") != "safetensors":
                continue
            source = next((folder / spec["path"] for folder in item.path.parents
                           if (folder / spec["path"]).is_file()), None)
            dest = CANONICAL.blob_file(type_, d["definition"], uuid)
            if source is None:
                item.notes.append(f"blob missing: {spec['path']} is in no folder above the workload file; the "
                                  f"input points at {dest}: put the file there")
            elif self.blobs.setdefault(dest, source) != source:
                self.fail(item, f"workload '{uuid}': its inputs come from two blob files ({self.blobs[dest]} and "
                                f"{source}); KernelTrace keeps one blob per workload")
                return False
            else:
                copied = True
            moved[name] = {**spec, "path": dest}
        if moved:
            item.data = {**d, "workload": {**d["workload"], "inputs": {**inputs, **moved}}}
            if copied and any(spec["path"] != moved[name]["path"] for name, spec in inputs.items() if name in moved):
                item.notes.append("safetensors blobs copied to blob/workloads/<type>/<definition>/<uuid>.safetensors "
                                  "and the inputs' paths changed to match")
        return True

    def skip_benchmarks_without_workload(self) -> None:
        skipped = [i for i in self.items if i.kind == "benchmark" and self.workload_uuid is None]
        if not skipped:
            return
        self.failed += len(skipped)
        for path in dict.fromkeys(i.path for i in skipped):
            n = sum(1 for i in skipped if i.path == path)
            print(f"{path}: skipped: benchmark results name no workload; rerun with --workload UUID "
                  f"({n} record(s) not written)", file=sys.stderr)
        for i in skipped:
            i.ok = False

    def place_traces(self) -> None:
        for item in self.items:
            if item.kind not in ("trace", "benchmark") or not item.ok:
                continue
            d = item.data
            definition = d.get("definition") if isinstance(d, dict) else None
            if item.kind == "benchmark" and isinstance(definition, str):
                self.attach_workload(item, definition)
            elif isinstance(d, dict) and isinstance(d.get("workload"), dict):
                # the trace's copy of its workload follows the imported one (blob paths moved with it)
                imported = self.workloads.get((definition, d["workload"].get("uuid")))
                if imported is not None and imported.get("axes") == d["workload"].get("axes"):
                    item.data = {**d, "workload": imported}
                    d = item.data
            if not self.check(item, "trace"):
                continue
            t = self.type_of(definition)
            if t is None:
                self.missing_definition(item, "trace", definition)
                continue
            author = (self.solutions.get(d["solution"]) or self.dataset_solution_author(definition, d["solution"])
                      or self.author_from_place(item.path))
            if author is None:
                self.fail(item, f"trace names solution '{d['solution']}', which is neither in the dataset nor among "
                                f"the imported files, so its author (the traces/<author>/ folder) is unknown; "
                                f"import the solution first")
                continue
            self.put(CANONICAL.trace_file(author, t, definition), True, item)

    def attach_workload(self, item: _Item, definition: str) -> None:
        """A benchmark result gets the workload --workload names, from the imports or the dataset."""
        t = self.type_of(definition)
        found = self.workloads.get((definition, self.workload_uuid)) or (
            self.dataset_workload(t, definition, self.workload_uuid) if t else None)
        if found is not None:
            item.data["workload"] = found
        item.notes = benchmark_result.workload_notes(item.notes, found is not None, self.workload_uuid, definition)

    def fix_dps(self, item: _Item) -> None:
        """Where a solution does not say whether its entry point is destination-passing, read its
        signature (see flashinfer_trace.destination_passing_from_signature)."""
        d = item.data
        raw_spec = item.raw.get("spec") if isinstance(item.raw, dict) else None
        if isinstance(raw_spec, dict) and "destination_passing_style" in raw_spec:
            return  # said explicitly
        if not isinstance(d, dict) or not isinstance(d.get("definition"), str):
            return
        definition = self.spec_of(d["definition"])
        fixed = flashinfer_trace.destination_passing_from_signature(d, definition) if definition else None
        if fixed is not None:
            item.data, note = fixed
            item.notes = [n for n in item.notes if "destination_passing_style" not in n]
            item.notes.append(note)

def run_import(paths: list[Path], dataset_root: Path, dry_run: bool = False,
               workload_uuid: Optional[str] = None) -> int:
    """Import files in other dialects into `dataset_root`; 0 on success, 1 if anything was not imported."""
    imp = _Importer(Path(dataset_root), dry_run, workload_uuid)
    for arg, path in enumerate(paths):
        imp.collect(arg, Path(path))
    imp.normalise()
    try:
        targets = imp.place()
        imp.write(targets)
        imp.copy_blobs()
    except OSError as e:
        imp.failed += 1
        print(f"kerneltrace import: error: cannot write into {dataset_root}: {e.strerror or e}", file=sys.stderr)
    imp.report_notes()
    summary = f"kerneltrace import: {imp.written} file(s) {'to write' if dry_run else 'written'}"
    if imp.failed:
        summary += f"; {imp.failed} record(s) or file(s) could not be imported"
    print(summary, file=sys.stderr if imp.failed else sys.stdout)
    return 1 if imp.failed else 0
