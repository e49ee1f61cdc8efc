/* KernelTrace site behaviour: sortable tables, the kernels index's filters, fast_p charts (inline
 * SVG), and search when the site is opened from disk.
 *
 * Everything runs locally and nothing is fetched from another host. Chart data and table values
 * come from the page (data-* attributes written at build time) or from the definition's results file
 * (a script the page loads); names are inserted as text nodes, so they are shown, never interpreted.
 */
(function () {
  "use strict";

  var script = document.currentScript;

  // -- sortable tables ------------------------------------------------------------------------
  // Any table inside an element with class kt-sortable. A cell's data-sort attribute, when
  // present, is its sort key (numbers as numbers; empty = no value, always last).

  function cellKey(cell) {
    if (!cell) return "";
    var key = cell.getAttribute("data-sort");
    return key === null ? cell.textContent.trim() : key;
  }

  function compareKeys(a, b) {
    var x = Number(a), y = Number(b);
    if (a !== "" && b !== "" && !isNaN(x) && !isNaN(y)) return x - y;
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function sortTable(table, column, header) {
    var body = table.tBodies[0];
    if (!body) return;
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(header.parentNode.cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      return { row: row, key: cellKey(row.cells[column]), index: index };
    });
    rows.sort(function (a, b) {
      if (a.key === "" || b.key === "") {  // no value: last in either direction
        if (a.key === b.key) return a.index - b.index;
        return a.key === "" ? 1 : -1;
      }
      var order = compareKeys(a.key, b.key);
      return (ascending ? order : -order) || a.index - b.index;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }

  function initSortable(root) {
    root.querySelectorAll(".kt-sortable table").forEach(function (table) {
      if (table.getAttribute("data-kt-sortable") || !table.tHead) return;
      table.setAttribute("data-kt-sortable", "1");
      var headRow = table.tHead.rows[table.tHead.rows.length - 1];
      Array.prototype.forEach.call(headRow.cells, function (th, column) {
        th.classList.add("kt-sort");
        th.tabIndex = 0;
        th.addEventListener("click", function () { sortTable(table, column, th); });
        th.addEventListener("keydown", function (event) {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            sortTable(table, column, th);
          }
        });
      });
    });
  }

  // -- filters --------------------------------------------------------------------------------
  // A form.kt-filters holds selects with data-filter="NAME" and a text box (data-filter-text); the
  // rows of the table inside the element with id data-target carry data-NAME="value|value".
  // URL parameters (?type=gemm&model=llama-3.1-8b&tag=fused&find=rms; not ?q=, which opens Material's
  // search) preset the selects and the text box, and every change writes them back (history.replaceState),
  // so a filtered view can be shared or bookmarked.

  function initFilters(root) {
    root.querySelectorAll("form.kt-filters").forEach(function (form) {
      var target = document.getElementById(form.getAttribute("data-target"));
      if (!target) return;
      var selects = form.querySelectorAll("select[data-filter]");
      var text = form.querySelector("input[data-filter-text]");
      var count = form.querySelector(".kt-count");
      var noun = form.getAttribute("data-noun") || "rows";
      var params = new URLSearchParams(window.location.search);
      function apply() {
        var rows = target.querySelectorAll("tbody tr");
        var shown = 0;
        rows.forEach(function (row) {
          var keep = Array.prototype.every.call(selects, function (select) {
            if (!select.value) return true;
            return (row.getAttribute("data-" + select.getAttribute("data-filter")) || "").split("|")
              .indexOf(select.value) >= 0;
          });
          if (keep && text && text.value.trim()) {
            var words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
            var hay = row.textContent.toLowerCase();
            keep = words.every(function (w) { return hay.indexOf(w) >= 0; });
          }
          row.hidden = !keep;
          if (keep) shown += 1;
        });
        if (count) count.textContent = shown + " of " + rows.length + " " + noun;
      }
      function remember() {
        var state = new URLSearchParams(window.location.search);
        selects.forEach(function (select) {
          var value = select.value;
          if (value && select.name === "model") value = value.replace(/^model:/, "");
          if (value) state.set(select.name, value); else state.delete(select.name);
        });
        if (text && text.value.trim()) state.set("find", text.value.trim()); else state.delete("find");
        var query = state.toString();
        try {
          window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash);
        } catch (e) { /* file:// pages may refuse: the filters still work */ }
      }
      function changed() { apply(); remember(); }
      selects.forEach(function (select) {
        var wanted = params.get(select.name);  // ?type=gemm, ?model=llama-3.1-8b, ?tag=fused
        if (wanted && select.name === "model") wanted = "model:" + wanted;
        if (wanted && Array.prototype.some.call(select.options, function (o) { return o.value === wanted; })) {
          select.value = wanted;
        }
        select.addEventListener("change", changed);
      });
      if (text) {
        if (params.get("find")) text.value = params.get("find");
        text.addEventListener("input", changed);
      }
      apply();
    });
  }

  // -- charts ---------------------------------------------------------------------------------
  // fast_p step curves drawn as inline SVG: no library, nothing fetched. Colours come from CSS
  // classes (kt-c0..7) and currentColor, so the dark-mode toggle recolours them at once. Hovering
  // anywhere over the plot shows every visible curve's value at that p; clicking a name in the
  // legend hides or shows its curve.

  var SVG = "http://www.w3.org/2000/svg";

  function svg(name, attrs, parent) {
    var el = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(el);
    return el;
  }

  function valueAt(series, p) {  // fast_p is a right-open step: the last point at or before p
    var v = series.y[0];
    for (var i = 0; i < series.x.length && series.x[i] <= p; i++) v = series.y[i];
    return v;
  }

  function drawChart(el, spec) {
    var W = 640, H = 300, L = 52, R = 12, T = 10, B = 42;
    var xEnd = spec.x_end || 2;
    function px(p) { return L + (W - L - R) * p / xEnd; }
    function py(v) { return T + (H - T - B) * (1 - v); }
    el.textContent = "";
    var box = svg("svg", { viewBox: "0 0 " + W + " " + H, class: "kt-svg", role: "img" }, el);
    var grid = svg("g", { class: "kt-grid" }, box);
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      svg("line", { x1: L, x2: W - R, y1: py(v), y2: py(v) }, grid);
      svg("text", { x: L - 6, y: py(v) + 4, "text-anchor": "end" }, grid).textContent = Math.round(v * 100) + "%";
    });
    var step = xEnd <= 4 ? 0.5 : Math.ceil(xEnd / 8);
    for (var p = 0; p <= xEnd + 1e-9; p += step) {
      svg("line", { x1: px(p), x2: px(p), y1: T, y2: H - B }, grid);
      svg("text", { x: px(p), y: H - B + 16, "text-anchor": "middle" }, grid).textContent = String(Math.round(p * 100) / 100);
    }
    svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "kt-axis" }, box).textContent = "p: speedup over the baseline";
    var t = svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", class: "kt-axis",
                          transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" }, box);
    t.textContent = "fast_p";
    var paths = spec.series.map(function (s, i) {
      var d = "";
      for (var k = 0; k < s.x.length; k++) {
        d += (k ? "H" + px(s.x[k]) + "V" : "M" + px(s.x[k]) + " ") + py(s.y[k]);
      }
      return svg("path", { d: d, class: "kt-line kt-c" + (i % 8) }, box);
    });
    var cursor = svg("line", { class: "kt-cursor", y1: T, y2: H - B, x1: -10, x2: -10 }, box);
    var tip = document.createElement("div");
    tip.className = "kt-tip";
    tip.hidden = true;
    el.appendChild(tip);
    var hidden = spec.series.map(function () { return false; });
    function hover(event) {
      var rect = box.getBoundingClientRect();
      var x = (event.clientX - rect.left) * W / rect.width;
      if (x < L || x > W - R) { tip.hidden = true; cursor.setAttribute("x1", -10); cursor.setAttribute("x2", -10); return; }
      var p = (x - L) / (W - L - R) * xEnd;
      cursor.setAttribute("x1", x); cursor.setAttribute("x2", x);
      tip.textContent = "";
      var head = document.createElement("div");
      head.textContent = "p = " + p.toFixed(2);
      tip.appendChild(head);
      spec.series.forEach(function (s, i) {
        if (hidden[i]) return;
        var row = document.createElement("div");
        var mark = document.createElement("i");
        mark.className = "kt-c" + (i % 8);
        row.appendChild(mark);
        row.appendChild(document.createTextNode(s.name + ": " + Math.round(valueAt(s, p) * 100) + "%"));
        tip.appendChild(row);
      });
      tip.hidden = false;
      tip.style.left = Math.min(event.clientX - el.getBoundingClientRect().left + 12, el.clientWidth - 180) + "px";
    }
    box.addEventListener("mousemove", hover);
    box.addEventListener("mouseleave", function () { tip.hidden = true; });
    var legend = document.createElement("div");
    legend.className = "kt-legend";
    spec.series.forEach(function (s, i) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "kt-legend-item";
      button.setAttribute("aria-pressed", "true");
      var mark = document.createElement("i");
      mark.className = "kt-c" + (i % 8);
      button.appendChild(mark);
      button.appendChild(document.createTextNode(s.name));  // text, never markup
      button.addEventListener("click", function () {
        hidden[i] = !hidden[i];
        paths[i].style.display = hidden[i] ? "none" : "";
        button.setAttribute("aria-pressed", hidden[i] ? "false" : "true");
      });
      legend.appendChild(button);
    });
    el.appendChild(legend);
    el.classList.add("kt-chart-ready");
  }

  function initCharts(root) {
    // A chart's spec: its data-chart attribute, or (data-kt-chart="<board anchor>") its board in the results file.
    root.querySelectorAll(".kt-chart[data-chart], .kt-chart[data-kt-chart]").forEach(function (el) {
      if (el.classList.contains("kt-chart-ready")) return;
      var spec = null, anchor = el.getAttribute("data-kt-chart");
      if (anchor !== null) {
        (window.__ktResults ? window.__ktResults.boards : []).forEach(function (b) { if (b.anchor === anchor) spec = b.chart; });
      } else {
        try { spec = JSON.parse(el.getAttribute("data-chart")); } catch (e) { spec = null; }
      }
      if (spec) drawChart(el, spec);
    });
  }

  // -- per-workload tables drawn from the definition's results file ------------------------------
  // A definition page and its solutions' pages load data/<definition>.js, which sets window.__ktResults
  // (written by generator/site/data.py: every number already formatted), and leave the bodies of their
  // per-workload tables empty: tbody[data-kt-draw="board"] (the definition's matrix), "solution" (one
  // solution's rows) and div[data-kt-draw="traces"] (its trace views). Every text from the dataset is set
  // as text, never as markup.

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined || c === "") return;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    });
    return e;
  }

  function sortKey(shown) {  // the number a formatted value shows ("1,024", "2.00×"), or "" for none
    if (shown === null || shown === undefined) return "";
    var n = parseFloat(String(shown).replace(/,/g, ""));
    return isNaN(n) ? "" : String(n);
  }

  function decode(data, raw) {  // one result: an object by field name, or null when it did not run
    if (!raw) return null;
    var r = {};
    data.fields.forEach(function (f, i) { r[f] = raw[i] === undefined ? null : raw[i]; });
    ["status", "provenance", "file", "when", "timer"].forEach(function (f) {
      if (r[f] !== null) r[f] = data.strings[r[f]];
    });
    r.env = r.env === null ? [] : data.envs[r.env];
    r.passed = r.status === data.labels.passed;
    return r;
  }

  function shown(data, value) { return value === null || value === undefined ? data.labels.none : value; }

  function trendClass(r) { return "kt-speedup " + (r.flags & 4 ? "kt-up" : r.flags & 8 ? "kt-down" : "kt-even"); }

  function noisyBadge(data, r) {  // unstable or unsandboxed: passed, not ranked
    var said = r.flags & 1 ? data.labels.unstable : r.flags & 2 ? data.labels.unsandboxed : null;
    return said && el("span", { class: "kt-status kt-unstable", title: said[1] }, [said[0]]);
  }

  function statusBadge(data, r) {
    if (!r) return [el("span", { class: "kt-status kt-none" }, ["not run"])];
    if (!r.passed) return [el("span", { class: "kt-status kt-bad" }, [r.status])];
    var noisy = noisyBadge(data, r);
    return [el("span", { class: "kt-status kt-ok" }, ["passed"])].concat(noisy ? [" ", noisy] : []);
  }

  function provenanceBadge(data, r, titled) {
    if (!r || !r.provenance) return null;
    var said = data.labels.provenance[r.provenance];
    return el("span", { class: "kt-badge kt-prov-" + r.provenance, title: titled ? said[1] : null }, [said[0]]);
  }

  function workloadCells(data, row, tr) {
    tr.appendChild(el("td", null, [el("code", null, [row[0]])]));
    row[1].forEach(function (v) { tr.appendChild(el("td", null, [shown(data, v)])); });
  }

  function matrixCell(data, r) {  // latency (spread on hover) and speedup, or the status
    if (!r || !r.passed) return el("td", { class: "kt-cell", "data-sort": "" }, statusBadge(data, r));
    var lat = el("span", { class: "kt-lat" + (r.flags & 3 ? " kt-noisy" : ""),
                           title: r.spread ? "p20–p80 " + r.spread + " ms" : null }, [shown(data, r.latency)]);
    var mark = noisyBadge(data, r) || el("span", { class: trendClass(r) }, [shown(data, r.speedup)]);
    return el("td", { class: "kt-cell", "data-sort": sortKey(r.speedup) }, [lat, " ", mark]);
  }

  function drawBoard(data, board, body) {
    board.rows.forEach(function (row, i) {
      var tr = el("tr");
      workloadCells(data, row, tr);
      tr.appendChild(el("td", { "data-sort": sortKey(row[2]) }, [shown(data, row[2])].concat(
        row[3] ? [" ", noisyBadge(data, { flags: 1 })] : [])));
      board.results[i].forEach(function (raw) { tr.appendChild(matrixCell(data, decode(data, raw))); });
      body.appendChild(tr);
    });
  }

  function drawSolution(data, board, column, body) {
    board.rows.forEach(function (row, i) {
      var r = decode(data, board.results[i][column]), none = r || {};
      var tr = el("tr");
      workloadCells(data, row, tr);
      function num(value, content) {
        tr.appendChild(el("td", { "data-sort": sortKey(value) }, [content === undefined ? shown(data, value) : content]));
      }
      num(row[2]);
      num(none.latency);
      tr.appendChild(el("td", null, [shown(data, none.spread)]));
      num(none.speedup, el("span", { class: trendClass(r || { flags: 0 }) }, [shown(data, none.speedup)]));
      num(none.abs);
      num(none.rel);
      tr.appendChild(el("td", { "data-sort": r ? r.status : "NOT_RUN" }, statusBadge(data, r)));
      tr.appendChild(el("td", null, [provenanceBadge(data, r, false)]));
      tr.appendChild(el("td", null, [r ? el("a", { href: "#" + board.anchor + "-t" + (i + 1) }, ["details"]) : null]));
      body.appendChild(tr);
    });
  }

  function facts(data, r) {  // what a trace's detail view says besides its timing and log, in order
    return [["Trace file", "code", r.file], ["Line", "text", String(r.line)], ["Run at", "text", r.when],
            ["Provenance", "provenance", r.provenance]].concat(r.env.map(function (kv) { return [kv[0], "text", kv[1]]; }));
  }

  function factList(data, list, r, cls) {
    var dl = el("dl", { class: cls });
    list.forEach(function (f) {
      var value = f[1] === "code" ? el("code", null, [f[2]]) : f[1] === "provenance" ? provenanceBadge(data, r, true) : f[2];
      dl.appendChild(el("dt", null, [f[0]]));
      dl.appendChild(el("dd", null, [value]));
    });
    return dl;
  }

  function drawTraces(data, board, column, box) {
    // What every trace of the board shares (most often its file, provenance and environment) is said once
    // above the views, not in each of 50.
    var ran = [];
    board.rows.forEach(function (row, i) {
      var r = decode(data, board.results[i][column]);
      if (r) ran.push({ i: i + 1, row: row, r: r, facts: facts(data, r) });
    });
    var shared = {};
    if (ran.length > 1) {
      ran[0].facts.forEach(function (f) {
        if (f[0] !== "Line" && ran.every(function (t) {
          return t.facts.some(function (g) { return g[0] === f[0] && g[2] === f[2]; });
        })) shared[f[0]] = true;
      });
    }
    var common = ran.length ? ran[0].facts.filter(function (f) { return shared[f[0]]; }) : [];
    if (common.length) {
      box.appendChild(el("p", { class: "kt-common-title" }, ["Every trace below:"]));
      box.appendChild(factList(data, common, ran[0].r, "kt-env kt-common"));
    }
    ran.forEach(function (t) {
      var r = t.r;
      var own = t.facts.filter(function (f) { return !shared[f[0]]; });
      if (r.passed) {
        var timing = "median " + shown(data, r.latency) + " ms";
        if (r.spread) timing += ", p20–p80 " + r.spread + " ms";
        if (r.samples) timing += ", " + r.samples + " samples";
        if (r.timer) timing += ", timer " + r.timer;
        var head = own.filter(function (f) { return ["Trace file", "Line", "Run at", "Provenance"].indexOf(f[0]) >= 0; }).length;
        own.splice(head, 0, ["Timing", "text", timing]);
      }
      var summary = el("summary", null, [el("code", null, [t.row[0]]), " · "].concat(
        statusBadge(data, r), r.latency !== null ? [" · " + r.latency + " ms"] : []));
      var log = [];
      if (r.log) {
        if (r.cut) log.push(el("p", { class: "kt-cut" }, ["The first " + r.cut + " characters of the log are left out."]));
        log.push(el("pre", { class: "kt-log" }, [el("code", null, [r.log])]));
      } else if (!r.passed) {
        log.push(el("p", null, ["No log recorded."]));
      }
      box.appendChild(el("details", { class: "kt-trace" + (r.passed ? "" : " kt-failure"), id: board.anchor + "-t" + t.i },
                         [summary, factList(data, own, r, "kt-env")].concat(log)));
    });
  }

  function drawResults(root) {
    var data = window.__ktResults;
    var drawn = false;
    root.querySelectorAll("[data-kt-draw]").forEach(function (target) {
      if (!data || target.getAttribute("data-kt-drawn")) return;
      var anchor = target.getAttribute("data-kt-board");
      var board = data.boards.filter(function (b) { return b.anchor === anchor; })[0];
      if (!board) return;
      var view = target.getAttribute("data-kt-draw");
      var column = board.solutions.indexOf(target.getAttribute("data-kt-solution"));
      if (view !== "board" && column < 0) return;
      target.textContent = "";
      if (view === "board") drawBoard(data, board, target);
      else if (view === "solution") drawSolution(data, board, column, target);
      else drawTraces(data, board, column, target);
      target.setAttribute("data-kt-drawn", "1");
      drawn = true;
    });
    // A link to a drawn element (a trace view, #results-h100_sxm-t3) found nothing when the page opened: go there now.
    if (drawn) openLinked(true);
  }

  // The theme opens a <details> a link points at only among those the page had when it loaded: the drawn trace
  // views are opened here, when the page opens on one and when a "details" link is followed.
  function openLinked(again) {
    var id;
    try { id = decodeURIComponent(window.location.hash.slice(1)); } catch (e) { return; }  // a malformed link
    var target = id ? document.getElementById(id) : null;
    if (!target || !target.closest("[data-kt-draw]")) return;
    if (target.tagName === "DETAILS") target.open = true;
    if (again) target.scrollIntoView();  // the theme's :target scroll margin keeps it below the header
  }
  window.addEventListener("hashchange", function () { openLinked(false); });

  // -- search from disk -----------------------------------------------------------------------
  // Browsers refuse the theme's search worker on file:// pages; there, this searches the same
  // index (written as search/search_index.js by the build) and lists the matches under the box.

  var siteRoot = script && script.src ? new URL("../", script.src).href : null;

  function fileSearch() {
    if (window.location.protocol !== "file:" || !siteRoot) return;
    var input = document.querySelector("input.md-search__input, input[data-md-component='search-query']");
    if (!input || input.getAttribute("data-kt-search")) return;
    input.setAttribute("data-kt-search", "1");
    // The theme hides its search when its worker cannot start: show it, served by this instead.
    var dialog = input.closest("[data-md-component='search']");
    if (dialog) {
      dialog.hidden = false;
      new MutationObserver(function () { if (dialog.hidden) dialog.hidden = false; })
        .observe(dialog, { attributes: true, attributeFilter: ["hidden"] });
    }
    var list = document.createElement("ol");
    list.className = "kt-file-search";
    list.hidden = true;
    input.parentNode.parentNode.appendChild(list);
    function run() {
      var docs = window.__ktSearchIndex || [];
      var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      list.textContent = "";
      if (!terms.length) { list.hidden = true; return; }
      var hits = [];
      docs.forEach(function (d) {
        var title = d.title.toLowerCase(), text = d.text.toLowerCase(), score = 0;
        for (var i = 0; i < terms.length; i++) {
          if (title.indexOf(terms[i]) >= 0) score += 10;
          else if (text.indexOf(terms[i]) >= 0) score += 1;
          else return;
        }
        hits.push({ d: d, score: score * (d.boost || 1) });
      });
      hits.sort(function (a, b) { return b.score - a.score || a.d.title.localeCompare(b.d.title); });
      hits.slice(0, 12).forEach(function (hit) {
        var li = document.createElement("li");
        var a = document.createElement("a");
        a.href = new URL(hit.d.location, siteRoot).href;
        a.textContent = hit.d.title;
        li.appendChild(a);
        list.appendChild(li);
      });
      if (!hits.length) {
        var none = document.createElement("li");
        none.textContent = "No matching pages";
        list.appendChild(none);
      }
      list.hidden = false;
    }
    function load() {
      if (window.__ktSearchIndex) return run();
      var tag = document.createElement("script");
      tag.src = new URL("search/search_index.js", siteRoot).href;
      tag.onload = run;
      document.head.appendChild(tag);
    }
    input.addEventListener("input", load);
    input.addEventListener("keydown", function (event) { event.stopPropagation(); }, true);
  }

  function init() {
    drawResults(document);
    initSortable(document);
    initFilters(document);
    initCharts(document);
    fileSearch();
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);  // Material's page-load signal (also fires on instant navigation)
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
