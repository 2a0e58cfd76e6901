"""Drift: a session's figures against a saved run's, output by output, and the gate's verdict.

Both sides are JSON reports (the current session's :func:`~pytest_trt.report.json_report.build_report`
and the saved run's ``report``). Outputs are matched by test id and output name (the k-th check
of an output in a test with the k-th: a test that checks twice has two rows). For each matched
output every metric of :data:`~pytest_trt.history.gate.METRICS` is judged
(:func:`~pytest_trt.history.gate.judge`); with a gate (``--trt-compare-fail``) an output whose
gated metric moved beyond its threshold the failing way is *regressed*, the other way *improved*
(reported, never failed). Negative controls (tests that xfailed or xpassed in either run) are
not gated: their failure is their purpose. Outputs in one run only are counted, never failed one
by one; but a gate that compared no output at all fails (it judged nothing: the tests were
renamed or deselected), and outputs of the stored run missing from this one are named in the
drift line.

A check's criterion is the one its accuracy entry recorded (``criterion``: ``Criterion.to_json()``,
read back with :meth:`~pytest_trt.compare.criterion.Criterion.from_json`); a changed one is
counted in the cause line (:meth:`~pytest_trt.compare.criterion.Criterion.changes`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..compare.criterion import Criterion
from ..core.jsonsafe import json_number
from .changes import layerwise_growth, precision_changes
from .fingerprint import cause_line, environment_changes
from .gate import METRICS, Judgement, Threshold, judge

__all__ = ["DriftReport", "OutputDrift", "compare_reports", "failure_line", "missing_text", "unmatched_parts"]

#: the metrics the terminal's drift table shows (all are judged and in the JSON)
SHOWN = ("x_tol", "max_abs", "max_rel", "cosine")
#: outcomes of a negative control (not gated)
_CONTROLS = ("xfailed", "xpassed")


@dataclass
class OutputDrift:
    """One output of one check, in both runs."""

    nodeid: str
    output: str
    occurrence: int
    model: str
    old_policy: str | None
    new_policy: str | None
    old_passed: bool | None
    new_passed: bool | None
    judgements: dict[str, Judgement]
    status: str
    severity: float
    #: the gated judgements that regressed (improved), in gate order
    regressed: list[Judgement] = field(default_factory=list)
    improved: list[Judgement] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``tests/test_x.py::test_a[last_hidden_state]`` (``#2`` for a test's second check of it)."""
        again = f"#{self.occurrence}" if self.occurrence > 1 else ""
        return f"{self.nodeid}[{self.output}]{again}"

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid, "output": self.output, "occurrence": self.occurrence, "model": self.model,
            "old_policy": self.old_policy, "new_policy": self.new_policy, "old_passed": self.old_passed,
            "new_passed": self.new_passed, "status": self.status,
            "metrics": {m: {"old": json_number(j.old), "new": json_number(j.new), "status": j.status,
                            "change": j.change, "threshold": j.threshold or None, "note": j.note or None}
                        for m, j in self.judgements.items()},
        }


@dataclass
class DriftReport:
    """A session against a saved run: rows worst first, the fingerprint's changes, what changed inside."""

    against: str
    against_name: str | None
    thresholds: tuple[Threshold, ...]
    rows: list[OutputDrift]
    only_old: list[str]
    only_new: list[str]
    not_gated: int
    env_changes: list[tuple[str, Any, Any]]
    checks: dict[str, Any]
    cause: str
    precision: list[dict[str, Any]]
    layerwise: list[dict[str, Any]]

    @property
    def gated(self) -> bool:
        return bool(self.thresholds)

    @property
    def regressed(self) -> list[OutputDrift]:
        return [r for r in self.rows if r.status == "regressed"]

    @property
    def improved(self) -> list[OutputDrift]:
        return [r for r in self.rows if r.status == "improved"]

    @property
    def judged_nothing(self) -> bool:
        """A gate that compared no output: it cannot vouch for anything, so it fails."""
        return self.gated and not self.rows

    @property
    def passed(self) -> bool:
        """The gate's verdict: no regressed output and at least one output compared (always True
        without a gate)."""
        return not self.regressed and not self.judged_nothing

    def to_json(self) -> dict[str, Any]:
        return {
            "against": self.against, "against_name": self.against_name,
            "gate": [str(t) for t in self.thresholds], "passed": self.passed,
            "regressed": len(self.regressed), "improved": len(self.improved), "compared": len(self.rows),
            "only_in_stored": self.only_old, "only_in_this_run": self.only_new, "not_gated": self.not_gated,
            "cause": self.cause,
            "fingerprint_changes": [{"field": k, "old": a, "new": b} for k, a, b in self.env_changes],
            "checks_changed": {k: v for k, v in self.checks.items() if not k.endswith("_example")},
            "outputs": [r.to_json() for r in self.rows],
            "precision_changes": self.precision,
            "layerwise_growth": self.layerwise,
        }


def unmatched_parts(drift: DriftReport) -> list[str]:
    """What the drift did not compare, one phrase each (terminal and HTML): outputs only in one of
    the runs, outputs of negative controls."""
    parts = []
    if drift.only_new:
        parts.append(f"{len(drift.only_new)} output(s) only in this run")
    if drift.only_old:
        parts.append(f"{len(drift.only_old)} only in the stored run")
    if drift.not_gated == 1:
        parts.append("1 output of a negative control (xfail) not compared")
    elif drift.not_gated:
        parts.append(f"{drift.not_gated} outputs of negative controls (xfail) not compared")
    return parts


def failure_line(drift: DriftReport, *, flag: str = "--trt-compare-fail", save: str = "--trt-save NAME") -> str:
    """The one line a failed drift gate prints (and the session failure's text):

    ``pytest-trt drift gate FAILED against run <id>: 2 regressed output(s) (gate max_abs:+25%): <test>[<output>]
    max_abs 2.1e-03 -> 9.0e-03 (+329%, limit max_abs:+25%); ...``

    or, for a gate that compared nothing, how many outputs are in one run only and what to do
    (``flag``: the gate's option in the interface's spelling; ``save``: how a new baseline is saved).
    """
    gate = ",".join(str(t) for t in drift.thresholds)
    if drift.judged_nothing:
        controls = f", {drift.not_gated} output(s) of negative controls (never gated)" if drift.not_gated else ""
        return (f"pytest-trt drift gate FAILED against run {drift.against}: no output compared ({flag}={gate}): "
                f"{len(drift.only_new)} output(s) only in this run, {len(drift.only_old)} only in the stored run"
                f"{controls}; a gate that judged nothing cannot pass. Select the same tests as the stored run (test "
                f"ids include the file name: a renamed file or -k/-m deselects them), or save a new baseline with "
                f"{save} and compare with that")
    shown = "; ".join(f"{r.label} " + ", ".join(j.text() for j in r.regressed) for r in drift.regressed[:5])
    more = f"; and {len(drift.regressed) - 5} more" if len(drift.regressed) > 5 else ""
    return (f"pytest-trt drift gate FAILED against run {drift.against}: {len(drift.regressed)} regressed output(s) "
            f"({flag}={gate}): {shown}{more}")


def missing_text(drift: DriftReport, shown: int = 3) -> str:
    """``; 4 of the stored run's output(s) NOT in this run (a[x], b[y], c[z] and 1 more)``, or ``""``."""
    if not drift.only_old:
        return ""
    more = f" and {len(drift.only_old) - shown} more" if len(drift.only_old) > shown else ""
    return (f"; {len(drift.only_old)} of the stored run's output(s) NOT in this run, not judged "
            f"({', '.join(drift.only_old[:shown])}{more})")


def _accuracy_outputs(report: Mapping[str, Any]):
    """``(key, test, check, output)`` of every output of every accuracy check, ``key`` = (nodeid, output, k)."""
    seen: dict[tuple[str, str], int] = {}
    for test in report.get("tests") or ():
        for check in test.get("accuracy") or ():
            for out in check.get("outputs") or ():
                nodeid, name = str(test.get("nodeid")), str(out.get("name"))
                seen[(nodeid, name)] = seen.get((nodeid, name), 0) + 1
                yield (nodeid, name, seen[(nodeid, name)]), test, check, out


def _judge_row(old_out: Mapping[str, Any], new_out: Mapping[str, Any],
               thresholds: Sequence[Threshold]) -> tuple[dict[str, Judgement], list[Judgement], list[Judgement]]:
    gate = {t.metric: t for t in thresholds}
    judgements = {m: judge(m, old_out.get(key), new_out.get(key), gate.get(m)) for m, (key, _, _) in METRICS.items()}
    gated = [judgements[t.metric] for t in thresholds]
    return (judgements, [j for j in gated if j.status == "regressed"], [j for j in gated if j.status == "improved"])


def _status(judgements: dict[str, Judgement], regressed: list, improved: list, gated: bool) -> tuple[str, float]:
    if regressed:
        return "regressed", max(j.severity for j in regressed)
    if improved:
        return "improved", -max(j.severity for j in improved)
    xtol = judgements["x_tol"]
    growth = 0.0
    if xtol.old and xtol.new is not None and xtol.old not in (0.0,) and math.isfinite(xtol.old):
        growth = (xtol.new - xtol.old) / abs(xtol.old) if math.isfinite(xtol.new) else math.inf
    changed = any(j.status not in ("unchanged", "not compared") for j in judgements.values())
    return ("within" if changed else "unchanged"), growth


def compare_reports(old_run: Mapping[str, Any], new_report: Mapping[str, Any],
                    thresholds: Sequence[Threshold] = ()) -> DriftReport:
    """The drift of ``new_report`` (a JSON report) against ``old_run`` (a saved run: ``id``, ``name``,
    ``report``, ``fingerprint``)."""
    old_report = old_run.get("report") or {}
    old = {key: (test, check, out) for key, test, check, out in _accuracy_outputs(old_report)}
    rows: list[OutputDrift] = []
    only_new: list[str] = []
    not_gated = 0
    checks: dict[str, Any] = {"matched": 0, "model": 0, "plan": 0, "policy": 0, "inputs": 0, "criterion": 0}
    counted: set[tuple] = set()
    criteria: dict[int, Criterion | None] = {}  # each entry's recorded criterion, read once
    matched_keys = set()
    for key, test, check, out in _accuracy_outputs(new_report):
        nodeid, name, k = key
        if key not in old:
            only_new.append(f"{nodeid}[{name}]")
            continue
        matched_keys.add(key)
        old_test, old_check, old_out = old[key]
        if test.get("outcome") in _CONTROLS or old_test.get("outcome") in _CONTROLS:
            not_gated += 1
            continue
        _count_changes(checks, counted, criteria, (nodeid, k, str(check.get("model"))), old_check, check, name)
        judgements, regressed, improved = _judge_row(old_out, out, thresholds)
        status, severity = _status(judgements, regressed, improved, bool(thresholds))
        rows.append(OutputDrift(nodeid, name, k, str(check.get("model")), old_check.get("policy"), check.get("policy"),
                                old_out.get("passed"), out.get("passed"), judgements, status, severity,
                                regressed, improved))
    only_old = [f"{n}[{o}]" for (n, o, _k) in old if (n, o, _k) not in matched_keys]
    order = {"regressed": 0, "within": 1, "improved": 2, "unchanged": 3}
    rows.sort(key=lambda r: (order.get(r.status, 4), -_sortable(r.severity), r.label))
    env = environment_changes(old_run.get("fingerprint") or (old_report.get("session") or {}).get("fingerprint"),
                              (new_report.get("session") or {}).get("fingerprint"))
    return DriftReport(
        against=str(old_run.get("id")), against_name=old_run.get("name"), thresholds=tuple(thresholds), rows=rows,
        only_old=only_old, only_new=only_new, not_gated=not_gated, env_changes=env, checks=checks,
        cause=cause_line(env, checks), precision=precision_changes(old_report, new_report),
        layerwise=layerwise_growth(old_report, new_report),
    )


def _sortable(x: float) -> float:
    return 1e300 if math.isinf(x) and x > 0 else (-1e300 if math.isinf(x) else x)


def _count_changes(checks: dict[str, Any], counted: set, criteria: dict[int, Criterion | None], key: tuple,
                   old_check: Mapping[str, Any], new_check: Mapping[str, Any], name: str) -> None:
    """Count, once per matched check, what of its fingerprint changed; and once per output its criterion
    (when both runs recorded one)."""
    if ("criterion",) + key + (name,) not in counted:
        counted.add(("criterion",) + key + (name,))
        old_c, new_c = _criterion(old_check, criteria), _criterion(new_check, criteria)
        changes = old_c.changes(new_c, name) if old_c is not None and new_c is not None else []
        if changes:
            checks["criterion"] += 1
            checks.setdefault("criterion_example", f"{name}: {', '.join(changes)}")
    if key in counted:
        return
    counted.add(key)
    checks["matched"] += 1
    old_fp, new_fp = old_check.get("fingerprint") or {}, new_check.get("fingerprint") or {}
    for what, field_name in (("model", "model_sha256"), ("plan", "plan"), ("inputs", "feeds_sha256")):
        if old_fp.get(field_name) and new_fp.get(field_name) and old_fp[field_name] != new_fp[field_name]:
            checks[what] += 1
    if old_check.get("policy") != new_check.get("policy"):
        checks["policy"] += 1
        checks.setdefault("policy_example", f"{old_check.get('policy')} -> {new_check.get('policy')}")


def _criterion(check: Mapping[str, Any], read: dict[int, Criterion | None]) -> Criterion | None:
    """The criterion an accuracy entry recorded (read once per entry); None for an entry without one."""
    if id(check) not in read:
        data = check.get("criterion")
        read[id(check)] = Criterion.from_json(data) if data else None
    return read[id(check)]
