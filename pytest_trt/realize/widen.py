"""FP32 versions of what picks a low float type inside a node: its attributes.

Some ops choose their float output type by an attribute rather than an input
(ConstantOfShape's ``value`` tensor, EyeLike/Random* ``dtype``, DequantizeLinear
``output_dtype``). The FP32 reference of a model (:mod:`pytest_trt.reference.upcast`) and the
emulation graph (:mod:`pytest_trt.realize.emulation`) both widen them to FP32.
"""

from __future__ import annotations

import onnx
from onnx import numpy_helper

from ..core.dtypes import ELEM_BFLOAT16, ELEM_FLOAT, ELEM_FLOAT16
from .strong import tensor_to_fp32

#: the low float element types an attribute can pick
LOW_FLOATS = (ELEM_FLOAT16, ELEM_BFLOAT16)

#: ops whose attribute (not an input) picks the float output type -> the attribute name
DTYPE_ATTRS = {
    "EyeLike": "dtype", "RandomNormal": "dtype", "RandomUniform": "dtype", "RandomNormalLike": "dtype",
    "RandomUniformLike": "dtype", "Bernoulli": "dtype", "DequantizeLinear": "output_dtype",
}


def widen_attribute_types(node) -> bool:
    """Make an op whose attribute picks a low float output type (ConstantOfShape's value,
    EyeLike/Random* ``dtype``, DequantizeLinear ``output_dtype``) produce FP32 instead.
    Returns True if the node changed. Used by the upcast (:mod:`pytest_trt.reference.upcast`) and by the emulation graph."""
    if node.domain not in ("", "ai.onnx"):
        return False
    changed = False
    if node.op_type == "ConstantOfShape":
        for attr in node.attribute:
            if attr.name == "value" and attr.t.data_type in LOW_FLOATS:
                attr.t.CopyFrom(widened_tensor(attr.t, attr.t.name))
                changed = True
    name = DTYPE_ATTRS.get(node.op_type)
    if name is not None:
        for attr in node.attribute:
            if attr.name == name and attr.i in LOW_FLOATS:
                attr.i = ELEM_FLOAT
                changed = True
    return changed


def widened_tensor(tensor, name: str) -> onnx.TensorProto:
    """An FP32 copy of a float TensorProto (FP32/FP16/BF16), named ``name``."""
    return numpy_helper.from_array(tensor_to_fp32(tensor), name)
