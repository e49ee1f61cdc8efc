"""The site's per-item pages (one per definition, solution and hardware): HTML rendered from data.

These pages are most of the site (11,000 at 1,000 definitions x 10 solutions) and mostly tables, so
they skip Markdown: each is an HTML body from an autoescaping template (every value from the dataset
is text), which the build puts into the theme's page shell (shell.py). Each also gives the search
index one small entry: its name and prose, never its tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Optional

import jinja2

from ..analyse.site_tables import SiteResults
from ..model.dataset import Dataset
from .data import results_script
from .prose import paragraphs
from .results import definition_results, hardware_context, solution_context
from .templates import environment
from .urls import data_file, hardware_part_pages, html_link, solution_page

HARDWARE_ROWS_PER_PAGE = 250  # keeps a machine's page small at any dataset size


@dataclass(frozen=True)
class Item:
    """One page: where it goes, its title, its HTML body and what search knows of it."""

    path: str  # relative to the generated folder, ".html"
    title: str
    body: str
    search_text: str  # plain text: name and prose
    boost: float = 1.0  # search ranking weight (drafts below verified kernels)
    definition: str = ""  # the definition whose data it shows ("": a page over all of them)
    raw: bool = False  # a file written as it is (a definition's results file), not a page: no shell, not searched


def definition_items(ds: Dataset, results: SiteResults, rows, speed_of_light, dataset_label: str,
                     env: jinja2.Environment) -> Iterator[Item]:
    template = env.get_template("definition.html.j2")
    for row in rows:
        d = row.definition
        body = template.render(row=row, d=d, sol=speed_of_light.get(d.name), root="../", dataset=dataset_label,
                               **definition_results(ds, results, d.name))
        yield Item(html_link(row.page), d.name, body, " ".join([d.name, d.type, *paragraphs(d.description)]),
                   0.5 if row.draft else 2.0, d.name)
        boards = results.boards.get(d.name, ())
        if boards:  # the per-workload results its page and its solutions' pages draw
            yield Item(data_file(d.name), d.name, results_script(d.name, boards, dataset_label), "", 0.0, d.name,
                       raw=True)


def solution_items(ds: Dataset, results: SiteResults, names, dataset_label: str,
                   env: jinja2.Environment) -> Iterator[Item]:
    template = env.get_template("solution.html.j2")
    for name in names:
        s = ds.solutions[name]
        body = template.render(root="../", dataset=dataset_label, **solution_context(ds, results, s))
        # Search knows a solution by name, author and definition (its description is often long).
        yield Item(html_link(solution_page(name)), name, body, f"{name} by {s.author} for {s.definition}", 0.3,
                   s.definition)


def hardware_items(ds: Dataset, results: SiteResults, dataset_label: str, env: jinja2.Environment) -> Iterator[Item]:
    template = env.get_template("hardware_page.html.j2")
    for summary_ in results.hardware:
        context = hardware_context(ds, summary_)
        rows = context.pop("rows")
        n = max(1, -(-len(rows) // HARDWARE_ROWS_PER_PAGE))
        parts = hardware_part_pages(summary_.name, n)
        for k in range(n):
            chunk = rows[k * HARDWARE_ROWS_PER_PAGE:(k + 1) * HARDWARE_ROWS_PER_PAGE]
            body = template.render(root="../", dataset=dataset_label, rows=chunk, total=len(rows), part=k + 1, pages=n,
                                   first=k * HARDWARE_ROWS_PER_PAGE + 1, part_pages=parts, **context)
            spec = summary_.spec
            prose = paragraphs(spec.data.get("description", "")) if spec is not None and k == 0 else []
            yield Item(parts[k], summary_.name, body, " ".join([summary_.name, *prose]), 1.0 if k == 0 else 0.1)


@dataclass(frozen=True)
class ItemPlan:
    """What the per-item pages are rendered from; `render(part, parts)` renders one share of them, so
    that the build can render the shares in parallel processes."""

    ds: Dataset
    results: SiteResults
    rows: tuple
    speed_of_light: Mapping  # by definition name (analyse.roofline.sol_sections)
    dataset_label: str
    # Only the pages of these definitions (their own and their solutions'), and the pages over all of
    # them; None: every page. For serve's quick rebuilds.
    only: Optional[frozenset] = None

    def render(self, part: int = 0, parts: int = 1) -> Iterator[Item]:
        env = environment()
        rows = self.rows if self.only is None else tuple(r for r in self.rows if r.definition.name in self.only)
        solutions = sorted(name for name, s in self.ds.solutions.items()
                           if self.only is None or s.definition in self.only)
        yield from definition_items(self.ds, self.results, rows[part::parts], self.speed_of_light,
                                    self.dataset_label, env)
        yield from solution_items(self.ds, self.results, solutions[part::parts], self.dataset_label, env)
        if part == 0:
            yield from hardware_items(self.ds, self.results, self.dataset_label, env)

    def all(self) -> dict[str, Item]:
        """Every per-item page, by path relative to the generated folder."""
        return dict(sorted((item.path, item) for item in self.render()))
