"""Realization fixes found on ONNX's conformance corpus (issue 18), each on a minimal model:
the strong realization passes check_model(full_check=True) and ONNX Runtime loads it."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_trt import PrecisionPolicy
from pytest_trt.realize import realize_emulation, realize_strong
from pytest_trt.reference.baseline import make_session

F, H, B = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16


def _model(nodes, inputs, outputs, opset=17, inits=(), ir_version=None, domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    imports = [helper.make_opsetid("", opset)] if opset else []
    imports += [helper.make_opsetid(d, v) for d, v in domains]
    model = helper.make_model(graph, opset_imports=imports)
    if ir_version is not None:
        model.ir_version = ir_version
    return model


def _valid(plan, *, load=True):
    strong = realize_strong(plan)
    onnx.checker.check_model(strong, full_check=True)
    if load and plan.low_precision != "bf16":
        make_session(strong.SerializeToString(), label="strong")
    return strong


def _run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_window_output_type_follows_its_attribute(op, precision):
    """output_datatype says FLOAT: the window is kept as written and its reader gets a Cast."""
    nodes = [helper.make_node(op, ["n"], ["w"], name="win", output_datatype=F),
             helper.make_node("Relu", ["w"], ["y"], name="relu")]
    model = _model(nodes, [helper.make_tensor_value_info("n", TensorProto.INT32, [])],
                   [helper.make_tensor_value_info("y", F, ["N"])])
    plan = PrecisionPolicy(default=precision).resolve(model)
    assert plan.nodes["win"].precision is None and "attribute 'output_datatype'" in plan.nodes["win"].rule
    assert plan.nodes["relu"].precision == precision
    _valid(plan)


def test_bitcast_to_float_is_kept_as_written():
    nodes = [helper.make_node("BitCast", ["x"], ["b"], name="bc", to=F),
             helper.make_node("Abs", ["b"], ["y"], name="abs")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
                   [helper.make_tensor_value_info("y", F, [4])], opset=26)
    plan = PrecisionPolicy(default="fp16").resolve(model)
    assert plan.nodes["bc"].precision is None
    _valid(plan, load=False)  # ONNX Runtime 1.32 has no BitCast kernel yet


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_sequence_element_is_cast_not_redeclared(precision):
    seq = onnx.TypeProto()
    seq.sequence_type.elem_type.tensor_type.elem_type = F
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"], name="build"),
             helper.make_node("SequenceAt", ["s", "i"], ["t"], name="at"),
             helper.make_node("Add", ["t", "a"], ["y"], name="add")]
    model = _model(nodes, [helper.make_tensor_value_info("a", F, [2]), helper.make_tensor_value_info("b", F, [2]),
                           helper.make_tensor_value_info("i", TensorProto.INT64, [])],
                   [helper.make_tensor_value_info("y", F, [2])])
    plan = PrecisionPolicy(default=precision).resolve(model)
    assert plan.nodes["at"].precision is None and plan.nodes["add"].precision == precision
    _valid(plan)
    feeds = {"a": np.array([1, 2], np.float32), "b": np.array([3, 4], np.float32), "i": np.array(1, np.int64)}
    assert np.array_equal(_run(realize_emulation(plan), feeds)[0], [4, 6])


def test_ir3_constant_turned_initializer_keeps_its_input_entry_typed():
    """IR 3 lists every initializer as a graph input: the folded, lowered constant's entry follows it."""
    one = helper.make_tensor("one", F, [], [1.0])
    nodes = [helper.make_node("Constant", [], ["c"], name="const", value=one),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [3])],
                   [helper.make_tensor_value_info("y", F, [3])], opset=9, ir_version=3)
    strong = _valid(PrecisionPolicy(default="fp16").resolve(model))
    inits = {i.name: i.data_type for i in strong.graph.initializer}
    inputs = {i.name: i.type.tensor_type.elem_type for i in strong.graph.input}
    assert inits == {"c": H} and inputs["c"] == H


def test_ml_only_model_gets_a_default_domain_import_and_ml_ops_stay_fp32():
    """A model that imports only ai.onnx.ml: its ML nodes are kept as written; a Cast the
    realization needs comes with a default-domain opset import."""
    nodes = [helper.make_node("Normalizer", ["x"], ["n"], name="norm", domain="ai.onnx.ml", norm="L2")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, 3])],
                   [helper.make_tensor_value_info("n", F, [2, 3])], opset=None, domains=[("ai.onnx.ml", 1)])
    plan = PrecisionPolicy(default="fp16").resolve(model)
    assert plan.nodes["norm"].precision is None and "ai.onnx.ml" in plan.nodes["norm"].rule
    _valid(plan)


def test_attention_kv_cache_value_path_has_one_precision():
    """Attention with past_value/present_value: V, the cache and present_value go with Q/K."""
    def vi(name, shape):
        return helper.make_tensor_value_info(name, F, shape)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "pk", "pv"], ["Y", "prk", "prv"], name="attn")
    model = _model([node], [vi("Q", [1, 2, 3, 4]), vi("K", [1, 2, 5, 4]), vi("V", [1, 2, 5, 4]),
                            vi("pk", [1, 2, 2, 4]), vi("pv", [1, 2, 2, 4])],
                   [vi("Y", [1, 2, 3, 4]), vi("prk", [1, 2, 7, 4]), vi("prv", [1, 2, 7, 4])], opset=23)
    plan = PrecisionPolicy(default="fp16").resolve(model)
    assert set(plan.node_io["attn"].inputs) - {None} == {"fp16"} and set(plan.node_io["attn"].outputs) == {"fp16"}
    _valid(plan)


def test_dead_untyped_dropout_mask_is_typed_from_the_schema():
    """Opset <= 9 Dropout's mask is typed T by the schema but left untyped by ONNX inference."""
    nodes = [helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2])],
                   [helper.make_tensor_value_info("y", F, [2])], opset=9)
    for precision in ("fp32", "fp16"):
        plan = PrecisionPolicy(default=precision).resolve(model)
        assert plan.nodes["drop"].precision == precision
        _valid(plan)


def test_pow_exponent_fp16_is_cast_with_the_base():
    x = helper.make_tensor_value_info("x", F, [3])
    nodes = [helper.make_node("Pow", ["x", "e"], ["y"], name="pow")]
    model = _model(nodes, [x], [helper.make_tensor_value_info("y", F, [3])], opset=14,
                   inits=[numpy_helper.from_array(np.array(2.0, np.float32), "e")])
    plan = PrecisionPolicy(default="fp16").resolve(model)
    assert plan.node_io["pow"].inputs == ("fp16", "fp16")
    plan = PrecisionPolicy(default="bf16").resolve(model)
    assert plan.nodes["pow"].precision == "fp32" and "would stay FLOAT" in plan.nodes["pow"].rule
