"""Pages built on benchmark results: solutions, authors, hardware, the home page's summary, and the
leaderboard part of each definition page.

The numbers come from generator.analyse (leaderboard.py and the modules beside it); this module only
arranges them for the templates (anchors, chart data) and formats them (the number filters, which
templates.py registers). Contributor text reaches raw HTML through `h` (escape_html) and markdown
through `md` (escape_inline).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Mapping, Optional, Sequence

import jinja2
from markupsafe import Markup

from ..analyse.hardware import HardwareSummary, Machines
from ..analyse.headline import KIND_ORDER
from ..analyse.rankings import AuthorRanking
from ..analyse.results import Entry, Leaderboard
from ..analyse.site_tables import SiteResults
from ..model.contender_kinds import kind_of, library_requirement
from ..model.dataset import Dataset
from ..model.records import AgentTrace, Solution
from ..model.status import BASELINE_AUTHOR
from .escape import escape_html
from .urls import board_anchor, definition_page, hardware_page, solution_page

LOG_LIMIT = 6000  # characters of a failure log shown (its end: that is where errors are)
MESSAGE_LIMIT = 20000  # characters of one agent-trace message shown
MODEL_TAGS = ("model:", "model-alt:")  # tags the kernels index's Model filter stands for


# -- formatting (filters) -----------------------------------------------------------------------

def fmt_ms(value: Optional[float]) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def fmt_speedup(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}×"


def fmt_pct(value: Optional[float]) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def fmt_sol_pct(value: Optional[float]) -> str:
    """SOL% is small on slow machines and for naive code: keep two significant digits below 10%."""
    if value is None:
        return "—"
    pct = 100 * value
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"


def fmt_err(value: Optional[float]) -> str:
    if value is None:
        return "—"
    return "0" if value == 0 else f"{value:.1e}"


MACHINE = {"gpu": "GPU", "cpu": "CPU"}


def machines_note(m: Machines) -> Markup:
    """One sentence saying plainly which hardware has results, and that none is a GPU when none is."""
    if not m.with_results:
        return Markup('<strong>No benchmark results yet</strong> on any hardware.')
    named = ", ".join(f"{escape_html(name)} ({MACHINE.get(kind, 'no hardware spec')})" for name, kind in m.with_results)
    if not all(kind == "cpu" for _, kind in m.with_results):
        return Markup(f"Results on {named}.")
    return Markup(f"<strong>No GPU results yet.</strong> Every number here was measured on {named}: it says how "
                  "solutions compare on that machine, not how fast they run on a GPU.")


def kind_label(kind: str, requirement: str = "") -> Markup:
    """A contender's kind as a badge; a library's with the requirement it declares."""
    text = escape_html(kind) + (f" · {escape_html(requirement)}" if requirement else "")
    return Markup(f'<span class="kt-kind kt-kind-{escape_html(kind)}" title="kind of contender">{text}</span>')


def fmt_bytes(value: Optional[int]) -> str:
    """A size in binary units with its exact count: "50 MiB (52,428,800 bytes)"."""
    if value is None:
        return "—"
    size, unit = float(value), "bytes"
    for next_unit in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, next_unit
    return f"{value:,} bytes" if unit == "bytes" else f"{size:.3g} {unit} ({value:,} bytes)"


def trend(speedup: Optional[float]) -> str:
    """CSS class of a speedup: faster or slower than the baseline."""
    if speedup is None or speedup == 1.0:
        return "kt-even"
    return "kt-up" if speedup > 1.0 else "kt-down"


@lru_cache(maxsize=4096)
def fmt_when(timestamp: str) -> str:
    """An RFC 3339 timestamp as 'YYYY-MM-DD HH:MM UTC' (the stored text when it does not parse)."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return timestamp
    if moment.utcoffset() is None:
        return timestamp
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def fmt_value(value: object) -> str:
    return "—" if value is None else str(value)


def sort_key(value: Optional[float]) -> str:
    """A data-sort attribute: the number, or empty (sorts last either way)."""
    return "" if value is None else f"{float(value):.6g}"  # six digits sort as well as seventeen


# -- charts -------------------------------------------------------------------------------------

def fastp_spec(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], end: float, what: str) -> dict:
    """A fast_p chart: step curves, one per named series. Steps at six significant digits: a step moves by
    under a millionth of the chart's width, and "0.588235" is a third of "0.5882352941176471"."""
    return {"kind": "fast_p", "what": what, "x_end": end,
            "series": [{"name": name, "x": [float(f"{p:.6g}") for p, _ in curve], "y": [v for _, v in curve]}
                       for name, curve in series]}


def fastp_chart(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], end: float, what: str) -> str:
    """The JSON a `.kt-chart` element carries (fastp_spec)."""
    return json.dumps(fastp_spec(series, end, what), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def board_chart(lb: Leaderboard) -> dict:
    """A definition's fast_p chart on one hardware: a curve per solution (drawn from its results file, data.py)."""
    return fastp_spec([(e.solution, e.curve) for e in lb.entries], lb.curve_end, f"{lb.definition} on {lb.hardware}")


# -- views ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BoardView:
    board: Leaderboard
    anchor: str  # id of its section on the definition page
    hardware_page: str


@dataclass(frozen=True)
class WorkloadView:
    uuid: str
    axes: tuple[tuple[str, Any], ...]  # the definition's variable axes and their values
    inputs: str  # how each input is made: "x: random; eps: scalar 1e-05; idx: safetensors"
    seed: Optional[int]
    description: str


def _input_kind(spec: Mapping[str, Any]) -> str:
    kind = str(spec.get("type", ""))
    return f"{kind} {spec['value']}" if kind == "scalar" and "value" in spec else kind


def workload_views(ds: Dataset, name: str) -> tuple[WorkloadView, ...]:
    d = ds.definitions[name]
    return tuple(WorkloadView(w.uuid, tuple((a, w.axes.get(a)) for a in d.var_axes),
                              "; ".join(f"{k}: {_input_kind(v)}" for k, v in w.inputs.items()), w.seed,
                              str(w.data["workload"].get("description", "")))
                 for w in ds.workloads_by_definition.get(name, ()))


@dataclass(frozen=True)
class SolutionLink:
    solution: Solution
    page: str
    hardware: tuple[str, ...]  # where it has results


@dataclass(frozen=True)
class SolutionBoard:
    board: Leaderboard
    entry: Entry  # its per-workload results are drawn from the definition's results file (data.py)
    definition_anchor: str
    hardware_page: str


@dataclass(frozen=True)
class Message:
    role: str  # system, user, assistant, tool, tool_call, request, note
    title: str
    text: str
    calls: tuple[tuple[str, str], ...] = ()  # (tool name, arguments) the message asks for
    cut: int = 0


@dataclass(frozen=True)
class Conversation:
    author: str
    model: str
    annotation: str
    path: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class HardwareRow:
    board: Leaderboard
    type: str  # the definition's type
    top: Optional[Entry]
    definition_href: str  # its built page, relative to the generated folder
    anchor: str
    draft: bool = False  # a draft (Definition.is_draft: not tagged status:verified): listed after verified kernels, marked


def board_views(boards: Sequence[Leaderboard]) -> tuple[BoardView, ...]:
    return tuple(BoardView(lb, board_anchor(lb.hardware), hardware_page(lb.hardware)) for lb in boards)


def definition_results(ds: Dataset, results: SiteResults, name: str) -> dict[str, Any]:
    """Template variables for the results part of a definition's page."""
    boards = results.boards.get(name, ())
    links = tuple(
        SolutionLink(s, solution_page(s.name), tuple(lb.hardware for lb in boards if lb.entry(s.name) is not None))
        for s in sorted(ds.solutions_by_definition.get(name, ()), key=lambda s: (s.author != BASELINE_AUTHOR, s.name)))
    heads = results.headlines.get(name, ())
    return {"boards": board_views(boards), "solution_links": links, "workloads": workload_views(ds, name),
            "headlines": heads, "machines": Machines(tuple((h.hardware, h.machine) for h in heads))}


def _clip(text: str) -> tuple[str, int]:
    return (text, 0) if len(text) <= MESSAGE_LIMIT else (text[:MESSAGE_LIMIT], len(text) - MESSAGE_LIMIT)


def _content(value: Any) -> str:
    """A message's content: a string, a list of parts (text parts joined), or anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        texts = [str(p.get("text", "")) for p in value if p.get("type") in ("text", None) and "text" in p]
        if len(texts) == len(value):
            return "\n\n".join(texts)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _message(m: Mapping[str, Any]) -> Message:
    role = str(m.get("role", "note"))
    functions = [c.get("function") or {} for c in m.get("tool_calls") or () if isinstance(c, dict)]
    calls = tuple((str(f.get("name", "")), _arguments(f.get("arguments", ""))) for f in functions)
    # Anthropic-style content: text and tool_use parts
    content = m.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool_use" for p in content):
        calls += tuple((str(p.get("name", "")), _arguments(p.get("input", {})))
                       for p in content if isinstance(p, dict) and p.get("type") == "tool_use")
        content = [p for p in content if not (isinstance(p, dict) and p.get("type") == "tool_use")]
    if role == "tool":
        title = f"Tool result from {m['name']}" if m.get("name") else "Tool result"
    else:
        title = role.capitalize()
    text, cut = _clip(_content(content))
    return Message(role, title, text, calls, cut)


def _response(response: Mapping[str, Any]) -> Message:
    if isinstance(response.get("choices"), list) and response["choices"]:
        choice = response["choices"][0]
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            return _message(choice["message"])
    if "role" in response or "content" in response:
        return _message({"role": "assistant", **response})
    text, cut = _clip(_content(response))
    return Message("assistant", "Response", text, (), cut)


def conversation(trace: AgentTrace) -> Conversation:
    """An agent trace as one readable sequence of messages and tool calls."""
    messages: list[Message] = []
    annotation = ""
    shown: list = []  # the conversation so far: a request repeats it, only its new messages are shown
    reply: Optional[Message] = None  # the last response, which the next request repeats
    for entry in trace.entries:
        kind = entry.get("type")
        if kind in ("conversation", "llm_request"):
            annotation = annotation or str(entry.get("annotation", ""))
            conv = list(entry.get("conversation") or ())
            new = conv[len(shown):] if conv[:len(shown)] == shown else conv
            new_messages = [_message(m) for m in new if isinstance(m, dict)]
            if reply is not None and new_messages and new_messages[0].role == "assistant" \
                    and new_messages[0].text == reply.text:
                new_messages = new_messages[1:]  # the previous response, now part of the conversation
            messages.extend(new_messages)
            shown, reply = conv, None
            if kind == "llm_request" and isinstance(entry.get("response"), dict):
                reply = _response(entry["response"])
                messages.append(reply)
        elif kind == "tool_call":
            result = str(entry.get("result", ""))
            if entry.get("cli_output"):
                result += ("\n\n" if result else "") + str(entry["cli_output"])
            text, cut = _clip(result)
            messages.append(Message("tool_call", f"Tool call: {entry.get('tool_name', '')}", text,
                                    ((str(entry.get("tool_name", "")), _arguments(entry.get("arguments", {}))),), cut))
        else:
            text, cut = _clip(_content(dict(entry)))
            messages.append(Message("note", str(kind or "entry"), text, (), cut))
    return Conversation(trace.author, trace.model, annotation, trace.source.path, tuple(messages))


def solution_context(ds: Dataset, results: SiteResults, s: Solution) -> dict[str, Any]:
    boards = []
    for lb in results.boards.get(s.definition, ()):
        entry = lb.entry(s.name)
        if entry is None:
            continue
        boards.append(SolutionBoard(lb, entry, board_anchor(lb.hardware), hardware_page(lb.hardware)))
    agent = results.agent_traces.get(s.name)
    d = ds.definitions.get(s.definition)
    return {"s": s, "boards": tuple(boards), "kind": kind_of(s.author),
            "requirement": library_requirement(s.author, s.dependencies),
            "conversation": conversation(agent) if agent is not None else None,
            "definition_page": definition_page(s.definition) if d is not None else None}


def hardware_context(ds: Dataset, summary: HardwareSummary) -> dict[str, Any]:
    rows = tuple(HardwareRow(lb, ds.definitions[lb.definition].type, lb.entries[0] if lb.entries else None,
                             definition_page(lb.definition), board_anchor(lb.hardware),
                             ds.definitions[lb.definition].is_draft)
                 for lb in summary.leaderboards)
    rows = tuple(sorted(rows, key=lambda r: r.draft))  # verified kernels first, each group by name
    return {"hw": summary, "rows": rows, "authors_anchor": board_anchor(summary.name)}


def author_views(rankings: Sequence[AuthorRanking]) -> tuple[tuple[AuthorRanking, str, str, str], ...]:
    """(ranking, anchor, hardware page, chart JSON) per hardware."""
    return tuple((r, board_anchor(r.hardware), hardware_page(r.hardware),
                  fastp_chart([(e.author, e.curve) for e in (*r.entries, *r.references)], r.curve_end, f"authors on {r.hardware}"))
                 for r in rankings)


def kernel_filters(ds: Dataset, rows: Sequence = ()) -> dict[str, Any]:
    """The choices of the kernels index's filters: every type (with its count); each model with a calling record
    (and so a page) that some definition names; every tag but the model tags (the Model filter has those); the
    kinds of contender; and every hardware with results (a best-latency and SOL% column each, with its kind)."""
    ds_defs = ds.definitions.values()
    types: dict[str, int] = {}
    for d in ds_defs:
        types[d.type] = types.get(d.type, 0) + 1
    shown = {b.hardware for r in rows for b in r.best}
    return {"types": tuple(sorted(types.items())),
            "hardware": tuple((hw, MACHINE.get(spec.kind, "") if (spec := ds.hardware_spec(hw)) else "")
                              for hw in sorted(shown)),
            "models": tuple(sorted({m for d in ds_defs for m in d.models} & set(ds.models))),
            "tags": tuple(sorted({t for d in ds_defs for t in d.tags if not t.startswith(MODEL_TAGS)})),
            "kinds": tuple(k for k in KIND_ORDER if any(k in r.kinds for r in rows))}


# -- pages ---------------------------------------------------------------------------------------

def result_pages(ds: Dataset, env: jinja2.Environment, results: SiteResults) -> dict[str, str]:
    """The markdown pages this module owns (authors, the hardware list, the home page's summary):
    {path relative to the generated folder: text}. Per-item pages are HTML: items.py."""
    pages: dict[str, str] = {}
    pages["authors.md"] = env.get_template("authors.md.j2").render(views=author_views(results.rankings))
    pages["hardware.md"] = env.get_template("hardware.md.j2").render(hardware=results.hardware)
    counts = {"definitions": len(ds.definitions), "workloads": len(ds.workloads), "solutions": len(ds.solutions),
              "traces": len(ds.traces), "hardware": len(results.hardware)}
    pages["home.txt"] = env.get_template("home.md.j2").render(
        counts=counts, latest=results.latest, prefix="generated/", machines=results.machines)
    return pages
