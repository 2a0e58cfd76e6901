"""ONNX Runtime's profile (``SessionOptions.enable_profiling``), read into per-node samples.

The profile is a Chrome-trace JSON list of events. The ones read here (ONNX Runtime 1.17 ...
1.32, CPU and CUDA providers write the same format; ``onnxruntime/core/framework/
sequential_executor.cc``):

* ``{"cat": "Session", "name": "model_run", "ts": <us>, "dur": <us>}``: one per
  ``InferenceSession.run``; the node events of a run lie inside its interval;
* ``{"cat": "Node", "name": "<node>_kernel_time", "dur": <us>, "args": {"op_name",
  "provider", "output_type_shape": [{"float16": [1, 8, 64]}], ...}}``: one per node executed
  (``<node>_fence_before`` / ``_fence_after`` events, written by older versions, are ignored).

``dur`` is the host time of the node's ``Compute()``. On the CUDA provider a kernel launch is
asynchronous, so that time is a GPU time only when every launch blocks until its kernel ends:
:mod:`pytest_trt.ledger.ort_cuda` runs the profiled session with ``CUDA_LAUNCH_BLOCKING=1``
for exactly that reason. Nothing here knows which provider wrote the events: the caller says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["OrtNodeTimes", "read_ort_profile"]

KERNEL_SUFFIX = "_kernel_time"


@dataclass
class OrtNodeTimes:
    """Per-node samples of the measured runs of one profile.

    ``samples``: node -> one time per measured run (ms; a node executed several times in one run,
    e.g. inside a loop body, is summed); ``providers``: node -> execution provider; ``dtypes``:
    node -> element types of its outputs; ``runs``: measured runs; ``skipped``: warm-up runs
    left out; ``run_ms``: each measured run's ``model_run`` duration.
    """

    samples: dict[str, list[float]] = field(default_factory=dict)
    providers: dict[str, str] = field(default_factory=dict)
    dtypes: dict[str, list[str]] = field(default_factory=dict)
    op_types: dict[str, str] = field(default_factory=dict)
    runs: int = 0
    skipped: int = 0
    run_ms: list[float] = field(default_factory=list)


def _output_dtypes(args: dict) -> list[str]:
    """Element types of ``output_type_shape`` (``[{"float16": [1, 8, 64]}]`` -> ``["float16"]``)."""
    out: list[str] = []
    for entry in args.get("output_type_shape") or ():
        if isinstance(entry, dict):
            out.extend(str(k) for k in entry)
    return out


def _measured_runs(events: list[dict], warmup: int) -> list[tuple[float, float]]:
    """``(start, end)`` in microseconds of each ``model_run`` after the warm-ups."""
    runs = sorted((float(e.get("ts", 0)), float(e.get("ts", 0)) + float(e.get("dur", 0)))
                  for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    if len(runs) <= warmup:
        raise ValueError(f"the ONNX Runtime profile holds {len(runs)} run(s) (model_run events); {warmup} warm-up "
                         f"run(s) and at least one measured run were expected")
    return runs[warmup:]


def _node_events(events: list[dict]) -> list[dict]:
    return sorted((e for e in events if e.get("cat") == "Node" and str(e.get("name", "")).endswith(KERNEL_SUFFIX)),
                  key=lambda e: float(e.get("ts", 0)))


def read_ort_profile(events: Any, *, warmup: int = 0) -> OrtNodeTimes:
    """The node times of a profile's runs, the first ``warmup`` runs left out.

    ``events``: the parsed profile (a list of event dicts). Raises ValueError when it holds no
    ``model_run`` event or fewer runs than ``warmup + 1``: the profile did not record what it was
    asked to.
    """
    if not isinstance(events, list):
        raise ValueError(f"an ONNX Runtime profile is a JSON list of events, got {type(events).__name__}")
    events = [e for e in events if isinstance(e, dict)]
    measured = _measured_runs(events, warmup)
    out = OrtNodeTimes(runs=len(measured), skipped=warmup, run_ms=[(end - start) / 1000.0 for start, end in measured])
    per_run: list[dict[str, float]] = [{} for _ in measured]
    i = 0
    for e in _node_events(events):
        ts = float(e.get("ts", 0))
        while i < len(measured) and ts > measured[i][1]:
            i += 1
        if i >= len(measured):
            break
        if ts < measured[i][0]:
            continue  # a warm-up run's node (or one outside any run)
        name = str(e["name"])[: -len(KERNEL_SUFFIX)]
        per_run[i][name] = per_run[i].get(name, 0.0) + float(e.get("dur", 0)) / 1000.0
        if name not in out.dtypes:
            args = e.get("args") or {}
            out.providers[name] = str(args.get("provider", ""))
            out.op_types[name] = str(args.get("op_name", ""))
            out.dtypes[name] = _output_dtypes(args)
    for run in per_run:  # execution order of the first run that executed the node
        for name in run:
            out.samples.setdefault(name, [])
    for name in out.samples:
        # a node missing from a run (a branch not taken) took no time in it
        out.samples[name] = [run.get(name, 0.0) for run in per_run]
    return out
