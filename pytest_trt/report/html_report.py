"""``--trt-html PATH``: one self-contained HTML file (inline CSS, images as data URIs).

Sections: the run (backend and why, versions, GPU), the accuracy table (the terminal
summary's rows, all of them), one card per failing output with an error histogram and a
heatmap of where the error sits, the per-node precision view of every
``assert_precision`` (planned vs observed, Myelin regions marked), layerwise error
curves and ledgers (:mod:`~pytest_trt.report.html_ledger`: a scope strip and a sortable
table; its small inline script is the report's only one) when tests recorded them.

With matplotlib (the ``plots`` extra) the histogram, heatmap and curves are PNG images;
without it the same data is drawn with CSS (bars, coloured cells) and inline SVG, so
the report never needs anything but this package and a browser. Nothing is fetched
from the network when the file is opened.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from ..core.formatting import fmt_cell_err, fmt_cell_tol, fmt_ratio
from ..core.records import AccuracyRecord
from .condense import condense_records
from .files import write_atomically
from .html_cards import (
    NAME_CHARS,
    abbr_nodeid,
    failures_section,
    layerwise_section,
    parser_section,
    precision_section,
    tone_of_row,
)
from .html_figures import css_heatmap, css_histogram, esc, svg_curve
from .html_history import drift_by_output, drift_cell, drift_section
from .html_ledger import LEDGER_CSS, SORT_SCRIPT, ledger_section
from .json_report import session_metadata
from .outcomes import CAUGHT_VERDICTS, caught_in_test, checked_nothing, tone, verdict_text
from .plots import matplotlib_available
from .rows import accuracy_rows, binding_text, engine_counts, ledger_rows, precision_rows, records_of
from .rows import caught as caught_row

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
.drift-bad{color:#b3261e}.drift-good{color:#1e7b3c}td.drift{overflow-wrap:anywhere}
table.drift td.name{overflow-wrap:anywhere}
"""

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
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<section id="session"><h2>Run</h2><table class="kv">{body}</table></section>'


def _badge(n: int, label: str, bad: bool = False) -> str:
    return f'<div class="badge {"bad" if bad else "good"}"><b>{n}</b>{esc(label)}</div>'


def _badges(results: list[dict], rows: list[dict], prec: list[dict], counts: dict) -> str:
    """The headline figures: tests by outcome, negative controls, tests that checked nothing, outputs,
    precision checks, engines."""
    outcomes: dict[str, int] = {}
    for res in results:
        outcomes[res.get("outcome") or "?"] = outcomes.get(res.get("outcome") or "?", 0) + 1
    bad_tests = sum(1 for r in results if tone(r) == "bad")
    failed_out = sum(1 for r in rows if not r["passed"] and tone_of_row(r) == "bad")
    failed_p = sum(1 for p in prec if not p["passed"] and not caught_row(p))
    caught = sum(1 for r in results if (r.get("expected_failure") or {}).get("verdict") == "caught")
    not_counting = _not_counting(results, caught)
    breakdown = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
    return ('<div class="badges">'
            + _badge(len(results), f"trt tests ({breakdown or 'none'})", bad_tests > 0)
            + (_badge(caught, "negative controls caught") if caught else "")
            + _unchecked_badge(results)
            + _caught_in_test_badge(results)
            + _badge(len(rows), f"outputs compared ({failed_out} outside tolerance" + not_counting, failed_out > 0)
            + _badge(len(prec), f"precision checks ({failed_p} failed" + not_counting, failed_p > 0)
            + _badge(counts["built"], f"engines built ({counts['build_seconds']:.2f}s)")
            + _reuse_badges(counts)
            + "</div>")


def _not_counting(results: list[dict], controls: int) -> str:
    """The end of the failure badges: which caught failures they leave out (xfail controls, tests that caught one)."""
    by_test = any(caught_in_test(r) for r in results)
    return (", not counting negative controls" if controls else "") + (
        ", not counting failures caught by the tests" if by_test else "") + ")"


def _reuse_badges(counts: dict) -> str:
    """Engines loaded from the cache and, where there were any, uses of engines this session built
    (the rows' "cache hit" on a first run)."""
    again = counts["session_reuses"]
    return (_badge(counts["reused"], "engines reused from the cache")
            + (_badge(again, "uses of engines built in this session") if again else ""))


def _unchecked_badge(results: list[dict]) -> str:
    """A red badge for trt tests that passed without checking anything (none: no badge)."""
    unchecked = sum(1 for r in results if checked_nothing(r))
    return _badge(unchecked, "passed without checking anything", True) if unchecked else ""


def _caught_in_test_badge(results: list[dict]) -> str:
    """A red badge per outcome for trt tests that did not fail although a check failed inside them (caught
    by the test: passed, skipped or xpassed after it)."""
    badges = ""
    for outcome, verdict in CAUGHT_VERDICTS.items():
        found = sum(1 for r in results if r.get("outcome") == outcome and caught_in_test(r))
        badges += _badge(found, verdict, True) if found else ""
    return badges


#: the status pill of a test, by outcome / expected-failure verdict
#: the pill of a trt test that did not fail although a check of it failed (caught by the test), by outcome
_CAUGHT_PILL = {"passed": "ok, CAUGHT", "skipped": "SKIP, CAUGHT", "xpassed": "XPASS, CAUGHT"}
_PILL = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP", "xpassed": "XPASS",
         "xfailed": "XFAIL"}
_PILL_VERDICT = {"caught": "XFAIL caught", "not_tested": "XFAIL untested", "missed": "MISSED", "passed": "XPASS"}
_TONE_ORDER = {"bad": 0, "warn": 1, "neutral": 2, "good": 3}


def _abbr(text, width: int = NAME_CHARS) -> str:
    """Long names cut in the middle, the full text on hover (``title``); short ones as they are."""
    text = "" if text is None else str(text)
    if len(text) <= width:
        return esc(text)
    keep = width - 1
    head = keep // 3
    return f'<abbr title="{esc(text)}">{esc(text[:head])}&hellip;{esc(text[-(keep - head):])}</abbr>'


def _pill(res: dict) -> str:
    verdict = (res.get("expected_failure") or {}).get("verdict")
    outcome = str(res.get("outcome"))
    if caught_in_test(res):  # before the xfail verdict: an XPASS after a failed check is worded by what it caught
        label = _CAUGHT_PILL.get(outcome, "CAUGHT")
    else:
        label = _PILL_VERDICT.get(str(verdict)) or ("UNCHECKED" if checked_nothing(res) else _PILL.get(outcome, outcome))
    return f'<span class="pill" title="{esc(verdict_text(res))}">{esc(label)}</span>'


_TESTS_NOTE = (
    '<p class="note">One group per trt test: its pytest outcome, then one row per output of its checks '
    '(the worst example when a test checked the same model and policy several times, e.g. Hypothesis). '
    'x tol &gt; 1 fails: the largest of the bounds that applied, named under it: <i>element</i>, how much '
    'of its own tolerance the worst element uses, |actual &minus; expected| / max(atol, rtol&middot;|expected|) '
    '(an element fails when its error exceeds atol <i>and</i> rtol&middot;|expected|); <i>cosine</i>, '
    '(1 &minus; cos) / (1 &minus; min_cosine) where a cosine floor applied; <i>SNR</i>, the noise power over '
    'the noise the SNR floor allows. A negative control '
    '(<code>xfail(strict=True, raises=AccuracyError)</code>) that failed with pytest-trt\'s verdict is '
    '<span class="tag">XFAIL caught</span>; one that failed for another reason tested nothing. '
    '<span class="tag">UNCHECKED</span>: a test that passed without any check, precision assertion, locate, '
    'suggest, or engine built by a real TensorRT builder: it tested nothing. '
    '<span class="tag">ok, CAUGHT</span>: a test that passed although a check of it failed: the test caught the '
    'failure itself (<code>pytest.raises(AccuracyError)</code> as a negative control, or a '
    '<code>try</code>/<code>except</code>); its failures count as caught. <span class="tag">SKIP, CAUGHT</span> / '
    '<span class="tag">XPASS, CAUGHT</span>: the same, in a test that then skipped or xpassed: it did test, '
    'and its check failed.</p>')
_TESTS_COLUMNS = (("", 112), ("x tol", 96), ("max abs", 86), ("atol", 58), ("max rel", 86), ("rtol", 58),
                  ("mismatched", 96), ("output", 156), ("test / model [policy]", None), ("engine", 86))


def _tests_section(results: list[dict], rows: list[dict], anchors: dict, drift=None) -> str:
    """The dashboard: one group per trt test, worst first; per group the test's outcome row, then one
    row per output (the worst of repeated checks, with the example count); "how bad" columns first;
    with a stored run compared (``drift``), a drift column."""
    if not results:
        return ""
    columns = _TESTS_COLUMNS + ((("drift", 120),) if drift is not None else ())
    by_output = drift_by_output(drift)
    gated = bool(drift is not None and drift.gated)
    by_test: dict[str, list[dict]] = {}
    for r in rows:
        by_test.setdefault(r["test"], []).append(r)

    def worst(res):
        ratios = [r["ratio"] for r in by_test.get(res["nodeid"], ()) if r["ratio"] is not None]
        return max(ratios, default=0.0)

    ordered = sorted(results, key=lambda res: (_TONE_ORDER[tone(res)], -worst(res), res["nodeid"]))
    out = ['<section id="tests"><h2>Tests (worst first)</h2>', _TESTS_NOTE,
           '<table class="tests"><colgroup>'
           + "".join(f'<col style="width:{w}px">' if w else "<col>" for _, w in columns)
           + "</colgroup><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h, _ in columns) + "</tr></thead>"]
    for res in ordered:
        test_rows = by_test.get(res["nodeid"], [])
        out.append(f'<tbody class="tone-{tone(res)}">{_test_row(res, test_rows, len(columns) - 1)}')
        out += [_output_row(r, anchors.get(id(r)),
                            drift_cell(by_output.get((r["test"], r["output"])), gated) if drift is not None else "")
                for r in test_rows]
        out.append("</tbody>")
    out.append("</table></section>")
    return "".join(out)


def _test_row(res: dict, test_rows: list[dict], span: int = 9) -> str:
    """A test's own row: its pill, id, verdict, repeated checks, expected-failure reason, message."""
    t = tone(res)
    checks = [rec for _, rec in records_of([res], AccuracyRecord)]
    examples = sum(rec.count for rec in checks)
    what = [verdict_text(res)]
    if examples > len(checks):
        what.append(f"{examples} checks, worst shown")
    xf = res.get("expected_failure") or {}
    if xf.get("reason"):
        what.append(f"expected: {xf['reason']}")
    message = res.get("message")
    msg = ""
    if message:
        body = f'<pre class="msg">{esc(message)}</pre>'
        # open where it is the only story (failed before any check); folded where figures follow
        # or where the failure was expected
        folded = test_rows or t in ("neutral", "good")
        msg = f"<details><summary>message</summary>{body}</details>" if folded else body
    return (f'<tr class="test"><td class="st">{_pill(res)}</td>'
            f'<td colspan="{span}" class="name mono">{abbr_nodeid(res["nodeid"])} '
            f'<span class="note">&middot; {esc("; ".join(what))}</span>{msg}</td></tr>')


def _output_row(r: dict, anchor: str | None, drift: str = "") -> str:
    """One output's row: status (linked to its card when it failed), how bad, the case, the engine."""
    label = ("nocheck" if r.get("no_check") else "ok") if r["passed"] else \
        ("caught" if tone_of_row(r) == "neutral" else "FAIL")
    status = f'<a href="#{anchor}">{label}</a>' if anchor else label
    mism = "-" if r["mismatched"] is None else f"{r['mismatched']} / {r['total']}"
    case = f"{r['model']} [{r['policy']}] on {r['backend']}"
    if r.get("examples", 1) > 1:
        case += f" (worst of {r['examples']} checks)"
    return (f'<tr class="out {"ok" if r["passed"] else "fail"}"><td class="st">{status}</td>'
            f'<td class="num">{fmt_ratio(r["ratio"])}<br><span class="note">{esc(binding_text(r.get("binding")))}'
            f'</span></td>'
            f'<td class="num">{fmt_cell_err(r["max_abs"])}</td><td class="num">{fmt_cell_tol(r["atol"])}</td>'
            f'<td class="num">{fmt_cell_err(r["max_rel"])}</td><td class="num">{fmt_cell_tol(r["rtol"])}</td>'
            f'<td class="num">{esc(mism)}</td><td class="mono name">{_abbr(r["output"], 24)}</td>'
            f'<td class="what">{_abbr(case, 120)}</td><td>{esc(r["engine"])}</td>{drift}</tr>')


def render_html(session, results, exitstatus=None) -> str:
    """The report as one HTML string."""
    meta = session_metadata(session)
    history = getattr(session, "history", None)  # saved runs: the drift against a stored run
    # one row per repeated check, even when --trt-report-all-records kept every record for the JSON
    results = [{**res, "records": condense_records(res.get("records") or [])} for res in results]
    rows = accuracy_rows(results)
    prec = precision_rows(results)
    counts = engine_counts(results)
    ledgers = ledger_rows(results)
    use_png = matplotlib_available()
    failing = sorted((r for r in rows if not r["passed"]), key=lambda r: tone_of_row(r) != "bad")
    anchors = {id(r): f"out-{i}" for i, r in enumerate(failing)}
    created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    plots = "matplotlib" if use_png else "CSS (install pytest-trt[plots] for matplotlib plots)"
    status = "" if exitstatus is None else f"; pytest exit status {int(exitstatus)}"
    disclaimer = meta["backend_disclaimer"]
    emulate = f' <span class="tag emu">{esc(disclaimer)}</span>' if disclaimer else ""
    body = [
        "<main>",
        f"<header><h1>pytest-trt report</h1><div class=\"meta\">backend <b>{esc(meta['backend'])}</b>{emulate}; "
        f"default precision {esc(meta['precision'])}; GPU {esc(meta['gpu'])}; {created}{esc(status)}</div></header>",
        _badges(results, rows, prec, counts),
        _tests_section(results, rows, anchors, getattr(history, "drift", None)),
        drift_section(history),
        failures_section(rows, anchors, use_png, FIGURE_CARDS),
        precision_section(prec),
        parser_section(results),
        layerwise_section(results, use_png),
        ledger_section(ledgers),
        _session_section(meta),
        f"<footer>pytest-trt {esc(meta['pytest_trt'])}; plots: {esc(plots)}</footer>",
        "</main>",
    ]
    if not results:
        body.insert(3, '<p class="note">No test used pytest-trt in this session.</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"generator\" content=\"pytest-trt\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>pytest-trt report</title><style>{CSS}{LEDGER_CSS if ledgers else ''}</style></head><body>"
            + "".join(body) + (SORT_SCRIPT if ledgers else "") + "</body></html>\n")


def write_html_report(path, session, results, exitstatus=None) -> Path:
    """Write the HTML report to ``path`` atomically (no temporary file left on failure); returns the path."""
    return write_atomically(Path(path), render_html(session, results, exitstatus))


__all__ = ["css_heatmap", "css_histogram", "render_html", "svg_curve", "write_html_report"]

