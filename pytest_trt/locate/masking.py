"""Masking values: constants a model uses to mean "minus infinity", which are meant to saturate.

Attention masks are commonly built as ``Where(mask, scores, c)`` or ``scores + c`` with
``c = -FLT_MAX`` (``torch.finfo(torch.float32).min``, as Hugging Face exports do) or a large
constant such as ``-1e9``. Such values are beyond FP16's range (and ``-FLT_MAX`` beyond BF16's):
in low precision they saturate (a realization clamps stored constants at the largest finite
value) or become ``-inf`` when a computation rounds them. Either way the softmax that follows
gives 0 there, which is what the mask means. A diagnosis that named them as an overflow or as
"NaN/Inf inside" would send the user to keep the mask FP32, which changes nothing.

**The rule.** An FP32 value ``v`` is a *masking value* for a low precision whose largest finite
value is ``R`` when ``|v| > R`` and ``|v|`` lies within :data:`MATCH` (0.1 %) of a *sentinel*:
``FLT_MAX``, or the magnitude of a float constant of the model (an initializer of at most
:data:`MAX_SCANNED` elements, a ``Constant`` node, a ``ConstantOfShape`` fill) that is itself
beyond ``R``. The 0.1 % absorbs what a mask
path adds to its sentinel (``scores + c``: activations are ordinary numbers, far below 0.1 % of
a value beyond the range). A computed value that overflows (a LayerNorm's ``Pow`` of an outlier
reaching 1.5e5) matches no sentinel and stays an overflow that matters. A tensor counts as a
mask only when *every* one of its out-of-range values is a masking value.

**Saturation.** Where the FP32 reference holds a masking value, the low-precision value is
*saturated* (the mask meaning what it means, not an error) when it has the same sign and is
either infinite or the precision's largest finite magnitude ``R`` itself (65504 in FP16): a
realization clamps ``-FLT_MAX`` to ``-R``, a computation rounds it to ``-inf``. Any other value
there (a finite number below ``R``, the opposite sign, NaN) is an error like any other, and so
is every value where the reference is not a masking value: a real overflow (FP32 beyond ``R``,
matching no sentinel) clamped to ``R`` or turned into ``inf`` is still reported.
:func:`saturation` is this rule; every comparison that allows for masks calls it.

Used by the range diagnosis (:mod:`pytest_trt.locate.ranges`: masks are not named as the overflow to
fix) and the layerwise comparison (:mod:`pytest_trt.locate.divergence`, and through it ``suggest``:
saturated elements are counted apart, not as NaN/Inf introduced nor as an error).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from onnx import AttributeProto, TensorProto, numpy_helper

from ..core import runstate

__all__ = ["FLT_MAX", "MATCH", "MAX_SCANNED", "is_masking", "saturation", "sentinels"]

#: The largest finite float32 value: ``torch.finfo(torch.float32).min`` is its negative.
FLT_MAX = float(np.finfo(np.float32).max)
#: Relative distance from a sentinel within which a value counts as that sentinel.
MATCH = 1e-3
#: Initializers with more elements than this are weights, not masks: they are not scanned
#: (a precomputed additive mask of 2048 x 2048 positions is within it).
MAX_SCANNED = 1 << 22

_FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE)
_CACHE_SIZE = 16


def sentinels(model: Any, limit: float) -> np.ndarray:
    """The sentinel magnitudes beyond ``limit`` of ``model`` (a :class:`~pytest_trt.model.Model`):
    FLT_MAX and every constant's magnitude beyond ``limit``, sorted, distinct."""
    key = (getattr(model, "sha256", "") or str(id(model)), float(limit))
    memo: dict[tuple[str, float], np.ndarray] = runstate.current().table("masking.sentinels")
    if key in memo:
        return memo[key]
    found = {FLT_MAX}
    graph = model.proto.graph if hasattr(model, "proto") else model.graph
    for array in _constant_arrays(graph, getattr(model, "weights", None)):
        if array.dtype.kind != "f" or array.size == 0:
            continue
        with np.errstate(invalid="ignore"):
            beyond = array[np.isfinite(array) & (np.abs(array) > limit)]
        found.update(float(v) for v in np.unique(np.abs(beyond.astype(np.float64)))[:64])
    result = np.array(sorted(found), dtype=np.float64)
    if len(memo) >= _CACHE_SIZE:  # one scan of the weights per model, a few models at a time
        memo.pop(next(iter(memo)))
    memo[key] = result
    return result


def is_masking(magnitudes: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """Elementwise: ``magnitudes`` (absolute FP32 values) that lie within :data:`MATCH` of a sentinel."""
    mags = np.asarray(magnitudes, dtype=np.float64)
    out = np.zeros(mags.shape, dtype=bool)
    for s in marks:
        out |= np.abs(mags - s) <= MATCH * s
    return out


def saturation(actual: np.ndarray, expected: np.ndarray, limit: float, marks: np.ndarray) -> np.ndarray:
    """Elementwise: where ``expected`` (FP32) holds a masking value beyond ``limit`` (the low
    precision's largest finite value) and ``actual`` (the low-precision result, same shape) holds
    the same sign's infinity or ``+-limit`` itself: the mask saturating as intended (module doc)."""
    a = np.asarray(actual, dtype=np.float64)
    r = np.asarray(expected, dtype=np.float64)
    out = np.zeros(r.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        candidates = (np.isfinite(r) & (np.abs(r) > limit) & (np.sign(a) == np.sign(r))
                      & (np.isinf(a) | (np.abs(a) == limit)))
    if np.any(candidates):
        out[candidates] = is_masking(np.abs(r[candidates]), marks)
    return out


def _constant_arrays(graph, weights: Any = None) -> Iterator[np.ndarray]:
    """Float constants one at a time (a weight's copy is dropped before the next is made). An
    initializer held by reference is read through the model's weight store (``weights``: mapped)."""
    for t in graph.initializer:
        if t.data_type in _FLOAT_TYPES and math.prod(t.dims) <= MAX_SCANNED:
            if t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL:
                if weights is not None and t.name in weights:
                    yield np.asarray(weights.array(t.name))
                continue
            yield numpy_helper.to_array(t)
    for node in graph.node:
        if node.op_type not in ("Constant", "ConstantOfShape") or node.domain not in ("", "ai.onnx"):
            continue
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR and attr.t.data_type in _FLOAT_TYPES:
                yield numpy_helper.to_array(attr.t)
            elif attr.type == AttributeProto.FLOAT:
                yield np.array([attr.f], dtype=np.float32)
            elif attr.type == AttributeProto.FLOATS:
                yield np.array(list(attr.floats), dtype=np.float32)
