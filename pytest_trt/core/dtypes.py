"""Precision names and their ONNX / numpy counterparts.

Kept free of heavy imports: the ONNX element-type numbers are spelled out here so the
plugin can parse options without importing onnx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UsageError
from .lazy import lazy_import

if TYPE_CHECKING:  # pragma: no cover
    import onnx
else:  # the plugin parses options with this module: onnx is imported on first use only
    onnx = lazy_import("onnx")

FP32, FP16, BF16 = "fp32", "fp16", "bf16"
PRECISIONS = (FP32, FP16, BF16)
LOW_PRECISIONS = (FP16, BF16)
#: The largest finite value of each low precision (BF16's is 0x7F7F; FP32's FLT_MAX rounds past it to inf).
LARGEST_FINITE = {FP16: 65504.0, BF16: 3.3895313892515355e38}

# onnx.TensorProto.DataType values
ELEM_FLOAT = 1
ELEM_FLOAT16 = 10
ELEM_DOUBLE = 11
ELEM_BFLOAT16 = 16
FLOAT_ELEM_TYPES = frozenset({ELEM_FLOAT, ELEM_FLOAT16, ELEM_DOUBLE, ELEM_BFLOAT16})

ELEM_OF_PRECISION = {FP32: ELEM_FLOAT, FP16: ELEM_FLOAT16, BF16: ELEM_BFLOAT16}
PRECISION_OF_ELEM = {ELEM_FLOAT: FP32, ELEM_FLOAT16: FP16, ELEM_BFLOAT16: BF16}

_ALIASES = {
    "fp32": FP32, "float32": FP32, "float": FP32, "f32": FP32,
    "fp16": FP16, "float16": FP16, "half": FP16, "f16": FP16,
    "bf16": BF16, "bfloat16": BF16,
}


def normalize_precision(value: str, *, what: str = "precision") -> str:
    """Return the canonical precision name (``fp32``, ``fp16`` or ``bf16``).

    >>> normalize_precision("FP16")
    'fp16'
    """
    key = str(value).strip().lower()
    if key not in _ALIASES:
        raise UsageError(
            f"unknown {what} {value!r}: use one of {', '.join(PRECISIONS)} "
            f"(aliases: float32, float16, half, bfloat16)"
        )
    return _ALIASES[key]


def elem_type_name(elem_type: int) -> str:
    """Readable name of an ONNX element type, e.g. ``FLOAT16``."""
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"elem_type {elem_type}"
