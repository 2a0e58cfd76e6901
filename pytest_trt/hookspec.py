"""Deprecated: moved to :mod:`pytest_trt.glue.hookspec` (the plugin's hook specifications).

This module re-exports what ``pytest_trt.hookspec`` had public and warns ``DeprecationWarning``
once, when it is first imported; it goes in the next minor version. Import from
``pytest_trt.glue.hookspec`` instead (CHANGELOG.md, "Deprecated").
"""

from __future__ import annotations

import warnings

from .glue.hookspec import (
    pytest_trt_backends,
    pytest_trt_report_header,
    pytest_trt_report_test,
    pytest_trt_select_backend,
)

__all__ = [
    "pytest_trt_backends",
    "pytest_trt_report_header",
    "pytest_trt_report_test",
    "pytest_trt_select_backend",
]

warnings.warn(
    "pytest_trt.hookspec is deprecated and goes in the next minor version: import from pytest_trt.glue.hookspec",
    DeprecationWarning,
    stacklevel=2,
)
