"""Negative controls: configurations that must fail, declared so that only pytest-trt's own
verdict counts as caught (``xfail(strict=True, raises=...)``)."""

import pytest

from conftest import ENCODER, MODELS
from pytest_trt import AccuracyError, PrecisionError

OUTLIERS = {"hidden_states": {"count": 2, "magnitude": 400.0}}
ENC = dict(model=str(ENCODER), dims={"batch": 2, "sequence": 16}, val_range={"hidden_states": (-1.0, 1.0)})


@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="LayerNorm in FP16 overflows on outliers")
@pytest.mark.trt(**ENC, precision="fp16")
def test_layernorm_in_fp16_is_caught(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)


@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="BF16 LayerNorm fails a tight tolerance")
@pytest.mark.trt(**ENC, precision="bf16")
def test_layernorm_in_bf16_is_caught(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-3)


@pytest.mark.xfail(strict=True, raises=PrecisionError, reason="the plan lowers LayerNorm: the assertion must say so")
@pytest.mark.trt(**MODELS["bert14"], precision="fp16")
def test_lowered_layernorm_is_named(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
