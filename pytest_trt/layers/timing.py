"""How long each engine layer (or ONNX node) took: measured samples and their statistics.

A :class:`LayerProfile` is what a timing source measured on real GPU kernels, in one shape
whatever the source:

* ``tensorrt``: TensorRT's ``IProfiler.report_layer_time(layer_name, ms)``, one time per
  *engine layer* and iteration (:mod:`pytest_trt.backends.tensorrt.profiler`); the layer names
  are the engine inspector's, so the ONNX nodes of a layer come from its ``Metadata``;
* ``onnxruntime-cuda``: ONNX Runtime's own profiler on its CUDA provider, one time per ONNX
  *node* of the strongly typed realization and iteration (:mod:`pytest_trt.layers.ort_profile`,
  run by :mod:`pytest_trt.ledger.ort_cuda`); not TensorRT.

Both keep every iteration's sample (``samples[name][i]``, milliseconds), so the statistics are
the median and spread over iterations, never one run; ``end_to_end_ms`` are latencies of whole
runs measured without the per-layer instrumentation, so the sum of the layer medians against
the end-to-end median shows what the profiling itself added (:meth:`LayerProfile.overhead`).

This module holds data and arithmetic only: nothing here runs anything, and a CPU timing is
never made into a profile (the ledger's time column then stays empty with its reason).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from ..core.jsonsafe import json_number

__all__ = ["LayerProfile", "SampleStats", "sample_stats"]

#: the timing sources of this package, and how every report labels them; an engine that times its own
#: layers states its label (:attr:`Engine.timing_label <pytest_trt.backends.base.Engine.timing_label>`),
#: which the profile then carries (:attr:`LayerProfile.stated_label`)
SOURCE_LABELS = {
    "tensorrt": "TensorRT IProfiler (report_layer_time)",
    "onnxruntime-cuda": "ONNX Runtime CUDA, not TensorRT",
}


@dataclass(frozen=True)
class SampleStats:
    """Median and spread of one name's samples (milliseconds)."""

    median: float
    mean: float
    min: float
    max: float
    #: 25th and 75th percentiles (the interquartile range is ``q3 - q1``)
    q1: float
    q3: float
    count: int

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0.1 = the middle half within 10 %)."""
        return (self.q3 - self.q1) / self.median if self.median > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"median_ms": json_number(self.median, 6), "mean_ms": json_number(self.mean, 6),
                "min_ms": json_number(self.min, 6), "max_ms": json_number(self.max, 6),
                "q1_ms": json_number(self.q1, 6), "q3_ms": json_number(self.q3, 6), "count": self.count,
                "spread": json_number(self.spread, 4)}


def sample_stats(samples) -> SampleStats | None:
    """Statistics of a list of millisecond samples; None for no samples."""
    values = sorted(float(v) for v in samples)
    if not values:
        return None
    if len(values) == 1:
        q1 = q3 = values[0]
    else:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return SampleStats(median=statistics.median(values), mean=statistics.fmean(values), min=values[0],
                       max=values[-1], q1=q1, q3=q3, count=len(values))


@dataclass
class LayerProfile:
    """Per-layer (or per-node) times of one engine, measured over ``iterations`` runs after ``warmup``.

    Attributes:
        source: ``tensorrt`` or ``onnxruntime-cuda`` (:data:`SOURCE_LABELS`).
        unit: what one name is: ``engine layer`` (TensorRT) or ``ONNX node`` (ONNX Runtime).
        samples: name -> one time per iteration (ms), in execution order of the first iteration.
        end_to_end_ms: latencies of whole runs without the per-layer instrumentation.
        providers: ONNX Runtime: node -> the execution provider that ran it.
        dtypes: ONNX Runtime: node -> its kernel's output element types on that run.
        op_types: ONNX Runtime: node -> its op type (for nodes the model lacks: the realization's Casts).
        runtime_nodes: ONNX Runtime: timed nodes that ONNX Runtime added itself (in neither the model nor
            the realization, e.g. its ``InsertedPrecisionFreeCast_*`` nodes).
        device: the GPU it ran on, as text.
        notes: how it was measured, what it cannot show.
        stated_label: the label the engine that measured it states for its own timing
            (:attr:`Engine.timing_label <pytest_trt.backends.base.Engine.timing_label>`); None: the
            label of ``source`` in :data:`SOURCE_LABELS`.
    """

    source: str
    unit: str
    warmup: int
    iterations: int
    samples: dict[str, list[float]]
    end_to_end_ms: list[float] = field(default_factory=list)
    providers: dict[str, str] = field(default_factory=dict)
    dtypes: dict[str, list[str]] = field(default_factory=dict)
    op_types: dict[str, str] = field(default_factory=dict)
    runtime_nodes: list[str] = field(default_factory=list)
    device: str = ""
    notes: list[str] = field(default_factory=list)
    stated_label: str | None = None

    @property
    def label(self) -> str:
        """How every report names this timing source: the measuring engine's own label where it stated one."""
        return self.stated_label or SOURCE_LABELS.get(self.source, self.source)

    def stats(self, name: str) -> SampleStats | None:
        """Median and spread of one layer's (node's) samples; None when it was never reported."""
        return sample_stats(self.samples.get(name, ()))

    def median(self, name: str) -> float | None:
        s = self.stats(name)
        return None if s is None else s.median

    def total_ms(self) -> float:
        """The sum of every layer's median: the time the profile accounts for in one run."""
        return sum(s.median for s in (self.stats(n) for n in self.samples) if s is not None)

    def end_to_end(self) -> SampleStats | None:
        """Whole-run latency statistics (None when not measured)."""
        return sample_stats(self.end_to_end_ms)

    def overhead(self) -> float | None:
        """``sum of layer medians / end-to-end median - 1``: what per-layer timing adds (or, when
        negative, what it does not see: gaps between kernels, copies); None without both figures."""
        e2e = self.end_to_end()
        total = self.total_ms()
        if e2e is None or e2e.median <= 0 or total <= 0:
            return None
        return total / e2e.median - 1.0

    def to_json(self) -> dict[str, Any]:
        e2e = self.end_to_end()
        overhead = self.overhead()
        return {"source": self.source, "label": self.label, "unit": self.unit, "warmup": self.warmup,
                "iterations": self.iterations, "device": self.device,
                "total_ms": json_number(self.total_ms(), 6),
                "end_to_end": e2e.to_json() if e2e is not None else None,
                "overhead": None if overhead is None else json_number(overhead, 4),
                "notes": list(self.notes)}

    def summary(self) -> str:
        """``sum of 12 engine layer medians 1.23 ms vs end-to-end median 1.10 ms (+12 %: profiling overhead)``."""
        e2e = self.end_to_end()
        text = f"sum of {len(self.samples)} {self.unit} medians {self.total_ms():.4g} ms"
        if e2e is None:
            return text + " (end-to-end latency not measured)"
        overhead = self.overhead()
        text += f" vs end-to-end median {e2e.median:.4g} ms"
        if overhead is not None:
            what = "profiling overhead" if overhead >= 0 else "time between the timed kernels"
            text += f" ({overhead:+.0%}: {what})"
        return text
