"""Deprecated: moved to :mod:`pytest_trt.reference.upcast` (the FP32 reference model of a model written in FP16/BF16).

This module re-exports what ``pytest_trt.upcast`` had public and warns ``DeprecationWarning``
once, when it is first imported; it goes in the next minor version. Import from
``pytest_trt.reference.upcast`` instead (CHANGELOG.md, "Deprecated").
"""

from __future__ import annotations

import warnings

from .reference.upcast import (
    NOTES_KEY,
    REFERENCE_KEY,
    UPCAST_VERSION,
    fp32_reference_model,
    needs_upcast,
    upcast_notes,
    upcast_to_fp32,
    widen_attribute_types,
)

__all__ = [
    "NOTES_KEY",
    "REFERENCE_KEY",
    "UPCAST_VERSION",
    "fp32_reference_model",
    "needs_upcast",
    "upcast_notes",
    "upcast_to_fp32",
    "widen_attribute_types",
]

warnings.warn(
    "pytest_trt.upcast is deprecated and goes in the next minor version: import from pytest_trt.reference.upcast",
    DeprecationWarning,
    stacklevel=2,
)
