"""The cards of the HTML report: one per failing output, precision check, layerwise comparison
and parser check.

A failing output's card gives its facts (shape, mismatches, the worst element, the advice)
and its error figures (matplotlib PNGs, else CSS); a precision card draws the planned and
observed precision of every node in topological order, the whole network per scope, and the
constrained nodes' table; layerwise and parser cards show their curve and node verdicts.
:mod:`pytest_trt.report.html_report` puts them into the page.
"""

from __future__ import annotations

from ..core.formatting import as_float, fmt_cell_err, fmt_cell_tol
from ..core.records import LayerwiseRecord
from .html_figures import css_heatmap, css_histogram, esc, svg_curve, value_text
from .plots import heatmap_png, histogram_png, layerwise_png, layerwise_points, mismatch_marks
from .rows import (
    BAD_STATUSES,
    GOOD_STATUSES,
    caught,
    caught_by_test,
    node_label,
    parser_rows,
    records_of,
    scope_of,
    short_class_of,
)

#: rows of a precision table before the rest is folded away
NODE_ROWS = 300
#: test ids longer than this are abbreviated (the full id is on hover)
NAME_CHARS = 90
_PRECISION_CLASS = {"fp32": "p-fp32", "fp16": "p-fp16", "bf16": "p-bf16", "mixed": "p-mixed"}


def tone_of_row(row: dict) -> str:
    """An accuracy row's colour: a failing output whose failure was caught (a negative control, or inside a
    test that passed) is neutral, not red."""
    if row["passed"]:
        return "good"
    return "neutral" if caught(row) else "bad"


def abbr_nodeid(nodeid: str, width: int = NAME_CHARS) -> str:
    """A test id that fits: the test function's name is never cut; the directories go first,
    then the parameter id is cut in the middle. The full id is on hover."""
    nodeid = str(nodeid)
    if len(nodeid) <= width:
        return esc(nodeid)
    path, sep, rest = nodeid.partition("::")
    func, bracket, params = rest.partition("[")
    text = f"{path.rsplit('/', 1)[-1]}{sep}{func}"
    params = bracket + params
    room = max(16, width - len(text))
    if len(params) > room:
        head = room // 2
        params = params[:head] + "\u2026" + params[-(room - head - 1):]
    return f'<abbr title="{esc(nodeid)}">{esc(text + params)}</abbr>'


def _failure_facts(r: dict) -> list[str]:
    """The bullet points of a failing output's card (HTML, escaped)."""
    out = r["comparison"]
    facts = [f"shape {out.get('shape')} {out.get('dtype') or ''}".strip()]
    if r["mismatched"] is not None:
        facts.append(f"{r['mismatched']} of {r['total']} elements mismatched")
    if out.get("worst_abs_index") is not None:
        vals = out.get("worst_abs_values") or [None, None]
        facts.append(f"worst abs error {fmt_cell_err(r['max_abs'])} at {tuple(out['worst_abs_index'])}: "
                     f"actual {value_text(vals[0])}, expected {value_text(vals[1])}")
    facts += _advice(out)
    if out.get("nan_actual"):
        facts.append(f"{out['nan_actual']} NaN in actual")
    if r["problem"]:
        facts.append(esc(r["problem"]))
    return facts


def _advice(out: dict) -> list[str]:
    """What would make the output pass, as the message says (or why nothing would)."""
    if out.get("unfixable") or out.get("needed_reason"):
        return [esc(out.get("advice") or out.get("needed_reason")
                    or f"no tolerance passes the {out['unfixable']} NaN/Inf mismatch(es)")]
    if out.get("advice"):
        return [esc(out["advice"])]
    if out.get("needed_atol") is not None:
        return [f"would pass with atol &ge; {fmt_cell_err(as_float(out.get('needed_atol')))} or rtol &ge; "
                f"{fmt_cell_err(as_float(out.get('needed_rtol')))}"]
    return []


def _error_figures(figures: dict, title: str, use_png: bool) -> str:
    """The histogram and heatmap of a failing output: matplotlib PNGs, else CSS."""
    hist = histogram_png(figures, title=f"{title}: error histogram") if use_png else None
    heat = heatmap_png(figures, title=f"{title}: max |error| per cell") if use_png else None
    parts = ['<div class="figs">',
             '<div class="fig">' + (f'<img class="plot" alt="error histogram" src="{hist}">' if hist
                                    else css_histogram(figures)) + "</div>"]
    if heat:
        grid = figures.get("grid") or {}
        rdims = "x".join(str(d) for d in grid.get("row_dims") or []) or "1"
        squares = "; blue squares = cells holding mismatches" if mismatch_marks(grid) else ""
        parts.append(f'<div class="fig"><img class="plot" alt="error heatmap" src="{heat}"><div class="caption">'
                     f'rows = {esc(rdims)} flattened ({grid.get("row_block")} per cell), columns = last dim '
                     f'({grid.get("col_block")} per cell); cyan = NaN/Inf{squares}</div></div>')
    else:
        parts.append('<div class="fig">' + css_heatmap(figures) + "</div>")
    parts.append("</div>")
    return "".join(parts)


def _criterion_html(r: dict) -> str:
    """The output's criterion with where each value came from (a record without one: its tolerances)."""
    if r.get("criterion"):
        return f"criterion {esc(r['criterion'])}"
    return f"tolerances atol {fmt_cell_tol(r['atol'])}, rtol {fmt_cell_tol(r['rtol'])}"


def _failure_card(r: dict, anchor: str, use_png: bool) -> str:
    neutral = tone_of_row(r) == "neutral"
    tag = ('<span class="tag">caught by the test</span>' if caught_by_test(r)
           else '<span class="tag">expected failure, caught</span>') if neutral else ""
    if r.get("examples", 1) > 1:
        tag += f'<span class="tag">worst of {r["examples"]} checks</span>'
    parts = [f'<div class="card{"" if neutral else " fail"}" id="{anchor}"><h3><span class="mono">{abbr_nodeid(r["test"])}'
             f'</span> &rarr; output <span class="mono">{esc(r["output"])}</span>{tag}</h3>',
             f'<div class="note">{esc(r["model"])} on {esc(r["backend"])} [{esc(r["policy"])}], seed {esc(r["seed"])}, '
             f'baseline {esc(r["baseline"])}; {_criterion_html(r)}</div>',
             "<ul>" + "".join(f"<li>{f}</li>" for f in _failure_facts(r)) + "</ul>"]
    figures = r.get("figures")
    if figures:
        parts.append(_error_figures(figures, f"{r['output']}", use_png))
    else:
        parts.append('<p class="note">no error figures recorded for this output</p>')
    parts.append("</div>")
    return "".join(parts)


def failures_section(rows: list[dict], anchors: dict, use_png: bool, figure_cards: int) -> str:
    """One card per failing output, real failures first; the first ``figure_cards`` get figures."""
    failing = sorted((r for r in rows if not r["passed"]), key=lambda r: tone_of_row(r) != "bad")
    if not failing:
        return ""
    cards = []
    for i, r in enumerate(failing):
        if i >= figure_cards:  # keep the file small when a whole suite fails: the worst ones get pictures
            r = {**r, "figures": None}
        cards.append(_failure_card(r, anchors[id(failing[i])], use_png))
    more = (f'<p class="note">figures shown for the {figure_cards} worst outputs; the others are in '
            f'--trt-report</p>' if len(failing) > figure_cards else "")
    return '<section id="failures"><h2>Failing outputs</h2>' + more + "".join(cards) + "</section>"


def _pclass(p) -> str:
    if p is None:
        return "p-none"
    return _PRECISION_CLASS.get(p, "p-int")


def _node_strip(nodes: list[dict], constrained: set, key: str, cls: str = "") -> str:
    """One cell per node in topological order, coloured by its ``key`` precision (planned/observed)."""
    cells = []
    for n in nodes:
        klass = [_pclass(n.get(key))]
        if n["node"] in constrained:
            klass.append("c")
        if n.get("status") in BAD_STATUSES:
            klass.append("mm")
        short = short_class_of(n)
        tip = (f"{node_label(n)} ({n.get('op_type')}{', ' + short if short else ''}): planned {n.get('planned') or '-'}, observed "
               f"{n.get('observed') or '-'}, {n.get('status')}" + (", Myelin" if n.get("myelin") else "")
               + (f", layer {n['layer']}" if n.get("layer") else ""))
        cells.append(f'<div class="{" ".join(klass)}" title="{esc(tip)}"></div>')
    return f'<div class="strip {cls}">{"".join(cells)}</div>'


_STRIP_LEGEND = ('<div class="legend note">nodes in topological order: '
                 '<span class="p-fp32"></span>fp32<span class="p-fp16"></span>fp16<span class="p-bf16"></span>bf16'
                 '<span class="p-mixed"></span>mixed<span class="p-none"></span>not float / not seen'
                 '<span style="outline:2px solid #1d232b"></span>constrained by the pattern'
                 '<span style="outline:2px solid #e00"></span>mismatch'
                 '<span style="background:#7b3fa0"></span>Myelin region</div>')


def _node_strips(nodes: list[dict], constrained: set) -> list[str]:
    """The planned, observed (and Myelin) strips of a precision card, with their legend."""
    out = [_STRIP_LEGEND,
           f'<div><span class="lbl">planned</span>{_node_strip(nodes, constrained, "planned")}</div>',
           f'<div><span class="lbl">observed</span>{_node_strip(nodes, constrained, "observed")}</div>']
    if any(n.get("myelin") for n in nodes):
        myelin = "".join(f'<div class="{"on" if n.get("myelin") else ""}"></div>' for n in nodes)
        out.append(f'<div><span class="lbl">Myelin</span><div class="strip my">{myelin}</div></div>')
    return out


def _node_row(n: dict) -> str:
    """A constrained node's row: planned vs observed, status tags, the engine layer."""
    tag = ""
    if n.get("myelin"):
        tag += f'<span class="tag my">Myelin{" " + esc(n["myelin_region"]) if n.get("myelin_region") else ""}</span>'
    status = n.get("status")
    if status in BAD_STATUSES:
        tag += f'<span class="tag mm">{esc(status)}{" (" + esc(n["cause"]) + ")" if n.get("cause") else ""}</span>'
    elif status == "unverifiable":
        tag += '<span class="tag uv">unverifiable</span>'
    detail = n.get("detail") if status not in GOOD_STATUSES else ""
    return (f'<tr class="{"fail" if status in BAD_STATUSES else ""}"><td class="mono">{esc(node_label(n))}</td>'
            f'<td>{esc(n.get("op_type"))}</td><td>{esc(short_class_of(n) or "-")}</td>'
            f'<td>{esc(n.get("planned") or "-")}</td>'
            f'<td>{esc(n.get("observed") or "-")}</td><td>{"" if tag and status in BAD_STATUSES else esc(status)}{tag}'
            f'{"<div class=note>" + esc(detail) + "</div>" if detail else ""}'
            f'</td><td class="mono">{esc(n.get("layer") or "-")}</td></tr>')


def _node_table(rows: list[dict], opened: bool) -> str:
    """The constrained nodes' table (the first :data:`NODE_ROWS`), folded unless ``opened``."""
    table = ['<table class="nodes"><tr><th>node</th><th>op</th><th>class</th><th>planned</th><th>observed</th>'
             '<th>status</th><th>engine layer</th></tr>']
    table += [_node_row(n) for n in rows[:NODE_ROWS]]
    if len(rows) > NODE_ROWS:
        table.append(f'<tr><td colspan="7">... {len(rows) - NODE_ROWS} more in --trt-report</td></tr>')
    table.append("</table>")
    return f"<details{' open' if opened else ''}><summary>{len(rows)} constrained node(s)</summary>{''.join(table)}</details>"


def _precision_card(p: dict) -> str:
    constrained = {n["node"] for n in p["constrained"]}
    nodes = p["nodes"] or p["constrained"]
    expected = caught(p)  # a negative control's assertion that failed as it must: neutral, folded
    verdict = "passed" if p["passed"] else ("FAILED, as expected (negative control caught)" if expected else "FAILED")
    tags = '<span class="tag emu">emulated: derived from the plan&#39;s realization</span>' if p["emulated"] else ""
    out = [f'<div class="card{"" if p["passed"] or expected else " fail"}"><h3><span class="mono">{abbr_nodeid(p["test"])}</span>: '
           f'<span class="mono">{esc(p["pattern"])}</span> &rarr; {esc(p["precision"])} {verdict}{tags}</h3>',
           f'<div class="note">source {esc(p["source"] or "?")}, typing {esc(p["typing"] or "?")}; constrained nodes: '
           + esc(", ".join(f"{n} {s}" for s, n in sorted(p["counts"].items())) or "none") + "</div>"]
    network = p.get("network") or []
    if network:
        out.append(_network_strip(network, p["constrained"]))
    if nodes:
        out += _node_strips(nodes, constrained)
    if p["constrained"]:
        out.append(_node_table(p["constrained"], opened=not p["passed"] and not expected))
    out += [f'<div class="note">{esc(note)}</div>' for note in p["notes"]]
    out.append("</div>")
    return "".join(out)


def _network_strip(network: list[dict], constrained: list[dict]) -> str:
    """The whole planned network, one cell per scope in graph order (wraps, never scrolls sideways):
    colour = planned precision of its compute nodes (mixed when they differ), outlined = holds nodes
    the pattern constrained, red outline = holds a constrained node that failed; full scope on hover."""
    held = {scope_of(node_label(n)) for n in constrained}
    bad = {scope_of(node_label(n)) for n in constrained if n.get("status") in BAD_STATUSES}
    cells = []
    for sc in network:
        planned = {k: v for k, v in (sc.get("planned") or {}).items() if k != "fixed"}
        precision = next(iter(planned)) if len(planned) == 1 else ("mixed" if planned else None)
        klass = [_pclass(precision)]
        if sc["scope"] in held:
            klass.append("c")
        if sc["scope"] in bad:
            klass.append("mm")
        counts = ", ".join(f"{n} {k}" for k, n in sorted((sc.get("planned") or {}).items()))
        cls = short_class_of(sc)
        module = f" = {sc['module']}" + (f" ({cls})" if cls else "") if sc.get("module") else ""
        tip = (f"{sc['scope']}{module}: {sc.get('nodes')} node(s): {counts}"
               + (" (constrained)" if sc["scope"] in held else ""))
        cells.append(f'<div class="{" ".join(klass)}" title="{esc(tip)}"></div>')
    n_nodes = sum(int(sc.get("nodes") or 0) for sc in network)
    return (f'<div class="note">whole network: {len(network)} scopes, {n_nodes} nodes, planned precision per scope '
            f'(outlined: holds constrained nodes; red: a constrained node failed)</div>'
            f'<div class="net">{"".join(cells)}</div>')


def precision_section(prec: list[dict]) -> str:
    if not prec:
        return ""
    ordered = sorted(prec, key=lambda p: (p["passed"], caught(p)))
    return ('<section id="precision"><h2>Precision: planned vs observed, per node</h2>'
            + "".join(_precision_card(p) for p in ordered) + "</section>")


def _layerwise_card(res: dict, rec: LayerwiseRecord, use_png: bool) -> str:
    title = f"{rec.model} [{rec.policy}]"
    png = layerwise_png(rec, title=title) if use_png else None
    plot = f'<img class="plot" alt="layerwise error" src="{png}">' if png else svg_curve(rec)
    first = rec.first
    first_cls = short_class_of(first) if isinstance(first, dict) else None
    first_text = (f"{node_label(first)} ({first.get('op_type')}, {first.get('precision') or '-'}"
                  f"{'; ' + first_cls if first_cls else ''}), tensor {first.get('tensor')}"
                  if isinstance(first, dict) else "none")
    tensors = [t for t in layerwise_points(rec)[0] if t.get("available") is not False]
    key = "rel" if any("rel" in t for t in tensors) else "max_abs"
    top = sorted(tensors, key=lambda t: -(as_float(t.get(key)) or 0.0))[:5]
    worst = "".join(f"<li><span class=mono>{esc(t.get('canonical') or t.get('node') or t.get('tensor'))}</span> "
                    f"({esc(t.get('op_type'))}, "
                    f"{esc(t.get('precision') or '-')}): {key} {fmt_cell_err(as_float(t.get(key)))}</li>" for t in top)
    return (f'<div class="card"><h3><span class="mono">{esc(res["nodeid"])}</span>: {esc(title)}</h3>'
            f'<div class="note">first divergent node: <span class="mono">{esc(first_text)}</span>'
            f'{"; " + esc(rec.note) if rec.note else ""}</div>'
            f'<div class="figs"><div class="fig">{plot}</div><div><b>largest errors</b><ul>{worst}</ul></div>'
            f"</div></div>")


def layerwise_section(results: list[dict], use_png: bool) -> str:
    """Layerwise comparisons: the error curve per tensor and the largest errors."""
    cards = [_layerwise_card(res, rec, use_png) for res, rec in records_of(results, LayerwiseRecord)]
    if not cards:
        return ""
    return '<section id="layerwise"><h2>Layerwise error</h2>' + "".join(cards) + "</section>"


def parser_section(results) -> str:
    """Parser checks (TensorRT-RTX): one card per plan, failures and promotions per node."""
    rows = parser_rows(results)
    if not rows:
        return ""
    cards = []
    for r in sorted(rows, key=lambda r: bool(r.get("passed"))):
        c = r.get("counts") or {}
        lines = [(f, "fail", "lower than planned: a precision request not honoured") for f in r.get("failures") or ()]
        lines += [(p, "ok", "TensorRT computes this in higher precision than planned") for p in r.get("promotions") or ()]
        table = "".join(f'<tr class="{cls}"><td class="mono">{esc(node_label(n))}</td><td>{esc(n.get("op_type"))}</td>'
                        f'<td>{esc(n["planned"])}</td><td>{esc(n["parsed"])}</td><td>{esc(what)}</td></tr>'
                        for n, cls, what in lines)
        if table:
            table = ("<table><tr><th>node</th><th>op</th><th>planned</th><th>parsed</th><th>verdict</th></tr>"
                     + table + "</table>")
        error = f'<div class="note">{esc(r.get("error"))}</div>' if r.get("error") else ""
        # a negative control that caught the failure is neutral, as in the outputs table
        cls, word = ("ok", "ok") if r.get("passed") else ("caught", "XFAIL caught") if caught(r) else ("fail", "FAIL")
        cards.append(
            f'<div class="card {cls}"><h3>{word} '
            f'<span class="mono">{esc(r["test"])}</span>: {esc(r.get("model"))} [{esc(r.get("policy"))}]</h3>'
            f'<div class="note">{esc(r.get("library"))}, {esc(r.get("status"))}: {c.get("ok", 0)} node(s) as planned, '
            f'{c.get("lower", 0)} lower, {c.get("higher", 0)} computed in higher precision than planned (counted, '
            f'never failed), {c.get("not_in_network", 0)} folded away; {esc(r.get("how"))}</div>{error}{table}</div>')
    return ('<section id="parser"><h2>Parser check: planned vs parsed network dtypes (TensorRT-RTX)</h2>'
            + "".join(cards) + "</section>")


