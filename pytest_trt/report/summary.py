"""The terminal summary: the ``pytest-trt`` section at the end of a run (controller only).

Engines built and reused, the cache, one row per output of every accuracy check (worst
first), the precision and parser checks, CUDA baseline fallbacks. Its figures come from
:mod:`pytest_trt.report.rows`, which every report shares; this module also re-exports those
names, :func:`~pytest_trt.report.condense.condense_records` and
:func:`~pytest_trt.report.junit.junit_properties` under ``pytest_trt.report.summary``, where
they used to live.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.evidence import INFERRED
from ..core.formatting import fmt_cell_err, fmt_cell_tol, fmt_ratio
from ..ledger.render import summary_lines as ledger_summary_lines
from .condense import condense_records
from .junit import junit_properties
from .outcomes import CAUGHT_VERDICTS, built_only, caught_in_test, checked_nothing
from .rows import (
    BAD_STATUSES,
    EVIDENCE,
    GOOD_STATUSES,
    NEUTRAL_STATUSES,
    accuracy_rows,
    baseline_fallbacks,
    binding_text,
    caught,
    caught_by_test,
    engine_counts,
    engine_text,
    evidence_counts,
    ledger_rows,
    metric_ratios,
    network_scopes,
    node_label,
    parser_promotions,
    parser_rows,
    precision_nodes,
    precision_passed,
    precision_rows,
    records_of,
    scope_of,
    tolerance_bound,
    tolerance_ratio,
    unique,
    worst_per_test_output,
)

#: rows of the terminal table without -v (all rows with -v, and always in --trt-report)
TERMINAL_ROWS = 30
#: units of each ledger shown in the terminal without -v (three times as many with -v)
LEDGER_ROWS = 10


def fallback_lines(results, *, nodes_shown: int = 5) -> list[str]:
    """The terminal summary's lines for :func:`baseline_fallbacks` (none when there are none)."""
    found = baseline_fallbacks(results)
    if not found:
        return []
    total = sum(len(f["nodes"]) for f in found)
    lines = [f"WARNING baseline: {total} float node(s) of {len(found)} CUDA baseline(s) ran on ONNX Runtime's CPU "
             f"provider, not CUDA (the reference is exact FP32 but not all-GPU)"]
    for f in found:
        shown = ", ".join(f"{n} ({op})" for n, op in f["nodes"][:nodes_shown])
        more = f" +{len(f['nodes']) - nodes_shown} more" if len(f["nodes"]) > nodes_shown else ""
        tests = f"{len(f['tests'])} test(s)" if len(f["tests"]) > 1 else (f["tests"][0] or "?")
        lines.append(f"  {f['model']} ({tests}): {shown}{more}")
    return lines


# --------------------------------------------------------------------------------------
# Terminal summary
# --------------------------------------------------------------------------------------
def _cut(text: str, width: int) -> str:
    """Cut from the left; a test id too long keeps its test name (after the last '::') first."""
    text = str(text)
    if len(text) <= width:
        return text
    if "::" in text:
        name = text.split("::")[-1] if "[" not in text.split("::")[-1] else text[text.rindex("::") + 2:]
        if len(name) + 5 <= width:
            return "...::" + name
    return "..." + text[-(width - 3):]


def _cut_end(text: str, width: int) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


def backend_line(session) -> str:
    """``backend NAME`` and, when its results are not TensorRT's, what they are (``Backend.disclaimer``)."""
    disclaimer = session.backend.disclaimer
    return f"backend {session.backend.name}" + (f" ({disclaimer})" if disclaimer else "")


def engines_line(counts: dict[str, Any]) -> str:
    """``engines: 13 built (0.07s), 0 reused from the cache; 17 use(s) by tests, 4 of them reusing an engine
    built in this session``: the last part counts the rows' "cache hit" on engines this run built."""
    again = counts.get("session_reuses", 0)
    return (f"engines: {counts['built']} built ({counts['build_seconds']:.2f}s), {counts['reused']} reused from "
            f"the cache; {counts['uses']} use(s) by tests"
            + (f", {again} of them reusing an engine built in this session" if again else ""))


def _judged(row: dict) -> bool:
    """An output compared with finite atol and rtol: it has a tolerance verdict, also under no_check."""
    atol, rtol = row.get("atol"), row.get("rtol")
    return atol is not None and rtol is not None and math.isfinite(atol) and math.isfinite(rtol)


def _status_word(row: dict) -> str:
    if row["passed"]:
        return "nocheck" if row.get("no_check") and not _judged(row) else "ok"
    if caught_by_test(row):
        return "caught"  # failed inside a test that passed: it caught the failure itself
    return "xfail" if caught(row) else "FAIL"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def cache_line(session) -> str | None:
    """``cache entries: 3 local hit(s), 2 built (engines, baselines, emulation graphs); remote (rw): 2 hit(s),
    ...; ~31.0s of builds saved; 4 evicted (4.8 MB) to stay under 1.0 kB (--trt-cache-max-size)`` (None if unused).

    Counts every cache kind (engines, baselines, emulation graphs) of every xdist worker, so its
    figures differ from the ``engines:`` line, which counts engines only; the line says so.
    """
    stats_of = getattr(session, "cache_stats", None)
    if stats_of is None:
        return None
    stats = stats_of()
    cache = session.opened_cache
    remote = session.opened_remote or (cache.remote if cache is not None else None)
    if not (stats.local_hits or stats.builds or stats.remote_hits or stats.evictions or remote is not None):
        return None
    text = (f"cache entries: {stats.local_hits} local hit(s), {stats.builds} built "
            f"(engines, baselines, emulation graphs)")
    if remote is not None:
        text += (f"; remote ({remote.mode}): {stats.remote_hits} hit(s), {stats.remote_misses} miss(es), "
                 f"{stats.remote_uploads} upload(s), {_mb(stats.remote_bytes)} moved in "
                 f"{stats.remote_requests} request(s)")
        if stats.remote_rejected:
            text += f", {stats.remote_rejected} REJECTED (see the warnings)"
        if stats.remote_errors or stats.remote_upload_failures:
            text += f", {stats.remote_errors + stats.remote_upload_failures} transport error(s)"
    text += f"; ~{stats.seconds_saved:.1f}s of builds saved"
    if stats.evictions:
        settings = getattr(session, "settings", None)
        limit = getattr(settings, "cache_max_bytes", None)
        flag = getattr(settings, "sources", {}).get("trt_cache_max_size", "default")
        flag = "--trt-cache-max-size" if flag == "default" else flag
        why = f" to stay under {_mb(limit)} ({flag})" if limit is not None else ""
        text += f"; {stats.evictions} evicted ({_mb(stats.evicted_bytes)}){why}"
    return text


def table_lines(rows: list[dict], width: int = 120) -> list[str]:
    """The accuracy table as text lines (header first).

    Figures first (fixed width, so they line up whatever the names), then test, output
    and what was tested: ``model [policy]``, plus ``on <backend>`` when the rows mix
    backends (otherwise the backend is in the line above the table). The test column
    is cut from the left to fit ``width``; the last column is never cut.
    """
    backends = {r["backend"] for r in rows}

    def case(r):
        text = f"{r['model'] or '-'} [{r['policy'] or '-'}]"
        return text + (f" on {r['backend']}" if len(backends) > 1 else "")

    figures = [
        ("", _status_word, "<"),
        ("x tol", lambda r: fmt_ratio(r["ratio"]), ">"),
        ("bound", lambda r: binding_text(r.get("binding")), "<"),
        ("max abs", lambda r: fmt_cell_err(r["max_abs"]), ">"),
        ("atol", lambda r: fmt_cell_tol(r["atol"]), ">"),
        ("max rel", lambda r: fmt_cell_err(r["max_rel"]), ">"),
        ("rtol", lambda r: fmt_cell_tol(r["rtol"]), ">"),
        ("engine", lambda r: r["engine"], "<"),
    ]
    cells = [[str(get(r)) for _, get, _ in figures] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (h, _, _) in enumerate(figures)]
    out_w = min(24, max([6] + [len(r["output"]) for r in rows]))
    cases = [case(r) for r in rows]
    fixed = sum(widths) + 2 * (len(figures) + 2) + out_w + min(32, max([4] + [len(c) for c in cases]))
    test_w = max(32, min(max([4] + [len(r["test"]) for r in rows]), width - fixed))

    def line(values, test, output, what):
        parts = [f"{v:{align}{w}}" for (_, _, align), w, v in zip(figures, widths, values, strict=True)]
        parts += [f"{_cut(test, test_w):<{test_w}}", f"{_cut_end(output, out_w):<{out_w}}", what]
        return "  ".join(parts).rstrip()

    out = [line([h for h, _, _ in figures], "test", "output", "model [policy]")]
    out += [line(c, r["test"], r["output"], k) for r, c, k in zip(rows, cells, cases, strict=True)]
    return out


def skipped_line(total: int, skipped: list, *, reasons: int = 5, after_check: int = 0) -> str:
    """How many trt tests were skipped and why: a skipped test tested nothing, and a run that
    skipped them all is green; this line is the first thing the summary says. ``after_check``: the
    tests that skipped after a failed check (they tested; listed below as caught), which pytest
    counts as skipped too, so this line never says "none skipped" for them."""
    also = f"{after_check} skipped after a failed check (listed below)" if after_check else ""
    if not skipped:
        return f"trt tests: {total} ran, {also or 'none skipped'}"
    by_reason: dict[str, int] = {}
    for _, reason in skipped:
        by_reason[reason] = by_reason.get(reason, 0) + 1
    ordered = sorted(by_reason.items(), key=lambda kv: -kv[1])
    why = "; ".join(f"{n} x {reason}" for reason, n in ordered[:reasons])
    if len(ordered) > reasons:
        why += f"; {len(ordered) - reasons} more reason(s) (-rs lists them)"
    return (f"trt tests: {len(skipped)} of {total} SKIPPED (tested nothing): {why}. "
            f"--trt-require-run makes a skipped trt test a failure" + (f"; {also}" if also else ""))


def untested_controls_lines(results, *, shown: int = 10) -> list[str]:
    """Negative controls that xfailed without testing anything (``expected_failure.verdict ==
    "not_tested"``, :mod:`pytest_trt.report.outcomes`): an xfail without ``raises=`` that failed for
    another reason (a pattern typo, a missing file). pytest counts them "xfailed" and exits 0."""
    untested = [r for r in results if (r.get("expected_failure") or {}).get("verdict") == "not_tested"]
    if not untested:
        return []
    lines = [f"trt tests: {len(untested)} negative control(s) xfailed without testing anything: they raised "
             f"something other than pytest-trt's verdict (AccuracyError, PrecisionError); write them "
             f"@pytest.mark.xfail(strict=True, raises=AccuracyError) so that pytest fails them too"]
    for r in untested[:shown]:
        raised = (r.get("expected_failure") or {}).get("raised") or "nothing"
        lines.append(f"  {r.get('nodeid')}: raised {raised}")
    if len(untested) > shown:
        lines.append(f"  ... {len(untested) - shown} more: see --trt-report / --trt-html")
    return lines


def unchecked_lines(results, *, shown: int = 10) -> list[str]:
    """trt tests that passed without checking anything (:func:`~pytest_trt.report.outcomes.checked_nothing`:
    no check, precision assertion, parser check, locate, suggest or ledger, and no engine built by a
    backend whose build is a check): pytest counts them "passed" and exits 0, but they say nothing
    about the engine. One that built or ran an engine (on ``emulate``: an ONNX graph) says so."""
    unchecked = [r for r in results if checked_nothing(r)]
    if not unchecked:
        return []
    ids = ", ".join(str(r.get("nodeid")) + (" (built/ran, compared nothing)" if built_only(r) else "")
                    for r in unchecked[:shown])
    more = f" and {len(unchecked) - shown} more (see --trt-report / --trt-html)" if len(unchecked) > shown else ""
    return [f"trt tests: {len(unchecked)} trt test(s) passed without checking anything: {ids}{more}",
            "  (no trt.check(), assert_precision, check_parser, locate or suggest, and no engine built by a real "
            "TensorRT builder: call a check; --trt-require-run fails such tests)"]


def caught_in_test_lines(results, *, shown: int = 10) -> list[str]:
    """trt tests that did not fail although a check of theirs failed (:func:`~pytest_trt.report.outcomes.caught_in_test`):
    the test caught the failure itself, and passed, skipped (``pytest.skip()`` in the ``except``) or
    xpassed (a non-strict xfail). ``pytest.raises(AccuracyError)`` is a legitimate negative control,
    a ``try``/``except`` that swallows it is not; none of them fails the run, so the ids are listed,
    one line per outcome (a skipped one with its reason: it tested, and its check failed)."""
    caught = [r for r in results if caught_in_test(r)]
    if not caught:
        return []
    lines = []
    for outcome, verdict in CAUGHT_VERDICTS.items():
        these = [r for r in caught if r.get("outcome") == outcome]
        if not these:
            continue
        ids = ", ".join(str(r.get("nodeid")) + (f" ({str(r.get('message')).removeprefix('Skipped: ')})"
                                                 if outcome == "skipped" and r.get("message") else "") for r in these[:shown])
        more = f" and {len(these) - shown} more (see --trt-report / --trt-html)" if len(these) > shown else ""
        lines.append(f"trt tests: {len(these)} trt test(s) {verdict}: {ids}{more}")
    return lines + ["  (their failures are counted as caught, not as failures; with pytest.raises(AccuracyError) that is "
                    "a negative control, otherwise check the test does not swallow a real failure)"]


def _skipped_untested(skipped: list, results) -> list:
    """``session.skipped`` without the tests that skipped after a failed check (listed as caught: they tested)."""
    tested = {r.get("nodeid") for r in results if r.get("outcome") == "skipped" and caught_in_test(r)}
    return [s for s in skipped if s[0] not in tested]


def write_terminal_summary(tr, session, results) -> None:
    """The ``pytest-trt`` section at the end of the run (controller only).

    Engines built and reused, then one row per output of every accuracy check, worst
    first (failing outputs, then by how close to the tolerance), then precision checks;
    last, what failed the session although its tests did not (``session.session_failures``:
    a session pattern that matched nothing, a report that could not be written).
    """
    written = _write_results(tr, session, results)
    failures = list(getattr(session, "session_failures", None) or ())
    if failures and not written:
        tr.section("pytest-trt", sep="=")
    for line in failures:
        tr.write_line(line, red=True)


def _write_results(tr, session, results) -> bool:
    """The section's figures; False when there was nothing to show (no trt test)."""
    trt_tests = getattr(session, "trt_tests", ())
    if not results and not trt_tests:
        return False
    tr.section("pytest-trt", sep="=")
    skipped = _skipped_untested(getattr(session, "skipped", []), results)
    after_check = sum(1 for r in results if r.get("outcome") == "skipped" and caught_in_test(r))
    tr.write_line(skipped_line(len(trt_tests), skipped, after_check=after_check), yellow=bool(skipped or after_check))
    for line in untested_controls_lines(results) + unchecked_lines(results) + caught_in_test_lines(results):
        tr.write_line(line, yellow=True)
    tr.write_line(backend_line(session))
    if not results:
        return True
    tr.write_line(engines_line(engine_counts(results)))
    cache = cache_line(session)
    if cache:
        tr.write_line(cache)
    _write_accuracy_lines(tr, accuracy_rows(results))
    _write_precision_lines(tr, precision_rows(results))
    _write_parser_lines(tr, parser_rows(results))
    _write_ledger_lines(tr, ledger_rows(results))
    for line in fallback_lines(results):
        tr.write_line(line, yellow=True)
    _write_history_lines(tr, session)
    s = session.settings
    wanted = [str(p) for p in (s.report_json, s.report_html) if p]
    if wanted:
        tr.write_line("reports: " + ", ".join(wanted))
    return True


def _write_history_lines(tr, session) -> None:
    """Saved runs: the drift against the stored run (table worst first, cause, precision changes) and
    where this run was saved. The gate's failure line comes last with the session's failures."""
    history = getattr(session, "history", None)
    if history is None:
        return
    skipped = history.skipped_line() if hasattr(history, "skipped_line") else None
    if skipped:
        tr.write_line(skipped, yellow=True)
    if history.drift is not None:
        from ..history.text import drift_lines  # load path: imported once in use

        for line in drift_lines(history.drift, failure=False):
            regressed, improved = line.lstrip().startswith("REGRESSED"), line.lstrip().startswith("improved")
            tr.write_line(line, red=regressed, green=improved)
    if history.run_id and history.saved:
        tr.write_line(f"run saved: {history.run_id} in {history.store.shown}")


def _write_ledger_lines(tr, rows: list[dict]) -> None:
    """Each ledger in a few lines: where the time went (top units, with their precision) or, without
    time, why not and the rows whose precision is in question (:mod:`pytest_trt.ledger.render`)."""
    for row in rows:
        lines = ledger_summary_lines(row["ledger"], top=LEDGER_ROWS * (3 if _verbose(tr) > 0 else 1))
        tr.write_line(f"{row['test']}: {lines[0]}")
        for line in lines[1:]:
            tr.write_line(line, yellow=line.lstrip().startswith("COLLAPSED"))


def _verbose(tr) -> int:
    return getattr(getattr(getattr(tr, "config", None), "option", None), "verbose", 0) or 0


def _write_accuracy_lines(tr, all_rows: list[dict]) -> None:
    """The accuracy headline and table: the worst check per test and output, worst first."""
    rows = worst_per_test_output(all_rows)
    if not rows:
        return
    failed = sum(1 for r in rows if not r["passed"])
    tests = len({r["test"] for r in rows})
    n_checks = sum(r.get("examples", 1) for r in all_rows)
    repeated = f" ({n_checks} checks, the worst per test and output shown)" if n_checks > len(rows) else ""
    as_expected = _caught_text(rows)
    # no_check with both tolerances given is judged by them (counted as in or outside tolerance, once)
    unjudged = sum(1 for r in rows if r.get("no_check") and not _judged(r))
    no_check = f", {unjudged} without a tolerance verdict (no_check)" if unjudged else ""
    tr.write_line(f"accuracy: {len(rows)} output(s) in {tests} test(s){repeated}, {failed} outside tolerance"
                  f"{as_expected}{no_check}; worst first (x tol > 1 fails)")
    shown = rows if _verbose(tr) > 0 else rows[:TERMINAL_ROWS]
    width = getattr(getattr(tr, "_tw", None), "fullwidth", 120) or 120
    lines = table_lines(shown, width)
    tr.write_line(lines[0], bold=True)
    for r, text in zip(shown, lines[1:], strict=True):
        if r["passed"] or caught(r):
            tr.write_line(text)
        else:
            tr.write_line(text, red=True)
    if len(rows) > len(shown):
        tr.write_line(f"... {len(rows) - len(shown)} more row(s): run with -v, or see --trt-report / --trt-html")


def _write_precision_lines(tr, prec: list[dict]) -> None:
    """Precision checks: verdicts, constrained nodes by status and evidence, every real failure."""
    if not prec:
        return
    failed_p = sum(1 for p in prec if not p["passed"] and not caught(p))
    expected_p = sum(1 for p in prec if caught(p))
    as_expected = _caught_text(prec, more=" more")
    own = [p for p in prec if not caught(p)]
    controls = [p for p in prec if caught(p)]
    tr.write_line(f"precision checks: {len(prec) - failed_p - expected_p} passed, {failed_p} failed{as_expected}; "
                  f"{_constrained_text(own)}{_caught_nodes_text(controls)}", red=bool(failed_p))
    for p in prec:
        if not p["passed"] and not caught(p):
            bad = [n for n in p["constrained"] if n["status"] not in GOOD_STATUSES | NEUTRAL_STATUSES]
            what = ", ".join(f"{node_label(n)} ({_seen(n)})" for n in bad[:3])
            more = f" +{len(bad) - 3} more" if len(bad) > 3 else ""
            tr.write_line(f"  FAIL {p['test']}: {p['pattern']} -> {p['precision']}: {what}{more}", red=True)


def _caught_text(rows: list[dict], more: str = "") -> str:
    """`` (2 by negative controls, as expected: xfail; 1 caught inside a passing test)``: the failures of
    ``rows`` counted apart (``caught``), those of xfail controls and those a passing test caught itself."""
    by_test = sum(1 for r in rows if caught_by_test(r))
    controls = sum(1 for r in rows if caught(r)) - by_test
    where = ("a passing test" if all(r.get("outcome") == "passed" for r in rows if caught_by_test(r))
             else "a test that did not fail (passed, skipped or xpassed)")
    parts = ([f"{controls}{more} by negative controls, as expected: xfail"] if controls else []) + (
        [f"{by_test}{more if not controls else ''} caught inside {where}"] if by_test else [])
    return f" ({'; '.join(parts)})" if parts else ""


def _caught_nodes_text(controls: list[dict]) -> str:
    """The constrained nodes of the precision checks negative controls caught, counted apart from the
    others (as the JSON's ``*_caught`` counts are), so that a green run shows no ``fail``."""
    if not controls:
        return ""
    if any(caught_by_test(p) for p in controls):
        return f"; in failures caught (negative controls, or inside a passing test): {_status_counts(controls)}"
    return f"; in negative controls (caught, as expected): {_status_counts(controls)}"


def _status_counts(prec: list[dict]) -> str:
    """``9 pass, 1 unverifiable``: constrained nodes by status over ``prec``."""
    totals: dict[str, int] = {}
    for p in prec:
        for status, n in p["counts"].items():
            totals[status] = totals.get(status, 0) + n
    return ", ".join(f"{n} {s}" for s, n in sorted(totals.items())) or "none"


def _constrained_text(prec: list[dict]) -> str:
    """``constrained nodes: 9 pass, 1 unverifiable; evidence: 5 observed, ...`` over the precision checks
    given (the terminal summary gives those of no caught negative control)."""
    if not prec:
        return "constrained nodes: none outside negative controls"
    evidence = dict.fromkeys(EVIDENCE, 0)
    for p in prec:
        for key, n in p["evidence"].items():
            evidence[key] += n
    nodes = _status_counts(prec)
    how = ", ".join(f"{n} {key}" for key, n in evidence.items() if n) or "none"
    emulated = " (emulated: derived from the plan's realization)" if all(p["emulated"] for p in prec) else ""
    return f"constrained nodes: {nodes}; evidence: {how}{emulated}"


def _seen(node: dict) -> str:
    """What a failing node row shows: ``fp16``, ``unverifiable``, ``unverifiable, fp32 inferred``."""
    seen = node.get("observed") or "?"
    if node.get("evidence") == INFERRED:
        seen = f"{seen} inferred"
    if node.get("status") == "unverifiable":
        return "unverifiable" + (f", {seen}" if node.get("observed") else "")
    return seen


def _write_parser_lines(tr, rows: list[dict]) -> None:
    """Parser checks: how many plans, failures by node, and every promotion (counted, never failed)."""
    if not rows:
        return
    failed = [r for r in rows if not r.get("passed") and not caught(r)]
    expected = sum(1 for r in rows if caught(r))
    promotions = parser_promotions(rows)
    libraries = ", ".join(unique(r.get("library") for r in rows))
    plans = len({(r.get("model"), r.get("policy")) for r in rows})
    as_expected = f" ({expected} more by negative controls, as expected: xfail)" if expected else ""
    tr.write_line(f"parser check ({libraries}, observed in the parsed network): {len(rows)} check(s) of {plans} "
                  f"plan(s), {len(rows) - len(failed) - expected} passed, {len(failed)} failed{as_expected}; "
                  f"{len(promotions)} node(s) computed in higher precision than planned (reported, never failed)",
                  red=bool(failed))
    for r in failed:
        bad = r.get("failures") or []
        what = ", ".join(f"{node_label(f)} (planned {f['planned']}, parsed {f['parsed']})" for f in bad[:3])
        more = f" +{len(bad) - 3} more" if len(bad) > 3 else ""
        why = what + more if bad else (r.get("error") or "").splitlines()[0][:200]
        tr.write_line(f"  FAIL {r['test']}: {r.get('model')} [{r.get('policy')}]: {why}", red=True)
    shown = promotions if _verbose(tr) > 0 else promotions[:TERMINAL_ROWS]
    for p in shown:
        tr.write_line(f"  higher {p['model']} [{p['policy']}]: {node_label(p)} ({p.get('op_type')}): planned "
                      f"{p['planned']}, parsed {p['parsed']}: TensorRT computes this in higher precision than planned")
    if len(promotions) > len(shown):
        tr.write_line(f"  ... {len(promotions) - len(shown)} more promotion(s): run with -v, or see --trt-report")


__all__ = [
    # the terminal summary
    "TERMINAL_ROWS", "backend_line", "cache_line", "engines_line", "fallback_lines", "skipped_line", "table_lines",
    "unchecked_lines", "untested_controls_lines", "write_terminal_summary",
    # re-exported from report.rows, report.condense and report.junit (their home before)
    "BAD_STATUSES", "EVIDENCE", "GOOD_STATUSES", "NEUTRAL_STATUSES", "accuracy_rows", "baseline_fallbacks",
    "caught", "condense_records", "engine_counts", "engine_text", "evidence_counts", "junit_properties",
    "metric_ratios", "network_scopes", "parser_promotions", "parser_rows", "precision_nodes", "precision_passed",
    "precision_rows", "records_of", "scope_of", "tolerance_bound", "tolerance_ratio", "unique",
    "worst_per_test_output",
]
