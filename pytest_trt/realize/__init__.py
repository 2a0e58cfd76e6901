"""Realizations of a :class:`~pytest_trt.plan.PrecisionPlan`: one plan, three forms.

* :func:`realize_strong` - an ONNX model whose element types and Casts state the plan
  (TensorRT strong typing, the default from TensorRT 10.0 on; the only typing in 11.x and TensorRT-RTX);
* :func:`realize_emulation` - an all-FP32 ONNX model that rounds every low-precision
  tensor explicitly (backend ``emulate`` on ONNX Runtime CPU), derived from the strong one;
* :func:`weak_hints` - per-layer precision hints (TensorRT <= 10.x weak typing).

Submodules are imported lazily: importing this package imports neither onnx nor numpy.
"""

from __future__ import annotations

import importlib

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


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_trt.realize' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
