""""LayerNorm must stay FP32", written as tests that fail when it is violated.

The outlier regime (two features of magnitude 400) overflows FP16 inside a decomposed
LayerNorm (Pow of |x - mean| > 255.9). So the accuracy check fails if LayerNorm ran in
FP16, and `assert_precision` independently checks what the engine says it ran.
"""

import pytest

from conftest import ENCODER_DIMS, NORMAL, OUTLIERS
from pytest_trt import AccuracyError


@pytest.mark.trt(
    model="models/encoder_opset14.onnx", precision="fp16", keep_fp32=["*/LayerNorm/*", "op:Softmax"],
    dims=ENCODER_DIMS, val_range=NORMAL,
)
def test_layernorm_stays_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
    trt.assert_precision("op:Softmax", "fp32")
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)


@pytest.mark.xfail(raises=AccuracyError, strict=True,
                   reason="negative control: LayerNorm lowered to FP16 must fail on outlier activations")
@pytest.mark.trt(
    model="models/encoder_opset14.onnx", precision="fp16", keep_fp32=["op:Softmax"],
    dims=ENCODER_DIMS, val_range=NORMAL,
)
def test_negative_control_layernorm_in_fp16_is_caught(trt):
    # If this ever passes (XPASS), pytest-trt stopped catching an FP16 LayerNorm: strict xfail fails the run.
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
