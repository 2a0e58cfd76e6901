"""Which timing source a ledger uses, and the one call that makes a ledger of an engine.

``timing`` (``timing=`` in the API, ``--trt-ledger-timing`` under pytest, ``--timing`` in the
console script):

* ``auto`` (default): the engine's own per-layer timing where it has one (TensorRT's
  ``IProfiler``, :meth:`~pytest_trt.backends.base.Engine.time_layers`), else ONNX Runtime's CUDA
  provider where this ONNX Runtime has it (:mod:`pytest_trt.ledger.ort_cuda`: the plan's
  strongly typed realization, not TensorRT), else none: the time column stays empty and says
  why (on ``emulate``: "CPU emulation computes everything in FP32: no GPU time");
* ``engine``: the engine's own timing, an error where it has none;
* ``onnxruntime-cuda``: ONNX Runtime CUDA, an error where it cannot run;
* ``off``: no timing (precision and evidence only).

A request that cannot be honoured is an error, never an empty column: only ``auto`` falls back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.choices import TIMING_CHOICES
from ..errors import BackendUnavailable, UsageError
from ..layers.report import engine_layers
from .join import build_ledger
from .ort_cuda import OrtTimingError, ort_cuda_reason, time_plan

if TYPE_CHECKING:  # pragma: no cover
    from ..backends.base import Engine
    from ..layers.timing import LayerProfile
    from .model import Ledger

__all__ = ["DEFAULT_ITERATIONS", "DEFAULT_WARMUP", "TIMING_CHOICES", "backend_timing_reason", "check_available",
           "check_timing", "engine_profile", "ledger_of", "measure"]

DEFAULT_WARMUP = 10
DEFAULT_ITERATIONS = 50


def check_timing(timing: str, source: str = "timing") -> str:
    """``timing`` when it is one of :data:`TIMING_CHOICES`, else a UsageError naming ``source``."""
    if timing not in TIMING_CHOICES:
        raise UsageError(f"{source}: unknown timing source {timing!r}; choose one of {', '.join(TIMING_CHOICES)}")
    return timing


def backend_timing_reason(backend) -> str | None:
    """``backend.layer_timing_reason()``; a backend object without it (a duck-typed one) has no timing."""
    ask = getattr(backend, "layer_timing_reason", None)
    if ask is None:
        return f"the {getattr(backend, 'name', '?')} backend has no per-layer timing of its engines"
    return ask()


def check_available(timing: str, backend, source: str = "timing") -> None:
    """Refuse, before anything is built, an explicit ``timing`` this run cannot honour (``backend``: the
    run's :class:`~pytest_trt.backends.base.Backend`)."""
    check_timing(timing, source)
    if timing == "engine":
        reason = backend_timing_reason(backend)
        if reason:
            raise UsageError(f"{source} engine: {reason}; use {source} auto (ONNX Runtime CUDA where it exists) "
                             f"or off")
    elif timing == "onnxruntime-cuda":
        reason = ort_cuda_reason()
        if reason:
            raise UsageError(f"{source} onnxruntime-cuda: {reason}")


def engine_profile(engine: Engine, feeds: dict, *, warmup: int, iterations: int, per_layer: bool) -> LayerProfile:
    """``engine.time_layers(...)`` labelled as the engine states its own timing (:attr:`Engine.timing_label`):
    a backend's times are never labelled as another's."""
    profile = engine.time_layers(feeds, warmup=warmup, iterations=iterations, per_layer=per_layer)
    label = engine.timing_label
    return profile if label is None or label == profile.stated_label else replace(profile, stated_label=label)


def measure(engine: Engine, feeds: dict, *, timing: str = "auto", warmup: int = DEFAULT_WARMUP,
            iterations: int = DEFAULT_ITERATIONS, per_layer: bool = True,
            source: str = "timing") -> tuple[LayerProfile | None, str | None]:
    """``(profile, None)`` measured by the chosen source, or ``(None, why there is no time)``."""
    check_timing(timing, source)
    if timing == "off":
        return None, f"{source} off"
    if warmup < 0 or iterations < 1:
        raise UsageError(f"warmup must be >= 0 and iterations >= 1, got warmup={warmup}, iterations={iterations}")
    engine_reason = engine.layer_timing_reason()
    if timing in ("auto", "engine") and engine_reason is None:
        return engine_profile(engine, feeds, warmup=warmup, iterations=iterations, per_layer=per_layer), None
    if timing == "engine":
        raise BackendUnavailable(f"{source}='engine': {engine_reason}")
    ort_reason = ort_cuda_reason()
    if ort_reason is None:
        try:
            return time_plan(engine.plan, feeds, warmup=warmup, iterations=iterations, per_node=per_layer), None
        except OrtTimingError as exc:
            if timing == "onnxruntime-cuda":
                raise
            ort_reason = exc.reason
    if timing == "onnxruntime-cuda":
        raise OrtTimingError(f"{source}='onnxruntime-cuda': {ort_reason}")
    return None, f"{engine_reason}; no ONNX Runtime CUDA timing either: {ort_reason}"


def ledger_of(engine: Engine, feeds: dict, *, timing: str = "auto", warmup: int = DEFAULT_WARMUP,
              iterations: int = DEFAULT_ITERATIONS, source: str = "timing") -> Ledger:
    """The ledger of ``engine``: its plan, its layer report, timed on ``feeds`` (see the module docstring).

    >>> ledger = ledger_of(engine, feeds)                 # doctest: +SKIP
    >>> print(ledger.table(top=10))                       # doctest: +SKIP
    """
    profile, reason = measure(engine, feeds, timing=timing, warmup=warmup, iterations=iterations, source=source)
    return build_ledger(engine.plan, engine_layers(engine), profile, time_reason=reason, backend=engine.backend_name)
