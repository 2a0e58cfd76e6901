"""Flat per-test properties for JUnit XML (``<property name=... value=...>``).

CI test reporters (e.g. GitHub's) show a test's properties beside it; the plugin adds these
to a trt test's ``user_properties`` from its (condensed) records, one value per name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.records import AccuracyRecord, EngineRecord, Record, as_record
from .rows import accuracy_rows, precision_rows, unique


def _g(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def junit_properties(records: Sequence[Record | Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Flat per-test properties for JUnit XML, one value each.

    Aggregated over the test's records, so a test with several checks still gets one
    row per name in a CI test reporter: the worst output decides ``trt_max_*_error``,
    ``trt_atol``/``trt_rtol`` (the tolerances that output was judged with) and
    ``trt_worst_output``; engines are summed. Names (all optional):

    ``trt_backend, trt_precision, trt_passed, trt_failed_outputs, trt_worst_output,
    trt_max_abs_error, trt_max_rel_error, trt_atol, trt_rtol, trt_tolerance_ratio,
    trt_seed, trt_engines, trt_cache_hit, trt_build_seconds, trt_precision_checks``
    """
    typed = [as_record(r) for r in records]
    res = {"nodeid": "", "records": typed}
    engines = [r for r in typed if isinstance(r, EngineRecord)]
    checks = [r for r in typed if isinstance(r, AccuracyRecord)]
    props: list[tuple[str, str]] = []
    backends = unique([r.backend for r in checks] + [r.backend for r in engines])
    policies = unique([r.policy for r in checks] + [r.policy for r in engines])
    if backends:
        props.append(("trt_backend", ", ".join(backends)))
    if policies:
        props.append(("trt_precision", " | ".join(policies)))
    if checks:
        props += _accuracy_properties(res, checks)
    if engines:
        props += _engine_properties(engines)
    prec = precision_rows([res])
    if prec:
        failed_p = sum(1 for p in prec if not p["passed"])
        props.append(("trt_precision_checks", f"{len(prec) - failed_p} passed, {failed_p} failed"))
    return props


def _accuracy_properties(res: dict, checks: list[AccuracyRecord]) -> list[tuple[str, str]]:
    rows = accuracy_rows([res])
    props = [("trt_passed", str(all(c.passed for c in checks)).lower())]
    failed = unique([r["output"] for r in rows if not r["passed"]])
    if failed:
        props.append(("trt_failed_outputs", ", ".join(failed)))
    if rows:
        props += _worst_output_properties(rows)
    seeds = unique([str(c.seed) for c in checks if c.seed is not None])
    if seeds:
        props.append(("trt_seed", ", ".join(seeds)))
    return props


def _worst_output_properties(rows: list[dict]) -> list[tuple[str, str]]:
    worst = rows[0]
    props = [("trt_worst_output", worst["output"])]
    known_abs = [r["max_abs"] for r in rows if r["max_abs"] is not None]
    known_rel = [r["max_rel"] for r in rows if r["max_rel"] is not None]
    if known_abs:
        props.append(("trt_max_abs_error", _g(max(known_abs))))
    if known_rel:
        props.append(("trt_max_rel_error", _g(max(known_rel))))
    for name, key in (("trt_atol", "atol"), ("trt_rtol", "rtol"), ("trt_tolerance_ratio", "ratio")):
        if worst[key] is not None:
            props.append((name, _g(worst[key])))
    return props


def _engine_properties(engines: list[EngineRecord]) -> list[tuple[str, str]]:
    seconds = sum(float(e.build_seconds or 0.0) for e in engines if not e.cache_hit)
    return [("trt_engines", str(len(engines))),
            ("trt_cache_hit", str(all(bool(e.cache_hit) for e in engines)).lower()),
            ("trt_build_seconds", f"{seconds:.3f}")]


__all__ = ["junit_properties"]
