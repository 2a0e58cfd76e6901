"""Issue 12: models that arrive with their own precision (mixed FP16/FP32 with Casts, Q/DQ).

The plan is READ from the model (``PrecisionPolicy(as_is=True)``); two references
(``fp32`` = the model upcast to FP32, Q/DQ removed; ``as-written`` = ONNX Runtime on the
model as written); the emulate backend rounds at the model's own FP16 tensors.

Measured here (ONNX Runtime 1.31 CPU, 20 seeds, batch 8; figures quoted in the docstrings
of ``example_suite/test_mixed_precision_models.py``):

* mixed_autocast.onnx: as-written vs fp32 reference: **0.0** (ONNX Runtime CPU runs the
  FP16 nodes in FP32 and drops the model's FP16 roundings, even its input Cast); emulate vs
  either: max abs 3.0e-3 (outputs up to 4), needs atol 1.75e-3 at rtol 1e-2, for inputs in
  [-1, 1] and in [-100, 100] alike (the FP32 island absorbs the scale).
* qdq_linear.onnx: emulate vs as-written: 0.0 (Q/DQ run as written, exactly); vs fp32
  (Q/DQ removed): max abs 0.054 for inputs in [-1, 1], 0.98 in [-4, 4] (hidden
  activations beyond the calibrated range 6 saturate).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_trt import PrecisionPolicy
from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.compare import compare_outputs
from pytest_trt.errors import ModelError, PatternError, PrecisionError, UsageError
from pytest_trt.layers.report import LayerReport
from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import export_feeds, graph_model
from pytest_trt.plan import AS_WRITTEN
from pytest_trt.realize import realize_emulation, realize_strong
from pytest_trt.reference.baseline import (
    normalize_baseline,
    reference_label,
    reference_model,
    reference_outputs,
)
from pytest_trt.reference.upcast import needs_upcast, upcast_notes, upcast_to_fp32

ort = pytest.importorskip("onnxruntime")

MODELS = __import__("pathlib").Path(__file__).resolve().parents[2] / "example_suite" / "models"
MIXED = MODELS / "mixed_autocast.onnx"
QDQ = MODELS / "qdq_linear.onnx"
F, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
ISLAND = ["/norm/Pow", "/norm/ReduceSum", "/norm/Div", "/norm/Add", "/norm/Sqrt", "/norm/Div_1"]


# -- helpers ----------------------------------------------------------------------------
def run(model, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    proto = model.proto if hasattr(model, "proto") else model
    return ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def x_feed(scale=1.0, seed=0, rows=8):
    """N(0, scale^2) inputs, as make_models.py measures: at scale 100 the Relu output exceeds
    255.9, where an FP16 Pow(x, 2) overflows."""
    return {"x": (np.random.default_rng(seed).standard_normal((rows, 64)) * scale).astype(np.float32)}


def inferred_types(proto) -> dict[str, int]:
    inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    g = inferred.graph
    types = {vi.name: vi.type.tensor_type.elem_type for vi in (*g.input, *g.value_info, *g.output)}
    types.update({i.name: i.data_type for i in g.initializer})
    return types


def planted_fp16_pow() -> onnx.ModelProto:
    """mixed_autocast with the island's Pow computed in FP16: it reads the FP16 Relu output
    (and an FP16 exponent) directly, and its result is Cast to FP32 for ReduceSum."""
    model = onnx.load(str(MIXED))
    g = model.graph
    g.initializer.append(numpy_helper.from_array(np.array(2.0, np.float16), "norm.two_fp16"))
    nodes = []
    for node in g.node:
        if node.name == "/norm/Pow":
            node.input[:] = ["/act/Relu_output_0", "norm.two_fp16"]
            node.output[:] = ["/norm/Pow_fp16_output_0"]
            nodes.append(node)
            nodes.append(helper.make_node("Cast", ["/norm/Pow_fp16_output_0"], ["/norm/Pow_output_0"],
                                          name="/norm/Pow_Cast", to=F))
        else:
            nodes.append(node)
    del g.node[:]
    g.node.extend(nodes)
    g.name = "mixed_autocast_fp16_pow"
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture(scope="module")
def mixed():
    return load_model(MIXED)


@pytest.fixture(scope="module")
def qdq():
    return load_model(QDQ)


@pytest.fixture(scope="module")
def mixed_plan(mixed):
    return PrecisionPolicy(as_is=True, expect_fp32=ISLAND).resolve(mixed)


@pytest.fixture(scope="module")
def qdq_plan(qdq):
    return PrecisionPolicy(as_is=True).resolve(qdq)


# -- the plan is read from the model ------------------------------------------------------
def test_mixed_plan_reads_node_precisions_from_the_graph(mixed, mixed_plan):
    plan = mixed_plan
    assert plan.as_is and plan.policy.describe().startswith("as-is")
    types = inferred_types(mixed.proto)
    for node in mixed.graph.node:
        decision = plan.nodes[node.name]
        assert decision.kind == "compute" and decision.rule == AS_WRITTEN
        # a node computes in the type it writes
        assert decision.precision == {F: "fp32", F16: "fp16"}[types[node.output[0]]], node.name
    assert plan.precision_of("/norm/Pow") == "fp32"
    assert plan.precision_of("/fc1/MatMul") == "fp16"
    assert plan.precision_of("/fc2/MatMul") == "fp16"
    assert plan.precision_of("/Cast") == "fp16" and plan.precision_of("/norm/Cast") == "fp32"
    assert plan.precision_of("/norm/Cast_1") == "fp16" and plan.precision_of("/Cast_1") == "fp32"
    assert plan.counts() == {"fp32": 8, "fp16": 8, "bf16": 0, "fixed": 0}
    assert plan.low_precision == "fp16"
    # storage: the model's own types, no Cast to insert
    assert plan.boundaries == []
    for name, precision in plan.tensor_precision.items():
        assert precision == {F: "fp32", F16: "fp16"}[types[name]], name
    assert plan.expectation_failures == []
    assert any("mixed precision" in n for n in plan.notes)
    assert plan.to_json()["nodes"][5] == {"name": "/norm/Pow", "op_type": "Pow", "precision": "fp32",
                                          "rule": "as written", "canonical": "/norm/Pow", "module": "norm",
                                          "module_class": None}


def test_strong_realization_of_an_as_is_plan_is_the_model(mixed, mixed_plan):
    strong = realize_strong(mixed_plan)
    onnx.checker.check_model(strong, full_check=True)
    assert [(n.name, n.op_type) for n in strong.graph.node] == [(n.name, n.op_type) for n in mixed.graph.node]
    assert inferred_types(strong) == inferred_types(mixed.proto)
    feeds = x_feed(100)
    np.testing.assert_array_equal(run(strong, feeds)[0], run(mixed, feeds)[0])


def test_qdq_plan_fixes_quantization_and_reads_the_rest(qdq_plan):
    plan = qdq_plan
    for decision in plan.nodes.values():
        if decision.op_type in ("QuantizeLinear", "DequantizeLinear"):
            assert decision.kind == "fixed" and decision.precision is None
            assert decision.rule.startswith("fixed: quantization")
        else:
            assert (decision.precision, decision.rule) == ("fp32", AS_WRITTEN), decision
    assert plan.quantized and plan.low_precision is None and plan.boundaries == []
    assert plan.tensor_precision["/fc1/input_quantizer/DequantizeLinear_output_0"] == "fp32"
    assert any("Q/DQ" in n for n in plan.notes)


def test_as_is_fingerprint_never_equals_a_policy_plan(mixed, mixed_plan):
    assert mixed_plan.fingerprint() == PrecisionPolicy(as_is=True).resolve(mixed).fingerprint()
    assert mixed_plan.fingerprint() != PrecisionPolicy().resolve(mixed).fingerprint()


# -- rewriting an as-is model is refused; rewriting a mixed model is allowed and said ------
@pytest.mark.parametrize("kwargs, named", [
    ({"keep_fp32": ["/norm/*"]}, "keep_fp32"),
    ({"rules": ["op:Pow=fp32"]}, "rules"),
    ({"default": "fp16"}, "default='fp16'"),
])
def test_as_is_with_a_rewriting_policy_is_a_usage_error(kwargs, named):
    with pytest.raises(UsageError) as info:
        PrecisionPolicy(as_is=True, **kwargs)
    message = str(info.value)
    assert named in message and "expect_fp32" in message and "FP32 source model" in message


def test_expect_fp32_pattern_matching_nothing_is_a_pattern_error(mixed):
    with pytest.raises(PatternError, match="'/norm/Pwo' .*matches no node.*'/norm/Pow'"):
        PrecisionPolicy(as_is=True, expect_fp32=["/norm/Pwo"]).resolve(mixed)


def test_low_precision_policy_on_a_mixed_model_retypes_it_and_says_so(mixed):
    plan = PrecisionPolicy("fp16", keep_fp32=["/norm/*"]).resolve(mixed)
    assert plan.precision_of("/norm/Pow") == "fp32" and plan.precision_of("/fc1/MatMul") == "fp16"
    (note,) = [n for n in plan.notes if "mixed precision" in n]
    assert "re-types every node" in note and "as_is=True" in note and "FP32 source model" in note
    fp32 = PrecisionPolicy("fp32").resolve(mixed)  # everything FP32: the emulation is the upcast model
    feeds = x_feed(100)
    np.testing.assert_allclose(run(realize_emulation(fp32), feeds)[0], run(upcast_to_fp32(mixed), feeds)[0],
                               rtol=1e-6, atol=1e-6)


# -- expect_fp32: an assertion, checked by assert_expectations -----------------------------
def test_expect_fp32_passes_on_the_island_and_skips_the_exit_cast(mixed):
    plan = PrecisionPolicy(as_is=True, expect_fp32=["/norm/*"]).resolve(mixed)
    # /norm/Cast_1 (fp32 -> fp16) is the island's exit: not a computation. /norm/Mul is FP16 by the model.
    assert [f.node for f in plan.expectation_failures] == ["/norm/Mul"]
    plan = PrecisionPolicy(as_is=True, expect_fp32=["op:Pow", "op:ReduceSum", "op:Sqrt"]).resolve(mixed)
    plan.assert_expectations()  # no failure: returns


def test_expect_fp32_fails_on_a_planted_fp16_pow_naming_it_and_the_cast_needed():
    plan = PrecisionPolicy(as_is=True, expect_fp32=ISLAND).resolve(planted_fp16_pow())
    assert plan.precision_of("/norm/Pow") == "fp16" and plan.precision_of("/norm/ReduceSum") == "fp32"
    (failure,) = plan.expectation_failures
    assert (failure.node, failure.op_type, failure.precision, failure.pattern) == ("/norm/Pow", "Pow", "fp16",
                                                                                  "/norm/Pow")
    with pytest.raises(PrecisionError) as info:
        plan.assert_expectations()
    message = str(info.value)
    assert "the model itself computes 1 node(s) expected to stay FP32 in low precision" in message
    assert "'/norm/Pow' (Pow) computes in fp16" in message
    assert "Cast '/act/Relu_output_0' (from '/act/Relu') to FLOAT before it" in message
    assert "store 'norm.two_fp16' as FLOAT" in message
    assert info.value.findings == plan.expectation_failures
    assert plan.to_json()["expectation_failures"][0]["node"] == "/norm/Pow"


def test_expect_fp32_on_a_rewriting_policy_names_the_rule():
    model = load_model(MIXED)
    plan = PrecisionPolicy("fp16", keep_fp32=["/norm/Pow"], expect_fp32=["/norm/Pow", "op:Sqrt"]).resolve(model)
    (failure,) = plan.expectation_failures
    assert failure.node == "/norm/Sqrt" and "keep_fp32=['/norm/Sqrt']" in failure.fix


# -- the two references --------------------------------------------------------------------
def test_upcast_mixed_model_is_fp32_valid_and_keeps_names(mixed):
    up = upcast_to_fp32(mixed)
    onnx.checker.check_model(up, full_check=True)
    types = inferred_types(up)
    assert set(types.values()) <= {F, TensorProto.INT64}, "a low-precision tensor is left"
    ops = {n.name: n.op_type for n in up.graph.node}
    assert list(ops) == [n.name for n in mixed.graph.node]  # same nodes, same names (layerwise maps 1:1)
    assert [name for name, op in ops.items() if op == "Identity"] == ["/Cast", "/norm/Cast", "/norm/Cast_1", "/Cast_1"]
    assert any("initializers widened" in n for n in upcast_notes(up))
    # an independent FP32 computation with the model's (FP16-valued) weights
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in mixed.graph.initializer}
    x = x_feed(100)["x"].astype(np.float64)
    h = np.maximum(x @ w["fc1.weight"] + w["fc1.bias"], 0)
    n = h / np.sqrt((h**2).sum(-1, keepdims=True) / 64 + 1e-6) * w["norm.weight"]
    np.testing.assert_allclose(run(up, {"x": x.astype(np.float32)})[0], n @ w["fc2.weight"] + w["fc2.bias"],
                               rtol=1e-4, atol=1e-4)


def test_upcast_qdq_removes_fake_quant_or_keeps_it(qdq):
    up = upcast_to_fp32(qdq)
    onnx.checker.check_model(up, full_check=True)
    assert not {"QuantizeLinear", "DequantizeLinear"} & {n.op_type for n in up.graph.node}
    assert any("Q/DQ pairs removed" in n for n in upcast_notes(up))
    assert any("dequantized into FP32 initializers" in n for n in upcast_notes(up))
    feeds = x_feed()
    w = {t.name: numpy_helper.to_array(t) for t in qdq.graph.initializer}
    w2 = w["fc2.weight_quantized"].astype(np.float32) * w["fc2.weight_scale"]  # INT8 weights: as stored
    h = np.maximum(feeds["x"] @ w["fc1.weight"] + w["fc1.bias"], 0)
    np.testing.assert_allclose(run(up, feeds)[0], h @ w2 + w["fc2.bias"], rtol=1e-5, atol=1e-5)
    kept = upcast_to_fp32(qdq, remove_qdq=False)
    onnx.checker.check_model(kept, full_check=True)
    assert not needs_upcast(kept) or any(n.op_type == "QuantizeLinear" for n in kept.graph.node)
    np.testing.assert_array_equal(run(kept, feeds)[0], run(qdq, feeds)[0])


def test_fp32_model_is_its_own_reference():
    from pytest_trt.model.testing_models import decomposed_layernorm_block

    model = load_model(decomposed_layernorm_block())
    assert not needs_upcast(model)
    assert reference_model(model, "fp32") is model and reference_model(model, "as-written") is model
    assert reference_label(model, "fp32") == "FP32 ONNX Runtime baseline"


def test_both_references_for_the_mixed_and_the_qdq_model(mixed, qdq, tmp_path):
    from pytest_trt.cache import ArtifactCache

    cache = ArtifactCache(tmp_path / "cache")
    feeds = x_feed(100)
    fp32 = reference_outputs(mixed, feeds, baseline="fp32", cache=cache)["y"]
    written = reference_outputs(mixed, feeds, baseline="as-written", cache=cache)["y"]
    assert fp32.dtype == written.dtype == np.float32
    # ONNX Runtime CPU computes the FP16 nodes in FP32 and drops the model's FP16 roundings
    # (even its input Cast): the as-written reference equals the FP32 one here (measured 0.0).
    # That is the documented CPU caveat; with a real FP16 runtime they differ by ~FP16 rounding.
    assert np.abs(fp32 - written).max() <= 1e-3
    assert "runs most FP16 nodes in FP32" in reference_label(mixed, "as-written")
    # for a Q/DQ model the references differ by the quantization error
    qfeeds = x_feed()
    q32 = reference_outputs(qdq, qfeeds, baseline="fp32", cache=cache)["y"]
    qwritten = reference_outputs(qdq, qfeeds, baseline="as-written", cache=cache)["y"]
    assert 0.01 < np.abs(q32 - qwritten).max() < 0.1
    assert reference_label(qdq, "as-written").startswith("as-written ONNX Runtime reference (the model as written, "
                                                         "fake-quant")
    # cached: a second call is a hit
    reference_outputs(mixed, feeds, baseline="fp32", cache=cache)
    assert any(e.get("event") == "hit" for e in cache.events())


def test_baseline_names():
    assert normalize_baseline("as_written") == normalize_baseline("As-Written") == "as-written"
    assert normalize_baseline(None) == "fp32"
    with pytest.raises(UsageError, match="unknown baseline 'fp16'.*'fp32'.*'as-written'"):
        normalize_baseline("fp16")


# -- the emulate backend runs as-is models faithfully ------------------------------------
def test_emulation_rounds_at_the_models_own_fp16_tensors(mixed_plan):
    emu = realize_emulation(mixed_plan)
    onnx.checker.check_model(emu, full_check=True)
    assert {vi.type.tensor_type.elem_type for vi in emu.graph.value_info} <= {F, F16}
    rounded = {n.input[0] for n in emu.graph.node if n.name.endswith("/Round_back_fp32")}
    low = {t for t, p in mixed_plan.tensor_precision.items() if p == "fp16" and t not in mixed_plan.constant_tensors}
    assert {t.split("__")[0] for t in rounded} == low
    assert not any(n.name.startswith("/norm/Pow") and "Round" in n.name for n in emu.graph.node)


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_emulate_is_within_documented_tolerance_of_both_references(mixed, mixed_plan, scale):
    engine = get_backend("emulate").build(mixed_plan, BuildConfig(), None)
    for seed in range(3):
        feeds = x_feed(scale, seed)
        actual = engine.run(feeds)
        for which in ("as-written", "fp32"):
            expected = reference_outputs(mixed, feeds, baseline=which)
            result = compare_outputs(actual, expected, rtol=1e-2, atol=3e-3)  # measured need: atol 1.75e-3
            assert result.passed, result.message()
            assert np.abs(actual["y"] - expected["y"]).max() > 1e-4  # the FP16 roundings are really there


def test_emulate_runs_qdq_exactly_as_written(qdq, qdq_plan):
    engine = get_backend("emulate").build(qdq_plan, BuildConfig(), None)
    feeds = x_feed(4.0)
    np.testing.assert_array_equal(engine.run(feeds)["y"], reference_outputs(qdq, feeds, baseline="as-written")["y"])


def test_the_island_matters_and_only_the_emulation_shows_it():
    """x100: the planted FP16 Pow overflows (|relu| > 255.9). ONNX Runtime CPU as written
    hides it (it computes FP16 in FP32); the emulation of the as-is plan shows it."""
    planted = load_model(planted_fp16_pow())
    plan = PrecisionPolicy(as_is=True).resolve(planted)
    feeds = x_feed(100)
    engine = get_backend("emulate").build(plan, BuildConfig(), None)
    emulated = engine.run(feeds)["y"]
    written = reference_outputs(planted, feeds, baseline="as-written")["y"]
    assert np.isfinite(written).all()
    assert not np.isfinite(emulated).all() or np.abs(emulated - written).max() > 0.5
    # the model as exported (island FP32) is fine under the same emulation
    good = get_backend("emulate").build(PrecisionPolicy(as_is=True).resolve(MIXED), BuildConfig(), None)
    assert np.abs(good.run(feeds)["y"] - written).max() < 3e-3


def test_layer_report_of_an_as_is_plan(mixed_plan, qdq_plan):
    report = LayerReport.from_emulation(mixed_plan)
    assert report.nodes["/norm/Pow"].planned == report.nodes["/norm/Pow"].observed == "fp32"
    assert report.nodes["/fc1/MatMul"].observed == "fp16" and report.nodes["/fc1/MatMul"].status == "ok"
    qreport = LayerReport.from_emulation(qdq_plan)
    assert qreport.nodes["/fc1/input_quantizer/QuantizeLinear"].status == "fixed"
    assert qreport.nodes["/fc1/MatMul"].planned == "fp32"


def test_attribute_typed_fp16_ops_emulate_and_upcast():
    """ConstantOfShape with an FP16 value and an FP16 graph input and output: the emulation
    computes it in FP32 (then rounds); emulation and upcast keep the input's type (same feeds)."""
    value = numpy_helper.from_array(np.array([1.5], np.float16), "value")
    model = load_model(graph_model([
        helper.make_node("Shape", ["x"], ["s"], name="/shape"),
        helper.make_node("ConstantOfShape", ["s"], ["c"], name="/fill", value=value),
        helper.make_node("Add", ["x", "c"], ["y"], name="/add"),
    ], [("x", F16, [3])], [("y", F16, [3])], opset=17))
    plan = PrecisionPolicy(as_is=True).resolve(model)
    assert plan.precision_of("/add") == "fp16"
    feeds = {"x": np.array([1.0, 2.5, 65000.0], np.float16)}
    emu = realize_emulation(plan)
    onnx.checker.check_model(emu, full_check=True)
    assert emu.graph.input[0].type.tensor_type.elem_type == F16  # same feeds as the model
    out = run(emu, feeds)[0]
    assert out.dtype == np.float16
    exact = feeds["x"].astype(np.float32) + np.float32(1.5)  # 64992 + 1.5 (65000 is 64992 in FP16)
    np.testing.assert_array_equal(out, exact.astype(np.float16))
    up = upcast_to_fp32(model)
    onnx.checker.check_model(up, full_check=True)
    assert up.graph.input[0].type.tensor_type.elem_type == F16 and up.graph.output[0].type.tensor_type.elem_type == F
    np.testing.assert_array_equal(run(up, feeds)[0], exact)  # FP32 output: not rounded back


# -- bad input -------------------------------------------------------------------------------
def _mixed_add():
    return graph_model([
        helper.make_node("Cast", ["x"], ["h"], name="/to_half", to=F16),
        helper.make_node("Add", ["h", "x"], ["y"], name="/bad/Add"),
    ], [("x", F, [2, 4])], [("y", F16, [2, 4])], opset=17, check=False)


def test_types_onnx_runtime_rejects_are_named_at_resolve_and_reference():
    model = load_model(_mixed_add())
    with pytest.raises(ModelError) as info:
        PrecisionPolicy(as_is=True).resolve(model)
    message = str(info.value)
    assert "node '/bad/Add' (Add) binds its type T to different types" in message
    assert "'h' FLOAT16" in message and "'x' FLOAT" in message and "Cast 'h' to FLOAT" in message
    with pytest.raises(ModelError, match="'/bad/Add'"):
        reference_model(model, "as-written")


def _qdq(scale, zero, opset=13, axis=None):
    attrs = {} if axis is None else {"axis": axis}
    return load_model(graph_model([
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="/quant/QuantizeLinear", **attrs),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="/quant/DequantizeLinear", **attrs),
    ], [("x", F, [2, 4])], [("y", F, [2, 4])], [("s", scale), ("z", zero)], opset=opset))


@pytest.mark.parametrize("scale, zero, axis, match", [
    (np.ones(3, np.float32), np.zeros(3, np.int8), 1,
     r"QuantizeLinear node '/quant/QuantizeLinear': per-axis scale 's' has 3 values but input 'x' has 4 on axis 1"),
    (np.ones((2, 4), np.float32), np.zeros((2, 4), np.int8), None,
     r"QuantizeLinear node '/quant/QuantizeLinear': scale 's' has shape \[2, 4\]; it must be a scalar"),
    (np.float32(0.1), np.zeros(4, np.int8), None,
     r"zero point 'z' has shape \[4\] but scale 's' has shape \[\]"),
])
def test_bad_qdq_scales_are_named(scale, zero, axis, match):
    model = _qdq(scale, zero, axis=axis)
    with pytest.raises(ModelError, match=match):
        PrecisionPolicy(as_is=True).resolve(model)
    with pytest.raises(ModelError, match=match):
        PrecisionPolicy("fp16").resolve(model)  # Q/DQ are kept as written by every plan
    with pytest.raises(ModelError, match=match):
        reference_model(model, "fp32")


def test_good_per_axis_qdq_is_accepted_and_dequantized():
    w = np.arange(8, dtype=np.int8).reshape(2, 4)
    model = load_model(graph_model([
        helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"], name="/w/DequantizeLinear", axis=1),
        helper.make_node("Add", ["x", "wf"], ["y"], name="/add"),
    ], [("x", F, [2, 4])], [("y", F, [2, 4])],
        [("w", w), ("s", np.array([1, 2, 3, 4], np.float32)), ("z", np.array([0, 1, 0, 1], np.int8))], opset=13))
    PrecisionPolicy(as_is=True).resolve(model)
    up = upcast_to_fp32(model)
    onnx.checker.check_model(up, full_check=True)
    x = np.zeros((2, 4), np.float32)
    np.testing.assert_array_equal(run(up, {"x": x})[0], run(model, {"x": x})[0])


# -- TensorRT refuses weak typing for as-is plans; the CLI ------------------------------------
def test_tensorrt_supports_refuses_weak_typing_for_as_is(monkeypatch, mixed_plan, mixed):
    from pytest_trt.backends.tensorrt import backend as trt_backend

    monkeypatch.setattr(trt_backend, "installed_version", lambda backend: "10.8.0")
    backend = trt_backend.TensorRTBackend()
    assert backend.supports(mixed_plan, BuildConfig(typing="weak")) == (
        "weak typing reinterprets the model's own types; as-is models need strong typing")
    assert backend.supports(mixed_plan, BuildConfig(typing="strong")) is None
    assert backend.supports(mixed_plan, BuildConfig()) is None  # auto = strong on 10.x
    assert backend.supports(PrecisionPolicy("fp16").resolve(mixed), BuildConfig(typing="weak")) is None


def test_cli_compare_as_is_with_both_baselines(tmp_path, capsys):
    from pytest_trt.cli import main

    common = ["--as-is", "--cache-dir", str(tmp_path), "--input-shapes", "x:[8,64]", "--backend", "emulate"]
    assert main(["compare", str(QDQ), *common, "--baseline", "as-written", "--atol", "0", "--rtol", "0"]) == 0
    assert "reference: as-written ONNX Runtime reference" in capsys.readouterr().out
    assert main(["compare", str(QDQ), *common, "--atol", "1e-3"]) == 1  # fp32: the quantization error shows
    assert "upcast to FP32, Q/DQ removed" in capsys.readouterr().out
    assert main(["compare", str(MIXED), *common, "--keep-fp32", "/norm/*"]) == 2
    assert "FP32 source model" in capsys.readouterr().err
    # emulation has no weak typing: a usage error, not a run that ignores the flag (issue 28)
    assert main(["compare", str(MIXED), *common, "--typing", "weak", "--backend", "emulate"]) == 2
    assert "--typing weak cannot be honoured by emulate" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["plan", "compare"])
def test_cli_fp16_on_a_mixed_model_names_the_island_it_lowers_and_suggests_as_is(tmp_path, capsys, command):
    # Issue 28: `plan --fp16` / `compare --fp16` on the autocast model lowered its FP32 norm silently
    from pytest_trt.cli import main

    extra = [] if command == "plan" else ["--cache-dir", str(tmp_path), "--input-shapes", "x:[8,64]",
                                          "--backend", "emulate"]
    assert main([command, str(MIXED), "--fp16", *extra]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("note: source model is mixed precision"))
    assert "The model computes 6 node(s) in FP32 as written (e.g. '/norm/Pow', '/norm/ReduceSum', '/norm/Div'), " \
           "which this policy lowers to fp16" in note
    assert "use --as-is" in note and "as_is=True" not in note  # the console script's spelling
    assert main([command, str(MIXED), "--as-is", *extra]) == 0
    assert "--as-is" not in capsys.readouterr().out  # nothing to suggest when it is already given


# -- real torch exports: their strongly typed FP16 realization is an autocast-style model -----
REAL_EXPORTS = sorted((MODELS.parents[1] / "tests" / "data").glob("*.onnx"))
_LN = ["*/LayerNorm/*", "*/ln_*/*", "*/layernorm*/*", "op:LayerNormalization"]


@pytest.mark.skipif(not REAL_EXPORTS, reason="tests/data has no .onnx exports")
@pytest.mark.parametrize("path", REAL_EXPORTS, ids=[p.stem for p in REAL_EXPORTS])
def test_mixed_realization_of_a_real_export_reads_back_as_is(path):
    """A policy's strong realization IS a mixed model with Casts (what autocast tools emit).
    Read back as_is, it must plan every original node as the policy did, and its emulation
    must round exactly where the policy's emulation does (bitwise equal outputs)."""
    from pytest_trt.plan.policy import Rule

    model = load_model(path)
    keep = [p for p in _LN if any(Rule(p, "fp32").matches(n) for n in model.graph.node)]
    plan = PrecisionPolicy("fp16", keep_fp32=keep).resolve(model)
    mixed = load_model(realize_strong(plan))
    as_is = PrecisionPolicy(as_is=True, expect_fp32=keep).resolve(mixed)
    assert as_is.expectation_failures == [] and as_is.boundaries == []
    for name, decision in plan.nodes.items():
        if name not in as_is.nodes:  # float Constants are stored as initializers by the realization
            assert decision.op_type == "Constant", name
            continue
        assert as_is.nodes[name].precision == decision.precision, name
    feeds = export_feeds(model)
    np.testing.assert_array_equal(run(realize_emulation(as_is), feeds)[0], run(realize_emulation(plan), feeds)[0])
    up = upcast_to_fp32(mixed)
    onnx.checker.check_model(up, full_check=True)
    # the FP32 reference of the mixed model = the FP32 model with FP16-rounded weights
    np.testing.assert_allclose(run(up, feeds)[0], run(model, feeds)[0], rtol=0.05, atol=0.05)
