"""When FP16 breaks the encoder: find the node that broke it, and the FP32 islands that fix it.

A model owner lowering the encoder to FP16 everywhere sees it fail on outlier activations.
`trt.locate` names the first node whose error jumps; `trt.suggest` searches the fewest
keep_fp32 patterns with which it passes (every candidate is a real build and run), and the
tests below pin the answers, so a change in the model or the toolchain that moves the
problem elsewhere shows up here.

Precision is pinned to fp16, so the file behaves the same with and without `--trt-fp16`.
"""

import pytest

from conftest import ENCODER_DIMS, NORMAL, OUTLIERS
from pytest_trt import PrecisionPolicy, assert_close

pytestmark = pytest.mark.trt(
    model="models/encoder_opset14.onnx", precision="fp16", dims=ENCODER_DIMS, val_range=NORMAL,
)

# What the deployed configuration keeps in FP32 (see test_encoder_fp16.py).
DEPLOYED_KEEP_FP32 = ["*/LayerNorm/*", "op:Softmax"]


def test_locate_names_the_layernorm_that_overflows(trt):
    found = trt.locate(trt.feeds(outliers=OUTLIERS))
    assert found.first is not None, found.message()
    # The decomposed LayerNorm squares |x - mean| > 255.9: FP16 overflows to Inf there first.
    assert "/LayerNorm/" in found.first.node, found.message()
    assert found.first.nonfinite > 0
    assert found.first.upstream <= found.threshold  # nothing upstream was already broken


def test_suggested_fp32_islands_pass_and_are_covered_by_the_deployed_policy(trt, trt_build):
    feeds = trt.feeds(outliers=OUTLIERS)
    suggestion = trt.suggest(feeds, atol=1e-2)
    assert suggestion.passed, suggestion.message()
    assert suggestion.patterns, "FP16 everywhere fails on outliers: some island must be needed"
    assert suggestion.builds <= 10

    # Every node the search keeps in FP32 is a LayerNorm node, and the deployed policy keeps it too.
    kept = {name for pattern in suggestion.patterns for name in trt.plan.match(pattern)
            if trt.plan.precision_of(name) is not None}  # compute nodes (Constants are fixed)
    assert all("/LayerNorm/" in name for name in kept), sorted(kept)
    deployed = PrecisionPolicy("fp16", keep_fp32=DEPLOYED_KEEP_FP32).resolve(trt.model)
    assert all(deployed.precision_of(name) == "fp32" for name in kept)

    # Re-check independently: build the suggested policy and compare with the FP32 baseline.
    engine = trt_build(trt.model, suggestion.policy)
    assert_close(engine.run(feeds), trt.baseline(feeds), rtol=1e-2, atol=1e-2)


def test_nothing_to_change_when_the_inputs_do_not_break_fp16(trt):
    suggestion = trt.suggest(trt.feeds(), atol=1e-2)  # normal activations: FP16 everywhere is fine
    assert suggestion.passed and suggestion.patterns == []
    assert suggestion.builds == 1
