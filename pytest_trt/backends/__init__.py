"""Backends turn a PrecisionPlan into a runnable Engine.

``emulate`` (ONNX Runtime CPU, precision emulated by rounding), ``tensorrt`` and
``tensorrt-rtx`` (through Polygraphy). See :mod:`pytest_trt.backends.base`.
"""

from ..core.choices import BACKEND_CHOICES
from .base import (
    Backend,
    BuildConfig,
    Engine,
    get_backend,
    select_backend,
)

__all__ = ["BACKEND_CHOICES", "Backend", "BuildConfig", "Engine", "get_backend", "select_backend"]
