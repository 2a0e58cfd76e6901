"""Condensing repeated checks: one record per check a test repeated, the worst example kept.

A Hypothesis property or a loop over input sets checks the same model and policy many times
(a failing property with 10 examples recorded 112 checks). The plugin condenses a test's
records before they ride on its report (unless ``--trt-report-all-records``), and the HTML
report condenses again, so every view shows one row per repeated check with its count.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.records import (
    AccuracyRecord,
    BaselineFallbackRecord,
    EngineRecord,
    LayerwiseRecord,
    PrecisionRecord,
    RealizedRecord,
    Record,
    as_record,
)
from .rows import tolerance_ratio


def check_badness(rec: AccuracyRecord) -> tuple:
    """Sort key of accuracy records: failing first, then the largest tolerance ratio."""
    ratios = [tolerance_ratio(out) for out in rec.outputs.values()]
    worst = max([r for r in ratios if r is not None], default=-1.0)
    return (rec.passed, -worst)


#: what makes two records the same check, per record type (other types: never condensed)
_GROUP_KEY: dict[type, Callable[[Any], tuple]] = {
    AccuracyRecord: lambda r: (r.kind, r.model, r.backend, r.policy, r.baseline),
    PrecisionRecord: lambda r: (r.kind, r.pattern, r.precision, r.passed),
    LayerwiseRecord: lambda r: (r.kind, r.model, r.backend, r.policy),
    EngineRecord: lambda r: (r.kind, r.key or (r.model, r.policy, r.backend)),
    BaselineFallbackRecord: lambda r: (r.kind, r.model, json.dumps(r.nodes)),
    RealizedRecord: lambda r: (r.kind, r.engine),
}


def _keeps(rec: Record, kept: Record) -> bool:
    """Whether ``rec`` replaces the record kept so far for its check."""
    if isinstance(rec, AccuracyRecord) and isinstance(kept, AccuracyRecord):
        return check_badness(rec) < check_badness(kept)
    if isinstance(rec, LayerwiseRecord):
        return True  # Hypothesis replays the shrunk example last
    if isinstance(rec, RealizedRecord):
        return rec.nodes is not None and getattr(kept, "nodes", None) is None  # the one with the map
    if isinstance(rec, EngineRecord):
        return not rec.cache_hit  # a build in this test wins over its later in-process reuses
    return False


def condense_records(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    """One record per repeated check: the worst example, with ``examples`` = how many there were.

    Accuracy records are grouped by (model, backend, policy, baseline) and the worst kept
    (failing first, then by :func:`~pytest_trt.report.rows.tolerance_ratio`); precision records
    by (pattern, precision, verdict), the first kept; layerwise records by (model, backend,
    policy), the last kept (Hypothesis replays the shrunk example last); engine records by
    cache key; baseline fallbacks by model and node list. Order of first appearance is kept.
    ``--trt-report-all-records`` keeps every record instead.
    """
    groups: dict[tuple, list] = {}  # key -> [kept record, count]
    for index, value in enumerate(records):
        rec = as_record(value)
        group_key = _GROUP_KEY.get(type(rec))
        key = group_key(rec) if group_key is not None else (rec.kind, index)
        group = groups.setdefault(key, [rec, 0])
        group[1] += rec.count
        if group[0] is not rec and _keeps(rec, group[0]):
            group[0] = rec
    out: list[Record] = []
    for rec, n in groups.values():
        out.append(dataclasses.replace(rec, examples=n) if n > 1 or rec.examples is not None else rec)
    return out


__all__ = ["check_badness", "condense_records"]
