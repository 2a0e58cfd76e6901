"""Numeric conversion of stored values, and where converted weights go in a weight set.

The one FP32 -> FP16 and FP32 -> BF16 conversion of pytest-trt (saturating, never the 1e4
clamp of other tools; BF16 rounds to nearest even): realizations, weight sets and the
TensorRT runner's BF16 feeds all use these functions.

A *weight set* holds every externally stored float initializer of a model converted to one
precision, written once per model and precision and shared by every policy's realization
(:mod:`pytest_trt.realize.weight_sets`). Its layout is a pure function of the model's structure
(:func:`set_layout`): initializers in graph order, each at an offset aligned to
:data:`ALIGN`, so a realization can point at a slot before the set exists.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import runstate
from ...core.dtypes import BF16, ELEM_BFLOAT16, ELEM_FLOAT, ELEM_FLOAT16, ELEM_OF_PRECISION, FP16, FP32
from ...core.lazy import lazy_import

if TYPE_CHECKING:  # pragma: no cover
    import onnxruntime as ort
else:
    ort = lazy_import("onnxruntime", extra="cpu")

__all__ = [
    "ALIGN", "BF16_MAX", "FP16_MAX", "SET_FILE", "Slot", "bf16_bits_to_fp32", "convert_values", "itemsize",
    "round_to", "set_file_name", "set_layout", "to_bf16_bits", "to_fp16", "widen_to_fp32",
]

FP16_MAX = 65504.0
BF16_MAX = 3.3895313892515355e38  # 0x7F7F: the largest finite bfloat16
#: alignment of every tensor in a weight set (onnx.save_model's allocation granularity: ONNX
#: Runtime and TensorRT map such files)
ALIGN = 65536
#: the file of a weight set inside its cache entry; its name is also the ``location`` realizations write
SET_FILE = "weights.{precision}.bin"
_ITEMSIZE = {ELEM_FLOAT: 4, ELEM_FLOAT16: 2, ELEM_BFLOAT16: 2}


def set_file_name(precision: str) -> str:
    """``weights.fp16.bin``: the data file of the ``precision`` weight set."""
    return SET_FILE.format(precision=precision)


def itemsize(elem_type: int) -> int:
    """Bytes per element of a float element type this module converts (FP32, FP16, BF16)."""
    return _ITEMSIZE[elem_type]


def to_fp16(values: np.ndarray) -> tuple[np.ndarray, int]:
    """FP32 -> FP16, saturating finite values at +-65504 (never the 1e4 clamp of other tools).

    Returns the array and the number of clamped values. inf and NaN stay what they are.
    """
    values = np.asarray(values, dtype=np.float32)
    over = np.isfinite(values) & (np.abs(values) > FP16_MAX)
    n_over = int(over.sum())
    if not n_over:  # the common case: no temporary of the array's size
        return values.astype(np.float16), 0
    clamped = np.where(over, np.sign(values) * FP16_MAX, values)
    return clamped.astype(np.float16), n_over


def to_bf16_bits(values: np.ndarray) -> tuple[np.ndarray, int]:
    """FP32 -> BF16 bit patterns (uint16), round to nearest even, saturating finite values.

    Without saturation ``finfo(float32).min`` (a common attention-mask fill) would round
    to -inf; it becomes the largest finite bfloat16 instead. Returns the bits and the
    number of clamped values. The one FP32 -> BF16 conversion of pytest-trt (the TensorRT
    runner feeds BF16 inputs through it too); bit for bit ``ml_dtypes.bfloat16`` except that
    saturation (tests/unit/test_bf16.py).
    """
    values = np.asarray(values, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        over = np.isfinite(values) & (np.abs(values) > BF16_MAX)
        n_over = int(over.sum())
        if n_over:
            values = np.where(over, np.copysign(np.float32(BF16_MAX), values), values).astype(np.float32)
    bits = values.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    # (uint32 arithmetic: a value near 0xFFFFFFFF wraps only for NaN patterns, fixed below)
    rounded = rounded.astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():  # NaN stays NaN (rounding could carry it into inf): the canonical quiet NaN, sign kept,
        # bit for bit what ml_dtypes.bfloat16 gives
        rounded[nan] = ((bits[nan] >> 16).astype(np.uint16) & 0x8000) | 0x7FC0
    return rounded, n_over


def bf16_bits_to_fp32(bits: np.ndarray) -> np.ndarray:
    """BF16 bit patterns -> FP32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_to(values: np.ndarray, precision: str) -> np.ndarray:
    """FP32 values rounded through ``precision`` and back (what a low-precision store keeps)."""
    if precision == FP32:
        return np.asarray(values, dtype=np.float32)
    if precision == FP16:
        return to_fp16(values)[0].astype(np.float32)
    return bf16_bits_to_fp32(to_bf16_bits(values)[0])


def widen_to_fp32(raw: np.ndarray, elem_type: int) -> np.ndarray:
    """FP32 values of stored bytes (``raw``: uint8) of a float element type (FP32/FP16/BF16)."""
    if elem_type == ELEM_FLOAT:
        return raw.view(np.float32)
    fast = _ort_widen(raw, elem_type)
    if fast is not None:
        return fast
    if elem_type == ELEM_FLOAT16:
        return raw.view(np.float16).astype(np.float32)
    return bf16_bits_to_fp32(raw.view(np.uint16))


def convert_values(raw: np.ndarray, source_elem: int, precision: str) -> tuple[np.ndarray, int]:
    """Stored bytes of ``source_elem`` converted to ``precision``: (uint8 bytes of the result, clamped count)."""
    if precision in (FP16, BF16) and source_elem == ELEM_FLOAT:
        fast = _ort_narrow(raw.view(np.float32), precision)
        if fast is not None:
            return fast.view(np.uint8), 0
    values = widen_to_fp32(raw, source_elem)
    if precision == FP32:
        return np.ascontiguousarray(values, dtype=np.float32).view(np.uint8), 0
    if precision == FP16:
        half, clamped = to_fp16(values)
        return half.view(np.uint8), clamped
    bits, clamped = to_bf16_bits(values)
    return bits.view(np.uint8), clamped


# ONNX Runtime's Cast converts FP32 <-> FP16 with MLAS's vector code: measured here 2-5x numpy's
# astype (numpy 2.4, onnxruntime 1.32, 2 loaded cores: 200-800 vs 50-200 M elements/s). Converting
# a 1.6 GB model's weights is the largest part of a first FP16 realization, so weight sets and
# bindings use it when ONNX Runtime is installed (it is, wherever a realization runs); the numpy
# functions above are the reference (tests/unit/test_weights.py checks they agree bit for bit).
_CASTERS = "weights.casters"


def _caster(kind: str) -> Any:
    """A cached ONNX Runtime session converting a 1-D tensor: ``"fp16"``/``"bf16"`` (FP32 -> FP16/BF16, and the
    largest magnitude) or ``"widen10"``/``"widen16"`` (FP16/BF16 -> FP32); None without ONNX Runtime."""
    table: dict = runstate.current().table(_CASTERS)
    if kind in table:
        return table[kind]
    try:
        from onnx import TensorProto, helper  # (onnx is a dependency: imported with the first conversion)

        so = ort.SessionOptions()
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.log_severity_level = 4
        # no arena: converted weights are handed out as numpy arrays and must go back to the system when
        # dropped (an arena would keep a big model's whole converted size for the rest of the run)
        so.enable_cpu_mem_arena = False
        if kind in (FP16, BF16):  # the cast, and the largest magnitude (to saturate, or NaN: the exact path)
            elem = TensorProto.FLOAT16 if kind == FP16 else TensorProto.BFLOAT16
            nodes = [helper.make_node("Cast", ["x"], ["y"], to=elem),
                     helper.make_node("Abs", ["x"], ["a"]),
                     helper.make_node("ReduceMax", ["a"], ["m"], keepdims=0)]
            graph = helper.make_graph(nodes, f"to_{kind}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                                      [helper.make_tensor_value_info("y", elem, ["n"]),
                                       helper.make_tensor_value_info("m", TensorProto.FLOAT, [])])
        else:
            elem = TensorProto.FLOAT16 if kind == "widen10" else TensorProto.BFLOAT16
            graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], kind,
                                      [helper.make_tensor_value_info("x", elem, ["n"])],
                                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception:  # ONNX Runtime missing or unusable: numpy does it (slower, same values)
        session = None
    table[kind] = session
    return session


def _ort_narrow(values: np.ndarray, precision: str) -> np.ndarray | None:
    """FP16 values, or BF16 bit patterns (uint16), by ONNX Runtime; None when a value must saturate or is
    not finite (ONNX Runtime's Cast rounds to nearest even like :func:`to_fp16` / :func:`to_bf16_bits`, but
    overflows to inf instead of saturating, and its NaN bits may differ: the exact path handles those)."""
    session = _caster(precision) if values.size else None
    if session is None:
        return None
    flat = np.ascontiguousarray(values).reshape(-1)
    if precision == FP16:
        out, largest = session.run(None, {"x": flat})
    else:  # numpy has no bfloat16: read the bits out of the OrtValue (copied: ONNX Runtime owns them)
        y, m = session.run_with_ort_values(["y", "m"], {"x": ort.OrtValue.ortvalue_from_numpy(flat)})
        out = np.ctypeslib.as_array((ctypes.c_uint16 * flat.size).from_address(y.data_ptr())).copy()
        largest = m.numpy()
    if not float(largest) <= (FP16_MAX if precision == FP16 else BF16_MAX):
        return None
    return out.reshape(values.shape)


def _ort_widen(raw: np.ndarray, elem_type: int) -> np.ndarray | None:
    session = _caster(f"widen{elem_type}") if raw.size and elem_type in (ELEM_FLOAT16, ELEM_BFLOAT16) else None
    if session is None:
        return None
    bits = np.ascontiguousarray(raw).view(np.uint16)
    if elem_type == ELEM_FLOAT16:
        return session.run(None, {"x": bits.view(np.float16)})[0]
    value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, ELEM_BFLOAT16)
    return session.run(None, {"x": value})[0]


@dataclass(frozen=True)
class Slot:
    """Where one converted initializer sits in a weight set's file."""

    name: str
    source_elem: int
    offset: int
    length: int


def set_layout(tensors, precision: str) -> dict[str, Slot]:
    """The layout of the ``precision`` weight set of a model: ``{initializer: Slot}``.

    ``tensors``: the model's externally stored initializers (``onnx.TensorProto`` structures),
    in graph order. Float initializers of another precision get a slot each; the others none.
    """
    target = ELEM_OF_PRECISION[precision]
    out: dict[str, Slot] = {}
    offset = 0
    for t in tensors:
        if t.data_type not in _ITEMSIZE or t.data_type == target:
            continue
        offset += -offset % ALIGN
        n = 1
        for d in t.dims:
            n *= int(d)
        length = n * _ITEMSIZE[target]
        out[t.name] = Slot(t.name, t.data_type, offset, length)
        offset += length
    return out
