"""The ledgers in the HTML report: one card per ledger, a scope strip and a sortable table.

Each card says where the time went and in which precision: the headline (timing source, or why
there is no time), a collapsed network's line, the roll-up per declared precision, the *scope
strip* (one cell per scope in graph order, coloured by the precision declared for its nodes and
as wide as its share of the time; without time, as wide as its share of the nodes, and the
caption says so) and a table sortable by any column (a click on its header; a small inline
script, :data:`SORT_SCRIPT`, the report's only one: nothing is fetched). With time the table
lists the timed units (engine layers, or ONNX nodes on ONNX Runtime CUDA) slowest first; without,
the nodes, those whose precision is in question first. Only the first :data:`TOP_ROWS` rows are
shown; the rest follow in a collapsed ``<details>``, a sortable table of their own (a report with
``--trt-ledger`` listed every node of every test: 962 rows for 5 small tests, review1).
"""

from __future__ import annotations

from ..core.formatting import fmt_cell_err, fmt_ms, fmt_share
from ..ledger.render import TOP, headline, rollup_line
from .html_figures import esc

__all__ = ["LEDGER_CSS", "LEDGER_ROWS", "SORT_SCRIPT", "TOP_ROWS", "ledger_section"]

#: table rows per ledger before the rest is left to --trt-report
LEDGER_ROWS = 300
#: rows shown open per ledger (the terminal summary's count); the others are in a collapsed <details>
TOP_ROWS = TOP
_CLASS = {"fp32": "p-fp32", "fp16": "p-fp16", "bf16": "p-bf16", "mixed": "p-mixed", "fixed": "p-int"}

LEDGER_CSS = """
.lstrip{display:flex;width:100%;height:18px;margin:6px 0 2px;border:1px solid #c8ccd2;box-sizing:border-box}
.lstrip div{height:100%;min-width:0;background:#c8ccd2;box-shadow:inset -1px 0 0 #fff}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:after{content:" \\2195";color:#9aa3ad}
table.sortable th[data-dir=asc]:after{content:" \\2191"}table.sortable th[data-dir=desc]:after{content:" \\2193"}
.collapse{color:#b06f00;font-weight:600}
table.ledger{table-layout:fixed}table.ledger td{overflow-wrap:anywhere;word-break:break-word}
"""

#: sorts a ``table.sortable`` by the clicked column (numbers by ``data-v``, text otherwise)
SORT_SCRIPT = """<script>
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var asc = th.dataset.dir !== "asc";
      table.querySelectorAll("th").forEach(function (h) { delete h.dataset.dir; });
      th.dataset.dir = asc ? "asc" : "desc";
      var body = table.tBodies[0];
      var key = function (row) {
        var cell = row.cells[col];
        var v = cell.dataset.v !== undefined ? parseFloat(cell.dataset.v) : NaN;
        return isNaN(v) ? [1, cell.textContent.toLowerCase()] : [0, v];
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x[0] !== y[0]) return x[0] - y[0];
        return (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
</script>"""


def _cell(value, text: str) -> str:
    """A number cell: the text (:mod:`pytest_trt.core.formatting`), and ``data-v`` for sorting
    (missing values sort last)."""
    if not isinstance(value, (int, float)):
        return '<td class="num">-</td>'
    return f'<td class="num" data-v="{value!r}">{text}</td>'


def _num(value) -> str:
    return _cell(value, fmt_ms(value))


def _pct(value) -> str:
    return _cell(value, fmt_share(value))


def _scope_strip(data: dict) -> str:
    scopes = data.get("scopes") or []
    timed = bool(data.get("time_source"))
    weights = [(s.get("time_ms") or 0.0) if timed else float(s.get("nodes") or 0) for s in scopes]
    total = sum(weights) or 1.0
    cells = []
    for s, w in zip(scopes, weights, strict=True):
        if w <= 0:
            continue
        what = (f"{fmt_cell_err(s.get('time_ms'))} ms, {100.0 * w / total:.1f}% of the time" if timed
                else f"{s.get('nodes')} node(s)")
        declared = ", ".join(f"{n} {p}" for p, n in sorted((s.get("declared") or {}).items()))
        tip = f"{s['scope']}: {what}; declared {declared or '-'}"
        cells.append(f'<div class="{_CLASS.get(s.get("precision"), "p-none")}" style="flex:{w / total:.6f} 0 0" '
                     f'title="{esc(tip)}"></div>')
    sized = "its share of the time" if timed else "its share of the nodes (no time)"
    return (f'<div class="note">scopes in graph order, coloured by the declared precision of what ran there '
            f'(<span class="legend"><span class="p-fp32"></span>fp32<span class="p-fp16"></span>fp16'
            f'<span class="p-bf16"></span>bf16<span class="p-mixed"></span>mixed<span class="p-int"></span>fixed'
            f'</span>), each as wide as {sized}; a kernel spanning scopes counts for the scope holding all of '
            f'its nodes</div><div class="lstrip">{"".join(cells)}</div>')


def _units_table(data: dict) -> str:
    rows = {r["node"]: r for r in data.get("rows", ()) if r.get("node")}
    units = sorted((u for u in data.get("units", ()) if isinstance(u.get("time_ms"), (int, float))),
                   key=lambda u: -u["time_ms"])
    total = data.get("total_ms") or 0.0
    head = ("unit", "ONNX nodes", "scope", "declared", "realized", "evidence", "median ms", "share", "spread")
    body = []
    for u in units[:LEDGER_ROWS]:
        nodes = u.get("nodes") or []
        evidence = sorted({str(rows[n].get("evidence")) for n in nodes if n in rows})
        tip = ", ".join(nodes[:20]) + (f", ... ({len(nodes)})" if len(nodes) > 20 else "")
        flag = " [CPU provider]" if u.get("provider") == "CPUExecutionProvider" else ""
        body.append(f'<tr><td class="mono" title="{esc(tip)}">{esc(u["name"])}{esc(flag)}</td>'
                    f'<td class="num" data-v="{len(nodes)}">{len(nodes)}</td><td class="mono">{esc(u.get("scope"))}</td>'
                    f'<td>{esc(u.get("bucket"))}</td><td>{esc(u.get("realized_bucket"))}</td>'
                    f'<td>{esc(", ".join(evidence) or "-")}</td>{_num(u["time_ms"])}'
                    f'{_pct(u["time_ms"] / total if total else None)}{_pct((u.get("stats") or {}).get("spread"))}</tr>')
    return _tables(head, body, len(units), f"{data.get('unit') or 'unit'}s")


def _nodes_table(data: dict) -> str:
    rows = sorted(data.get("rows", ()), key=lambda r: r.get("status") not in ("mismatch", "unverifiable"))
    head = ("node", "op", "declared", "rule", "realized", "evidence", "status", "engine layer")
    body = [f'<tr><td class="mono">{esc(r.get("path"))}</td><td>{esc(r.get("op_type"))}</td>'
            f'<td>{esc(r.get("declared") or "-")}</td><td class="mono">{esc(r.get("rule") or "-")}</td>'
            f'<td>{esc(r.get("realized") or "-")}</td><td>{esc(r.get("evidence") or "-")}</td>'
            f'<td>{esc(r.get("status") or "-")}</td><td class="mono">{esc(", ".join(r.get("units") or ()) or "-")}</td>'
            f'</tr>' for r in rows[:LEDGER_ROWS]]
    return _tables(head, body, len(rows), "nodes")


#: column widths (%) of the two tables, in their order
_UNIT_WIDTHS = (32, 7, 21, 8, 8, 9, 6, 5, 6)
_NODE_WIDTHS = (34, 8, 7, 14, 7, 9, 9, 12)


def _tables(head: tuple, body: list[str], count: int, what: str) -> str:
    """The first :data:`TOP_ROWS` rows open, the rest (up to :data:`LEDGER_ROWS` in all) in a collapsed
    ``<details>`` holding a sortable table of its own; a note for what only --trt-report has."""
    if len(body) <= TOP_ROWS:
        return _table(head, body, count)
    rest = len(body) - TOP_ROWS
    return (_table(head, body[:TOP_ROWS], TOP_ROWS)
            + f'<details class="ledger-rest"><summary>the other {rest} {what} (a table of its own, sortable '
              f'too)</summary>' + _table(head, body[TOP_ROWS:], count - TOP_ROWS) + "</details>")


def _table(head: tuple, body: list[str], count: int) -> str:
    more = (f'<p class="note">{count - len(body)} more in --trt-report</p>' if count > len(body) else "")
    widths = _UNIT_WIDTHS if len(head) == len(_UNIT_WIDTHS) else _NODE_WIDTHS
    cols = "".join(f'<col style="width:{w}%">' for w in widths)
    return (f'<table class="sortable ledger"><colgroup>{cols}</colgroup><thead><tr>'
            + "".join(f"<th>{esc(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>" + more)


def _ledger_card(row: dict) -> str:
    data = row["ledger"]
    auto = ' <span class="tag">--trt-ledger</span>' if row.get("auto") else ""
    out = [f'<div class="card"><h3><span class="mono">{esc(row["test"])}</span>{auto}</h3>',
           f'<div class="note">{esc(headline(data))}</div>']
    out += [f'<div class="collapse">COLLAPSED: {esc(c)}</div>' for c in data.get("collapse") or ()]
    out.append(f'<div class="note">{esc(rollup_line(data, "precisions"))}</div>')
    out.append(_scope_strip(data))
    out.append(_units_table(data) if data.get("time_source") else _nodes_table(data))
    out += [f'<div class="note">{esc(n)}</div>' for n in (data.get("notes") or [])[:6]]
    out.append("</div>")
    return "".join(out)


def ledger_section(rows: list[dict]) -> str:
    """The ledgers of the run, one card each (empty without ledgers)."""
    if not rows:
        return ""
    return ('<section id="ledgers"><h2>Where does the time go, and in which precision?</h2>'
            + "".join(_ledger_card(r) for r in rows) + "</section>")
