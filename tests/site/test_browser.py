"""The built site in a real browser: Debian's Chromium driven by Playwright, against the site served on 127.0.0.1.

The site is built once (module fixture) from a small dataset with two solutions besides the
baseline, traced on two machines, a compiler and a library contender on one of them, an agent trace,
two calling records, and a definition whose description plants a <script>. Every request that leaves 127.0.0.1 is blocked and recorded, so a page that tries to
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
from test_site import build

from results_dataset import COMPILED, DEF, FAST, LIBRARY, LIBRARY_VERSION, PLANTED, SLOW, contenders_dataset

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    return build(contenders_dataset(base / "dataset"), base)


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


def test_each_model_has_a_page_with_a_labelled_step_estimate_per_stage(visit, server):
    page = open_page(visit, server, "generated/models.html")
    page.locator("article table a", has_text="test/model").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("generated/models/test-model.html")
    text = page.locator("article").inner_text()
    # decode: the kernel at its workload nearest 64 tokens (wl-4, batch 16), from its trace there
    assert "Decode at 64 tokens on H100_SXM" in text and "From traces: 1 kernels, 3 of 3 calls, 100% of the time" in text
    rows = page.locator("details.kt-parts table").first.locator("tbody tr td").all_text_contents()
    assert rows[:4] == [DEF, "3", "trace", "16"] and "wl-4" in rows[-1]
    # prefill: the kernel has no prefill workload, so the step is not the decode step again
    assert "Prefill at 4096 tokens on H100_SXM" in text and "Not estimated: 1 kernels, 3 calls." in text
    visit.check()


def test_a_board_with_only_the_baseline_is_not_presented_as_a_leaderboard(visit, server):
    page = open_page(visit, server, "generated/definitions/planted_h128.html")
    alone = page.locator("#results-test_cpu ~ .kt-alone").first
    text = alone.inner_text()
    assert text.startswith("Only the baseline has run on test_cpu") and "of the speed of light" in text
    assert page.locator(".kt-leaderboard, .kt-chart").count() == 0  # no rank, no one-step fast_p chart
    assert "Rank" not in page.locator("article").inner_text()
    cells = alone.locator("tbody tr").first.locator("td").all_inner_texts()
    assert cells[2] == "0.04" and cells[3] not in ("", "—") and cells[4].endswith("%")  # latency, T_SOL, SOL%
    solution = open_page(visit, server, "generated/solutions/planted_h128_torch.html").locator("article").inner_text()
    assert "Only the baseline has run on test_cpu" in solution and "Rank 1 of 1" not in solution
    home = open_page(visit, server, "index.html").locator(".kt-latest").inner_text()
    assert "baseline only" in home and "of 1" not in home
    visit.check()


def test_results_say_how_they_were_produced(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    board = page.locator(".kt-leaderboard table").first
    provenance = {row[1].split("\n")[0].split()[0]: row[1].split("\n")[-1] for row in
                  board.locator("tbody tr").evaluate_all("rows => rows.map(r => [0, r.cells[1].innerText])")}
    assert provenance == {FAST: "measured", SLOW: "recorded", "rmsnorm_h128_torch": "before provenance was recorded"}
    solution = open_page(visit, server, f"generated/solutions/{SLOW}.html")
    assert solution.locator("article table").nth(1).locator("tbody tr td").nth(-2).inner_text() == "recorded"
    visit.check()


def test_solution_page_shows_source_results_failures_and_agent_trace(visit, server):
    page = open_page(visit, server, f"generated/solutions/{FAST}.html")
    text = page.locator("article").text_content()  # logs and environments sit in closed <details>
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


def test_search_ranks_verified_kernels_before_drafts(visit, server):
    page = open_page(visit, server, "index.html")
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially("norm", delay=20)  # the type of both kernels
    page.locator(".md-search-result__item > a").first.wait_for(timeout=10_000)
    hrefs = page.locator(".md-search-result__item > a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    kernels = [h.rsplit("/", 1)[-1] for h in hrefs if "/definitions/" in h]
    assert kernels[:2] == [f"{DEF}.html", "planted_h128.html"]  # planted_h128 is a draft: after, though "p" < "r"
    visit.check()


def test_search_from_disk_shows_whole_names(browser, site):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto((site / "index.html").as_uri(), wait_until="load")
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially("rmsnorm", delay=20)
    page.locator(".kt-file-search a").first.wait_for(timeout=10_000)
    names = page.locator(".kt-file-search a").all_inner_texts()
    assert COMPILED in names  # the longest name: it was cut at the search box's width
    clipped = page.locator(".kt-file-search").evaluate(
        "list => [...list.querySelectorAll('a')].filter(a => a.getBoundingClientRect().right > "
        "list.getBoundingClientRect().right - 1 || a.scrollWidth > a.getBoundingClientRect().width + 1)"
        ".map(a => a.textContent)")
    assert clipped == [] and page.locator(".kt-file-search").evaluate("l => l.scrollWidth <= l.clientWidth")
    context.close()


def test_search_works_from_disk(browser, site):
    # Opened as files, browsers refuse the theme's search worker; the site's own fallback searches the
    # same index (search/search_index.js) and lists links under the box.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    v = Visit(context.new_page())
    v.page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                 else (v.external.append(route.request.url), route.abort()))
    v.page.goto((site / "index.html").as_uri(), wait_until="load")
    box = v.page.locator("input.md-search__input")
    box.click()
    box.press_sequentially(DEF, delay=20)
    first = v.page.locator(".kt-file-search a").first
    first.wait_for(timeout=10_000)
    assert first.inner_text() == DEF
    first.click()
    v.page.wait_for_load_state("load")
    assert v.page.url == (site / "generated" / "definitions" / f"{DEF}.html").as_uri()
    assert v.external == []
    context.close()


def test_sorting_a_leaderboard_column_reorders_rows(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    table = ".kt-leaderboard table >> nth=0"

    def solutions() -> list[str]:
        return [cell.split()[0] for cell in column(page, table, 1)]

    assert solutions() == [FAST, "rmsnorm_h128_torch", SLOW]  # ranked by geomean speedup
    page.locator(f"{table} >> thead th", has_text="Solution").click()
    assert solutions() == [FAST, SLOW, "rmsnorm_h128_torch"]  # by name
    header = page.locator(f"{table} >> thead th", has_text="Samples")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    assert [int(v) for v in column(page, table, 8)] == [150, 200, 200]
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert [int(v) for v in column(page, table, 8)] == [200, 200, 150] and solutions()[-1] == FAST
    visit.check()


def chart_state(page: Page) -> dict:
    return page.evaluate("""() => {
        const chart = document.querySelector('.kt-chart.kt-chart-ready');
        const lines = [...chart.querySelectorAll('path.kt-line')];
        return {lines: lines.length, shown: lines.filter(p => getComputedStyle(p).display !== 'none').length,
                stroke: getComputedStyle(lines[0]).stroke, label: getComputedStyle(chart.querySelector('svg text')).fill};
    }""")


def test_chart_hover_anywhere_toggles_and_no_request_leaves(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    page.wait_for_selector(".kt-chart.kt-chart-ready", timeout=15_000)
    chart = page.locator(".kt-chart").first
    assert chart_state(page)["lines"] == 3  # one curve per solution
    svg = chart.locator("svg")
    svg.scroll_into_view_if_needed()
    box = svg.bounding_box()
    # Hover anywhere along the curves (not only at their points): at p ~ 1.5 alice's fast_p is 75%.
    for share in (0.2, 0.43, 0.6, 0.9):
        page.mouse.move(box["x"] + box["width"] * (52 + (640 - 64) * share) / 640, box["y"] + box["height"] * 0.3)
        tip = chart.locator(".kt-tip")
        tip.wait_for(state="visible", timeout=5_000)
        assert FAST in tip.inner_text() and "%" in tip.inner_text()
    page.mouse.move(box["x"] + box["width"] * (52 + 576 * 1.5 / 4.5) / 640, box["y"] + 40)
    assert f"{FAST}: 50%" in chart.locator(".kt-tip").inner_text()  # 4x and 2x are above 1.5, of 4 workloads
    # Every control of the chart: each legend entry hides its curve and shows it again.
    buttons = chart.locator(".kt-legend button")
    assert buttons.count() == 3
    for i in range(3):
        name = buttons.nth(i).inner_text()
        buttons.nth(i).click()
        assert chart_state(page)["shown"] == 2 and buttons.nth(i).get_attribute("aria-pressed") == "false"
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.4)
        assert f"{name}:" not in chart.locator(".kt-tip").inner_text()  # a hidden curve leaves the hover text too
        buttons.nth(i).click()
        assert chart_state(page)["shown"] == 3
    for control in page.locator(".kt-chart button, .kt-chart a").all():
        control.click()
    page.wait_for_timeout(300)
    assert page.locator(".kt-chart a[href^='http']").count() == 0  # no link out of the chart at all
    visit.check()  # nothing was requested from another host


def test_dark_toggle_recolours_charts(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    page.wait_for_selector(".kt-chart.kt-chart-ready", timeout=15_000)
    light = chart_state(page)
    page.locator("form[data-md-component='palette'] label:visible").first.click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'", timeout=5_000)
    dark = chart_state(page)
    assert dark["stroke"] != light["stroke"] and dark["label"] != light["label"]  # no reload needed
    visit.check()


def test_solution_page_shows_a_trace_detail_view(visit, server):
    page = open_page(visit, server, f"generated/solutions/{FAST}.html")
    page.locator("article a", has_text="details").first.click()
    detail = page.locator("details.kt-trace[open]").first
    detail.wait_for(timeout=5_000)
    text = detail.inner_text()
    assert "Line" in text and "samples" in text
    # what every trace of the board shares is said once, just above the detail views
    common = page.locator(".kt-traces .kt-common").first
    assert common.is_visible()
    for shown in ("traces/alice/norm/", "UTC", "H100_SXM", "measured"):
        assert shown in common.inner_text(), shown
    visit.check()


def test_filters_narrow_the_kernels_index(visit, server):
    page = open_page(visit, server, "generated/definitions.html")
    rows = page.locator("#kt-kernels tbody tr")
    assert rows.count() == 2
    assert column(page, "#kt-kernels table", 0) == [DEF, "planted_h128 draft"]  # drafts after verified kernels
    page.select_option("select[name='model']", "model:other-model")
    assert page.locator("#kt-kernels tbody tr:not([hidden])").count() == 1
    assert page.locator("#kt-kernels tbody tr:not([hidden]) td").first.inner_text().startswith("planted_h128")
    assert "1 of 2" in page.locator("form.kt-filters .kt-count").inner_text()
    page.select_option("select[name='model']", "")
    assert page.locator("#kt-kernels tbody tr:not([hidden])").count() == 2
    page.locator("input[data-filter-text]").fill("plant")  # type to filter
    assert page.locator("#kt-kernels tbody tr:not([hidden])").count() == 1
    assert "norm (2)" in page.locator("select[data-filter='type']").inner_text()  # counts per type
    visit.check()


def test_kernels_index_on_a_phone_shows_name_summary_and_best_latency(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    v = Visit(context.new_page())
    page = open_page(v, server, "generated/definitions.html")
    row = page.locator("#kt-kernels tbody tr").first
    name, summary, best = row.locator("td").nth(0), row.locator("td").nth(2), row.locator("td").nth(3)
    assert "H100_SXM" in page.locator("#kt-kernels thead th").nth(3).text_content()
    for cell in (name, summary, best):  # each row is a card: name, summary, then each machine's best
        box = cell.bounding_box()
        assert box is not None and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    # like with like: the workload nearest 64 decode tokens (wl-4, where alice's solution fails), not the first
    assert name.inner_text() == DEF and best.inner_text().startswith("0.04 ms")
    assert best.evaluate("e => getComputedStyle(e, '::before').content") == '"H100_SXM: "' 
    assert best.get_attribute("title") == "batch_size=16"
    assert summary.inner_text() and not row.locator("td").nth(1).is_visible()  # the type gives way
    assert page.locator("#kt-kernels table").evaluate(  # the cards wrap inside the page: no sideways scrolling
        "t => t.getBoundingClientRect().right <= t.closest('.kt-kernels').getBoundingClientRect().right + 1")
    v.check()
    context.close()


def test_kernels_index_filters_live_in_the_url_and_the_find_box_has_a_border(visit, server):
    page = open_page(visit, server, "generated/definitions.html")
    find = page.locator("input[data-filter-text]")
    assert find.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"
    assert find.evaluate("e => parseFloat(getComputedStyle(e).borderTopWidth)") >= 1
    page.select_option("select[name='model']", "model:other-model")
    find.fill("plant")
    query = page.evaluate("location.search")
    assert "model=other-model" in query and "find=plant" in query, query
    shared = open_page(visit, server, "generated/definitions.html" + query)
    assert shared.locator("select[name='model']").input_value() == "model:other-model"
    assert shared.locator("input[data-filter-text]").input_value() == "plant"
    assert shared.locator("#kt-kernels tbody tr:not([hidden])").count() == 1
    shared.select_option("select[name='model']", "")
    shared.locator("input[data-filter-text]").fill("")
    assert shared.evaluate("location.search") == "", shared.locator("input[data-filter-text]").input_value()
    visit.check()


def test_planted_script_in_a_description_does_not_run(visit, server):
    page = open_page(visit, server, "generated/definitions/planted_h128.html")
    assert page.evaluate("typeof window.__planted") == "undefined"
    assert PLANTED in page.locator("article").inner_text()
    page = open_page(visit, server, "generated/definitions.html")
    assert page.evaluate("typeof window.__planted") == "undefined"
    visit.check()


def test_serve_reloads_an_open_page_after_an_edit(visit, tmp_path):
    """`kerneltrace serve`: a page open in the browser shows an edit to the dataset by itself (no reload by
    the reader), and the reload asks only 127.0.0.1."""
    import json
    import socket
    import time

    from test_site import make_project

    from generator.site.serve import serve_site

    from dataset_factory import DEFINITION, write_dataset

    root = write_dataset(tmp_path / "dataset", traces=[])
    project = make_project(tmp_path / "project")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stop = threading.Event()
    thread = threading.Thread(target=serve_site, args=(root, f"127.0.0.1:{port}"),
                              kwargs={"project_root": project, "poll_s": 0.2, "stop": stop}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while True:  # the first build
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert thread.is_alive() and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        page = open_page(visit, f"http://127.0.0.1:{port}/", "generated/definitions/rmsnorm_h128.html")
        assert "Edited while serving." not in page.locator("article").inner_text()
        changed = json.loads(json.dumps(DEFINITION))
        changed["description"] = "Edited while serving."
        path = next((root / "definitions").rglob("rmsnorm_h128.json"))
        path.write_text(json.dumps(changed, indent=2), encoding="utf-8")
        page.wait_for_function("() => document.body.innerText.includes('Edited while serving.')", timeout=120_000)
        visit.check()
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()


# -- what a reader sees first (issues 35 and 37) ---------------------------------------------------

def test_models_overview_has_a_row_per_record_and_prefill_at_4096_tokens(visit, server):
    page = open_page(visit, server, "generated/models.html")
    table = page.locator("#what-dominates ~ .md-typeset__scrollwrap table, #what-dominates ~ table").first
    assert column(page, "#what-dominates ~ .md-typeset__scrollwrap table", 0) == ["other/model", "test/model"]
    assert table.locator("tbody tr").count() == 2  # one row per calling record, not one line for all
    # other/model's prefill: planted_h128 (2 calls) has prefill workloads at 2,048 and 8,192 tokens, 0.04 and 0.16 ms;
    # at 4,096 tokens a call takes 0.08 ms (log-log between them), not 0.16 (the larger) nor 0.04 (the smaller)
    assert column(page, "#what-dominates ~ .md-typeset__scrollwrap table", 4)[0].startswith("0.16 ms on test_cpu")
    model = open_page(visit, server, "generated/models/other-model.html")
    assert "Prefill at 4096 tokens on test_cpu" in model.locator("article").inner_text()
    row = model.locator("details.kt-parts table").nth(1).locator("tbody tr td").all_text_contents()  # a closed <details>
    assert row[:5] == ["planted_h128", "2", "trace", "4096", "0.16"] and "interpolated between 2048 tokens" in row[-1]
    visit.check()


def test_kernel_page_first_screen_shows_the_fastest_per_hardware(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    assert page.locator(".kt-oneline").inner_text() == "RMSNorm over a hidden size of 128."
    assert "Models test-model" in page.locator(".kt-facts").inner_text()
    head = page.locator(".kt-headline table")
    assert head.bounding_box()["y"] + head.bounding_box()["height"] < 900  # on the first screen
    assert head.bounding_box()["y"] < page.locator("#axes").bounding_box()["y"]
    rows = head.locator("tbody tr").evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))")
    (h100, cpu) = rows
    assert h100[0] == "H100_SXM" and h100[1].startswith(f"{FAST} hand-written") and h100[2:] == ["2.20×", "—", "—"]
    # test_cpu: liger-kernel 0.02 ms, the baseline 0.08 and torch.compile 0.04: 4x over eager, 2x over the compiler
    assert cpu[0] == "test_cpu CPU" and cpu[1].startswith(f"{LIBRARY} library · {LIBRARY_VERSION}")
    assert cpu[2:4] == ["4.00×", "2.00×"] and cpu[4].endswith("%")
    assert "5 contenders" in cpu[1]
    visit.check()


def test_leaderboard_says_what_kind_each_contender_is_and_filters_by_kind(visit, server):
    page = open_page(visit, server, f"generated/definitions/{DEF}.html")
    board = page.locator("#board-results-test_cpu")
    kinds = dict(board.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[1].innerText.split(/\\s/)[0], r.querySelector('.kt-kind').innerText])"))
    assert kinds == {LIBRARY: f"library · {LIBRARY_VERSION}", COMPILED: "compiler", FAST: "hand-written",
                     "rmsnorm_h128_torch": "baseline", SLOW: "hand-written"}
    form = page.locator("form[data-target='board-results-test_cpu']")
    form.locator("select").select_option("compiler")
    shown = board.locator("tbody tr:not([hidden])")
    assert shown.count() == 1 and shown.first.locator("td").nth(1).inner_text().startswith(COMPILED)
    form.locator("select").select_option("hand-written")
    assert board.locator("tbody tr:not([hidden])").count() == 2
    form.locator("select").select_option("")
    assert board.locator("tbody tr:not([hidden])").count() == 5
    index = open_page(visit, server, "generated/definitions.html")
    index.select_option("select[name='kind']", "library")  # definitions with a library contender
    assert column(index, "#kt-kernels table", 0)[0] == DEF
    assert index.locator("#kt-kernels tbody tr:not([hidden])").count() == 1
    solution = open_page(visit, server, f"generated/solutions/{LIBRARY}.html").locator("article").inner_text()
    assert f"Author: liger-kernel library · {LIBRARY_VERSION}" in solution
    visit.check()


def test_authors_page_ranks_people_apart_from_baseline_compiler_and_libraries(visit, server):
    page = open_page(visit, server, "generated/authors.html")
    ranked = page.locator(".kt-authors table")
    references = page.locator(".kt-references table")
    assert ranked.count() == 2 and references.count() == 2  # one of each per hardware
    assert column(page, ".kt-authors table >> nth=1", 1) == ["alice", "bob"]  # test_cpu: people only
    assert column(page, ".kt-authors table >> nth=1", 0) == ["1", "2"]
    refs = references.nth(1).locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[0].firstChild.textContent.trim(), r.cells[1].innerText, r.cells[0].innerText])")
    assert [r[:2] for r in refs] == [["baseline", "baseline"], ["torch-compile", "compiler"],
                                     ["liger-kernel", "library · liger-kernel"]]
    # the planted traces record no provenance: every author listing them says so (issue 37 item 6)
    assert all(r[2].endswith("of unknown provenance") for r in refs), refs
    assert "baseline" not in column(page, ".kt-authors table >> nth=0", 1)  # never ranked against itself
    visit.check()


def test_pages_say_which_hardware_has_results(visit, server):
    said = "Results on H100_SXM (no hardware spec), test_cpu (CPU)."
    for path in ("index.html", "generated/definitions.html", f"generated/definitions/{DEF}.html"):
        assert said in open_page(visit, server, path).locator("article").inner_text(), path
    index = open_page(visit, server, "generated/definitions.html")
    assert "Best on test_cpu (CPU)" in index.locator("#kt-kernels thead").inner_text()
    assert column(index, "#kt-kernels table", 3)[1] == "—"  # planted_h128 has no H100_SXM result: as everywhere
    planted = open_page(visit, server, "generated/definitions/planted_h128.html").locator(".kt-machines").inner_text()
    assert planted.startswith("No GPU results yet.") and "test_cpu (CPU)" in planted  # its only results are CPU ones
    visit.check()


def test_kernels_index_filters_list_models_with_pages_and_no_model_tags(visit, server):
    page = open_page(visit, server, "generated/definitions.html")
    models = page.locator("select[name='model'] option").evaluate_all("o => o.map(x => x.value)")
    assert models == ["", "model:other-model", "model:test-model"]  # not ghost-model: it has no record, no page
    tags = page.locator("select[name='tag'] option").evaluate_all("o => o.map(x => x.value)")
    assert tags == ["", "stage:decode", "stage:prefill", "status:draft", "status:verified"]
    hardware = open_page(visit, server, "generated/hardware/test_cpu.html").locator("article").inner_text()
    assert "L2 cache: 50 MiB (52,428,800 bytes)" in hardware
    visit.check()


def test_kernel_page_on_a_phone_fits_the_screen(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    v = Visit(context.new_page())
    page = open_page(v, server, f"generated/definitions/{DEF}.html")
    wide = page.evaluate("""() => [...document.querySelectorAll(
        '.kt-headline table, .kt-leaderboard table, article > table, article .md-typeset__table > table')].filter(t => !t.closest('details'))
        .filter(t => t.getBoundingClientRect().right > 391 || t.scrollWidth > 391)
        .map(t => t.querySelector('thead').innerText.slice(0, 40))""")
    assert wide == []  # nothing on the page scrolls sideways outside the closed per-workload details
    workloads = page.locator(".kt-workloads table")  # open: the definition has 4 workloads
    assert workloads.evaluate("t => t.getBoundingClientRect().right <= 391")
    heights = workloads.locator("tbody tr").evaluate_all("rows => rows.map(r => r.getBoundingClientRect().height)")
    assert max(heights) < 100, heights  # no tall rows squeezed beside an empty column
    assert "Description" not in workloads.locator("thead").inner_text()  # no workload has one
    cards = page.locator("#board-results-test_cpu tbody tr").evaluate_all(
        "rows => rows.map(r => Math.round(r.getBoundingClientRect().height))")
    assert len(cards) == 5 and max(cards) < 160, cards  # a contender is a short card, not a tall stretched row
    v.check()
    context.close()


# -- per-workload tables drawn from each definition's results file (issue 37 item 11) ----------------

def drawn_rows(page: Page, selector: str) -> list[list[str]]:
    """The text of every cell of the drawn table body `selector`, shown or inside a closed <details>."""
    return page.locator(selector).evaluate(
        "body => [...body.rows].map(r => [...r.cells].map(c => c.textContent.replace(/\\s+/g, ' ').trim()))")


@pytest.mark.parametrize("how", ["served", "from disk"])
def test_drawn_tables_appear_served_and_from_disk(browser, server, site, how):
    """The matrix of a definition page and a solution's rows and trace views are drawn from data/<definition>.js,
    over http and from disk (file://, where fetch is refused: the file is a script), and nothing leaves."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    v = Visit(context.new_page())
    base = server if how == "served" else site.as_uri() + "/"
    if how == "from disk":
        v.page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                     else (v.external.append(route.request.url), route.abort()))
    page = open_page(v, base, f"generated/definitions/{DEF}.html")
    matrix = drawn_rows(page, "tbody[data-kt-draw='board'][data-kt-board='results-h100_sxm']")
    # H100_SXM: columns alice (fast), the baseline, bob; alice's wl-1 is 0.01 ms against the baseline's 0.04
    assert [row[0] for row in matrix] == ["wl-1", "wl-2", "wl-3", "wl-4"]
    assert matrix[0][:4] == ["wl-1", "2", "0.04", "0.01 4.00×"] and matrix[3][3] == "RUNTIME_ERROR"
    assert page.locator("tbody[data-kt-draw='board'] .kt-speedup.kt-up").count() > 0  # coloured as rendered ones were
    solution = open_page(v, base, f"generated/solutions/{FAST}.html")
    rows = drawn_rows(solution, "tbody[data-kt-draw='solution'][data-kt-board='results-h100_sxm']")
    assert rows[0] == ["wl-1", "2", "0.04", "0.01", "—", "4.00×", "0", "0", "passed", "measured", "details"]
    assert rows[3][-3:] == ["RUNTIME_ERROR", "measured", "details"]
    views = solution.locator("[data-kt-board='results-h100_sxm'] details.kt-trace")
    assert views.count() == 4
    assert views.first.locator("summary").text_content() == "wl-1 · passed · 0.01 ms"
    assert views.first.locator("dl").evaluate("dl => [...dl.children].map(e => e.textContent)") == [
        "Line", "1", "Timing", "median 0.01 ms, 50 samples"]  # its own facts: the rest is said once above
    assert "CUDA error: an illegal memory access </pre>" in views.nth(3).text_content()  # a log is text, not markup
    common = solution.locator(".kt-traces .kt-common").first.evaluate("dl => [...dl.children].map(e => e.textContent)")
    assert common[0] == "Trace file" and common[1].endswith("traces/alice/norm/rmsnorm_h128.jsonl")
    assert common[2:4] == ["Run at", common[3]] and common[3].endswith(" UTC") and common[4:6] == ["Provenance", "measured"]
    assert "Line" not in common and "Timing" not in common and "H100_SXM" in common
    assert solution.evaluate("typeof window.__planted") == "undefined"
    # sorting a drawn column: by latency, the failure (no latency) last
    solution.locator("tbody[data-kt-board='results-h100_sxm']").locator("xpath=..").locator(
        "thead th", has_text="Latency (ms)").click()
    assert [r[3] for r in drawn_rows(solution, "tbody[data-kt-board='results-h100_sxm']")] == ["0.01", "0.02", "0.03", "—"]
    v.check()
    context.close()


def test_item_page_icons_look_as_the_themes_own(visit, server):
    """The item pages' icons are drawn from kerneltrace-icons.css: the same size and colour as the inline SVGs of
    a page mkdocs built."""
    def icons(page: Page) -> list:
        return page.evaluate("""() => [...document.querySelectorAll('header svg')].filter(s => s.getBoundingClientRect().width)
            .map(s => { const st = getComputedStyle(s), r = s.getBoundingClientRect();
                        return [Math.round(r.width), Math.round(r.height), st.color,
                                s.querySelector('path') ? 'inline' : st.maskImage.slice(0, 30)]; })""")
    home = icons(open_page(visit, server, "index.html"))
    item = icons(open_page(visit, server, f"generated/solutions/{FAST}.html"))
    assert [i[:3] for i in item] == [i[:3] for i in home] and len(item) >= 3
    assert {i[3] for i in home} == {"inline"} and {i[3] for i in item} == {'url("data:image/svg+xml;charse'}
    visit.check()


def test_a_link_to_a_trace_view_lands_on_it_open(visit, server):
    page = open_page(visit, server, f"generated/solutions/{FAST}.html#results-test_cpu-t3")
    view = page.locator("#results-test_cpu-t3")
    assert view.evaluate("e => e.tagName") == "DETAILS" and view.get_attribute("open") is not None
    header = page.locator("header.md-header").bounding_box()
    box = view.bounding_box()
    assert header["y"] + header["height"] <= box["y"] + 1 and box["y"] < 900 / 2, (header, box)  # below the header, on screen
    assert page.evaluate("document.querySelector(':target') && document.querySelector(':target').id") == "results-test_cpu-t3"
    visit.check()
