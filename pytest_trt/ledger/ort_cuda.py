"""Timing source ``onnxruntime-cuda``: the plan's strongly typed realization on ONNX Runtime's CUDA provider.

Real FP16/BF16 GPU kernels with the FP32 islands as planned, timed per ONNX node by ONNX
Runtime's own profiler. It is **not TensorRT** (no fusion, no Myelin, other kernels), and
every report says so ("ONNX Runtime CUDA, not TensorRT"); it is the one timing source that
runs real low-precision GPU kernels where TensorRT cannot run, and it measures what an FP32
island costs there.

How (:func:`time_plan`): the realization (:func:`pytest_trt.realize.realize_strong`: the
model's nodes plus the Casts at island boundaries) and the feeds are written into a temporary
directory, and :mod:`pytest_trt.ledger.ort_worker` runs twice in a fresh process there:

1. end to end: ``warmup`` runs, then ``iterations`` timed runs (``session.run`` returns host
   arrays, so each time covers the whole run on the device);
2. per node: the same runs with ``SessionOptions.enable_profiling`` (``profile_file_prefix``
   in the temporary directory) and ``CUDA_LAUNCH_BLOCKING=1``: every kernel launch waits for
   its kernel, so a node's profiled time is its kernels' GPU time plus launch overhead (without
   it, ONNX Runtime's profile times only the asynchronous launches). The profile's
   ``cat == "Node"`` events give each node's ``dur``, ``args.op_name`` and ``args.provider``
   (:func:`pytest_trt.layers.ort_profile.read_ort_profile`); nodes that ran on the CPU
   provider (int64 shape/index math, usually) are flagged.

Graph optimizations are off (``ORT_DISABLE_ALL``, as for the baseline), so every ONNX node is
its own kernel and its own ledger row; ONNX Runtime's fused kernels (a fused LayerNorm
computes in FP32 inside: shared/GROUND_TRUTH.md section 2) are not what is timed. A CPU
provider is never a timing source (its times say nothing about a GPU): this module refuses
one unless a test asks for the profile's format only (``provider="cpu"`` of :func:`run_worker`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from ..core.lazy import lazy_import
from ..errors import BackendUnavailable
from ..layers.ort_profile import read_ort_profile
from ..layers.timing import LayerProfile
from ..realize import realize_strong
from ..realize.weight_sets import save_with_weights

if TYPE_CHECKING:  # pragma: no cover
    import onnxruntime as ort

    from ..plan import PrecisionPlan
else:
    ort = lazy_import("onnxruntime", extra="cpu")

__all__ = ["CUDA_PROVIDER", "OrtTimingError", "ort_cuda_reason", "profile_from_runs", "run_worker", "time_model",
           "time_plan"]

CUDA_PROVIDER = "CUDAExecutionProvider"
#: above this size the realization is written with its weights in one external data file
EXTERNAL_DATA_BYTES = 1 << 30
#: seconds one worker may take
WORKER_TIMEOUT = 1800


class OrtTimingError(BackendUnavailable):
    """ONNX Runtime's CUDA provider could not time the model here (the reason names what failed)."""


def ort_cuda_reason() -> str | None:
    """None when this ONNX Runtime offers its CUDA provider, else why not (no GPU is probed here:
    a provider that is listed but cannot start fails the worker, with ONNX Runtime's reason)."""
    try:
        providers = ort.get_available_providers()
    except ImportError as exc:
        return f"ONNX Runtime cannot be imported ({exc})"
    if CUDA_PROVIDER not in providers:
        return (f"this ONNX Runtime has no {CUDA_PROVIDER} (it has {', '.join(providers)}; the GPU build is "
                f"onnxruntime-gpu)")
    return None


def _write_model(proto: onnx.ModelProto, path: Path, model: Any = None) -> None:
    if model is not None and getattr(model, "has_external_weights", False):
        # a realization of a model with external weights refers to them: the worker gets a copy
        # with its weights beside it (issue 29; the worker is a separate process)
        save_with_weights(proto, model, path)
        return
    large = proto.ByteSize() > EXTERNAL_DATA_BYTES
    onnx.save_model(proto, str(path), save_as_external_data=large, all_tensors_to_one_file=True,
                    location=path.name + ".data")


def run_worker(directory: Path, proto: onnx.ModelProto | None, feeds: dict, *, provider: str, warmup: int,
               iterations: int, profile: bool, label: str = "model", model: Any = None) -> dict[str, Any]:
    """One worker run in ``directory`` (created by the caller, a temporary one): returns its result,
    with ``events`` (the parsed profile) when ``profile``. ``proto`` None: reuse the model already there.

    ``provider="cpu"`` exists for the tests of the profile's format; nothing in pytest-trt times on it.
    """
    if proto is not None:
        _write_model(proto, directory / "model.onnx", model)
        arrays: dict[str, np.ndarray] = {str(k): np.asarray(v) for k, v in feeds.items()}
        np.savez(directory / "feeds.npz", **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as its bool flag
    (directory / "job.json").write_text(json.dumps({"provider": provider, "warmup": warmup, "iterations": iterations,
                                                    "profile": profile, "label": label}))
    (directory / "result.json").unlink(missing_ok=True)
    env = dict(os.environ)
    if profile:
        env["CUDA_LAUNCH_BLOCKING"] = "1"
    else:
        env.pop("CUDA_LAUNCH_BLOCKING", None)
    proc = subprocess.run([sys.executable, "-m", "pytest_trt.ledger.ort_worker", str(directory)], cwd=directory,
                          env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT, check=False)
    if proc.returncode != 0 or not (directory / "result.json").exists():
        said = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise OrtTimingError(f"ONNX Runtime {provider} timing of {label} failed: {said}")
    result = json.loads((directory / "result.json").read_text())
    if profile:
        path = Path(result["profile"])
        if directory.resolve() not in path.resolve().parents:
            raise OrtTimingError(f"ONNX Runtime wrote its profile outside the temporary directory: {path}")
        result["events"] = json.loads(path.read_text())
    return result


def profile_from_runs(proto: onnx.ModelProto, end_to_end: dict[str, Any], per_node: dict[str, Any] | None, *,
                      warmup: int, iterations: int, source: str = "onnxruntime-cuda") -> LayerProfile:
    """A :class:`~pytest_trt.layers.timing.LayerProfile` of two worker results: ``end_to_end`` (unprofiled
    runs) and ``per_node`` (the profiled ones, with ``events``; None: end to end only). ``source``
    names where the runs took place (the tests of the format pass their own: a CPU run is never
    ``onnxruntime-cuda``)."""
    profile = LayerProfile(source=source, unit="ONNX node", warmup=warmup, iterations=iterations, samples={},
                           end_to_end_ms=list(end_to_end["end_to_end_ms"]), device=end_to_end.get("device") or "")
    if source == "onnxruntime-cuda":
        profile.notes.append("ONNX Runtime CUDA, not TensorRT: the strongly typed realization node by node (graph "
                             "optimizations off: no fusion), per-node times from ONNX Runtime's profiler with "
                             "CUDA_LAUNCH_BLOCKING=1 (GPU time plus launch overhead per node)")
    if per_node is not None:
        times = read_ort_profile(per_node["events"], warmup=warmup)
        profile.samples, profile.providers = times.samples, times.providers
        profile.dtypes, profile.op_types = times.dtypes, times.op_types
        graph = {n.name for n in proto.graph.node}
        profile.runtime_nodes = [n for n in times.samples if n not in graph]
        on_cpu = [n for n, p in times.providers.items() if p and p != CUDA_PROVIDER]
        if on_cpu and source == "onnxruntime-cuda":
            profile.notes.append(f"{len(on_cpu)} node(s) ran on ONNX Runtime's CPU provider, not CUDA (flagged in "
                                 f"the rows): {', '.join(on_cpu[:5])}{', ...' if len(on_cpu) > 5 else ''}")
    return profile


def time_model(proto: onnx.ModelProto, feeds: dict, *, warmup: int = 10, iterations: int = 50,
               per_node: bool = True, label: str = "model", model: Any = None) -> LayerProfile:
    """A model (already realized) on ONNX Runtime CUDA: end-to-end latencies and, with ``per_node``,
    each node's time (see the module docstring). Raises :class:`OrtTimingError` when it cannot run."""
    reason = ort_cuda_reason()
    if reason:
        raise OrtTimingError(f"ONNX Runtime CUDA timing: {reason}")
    if iterations < 1 or warmup < 0:
        raise ValueError(f"iterations must be >= 1 and warmup >= 0, got {iterations} and {warmup}")
    with tempfile.TemporaryDirectory(prefix="pytest-trt-ort-timing-") as tmp:
        directory = Path(tmp)
        e2e = run_worker(directory, proto, feeds, provider="cuda", warmup=warmup, iterations=iterations,
                         profile=False, label=label, model=model)
        nodes = (run_worker(directory, None, feeds, provider="cuda", warmup=warmup, iterations=iterations,
                            profile=True, label=label) if per_node else None)
    return profile_from_runs(proto, e2e, nodes, warmup=warmup, iterations=iterations)


def time_plan(plan: PrecisionPlan, feeds: dict, *, warmup: int = 10, iterations: int = 50,
              per_node: bool = True) -> LayerProfile:
    """The plan's strongly typed realization timed on ONNX Runtime CUDA (:func:`time_model`)."""
    return time_model(realize_strong(plan), feeds, warmup=warmup, iterations=iterations, per_node=per_node,
                      label=f"{plan.model.label} [{plan.policy.describe()}]", model=plan.model)
