"""The built site in a real browser: Debian's Chromium driven by Playwright, against the site served on 127.0.0.1.

The site is built once (module fixture) from a small dataset with two solutions besides the
baseline, traced on two machines, an agent trace, and a definition whose description plants a
<script>. Every request that leaves 127.0.0.1 is blocked and recorded, so a page that tries to
reach another host fails its test instead of waiting on the network.

Chromium is a system package (`apt-get install -y --no-install-recommends chromium`; .ci/run
installs it). Without it these tests fail: they are never skipped.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, sync_playwright

from results_dataset import DEF, FAST, PLANTED, SLOW, browser_dataset
from test_site import build

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    return build(browser_dataset(base / "dataset"), base)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server(site):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file() or shutil.which(str(CHROMIUM)) is None:
        pytest.fail(f"{CHROMIUM} is missing: install it with 'apt-get install -y --no-install-recommends chromium' "
                    "(the browser tests never skip)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Visit:
    """A page with its console errors, uncaught exceptions and requests to other hosts recorded."""

    def __init__(self, page: Page):
        self.page = page
        self.errors: list[str] = []
        self.external: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.route("**/*", self._route)

    def _route(self, route) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def check(self) -> None:
        assert self.errors == []
        assert self.external == []


@pytest.fixture
def visit(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    v = Visit(page)
    yield v
    context.close()


def open_page(v: Visit, server: str, path: str) -> Page:
    v.page.goto(server + path, wait_until="load")
    v.page.wait_for_load_state("networkidle")
    return v.page


def column(page: Page, table: str, index: int) -> list[str]:
    """The text of column `index` of the table `table` (a selector), row by row as shown."""
    return page.locator(table).locator("tbody tr").evaluate_all(
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())")


# -- pages load cleanly ---------------------------------------------------------------------

@pytest.mark.parametrize("path", ["index.html", f"generated/definitions/{DEF}.html", f"generated/solutions/{FAST}.html",
                                  "generated/definitions.html", "generated/authors.html", "generated/hardware/H100_SXM.html"])
def test_page_loads_without_errors_or_other_hosts(visit, server, path):
    page = open_page(visit, server, path)
    assert page.locator("article h1").count() == 1
    visit.check()


def test_kernel_page_shows_leaderboards_per_hardware(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    boards = page.locator(".kt-leaderboard table")
    assert boards.count() == 2  # one per hardware
    assert column(page, ".kt-leaderboard table >> nth=0", 1)[0].startswith(FAST)
    visit.check()


def test_solution_page_shows_source_results_failures_and_agent_trace(visit, server):
    page = open_page(visit, server, f"generated/solutions/{FAST}.html")
    text = page.locator("article").text_content()  # failure logs sit in closed <details>
    for shown in ("alice", "triton", "RUNTIME_ERROR", "CUDA error: an illegal memory access </pre>", "def run(",
                  "Write a fast RMSNorm.", "run_bench", "2.0x <b>faster</b>"):
        assert shown in text, shown
    assert page.locator("article .highlight code span").count() > 5  # highlighted
    visit.check()


# -- behaviour ------------------------------------------------------------------------------

def test_search_finds_a_kernel_by_name(visit, server):
    page = open_page(visit, server, "index.html")
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially(DEF, delay=20)  # Material searches on key presses
    first = page.locator(".md-search-result__item > a").first
    first.wait_for(timeout=10_000)
    assert first.get_attribute("href").endswith(f"generated/definitions/{DEF}.html")  # the kernel comes first
    assert DEF in first.inner_text()
    visit.check()


def test_sorting_a_leaderboard_column_reorders_rows(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    table = ".kt-leaderboard table >> nth=0"

    def solutions() -> list[str]:
        return [cell.split()[0] for cell in column(page, table, 1)]

    assert solutions() == [FAST, "rmsnorm_h128_torch", SLOW]  # ranked by geomean speedup
    page.locator(f"{table} >> thead th", has_text="Solution").click()
    assert solutions() == [FAST, SLOW, "rmsnorm_h128_torch"]  # by name
    header = page.locator(f"{table} >> thead th", has_text="Median")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    medians = [float(v) for v in column(page, table, 8)]
    assert medians == sorted(medians, reverse=True) and solutions() == [SLOW, "rmsnorm_h128_torch", FAST]
    visit.check()


def test_chart_renders_and_hover_shows_solution_and_value(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    chart = page.locator(".kt-chart").first
    page.wait_for_selector(".kt-chart.kt-chart-ready", timeout=15_000)
    assert chart.locator("svg.main-svg").count() >= 1
    assert chart.locator(".scatterlayer .trace").count() == 3  # one curve per solution
    page.evaluate("el => Plotly.Fx.hover(el, [{curveNumber: 0, pointNumber: 0}])", chart.element_handle())
    hover = chart.locator(".hoverlayer .hovertext")
    hover.first.wait_for(timeout=5_000)
    text = hover.first.text_content()
    assert FAST in text and "fast_p" in text and "%" in text
    visit.check()


def test_filters_narrow_the_kernels_index(visit, server):
    page = open_page(visit, server, "generated/definitions.html")
    rows = page.locator("#kt-kernels tbody tr")
    assert rows.count() == 2
    page.select_option("select[data-filter='models']", "other-model")
    assert [r for r in column(page, "#kt-kernels table", 0) if r] and \
        page.locator("#kt-kernels tbody tr:not([hidden])").count() == 1
    assert page.locator("#kt-kernels tbody tr:not([hidden]) td").first.inner_text() == "planted_h128"
    assert "1 of 2" in page.locator("form.kt-filters .kt-count").inner_text()
    page.select_option("select[data-filter='models']", "")
    assert page.locator("#kt-kernels tbody tr:not([hidden])").count() == 2
    visit.check()


def test_planted_script_in_a_description_does_not_run(visit, server):
    page = open_page(visit, server, "generated/definitions/planted_h128.html")
    assert page.evaluate("typeof window.__planted") == "undefined"
    assert PLANTED in page.locator("article").inner_text()
    page = open_page(visit, server, "generated/definitions.html")
    assert page.evaluate("typeof window.__planted") == "undefined"
    visit.check()
