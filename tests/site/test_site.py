"""The site: real `mkdocs build --strict` runs on the bundled dataset and on small tmp datasets.

Each build takes about a second. Builds run in a copy of the project's mkdocs.yml and site_src/
under tmp_path (build_site's `project_root`), so the tests never touch the checkout's
site_src/generated/ and can run next to a `kerneltrace serve`.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import markdown
import pytest
import yaml

from generator import cli
from generator.load import DEFAULT_DATASET, load
from generator.model.errors import KernelTraceError
from generator.model.schemas import DTYPES, RECORD_KINDS, load_schema
from generator.site import build_site
from generator.site.escape import escape_block, escape_inline, fence_for
from generator.site.render import write_pages

from results_dataset import DEF, FAST, SLOW, TRICKY_SOURCE, browser_dataset

REPO = Path(__file__).resolve().parents[2]
EVIL = "<script>alert(1)</script>"


def make_project(root: Path) -> Path:
    """A copy of the site sources (mkdocs.yml, site_src/ without generated pages) at `root`."""
    root.mkdir(parents=True)
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(REPO / "site_src", root / "site_src", ignore=shutil.ignore_patterns("generated", ".*"))
    return root


def build(dataset: Path, base: Path, name: str = "site") -> Path:
    """Build the site for `dataset` in a fresh project copy under `base`; returns the output folder."""
    project = make_project(base / f"project-{name}")
    out = base / name
    build_site(dataset, out, strict=True, project_root=project)
    return out


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def definition(name: str, **overrides) -> dict:
    data = {
        "name": name, "type": "misc", "tags": ["stage:decode", "model:tiny-model"],
        "description": "Copies x.",
        "axes": {"N": {"type": "var", "description": "Length."}, "D": {"type": "const", "value": 8}},
        "inputs": {"x": {"shape": ["N", "D"], "dtype": "float32", "description": "Input."},
                   "scale": {"shape": [], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["N", "D"], "dtype": "float32"}},
        "reference": "def run(x, scale):\n    return {'y': x * scale}\n",
        "constraints": ["N >= 1"],
    }
    data.update(overrides)
    return data


def html_files(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html"))}


def article(page: str) -> str:
    """The page's content, without the theme's header, navigation and footer."""
    return page[page.index("<article"):page.index("</article>")]


@pytest.fixture(scope="module")
def bundled_site(tmp_path_factory) -> Path:
    return build(DEFAULT_DATASET, tmp_path_factory.mktemp("bundled"))


# -- pages -----------------------------------------------------------------------------------

def test_bundled_dataset_has_a_page_per_definition(bundled_site):
    names = sorted(load(DEFAULT_DATASET).definitions)
    index = article((bundled_site / "generated" / "definitions.html").read_text(encoding="utf-8"))
    pages = sorted(p.stem for p in (bundled_site / "generated" / "definitions").glob("*.html"))
    assert pages == names
    for name in names:
        assert f'href="definitions/{name}.html"' in index
    if not names:
        assert "No definitions yet" in index
    for page in ("index.html", "contributing.html", "generated/schema.html", "404.html"):
        assert (bundled_site / page).is_file()


def test_definition_page_shows_the_spec(tmp_path):
    write_json(tmp_path / "dataset" / "definitions" / "misc" / "copy_d8.json", definition("copy_d8"))
    (tmp_path / "dataset" / "workloads" / "misc").mkdir(parents=True)
    (tmp_path / "dataset" / "workloads" / "misc" / "copy_d8.jsonl").write_text(
        "".join(json.dumps({"definition": "copy_d8", "workload": {"uuid": f"w{i}", "axes": {"N": i + 1},
                                                                  "inputs": {"x": {"type": "random"},
                                                                             "scale": {"type": "scalar", "value": 2.0}}}}) + "\n"
                for i in range(3)), encoding="utf-8")
    site = build(tmp_path / "dataset", tmp_path)

    index = article((site / "generated" / "definitions.html").read_text(encoding="utf-8"))
    row = re.search(r"<tr[^>]*>\s*<td[^>]*><a href=\"definitions/copy_d8.html\">.*?</tr>", index, re.S).group()
    cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    # name (untagged: a draft, marked as the export counts it), type, summary, solutions
    assert cells == ["copy_d8 draft", "misc", "Copies x.", "0"]
    assert 'data-type="misc" data-tags="model:tiny-model|stage:decode"' in row  # what the index's filters read

    page = article((site / "generated" / "definitions" / "copy_d8.html").read_text(encoding="utf-8"))
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for expected in ("Copies x.", "Length.", "[N, D]", "scalar", "N >= 1", "def run(x, scale):"):
        assert expected in text
    assert "No results yet" in text and "No solutions yet" in text  # a definition without results says so
    assert '<div class="language-python highlight">' in page  # the reference is a highlighted code block
    # File paths are named as the --dataset given, never as an installed checkout's dataset/.
    assert f"<code>{(tmp_path / 'dataset').as_posix()}/definitions/misc/copy_d8.json</code>" in page


def test_empty_dataset_says_no_definitions_yet(tmp_path):
    (tmp_path / "dataset").mkdir()
    site = build(tmp_path / "dataset", tmp_path)
    index = article((site / "generated" / "definitions.html").read_text(encoding="utf-8"))
    assert "No definitions yet" in index
    assert "<table>" not in index
    assert not (site / "generated" / "definitions").exists()
    # The result pages say there is nothing yet, instead of showing empty tables.
    for page, says in (("generated/authors.html", "No results yet"), ("generated/hardware.html", "No hardware yet"),
                       ("index.html", "No benchmark results yet")):
        text = article((site / page).read_text(encoding="utf-8"))
        assert says in text, page
    home = text_of(article((site / "index.html").read_text(encoding="utf-8")))
    assert "0 definitions" in home and "0 traces" in home and "0 hardware" in home


def test_contributor_text_cannot_inject_markup(tmp_path):
    evil = definition(
        "evil",
        description=f"{EVIL}\n\n# not a heading\n- not a list\n[link](javascript:alert(2)) {{: onclick=\"alert(3)\" }}",
        axes={"N": {"type": "var", "description": "<b>bold</b> | not a cell"}},
        inputs={"x": {"shape": ["N"], "dtype": "float32", "description": "<img src=x onerror=alert(4)>"}},
        outputs={"y": {"shape": ["N"], "dtype": "float32"}},
        reference="def run(x):\n    # ``` is not the end of the block </code><script>alert(5)</script>\n"
                  "    return {'y': x}\n",
        constraints=["0 < N <N+8"],  # valid Python that opens a tag if left raw
    )
    write_json(tmp_path / "dataset" / "definitions" / "misc" / "evil.json", evil)
    site = build(tmp_path / "dataset", tmp_path)

    page = article((site / "generated" / "definitions" / "evil.html").read_text(encoding="utf-8"))
    for raw in ("<script>alert", "<b>bold", "<img src=x", "<N+8", 'href="javascript'):
        assert raw not in page
    assert re.search(r"<[^>]*\son\w+\s*=", page) is None  # no event handler attribute on any element
    assert page.count("<h1") == 1 and page.count("<ul>") == 2  # the page's own heading and lists only
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for shown in (EVIL, "# not a heading", "- not a list", "[link](javascript:alert(2))", "<b>bold</b> | not a cell",
                  "<img src=x onerror=alert(4)>", "0 < N <N+8", "</code><script>alert(5)</script>", "return {'y': x}"):
        assert shown in text
    # The search index holds the same text, escaped as well.
    docs = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    assert any("alert(1)" in doc["text"] for doc in docs)
    assert not any("<script>alert" in doc["text"] or "<script>alert" in doc["title"] for doc in docs)


def test_schema_reference_lists_every_record_kind(bundled_site):
    page = article((bundled_site / "generated" / "schema.html").read_text(encoding="utf-8"))
    for kind in RECORD_KINDS:
        title = load_schema(kind)["title"]
        assert re.search(rf'<h2 id="{kind}">{re.escape(title)}<', page), kind
        assert f"JSON Schema: {kind}.json" in page
    for dtype in DTYPES:
        assert f"<code>{html.escape(dtype).replace('_', '&#95;')}</code>" in page
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for field in ("axes.<name>.value", "inputs.<name>.dtype", "evaluation.performance.latency_ms",
                  "workload.inputs.<name>.tensor_key", "if type is const", "Shared vocabulary"):
        assert field in text
    assert "definitions/<type>/<definition>.json" in text


# -- what the site loads ---------------------------------------------------------------------

# Attributes through which a page loads something (not <a href>, which only links).
LOADING_ATTRIBUTE = re.compile(
    r"<(?:script|img|iframe|source|audio|video|embed|track|input)\b[^>]*?\s(?:src|srcset)\s*=\s*[\"']?\s*"
    r"(?:https?:)?//"
    r"|<link\b[^>]*?\shref\s*=\s*[\"']?\s*(?:https?:)?//"
    r"|<object\b[^>]*?\sdata\s*=\s*[\"']?\s*(?:https?:)?//", re.I)
# Links out of the site: mkdocs.yml's repo_url, extra.issues_url and extra.hub_url.
_CONFIG = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
OUT_LINKS = {_CONFIG["repo_url"], _CONFIG["extra"]["issues_url"], _CONFIG["extra"]["hub_url"]}
CSS_REMOTE = re.compile(r"url\(\s*[\"']?\s*(?:https?:)?//|@import\s+[\"']?\s*(?:https?:)?//", re.I)


def test_site_loads_nothing_from_other_hosts(bundled_site):
    pages = html_files(bundled_site)
    assert pages
    for rel, text in pages.items():
        match = LOADING_ATTRIBUTE.search(text)
        assert match is None, f"{rel} loads from another host: {text[match.start():match.start() + 120]}"
        # Generated pages link out only where mkdocs.yml says (header); hand-written prose may cite sources.
        links = set(re.findall(r"<a\b[^>]*\shref=\"(https?://[^\"]*)\"", text))
        if rel.startswith("generated/"):
            assert links <= OUT_LINKS, f"{rel} links to other hosts: {links - OUT_LINKS}"
    for css in bundled_site.rglob("*.css"):
        text = css.read_text(encoding="utf-8")
        assert CSS_REMOTE.search(text) is None, css
    # The header links out (repository, issues, Hub) and nothing else does.
    index = (bundled_site / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{url}"' in index for url in OUT_LINKS)
    contributing = (bundled_site / "contributing.html").read_text(encoding="utf-8")
    assert all(f'href="{url}"' in article(contributing) for url in OUT_LINKS)  # where to open pull requests
    assert "data-md-component=\"source\"" not in index  # Material's repository statistics are never fetched
    for path in bundled_site.rglob("*"):
        if path.suffix in (".html", ".css", ".js", ".json"):
            text = path.read_text(encoding="utf-8")
            for host in ("fonts.googleapis.com", "fonts.gstatic.com", "googletagmanager.com", "cdn.jsdelivr.net"):
                assert host not in text, f"{path} mentions {host}"


def test_same_dataset_gives_the_same_bytes(tmp_path):
    # A dataset with every kind of page (the browser tests'), built twice: timestamps, temporary paths or random
    # ids would differ whatever the dataset's size (a second build of the bundled dataset cost 14 s here).
    dataset = browser_dataset(tmp_path / "dataset")
    first_site = build(dataset, tmp_path, "first")
    again = build(dataset, tmp_path, "again")
    first = {p.relative_to(first_site).as_posix(): p for p in first_site.rglob("*") if p.is_file()}
    second = {p.relative_to(again).as_posix(): p for p in again.rglob("*") if p.is_file()}
    assert sorted(first) == sorted(second)
    # sitemap.xml(.gz) included: the build date is pinned (SOURCE_DATE_EPOCH) unless the caller sets one.
    different = [rel for rel in sorted(first) if first[rel].read_bytes() != second[rel].read_bytes()]
    assert different == []


# -- failures --------------------------------------------------------------------------------

def test_dataset_with_errors_is_refused(tmp_path):
    bad = tmp_path / "dataset" / "definitions" / "misc" / "bad.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"name": "bad",', encoding="utf-8")
    out = tmp_path / "site"
    with pytest.raises(KernelTraceError, match=r"1 error\(s\):\n  definitions/misc/bad.json:1[^\n]*\nrun 'kerneltrace validate"):
        build_site(tmp_path / "dataset", out, project_root=make_project(tmp_path / "project"))
    assert not out.exists()


def test_mkdocs_warning_fails_the_strict_build_and_keeps_the_old_site(tmp_path):
    (tmp_path / "dataset").mkdir()
    project = make_project(tmp_path / "project")
    out = tmp_path / "site"
    build_site(tmp_path / "dataset", out, project_root=project)
    before = (out / "index.html").read_bytes()

    (project / "site_src" / "contributing.md").write_text("# Contributing\n\nSee [this](missing.md).\n")
    with pytest.raises(KernelTraceError) as error:
        build_site(tmp_path / "dataset", out, strict=True, project_root=project)
    message = str(error.value)
    assert message.startswith("mkdocs failed: Aborted with 1 warnings in strict mode")
    assert "missing.md" in message
    assert (out / "index.html").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset", "project", "site"]  # no leftovers

    build_site(tmp_path / "dataset", out, strict=False, project_root=project)  # warns, builds


def test_out_dir_that_is_not_a_site_is_not_replaced(tmp_path):
    (tmp_path / "dataset").mkdir()
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(KernelTraceError, match="does not look like a built site"):
        build_site(tmp_path / "dataset", out, project_root=make_project(tmp_path / "project"))
    assert (out / "notes.txt").read_text() == "keep me"


def test_cli_build(tmp_path, monkeypatch, capsys):
    (tmp_path / "dataset").mkdir()
    monkeypatch.chdir(make_project(tmp_path / "project"))  # the project is the current folder's
    assert cli.main(["build", "--dataset", str(tmp_path / "dataset"), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    for step in ("loading", "loaded 0 definitions", "running mkdocs build --strict", "rendered 0 pages",
                 "site written to"):
        assert step in err
    assert (tmp_path / "out" / "index.html").is_file()

    assert cli.main(["build", "--dataset", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    assert "kerneltrace build: error: the dataset at" in capsys.readouterr().err


# -- pieces ----------------------------------------------------------------------------------

def site_markdown(text: str) -> str:
    """`text` converted by Python-Markdown with the site's extensions (from mkdocs.yml)."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    names, options = [], {}
    for entry in config["markdown_extensions"]:
        name, opts = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        options[name] = opts or {}
    return markdown.markdown(text, extensions=names, extension_configs=options)


@pytest.mark.parametrize("text", ["<b>x</b>", "a | b", "[x](y)", "![i](j)", "*a* _b_ __c__", "`c`", "x {: #id }",
                                  "a\\b", "&amp; &#60;", "~~s~~", "$x$", "<https://example.org>", "# h", "- item",
                                  "1. item", "> quote", "!!! note", "??? note", "line\nbreak"])
def test_escaped_text_stays_text(text):
    inline = escape_inline(text)
    assert html.unescape(inline) == " ".join(text.split())
    assert re.fullmatch(r"<p>[^<>]*</p>", site_markdown(inline)), site_markdown(inline)
    cell = site_markdown(f"| a | b |\n| --- | --- |\n| {inline} | end |\n")
    assert "<td>end</td>" in cell and html.unescape(re.findall(r"<td>(.*?)</td>", cell)[0]) == " ".join(text.split())

    block = escape_block(f"first\n\n{text}\n  {text}")
    rendered = site_markdown(block)
    assert re.fullmatch(r"<p>first</p>\n<p>[^<>]*</p>", rendered), rendered


def test_fence_is_longer_than_any_backtick_run():
    assert fence_for("plain") == "```"
    assert fence_for("a ```` b") == "`````"


def test_write_pages_swaps_the_folder_and_skips_unchanged(tmp_path):
    target = tmp_path / "generated"
    assert write_pages({"a.md": "A", "sub/b.md": "B"}, target)
    assert not write_pages({"a.md": "A", "sub/b.md": "B"}, target)
    assert write_pages({"c.md": "C"}, target)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == ["c.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["generated"]


# -- results: leaderboards, solutions, authors, hardware ----------------------------------------

@pytest.fixture(scope="module")
def results_site(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("results")
    return build(browser_dataset(base / "dataset"), base)


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def table_rows(fragment: str) -> list[list[str]]:
    """The text of each body cell of the first table in `fragment`, row by row."""
    body = re.search(r"<tbody[^>]*>(.*?)</tbody>", fragment, re.S).group(1)
    return [[text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def page_of(site: Path, rel: str) -> str:
    return article((site / rel).read_text(encoding="utf-8"))


def results_file(site: Path, definition: str) -> dict:
    """A definition's results file (generator/site/data.py): a script that assigns one JSON object."""
    text = (site / "generated" / "data" / f"{definition}.js").read_text(encoding="utf-8")
    assert text.startswith("window.__ktResults=") and text.endswith(";\n")
    return json.loads(text[len("window.__ktResults="):-2])


def result(data: dict, board: int, row: int, solution: str) -> dict:
    """One result of a results file by field name, its repeated texts looked up (None: not run)."""
    b = data["boards"][board]
    raw = b["results"][row][b["solutions"].index(solution)]
    if raw == 0:
        return None
    r = dict(zip(data["fields"], raw + [None] * (len(data["fields"]) - len(raw))))
    for field in ("status", "provenance", "file", "when", "timer"):
        r[field] = None if r[field] is None else data["strings"][r[field]]
    r["env"] = [] if r["env"] is None else data["envs"][r["env"]]
    return r


def test_definition_page_has_a_leaderboard_per_hardware(results_site):
    page = page_of(results_site, f"generated/definitions/{DEF}.html")
    assert re.findall(r'<h3 id="(results-[^"]+)"', page) == ["results-h100_sxm", "results-test_cpu"]
    boards = re.findall(r'<div class="kt-sortable kt-leaderboard" id="board-[^"]+">(.*?)</div>', page, re.S)
    assert len(boards) == 2
    # H100_SXM: baseline 0.04 ms; alice 0.01/0.02/0.03 ms and a failure; bob 0.05 ms (see results_dataset); each
    # entry says what kind of contender it is, and how its results were produced
    assert table_rows(boards[0]) == [
        ["1", f"{FAST} hand-written measured", "alice", "triton", "2.20×", "75%", "—", "75% (3/4 ran) 1 RUNTIME_ERROR",
         "150"],
        ["2", "rmsnorm_h128_torch baseline before provenance was recorded", "baseline", "python", "1.00×", "0%", "—",
         "100% (4/4 ran)", "200"],
        ["3", f"{SLOW} hand-written recorded", "bob", "python", "0.80×", "0%", "—", "100% (4/4 ran)", "200"],
    ]  # SOL% "—": the test dataset has no H100_SXM hardware spec
    assert table_rows(boards[1])[0][:5] == ["1", f"{FAST} hand-written measured", "alice", "triton", "2.20×"]  # test_cpu: latencies doubled
    assert table_rows(boards[1])[0][6].endswith("%")  # test_cpu has a spec and the definition a cascade: SOL%
    assert f'href="../solutions/{FAST}.html"' in boards[0]

    # a fast_p chart per board, drawn from the definition's results file
    assert re.findall(r'<div class="kt-chart" data-kt-chart="([^"]*)"', page) == ["results-h100_sxm", "results-test_cpu"]
    charts = [board["chart"] for board in results_file(results_site, DEF)["boards"]]
    assert [series["name"] for series in charts[0]["series"]] == [FAST, "rmsnorm_h128_torch", SLOW]
    assert charts[0]["series"][0]["y"][0] == 0.75 and charts[0]["x_end"] == 4.5

    # The per-workload matrix is drawn in the browser from the definition's results file (test_browser.py draws
    # it): the page holds its header, an empty body that names the file, and loads it.
    details = re.search(r'<details class="kt-results">(.*?)</details>', page, re.S).group(1)
    assert re.search(r'<tbody data-kt-draw="board" data-kt-board="results-h100_sxm">', details)
    assert table_rows(details) == [["The rows are drawn by the site's script from the definition's results file ."]]
    assert f'<script src="../data/{DEF}.js"></script>' in page
    data = results_file(results_site, DEF)
    board = data["boards"][0]
    assert (board["hardware"], board["anchor"], board["axes"]) == ("H100_SXM", "results-h100_sxm", ["batch_size"])
    assert board["solutions"] == [FAST, "rmsnorm_h128_torch", SLOW]  # the columns, in ranking order
    assert [row[0] for row in board["rows"]] == ["wl-1", "wl-2", "wl-3", "wl-4"]
    assert board["rows"][0] == ["wl-1", ["2"], "0.04", 0]  # uuid, axes, the baseline's latency, stable
    fast = result(data, 0, 0, FAST)
    assert (fast["status"], fast["latency"], fast["speedup"], fast["flags"]) == ("PASSED", "0.01", "4.00×", 4)  # 4: faster
    assert result(data, 0, 3, FAST)["status"] == "RUNTIME_ERROR"
    text = text_of(page)
    assert f"{FAST} by alice (triton): results on H100_SXM, test_cpu" in text


def test_a_board_with_only_the_baseline_says_so(results_site):
    text = text_of(page_of(results_site, "generated/definitions/planted_h128.html"))
    assert "Only the baseline has run on test_cpu" in text and "there is nothing to rank yet" in text and "Rank" not in text


def test_solution_page(results_site):
    page = page_of(results_site, f"generated/solutions/{FAST}.html")
    text = text_of(page)
    for shown in ("alice's kernel.", "Rank 1 of 3", "geomean speedup 2.20×", "pass rate 75% (3/4 ran) 1 RUNTIME_ERROR",
                  "Write a fast RMSNorm.", "run_bench",
                  "2.0x <b>faster</b>", "first try"):
        assert shown in text, shown
    assert f'<a href="../definitions/{DEF}.html#results-h100_sxm">leaderboard</a>' in page
    # The source is highlighted, shown exactly as written: no snippet included, no fence closed, no script.
    sources = re.findall(r'<div class="kt-source"[^>]*>(.*?)</div>\s*</div>', page, re.S)
    assert len(sources) == 2 and '<span class="k">def</span>' in sources[0]
    assert html.unescape(re.sub(r"<[^>]+>", "", sources[1])).lstrip("\n") == TRICKY_SOURCE
    assert "KernelTrace is an open dataset" not in page and "<script>" not in page
    # Its rows and trace views are drawn from the definition's results file (the browser test reads them drawn).
    assert re.search(rf'<tbody data-kt-draw="solution" data-kt-board="results-h100_sxm" data-kt-solution="{FAST}">',
                     page)
    assert f'<div class="kt-traces" data-kt-draw="traces" data-kt-board="results-h100_sxm" ' \
           f'data-kt-solution="{FAST}"></div>' in page
    assert page.count(f'<script src="../data/{DEF}.js"></script>') == 1
    drawn = re.findall(r'<tbody data-kt-draw="solution"[^>]*>(.*?)</tbody>', page, re.S)
    assert len(drawn) == 2 and all(body.count("<tr>") == 1 and "kt-undrawn" in body for body in drawn)  # no rows
    data = results_file(results_site, DEF)
    first, failed = result(data, 0, 0, FAST), result(data, 0, 3, FAST)
    assert {k: first[k] for k in ("latency", "spread", "speedup", "abs", "rel", "provenance", "line", "samples")} == {
        "latency": "0.01", "spread": None, "speedup": "4.00×", "abs": "0", "rel": "0", "provenance": "measured",
        "line": 1, "samples": 50}
    assert first["file"] == f"{results_site.parent / 'dataset'}/traces/alice/norm/rmsnorm_h128.jsonl"
    assert first["when"].startswith("2026-") and ["hardware", "H100_SXM"] in first["env"]
    assert failed["status"] == "RUNTIME_ERROR" and "CUDA error: an illegal memory access </pre>" in failed["log"]
    assert "Not benchmarked yet" not in text


def test_results_file_keeps_every_field_a_result_has():
    """Trailing empty fields are left out of a result, never a first index (0) nor a field before a kept one."""
    from generator.analyse.results import Entry, Leaderboard, Result, WorkloadRow
    from generator.site.data import results_data

    env = (("hardware", "H100_SXM"),)
    failed = Result("s", "w1", "RUNTIME_ERROR", None, None, None, None, None, "", "2026-11-01T10:00:00Z", "t.jsonl:3",
                    environment=env, provenance="measured")
    passed = Result("s", "w2", "PASSED", 0.5, 2.0, 0.0, 0.0, 10, "", "2026-11-01T10:00:00Z", "t.jsonl:4",
                    environment=env, provenance="measured", timer="cuda_event", spread=(0.4, 0.6))
    noisy = Result("s", "w3", "PASSED", 1234.5, None, None, None, None, "x" * 7000, "2026-11-01T10:00:00Z",
                   "t.jsonl:5", environment=env, unstable=True)
    entry = Entry(1, "s", "a", "python", False, True, 3, 2, 1, 0, 0.5, (), 1, 2.0, 0.5, 0.5, 0.5, 10, None, 3, "", ())
    rows = tuple(WorkloadRow(r.workload, (("n", i),), 1.0, True, (r,)) for i, r in enumerate((failed, passed, noisy)))
    data = results_data("d", (Leaderboard("d", "H100_SXM", None, ("w1", "w2", "w3"), (entry,), rows, 2.0),), "ds")
    got = [dict(zip(data["fields"], row[0])) for row in data["boards"][0]["results"]]
    strings = data["strings"]
    assert strings[got[0]["status"]] == "RUNTIME_ERROR" and data["envs"][got[0]["env"]] == [["hardware", "H100_SXM"]]
    assert (got[0]["env"], got[0]["line"], strings[got[0]["file"]]) == (0, 3, "ds/t.jsonl") and "samples" not in got[0]
    assert {k: got[1][k] for k in ("latency", "spread", "speedup", "flags", "abs", "samples")} == {
        "latency": "0.5", "spread": "0.4–0.6", "speedup": "2.00×", "flags": 4, "abs": "0", "samples": 10}
    assert strings[got[1]["timer"]] == "cuda_event" and "log" not in got[1]
    assert got[2]["latency"] == "1,234" and got[2]["flags"] == 1 and got[2]["provenance"] is None  # unstable
    assert got[2]["log"] == "x" * 6000 and got[2]["cut"] == 1000  # a long log: its end, and how much is left out


def test_item_pages_draw_their_icons_from_one_stylesheet(results_site):
    """The shell the 11,000 item pages share has no inline icon (a quarter of it was SVG paths): each is an empty
    <svg> keeping its viewBox (so the theme sizes it as before), painted through a mask from one stylesheet."""
    page = (results_site / "generated" / "solutions" / f"{FAST}.html").read_text(encoding="utf-8")
    shell = page[:page.index("<article")] + page[page.index("</article>"):]
    icons = re.findall(r"<svg([^>]*)>(.*?)</svg>", shell, re.S)
    assert len(icons) >= 8 and all(inner == "" and "viewBox=" in attrs for attrs, inner in icons), icons
    used = {int(n) for attrs, _ in icons for n in re.findall(r"kt-i(\d+)", attrs)}
    assert '<link rel="stylesheet" href="../../assets/kerneltrace-icons.css">' in shell
    css = (results_site / "assets" / "kerneltrace-icons.css").read_text(encoding="utf-8")
    assert {int(n) for n in re.findall(r"\.kt-i(\d+)\{--kt-i:url\(\"data:image/svg\+xml", css)} == used
    assert "<path" not in shell and "<path" in (results_site / "index.html").read_text(encoding="utf-8")  # mkdocs' own


def test_authors_hardware_and_home_pages(results_site):
    authors = page_of(results_site, "generated/authors.html")
    boards = re.findall(r'<div class="kt-sortable kt-authors">(.*?)</div>', authors, re.S)
    assert len(boards) == 2 and '<div class="kt-chart"' in authors
    assert [row[:2] + row[4:] for row in table_rows(boards[0])] == [
        ["1", "alice", "3 of 4", "2.20×", "75%"], ["2", "bob", "4 of 4", "0.80×", "0%"]]  # people and agents
    references = re.findall(r'<div class="kt-sortable kt-references">(.*?)</div>', authors, re.S)
    # the baseline apart, not ranked; its results' traces record no provenance, and the page says so where it lists them
    assert [row[:2] + row[4:] for row in table_rows(references[0])] == [
        ["baseline 4 of unknown provenance", "baseline", "4 of 4", "1.00×", "0%"]]

    index = page_of(results_site, "generated/hardware.html")
    assert text_of(index).count("H100_SXM") == 1 and 'href="hardware/test_cpu.html"' in index
    h100 = page_of(results_site, "generated/hardware/H100_SXM.html")
    assert "no spec for this hardware" in text_of(h100)
    assert table_rows(h100) == [[DEF, "norm", "4", "3", FAST, "alice", "2.20×", "—", "75%"]]
    cpu = text_of(page_of(results_site, "generated/hardware/test_cpu.html"))
    assert "float32 1.0 TFLOP/s" in cpu and "made up for tests" in cpu

    home = page_of(results_site, "index.html")
    text = text_of(home)
    for count in ("2 definitions", "6 workloads", "4 solutions", "26 traces", "2 hardware"):
        assert count in text, count
    assert re.search(r"Latest results", text) and f"{FAST}" in text


def test_hardware_names_of_any_kind_get_a_page(tmp_path):
    from generator.site.urls import hardware_slug
    assert hardware_slug("H100_SXM") == "H100_SXM"
    odd = hardware_slug("Intel(R) Xeon(R) Platinum 8480+ / 2 sockets")
    assert re.fullmatch(r"Intel-R-Xeon-R-Platinum-8480-2-sockets-[0-9a-f]{8}", odd)
    assert hardware_slug("../..") != hardware_slug("..") and "/" not in hardware_slug("../..")


def test_charts_are_drawn_by_the_site_itself(results_site):
    # No chart library is shipped: the fast_p charts are inline SVG drawn by kerneltrace.js.
    assert not list(results_site.rglob("plotly*")) and (results_site / "assets" / "kerneltrace.js").is_file()
    page = (results_site / "generated" / "definitions" / f"{DEF}.html").read_text(encoding="utf-8")
    assert "assets/kerneltrace.js" in page and "plotly" not in page.lower()
    # A chart page weighs at most 1 MB with every script and style it loads.
    loads = re.findall(r'<(?:script|link)\b[^>]*\s(?:src|href)="([^"#?]+)', page)
    files = {(results_site / "generated" / "definitions" / rel).resolve() for rel in loads}
    files = {f for f in files if f.suffix in (".js", ".css") and f.is_file()}
    total = len(page.encode("utf-8")) + sum(f.stat().st_size for f in files)
    assert total <= 1_000_000, total


def test_model_page_shows_where_a_step_spends_its_time(tmp_path):
    from generator.analyse.coverage import ModelCoverage, StageCoverage
    from generator.analyse.estimates import EstimatePart, StepEstimate
    from generator.site.templates import environment

    estimate = StepEstimate("decode", 64, "H100_SXM", True, (
        EstimatePart("gemm_<x>", 4, "trace", "w1", 64, "decode", 2.0, 1.5),
        EstimatePart("norm", 1, "speed of light", "w2", 64, "decode", 0.5, 0.5),
        EstimatePart("gone", 2, "none", description="no definition yet")))
    m = ModelCoverage("m", "M", "f", "", (), {"decode": StageCoverage(1, 1, 1, 1), "prefill": StageCoverage(1, 1, 1, 1)})
    page = environment().get_template("model.md.j2").render(m=m, est=(estimate,), dataset="dataset",
                                                              decode_tokens=64, prefill_tokens=4096)
    bar = re.search(r'<div class="kt-timebar-bar"[^>]*>(.*?)</div>', page).group(1)
    widths = re.findall(r'style="width: ([0-9.]+)%" title="([^"]*)"', bar)
    assert [w for w, _ in widths] == ["75.00", "25.00"]  # 1.5 of 2.0 ms, 0.5 of 2.0 ms; "none" is not drawn
    assert widths[0][1].startswith("gemm_&lt;x&gt;: 4 calls") and widths[1][1].endswith("from the speed of light")
    assert "From traces: 1 kernels, 4 of 7 calls, 75% of the time." in page
    assert "Not estimated: 1 kernels, 2 calls." in page
    overview = environment().get_template("models.md.j2").render(coverage=[m], prefix="", estimates={"m": (estimate,)},
                                                                 dataset="dataset", decode_tokens=64, prefill_tokens=4096)
    assert "(models/m.md)" in overview and "<code>gemm_&lt;x&gt;</code> 75%" in overview


def _local_targets(site: Path):
    """(page, attribute value, target path, fragment) of every link or load to a file of the site."""
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for value in re.findall(r"<(?:a|link|script|img)\b[^>]*?\s(?:href|src)=\"([^\"]*)\"", text):
            value = html.unescape(value)
            if re.match(r"^[a-z]+:", value) or value.startswith(("#", "/")) or not value:  # 404.html: absolute
                continue
            path, _, fragment = value.partition("#")
            path = path.split("?")[0]
            target = (page.parent / path).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            yield page.relative_to(site), value, target, fragment


def test_every_link_and_load_resolves(bundled_site, results_site):
    for site in (bundled_site, results_site):
        ids: dict[Path, set[str]] = {}
        for page, value, target, fragment in _local_targets(site):
            assert target.is_file(), f"{page}: {value} -> missing {target}"
            if fragment and target.suffix == ".html" and "generated" in target.parts:
                if target not in ids:
                    ids[target] = set(re.findall(r'\sid="([^"]+)"', target.read_text(encoding="utf-8")))
                assert fragment in ids[target], f"{page}: {value} -> no #{fragment}"


def test_agent_trace_in_list_form_reads_as_one_conversation():
    from generator.model.records import AgentTrace, Source
    from generator.site.results import conversation

    first = [{"role": "system", "content": "You write kernels."}, {"role": "user", "content": "Write rmsnorm."}]
    entries = [
        {"type": "llm_request", "model": "m1", "conversation": first,
         "response": {"choices": [{"message": {"role": "assistant", "content": "Let me test.",
                                               "tool_calls": [{"id": "1", "type": "function",
                                                               "function": {"name": "bench", "arguments": "{\"x\":1}"}}]}}]}},
        {"type": "tool_call", "tool_name": "bench", "arguments": {"x": 1}, "result": "ok", "cli_output": "1.5x"},
        {"type": "llm_request", "model": "m1",
         "conversation": first + [{"role": "assistant", "content": "Let me test."}, {"role": "tool", "content": "ok"}],
         "response": {"role": "assistant", "content": [{"type": "text", "text": "Done."},
                                                       {"type": "tool_use", "name": "submit", "input": {"f": "a.py"}}]}},
        {"type": "mcp", "server": "files"},
    ]
    conv = conversation(AgentTrace.from_data("alice", "sol", entries, Source("agent_traces/alice/sol.json")))
    assert [(m.role, m.title) for m in conv.messages] == [
        ("system", "System"), ("user", "User"), ("assistant", "Assistant"), ("tool_call", "Tool call: bench"),
        ("tool", "Tool result"), ("assistant", "Assistant"), ("note", "mcp")]  # the repeated response is shown once
    assert conv.messages[2].calls == (("bench", '{\n  "x": 1\n}'),)
    assert conv.messages[3].text == "ok\n\n1.5x"
    assert conv.messages[5].text == "Done." and conv.messages[5].calls == (("submit", '{\n  "f": "a.py"\n}'),)
    assert conv.model == "m1" and conv.author == "alice"


def test_definition_page_lists_its_workloads(results_site):
    page = page_of(results_site, f"generated/definitions/{DEF}.html")
    listing = re.search(r'<details class="kt-workloads" open>(.*?)</details>', page, re.S).group(1)
    rows = table_rows(listing)
    assert [r[:2] for r in rows] == [["wl-1", "2"], ["wl-2", "4"], ["wl-3", "8"], ["wl-4", "16"]]
    assert rows[0][2] == "input: random; weight: random; eps: scalar 1e-05" and rows[0][3] == "1"


def test_include_markers_in_contributor_code_stay_text(tmp_path):
    # Only the home page's markers are filled (build.render_site); a reference that contains one, or a
    # snippet marker, is shown as written and pulls no file into its page.
    from dataset_factory import DEFINITION, write_dataset

    d = json.loads(json.dumps(DEFINITION))
    d["reference"] = d["reference"].replace(
        "import torch\n", 'import torch\n# <!-- kerneltrace:include generated/coverage.txt -->\n--8<-- "generated/models.md"\n', 1)
    root = write_dataset(tmp_path / "dataset", definition=d, traces=[])
    out = build(root, tmp_path)
    page = (out / "generated/definitions/rmsnorm_h128.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "<!-- kerneltrace:include generated/coverage.txt -->" in text
    assert '--8<-- "generated/models.md"' in text
    assert "decode step: kernels with a definition" not in page and "calls per step" not in page


def test_a_formula_block_in_a_description_renders_as_escaped_pre():
    from generator.site.prose import summary
    from generator.site.templates import environment

    text = ("Routed experts of one token. Weighted sum.\n\n"
            "    out[t] = Σ_k w[t,k] · W2[e_k] (silu(W1[e_k] x_t) ⊙ W3[e_k] x_t)\n"
            "      for k < top_k   <script>alert(1)</script>\n\n"
            "Layouts\n  are row-major.")
    html_out = environment().from_string('{% import "macros.html.j2" as kt %}{{ kt.paragraphs(text) }}').render(
        text=text)
    pre = re.search(r'<pre class="kt-formula"><code>(.*?)</code></pre>', html_out, re.S).group(1)
    # lines kept as written less the 4-space indent (the second line keeps its own 2 extra), escaped
    assert pre == ("out[t] = Σ_k w[t,k] · W2[e_k] (silu(W1[e_k] x_t) ⊙ W3[e_k] x_t)\n"
                   "  for k &lt; top_k   &lt;script&gt;alert(1)&lt;/script&gt;")
    assert "<script>" not in html_out
    assert re.findall(r"<p>(.*?)</p>", html_out) == ["Routed experts of one token. Weighted sum.",
                                                     "Layouts are row-major."]
    assert summary(text) == "Routed experts of one token."
    # a block with one line not indented by 4 spaces is prose, not a formula
    plain = environment().from_string('{% import "macros.html.j2" as kt %}{{ kt.paragraphs(text) }}').render(
        text="    a = b\nc = d")
    assert "<pre" not in plain and "<p>a = b c = d</p>" in plain


def test_the_unstable_rule_is_stated_as_stability_py_has_it(results_site):
    from generator.model.stability import MAX_SPREAD, MIN_OVER_MEDIAN
    from generator.site.templates import _share

    spread, fastest = _share(MAX_SPREAD), _share(MIN_OVER_MEDIAN)
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert f"(p80 − p20 over {spread} the median) or its fastest sample is under {fastest} of the median" in readme
    page = text_of(page_of(results_site, f"generated/definitions/{DEF}.html"))
    assert f"the middle of its samples wider than {spread} their median, or its fastest sample under {fastest} of it" in page


def test_pages_say_plainly_when_no_gpu_has_results(tmp_path):
    """Home, kernels index and kernel page: while every result is from a CPU they say so loudly; once a GPU
    (a hardware spec of kind gpu) has results they list the hardware plainly."""
    from generator.site.render import render_pages

    from dataset_factory import HARDWARE as CPU_SPEC
    from dataset_factory import TRACE, dump, dump_lines, write_dataset

    def said(root: Path) -> list[str]:
        pages, plan = render_pages(load(root))
        kernel = next(item for item in plan.render() if item.path.endswith("definitions/rmsnorm_h128.html"))
        return [text_of(page) for page in (pages["home.txt"], pages["definitions.md"], kernel.body)]

    root = write_dataset(tmp_path / "cpu")  # its one trace ran on test_cpu, a CPU
    for text in said(root):
        assert "No GPU results yet. Every number here was measured on test_cpu (CPU)" in text, text[:400]
    dump(root / "hardware/h100.json", dict(CPU_SPEC, name="H100", kind="gpu"))
    gpu = json.loads(json.dumps(TRACE))
    gpu["evaluation"]["environment"]["hardware"] = "H100"
    dump_lines(root / "traces/baseline/norm/rmsnorm_h128.jsonl", [TRACE, gpu])
    for text in said(root):
        assert "Results on H100 (GPU), test_cpu (CPU)." in text and "No GPU results yet" not in text, text[:400]


SPELT_LINK = re.compile(r'href="\{\{ (?:root|prefix|up) \}\}(?:solutions/|definitions/|\.\./)?[a-z]+\.html|'
                        r'(?:solutions|definitions)/\{\{[^}]*\}\}\.html')


def spelt_links(text: str) -> list[str]:
    """Page paths a template spells out itself instead of taking them from urls.py."""
    return SPELT_LINK.findall(text)


def test_templates_take_page_links_from_urls():
    from generator.site.templates import TEMPLATE_DIR
    found = {p.name: spelt_links(p.read_text()) for p in TEMPLATE_DIR.glob("*.j2")}
    assert not {k: v for k, v in found.items() if v}, "page paths belong in generator/site/urls.py"
    # a planted spelt-out link is caught, both shapes
    assert spelt_links('<a href="{{ root }}solutions/{{ e.solution | url }}.html">')
    assert spelt_links('<a href="{{ root }}hardware.html">')
