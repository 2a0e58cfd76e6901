"""The model stage: loading and checking ONNX models, and ONNX type queries.

:mod:`~pytest_trt.model.load` (:class:`Model`, :func:`load_model`),
:mod:`~pytest_trt.model.onnx_typing` (ONNX type inference and schema queries the plan relies
on) and :mod:`~pytest_trt.model.testing_models` (small deterministic ONNX models for tests).
``pytest_trt.model`` stays the public path of :class:`Model` and :func:`load_model`.
"""

from __future__ import annotations

from .load import Model, load_model

__all__ = ["Model", "load_model"]
