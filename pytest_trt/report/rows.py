"""Rows of a session's results, shared by every report, so the views can never disagree.

``results`` is what the plugin's ``ResultsCollector`` gathered on the controller: one
``{"nodeid", "outcome", "records": [...]}`` per trt test, the records being the typed
records of :mod:`pytest_trt.core.records` (a record's JSON form is read with
:func:`~pytest_trt.core.records.as_record`). The functions here turn them into rows: one
per output of every accuracy check, per precision check, per parser check, and the engine
and baseline-fallback figures; the terminal summary, the JUnit properties, the JSON and the
HTML report all read these rows.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from ..compare.criterion import Criterion
from ..core.evidence import EVIDENCE, UNVERIFIABLE
from ..core.formatting import as_float
from ..core.records import (
    AccuracyRecord,
    BaselineFallbackRecord,
    EngineRecord,
    LedgerRecord,
    ParserRecord,
    PrecisionRecord,
    Record,
    as_record,
)
from .outcomes import caught_outcome, precision_passed

R = TypeVar("R", bound=Record)


def result_records(res: dict) -> list[Record]:
    """The typed records of one test's result (JSON forms read with :func:`~.records.as_record`)."""
    return [as_record(rec) for rec in res.get("records") or ()]


def records_of(results: Iterable[dict], cls: type[R]) -> Iterator[tuple[dict, R]]:
    """``(result, record)`` for every record of type ``cls``, in test order."""
    for res in results:
        for rec in result_records(res):
            if isinstance(rec, cls):
                yield res, rec


def engine_counts(results: Iterable[dict]) -> dict[str, Any]:
    """Engines by content key: ``built`` (built in this session at least once), ``reused`` (only ever
    loaded from the cache: built by an earlier run), ``uses`` (engine records), ``session_reuses``
    (uses that were cache hits on an engine this session built: the rows' "cache hit" on a first
    run), ``build_seconds`` (sum)."""
    built: dict[str, float] = {}
    hit: set[str] = set()
    uses = 0
    records = []
    for _, rec in records_of(results, EngineRecord):
        uses += rec.count
        key = rec.key or f"{rec.model}|{rec.policy}|{rec.backend}"
        records.append((key, rec))
        if rec.cache_hit:
            hit.add(key)
        else:
            built[key] = built.get(key, 0.0) + float(rec.build_seconds or 0.0)
    # a condensed record that built its engine counts the build once; its other uses were reuses
    session_reuses = sum(rec.count - (0 if rec.cache_hit else 1) for key, rec in records if key in built)
    return {"built": len(built), "reused": len(hit - set(built)), "uses": uses, "session_reuses": session_reuses,
            "build_seconds": round(sum(built.values()), 4)}


def baseline_fallbacks(results: Iterable[dict]) -> list[dict[str, Any]]:
    """CUDA baselines whose float nodes ran on ONNX Runtime's CPU provider, one entry per model and
    node list: ``{"model", "provider", "nodes": [[name, op_type]], "tests": [nodeid, ...]}``
    (records of kind ``baseline_fallback``, :func:`pytest_trt.reference.baseline.warn_placement`)."""
    out: dict[tuple, dict[str, Any]] = {}
    for res, rec in records_of(results, BaselineFallbackRecord):
        key = (rec.model, json.dumps(rec.nodes))
        entry = out.setdefault(key, {"model": rec.model, "provider": rec.provider,
                                     "nodes": [list(n) for n in rec.nodes or ()], "tests": []})
        if res.get("nodeid") not in entry["tests"]:
            entry["tests"].append(res.get("nodeid"))
    return list(out.values())


#: what :func:`tolerance_bound` names as binding (the bound whose ratio is the largest), and how
#: the terminal and HTML reports word it
BINDINGS = {"element": "element", "cosine": "cosine", "snr": "SNR", "nan_inf": "NaN/Inf", "structure": "structure"}


def binding_text(binding: str | None) -> str:
    """A binding as the reports word it (``-`` when unknown)."""
    return BINDINGS.get(binding or "", "-")


def tolerance_ratio(out: dict) -> float | None:
    """How far one output is from its tolerance (``x tol``): > 1 fails, <= 1 passes; None when unknown.
    The ratio of :func:`tolerance_bound`."""
    return tolerance_bound(out)[0]


def tolerance_bound(out: dict) -> tuple[float | None, str | None]:
    """``(ratio, binding)`` of one output (a ``CompareResult`` output's JSON form): ``x tol`` and the
    bound that sets it. The one computation behind the terminal, the JSON and the HTML report.

    The ratio is the largest of the bounds that applied to the output, and ``binding`` names it:

    * ``"element"``: the element rule (compare: an element fails iff its error exceeds atol AND
      rtol*|expected|): ``element_ratio``, the largest ``|actual - expected| / max(atol, rtol *
      |expected|)`` over the elements, i.e. how much of its own tolerance the worst element uses
      (0.1 = a decade of headroom; 3 = both tolerances would have to grow 3x);
    * ``"cosine"``: the cosine floor, where one applied (``min_cosine`` recorded: the precision's
      default or an explicit one): ``(1 - cosine) / (1 - min_cosine)``;
    * ``"snr"``: the SNR floor (``min_snr_db``): ``10 ** ((min_snr_db - snr_db) / 10)``, the noise
      power over the noise power the floor allows;
    * ``"nan_inf"``: NaN/Inf mismatches (``inf``: no tolerance passes them);
    * ``"structure"``: a missing, extra or misshapen output (``inf``).

    A tie names the first of element, cosine, SNR. A passing output is at most 1, a failing one
    at least 1 (a guard against rounding at the boundary). ``(None, None)`` for a passing output
    compared without details (the element figures were not computed, so the largest bound is
    unknown); a failing one without them (it failed a floor only, so its element ratio is at
    most 1) gets the floor's ratio.
    """
    if out.get("problem"):
        return math.inf, "structure"
    if out.get("unfixable"):
        return math.inf, "nan_inf"
    if out.get("kind") in ("int", "bool"):
        return (math.inf if out.get("mismatched") else 0.0), "element"
    element = _element_ratio(out)
    parts = [(element, "element"), *zip(metric_ratios(out), _metric_names(out), strict=True)]
    known = [(r, name) for r, name in parts if r is not None]
    if element is None and (out.get("passed") or not any(r > 1 for r, _ in known)):
        return None, None
    ratio, binding = max(known, key=lambda p: p[0])  # max() keeps the first of equal ratios
    return (min(1.0, ratio) if out.get("passed") else max(1.0, ratio)), binding


def _ratio(err: float | None, tol: float | None) -> float | None:
    if err is None or tol is None or math.isnan(err):
        return None
    if err == 0:
        return 0.0
    return math.inf if tol == 0 else err / tol


def _smallest(parts: list[float | None]) -> float | None:
    known = [p for p in parts if p is not None]
    return min(known) if known else None


def _element_ratio(out: dict) -> float | None:
    """The element rule's part of :func:`tolerance_bound`: the recorded ``element_ratio``. A record
    written before it existed (no key) falls back to the bound it had then: with mismatches
    ``min(needed_atol / atol, needed_rtol / rtol)``, else ``min(max_abs / atol, max_rel / rtol)``
    capped at 1 (an upper bound: the two maxima may be different elements)."""
    if "element_ratio" in out:
        return as_float(out.get("element_ratio"))
    atol, rtol = as_float(out.get("atol")), as_float(out.get("rtol"))
    element = None
    if not out.get("passed") and out.get("mismatched") != 0:
        element = _smallest([_ratio(as_float(out.get("needed_atol")), atol),
                             _ratio(as_float(out.get("needed_rtol")), rtol)])
    if element is None:  # no mismatch, or not detailed: bound from the worst errors instead
        element = _smallest([_ratio(as_float(out.get("max_abs")), atol), _ratio(as_float(out.get("max_rel")), rtol)])
        if element is not None and out.get("mismatched") == 0:
            element = min(1.0, element)  # every element passed (the two maxima may be different elements)
    return element


def _metric_names(out: dict) -> list[str]:
    """The names of the parts :func:`metric_ratios` returns, in its order."""
    names = []
    if _known(out.get("cosine")) and as_float(out.get("min_cosine")) is not None:
        names.append("cosine")
    if _known(out.get("snr_db")) and as_float(out.get("min_snr_db")) is not None:
        names.append("snr")
    return names


def _known(value) -> bool:
    x = as_float(value)
    return x is not None and not math.isnan(x)


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


def criterion_text(criterion: dict | None, output: str | None = None) -> str | None:
    """A record's criterion in words, each value with its source (``Criterion.describe``), for one
    ``output`` or all; None for a record without one."""
    if not criterion:
        return None
    judged = Criterion.from_json(criterion)
    return judged.describe(None if output is None else [output])


def _engine_for(res: dict, rec: AccuracyRecord) -> EngineRecord | None:
    engines = [r for r in result_records(res) if isinstance(r, EngineRecord)]
    for eng in engines:
        if (eng.model, eng.policy, eng.backend) == (rec.model, rec.policy, rec.backend):
            return eng
    return engines[0] if engines else None


def engine_text(engine: EngineRecord | None) -> str:
    """``cache hit``, ``built 1.23s`` or ``-`` (no engine)."""
    if not engine:
        return "-"
    if engine.cache_hit:
        return "cache hit"
    return f"built {float(engine.build_seconds or 0.0):.2f}s"


def caught(row: dict) -> bool:
    """A failing output (or precision or parser check) whose failure was caught: by a negative control
    that failed as expected (xfail, pytest-trt's own verdict), or inside a test that passed
    (:func:`caught_by_test`). Counted apart (``*_caught``), so that ``*_failed`` is zero on a green run."""
    if row["passed"]:
        return False
    return (row.get("expected_failure") or {}).get("verdict") == "caught" or caught_by_test(row)


def caught_by_test(row: dict) -> bool:
    """A failing row of a test that did not fail (passed without an xfail verdict, skipped, or xpassed):
    the test caught the failure itself (``pytest.raises(AccuracyError)``, ``try``/``except``, then perhaps
    ``pytest.skip()``; :func:`~.outcomes.caught_in_test`)."""
    return not row["passed"] and caught_outcome(row.get("outcome"), row.get("expected_failure"))


def accuracy_rows(results: Iterable[dict]) -> list[dict[str, Any]]:
    """One row per output of every accuracy check, worst first: failing outputs before passing
    ones, then by :func:`tolerance_ratio` (largest first)."""
    rows = []
    for index, (res, rec) in enumerate(records_of(results, AccuracyRecord)):
        engine = _engine_for(res, rec)
        figures = rec.figures or {}
        for name, out in rec.outputs.items():
            ratio, binding = tolerance_bound(out)
            rows.append({
                "test": res["nodeid"], "outcome": res.get("outcome"), "check": index,
                "model": rec.model, "backend": rec.backend, "policy": rec.policy,
                "precision": rec.precision, "seed": rec.seed, "baseline": rec.baseline,
                "output": name, "examples": rec.count, "no_check": rec.no_check,
                "expected_failure": res.get("expected_failure"),
                "passed": bool(out.get("passed")), "problem": out.get("problem_detail") or out.get("problem"),
                "max_abs": as_float(out.get("max_abs")), "max_rel": as_float(out.get("max_rel")),
                "atol": as_float(out.get("atol")), "rtol": as_float(out.get("rtol")),
                "mismatched": out.get("mismatched"), "total": out.get("total"),
                "ratio": ratio, "binding": binding, "engine": engine_text(engine),
                "criterion": criterion_text(rec.criterion, name),
                "cache_hit": None if engine is None else bool(engine.cache_hit),
                "build_seconds": None if engine is None else engine.build_seconds,
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
    """The policy's pattern semantics over a report's node entry (``class:`` sees only the entry's
    innermost ``module_class``: a report entry does not carry the whole class chain)."""
    if pattern.startswith("op:"):
        return node.get("op_type") == pattern[3:]
    if pattern.startswith("class:"):
        cls = str(node.get("module_class") or "")
        glob = pattern[len("class:"):]
        return bool(cls) and (fnmatch.fnmatchcase(cls, glob) or fnmatch.fnmatchcase(cls.rpartition(".")[2], glob))
    raw = str(node.get("node") or node.get("name") or "")
    return fnmatch.fnmatchcase(raw, pattern) or fnmatch.fnmatchcase(str(node.get("canonical") or raw), pattern)


def node_label(node: Mapping[str, Any]) -> str:
    """How every report names a node entry: its canonical scoped name (``canonical``, from
    :mod:`pytest_trt.model.names`), else its raw ``node``/``name`` (records of older runs)."""
    return str(node.get("canonical") or node.get("node") or node.get("name") or "?")


def short_class_of(node: Mapping[str, Any]) -> str | None:
    """The short module class of a node entry (``LlamaRMSNorm``), None when unknown."""
    cls = node.get("module_class")
    return str(cls).rpartition(".")[2] if cls else None


def _node_entries(report: Any) -> list[dict]:
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


def precision_nodes(record: PrecisionRecord | Mapping[str, Any]) -> tuple[list[dict], list[dict]]:
    """``(constrained, all)`` node observations of a precision record (or its JSON form), in plan
    (topological) order.

    The record's ``report`` is a ``PrecisionCheck.to_json()`` (verify/precision.py: its ``nodes``
    are exactly the nodes the pattern matched, resolved by the plan) or a
    ``LayerReport.to_json()`` (every node; then the constrained ones are the report's
    ``matched`` names when listed, else the pattern applied as the policy does: glob over
    names, ``op:TYPE``). Each entry has ``node, op_type, planned, observed, status,
    myelin, myelin_region, layer, detail, cause``.
    """
    rec = as_record(record)
    if not isinstance(rec, PrecisionRecord):
        raise TypeError(f"precision_nodes() takes a precision record, got a {rec.kind!r} record")
    report = rec.report
    everything = []
    for n in _node_entries(report):
        raw = n.get("node") or n.get("name")
        everything.append({
            "node": raw, "canonical": n.get("canonical") or raw, "module": n.get("module"),
            "module_class": n.get("module_class"), "op_type": n.get("op_type"), "planned": n.get("planned"),
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
        pattern = str(rec.pattern or "*")
        constrained = [n for n in everything if _pattern_matches(pattern, n)]
    return constrained, everything


def scope_of(node_name: str) -> str:
    """A node's scope: its name up to the last ``/`` (``/encoder/layer.0/attention/Softmax`` ->
    ``/encoder/layer.0/attention``); names without one are their own op-less scope ``(top)``."""
    name = str(node_name or "")
    return name.rsplit("/", 1)[0] or "/" if "/" in name else "(top)"


def network_scopes(decisions: Iterable[Any], names: Any = None) -> list[dict]:
    """Plan decisions (``NodeDecision``: name, op_type, precision) grouped by scope in graph order.

    The scope is that of the node's canonical scoped name (``names``: the model's
    :class:`~pytest_trt.model.names.NodeNames`; without it the raw name's), so a dynamo export
    is drawn per module too; each entry also says the scope's ``module`` path and innermost
    ``module_class`` (of its first node; None when unknown). ``planned`` counts nodes per
    planned precision (``fixed`` for nodes the plan does not rewrite: shapes, indices). A few
    hundred scopes at most for a transformer export, so the record stays small while the HTML
    can draw the whole network."""
    scopes: dict[str, dict] = {}
    for d in decisions:
        entry = names.get(d.name) if names is not None else None
        where = scope_of(entry.canonical if entry is not None else d.name)
        scope = scopes.get(where)
        if scope is None:
            scope = scopes[where] = {"scope": where, "module": entry.module if entry is not None else None,
                                     "module_class": entry.module_class if entry is not None else None,
                                     "nodes": 0, "planned": {}}
        scope["nodes"] += 1
        key = d.precision or "fixed"
        scope["planned"][key] = scope["planned"].get(key, 0) + 1
    return list(scopes.values())


def evidence_counts(nodes: list[dict]) -> dict[str, int]:
    """``{"observed", "inferred", "unverifiable", "emulated"}`` over the compute nodes of a record
    (a record written before evidence was reported counts its nodes as unverifiable: nothing says how)."""
    out = dict.fromkeys(EVIDENCE, 0)
    for n in nodes:
        if n.get("status") in NEUTRAL_STATUSES:
            continue
        ev = n.get("evidence")
        out[ev if ev in out else UNVERIFIABLE] += 1  # never counted as observed
    return out


def precision_rows(results: Iterable[dict]) -> list[dict[str, Any]]:
    """One row per ``precision`` record: pattern, asked precision, verdict, status counts, nodes."""
    rows = []
    for res, rec in records_of(results, PrecisionRecord):
        constrained, everything = precision_nodes(rec)
        report = rec.report if isinstance(rec.report, dict) else {}
        counts: dict[str, int] = {}
        for n in constrained:
            counts[n["status"] or "?"] = counts.get(n["status"] or "?", 0) + 1
        rows.append({
            "evidence": evidence_counts(constrained),
            "test": res["nodeid"], "outcome": res.get("outcome"), "expected_failure": res.get("expected_failure"),
            "pattern": rec.pattern,
            "precision": rec.precision, "passed": precision_passed(rec),
            "source": report.get("source"), "typing": report.get("typing"), "backend": report.get("backend"),
            "emulated": bool(report.get("emulated")),
            "counts": counts, "constrained": constrained, "nodes": everything,
            "notes": list(report.get("notes") or ()), "network": list(rec.network or ()),
            "examples": rec.count,
        })
    return rows


def parser_rows(results: Iterable[dict]) -> list[dict[str, Any]]:
    """One row per parser check (``--trt-parser-check`` / ``trt.check_parser()``), in test order."""
    rows = []
    for res, rec in records_of(results, ParserRecord):
        rows.append({"test": res["nodeid"], "outcome": res.get("outcome"),
                     "expected_failure": res.get("expected_failure"),
                     **{k: v for k, v in rec.to_json().items() if k != "kind"}})
    return rows


def ledger_rows(results: Iterable[dict]) -> list[dict[str, Any]]:
    """One row per ledger a test recorded: ``{"test", "auto", "ledger": Ledger.to_json()}``."""
    return [{"test": res["nodeid"], "auto": bool(rec.auto), "ledger": rec.ledger}
            for res, rec in records_of(results, LedgerRecord)]


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


def unique(values: Iterable[Any]) -> list:
    """The distinct values that are not None, in first-seen order."""
    seen: list = []
    for v in values:
        if v is not None and v not in seen:
            seen.append(v)
    return seen


__all__ = ["BAD_STATUSES", "BINDINGS", "EVIDENCE", "binding_text", "GOOD_STATUSES", "NEUTRAL_STATUSES", "accuracy_rows", "baseline_fallbacks",
           "caught", "criterion_text", "engine_counts", "engine_text", "evidence_counts", "ledger_rows", "metric_ratios",
           "network_scopes",
           "parser_promotions", "parser_rows", "precision_nodes", "precision_passed", "precision_rows",
           "caught_by_test",
           "node_label", "records_of", "scope_of", "result_records", "short_class_of", "tolerance_bound",
           "tolerance_ratio", "unique",
           "worst_per_test_output"]
