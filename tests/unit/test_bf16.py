"""The one FP32 -> BF16 conversion (realization and TensorRT runner), bit-checked against ml_dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pytest_trt.backends.tensorrt import runner as trt_runner
from pytest_trt.realize.strong import BF16_MAX, bf16_bits_to_fp32, to_bf16_bits

MAX_BITS = 0x7F7F  # the largest finite bfloat16


def _sample() -> np.ndarray:
    """Every bfloat16 pattern as the upper half, with lower halves at and around the rounding tie,
    plus the float32 extremes: 393,000+ float32 values incl. NaNs (quiet, signalling, payloads),
    infinities, zeros, subnormals, finfo(float32).min/max/tiny."""
    upper = np.arange(1 << 16, dtype=np.uint32) << 16
    lower = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234], dtype=np.uint32)
    bits = (upper[:, None] | lower[None, :]).ravel()
    fi = np.finfo(np.float32)
    extra = np.array([fi.min, fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal,
                      np.inf, -np.inf, 0.0, -0.0, BF16_MAX, -BF16_MAX, np.nextafter(np.float32(BF16_MAX), np.inf)],
                     dtype=np.float32).view(np.uint32)
    return np.concatenate([bits, extra]).view(np.float32)


def test_bits_equal_ml_dtypes_except_saturation():
    x = _sample()
    with np.errstate(invalid="ignore", over="ignore"):
        expected = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    ours, clamped = to_bf16_bits(x)
    saturated = np.isfinite(x) & ~np.isfinite(expected.view(ml_dtypes.bfloat16).astype(np.float32))
    # finite float32 values that round past the bfloat16 range: ml_dtypes gives +-inf, we saturate
    assert saturated.sum() > 0 and (np.abs(x[saturated]) >= BF16_MAX).all()
    assert (ours[saturated] == (np.signbit(x[saturated]).astype(np.uint16) << 15 | MAX_BITS)).all()
    same = ~saturated
    mismatch = np.flatnonzero(ours[same] != expected[same])
    assert mismatch.size == 0, [(hex(int(x[same].view(np.uint32)[i])), hex(int(ours[same][i])),
                                 hex(int(expected[same][i]))) for i in mismatch[:5]]
    nan = np.isnan(x)
    assert nan.sum() > 1000 and np.isnan(bf16_bits_to_fp32(ours[nan])).all()
    sub = (x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)
    assert sub.sum() > 1000  # subnormals are in the sample and matched ml_dtypes above


def test_float32_extremes():
    fi = np.finfo(np.float32)
    x = np.array([fi.min, fi.max, np.inf, -np.inf, np.nan], dtype=np.float32)
    bits, clamped = to_bf16_bits(x)
    assert [hex(int(b)) for b in bits] == ["0xff7f", "0x7f7f", "0x7f80", "0xff80", "0x7fc0"]
    assert clamped == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_runner_uses_the_same_conversion(dtype):
    x = _sample()
    with np.errstate(invalid="ignore", over="ignore"):
        x = x[np.isfinite(x) | np.isnan(x)].astype(dtype) if dtype != np.float32 else x
    with np.errstate(invalid="ignore", over="ignore"):
        assert np.array_equal(trt_runner.f32_to_bf16(x), to_bf16_bits(x)[0])
    bits = np.arange(1 << 16, dtype=np.uint16)
    assert np.array_equal(trt_runner.bf16_to_f32(bits).view(np.uint32),
                          bits.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32))
