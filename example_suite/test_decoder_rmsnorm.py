""""Every RMSNorm stays FP32", for a decoder exported by today's default exporter.

`models/decoder_dynamo.onnx` is a tiny Llama exported with `torch.onnx.export(..., dynamo=True)`
(torch 2.13): its nodes are named `node_pow_1`, `node_rsqrt`, ... and their modules and module
classes are in the node metadata, so the rule is written with the class, whatever the module
paths are called: `class:*RMSNorm` (every module whose class name ends in RMSNorm).

Token ids 248..255 carry outlier channels of a few hundred in their embedding rows, as the
hidden states of large trained LLMs do (see make_decoder.py). An RMSNorm computed in FP16
overflows there (its Pow squares |x| > 255.9 past 65504), so the negative control below fails
for the right reason. BF16 keeps FP32's exponent range and does not overflow: the control pins
FP16. The first test runs in the session's precision (`--trt-fp16` or `--trt-bf16`).
"""

import pytest

from pytest_trt import AccuracyError

RMSNORM = "class:*RMSNorm"
DECODER_DIMS = {"batch": 2, "sequence": 16}
ORDINARY_TOKENS = {"input_ids": (0, 247), "attention_mask": (1, 1)}
OUTLIER_TOKENS = {"input_ids": (248, 255), "attention_mask": (1, 1)}


@pytest.mark.trt(model="models/decoder_dynamo.onnx", keep_fp32=[RMSNORM], dims=DECODER_DIMS,
                 val_range=ORDINARY_TOKENS)
def test_every_rmsnorm_stays_fp32(trt):
    # 5 RMSNorms (2 per layer and the final norm), 7 nodes each: Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul, Mul
    assert len(trt.plan.match(RMSNORM)) == 35
    trt.assert_precision(RMSNORM, "fp32")
    trt.check()
    trt.check(trt.feeds(val_range=OUTLIER_TOKENS))


@pytest.mark.xfail(raises=AccuracyError, strict=True,
                   reason="negative control: an FP16 RMSNorm must fail on outlier hidden states (pinned fp16: "
                          "BF16 does not overflow)")
@pytest.mark.trt(model="models/decoder_dynamo.onnx", precision="fp16", dims=DECODER_DIMS, val_range=ORDINARY_TOKENS)
def test_negative_control_rmsnorm_in_fp16_is_caught(trt):
    # If this ever passes (XPASS), pytest-trt stopped catching an FP16 RMSNorm: strict xfail fails the run.
    trt.check(trt.feeds(val_range=OUTLIER_TOKENS))
