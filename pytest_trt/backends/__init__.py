"""Backends turn a PrecisionPlan into a runnable Engine.

``emulate`` (ONNX Runtime CPU, precision emulated by rounding), ``tensorrt`` and
``tensorrt-rtx`` (the TensorRT API, :mod:`pytest_trt.backends.tensorrt`), and the backends
plugins register (:func:`register_backend`, or the ``pytest_trt_backends`` hook). What a
backend answers about itself (disclaimer, GPU, layer evidence, layerwise engine) is listed in
:mod:`pytest_trt.backends.base`.
"""

from ..core.choices import BACKEND_CHOICES
from .base import (
    Backend,
    BuildConfig,
    Engine,
    get_backend,
    register_backend,
    select_backend,
    unregister_backend,
)

__all__ = ["BACKEND_CHOICES", "Backend", "BuildConfig", "Engine", "get_backend", "register_backend", "select_backend",
           "unregister_backend"]
