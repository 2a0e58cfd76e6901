"""The model stage: loading and checking ONNX models, node names, and ONNX type queries.

:mod:`~pytest_trt.model.load` (:class:`Model`, :func:`load_model`),
:mod:`~pytest_trt.model.names` (every node's canonical scoped name, module path and module
classes: :class:`NodeNames`, ``Model.names``), :mod:`~pytest_trt.model.functions` (ONNX local
functions inlined at load with scoped names), :mod:`~pytest_trt.model.onnx_typing` (ONNX type
inference and schema queries the plan relies on) and :mod:`~pytest_trt.model.testing_models`
(small deterministic ONNX models for tests). ``pytest_trt.model`` stays the public path of
:class:`Model` and :func:`load_model`.

The names are loaded on first use (PEP 562), so that :mod:`~pytest_trt.model.names` (standard
library only), which the plugin's pattern parsing imports, does not import onnx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover
    from .load import Model, load_model
    from .names import NodeName, NodeNames

_LAZY = {"Model": "load", "load_model": "load", "NodeName": "names", "NodeNames": "names"}

__all__ = ["Model", "NodeName", "NodeNames", "load_model"]


__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
