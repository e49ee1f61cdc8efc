/* KernelTrace site behaviour: sortable tables, the kernels index's filters, fast_p charts.
 *
 * Everything runs locally: the charts use plotly.js, which the build copies from the `plotly`
 * Python package into generated/assets/ and which this script loads only on pages with a chart.
 * Chart data and table values come from the page (data-* attributes written at build time);
 * names reach plotly escaped, so they are shown, never interpreted.
 */
(function () {
  "use strict";

  var script = document.currentScript;
  var plotlyUrl = script && script.src ? new URL("../generated/assets/plotly.min.js", script.src).href : null;

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
  // A form.kt-filters holds selects with data-filter="NAME"; the rows of the table inside the
  // element with id data-target carry data-NAME='["value", ...]'. URL parameters (?type=gemm)
  // preset the selects.

  function initFilters(root) {
    root.querySelectorAll("form.kt-filters").forEach(function (form) {
      var target = document.getElementById(form.getAttribute("data-target"));
      if (!target) return;
      var selects = form.querySelectorAll("select[data-filter]");
      var count = form.querySelector(".kt-count");
      var noun = form.getAttribute("data-noun") || "rows";
      var params = new URLSearchParams(window.location.search);
      function apply() {
        var rows = target.querySelectorAll("tbody tr");
        var shown = 0;
        rows.forEach(function (row) {
          var keep = Array.prototype.every.call(selects, function (select) {
            if (!select.value) return true;
            try {
              return JSON.parse(row.getAttribute("data-" + select.getAttribute("data-filter")) || "[]")
                .indexOf(select.value) >= 0;
            } catch (e) {
              return false;
            }
          });
          row.hidden = !keep;
          if (keep) shown += 1;
        });
        if (count) count.textContent = shown + " of " + rows.length + " " + noun;
      }
      selects.forEach(function (select) {
        var wanted = params.get(select.getAttribute("data-filter")) || params.get(select.getAttribute("data-filter").replace(/s$/, ""));
        if (wanted && Array.prototype.some.call(select.options, function (o) { return o.value === wanted; })) {
          select.value = wanted;
        }
        select.addEventListener("change", apply);
      });
      apply();
    });
  }

  // -- charts ---------------------------------------------------------------------------------

  var plotlyState = null;  // null, "loading", "ready" or "failed"
  var waiting = [];

  function withPlotly(done) {
    if (window.Plotly) return done();
    waiting.push(done);
    if (plotlyState) return;
    plotlyState = "loading";
    var tag = document.createElement("script");
    tag.src = plotlyUrl;
    tag.onload = function () {
      plotlyState = "ready";
      waiting.splice(0).forEach(function (fn) { fn(); });
    };
    tag.onerror = function () {
      plotlyState = "failed";
      document.querySelectorAll(".kt-chart .kt-chart-fallback").forEach(function (p) {
        p.textContent = "The chart library could not be loaded; the table above has the same numbers.";
      });
    };
    document.head.appendChild(tag);
  }

  function plain(text) {  // plotly reads a few HTML tags in labels: show names as written
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function cssVar(name, fallback) {
    var value = getComputedStyle(document.body).getPropertyValue(name);
    return value && value.trim() ? value.trim() : fallback;
  }

  function drawChart(el) {
    var spec;
    try {
      spec = JSON.parse(el.getAttribute("data-chart"));
    } catch (e) {
      return;
    }
    var fg = cssVar("--md-default-fg-color", "#333");
    var grid = cssVar("--md-default-fg-color--lightest", "#ddd");
    var traces = spec.series.map(function (s) {
      return {
        type: "scatter", mode: "lines", name: plain(s.name), x: s.x, y: s.y,
        line: { shape: "hv", width: 2 },
        hovertemplate: "<b>%{fullData.name}</b><br>fast_p(p = %{x:.2f}) = %{y:.0%}<extra></extra>"
      };
    });
    var layout = {
      height: 320, margin: { l: 60, r: 20, t: 10, b: 50 },
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: fg, family: getComputedStyle(document.body).fontFamily, size: 12 },
      xaxis: { title: { text: "p: speedup over the baseline" }, range: [0, spec.x_end], gridcolor: grid, zeroline: false },
      yaxis: { title: { text: "fast_p: share of workloads" }, range: [0, 1.02], tickformat: ".0%", gridcolor: grid, zeroline: false },
      hovermode: "closest", showlegend: true,
      legend: { orientation: "h", y: -0.25 }
    };
    el.textContent = "";
    window.Plotly.newPlot(el, traces, layout, { displaylogo: false, responsive: true }).then(function () {
      el.classList.add("kt-chart-ready");
    });
  }

  function initCharts(root) {
    var charts = Array.prototype.filter.call(root.querySelectorAll(".kt-chart[data-chart]"), function (el) {
      return !el.classList.contains("kt-chart-ready") && !el.getAttribute("data-kt-drawing");
    });
    if (!charts.length || !plotlyUrl) return;
    charts.forEach(function (el) { el.setAttribute("data-kt-drawing", "1"); });
    withPlotly(function () { charts.forEach(drawChart); });
  }

  function init() {
    initSortable(document);
    initFilters(document);
    initCharts(document);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);  // Material's page-load signal (also fires on instant navigation)
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
