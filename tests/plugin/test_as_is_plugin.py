"""Issue 12 through pytester: ``--trt-as-is``, marker ``as_is=True``, ``baseline="as-written"``,
``expect_fp32`` failures, and the session precision being ignored by as-is tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
MIXED = REPO / "example_suite" / "models" / "mixed_autocast.onnx"
QDQ = REPO / "example_suite" / "models" / "qdq_linear.onnx"

HEADER = f"""
import pytest
MIXED = {str(MIXED)!r}
QDQ = {str(QDQ)!r}
ISLAND = ["/norm/Pow", "/norm/ReduceSum", "/norm/Div", "/norm/Add", "/norm/Sqrt", "/norm/Div_1"]
SHAPES = {{"x": (8, 64)}}
"""


@pytest.fixture
def cache_dir(pytester):
    return pytester.path / "engine-cache"


AS_IS_TESTS = HEADER + """
@pytest.mark.trt(model=MIXED, as_is=True, expect_fp32=ISLAND, baseline="as-written", shapes=SHAPES,
                 val_range={"x": (-100, 100)}, atol=3e-3)
def test_mixed_as_written(trt):
    assert trt.plan.as_is and trt.policy.default == "fp32"
    assert trt.plan.precision_of("/norm/Pow") == "fp32" and trt.plan.precision_of("/fc1/MatMul") == "fp16"
    trt.check()
    trt.check(baseline="fp32")

@pytest.mark.trt(model=QDQ, as_is=True, baseline="as-written", shapes=SHAPES, val_range={"x": (-4, 4)}, atol=0, rtol=0)
def test_qdq_exact(trt):
    assert trt.plan.quantized and trt.plan.low_precision is None
    trt.check()

@pytest.mark.trt(model=PLANTED, as_is=True, expect_fp32=ISLAND, shapes=SHAPES)
def test_fails_planted(trt):
    trt.check()

@pytest.mark.trt(model=QDQ, as_is=True, shapes=SHAPES, atol=1e-3, rtol=1e-3)
def test_fails_qdq_vs_unquantized(trt):
    trt.check()

@pytest.mark.trt(model=MIXED, as_is=True, keep_fp32=["/norm/*"], shapes=SHAPES)
def test_fails_contradiction(trt):
    trt.check()

@pytest.mark.trt(model=MIXED, as_is=True, shapes=SHAPES, baseline="fp16")
def test_fails_bad_baseline(trt):
    trt.check()
"""


def test_as_is_markers_and_failure_messages(pytester, cache_dir):
    planted = _planted(pytester.path / "planted.onnx")
    pytester.makepyfile(AS_IS_TESTS.replace("PLANTED", repr(str(planted))))
    result = pytester.runpytest("--trt-cache-dir=" + str(cache_dir))
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines([
        # expect_fp32 on a model that computes the island's Pow in FP16
        "*PrecisionError*",
        "*the model itself computes 1 node(s) expected to stay FP32 in low precision:*",
        "*'/norm/Pow' (Pow) computes in fp16 [[]expect_fp32 '/norm/Pow'[]]: to keep it FP32 the model needs: "
        "Cast '/act/Relu_output_0' (from '/act/Relu') to FLOAT before it*",
    ])
    result.stdout.fnmatch_lines([
        "qdq_linear.onnx: emulate engine [[]as-is[]] differs from the FP32 ONNX Runtime reference "
        "(the model upcast to FP32, Q/DQ removed)",
    ])
    out = result.stdout.str()
    assert "as_is=True tests the model in its own precision" in out and "FP32 source model" in out
    assert "unknown baseline 'fp16'" in out


def test_as_is_tests_ignore_the_session_precision(pytester, cache_dir):
    pytester.makepyfile(AS_IS_TESTS.replace("PLANTED", "None"))
    result = pytester.runpytest("--trt-cache-dir=" + str(cache_dir), "--trt-fp16", "--trt-keep-fp32", "/norm/*",
                                "-k", "not fails")
    result.assert_outcomes(passed=2, deselected=4)


def test_trt_as_is_flag_applies_to_tests_that_pin_no_policy(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=MIXED, shapes=SHAPES)
def test_unpinned(trt):
    assert trt.plan.as_is
    assert trt.plan.precision_of("/norm/Sqrt") == "fp32"
    trt.check(baseline="as-written", atol=3e-3)

@pytest.mark.trt(model=MIXED, shapes=SHAPES, keep_fp32=["/norm/*"], precision="fp16")
def test_pinned_policy_is_not_as_is(trt):
    assert not trt.plan.as_is
    assert any("mixed precision" in note for note in trt.plan.notes)

@pytest.mark.trt(model=MIXED, shapes=SHAPES, as_is=False)
def test_opted_out(trt):
    assert not trt.plan.as_is
""")
    result = pytester.runpytest("--trt-cache-dir=" + str(cache_dir), "--trt-as-is")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["pytest-trt: default precision as-is (model's own types)*"])


def _planted(path: Path) -> Path:
    """mixed_autocast with /norm/Pow computed in FP16 (reads the FP16 Relu output)."""
    model = onnx.load(str(MIXED))
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
    onnx.save(model, str(path))
    return path
