"""Figures of a session's results, shared by every report, and the terminal summary.

``results`` is what the plugin's ``ResultsCollector`` gathered on the controller: one
``{"nodeid", "outcome", "records": [...]}`` per test that used pytest-trt, the records
being the dicts :class:`~pytest_trt.case.TrtCase` appended (kinds ``engine``,
``accuracy``, ``precision``, ``layerwise``, ``parser``, ``baseline_fallback``; see :mod:`pytest_trt.report.json_report`).

The functions here turn records into rows (terminal table, HTML table, JUnit
properties) so the three views can never disagree.
"""

from __future__ import annotations

import fnmatch
import json
import math
from typing import Any

from .plots import as_float

#: rows of the terminal table without -v (all rows with -v, and always in --trt-report)
TERMINAL_ROWS = 30


# --------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------
def records_of(results, kind: str):
    """``(result, record)`` for every record of ``kind``, in test order."""
    for res in results:
        for rec in res.get("records") or ():
            if rec.get("kind") == kind:
                yield res, rec


def _check_badness(rec: dict) -> tuple:
    """Sort key of accuracy records: failing first, then the largest tolerance ratio."""
    result = rec.get("result") or {}
    ratios = [tolerance_ratio(out) for out in (result.get("outputs") or {}).values()]
    worst = max([r for r in ratios if r is not None], default=-1.0)
    return (bool(result.get("passed")), -worst)


def condense_records(records: list[dict]) -> list[dict]:
    """One record per repeated check: the worst example, with ``examples`` = how many there were.

    A Hypothesis property or a loop over input sets checks the same model and policy many
    times (a failing property with 10 examples recorded 112 checks). Accuracy records are
    grouped by (model, backend, policy, baseline) and the worst kept (failing first, then
    by :func:`tolerance_ratio`); precision records by (pattern, precision, verdict), the
    first kept; layerwise records by (model, backend, policy), the last kept (Hypothesis
    replays the shrunk example last); engine records by cache key. Order of first
    appearance is kept. ``--trt-report-all-records`` keeps every record instead.
    """
    groups: dict[tuple, dict] = {}
    order: list[tuple] = []
    for rec in records:
        kind = rec.get("kind")
        if kind == "accuracy":
            key = (kind, rec.get("model"), rec.get("backend"), rec.get("policy"), rec.get("baseline", "fp32"))
        elif kind == "precision":
            key = (kind, rec.get("pattern"), rec.get("precision"), rec.get("passed"))
        elif kind == "layerwise":
            key = (kind, rec.get("model"), rec.get("backend"), rec.get("policy"))
        elif kind == "engine":
            key = (kind, rec.get("key") or (rec.get("model"), rec.get("policy"), rec.get("backend")))
        elif kind == "baseline_fallback":
            key = (kind, rec.get("model"), json.dumps(rec.get("nodes")))
        else:
            key = (kind, len(order))
        if key not in groups:
            groups[key] = {"keep": rec, "n": 0}
            order.append(key)
        group = groups[key]
        group["n"] += int(rec.get("examples") or 1)
        if kind == "accuracy" and _check_badness(rec) < _check_badness(group["keep"]):
            group["keep"] = rec
        elif kind == "layerwise":
            group["keep"] = rec
        elif kind == "engine" and not rec.get("cache_hit"):
            group["keep"] = rec  # a build in this test wins over its later in-process reuses
    out = []
    for key in order:
        rec, n = groups[key]["keep"], groups[key]["n"]
        out.append({**rec, "examples": n} if n > 1 or "examples" in rec else rec)
    return out


def engine_counts(results) -> dict[str, Any]:
    """Engines by content key: ``built`` (built in this session at least once), ``reused`` (only ever
    loaded from the cache or reused in process), ``uses`` (engine records), ``build_seconds`` (sum)."""
    built: dict[str, float] = {}
    hit: set[str] = set()
    uses = 0
    for _, rec in records_of(results, "engine"):
        uses += int(rec.get("examples") or 1)
        key = rec.get("key") or f"{rec.get('model')}|{rec.get('policy')}|{rec.get('backend')}"
        if rec.get("cache_hit"):
            hit.add(key)
        else:
            built[key] = built.get(key, 0.0) + float(rec.get("build_seconds") or 0.0)
    return {"built": len(built), "reused": len(hit - set(built)), "uses": uses,
            "build_seconds": round(sum(built.values()), 4)}


def baseline_fallbacks(results) -> list[dict[str, Any]]:
    """CUDA baselines whose float nodes ran on ONNX Runtime's CPU provider, one entry per model and
    node list: ``{"model", "provider", "nodes": [[name, op_type]], "tests": [nodeid, ...]}``
    (records of kind ``baseline_fallback``, :func:`pytest_trt.baseline.warn_placement`)."""
    out: dict[tuple, dict[str, Any]] = {}
    for res, rec in records_of(results, "baseline_fallback"):
        key = (rec.get("model"), json.dumps(rec.get("nodes")))
        entry = out.setdefault(key, {"model": rec.get("model"), "provider": rec.get("provider", "cuda"),
                                     "nodes": [list(n) for n in rec.get("nodes") or ()], "tests": []})
        if res.get("nodeid") not in entry["tests"]:
            entry["tests"].append(res.get("nodeid"))
    return list(out.values())


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


def tolerance_ratio(out: dict) -> float | None:
    """How far one output is from its tolerance: > 1 fails, <= 1 passes; None when unknown.

    The largest of the checks that applied to the output:

    * the element rule (compare.py: an element fails iff its error exceeds atol AND
      rtol*|expected|): for mismatched elements ``min(needed_atol / atol, needed_rtol / rtol)``,
      the factor by which one of the two tolerances would have to grow for the output to
      pass; otherwise ``min(max_abs / atol, max_rel / rtol)``, an upper bound of how much of
      the tolerance the worst element uses (0.1 = a decade of headroom);
    * the cosine floor, where one applied (``min_cosine`` recorded: the precision's default
      or an explicit one): ``(1 - cosine) / (1 - min_cosine)``;
    * the SNR floor (``min_snr_db``): ``10 ** ((min_snr_db - snr_db) / 10)``, the noise power
      over the noise power the floor allows.

    A passing output is capped at 1, a failing one is at least 1. NaN/Inf mismatches and
    structural problems (missing output, shape) are ``inf``. None for a passing output
    compared without details (its figures were not computed).
    """
    if out.get("problem") or out.get("unfixable"):
        return math.inf
    if out.get("kind") in ("int", "bool"):
        return math.inf if out.get("mismatched") else 0.0
    atol, rtol = as_float(out.get("atol")), as_float(out.get("rtol"))

    def ratio(err, tol):
        if err is None or tol is None or math.isnan(err):
            return None
        if err == 0:
            return 0.0
        return math.inf if tol == 0 else err / tol

    def smallest(parts):
        parts = [p for p in parts if p is not None]
        return min(parts) if parts else None

    element = None
    if not out.get("passed") and out.get("mismatched") != 0:
        element = smallest([ratio(as_float(out.get("needed_atol")), atol),
                            ratio(as_float(out.get("needed_rtol")), rtol)])
    if element is None:  # no mismatch, or not detailed: bound from the worst errors instead
        element = smallest([ratio(as_float(out.get("max_abs")), atol), ratio(as_float(out.get("max_rel")), rtol)])
        if element is not None and out.get("mismatched") == 0:
            element = min(1.0, element)  # every element passed (the two maxima may be different elements)
    parts = [element, *metric_ratios(out)]
    parts = [p for p in parts if p is not None]
    if out.get("passed"):
        return min(1.0, max(parts)) if parts else None
    return max(1.0, max(parts)) if parts else math.inf


def metric_ratios(out: dict) -> list[float]:
    """The cosine and SNR floors' parts of :func:`tolerance_ratio` (> 1: that floor fails)."""
    parts = []
    cosine, min_cosine = as_float(out.get("cosine")), as_float(out.get("min_cosine"))
    if cosine is not None and min_cosine is not None and not math.isnan(cosine):
        gap, allowed = max(0.0, 1.0 - cosine), 1.0 - min_cosine
        parts.append(gap / allowed if allowed > 0 else (math.inf if gap > 0 else 0.0))
    snr, min_snr = as_float(out.get("snr_db")), as_float(out.get("min_snr_db"))
    if snr is not None and min_snr is not None and not math.isnan(snr):
        parts.append(0.0 if snr == math.inf else math.inf if snr == -math.inf
                     else 10.0 ** min(300.0, (min_snr - snr) / 10.0))
    return parts


def _engine_for(res: dict, rec: dict) -> dict | None:
    engines = [r for r in res.get("records") or () if r.get("kind") == "engine"]
    for eng in engines:
        if (eng.get("model"), eng.get("policy"), eng.get("backend")) == (rec.get("model"), rec.get("policy"),
                                                                          rec.get("backend")):
            return eng
    return engines[0] if engines else None


def engine_text(engine: dict | None) -> str:
    if not engine:
        return "-"
    if engine.get("cache_hit"):
        return "cache hit"
    return f"built {float(engine.get('build_seconds') or 0.0):.2f}s"


def accuracy_rows(results) -> list[dict[str, Any]]:
    """One row per output of every accuracy check, worst first: failing outputs before passing
    ones, then by :func:`tolerance_ratio` (largest first)."""
    rows = []
    for index, (res, rec) in enumerate(records_of(results, "accuracy")):
        engine = _engine_for(res, rec)
        result = rec.get("result") or {}
        figures = rec.get("figures") or {}
        for name, out in (result.get("outputs") or {}).items():
            rows.append({
                "test": res["nodeid"], "outcome": res.get("outcome"), "check": index,
                "model": rec.get("model"), "backend": rec.get("backend"), "policy": rec.get("policy"),
                "precision": result.get("precision"), "seed": rec.get("seed"), "baseline": rec.get("baseline", "fp32"),
                "output": name, "examples": int(rec.get("examples") or 1),
                "expected_failure": res.get("expected_failure"),
                "passed": bool(out.get("passed")), "problem": out.get("problem_detail") or out.get("problem"),
                "max_abs": as_float(out.get("max_abs")), "max_rel": as_float(out.get("max_rel")),
                "atol": as_float(out.get("atol")), "rtol": as_float(out.get("rtol")),
                "mismatched": out.get("mismatched"), "total": out.get("total"),
                "ratio": tolerance_ratio(out), "engine": engine_text(engine),
                "cache_hit": None if engine is None else bool(engine.get("cache_hit")),
                "build_seconds": None if engine is None else engine.get("build_seconds"),
                "figures": figures.get(name), "comparison": out,
            })
    # real failures first, then negative controls that failed as expected, then passing outputs
    rows.sort(key=lambda r: (r["passed"], caught(r), -(r["ratio"] if r["ratio"] is not None else -1.0), r["test"],
                             r["output"]))
    return rows


def worst_per_test_output(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (test, output): its worst check, with ``checks`` = how many there were.

    A Hypothesis test or a loop over input sets checks the same output many times; the
    terminal shows its worst case (the JSON and HTML reports keep every check).
    """
    best: dict[tuple, dict] = {}
    counts: dict[tuple, int] = {}
    for row in rows:  # rows are sorted worst first, so the first seen is the worst
        key = (row["test"], row["output"])
        counts[key] = counts.get(key, 0) + int(row.get("examples") or 1)
        best.setdefault(key, row)
    return [{**row, "checks": counts[key]} for key, row in best.items()]


def _pattern_matches(pattern: str, node: dict) -> bool:
    if pattern.startswith("op:"):
        return node.get("op_type") == pattern[3:]
    return fnmatch.fnmatchcase(str(node.get("node") or node.get("name") or ""), pattern)


def _node_entries(report) -> list[dict]:
    if not isinstance(report, dict):
        return []
    nodes = report.get("nodes")
    if isinstance(nodes, dict):
        nodes = [{"node": k, **v} if isinstance(v, dict) else {"node": k} for k, v in nodes.items()]
    return [n for n in nodes or () if isinstance(n, dict)]


#: node statuses of both report shapes: verify.PrecisionCheck (pass/fail/unverifiable/not_applicable)
#: and layers.LayerReport (ok/mismatch/unverifiable/fixed)
GOOD_STATUSES = frozenset({"pass", "ok"})
BAD_STATUSES = frozenset({"fail", "mismatch"})
NEUTRAL_STATUSES = frozenset({"not_applicable", "fixed"})


def precision_nodes(rec: dict) -> tuple[list[dict], list[dict]]:
    """``(constrained, all)`` node observations of a ``precision`` record, in plan (topological) order.

    The record's ``report`` is a ``PrecisionCheck.to_json()`` (verify.py: its ``nodes``
    are exactly the nodes the pattern matched, resolved by the plan) or a
    ``LayerReport.to_json()`` (every node; then the constrained ones are the report's
    ``matched`` names when listed, else the pattern applied as the policy does: glob over
    names, ``op:TYPE``). Each entry has ``node, op_type, planned, observed, status,
    myelin, myelin_region, layer, detail, cause``.
    """
    report = rec.get("report")
    everything = []
    for n in _node_entries(report):
        everything.append({
            "node": n.get("node") or n.get("name"), "op_type": n.get("op_type"), "planned": n.get("planned"),
            "observed": n.get("observed"), "status": n.get("status"), "myelin": bool(n.get("myelin")),
            "myelin_region": n.get("myelin_region"), "layer": n.get("layer"), "detail": n.get("detail") or "",
            "cause": n.get("cause"), "evidence": n.get("evidence"),
        })
    if isinstance(report, dict) and report.get("kind") == "precision_check":
        return everything, everything
    matched = report.get("matched") if isinstance(report, dict) else None
    if isinstance(matched, list) and matched:
        wanted = set(matched)
        constrained = [n for n in everything if n["node"] in wanted]
    else:
        pattern = str(rec.get("pattern") or "*")
        constrained = [n for n in everything if _pattern_matches(pattern, n)]
    return constrained, everything


def scope_of(node_name: str) -> str:
    """A node's scope: its name up to the last ``/`` (``/encoder/layer.0/attention/Softmax`` ->
    ``/encoder/layer.0/attention``); names without one are their own op-less scope ``(top)``."""
    name = str(node_name or "")
    return name.rsplit("/", 1)[0] or "/" if "/" in name else "(top)"


def network_scopes(decisions) -> list[dict]:
    """Plan decisions (``NodeDecision``: name, op_type, precision) grouped by scope in graph order.

    ``planned`` counts nodes per planned precision (``fixed`` for nodes the plan does not
    rewrite: shapes, indices). A few hundred scopes at most for a transformer export, so
    the record stays small while the HTML can draw the whole network."""
    scopes: dict[str, dict] = {}
    for d in decisions:
        scope = scopes.setdefault(scope_of(d.name), {"scope": scope_of(d.name), "nodes": 0, "planned": {}})
        scope["nodes"] += 1
        key = d.precision or "fixed"
        scope["planned"][key] = scope["planned"].get(key, 0) + 1
    return list(scopes.values())


def precision_passed(rec: dict, constrained: list[dict]) -> bool:
    """A record's verdict: its own ``passed`` when present (TrtCase records failures with
    ``passed: false``); a record without one was appended after the check returned."""
    if "passed" in rec:
        return bool(rec["passed"])
    report = rec.get("report")
    if isinstance(report, dict) and "passed" in report:
        return bool(report["passed"])
    return True


#: How a node's precision is known (layers.EVIDENCE); fixed nodes have none.
EVIDENCE = ("observed", "inferred", "unverifiable", "emulated")


def evidence_counts(nodes: list[dict]) -> dict[str, int]:
    """``{"observed", "inferred", "unverifiable", "emulated"}`` over the compute nodes of a record
    (a record written before evidence was reported counts its nodes as unverifiable: nothing says how)."""
    out = dict.fromkeys(EVIDENCE, 0)
    for n in nodes:
        if n.get("status") in NEUTRAL_STATUSES:
            continue
        ev = n.get("evidence")
        out[ev if ev in out else "unverifiable"] += 1
    return out


def precision_rows(results) -> list[dict[str, Any]]:
    """One row per ``precision`` record: pattern, asked precision, verdict, status counts, nodes."""
    rows = []
    for res, rec in records_of(results, "precision"):
        constrained, everything = precision_nodes(rec)
        report = rec.get("report") if isinstance(rec.get("report"), dict) else {}
        counts: dict[str, int] = {}
        for n in constrained:
            counts[n["status"] or "?"] = counts.get(n["status"] or "?", 0) + 1
        rows.append({
            "evidence": evidence_counts(constrained),
            "test": res["nodeid"], "outcome": res.get("outcome"), "expected_failure": res.get("expected_failure"),
            "pattern": rec.get("pattern"),
            "precision": rec.get("precision"), "passed": precision_passed(rec, constrained),
            "source": report.get("source"), "typing": report.get("typing"), "backend": report.get("backend"),
            "emulated": bool(report.get("emulated")) or report.get("source") == "emulation",
            "counts": counts, "constrained": constrained, "nodes": everything,
            "notes": list(report.get("notes") or ()), "network": list(rec.get("network") or ()),
            "examples": int(rec.get("examples") or 1),
        })
    return rows


def parser_rows(results) -> list[dict[str, Any]]:
    """One row per parser check (``--trt-parser-check`` / ``trt.check_parser()``), in test order."""
    rows = []
    for res, rec in records_of(results, "parser"):
        rows.append({"test": res["nodeid"], **{k: v for k, v in rec.items() if k != "kind"}})
    return rows


def parser_promotions(rows: list[dict]) -> list[dict[str, Any]]:
    """Promotions (planned FP16/BF16, parsed FP32), once per model, policy and node."""
    seen, out = set(), []
    for r in rows:
        for p in r.get("promotions") or ():
            key = (r.get("model"), r.get("policy"), p.get("node"))
            if key not in seen:
                seen.add(key)
                out.append({"model": r.get("model"), "policy": r.get("policy"), "library": r.get("library"), **p})
    return out


# --------------------------------------------------------------------------------------
# JUnit XML properties
# --------------------------------------------------------------------------------------
def junit_properties(records: list[dict]) -> list[tuple[str, str]]:
    """Flat per-test properties for JUnit XML (``<property name=... value=...>``), one value each.

    Aggregated over the test's records, so a test with several checks still gets one
    row per name in a CI test reporter: the worst output decides ``trt_max_*_error``,
    ``trt_atol``/``trt_rtol`` (the tolerances that output was judged with) and
    ``trt_worst_output``; engines are summed. Names (all optional):

    ``trt_backend, trt_precision, trt_passed, trt_failed_outputs, trt_worst_output,
    trt_max_abs_error, trt_max_rel_error, trt_atol, trt_rtol, trt_tolerance_ratio,
    trt_seed, trt_engines, trt_cache_hit, trt_build_seconds, trt_precision_checks``
    """
    res = {"nodeid": "", "records": records}
    props: list[tuple[str, str]] = []
    engines = [r for r in records if r.get("kind") == "engine"]
    checks = [r for r in records if r.get("kind") == "accuracy"]
    backends = _unique([r.get("backend") for r in checks + engines])
    policies = _unique([r.get("policy") for r in checks + engines])
    if backends:
        props.append(("trt_backend", ", ".join(backends)))
    if policies:
        props.append(("trt_precision", " | ".join(policies)))
    if checks:
        rows = accuracy_rows([res])
        props.append(("trt_passed", str(all((c.get("result") or {}).get("passed") for c in checks)).lower()))
        failed = _unique([r["output"] for r in rows if not r["passed"]])
        if failed:
            props.append(("trt_failed_outputs", ", ".join(failed)))
        if rows:
            worst = rows[0]
            props.append(("trt_worst_output", worst["output"]))
            known_abs = [r["max_abs"] for r in rows if r["max_abs"] is not None]
            known_rel = [r["max_rel"] for r in rows if r["max_rel"] is not None]
            if known_abs:
                props.append(("trt_max_abs_error", _g(max(known_abs))))
            if known_rel:
                props.append(("trt_max_rel_error", _g(max(known_rel))))
            if worst["atol"] is not None:
                props.append(("trt_atol", _g(worst["atol"])))
            if worst["rtol"] is not None:
                props.append(("trt_rtol", _g(worst["rtol"])))
            if worst["ratio"] is not None:
                props.append(("trt_tolerance_ratio", _g(worst["ratio"])))
        seeds = _unique([str(c.get("seed")) for c in checks if c.get("seed") is not None])
        if seeds:
            props.append(("trt_seed", ", ".join(seeds)))
    if engines:
        props.append(("trt_engines", str(len(engines))))
        props.append(("trt_cache_hit", str(all(bool(e.get("cache_hit")) for e in engines)).lower()))
        seconds = sum(float(e.get("build_seconds") or 0.0) for e in engines if not e.get("cache_hit"))
        props.append(("trt_build_seconds", f"{seconds:.3f}"))
    prec = precision_rows([res])
    if prec:
        failed_p = sum(1 for p in prec if not p["passed"])
        props.append(("trt_precision_checks", f"{len(prec) - failed_p} passed, {failed_p} failed"))
    return props


def _unique(values) -> list:
    seen = []
    for v in values:
        if v is not None and v not in seen:
            seen.append(v)
    return seen


def _g(x: float) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


# --------------------------------------------------------------------------------------
# Terminal summary
# --------------------------------------------------------------------------------------
def fmt_err(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf"
    return f"{x:.2e}"


def fmt_tol(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}"


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
    name = session.backend.name
    note = " (CPU precision emulation on ONNX Runtime, not TensorRT)" if name == "emulate" else ""
    return f"backend {name}{note}"


def engines_line(counts: dict[str, Any]) -> str:
    return (f"engines: {counts['built']} built ({counts['build_seconds']:.2f}s), {counts['reused']} reused from "
            f"the cache; {counts['uses']} use(s) by tests")


def caught(row: dict) -> bool:
    """A failing output (or precision check) of a negative control that failed as expected (xfail,
    pytest-trt's own verdict)."""
    return not row["passed"] and (row.get("expected_failure") or {}).get("verdict") == "caught"


def _status_word(row: dict) -> str:
    if row["passed"]:
        return "ok"
    return "xfail" if caught(row) else "FAIL"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def cache_line(session) -> str | None:
    """``cache entries: 3 local hit(s), 2 built (engines, baselines, emulation graphs); remote (rw): 2 hit(s),
    ...; ~31.0s of builds saved`` (None if unused).

    Counts every cache kind (engines, baselines, emulation graphs) of every xdist worker, so its
    figures differ from the ``engines:`` line, which counts engines only; the line says so.
    """
    stats_of = getattr(session, "cache_stats", None)
    if stats_of is None:
        return None
    stats = stats_of()
    remote = getattr(session, "_remote", None) or getattr(getattr(session, "_cache", None), "remote", None)
    if not (stats.local_hits or stats.builds or stats.remote_hits or remote is not None):
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
        ("max abs", lambda r: fmt_err(r["max_abs"]), ">"),
        ("atol", lambda r: fmt_tol(r["atol"]), ">"),
        ("max rel", lambda r: fmt_err(r["max_rel"]), ">"),
        ("rtol", lambda r: fmt_tol(r["rtol"]), ">"),
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


def skipped_line(total: int, skipped: list, *, reasons: int = 5) -> str:
    """How many trt tests were skipped and why: a skipped test tested nothing, and a run that
    skipped them all is green; this line is the first thing the summary says."""
    if not skipped:
        return f"trt tests: {total} ran, none skipped"
    by_reason: dict[str, int] = {}
    for _, reason in skipped:
        by_reason[reason] = by_reason.get(reason, 0) + 1
    ordered = sorted(by_reason.items(), key=lambda kv: -kv[1])
    why = "; ".join(f"{n} x {reason}" for reason, n in ordered[:reasons])
    if len(ordered) > reasons:
        why += f"; {len(ordered) - reasons} more reason(s) (-rs lists them)"
    return (f"trt tests: {len(skipped)} of {total} SKIPPED (tested nothing): {why}. "
            f"--trt-require-run makes a skipped trt test a failure")


def write_terminal_summary(tr, session, results) -> None:
    """The ``pytest-trt`` section at the end of the run (controller only).

    Engines built and reused, then one row per output of every accuracy check, worst
    first (failing outputs, then by how close to the tolerance), then precision checks.
    """
    trt_tests = getattr(session, "trt_tests", ())
    if not results and not trt_tests:
        return
    tr.section("pytest-trt", sep="=")
    skipped = getattr(session, "skipped", [])
    tr.write_line(skipped_line(len(trt_tests), skipped), yellow=bool(skipped))
    tr.write_line(backend_line(session))
    if not results:
        return
    tr.write_line(engines_line(engine_counts(results)))
    cache = cache_line(session)
    if cache:
        tr.write_line(cache)
    all_rows = accuracy_rows(results)
    rows = worst_per_test_output(all_rows)
    if rows:
        failed = sum(1 for r in rows if not r["passed"])
        expected = sum(1 for r in rows if caught(r))
        tests = len({r["test"] for r in rows})
        n_checks = sum(r.get("examples", 1) for r in all_rows)
        repeated = f" ({n_checks} checks, the worst per test and output shown)" if n_checks > len(rows) else ""
        as_expected = f" ({expected} by negative controls, as expected: xfail)" if expected else ""
        tr.write_line(f"accuracy: {len(rows)} output(s) in {tests} test(s){repeated}, {failed} outside tolerance"
                      f"{as_expected}; worst first (x tol > 1 fails)")
        verbose = getattr(getattr(tr, "config", None), "option", None)
        limit = None if verbose is not None and getattr(verbose, "verbose", 0) > 0 else TERMINAL_ROWS
        shown = rows if limit is None else rows[:limit]
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
    prec = precision_rows(results)
    if prec:
        failed_p = sum(1 for p in prec if not p["passed"] and not caught(p))
        expected_p = sum(1 for p in prec if not p["passed"] and caught(p))
        totals: dict[str, int] = {}
        for p in prec:
            for status, n in p["counts"].items():
                totals[status] = totals.get(status, 0) + n
        nodes = ", ".join(f"{n} {s}" for s, n in sorted(totals.items())) or "none"
        evidence = dict.fromkeys(EVIDENCE, 0)
        for p in prec:
            for key, n in p["evidence"].items():
                evidence[key] += n
        how = ", ".join(f"{n} {key}" for key, n in evidence.items() if n) or "none"
        emulated = " (emulated: derived from the plan's realization)" if all(p["emulated"] for p in prec) else ""
        as_expected = f" ({expected_p} more by negative controls, as expected: xfail)" if expected_p else ""
        tr.write_line(f"precision checks: {len(prec) - failed_p - expected_p} passed, {failed_p} failed{as_expected}; "
                      f"constrained nodes: {nodes}; evidence: {how}{emulated}", red=bool(failed_p))
        for p in prec:
            if not p["passed"] and not caught(p):
                bad = [n for n in p["constrained"] if n["status"] not in GOOD_STATUSES | NEUTRAL_STATUSES]
                what = ", ".join(f"{n['node']} ({_seen(n)})" for n in bad[:3])
                more = f" +{len(bad) - 3} more" if len(bad) > 3 else ""
                tr.write_line(f"  FAIL {p['test']}: {p['pattern']} -> {p['precision']}: {what}{more}", red=True)
    _write_parser_lines(tr, parser_rows(results))
    for line in fallback_lines(results):
        tr.write_line(line, yellow=True)
    s = session.settings
    wanted = [str(p) for p in (s.report_json, s.report_html) if p]
    if wanted:
        tr.write_line("reports: " + ", ".join(wanted))


def _seen(node: dict) -> str:
    """What a failing node row shows: ``fp16``, ``unverifiable``, ``unverifiable, fp32 inferred``."""
    seen = node.get("observed") or "?"
    if node.get("evidence") == "inferred":
        seen = f"{seen} inferred"
    if node.get("status") == "unverifiable":
        return "unverifiable" + (f", {seen}" if node.get("observed") else "")
    return seen

def _write_parser_lines(tr, rows: list[dict]) -> None:
    """Parser checks: how many plans, failures by node, and every promotion (counted, never failed)."""
    if not rows:
        return
    failed = [r for r in rows if not r.get("passed")]
    promotions = parser_promotions(rows)
    libraries = ", ".join(_unique(r.get("library") for r in rows))
    plans = len({(r.get("model"), r.get("policy")) for r in rows})
    tr.write_line(f"parser check ({libraries}, observed in the parsed network): {len(rows)} check(s) of {plans} "
                  f"plan(s), {len(rows) - len(failed)} passed, {len(failed)} failed; {len(promotions)} node(s) computed in "
                  f"higher precision than planned (reported, never failed)", red=bool(failed))
    for r in failed:
        bad = r.get("failures") or []
        what = ", ".join(f"{f['node']} (planned {f['planned']}, parsed {f['parsed']})" for f in bad[:3])
        more = f" +{len(bad) - 3} more" if len(bad) > 3 else ""
        why = what + more if bad else (r.get("error") or "").splitlines()[0][:200]
        tr.write_line(f"  FAIL {r['test']}: {r.get('model')} [{r.get('policy')}]: {why}", red=True)
    verbose = getattr(getattr(getattr(tr, "config", None), "option", None), "verbose", 0) or 0
    shown = promotions if verbose > 0 else promotions[:TERMINAL_ROWS]
    for p in shown:
        tr.write_line(f"  higher {p['model']} [{p['policy']}]: {p['node']} ({p.get('op_type')}): planned "
                      f"{p['planned']}, parsed {p['parsed']}: TensorRT computes this in higher precision than planned")
    if len(promotions) > len(shown):
        tr.write_line(f"  ... {len(promotions) - len(shown)} more promotion(s): run with -v, or see --trt-report")
