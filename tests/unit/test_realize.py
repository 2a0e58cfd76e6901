"""Realizations of a plan: strongly typed ONNX, the FP32 emulation graph, weak-typing hints.

Every strong realization must pass ``onnx.checker.check_model(full_check=True)`` and
run in ONNX Runtime; the tests read the REALIZED graph (types inferred afresh) to check
each node computes in the precision the plan asked for.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from pytest_trt.core.dtypes import ELEM_OF_PRECISION
from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import (
    BUILDERS,
    attention_block,
    decomposed_layernorm_block,
    export_feeds,
    graph_model,
    if_model,
    resize_model,
    sample_feeds,
    shared_initializer_model,
)
from pytest_trt.plan import UnsupportedPrecisionError
from pytest_trt.plan.policy import PrecisionPolicy, Rule
from pytest_trt.realize import realization_notes, realize_emulation, realize_strong, weak_hints
from pytest_trt.realize.strong import BF16_MAX, bf16_bits_to_fp32, round_to, to_bf16_bits, to_fp16

ort = pytest.importorskip("onnxruntime")

F, F16, BF16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
LOW = (F16, BF16)
LN = "/encoder/layer.0/attention/output/LayerNorm"
DATA = Path(__file__).resolve().parents[1] / "data"
REAL_EXPORTS = sorted(DATA.glob("*.onnx"))


# -- helpers ----------------------------------------------------------------------------
def session(model: onnx.ModelProto):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1  # tiny models: a thread pool costs more than it saves
    # The emulation's Cast pairs must survive; the same setting keeps comparisons exact.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run(model: onnx.ModelProto, feeds) -> list[np.ndarray]:
    return session(model).run(None, feeds)


def max_error(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) for x, y in zip(a, b, strict=True))


def with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of ``model`` with extra graph outputs (types from fresh inference)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    inferred = onnx.shape_inference.infer_shapes(out)
    infos = {vi.name: vi for vi in inferred.graph.value_info}
    present = {o.name for o in out.graph.output}
    out.graph.output.extend(infos[n] for n in names if n not in present)
    return out


def realized_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element types inferred from the realized graph itself (its value_info is dropped first)."""
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.graph.value_info[:]
    inferred = onnx.shape_inference.infer_shapes(bare, strict_mode=True)
    g = inferred.graph
    types = {vi.name: vi.type.tensor_type.elem_type for vi in (*g.input, *g.value_info, *g.output)}
    types.update({i.name: i.data_type for i in g.initializer})
    return types


def assert_realized_as_planned(plan, model: onnx.ModelProto) -> None:
    """Each node of the realized graph reads and writes the types the plan gives it."""
    types = realized_types(model)
    nodes = {n.name: n for n in model.graph.node}
    for name, decision in plan.nodes.items():
        if name not in nodes:  # folded float Constants
            assert decision.op_type == "Constant"
            continue
        node, io = nodes[name], plan.node_io[name]
        for tensor, want in zip(node.input, io.inputs, strict=True):
            if want is not None:
                assert types[tensor] == ELEM_OF_PRECISION[want], (name, tensor, want)
        for tensor, want in zip(node.output, io.outputs, strict=True):
            if want is not None:
                assert types[tensor] == ELEM_OF_PRECISION[want], (name, tensor, want)
        if decision.kind == "compute":
            first_float = next(t for t, p in zip(node.output, io.outputs, strict=True) if p is not None)
            assert types[first_float] == ELEM_OF_PRECISION[decision.precision], name


def assert_emulation_rounds_only(model: onnx.ModelProto) -> None:
    """In the emulation graph low types exist only between a rounding Cast and its Cast back."""
    types = realized_types(model)
    assert all(init.data_type not in LOW for init in model.graph.initializer)
    consumers: dict[str, list] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    for node in model.graph.node:
        for out in node.output:
            if types.get(out) in LOW:
                assert node.op_type == "Cast", (node.name, out)
                for reader in consumers.get(out, []):
                    assert reader.op_type == "Cast" and reader.attribute[0].i == F, (reader.name, out)


def check_strong(plan, feeds=None, baseline=None, atol=None):
    model = realize_strong(plan)
    onnx.checker.check_model(model, full_check=True)
    assert_realized_as_planned(plan, model)
    assert [(i.name, i.type.tensor_type.elem_type) for i in model.graph.input] == \
        [(i.name, i.type.tensor_type.elem_type) for i in plan.model.proto.graph.input]
    assert [(o.name, o.type.tensor_type.elem_type) for o in model.graph.output] == \
        [(o.name, o.type.tensor_type.elem_type) for o in plan.model.proto.graph.output]
    # ONNX Runtime's CPU provider has no BF16 kernels for most ops: bf16 runs as emulation only.
    if feeds is not None and plan.low_precision != "bf16":
        outputs = run(model, feeds)
        if atol is not None:
            assert max_error(outputs, baseline) <= atol
    return model


def check_emulation(plan, feeds, baseline=None, atol=None):
    model = realize_emulation(plan)
    onnx.checker.check_model(model, full_check=True)
    assert_emulation_rounds_only(model)
    outputs = run(model, feeds)
    if atol is not None:
        assert max_error(outputs, baseline) <= atol
    return model, outputs


@cache
def built(name: str):
    model = load_model(BUILDERS[name]())
    feeds = sample_feeds(model.proto)
    return model, feeds, run(model.proto, feeds)


# -- every builder under every precision ------------------------------------------------
def _compute_nodes(model) -> set[str]:
    """Names of the nodes a rule can change (a rule selecting only fixed nodes is a PatternError)."""
    return {n for n, d in PrecisionPolicy().resolve(model).nodes.items() if d.kind == "compute"}


def policy_for(name: str, model) -> PrecisionPolicy:
    if name == "fp16-islands":  # every other node kept fp32: many boundaries
        compute = _compute_nodes(model)
        return PrecisionPolicy("fp16", keep_fp32=[n.name for n in model.proto.graph.node[::2]
                                                  if n.op_type != "If" and n.name in compute])
    return PrecisionPolicy(name)


@pytest.mark.parametrize("policy_name", ["fp32", "fp16", "bf16", "fp16-islands"])
@pytest.mark.parametrize("builder", list(BUILDERS))
def test_builders_realize_check_and_run(builder, policy_name):
    model, feeds, baseline = built(builder)
    plan = policy_for(policy_name, model).resolve(model)
    tolerance = {"fp32": 0.0, "fp16": 0.05, "bf16": 0.5}[plan.low_precision or "fp32"]
    check_strong(plan, feeds, baseline, atol=tolerance)
    check_emulation(plan, feeds, baseline, atol=tolerance)


def test_builders_are_deterministic_and_valid():
    for name, builder in BUILDERS.items():
        model = builder()
        onnx.checker.check_model(model, full_check=True)
        assert model.SerializeToString(deterministic=True) == builder().SerializeToString(deterministic=True), name
        assert len({n.name for n in model.graph.node}) == len(model.graph.node), name
    assert decomposed_layernorm_block(seed=1).SerializeToString() != decomposed_layernorm_block().SerializeToString()
    feeds = sample_feeds(attention_block(vocab=5))
    assert feeds["input_ids"].max() < 5 and feeds["attention_mask"].tolist() == [[1] * 7 + [0]]


@pytest.mark.parametrize("builder", list(BUILDERS))
def test_fp32_policy_reproduces_outputs_exactly(builder):
    model, feeds, baseline = built(builder)
    plan = PrecisionPolicy().resolve(model)
    assert plan.boundaries == []
    strong = realize_strong(plan)
    for got, want in zip(run(strong, feeds), baseline, strict=True):
        np.testing.assert_array_equal(got, want)
    emulation = realize_emulation(plan)
    assert [n.op_type for n in emulation.graph.node] == [n.op_type for n in strong.graph.node]
    for got, want in zip(run(emulation, feeds), baseline, strict=True):
        np.testing.assert_array_equal(got, want)


def test_realization_leaves_the_model_alone_and_is_deterministic():
    model = load_model(attention_block())
    before = model.proto.SerializeToString(deterministic=True)
    plan = PrecisionPolicy("fp16", keep_fp32=["op:Softmax"]).resolve(model)
    first = realize_strong(plan).SerializeToString(deterministic=True)
    assert realize_strong(plan).SerializeToString(deterministic=True) == first
    assert realize_emulation(plan).SerializeToString(deterministic=True) == \
        realize_emulation(plan).SerializeToString(deterministic=True)
    assert model.proto.SerializeToString(deterministic=True) == before


# -- what the strong graph looks like ---------------------------------------------------
def test_casts_are_named_reused_and_graph_outputs_cast_back():
    plan = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"]).resolve(decomposed_layernorm_block())
    model = realize_strong(plan)
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    dense = "/encoder/layer.0/attention/output/dense/Add_output_0"
    assert [(c.name, c.input[0], c.output[0], c.attribute[0].i) for c in casts] == [
        ("hidden_states/Cast_to_fp16", "hidden_states", "hidden_states__cast_fp16", F16),
        (f"{dense}/Cast_to_fp32", dense, f"{dense}__cast_fp32", F),
        (f"{LN}/Add_1_output_0/Cast_to_fp16", f"{LN}/Add_1_output_0", f"{LN}/Add_1_output_0__cast_fp16", F16),
        ("output/Cast_to_fp32", "output__fp16", "output", F),
    ]
    # ReduceMean and Sub both read the dense output in fp32: one Cast serves both.
    readers = [n.name for n in model.graph.node if f"{dense}__cast_fp32" in n.input]
    assert readers == [f"{LN}/ReduceMean", f"{LN}/Sub"]
    assert len(casts) == len(plan.boundaries)
    # float Constants were folded into initializers stored as their readers need
    inits = {i.name: i.data_type for i in model.graph.initializer}
    assert inits[f"{LN}/Constant_output_0"] == F and inits[f"{LN}/Constant_1_output_0"] == F
    assert not any(n.op_type == "Constant" for n in model.graph.node)


def test_source_casts_to_float_follow_the_plan():
    plan = PrecisionPolicy("fp16").resolve(attention_block())
    model = realize_strong(plan)
    cast = next(n for n in model.graph.node if n.name == "/attention/Cast")
    assert cast.attribute[0].i == F16


def test_shared_initializer_gets_one_copy_per_precision():
    plan = PrecisionPolicy("fp16", rules=["/transformer/wte/Gather=fp32"]).resolve(shared_initializer_model())
    model = realize_strong(plan)
    inits = {i.name: i for i in model.graph.initializer}
    w = "transformer.wte.weight"
    assert (inits[w].data_type, inits[f"{w}__fp16"].data_type) == (F, F16)
    readers = {n.name: list(n.input) for n in model.graph.node}
    assert readers["/transformer/wte/Gather"][0] == w
    assert readers["/lookup/MatMul"][1] == f"{w}__fp16"
    assert readers["/tied/Identity"] == [f"{w}__fp16"]
    original = onnx.numpy_helper.to_array(shared_initializer_model().graph.initializer[0])
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(inits[w]), original)
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(inits[f"{w}__fp16"]), original.astype(np.float16))
    # all readers in fp16: converted in place, no copy
    model = realize_strong(PrecisionPolicy("fp16").resolve(shared_initializer_model()))
    assert {i.name: i.data_type for i in model.graph.initializer}[w] == F16
    assert f"{w}__fp16" not in {i.name for i in model.graph.initializer}


def test_resize_scales_stay_float():
    for precision in ("fp16", "bf16"):
        model = realize_strong(PrecisionPolicy(precision).resolve(resize_model()))
        resize = next(n for n in model.graph.node if n.op_type == "Resize")
        types = realized_types(model)
        assert resize.input[2] == "up.scales" and types["up.scales"] == F
        assert types[resize.input[0]] == ELEM_OF_PRECISION[precision]


def test_control_flow_subgraphs_read_a_cast_copy():
    model, feeds, baseline = built("if_model")
    plan = PrecisionPolicy("fp16").resolve(model)
    strong = check_strong(plan, feeds, baseline, atol=0.05)
    branch = next(n for n in strong.graph.node if n.op_type == "If")
    for attr in branch.attribute:
        assert attr.g.node[0].input[0] == "/pre/Mul_output_0__cast_fp32"
        assert attr.g.node[0].input[1] in {"then.value", "else.value"}
    original = if_model()
    assert original.graph.node[3].attribute[0].g.node[0].input[0] == "/pre/Mul_output_0"


def test_fp16_initializers_clamp_at_65504_not_1e4():
    values = np.array([1e5, -7e4, 2e4, 65504, np.inf, 1.5], np.float32)
    model = graph_model([helper.make_node("Mul", ["x", "w"], ["y"], name="/mul")],
                        [("x", F, [6])], [("y", F, [6])], [("w", values)])
    plan = PrecisionPolicy("fp16").resolve(model)
    strong = realize_strong(plan)
    stored = onnx.numpy_helper.to_array(strong.graph.initializer[0])
    assert stored.dtype == np.float16
    np.testing.assert_array_equal(stored.astype(np.float32), [65504, -65504, 20000, 65504, np.inf, 1.5])
    assert realization_notes(strong) == [
        "initializer 'w': 2 value(s) outside the fp16 range were clamped to +-65504 (inf and NaN are kept)"]
    emulated = onnx.numpy_helper.to_array(realize_emulation(plan).graph.initializer[0])
    assert emulated.dtype == np.float32
    np.testing.assert_array_equal(emulated, [65504, -65504, 20000, 65504, np.inf, 1.5])
    assert realization_notes(realize_strong(PrecisionPolicy().resolve(model))) == []


def test_to_fp16_counts_and_keeps_nan():
    half, clamped = to_fp16(np.array([np.nan, -1e6, 0.1], np.float32))
    assert np.isnan(half[0]) and half[1] == -65504 and clamped == 1


# -- BF16 -------------------------------------------------------------------------------
def test_bf16_rounding_matches_round_to_nearest_even():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.standard_normal(2000).astype(np.float32) * np.float32(10.0) ** rng.integers(-40, 38, 2000),
        np.array([0.0, -0.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-9, 3.14159, 1e-40, -1e-45, np.inf, -np.inf,
                  BF16_MAX], np.float32),
    ]).astype(np.float32)
    values = values[np.abs(values) <= BF16_MAX]
    bits, clamped = to_bf16_bits(values)
    assert clamped == 0
    np.testing.assert_array_equal(bits, values.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert bf16_bits_to_fp32(to_bf16_bits(np.array([3.14159], np.float32))[0])[0] == np.float32(3.140625)


def test_bf16_saturates_and_keeps_nan():
    bits, clamped = to_bf16_bits(np.array([np.finfo(np.float32).min, np.nan, np.finfo(np.float32).max], np.float32))
    back = bf16_bits_to_fp32(bits)
    assert clamped == 2 and back[0] == -BF16_MAX and back[2] == BF16_MAX and np.isnan(back[1])
    np.testing.assert_array_equal(round_to(np.array([1.0 + 2**-9], np.float32), "bf16"), [1.0])
    np.testing.assert_array_equal(round_to(np.array([1.0 + 2**-11], np.float32), "fp16"), [1.0])


def test_bf16_realized_graph_and_emulation():
    model, feeds, baseline = built("attention_block")
    plan = PrecisionPolicy("bf16").resolve(model)
    strong = check_strong(plan)
    types = realized_types(strong)
    assert types["/attention/self/Softmax_output_0"] == BF16
    assert {i.name: i.data_type for i in strong.graph.initializer}["embeddings.word_embeddings.weight"] == BF16
    assert "clamped" in realization_notes(strong)[0]  # the float32-min mask constant
    _, bf16_out = check_emulation(plan, feeds, baseline, atol=0.5)
    _, fp16_out = check_emulation(PrecisionPolicy("fp16").resolve(model), feeds, baseline)
    # bf16 keeps 8 mantissa bits, fp16 11: the emulation shows the difference
    assert max_error(bf16_out, baseline) > 2 * max_error(fp16_out, baseline) > 0


# -- the emulation graph ----------------------------------------------------------------
def test_emulation_shows_fp16_layernorm_overflow_and_the_fp32_island_fixes_it():
    model = load_model(decomposed_layernorm_block())
    feeds = sample_feeds(model.proto, scale=400.0)  # |x - mean| > 256: (x - mean)**2 > 65504
    baseline = run(model.proto, feeds)
    pow_out = f"{LN}/Pow_output_0"

    plan = PrecisionPolicy("fp16").resolve(model)
    emulation = with_outputs(realize_emulation(plan), [pow_out])
    out, pow_values = run(emulation, feeds)
    assert np.isinf(pow_values).any()  # the original tensor name carries the rounded value
    assert max_error([out], baseline) > 1.0

    kept = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"]).resolve(model)
    _, outputs = check_emulation(kept, feeds)
    assert max_error(outputs, baseline) < 1e-2


def test_emulation_keeps_original_tensor_names():
    model, feeds, _ = built("attention_block")
    float_tensors = [n for n, p in PrecisionPolicy().resolve(model).tensor_precision.items()
                     if n not in model.proto.graph.output[0].name]
    node_outputs = [o for node in model.proto.graph.node for o in node.output
                    if o in float_tensors and node.op_type != "Constant"]
    baseline = dict(zip(["output", *node_outputs], run(with_outputs(model.proto, node_outputs), feeds), strict=True))

    fp32 = realize_emulation(PrecisionPolicy().resolve(model))
    got = dict(zip(["output", *node_outputs], run(with_outputs(fp32, node_outputs), feeds), strict=True))
    for name in node_outputs:
        np.testing.assert_array_equal(got[name], baseline[name], err_msg=name)

    plan = PrecisionPolicy("fp16", keep_fp32=["op:Softmax"]).resolve(model)
    emulated = dict(zip(["output", *node_outputs], run(with_outputs(realize_emulation(plan), node_outputs), feeds), strict=True))
    for name in node_outputs:
        value = emulated[name]
        assert value.dtype == np.float32
        expected = baseline[name]
        if plan.tensor_precision[name] == "fp16":  # stored rounded under its own name
            np.testing.assert_array_equal(value, value.astype(np.float16).astype(np.float32), err_msg=name)
            expected = np.clip(expected, -65504, 65504)  # the float32-min mask fill saturates
        np.testing.assert_allclose(value, expected, rtol=0.05, atol=0.05, err_msg=name)


def test_emulation_derives_from_the_strong_graph():
    plan = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"]).resolve(decomposed_layernorm_block())
    strong, emulation = realize_strong(plan), realize_emulation(plan)
    emulated = {n.name: n for n in emulation.graph.node}
    for node in strong.graph.node:
        if node.op_type == "Cast" and node.attribute[0].i == F:  # low -> fp32 became Identity
            assert emulated[node.name].op_type == "Identity"
        else:
            assert emulated[node.name].op_type == node.op_type
    rounds = [n for n in emulation.graph.node if n.name.endswith("/Round_back_fp32")]
    low_tensors = [t for t, e in realized_types(strong).items() if e == F16]
    inits = {i.name for i in strong.graph.initializer}
    assert len(rounds) == len([t for t in low_tensors if t not in inits])
    meta = {p.key: p.value for p in emulation.metadata_props}
    assert meta["pytest_trt.realization"] == "emulation" and meta["pytest_trt.plan"] == plan.fingerprint()


# -- weak typing hints ------------------------------------------------------------------
def test_weak_hints_cover_compute_nodes_only():
    plan = PrecisionPolicy("fp16", keep_fp32=["op:Softmax"]).resolve(attention_block())
    hints = weak_hints(plan)
    compute = {n for n, d in plan.nodes.items() if d.kind == "compute"}
    assert set(hints.layer_precision) == compute
    assert hints.default == "fp16"
    assert hints.layer_precision["/attention/self/Softmax"] == "fp32"
    assert hints.layer_precision["/attention/self/MatMul"] == "fp16"
    assert "/attention/self/Shape" not in hints.output_types
    assert hints.output_types["/attention/self/MatMul"] == {0: "fp16"}
    assert hints.output_types["/attention/output/dense/Add"] == {0: "fp32"}  # a graph output
    assert json.loads(json.dumps(hints.to_json()))["output_types"]["/attention/self/MatMul"] == {"0": "fp16"}


# -- odd models -------------------------------------------------------------------------
def test_initializers_listed_as_inputs_stay_overridable():
    # IR 3 lists every initializer as a graph input: a default the caller may feed.
    model = graph_model([helper.make_node("Mul", ["x", "w"], ["m"], name="/mul"),
                         helper.make_node("Relu", ["m"], ["y"], name="/relu")],
                        [("x", F, [2]), ("w", F, [2])], [("y", F, [2])], [("w", np.ones(2, np.float32))],
                        opset=9, check=False)
    model.ir_version = 3
    plan = PrecisionPolicy("fp16").resolve(load_model(model))
    assert ("w", "fp32", "fp16") in plan.boundaries  # a Cast, not a stored copy
    strong = realize_strong(plan)
    onnx.checker.check_model(strong, full_check=True)
    assert {i.name: i.type.tensor_type.elem_type for i in strong.graph.input} == {"x": F, "w": F}
    assert {i.name: i.data_type for i in strong.graph.initializer} == {"w": F}
    x = np.array([1.0, -2.0], np.float32)
    for realized in (strong, realize_emulation(plan)):
        np.testing.assert_allclose(run(realized, {"x": x})[0], [1.0, 0.0])
    # From IR 4 on, ONNX Runtime lets the caller feed such an input: the fed value must be used.
    model.ir_version = 8
    plan = PrecisionPolicy("fp16").resolve(load_model(model))
    for realized in (realize_strong(plan), realize_emulation(plan)):
        np.testing.assert_allclose(run(realized, {"x": x, "w": np.full(2, -3, np.float32)})[0], [0.0, 6.0])


def test_fp16_model_with_fp32_policy_computes_in_fp32():
    model = graph_model([helper.make_node("Mul", ["x", "w"], ["y"], name="/mul")],
                        [("x", F16, [2])], [("y", F16, [2])], [("w", np.full(2, 3, np.float16))])
    plan = PrecisionPolicy().resolve(model)
    strong = check_strong(plan)
    assert realized_types(strong)["w"] == F
    x = np.array([1.5, 2.0], np.float16)
    np.testing.assert_array_equal(run(strong, {"x": x})[0], (x * 3).astype(np.float16))


# -- random rule sets never produce an invalid graph ------------------------------------
_RANDOM_MODELS = ("attention_block", "shared_initializer_model", "if_model", "decomposed_layernorm_block",
                  "resize_model")


def _pattern_pool(model) -> list[str]:
    """Patterns that select at least one compute node (one selecting only fixed nodes is a PatternError)."""
    compute = [n for n in model.proto.graph.node if n.op_type != "If" and n.name in _compute_nodes(model)]
    names = [n.name for n in compute]
    ops = sorted({f"op:{n.op_type}" for n in compute})
    scopes = sorted({"/".join(n.split("/")[:2]) + "/*" for n in names if n.count("/") >= 2})
    return names + ops + scopes


@st.composite
def _random_plan(draw):
    model, feeds, baseline = built(draw(st.sampled_from(_RANDOM_MODELS)))
    low = draw(st.sampled_from(["fp16", "bf16"]))
    default = draw(st.sampled_from(["fp32", low]))
    rules = draw(st.lists(st.tuples(st.sampled_from(_pattern_pool(model)), st.sampled_from(["fp32", low])),
                          max_size=6))
    policy = PrecisionPolicy(default, rules=rules)
    return model, feeds, baseline, policy


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_random_plan())
def test_random_rule_sets_always_realize_valid_graphs(case):
    model, feeds, baseline, policy = case
    try:
        plan = policy.resolve(model)
    except UnsupportedPrecisionError as exc:  # e.g. bf16 on an op without it: refused, not broken
        plan = policy.with_rules([f"op:{t}=fp32" for t in exc.op_types]).resolve(model)
    check_strong(plan, feeds, baseline, atol=0.05)
    check_emulation(plan, feeds, baseline, atol=0.5)
    assert set(weak_hints(plan).layer_precision) == {n for n, d in plan.nodes.items() if d.kind == "compute"}


# -- real torch.onnx exports (tests/data) -----------------------------------------------
_LN_PATTERNS = ("op:LayerNormalization", "*/LayerNorm/*", "*/ln_*/*", "*/layernorm*/*")


@cache
def _export(path: Path):
    model = load_model(path)
    feeds = export_feeds(model)
    return model, feeds, run(model.proto, feeds)


def _layernorm_patterns(model) -> list[str]:
    nodes = model.proto.graph.node
    return [p for p in _LN_PATTERNS if any(Rule(p, "fp32").matches(n) for n in nodes)]


@pytest.mark.skipif(not REAL_EXPORTS, reason="tests/data has no .onnx exports (see tests/data/README.md)")
@pytest.mark.parametrize("keep_layernorm", [False, True], ids=["all-low", "layernorm-fp32"])
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("path", REAL_EXPORTS, ids=[p.stem for p in REAL_EXPORTS])
def test_real_exports_realize(path, precision, keep_layernorm):
    model, feeds, baseline = _export(path)
    keep: list[str] = []
    if keep_layernorm:
        keep = _layernorm_patterns(model)
        assert keep, f"no LayerNorm pattern matches {path.name}"
    policy = PrecisionPolicy(precision, keep_fp32=keep)
    try:
        plan = policy.resolve(model)
    except UnsupportedPrecisionError as exc:
        # The documented way out: keep the ops that lack the type in fp32.
        assert precision == "bf16" and f"keep_fp32=[{', '.join(repr('op:' + t) for t in exc.op_types)}]" in str(exc)
        plan = PrecisionPolicy(precision, keep_fp32=keep + [f"op:{t}" for t in exc.op_types]).resolve(model)
    if keep_layernorm:
        assert all(plan.nodes[n].precision == "fp32" for p in keep for n in plan.match(p)
                   if plan.nodes[n].kind == "compute")
    atol = 0.05 if precision == "fp16" else 0.5
    check_strong(plan, feeds, baseline, atol=atol)
    check_emulation(plan, feeds, baseline, atol=atol)
