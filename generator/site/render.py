"""Render the generated pages of the site: markdown text from the dataset and the schemas.

`render_pages` is pure (dataset in, {relative path: text} out); `write_pages` puts the pages
on disk in one step. Templates hold layout only: every number and list is prepared here, and
every string from the dataset passes through an escaping filter (see escape.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from ..analyse.estimates import DECODE_TOKENS, PREFILL_TOKENS
from ..analyse.site_tables import analyse
from ..model.contender_kinds import kind_of
from ..model.dataset import Dataset
from ..model.records import Definition
from .items import ItemPlan
from .prose import summary
from .results import kernel_filters, result_pages
from .schema_doc import schema_reference, vocabulary
from .templates import environment
from .urls import definition_page, model_page


@dataclass(frozen=True)
class DefinitionRow:
    """One definition with what the pages show about it (tags sorted, counts computed)."""

    definition: Definition
    page: str  # path of its page, relative to the generated folder
    models: tuple[str, ...]
    stages: tuple[str, ...]
    tags: tuple[str, ...]
    workload_count: int
    solution_count: int
    trace_count: int
    draft: bool  # Definition.is_draft (not tagged status:verified): listed after verified kernels, marked, ranked low in search
    summary: str  # first sentence of the description
    best: tuple["KernelBest", ...] = ()  # per hardware with results
    kinds: tuple[str, ...] = ()  # the kinds of contender among its solutions (model/contender_kinds.py)


@dataclass(frozen=True)
class KernelBest:
    """A definition's best numbers on one hardware, for the kernels index."""

    hardware: str
    latency_ms: Optional[float]  # fastest stable latency on the definition's representative workload
    workload: str  # that workload's axes, "batch_size=1"
    sol_percent: Optional[float]  # that latency's SOL%


@dataclass(frozen=True)
class Totals:
    definitions: int
    workloads: int
    solutions: int
    traces: int


def kernel_best(boards, workload=None) -> tuple[KernelBest, ...]:
    """Per board: the fastest stable latency on the definition's representative `workload` (its first workload
    when none is given) and the SOL% of that latency."""
    out = []
    for lb in boards:
        uuid = getattr(workload, "uuid", None)
        row = next((r for r in lb.rows if r.uuid == uuid), lb.rows[0] if lb.rows else None)
        ranked = [r for r in row.results if r.ranked and r.latency_ms] if row else []
        best = min(ranked, key=lambda r: r.latency_ms, default=None)
        label = " ".join(f"{a}={v}" for a, v in row.axes) if row else ""
        out.append(KernelBest(lb.hardware, best.latency_ms if best else None, label,
                              best.sol_percent if best else None))
    return tuple(out)


def definition_rows(ds: Dataset, boards: Optional[dict] = None,
                    representative: Optional[Mapping] = None) -> list[DefinitionRow]:
    """Every definition: verified (not draft) kernels first, then drafts, each by name; `representative`: the
    workload per definition that its kernels-index numbers are on (analyse.site_tables)."""
    workloads, solutions, traces = ds.workloads_by_definition, ds.solutions_by_definition, ds.traces_by_definition
    rows = [
        DefinitionRow(
            definition=d, page=definition_page(name), models=tuple(sorted(d.models)),
            stages=tuple(sorted(d.stages)), tags=tuple(sorted(d.tags)),
            workload_count=len(workloads.get(name, ())), solution_count=len(solutions.get(name, ())),
            trace_count=len(traces.get(name, ())), draft=d.is_draft, summary=summary(d.description),
            best=kernel_best((boards or {}).get(name, ()), (representative or {}).get(name)),
            kinds=tuple(sorted({kind_of(s.author) for s in solutions.get(name, ())})),
        )
        for name, d in sorted(ds.definitions.items())
    ]
    return sorted(rows, key=lambda r: r.draft)  # stable: by name within each group


def totals(ds: Dataset) -> Totals:
    return Totals(len(ds.definitions), len(ds.workloads), len(ds.solutions), len(ds.traces))


def render_pages(ds: Dataset, dataset_label: str = "dataset", boards=None,
                 speed_of_light=None) -> tuple[dict[str, str], ItemPlan]:
    """Every generated page: ({path relative to the generated folder: markdown} for the few list pages
    mkdocs builds, sorted by path; the plan of the per-item pages rendered to HTML, see items.py).

    `dataset_label` is how pages name the dataset folder in file paths (the --dataset given); `boards`
    the leaderboards per definition and `speed_of_light` the sections of analyse.roofline.sol_sections,
    when they are known already (serve's quick rebuilds)."""
    env = environment()
    # Leaderboards, rankings, per-hardware results and model estimates, computed once (analyse layer).
    results = analyse(ds, boards, speed_of_light)  # every table the pages show, before any is rendered
    rows = definition_rows(ds, results.boards, results.representative)
    pages = {
        "definitions.md": env.get_template("definitions.md.j2").render(rows=rows, totals=totals(ds),
                                                                       filters=kernel_filters(ds, rows),
                                                                       machines=results.machines,
                                                                       decode_tokens=DECODE_TOKENS,
                                                                       prefill_tokens=PREFILL_TOKENS),
        "schema.md": env.get_template("schema.md.j2").render(kinds=schema_reference(), vocabulary=vocabulary()),
    }
    coverage = results.coverage
    serving_point = {"decode_tokens": DECODE_TOKENS, "prefill_tokens": PREFILL_TOKENS}
    pages["models.md"] = env.get_template("models.md.j2").render(coverage=coverage, prefix="",
                                                                 releases=results.releases,
                                                                 estimates=results.models, dataset=dataset_label,
                                                                 **serving_point)
    for m in coverage:  # one page per calling record: its kernels and where its steps' time goes
        pages[model_page(m.name)] = env.get_template("model.md.j2").render(
            m=m, est=results.models.get(m.name, ()), dataset=dataset_label, **serving_point)
    # Included into the hand-written home page, so links are relative to it.
    pages["coverage.txt"] = env.get_template("coverage.md.j2").render(coverage=coverage, prefix="generated/")
    # Authors, the hardware list and the home page's summary.
    pages.update(result_pages(ds, env, results))
    return dict(sorted(pages.items())), ItemPlan(ds, results, tuple(rows), results.speed_of_light, dataset_label)


def _is_same(pages: dict[str, str], folder: Path) -> bool:
    if not folder.is_dir():
        return False
    present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    if present != sorted(pages):
        return False
    return all((folder / rel).read_bytes() == (text.read_bytes() if isinstance(text, Path) else text.encode("utf-8"))
               for rel, text in pages.items())


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_pages(pages: dict, target: Path) -> bool:
    """Replace the folder `target` by exactly `pages` ({path: text, or a Path to copy}), in one rename;
    False if it already held them.

    The pages are written to a hidden sibling folder first (mkdocs skips dot-folders), so a
    reader of `target` (mkdocs serve) sees the old pages or the new ones, never half of each.
    """
    if _is_same(pages, target):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    old = None
    try:
        os.chmod(fresh, 0o777 & ~current_umask())
        for rel, text in pages.items():
            path = fresh / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, Path):  # a file copied as it is (images, styles)
                shutil.copyfile(text, path)
            else:
                path.write_text(text, encoding="utf-8", newline="\n")
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old)  # onto an empty folder: allowed
        os.replace(fresh, target)
    except BaseException:
        if old is not None and not target.exists():
            os.replace(old, target)
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    finally:
        if old is not None and old.exists():
            shutil.rmtree(old, ignore_errors=True)
    return True
