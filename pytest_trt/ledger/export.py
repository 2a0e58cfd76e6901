"""The ledger in formats existing tools read: trtexec's ``--exportProfile`` JSON and a Chrome trace.

* :func:`trtexec_profile`: the list ``trtexec --exportProfile`` writes (``sampleReporting.cpp``
  ``Profiler::exportJSONProfile``, TensorRT 10.x): ``[{"count": N}, {"name", "timeMs",
  "averageMs", "medianMs", "percentage"}, ...]``, ``timeMs`` summed over the N iterations and
  ``percentage`` of the sum of every layer's ``timeMs``. One entry per timed unit (engine
  layer, or ONNX node for ONNX Runtime CUDA), in execution order: tools that read trtexec
  profiles (TREx's ``import_profiling_data``, spreadsheets) read it as is.
* :func:`chrome_trace`: the Trace Event Format (``{"traceEvents": [...]}``, complete events
  ``"ph": "X"`` with microsecond ``ts``/``dur``) that chrome://tracing and Perfetto open: one
  iteration laid out by the units' median times, each event's ``args`` holding the ONNX nodes
  it carries, their declared and realized precision and the spread.

Both need time: a ledger without it raises :class:`~pytest_trt.errors.UsageError` with the
ledger's reason (an empty profile would read as "took no time").
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError

__all__ = ["chrome_trace", "trtexec_profile"]

#: nodes listed per trace event before the rest is counted
TRACE_NODES = 50


def _timed_units(data: dict, what: str) -> list[dict]:
    if not data.get("time_source"):
        raise UsageError(f"{what}: the ledger of {data.get('model')} has no time "
                         f"({data.get('time_reason') or 'not measured'})")
    return [u for u in data.get("units", ()) if u.get("stats")]


def trtexec_profile(data: dict) -> list[dict[str, Any]]:
    """The ledger's timed units as ``trtexec --exportProfile`` writes them."""
    units = _timed_units(data, "trtexec profile export")
    count = int((data.get("timing") or {}).get("iterations") or 0)
    totals = [float(u["stats"]["mean_ms"]) * int(u["stats"]["count"]) for u in units]
    grand = sum(totals) or 1.0
    out: list[dict[str, Any]] = [{"count": count}]
    for unit, total in zip(units, totals, strict=True):
        out.append({"name": unit["name"], "timeMs": total, "averageMs": float(unit["stats"]["mean_ms"]),
                    "medianMs": float(unit["stats"]["median_ms"]), "percentage": 100.0 * total / grand})
    return out


def chrome_trace(data: dict) -> dict[str, Any]:
    """One iteration of the ledger as Trace Event Format JSON (chrome://tracing, ui.perfetto.dev)."""
    units = _timed_units(data, "Chrome trace export")
    rows = {r["node"]: r for r in data.get("rows", ()) if r.get("node")}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 1,
         "args": {"name": f"pytest-trt ledger: {data.get('model')} [{data.get('policy')}]"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1,
         "args": {"name": f"{data.get('time_label')} (median per {data.get('unit')})"}},
    ]
    ts = 0.0
    for unit in units:
        dur = float(unit["stats"]["median_ms"]) * 1000.0
        nodes = unit.get("nodes") or []
        args = {"declared": unit.get("bucket"), "realized": unit.get("realized_bucket"), "scope": unit.get("scope"),
                "nodes": len(nodes), "onnx_nodes": nodes[:TRACE_NODES],
                "evidence": sorted({str(rows[n].get("evidence")) for n in nodes if n in rows}),
                "median_ms": unit["stats"]["median_ms"], "q1_ms": unit["stats"]["q1_ms"],
                "q3_ms": unit["stats"]["q3_ms"], "layer_type": unit.get("layer_type")}
        if unit.get("provider"):
            args["provider"] = unit["provider"]
        events.append({"name": unit["name"], "cat": str(unit.get("bucket")), "ph": "X", "pid": 1, "tid": 1,
                       "ts": round(ts, 3), "dur": round(dur, 3), "args": args})
        ts += dur
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"model": data.get("model"), "policy": data.get("policy"), "backend": data.get("backend"),
                          "timing": data.get("time_label"), "iterations": (data.get("timing") or {}).get("iterations")}}
