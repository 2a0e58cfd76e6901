"""PrecisionPlan: resolution of policies against models, node kinds, typing, errors."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pytest_trt.errors import ModelError, PatternError
from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import (
    attention_block,
    decomposed_layernorm_block,
    graph_model,
    if_model,
    layernorm17_block,
    resize_model,
    shared_initializer_model,
)
from pytest_trt.plan import PrecisionPlan, UnsupportedPrecisionError
from pytest_trt.plan.policy import PrecisionPolicy

F, F16, D, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64
LN = "/encoder/layer.0/attention/output/LayerNorm"
LN_COMPUTE = [f"{LN}/{n}" for n in ("ReduceMean", "Sub", "Pow", "ReduceMean_1", "Add", "Sqrt", "Div", "Mul", "Add_1")]


@pytest.fixture(scope="module")
def ln_model():
    return load_model(decomposed_layernorm_block())


@pytest.fixture(scope="module")
def att_model():
    return load_model(attention_block())


def resolve(model, *args, **kwargs) -> PrecisionPlan:
    return PrecisionPolicy(*args, **kwargs).resolve(model)


# -- decisions and rule order ----------------------------------------------------------
def test_default_precision_and_fixed_constants(ln_model):
    plan = resolve(ln_model, "fp16")
    assert list(plan.nodes) == ln_model.node_names()  # topological (graph) order
    for name in LN_COMPUTE:
        assert plan.nodes[name].precision == "fp16"
        assert plan.nodes[name].rule == "default"
        assert plan.nodes[name].kind == "compute"
    for const in (f"{LN}/Constant", f"{LN}/Constant_1"):
        decision = plan.nodes[const]
        assert (decision.kind, decision.precision) == ("fixed", None)
        assert decision.rule == "fixed: Constant is a source node"
    assert plan.counts() == {"fp32": 0, "fp16": 12, "bf16": 0, "fixed": 2}
    assert plan.low_precision == "fp16"


def test_keep_fp32_records_the_deciding_rule(ln_model):
    plan = resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/*"])
    for name in LN_COMPUTE:
        assert (plan.precision_of(name), plan.nodes[name].rule) == ("fp32", "*/LayerNorm/*=fp32")
    assert plan.precision_of("/encoder/layer.0/attention/output/dense/MatMul") == "fp16"
    # A Constant under the pattern stays fixed; an fp32 rule on it is no conflict.
    assert plan.nodes[f"{LN}/Constant"].rule == "fixed: Constant is a source node"


def test_later_rule_wins(ln_model):
    plan = resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/*"], rules=[f"{LN}/Add_1=fp16", "op:Sqrt=fp16",
                                                                         f"{LN}/Sqrt=fp32"])
    assert plan.nodes[f"{LN}/Add_1"].precision == "fp16"
    assert plan.nodes[f"{LN}/Add_1"].rule == f"{LN}/Add_1=fp16"
    assert plan.nodes[f"{LN}/Sqrt"].rule == f"{LN}/Sqrt=fp32"  # the last of three matching rules
    assert plan.nodes[f"{LN}/Div"].rule == "*/LayerNorm/*=fp32"


def test_fp16_rules_on_fp32_default(ln_model):
    plan = resolve(ln_model, rules=["op:MatMul=fp16"])
    assert plan.counts() == {"fp32": 10, "fp16": 2, "bf16": 0, "fixed": 2}
    assert plan.low_precision == "fp16"
    assert resolve(ln_model).low_precision is None
    assert resolve(ln_model, "fp16", keep_fp32=["*"]).low_precision is None


def test_op_rules(att_model):
    plan = resolve(att_model, "fp16", keep_fp32=["op:Softmax"])
    assert plan.nodes["/attention/self/Softmax"].precision == "fp32"
    assert plan.nodes["/attention/self/Softmax"].rule == "op:Softmax=fp32"
    assert plan.match("op:Softmax") == ["/attention/self/Softmax"]


# -- patterns that match nothing --------------------------------------------------------
def test_unmatched_glob_names_pattern_and_closest_nodes(ln_model):
    with pytest.raises(PatternError) as info:
        resolve(ln_model, "fp16", keep_fp32=["*/LayerNrom/*"])
    message = str(info.value)
    assert "'*/LayerNrom/*' (from keep_fp32) matches no node of decomposed_layernorm_block" in message
    assert "Closest node names:" in message and message.count(f"'{LN}/") >= 3
    assert "fix or remove the pattern" in message


def test_unmatched_glob_hints_missing_star_and_case(ln_model):
    with pytest.raises(PatternError, match=r"'\*encoder/layer\.0/\*' would match 14 node"):
        resolve(ln_model, rules=["encoder/layer.0/*=fp16"])
    with pytest.raises(PatternError, match="Ignoring case it would match 11 node"):
        resolve(ln_model, keep_fp32=["*/layernorm/*"])


def test_unmatched_op_names_closest_op_types(att_model):
    with pytest.raises(PatternError) as info:
        resolve(att_model, "fp16", keep_fp32=["op:softmax"])
    message = str(info.value)
    assert "'op:softmax'" in message and "did you mean 'op:Softmax'" in message
    with pytest.raises(PatternError, match="Closest op types in the model: LayerNormalization"):
        resolve(load_model(layernorm17_block()), keep_fp32=["op:LayerNorm"])


def test_match_and_precision_of(ln_model):
    plan = resolve(ln_model, "fp16")
    assert plan.match("*/LayerNorm/Add*") == [f"{LN}/Add", f"{LN}/Add_1"]
    with pytest.raises(PatternError, match="matches no node"):
        plan.match("*/Nope/*")
    with pytest.raises(PatternError, match="empty"):
        plan.match("")
    with pytest.raises(PatternError, match="no node named '/nope'; closest names"):
        plan.precision_of("/nope")


# -- fixed nodes ------------------------------------------------------------------------
def test_shape_math_and_int_gathers_are_fixed(att_model):
    plan = resolve(att_model, "fp16")
    fixed = {n for n, d in plan.nodes.items() if d.kind == "fixed"}
    assert {"/attention/self/Shape", "/attention/self/Gather", "/attention/self/Concat",
            "/attention/Unsqueeze"} <= fixed
    assert plan.nodes["/attention/self/Shape"].rule == "fixed: no float output"
    # Gather on the embedding table computes (float output); the int mask Cast to float too.
    assert plan.nodes["/embeddings/word_embeddings/Gather"].precision == "fp16"
    assert plan.nodes["/attention/Cast"].precision == "fp16"


def test_cast_to_int_is_fixed_and_reads_as_stored():
    model = graph_model(
        [helper.make_node("Mul", ["x", "x"], ["m"], name="/mul"),
         helper.make_node("Cast", ["m"], ["i"], name="/to_int", to=I64),
         helper.make_node("Cast", ["i"], ["f"], name="/to_float", to=F),
         helper.make_node("Add", ["f", "x"], ["y"], name="/add")],
        [("x", F, [4])], [("y", F, [4])],
    )
    plan = resolve(model, "fp16")
    assert plan.nodes["/to_int"].kind == "fixed"
    assert plan.nodes["/to_float"].precision == "fp16"  # Cast to a float type computes
    assert plan.node_io["/to_int"].inputs == ("fp16",)  # Cast accepts anything: no extra Cast
    assert ("m", "fp16", "fp32") not in plan.boundaries


def test_low_rule_on_fixed_node_is_ignored_but_recorded(att_model):
    plan = resolve(att_model, rules=["/attention/self/*=fp16"])  # matches compute nodes and the fixed Shape
    assert plan.nodes["/attention/self/Shape"].rule == "fixed: no float output (ignored rule /attention/self/*=fp16)"
    assert plan.nodes["/attention/self/Concat"].rule == "fixed: no float output (ignored rule /attention/self/*=fp16)"


@pytest.mark.parametrize("rule", ["op:Shape=fp16", "op:Concat=fp32"])
def test_a_rule_selecting_only_fixed_nodes_is_an_error_it_would_change_nothing(att_model, rule):
    # issue 28: `--keep-fp32 op:Shape` was a silent no-op
    with pytest.raises(PatternError, match=rf"precision pattern '{rule.split('=')[0]}' selects no float "
                                           r"computation in .*all fixed .*no float output.*changes nothing"):
        resolve(att_model, rules=[rule])


def test_fixed_inputs_of_one_type_variable_agree():
    # Greater(fp16 tensor, fp32 graph input): both are read in fp32.
    model = graph_model(
        [helper.make_node("Mul", ["x", "x"], ["m"], name="/mul"),
         helper.make_node("Greater", ["m", "t"], ["g"], name="/greater"),
         helper.make_node("Where", ["g", "m", "x"], ["y"], name="/where")],
        [("x", F, [4]), ("t", F, [4])], [("y", F, [4])],
    )
    plan = resolve(model, "fp16")
    assert plan.nodes["/greater"].kind == "fixed"
    assert plan.node_io["/greater"].inputs == ("fp32", "fp32")
    assert ("m", "fp16", "fp32") in plan.boundaries


def test_fixed_node_compares_in_fp16_against_a_constant():
    plan = resolve(if_model(), "fp16")
    assert plan.node_io["/cond/Greater"].inputs == ("fp16", "fp16")  # 'zero' follows the tensor


# -- control flow -----------------------------------------------------------------------
def test_control_flow_is_fixed_and_reads_outer_tensors_as_written():
    plan = resolve(if_model(), "fp16")
    decision = plan.nodes["/branch/If"]
    assert (decision.kind, decision.rule) == ("fixed", "fixed: control flow is kept as written (fp32)")
    assert plan.node_io["/branch/If"].implicit == (("/pre/Mul_output_0", "fp32"),)
    assert ("/pre/Mul_output_0", "fp16", "fp32") in plan.boundaries


def test_low_rule_on_control_flow_is_an_error():
    with pytest.raises(ModelError, match=r"'/branch/If' \(If\).*control flow is kept as written; remove the rule "
                                         r"or keep it fp32"):
        resolve(if_model(), rules=["op:If=fp16"])
    # a later fp32 rule settles it (a rule over fixed nodes only, allowed because it settles an earlier one)
    plan = resolve(if_model(), "fp32", rules=["/*=fp16", "op:If=fp32"])
    assert plan.nodes["/branch/If"].kind == "fixed" and plan.nodes["/post/Relu"].precision == "fp16"
    # an earlier rule that matches only the If changes nothing once settled: an error like any such rule
    with pytest.raises(PatternError, match=r"'/branch/\*' selects no float computation"):
        resolve(if_model(), "fp16", rules=["/branch/*=fp16", "op:If=fp32"])


# -- ops that do not allow the low precision --------------------------------------------
def _conv_model(opset=14):
    rng = np.random.default_rng(0)
    return graph_model(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="/patch/Conv"),
         helper.make_node("Relu", ["c"], ["y"], name="/act/Relu")],
        [("x", F, [1, 3, 4, 4])], [("y", F, [1, 2, 2, 2])],
        [("w", rng.standard_normal((2, 3, 3, 3)).astype(np.float32))], opset=opset,
    )


def test_op_without_the_low_type_falls_back_to_fp32_when_only_the_default_asked():
    plan = resolve(_conv_model(), "bf16")
    conv = plan.nodes["/patch/Conv"]
    assert conv.precision == "fp32"
    assert conv.rule == "default bf16 -> fp32: Conv has no bf16 form at opset 14"
    assert plan.nodes["/act/Relu"].precision == "bf16"
    assert resolve(_conv_model(), "fp16").nodes["/patch/Conv"].precision == "fp16"
    assert resolve(_conv_model(opset=22), "bf16").nodes["/patch/Conv"].precision == "bf16"


def test_op_without_the_low_type_is_an_error_when_a_rule_asked_naming_node_op_opset():
    with pytest.raises(UnsupportedPrecisionError) as info:
        resolve(_conv_model(), "fp32", rules=[("op:Conv", "bf16")])
    message = str(info.value)
    assert "'/patch/Conv'" in message and "Conv (opset 14)" in message
    assert "keep_fp32=['op:Conv']" in message
    assert info.value.op_types == ["Conv"] and info.value.precision == "bf16"
    assert isinstance(info.value, ModelError)


def test_input_only_type_variable_follows_the_schema():
    plan = resolve(decomposed_layernorm_block(), "fp16")
    assert plan.node_io[f"{LN}/Pow"].inputs == ("fp16", "fp16")  # Pow-13 T1 allows fp16
    plan = resolve(decomposed_layernorm_block(), "bf16")
    # ... but not bf16: the exponent would stay FLOAT and TensorRT would run the layer in FP32
    # (issue 16: every GPT-2 Pow planned bf16 parsed as FP32), so the plan says fp32 and why
    assert plan.nodes[f"{LN}/Pow"].precision == "fp32"
    assert "'Y' (T1) has no bf16 type at opset" in plan.nodes[f"{LN}/Pow"].rule
    assert plan.node_io[f"{LN}/Pow"].inputs == ("fp32", "fp32")
    plan = resolve(decomposed_layernorm_block(opset=18), "bf16")
    assert plan.node_io[f"{LN}/Pow"].inputs == ("bf16", "bf16")  # Pow-15 does


def test_concrete_input_types_are_kept():
    plan = resolve(resize_model(), "fp16")
    assert plan.node_io["/up/Resize"].inputs == ("fp16", None, "fp32")  # X, roi (absent), scales
    assert plan.tensor_precision["up.scales"] == "fp32"


def test_other_output_constraints_keep_their_types():
    model = layernorm17_block()
    node = model.graph.node[2]
    assert node.op_type == "LayerNormalization"
    node.output.extend(["ln_mean", "ln_invstd"])
    plan = resolve(model, "fp16")
    io = plan.node_io[node.name]
    assert io.outputs == ("fp16", "fp32", "fp32")
    assert plan.tensor_precision["ln_mean"] == "fp32"


# -- model errors -----------------------------------------------------------------------
def test_double_tensors_are_refused():
    model = graph_model([helper.make_node("Cast", ["x"], ["d"], name="/to_double", to=D),
                         helper.make_node("Cast", ["d"], ["y"], name="/back", to=F)],
                        [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(ModelError, match=r"tensor 'd' \(output of node '/to_double', op Cast\) is DOUBLE"):
        resolve(model, "fp16")


def test_unknown_float_type_is_an_error_naming_tensor_and_node():
    custom = helper.make_node("Mystery", ["x"], ["m"], name="/custom/Mystery", domain="example.ops")
    model = graph_model([custom, helper.make_node("Relu", ["m"], ["y"], name="/relu")],
                        [("x", F, [2])], [("y", F, [2])], check=False)
    model.opset_import.append(helper.make_opsetid("example.ops", 1))
    with pytest.raises(ModelError, match=r"element type of tensor 'm' \(output 0 of node '/custom/Mystery', "
                                         r"op example\.ops::Mystery\)"):
        resolve(load_model(model, check=False), "fp16")
    # with its type stated, a schema-less op is kept as written
    model.graph.value_info.append(helper.make_tensor_value_info("m", F, [2]))
    plan = resolve(load_model(model, check=False), "fp16")
    assert plan.nodes["/custom/Mystery"].rule.startswith("fixed: no ONNX schema for example.ops::Mystery")
    assert plan.node_io["/custom/Mystery"].inputs == ("fp32",)


# -- storage, boundaries, reports -------------------------------------------------------
def test_tensor_precision_and_boundaries_of_an_fp32_island(ln_model):
    plan = resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/*"])
    dense = "/encoder/layer.0/attention/output/dense/Add_output_0"
    assert plan.tensor_precision["hidden_states"] == "fp32"
    assert plan.tensor_precision["output"] == "fp32"  # graph outputs keep their type
    assert plan.tensor_precision[dense] == "fp16"
    assert plan.tensor_precision[f"{LN}/Pow_output_0"] == "fp32"
    assert plan.tensor_precision[f"{LN}/Constant_output_0"] == "fp32"  # read by fp32 Pow
    assert plan.boundaries == [
        ("hidden_states", "fp32", "fp16"),
        (dense, "fp16", "fp32"),
        (f"{LN}/Add_1_output_0", "fp32", "fp16"),
        ("output", "fp16", "fp32"),
    ]


def test_initializer_read_in_two_precisions_keeps_its_name_in_fp32():
    plan = resolve(shared_initializer_model(), "fp16", rules=["/transformer/wte/Gather=fp32"])
    assert plan.node_io["/transformer/wte/Gather"].inputs == ("fp32", None)
    assert plan.node_io["/lookup/MatMul"].inputs == ("fp16", "fp16")
    assert plan.tensor_precision["transformer.wte.weight"] == "fp32"
    plan = resolve(shared_initializer_model(), "fp16")
    assert plan.tensor_precision["transformer.wte.weight"] == "fp16"
    assert not any(t == "transformer.wte.weight" for t, _, _ in plan.boundaries)  # copies, not Casts


def test_to_json_form_and_counts(ln_model):
    plan = resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/*"])
    data = json.loads(json.dumps(plan.to_json()))
    assert set(data) == {"model", "policy", "nodes", "counts"}
    assert data["model"] == "decomposed_layernorm_block"
    assert data["policy"] == plan.policy.to_json()
    assert data["nodes"][0] == {"name": "/encoder/layer.0/attention/output/dense/MatMul", "op_type": "MatMul",
                                "precision": "fp16", "rule": "default",
                                # the scope of a TorchScript-style name; no class information in such a name
                                "canonical": "/encoder/layer.0/attention/output/dense/MatMul",
                                "module": "encoder.layer.0.attention.output.dense", "module_class": None}
    assert all(set(n) == {"name", "op_type", "precision", "rule", "canonical", "module", "module_class"}
               for n in data["nodes"])
    assert data["counts"] == {"fp32": 9, "fp16": 3, "bf16": 0, "fixed": 2}
    # issue 28: fixed nodes said "precision": null while counts said "fixed"; now each node's precision is a
    # key of counts, and the counts are those of the nodes
    assert all(n["precision"] in data["counts"] for n in data["nodes"])
    assert {p: sum(n["precision"] == p for n in data["nodes"]) for p in data["counts"]} == data["counts"]
    assert [n["rule"].startswith("fixed: ") for n in data["nodes"] if n["precision"] == "fixed"] == [True, True]
    assert "9 fp32" in plan.summary() and "4 casts" in plan.summary()


def test_fingerprint(ln_model):
    a = resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/*"])
    b = resolve(ln_model, "fp16", rules=["*/LayerNorm/*=fp32"])  # other rule text, same decisions
    c = resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/Pow"])
    d = resolve(load_model(decomposed_layernorm_block(seed=1)), "fp16", keep_fp32=["*/LayerNorm/*"])
    assert len(a.fingerprint()) == 64
    assert a.fingerprint() == b.fingerprint() == resolve(ln_model, "fp16", keep_fp32=["*/LayerNorm/*"]).fingerprint()
    assert len({a.fingerprint(), c.fingerprint(), d.fingerprint()}) == 3


def test_resolve_accepts_paths_and_protos(tmp_path):
    proto = layernorm17_block()
    path = tmp_path / "block.onnx"
    onnx.save(proto, path)
    by_path = PrecisionPolicy("fp16").resolve(path)
    by_proto = PrecisionPolicy("fp16").resolve(proto)
    assert by_path.model.label == "block.onnx"
    assert by_path.fingerprint() == by_proto.fingerprint()
    assert "PrecisionPlan('block.onnx'" in repr(by_path)


def test_originally_fp16_tensors_follow_the_plan():
    model = graph_model([helper.make_node("Mul", ["x", "w"], ["y"], name="/mul")],
                        [("x", F16, [2])], [("y", F16, [2])], [("w", np.ones(2, np.float16))])
    plan = resolve(model)  # fp32: computes in fp32, I/O keep fp16
    assert plan.node_io["/mul"].inputs == ("fp32", "fp32")
    assert plan.tensor_precision["x"] == plan.tensor_precision["y"] == "fp16"
    assert plan.boundaries == [("x", "fp16", "fp32"), ("y", "fp32", "fp16")]
