"""Deprecated: moved to :mod:`pytest_trt.reference.baseline` (the FP32 baseline on ONNX Runtime).

This module re-exports what ``pytest_trt.baseline`` had public and warns ``DeprecationWarning``
once, when it is first imported; it goes in the next minor version. Import from
``pytest_trt.reference.baseline`` instead (CHANGELOG.md, "Deprecated").
"""

from __future__ import annotations

import warnings

from .reference.baseline import (
    BASELINES,
    FALLBACK_SINK,
    PROVIDERS,
    WeightFedSession,
    cached_session,
    check_cuda_session,
    check_runtime,
    cuda_device_part,
    cuda_placement,
    feeds_digest,
    float_tensor_names,
    fp32_baseline,
    fp32_intermediates,
    install_hint,
    make_session,
    node_placement,
    normalize_baseline,
    onnxruntime_version,
    reference_label,
    reference_model,
    reference_outputs,
    release_heavy_sessions,
    run_session,
    session_source,
    warn_placement,
    with_outputs,
)

__all__ = [
    "BASELINES",
    "FALLBACK_SINK",
    "PROVIDERS",
    "WeightFedSession",
    "cached_session",
    "check_cuda_session",
    "check_runtime",
    "cuda_device_part",
    "cuda_placement",
    "feeds_digest",
    "float_tensor_names",
    "fp32_baseline",
    "fp32_intermediates",
    "install_hint",
    "make_session",
    "node_placement",
    "normalize_baseline",
    "onnxruntime_version",
    "reference_label",
    "reference_model",
    "reference_outputs",
    "release_heavy_sessions",
    "run_session",
    "session_source",
    "warn_placement",
    "with_outputs",
]

warnings.warn(
    "pytest_trt.baseline is deprecated and goes in the next minor version: import from pytest_trt.reference.baseline",
    DeprecationWarning,
    stacklevel=2,
)
