"""Realizations of a :class:`~pytest_trt.plan.PrecisionPlan`: one plan, three forms.

* :func:`realize_strong` - an ONNX model whose element types and Casts state the plan
  (TensorRT strong typing, the default from TensorRT 10.0 on; the only typing in 11.x and TensorRT-RTX);
* :func:`realize_emulation` - an all-FP32 ONNX model that rounds every low-precision
  tensor explicitly (backend ``emulate`` on ONNX Runtime CPU), derived from the strong one;
* :func:`weak_hints` - per-layer precision hints (TensorRT <= 10.x weak typing).

Submodules are imported lazily: importing this package imports neither onnx nor numpy.
"""

from __future__ import annotations

from ..core.lazy import lazy_attributes

_LAZY = {
    "realize_strong": "pytest_trt.realize.strong",
    "build_strong": "pytest_trt.realize.strong",
    "realization_notes": "pytest_trt.realize.strong",
    "round_to": "pytest_trt.realize.strong",
    "realize_emulation": "pytest_trt.realize.emulation",
    "weak_hints": "pytest_trt.realize.weak",
    "WeakHints": "pytest_trt.realize.weak",
}

__all__ = list(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__():
    return sorted(__all__)
