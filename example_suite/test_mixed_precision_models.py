"""Models that arrive with their own precision, tested as written (``as_is=True``).

``mixed_autocast.onnx`` is what autocast exporters emit: an FP16 body with an RMS-norm
island kept FP32 between two Casts (Pow, ReduceSum, Div, Add, Sqrt, Div), because
Pow(x, 2) overflows FP16 once |x| > 255.9: with inputs in [-300, 300] the Relu output
feeding the island reaches ~670 (an FP16 Pow would give inf there).
``qdq_linear.onnx`` is an explicitly quantized INT8 MLP (Q/DQ around both MatMuls).

``as_is`` tests ignore ``--trt-fp16``/``--trt-bf16``: the plan is read from the model's
own types, nothing is rewritten. ``expect_fp32`` asserts (it rewrites nothing) that the
model itself keeps the island FP32.

Two references (see :mod:`pytest_trt.reference.upcast`):

* ``baseline="as-written"``: ONNX Runtime on the model as written (fake-quant for Q/DQ);
* ``baseline="fp32"`` (default): the model upcast to FP32; for Q/DQ, quantization removed.

Tolerances, measured with the emulate backend (ONNX Runtime 1.31 CPU, 20 seeds, batch 8):

* mixed, inputs in [-300, 300]: emulate vs either reference max abs 2.7e-3 (outputs up to
  4), needs atol 1.3e-3 at rtol 1e-2 (1.75e-3 in [-100, 100]; the FP32 island absorbs the
  scale). With the island's Pow planted in FP16 the same inputs give max abs 3.95 (the
  Pow overflows, the norm collapses to 0). On ONNX Runtime CPU the two references are
  identical (max abs 0.0): it runs the FP16 nodes in FP32 and drops the model's FP16
  roundings. Tolerances below: rtol 1e-2 with atol 5e-3 (as-written) and 1e-2 (fp32),
  leaving room for TensorRT's FP16 kernels (not measured here: no TensorRT on CPU).
* Q/DQ, inputs in [-2, 2]: emulate vs as-written 0.0 (Q/DQ run exactly); vs fp32
  (unquantized) max abs 0.052, cosine >= 0.99986 (outputs up to 3.8). Tolerances: atol 0.05
  vs as-written (TensorRT's INT8 kernels may flip a rounding tie: one hidden quantization
  step costs up to s_h * max|w2| = 0.023 per output), atol 0.1 + cosine 0.999 vs fp32.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import MODELS
from pytest_trt import AccuracyError, PrecisionError, PrecisionPolicy, assert_close, make_feeds

ISLAND = ["/norm/Pow", "/norm/ReduceSum", "/norm/Div", "/norm/Add", "/norm/Sqrt", "/norm/Div_1"]
LARGE = {"x": (-300.0, 300.0)}  # the regime in which the FP32 island matters
SHAPES = {"x": (8, 64)}


@pytest.mark.trt(model="models/mixed_autocast.onnx", as_is=True, expect_fp32=ISLAND, shapes=SHAPES,
                 val_range=LARGE)
def test_autocast_model_keeps_its_fp32_island(trt):
    assert trt.plan.precision_of("/norm/Pow") == "fp32" and trt.plan.precision_of("/fc1/MatMul") == "fp16"
    trt.check(baseline="as-written", rtol=1e-2, atol=5e-3)  # the engine does what the model says
    trt.check(baseline="fp32", rtol=1e-2, atol=1e-2)  # and the model's FP16 choices cost little
    trt.assert_precision("op:Pow", "fp32")
    trt.assert_precision("/fc1/MatMul", "fp16")


@pytest.mark.trt(model="models/qdq_linear.onnx", as_is=True, shapes=SHAPES, val_range={"x": (-2.0, 2.0)})
def test_qdq_model_matches_its_fake_quant_and_bounds_the_quantization_loss(trt):
    trt.check(baseline="as-written", rtol=0, atol=5e-2)
    trt.check(baseline="fp32", rtol=5e-2, atol=1e-1, min_cosine=0.999)


# -- negative controls: an FP16 Pow planted in the island is caught ------------------------
@pytest.fixture(scope="module")
def planted_fp16_pow(tmp_path_factory):
    """mixed_autocast.onnx with the island's Pow computed in FP16 (it reads the FP16 Relu output)."""
    model = onnx.load(str(MODELS / "mixed_autocast.onnx"))
    g = model.graph
    g.initializer.append(numpy_helper.from_array(np.array(2.0, np.float16), "norm.two_fp16"))
    nodes = []
    for node in g.node:
        if node.name == "/norm/Pow":
            node.input[:] = ["/act/Relu_output_0", "norm.two_fp16"]
            node.output[:] = ["/norm/Pow_fp16_output_0"]
            nodes += [node, helper.make_node("Cast", ["/norm/Pow_fp16_output_0"], ["/norm/Pow_output_0"],
                                             name="/norm/Pow_Cast", to=TensorProto.FLOAT)]
        else:
            nodes.append(node)
    del g.node[:]
    g.node.extend(nodes)
    path = tmp_path_factory.mktemp("models") / "mixed_autocast_fp16_pow.onnx"
    onnx.save(model, str(path))
    return path


@pytest.mark.xfail(raises=PrecisionError, strict=True,
                   reason="negative control: expect_fp32 must name a Pow the model computes in FP16")
def test_negative_control_expect_fp32_catches_an_fp16_pow(trt_session, planted_fp16_pow):
    plan = trt_session.plan(trt_session.model(planted_fp16_pow), PrecisionPolicy(as_is=True, expect_fp32=ISLAND))
    plan.assert_expectations()


@pytest.mark.xfail(raises=AccuracyError, strict=True,
                   reason="negative control: an FP16 Pow overflows on inputs of magnitude 300")
def test_negative_control_fp16_pow_overflows(trt_build, trt_baseline, planted_fp16_pow):
    from pytest_trt.reference.baseline import reference_model

    engine = trt_build(planted_fp16_pow, PrecisionPolicy(as_is=True))
    feeds = make_feeds(engine.model, shapes=SHAPES, val_range=LARGE)
    # ONNX Runtime CPU as written would hide the overflow (it computes FP16 nodes in FP32): use fp32
    expected = trt_baseline(reference_model(engine.model, "fp32"), feeds)
    assert_close(engine.run(feeds), expected, rtol=1e-2, atol=1e-2)
