"""Low-precision accuracy of the encoder against the FP32 ONNX Runtime baseline.

Run with `pytest example_suite --trt-fp16` or `--trt-bf16`: tests that do not pin a
precision use the session's, and the tolerances are given per precision (the plan's low
precision picks the entry), so the same tests hold under both. LayerNorm and Softmax stay
FP32, as deployed.
"""

import pytest

from conftest import ENCODER_DIMS, NORMAL, OUTLIERS

KEEP = ["*/LayerNorm/*", "op:Softmax"]

# Per precision: FP16 keeps 11 bits of mantissa, BF16 8 (its errors are 8x larger), so one number
# cannot fit both. A precision without an entry (FP32 under a plain `pytest`) uses its default.
ATOL = {"fp16": 1e-2, "bf16": 5e-2}

pytestmark = pytest.mark.trt(
    model="models/encoder_opset14.onnx", keep_fp32=KEEP, dims=ENCODER_DIMS, val_range=NORMAL, atol=ATOL,
)


def test_encoder_accuracy(trt):
    # Per precision, then per output: last_hidden_state is LayerNorm-normalised (O(1) values).
    trt.check(rtol={"fp16": {"last_hidden_state": 1e-2}, "bf16": {"last_hidden_state": 5e-2}})


def test_encoder_accuracy_with_outlier_features(trt):
    trt.check(trt.feeds(outliers=OUTLIERS))


@pytest.mark.trt(model="models/encoder_opset17.onnx", keep_fp32=["op:LayerNormalization", "op:Softmax"])
def test_encoder_opset17_accuracy(trt):
    trt.check()  # the module's per-precision atol; rtol: the precision's default


@pytest.mark.trt(precision="fp32")
def test_encoder_pinned_fp32_matches_baseline(trt):
    # Pinned to FP32 whatever --trt-fp16 says: the engine must match ONNX Runtime to FP32 rounding.
    result = trt.check()
    assert trt.plan.low_precision is None
    assert result.passed


@pytest.mark.trt(precision="bf16")
def test_encoder_bf16(trt):
    # BF16 keeps FP32's exponent range (no overflow) but has 8 bits of mantissa: wider tolerances.
    trt.check(trt.feeds(outliers=OUTLIERS), rtol=5e-2, atol=5e-2)
