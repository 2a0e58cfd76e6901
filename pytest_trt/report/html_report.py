"""``--trt-html PATH``: one self-contained HTML file (inline CSS, images as data URIs).

Sections: the run (backend and why, versions, GPU), the accuracy table (the terminal
summary's rows, all of them), one card per failing output with an error histogram and a
heatmap of where the error sits, the per-node precision view of every
``assert_precision`` (planned vs observed, Myelin regions marked) and layerwise error
curves when tests recorded them.

With matplotlib (the ``plots`` extra) the histogram, heatmap and curves are PNG images;
without it the same data is drawn with CSS (bars, coloured cells) and inline SVG, so
the report never needs anything but this package and a browser. Nothing is fetched
from the network when the file is opened.
"""

from __future__ import annotations

import datetime
import html
import math
import os
from pathlib import Path

from .json_report import session_metadata
from .outcomes import tone, verdict_text
from .plots import (
    NONFINITE_COLOR,
    as_float,
    heat_range,
    heatmap_png,
    histogram_png,
    layerwise_png,
    layerwise_points,
    matplotlib_available,
    mismatch_marks,
)
from .summary import (
    BAD_STATUSES,
    GOOD_STATUSES,
    accuracy_rows,
    caught,
    condense_records,
    engine_counts,
    fmt_err,
    fmt_ratio,
    fmt_tol,
    precision_rows,
    records_of,
    scope_of,
)

#: rows of a precision table before the rest is folded away
NODE_ROWS = 300
#: failing outputs drawn with figures (worst first); later cards have the facts only
FIGURE_CARDS = 40

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
main{max-width:1320px;margin:0 auto;padding:18px 20px 40px;box-sizing:border-box}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d9dde3;padding-bottom:4px}
h3{font-size:15px;margin:0 0 6px}
.meta{color:#5a6472;font-size:13px}
.badges{display:flex;gap:10px;flex-wrap:wrap;margin:12px 0}
.badge{background:#fff;border:1px solid #d9dde3;border-radius:6px;padding:6px 12px;font-size:13px}
.badge b{font-size:17px;margin-right:4px}
.badge.bad{border-color:#e3a5a0;background:#fdf0ef}.badge.good{border-color:#a9d8b8;background:#eff9f2}
table{border-collapse:collapse;background:#fff;font-size:12.5px;width:100%}
th,td{border-bottom:1px solid #e5e8ec;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.fail td{background:#fdf0ef}tr.fail td.st{color:#b3261e;font-weight:700}td.st{color:#1e7b3c;font-weight:600}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;overflow-wrap:break-word}
td.nw{white-space:nowrap}
.card{background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:12px 14px;margin:12px 0}
.card.fail{border-left:4px solid #c0392b}
.figs{display:flex;gap:18px;flex-wrap:wrap;align-items:flex-start;margin-top:8px}
.fig{flex:0 0 auto}.fig img{max-width:640px;display:block}
.caption{font-size:12px;color:#5a6472;margin-top:3px;max-width:560px}
.hist{display:flex;align-items:flex-end;height:120px;gap:1px;border-bottom:1px solid #888;padding:0 2px;width:460px}
.hist div{flex:1;background:#5b7db1;min-height:1px}.hist div.over{background:#c0392b}
.axis{display:flex;justify-content:space-between;width:464px;font-size:11px;color:#5a6472}
.heat{display:grid;gap:0;border:1px solid #888;width:max-content}
.heat div{width:9px;height:9px}.heat div.x{outline:1px solid #1f77b4;outline-offset:-1px}
.strip{display:grid;grid-auto-flow:column;grid-auto-columns:8px;justify-content:start;gap:1px;margin:4px 0;overflow-x:auto;padding:2px}
.strip div{width:8px;height:14px;background:#ccc}
.strip div.c{outline:2px solid #1d232b;outline-offset:-1px}.strip div.mm{outline:2px solid #e00;outline-offset:-2px}
.strip.my div{height:6px;background:transparent}.strip.my div.on{background:#7b3fa0}
.lbl{font-size:11px;color:#5a6472;width:70px;display:inline-block}
.p-fp32{background:#4f7fbf!important}.p-fp16{background:#f0a33a!important}.p-bf16{background:#b05fc4!important}
.p-mixed{background:#e8d44d!important}.p-none{background:#c8ccd2!important}.p-int{background:#9aa3ad!important}
.legend span{display:inline-block;width:11px;height:11px;margin:0 4px 0 10px;vertical-align:-1px}
.tag{display:inline-block;font-size:11px;border-radius:4px;padding:0 5px;margin-left:4px;background:#eee}
.tag.my{background:#7b3fa0;color:#fff}.tag.mm{background:#c0392b;color:#fff}.tag.uv{background:#e8d44d}
.tag.emu{background:#f0a33a;color:#fff}
details summary{cursor:pointer;color:#2d5b9a;margin:4px 0}
.note{font-size:12.5px;color:#5a6472}
footer{margin-top:34px;font-size:12px;color:#7a8491}
table.tests{table-layout:fixed}
table.tests td,table.tests th{overflow:hidden}
table.tests td.name,table.tests td.what{overflow-wrap:anywhere;word-break:break-word}
table.tests tbody{border-top:2px solid #d9dde3}
table.tests tr.test td{background:#fafbfc;font-weight:600}
table.tests tr.test td.what{font-weight:400}
.pill{display:inline-block;border-radius:4px;padding:0 6px;font-size:11.5px;font-weight:700;color:#fff}
.tone-bad .pill{background:#b3261e}.tone-good .pill{background:#1e7b3c}.tone-neutral .pill{background:#5a6472}
.tone-warn .pill{background:#b06f00}
tbody.tone-bad tr.out td{background:#fdf0ef}tbody.tone-neutral tr.out td{background:#f3f4f6}
tbody.tone-warn tr.test td{background:#fff7e6}
pre.msg{white-space:pre-wrap;overflow-wrap:anywhere;font-size:11.5px;margin:3px 0 0;max-height:9em;overflow:auto;
background:#fff;border:1px solid #e5e8ec;padding:4px}
abbr{text-decoration:none;cursor:help}
.net{display:flex;flex-wrap:wrap;gap:1px;margin:4px 0;max-width:100%}
.net div{width:9px;height:14px;background:#ccc}
.net div.c{outline:2px solid #1d232b;outline-offset:-1px}.net div.mm{outline:2px solid #e00;outline-offset:-2px}
.strip{max-width:100%}
"""

# light (small error) -> dark (large error), magma-like
_RAMP = ((252, 253, 191), (254, 176, 120), (241, 96, 93), (183, 55, 121), (114, 31, 129), (44, 17, 95))
_PRECISION_CLASS = {"fp32": "p-fp32", "fp16": "p-fp16", "bf16": "p-bf16", "mixed": "p-mixed"}


def _val(value) -> str:
    x = as_float(value)
    return "-" if x is None else f"{x:.6g}"


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _ramp(t: float) -> str:
    t = min(1.0, max(0.0, t))
    x = t * (len(_RAMP) - 1)
    i = min(int(x), len(_RAMP) - 2)
    f = x - i
    c = [round(a + (b - a) * f) for a, b in zip(_RAMP[i], _RAMP[i + 1], strict=True)]
    return f"#{c[0]:02x}{c[1]:02x}{c[2]:02x}"


# --------------------------------------------------------------------------------------
# CSS / SVG renderings (no matplotlib)
# --------------------------------------------------------------------------------------
def css_histogram(figures: dict) -> str:
    """Bars of the error histogram (height ~ log of the count); bins at or above atol in red."""
    hist = figures.get("histogram") or {}
    counts, edges = hist.get("counts") or [], hist.get("log10_edges") or []
    if not counts:
        return '<p class="note">no nonzero finite errors</p>'
    top = math.log1p(max(counts)) or 1.0
    atol_log = hist.get("atol_log10")
    bars = []
    for i, n in enumerate(counts):
        over = atol_log is not None and edges[i] >= atol_log
        height = 0 if n == 0 else max(2.0, 100.0 * math.log1p(n) / top)
        bars.append(f'<div class="{"over" if over else ""}" style="height:{height:.1f}%" '
                    f'title="10^{edges[i]:.2f} .. 10^{edges[i + 1]:.2f}: {n} element(s)"></div>')
    extra = []
    if hist.get("zero"):
        extra.append(f"{hist['zero']} exact")
    if hist.get("nonfinite"):
        extra.append(f"{hist['nonfinite']} NaN/Inf")
    mid = f"atol = 1e{atol_log:.2g}" if atol_log is not None else ""
    return (f'<div class="hist css-hist">{"".join(bars)}</div>'
            f'<div class="axis"><span>1e{edges[0]:g}</span><span>{_e(mid)}</span><span>1e{edges[-1]:g}</span></div>'
            f'<div class="caption">log10 |actual - expected| (bar height ~ log count; red: at or above atol)'
            f'{"; " + ", ".join(extra) if extra else ""}</div>')


def css_heatmap(figures: dict) -> str:
    """The max-pooled error grid as coloured cells (log scale; cyan = NaN/Inf; blue outline = mismatches)."""
    grid = figures.get("grid") or {}
    if not grid.get("rows"):
        return ""
    values = [[as_float(v) for v in row] for row in grid["max_abs"]]
    positive = [v for row in values for v in row if v is not None and math.isfinite(v) and v > 0]
    lo, hi = heat_range(positive)
    span = hi - lo
    counts = grid.get("mismatched")
    marks = set(mismatch_marks(grid) or ())
    cells = []
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if v is None or not math.isfinite(v):
                color = NONFINITE_COLOR
            elif v <= 0:
                color = _ramp(0.0)
            else:
                color = _ramp((math.log10(v) - lo) / span)
            bad = (i, j) in marks
            tip = f"cell ({i},{j}): max |err| {fmt_err(v)}" + (f", {counts[i][j]} mismatched" if counts else "")
            cells.append(f'<div{" class=x" if bad else ""} style="background:{color}" title="{_e(tip)}"></div>')
    rdims = "x".join(str(d) for d in grid.get("row_dims") or []) or "1"
    return (f'<div class="heat css-heat" style="grid-template-columns:repeat({grid["cols"]},9px)">{"".join(cells)}</div>'
            f'<div class="caption">where the error sits: rows = {_e(rdims)} ({grid["row_block"]} per cell), '
            f'columns = last dim {grid.get("col_dim")} ({grid["col_block"]} per cell); colour = log10 max |error| '
            f'from 1e{lo:.1f} (light) to 1e{hi:.1f} (dark); cyan = NaN/Inf'
            f'{"; outlined = cell holds mismatches" if marks else ""}</div>')


def svg_curve(record: dict) -> str:
    """Layerwise curve as inline SVG (log y), threshold dashed, first divergent tensor marked."""
    tensors, ys, what, threshold, first = layerwise_points(record)
    finite = [y for y in ys if y is not None and math.isfinite(y) and y > 0]
    if not finite:
        return '<p class="note">no nonzero errors</p>'
    lo, hi = math.log10(min(finite)), math.log10(max(finite))
    span = (hi - lo) or 1.0
    w, h, pad = 640, 180, 6
    n = max(1, len(tensors) - 1)

    def ypos(v):
        return pad + (h - 2 * pad) * (1 - (v - lo) / span)

    segments, current, dots = [], [], []
    for i, y in enumerate(ys):
        if y is None:  # not exposed by the engine: a gap
            if current:
                segments.append(current)
            current = []
            continue
        v = hi if not math.isfinite(y) else (lo if y <= 0 else math.log10(y))
        x, yy = pad + (w - 2 * pad) * i / n, ypos(v)
        current.append(f"{x:.1f},{yy:.1f}")
        if math.isfinite(y):
            dots.append(f'<circle cx="{x:.1f}" cy="{yy:.1f}" r="1.8" fill="#5b7db1"/>')
        else:
            dots.append(f'<path d="M{x - 4:.1f},{yy + 3:.1f} L{x + 4:.1f},{yy + 3:.1f} L{x:.1f},{yy - 4:.1f} Z" '
                        f'fill="#c0392b"><title>NaN/Inf</title></path>')
    if current:
        segments.append(current)
    lines = "".join(f'<polyline fill="none" stroke="#5b7db1" stroke-width="1.5" points="{" ".join(s)}"/>'
                    for s in segments) + "".join(dots)
    marks = []
    if threshold and threshold > 0 and lo <= math.log10(threshold) <= hi:
        y = ypos(math.log10(threshold))
        marks.append(f'<line x1="0" x2="{w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#000" stroke-dasharray="4 3"/>')
    if first is not None:
        x = pad + (w - 2 * pad) * first / n
        node = tensors[first].get("node") or tensors[first].get("tensor")
        marks.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{h}" stroke="#c0392b"/>'
                     f'<text x="{min(x + 3, w - 200):.1f}" y="12" font-size="10" fill="#c0392b">{_e(node)}</text>')
    return (f'<svg class="svg-curve" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'style="background:#fff;border:1px solid #ccc">{lines}{"".join(marks)}</svg>'
            f'<div class="caption">{_e(what)} per tensor in topological order, log scale from 1e{lo:.1f} to '
            f'1e{hi:.1f}; dashed: threshold; red line: first divergent node; red triangles: NaN/Inf</div>')


# --------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------
def _session_section(meta: dict) -> str:
    libs = ", ".join(f"{k} {v or 'not installed'}" for k, v in meta["libraries"].items())
    rows = [
        ("backend", f"{meta['backend']} ({meta['backend_reason']})"),
        ("default precision", f"{meta['precision']} ({meta['precision_source']}); typing {meta['typing']}"),
        ("inputs", f"seed {meta['seed']}; baseline ONNX Runtime {meta['baseline_provider']}"),
        ("tolerances", f"atol {meta['atol'] if meta['atol'] is not None else 'per precision'}, "
                       f"rtol {meta['rtol'] if meta['rtol'] is not None else 'per precision'}"),
        ("libraries", libs),
        ("GPU", meta["gpu"]),
        ("cache", meta["cache_dir"] + (" (rebuild)" if meta["rebuild"] else "")),
        ("versions", f"pytest-trt {meta['pytest_trt']}, pytest {meta['pytest']}, Python {meta['python']}"),
    ]
    if meta.get("keep_fp32"):
        rows.insert(2, ("--trt-keep-fp32", ", ".join(meta["keep_fp32"])))
    if meta.get("gpu_assignment"):
        rows.append(("GPU per worker", ", ".join(f"{w}: {g}" for w, g in meta["gpu_assignment"].items())))
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<section id="session"><h2>Run</h2><table class="kv">{body}</table></section>'


def _badges(results, rows, prec, counts) -> str:
    outcomes: dict[str, int] = {}
    for res in results:
        outcomes[res.get("outcome") or "?"] = outcomes.get(res.get("outcome") or "?", 0) + 1
    bad_tests = sum(1 for r in results if tone(r) == "bad")
    failed_out = sum(1 for r in rows if not r["passed"] and tone_of_row(r) == "bad")
    failed_p = sum(1 for p in prec if not p["passed"] and (p.get("expected_failure") or {}).get("verdict") != "caught")
    caught = sum(1 for r in results if (r.get("expected_failure") or {}).get("verdict") == "caught")

    def badge(n, label, bad=False):
        return f'<div class="badge {"bad" if bad else "good"}"><b>{n}</b>{_e(label)}</div>'

    breakdown = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
    return ('<div class="badges">'
            + badge(len(results), f"trt tests ({breakdown or 'none'})", bad_tests > 0)
            + (badge(caught, "negative controls caught") if caught else "")
            + badge(len(rows), f"outputs compared ({failed_out} outside tolerance"
                    + (", not counting negative controls)" if caught else ")"), failed_out > 0)
            + badge(len(prec), f"precision checks ({failed_p} failed"
                    + (", not counting negative controls)" if caught else ")"), failed_p > 0)
            + badge(counts["built"], f"engines built ({counts['build_seconds']:.2f}s)")
            + badge(counts["reused"], "engines reused from the cache")
            + "</div>")


#: the status pill of a test, by outcome / expected-failure verdict
_PILL = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP", "xpassed": "XPASS",
         "xfailed": "XFAIL"}
_PILL_VERDICT = {"caught": "XFAIL caught", "not_tested": "XFAIL untested", "missed": "MISSED", "passed": "XPASS"}
_TONE_ORDER = {"bad": 0, "warn": 1, "neutral": 2, "good": 3}
#: test ids longer than this are abbreviated (the full id is on hover)
NAME_CHARS = 90


def tone_of_row(row: dict) -> str:
    """An accuracy row's colour: a failing output of a caught negative control is neutral, not red."""
    if row["passed"]:
        return "good"
    return "neutral" if (row.get("expected_failure") or {}).get("verdict") == "caught" else "bad"


def _abbr(text, width: int = NAME_CHARS) -> str:
    """Long names cut in the middle, the full text on hover (``title``); short ones as they are."""
    text = "" if text is None else str(text)
    if len(text) <= width:
        return _e(text)
    keep = width - 1
    head = keep // 3
    return f'<abbr title="{_e(text)}">{_e(text[:head])}&hellip;{_e(text[-(keep - head):])}</abbr>'


def _abbr_nodeid(nodeid: str, width: int = NAME_CHARS) -> str:
    """A test id that fits: the test function's name is never cut; the directories go first,
    then the parameter id is cut in the middle. The full id is on hover."""
    nodeid = str(nodeid)
    if len(nodeid) <= width:
        return _e(nodeid)
    path, sep, rest = nodeid.partition("::")
    func, bracket, params = rest.partition("[")
    text = f"{path.rsplit('/', 1)[-1]}{sep}{func}"
    params = bracket + params
    room = max(16, width - len(text))
    if len(params) > room:
        head = room // 2
        params = params[:head] + "\u2026" + params[-(room - head - 1):]
    return f'<abbr title="{_e(nodeid)}">{_e(text + params)}</abbr>'


def _pill(res: dict) -> str:
    verdict = (res.get("expected_failure") or {}).get("verdict")
    label = _PILL_VERDICT.get(verdict) or _PILL.get(res.get("outcome"), str(res.get("outcome")))
    return f'<span class="pill" title="{_e(verdict_text(res))}">{_e(label)}</span>'


def _tests_section(results: list[dict], rows: list[dict], anchors: dict) -> str:
    """The dashboard: one group per trt test, worst first; per group the test's outcome row, then one
    row per output (the worst of repeated checks, with the example count); "how bad" columns first."""
    if not results:
        return ""
    by_test: dict[str, list[dict]] = {}
    for r in rows:
        by_test.setdefault(r["test"], []).append(r)

    def worst(res):
        ratios = [r["ratio"] for r in by_test.get(res["nodeid"], ()) if r["ratio"] is not None]
        return max(ratios, default=0.0)

    ordered = sorted(results, key=lambda res: (_TONE_ORDER[tone(res)], -worst(res), res["nodeid"]))
    cols = (("", 112), ("x tol", 86), ("max abs", 86), ("atol", 58), ("max rel", 86), ("rtol", 58),
            ("mismatched", 96), ("output", 156), ("test / model [policy]", None), ("engine", 86))
    out = ['<section id="tests"><h2>Tests (worst first)</h2>',
           '<p class="note">One group per trt test: its pytest outcome, then one row per output of its checks '
           '(the worst example when a test checked the same model and policy several times, e.g. Hypothesis). '
           'x tol &gt; 1 fails: the factor by which atol or rtol would have to grow for the output to pass (an '
           'element fails when its error exceeds atol <i>and</i> rtol&middot;|expected|), or, where a cosine floor '
           'applied and is the larger, (1 &minus; cos) / (1 &minus; min_cosine). A negative control '
           '(<code>xfail(strict=True, raises=AccuracyError)</code>) that failed with pytest-trt\'s verdict is '
           '<span class="tag">XFAIL caught</span>; one that failed for another reason tested nothing.</p>',
           '<table class="tests"><colgroup>'
           + "".join(f'<col style="width:{w}px">' if w else "<col>" for _, w in cols) + "</colgroup><thead><tr>"
           + "".join(f"<th>{_e(h)}</th>" for h, _ in cols) + "</tr></thead>"]
    for res in ordered:
        test_rows = by_test.get(res["nodeid"], [])
        t = tone(res)
        verdict = verdict_text(res)
        checks = sum(1 for _ in records_of([res], "accuracy"))
        examples = sum(int(rec.get("examples") or 1) for _, rec in records_of([res], "accuracy"))
        what = [verdict]
        if examples > checks:
            what.append(f"{examples} checks, worst shown")
        xf = res.get("expected_failure") or {}
        if xf.get("reason"):
            what.append(f"expected: {xf['reason']}")
        message = res.get("message")
        msg = ""
        if message:
            body = f'<pre class="msg">{_e(message)}</pre>'
            # open where it is the only story (failed before any check); folded where figures follow
            # or where the failure was expected
            folded = test_rows or t in ("neutral", "good")
            msg = f"<details><summary>message</summary>{body}</details>" if folded else body
        out.append(f'<tbody class="tone-{t}"><tr class="test"><td class="st">{_pill(res)}</td>'
                   f'<td colspan="9" class="name mono">{_abbr_nodeid(res["nodeid"])} '
                   f'<span class="note">&middot; {_e("; ".join(what))}</span>{msg}</td></tr>')
        for r in test_rows:
            anchor = anchors.get(id(r))
            rt = tone_of_row(r)
            label = "ok" if r["passed"] else ("caught" if rt == "neutral" else "FAIL")
            status = f'<a href="#{anchor}">{label}</a>' if anchor else label
            mism = "-" if r["mismatched"] is None else f"{r['mismatched']} / {r['total']}"
            case = f"{r['model']} [{r['policy']}] on {r['backend']}"
            if r.get("examples", 1) > 1:
                case += f" (worst of {r['examples']} checks)"
            out.append(
                f'<tr class="out {"ok" if r["passed"] else "fail"}"><td class="st">{status}</td>'
                f'<td class="num">{fmt_ratio(r["ratio"])}</td>'
                f'<td class="num">{fmt_err(r["max_abs"])}</td><td class="num">{fmt_tol(r["atol"])}</td>'
                f'<td class="num">{fmt_err(r["max_rel"])}</td><td class="num">{fmt_tol(r["rtol"])}</td>'
                f'<td class="num">{_e(mism)}</td><td class="mono name">{_abbr(r["output"], 24)}</td>'
                f'<td class="what">{_abbr(case, 120)}</td><td>{_e(r["engine"])}</td></tr>')
        out.append("</tbody>")
    out.append("</table></section>")
    return "".join(out)


def _failure_card(r: dict, anchor: str, use_png: bool) -> str:
    out = r["comparison"]
    facts = [f"shape {out.get('shape')} {out.get('dtype') or ''}".strip()]
    if r["mismatched"] is not None:
        facts.append(f"{r['mismatched']} of {r['total']} elements mismatched")
    if out.get("worst_abs_index") is not None:
        vals = out.get("worst_abs_values") or [None, None]
        facts.append(f"worst abs error {fmt_err(r['max_abs'])} at {tuple(out['worst_abs_index'])}: "
                     f"actual {_val(vals[0])}, expected {_val(vals[1])}")
    if out.get("unfixable") or out.get("needed_reason"):
        facts.append(_e(out.get("advice") or out.get("needed_reason")
                        or f"no tolerance passes the {out['unfixable']} NaN/Inf mismatch(es)"))
    elif out.get("advice"):
        facts.append(_e(out["advice"]))
    elif out.get("needed_atol") is not None:
        facts.append(f"would pass with atol &ge; {fmt_err(as_float(out.get('needed_atol')))} or rtol &ge; "
                     f"{fmt_err(as_float(out.get('needed_rtol')))}")
    if out.get("nan_actual"):
        facts.append(f"{out['nan_actual']} NaN in actual")
    if r["problem"]:
        facts.append(_e(r["problem"]))
    neutral = tone_of_row(r) == "neutral"
    tag = '<span class="tag">expected failure, caught</span>' if neutral else ""
    if r.get("examples", 1) > 1:
        tag += f'<span class="tag">worst of {r["examples"]} checks</span>'
    parts = [f'<div class="card{"" if neutral else " fail"}" id="{anchor}"><h3><span class="mono">{_abbr_nodeid(r["test"])}'
             f'</span> &rarr; output <span class="mono">{_e(r["output"])}</span>{tag}</h3>',
             f'<div class="note">{_e(r["model"])} on {_e(r["backend"])} [{_e(r["policy"])}], seed {_e(r["seed"])}, '
             f'baseline {_e(r["baseline"])}; tolerances atol {fmt_tol(r["atol"])}, rtol {fmt_tol(r["rtol"])}</div>',
             "<ul>" + "".join(f"<li>{f}</li>" for f in facts) + "</ul>"]
    figures = r.get("figures")
    if figures:
        title = f"{r['output']}"
        hist = histogram_png(figures, title=f"{title}: error histogram") if use_png else None
        heat = heatmap_png(figures, title=f"{title}: max |error| per cell") if use_png else None
        parts.append('<div class="figs">')
        parts.append('<div class="fig">' + (f'<img class="plot" alt="error histogram" src="{hist}">' if hist
                                             else css_histogram(figures)) + "</div>")
        if heat:
            grid = figures.get("grid") or {}
            rdims = "x".join(str(d) for d in grid.get("row_dims") or []) or "1"
            squares = "; blue squares = cells holding mismatches" if mismatch_marks(grid) else ""
            parts.append(f'<div class="fig"><img class="plot" alt="error heatmap" src="{heat}"><div class="caption">'
                         f'rows = {_e(rdims)} flattened ({grid.get("row_block")} per cell), columns = last dim '
                         f'({grid.get("col_block")} per cell); cyan = NaN/Inf{squares}</div></div>')
        else:
            parts.append('<div class="fig">' + css_heatmap(figures) + "</div>")
        parts.append("</div>")
    else:
        parts.append('<p class="note">no error figures recorded for this output</p>')
    parts.append("</div>")
    return "".join(parts)


def _failures_section(rows, anchors, use_png) -> str:
    failing = sorted((r for r in rows if not r["passed"]), key=lambda r: tone_of_row(r) != "bad")
    if not failing:
        return ""
    cards = []
    for i, r in enumerate(failing):
        if i >= FIGURE_CARDS:  # keep the file small when a whole suite fails: the worst ones get pictures
            r = {**r, "figures": None}
        cards.append(_failure_card(r, anchors[id(failing[i])], use_png))
    more = (f'<p class="note">figures shown for the {FIGURE_CARDS} worst outputs; the others are in '
            f'--trt-report</p>' if len(failing) > FIGURE_CARDS else "")
    return '<section id="failures"><h2>Failing outputs</h2>' + more + "".join(cards) + "</section>"


def _pclass(p) -> str:
    if p is None:
        return "p-none"
    return _PRECISION_CLASS.get(p, "p-int")


def _precision_card(p: dict) -> str:
    constrained = {n["node"] for n in p["constrained"]}
    nodes = p["nodes"] or p["constrained"]
    expected = caught(p)  # a negative control's assertion that failed as it must: neutral, folded
    verdict = "passed" if p["passed"] else ("FAILED, as expected (negative control caught)" if expected else "FAILED")
    tags = ""
    if p["emulated"]:
        tags += '<span class="tag emu">emulated: derived from the plan&#39;s realization</span>'
    out = [f'<div class="card{"" if p["passed"] or expected else " fail"}"><h3><span class="mono">{_abbr_nodeid(p["test"])}</span>: '
           f'<span class="mono">{_e(p["pattern"])}</span> &rarr; {_e(p["precision"])} {verdict}{tags}</h3>',
           f'<div class="note">source {_e(p["source"] or "?")}, typing {_e(p["typing"] or "?")}; constrained nodes: '
           + _e(", ".join(f"{n} {s}" for s, n in sorted(p["counts"].items())) or "none") + "</div>"]
    network = p.get("network") or []
    if network:
        out.append(_network_strip(network, p["constrained"]))
    if nodes:
        def strip(key, cls=""):
            cells = []
            for n in nodes:
                klass = [_pclass(n.get(key))]
                if n["node"] in constrained:
                    klass.append("c")
                if n.get("status") in BAD_STATUSES:
                    klass.append("mm")
                tip = (f"{n['node']} ({n.get('op_type')}): planned {n.get('planned') or '-'}, observed "
                       f"{n.get('observed') or '-'}, {n.get('status')}" + (", Myelin" if n.get("myelin") else "")
                       + (f", layer {n['layer']}" if n.get("layer") else ""))
                cells.append(f'<div class="{" ".join(klass)}" title="{_e(tip)}"></div>')
            return f'<div class="strip {cls}">{"".join(cells)}</div>'

        myelin = "".join(f'<div class="{"on" if n.get("myelin") else ""}"></div>' for n in nodes)
        out.append('<div class="legend note">nodes in topological order: '
                   '<span class="p-fp32"></span>fp32<span class="p-fp16"></span>fp16<span class="p-bf16"></span>bf16'
                   '<span class="p-mixed"></span>mixed<span class="p-none"></span>not float / not seen'
                   '<span style="outline:2px solid #1d232b"></span>constrained by the pattern'
                   '<span style="outline:2px solid #e00"></span>mismatch'
                   '<span style="background:#7b3fa0"></span>Myelin region</div>')
        out.append(f'<div><span class="lbl">planned</span>{strip("planned")}</div>')
        out.append(f'<div><span class="lbl">observed</span>{strip("observed")}</div>')
        if any(n.get("myelin") for n in nodes):
            out.append(f'<div><span class="lbl">Myelin</span><div class="strip my">{myelin}</div></div>')
    rows = p["constrained"]
    if rows:
        table = ['<table class="nodes"><tr><th>node</th><th>op</th><th>planned</th><th>observed</th><th>status</th>'
                 '<th>engine layer</th></tr>']
        for i, n in enumerate(rows):
            if i == NODE_ROWS:
                table.append(f'<tr><td colspan="6">... {len(rows) - NODE_ROWS} more in --trt-report</td></tr>')
                break
            tag = ""
            if n.get("myelin"):
                tag += f'<span class="tag my">Myelin{" " + _e(n["myelin_region"]) if n.get("myelin_region") else ""}</span>'
            status = n.get("status")
            if status in BAD_STATUSES:
                tag += f'<span class="tag mm">{_e(status)}{" (" + _e(n["cause"]) + ")" if n.get("cause") else ""}</span>'
            elif status == "unverifiable":
                tag += '<span class="tag uv">unverifiable</span>'
            detail = n.get("detail") if status not in GOOD_STATUSES else ""
            table.append(
                f'<tr class="{"fail" if status in BAD_STATUSES else ""}"><td class="mono">{_e(n["node"])}</td>'
                f'<td>{_e(n.get("op_type"))}</td><td>{_e(n.get("planned") or "-")}</td>'
                f'<td>{_e(n.get("observed") or "-")}</td><td>{"" if tag and status in BAD_STATUSES else _e(status)}{tag}'
                f'{"<div class=note>" + _e(detail) + "</div>" if detail else ""}'
                f'</td><td class="mono">{_e(n.get("layer") or "-")}</td></tr>')
        table.append("</table>")
        opened = " open" if not p["passed"] and not expected else ""
        out.append(f"<details{opened}><summary>{len(rows)} constrained node(s)</summary>{''.join(table)}</details>")
    for note in p["notes"]:
        out.append(f'<div class="note">{_e(note)}</div>')
    out.append("</div>")
    return "".join(out)


def _network_strip(network: list[dict], constrained: list[dict]) -> str:
    """The whole planned network, one cell per scope in graph order (wraps, never scrolls sideways):
    colour = planned precision of its compute nodes (mixed when they differ), outlined = holds nodes
    the pattern constrained, red outline = holds a constrained node that failed; full scope on hover."""
    held = {scope_of(n["node"]) for n in constrained}
    bad = {scope_of(n["node"]) for n in constrained if n.get("status") in BAD_STATUSES}
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
        tip = f"{sc['scope']}: {sc.get('nodes')} node(s): {counts}" + (" (constrained)" if sc["scope"] in held else "")
        cells.append(f'<div class="{" ".join(klass)}" title="{_e(tip)}"></div>')
    n_nodes = sum(int(sc.get("nodes") or 0) for sc in network)
    return (f'<div class="note">whole network: {len(network)} scopes, {n_nodes} nodes, planned precision per scope '
            f'(outlined: holds constrained nodes; red: a constrained node failed)</div>'
            f'<div class="net">{"".join(cells)}</div>')


def _precision_section(prec: list[dict]) -> str:
    if not prec:
        return ""
    ordered = sorted(prec, key=lambda p: (p["passed"], caught(p)))
    return ('<section id="precision"><h2>Precision: planned vs observed, per node</h2>'
            + "".join(_precision_card(p) for p in ordered) + "</section>")


def _layerwise_section(results, use_png) -> str:
    cards = []
    for res, rec in records_of(results, "layerwise"):
        title = f"{rec.get('model')} [{rec.get('policy')}]"
        png = layerwise_png(rec, title=title) if use_png else None
        plot = f'<img class="plot" alt="layerwise error" src="{png}">' if png else svg_curve(rec)
        first = rec.get("first")
        first_text = (f"{first.get('node')} ({first.get('op_type')}, {first.get('precision') or '-'}), tensor "
                      f"{first.get('tensor')}" if isinstance(first, dict) else (rec.get("first_divergent") or "none"))
        tensors = [t for t in layerwise_points(rec)[0] if t.get("available") is not False]
        key = "rel" if any("rel" in t for t in tensors) else "max_abs"
        top = sorted(tensors, key=lambda t: -(as_float(t.get(key)) or 0.0))[:5]
        worst = "".join(f"<li><span class=mono>{_e(t.get('node') or t.get('tensor'))}</span> ({_e(t.get('op_type'))}, "
                        f"{_e(t.get('precision') or '-')}): {key} {fmt_err(as_float(t.get(key)))}</li>" for t in top)
        cards.append(f'<div class="card"><h3><span class="mono">{_e(res["nodeid"])}</span>: {_e(title)}</h3>'
                     f'<div class="note">first divergent node: <span class="mono">{_e(first_text)}</span>'
                     f'{"; " + _e(rec.get("note")) if rec.get("note") else ""}</div>'
                     f'<div class="figs"><div class="fig">{plot}</div><div><b>largest errors</b><ul>{worst}</ul></div>'
                     f"</div></div>")
    if not cards:
        return ""
    return '<section id="layerwise"><h2>Layerwise error</h2>' + "".join(cards) + "</section>"


def _parser_section(results) -> str:
    """Parser checks (TensorRT-RTX): one card per plan, failures and promotions per node."""
    from .summary import parser_rows

    rows = parser_rows(results)
    if not rows:
        return ""
    cards = []
    for r in sorted(rows, key=lambda r: bool(r.get("passed"))):
        c = r.get("counts") or {}
        lines = [(f, "fail", "lower than planned: a precision request not honoured") for f in r.get("failures") or ()]
        lines += [(p, "ok", "TensorRT computes this in higher precision than planned") for p in r.get("promotions") or ()]
        table = "".join(f'<tr class="{cls}"><td class="mono">{_e(n["node"])}</td><td>{_e(n.get("op_type"))}</td>'
                        f'<td>{_e(n["planned"])}</td><td>{_e(n["parsed"])}</td><td>{_e(what)}</td></tr>'
                        for n, cls, what in lines)
        if table:
            table = ("<table><tr><th>node</th><th>op</th><th>planned</th><th>parsed</th><th>verdict</th></tr>"
                     + table + "</table>")
        error = f'<div class="note">{_e(r.get("error"))}</div>' if r.get("error") else ""
        cards.append(
            f'<div class="card {"ok" if r.get("passed") else "fail"}"><h3>{"ok" if r.get("passed") else "FAIL"} '
            f'<span class="mono">{_e(r["test"])}</span>: {_e(r.get("model"))} [{_e(r.get("policy"))}]</h3>'
            f'<div class="note">{_e(r.get("library"))}, {_e(r.get("status"))}: {c.get("ok", 0)} node(s) as planned, '
            f'{c.get("lower", 0)} lower, {c.get("higher", 0)} computed in higher precision than planned (counted, '
            f'never failed), {c.get("not_in_network", 0)} folded away; {_e(r.get("how"))}</div>{error}{table}</div>')
    return ('<section id="parser"><h2>Parser check: planned vs parsed network dtypes (TensorRT-RTX)</h2>'
            + "".join(cards) + "</section>")


def render_html(session, results, exitstatus=None) -> str:
    """The report as one HTML string."""
    meta = session_metadata(session)
    # one row per repeated check, even when --trt-report-all-records kept every record for the JSON
    results = [{**res, "records": condense_records(res.get("records") or [])} for res in results]
    rows = accuracy_rows(results)
    prec = precision_rows(results)
    counts = engine_counts(results)
    use_png = matplotlib_available()
    failing = sorted((r for r in rows if not r["passed"]), key=lambda r: tone_of_row(r) != "bad")
    anchors = {id(r): f"out-{i}" for i, r in enumerate(failing)}
    created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    plots = "matplotlib" if use_png else "CSS (install pytest-trt[plots] for matplotlib plots)"
    status = "" if exitstatus is None else f"; pytest exit status {int(exitstatus)}"
    emulate = (' <span class="tag emu">CPU emulation, not TensorRT</span>' if meta["backend"] == "emulate" else "")
    body = [
        "<main>",
        f"<header><h1>pytest-trt report</h1><div class=\"meta\">backend <b>{_e(meta['backend'])}</b>{emulate}; "
        f"default precision {_e(meta['precision'])}; GPU {_e(meta['gpu'])}; {created}{_e(status)}</div></header>",
        _badges(results, rows, prec, counts),
        _tests_section(results, rows, anchors),
        _failures_section(rows, anchors, use_png),
        _precision_section(prec),
        _parser_section(results),
        _layerwise_section(results, use_png),
        _session_section(meta),
        f"<footer>pytest-trt {_e(meta['pytest_trt'])}; plots: {_e(plots)}</footer>",
        "</main>",
    ]
    if not results:
        body.insert(3, '<p class="note">No test used pytest-trt in this session.</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>pytest-trt report</title><style>{CSS}</style></head><body>"
            + "".join(body) + "</body></html>\n")


def write_html_report(path, session, results, exitstatus=None) -> Path:
    """Write the HTML report to ``path`` atomically; returns the path."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    text = render_html(session, results, exitstatus)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


__all__ = ["css_heatmap", "css_histogram", "render_html", "svg_curve", "write_html_report"]
