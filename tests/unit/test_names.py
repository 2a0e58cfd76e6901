"""Node names of today's exports (issue 30): canonical scoped names, module paths, module classes.

Every model here comes from the real exporters (tests/data/exports/, tests/data/make_export_models.py):
the dynamo exporter's ``name_scopes``/``class_hierarchy`` metadata, the TorchScript exporter's
scoped names, and TorchScript's ONNX local functions. Nothing here edits ``metadata_props``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from exports import DECODERS, EXPORTS, FUNCTIONS, NORMS, OTHERS, RMSNORM_OPS, export

from pytest_trt.errors import PatternError
from pytest_trt.model.load import load_model
from pytest_trt.model.names import EMPTY_MODULE_STACK, NodeNames
from pytest_trt.plan.policy import PrecisionPolicy

ALL_DYNAMO = [export(a, "dynamo") for a in (*DECODERS, *OTHERS)]
ALL_TORCHSCRIPT = [export(a, "torchscript") for a in (*DECODERS, *OTHERS)]


def _meta(node) -> dict:
    return {p.key: p.value for p in node.metadata_props}


@pytest.fixture(scope="module")
def models():
    cache: dict = {}

    def get(path):
        if path not in cache:
            cache[path] = load_model(path)
        return cache[path]

    return get


# --------------------------------------------------------------------------------------
# derivation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ALL_DYNAMO, ids=lambda p: p.stem)
def test_dynamo_names_come_from_name_scopes_and_are_unique(models, path):
    model = models(path)
    names = model.names
    assert isinstance(names, NodeNames) and list(names) == model.node_names()
    assert len({e.canonical for e in names.values()}) == len(names)  # canonical names are unique
    for node in model.graph.node:
        entry = names[node.name]
        scopes = _meta(node)["pkg.torch.onnx.name_scopes"]
        if EMPTY_MODULE_STACK in scopes:
            # torch.export's symbolic-size nodes: no module, not a module so named, not a class
            assert (entry.module, entry.module_classes, entry.canonical, entry.source) == (None, (), node.name, "none")
            continue
        assert entry.source == "name_scopes"
        assert entry.canonical.endswith("/" + node.name) and entry.canonical.startswith("/")
        # the op entry of the hierarchy is dropped by position: no aten op, no built-in function is a class
        assert not any(c.startswith(("aten.", "<built-in")) for c in entry.module_classes), entry
        assert entry.module_classes[0].startswith("__main__.")  # the export script's wrapper module
    assert names.sources["none"] == sum(EMPTY_MODULE_STACK in _meta(n)["pkg.torch.onnx.name_scopes"]
                                        for n in model.graph.node) > 0


def test_dynamo_canonical_name_keeps_dotted_segments_whole(models):
    names = models(export("llama", "dynamo")).names
    rsqrt = names["node_rsqrt"]
    assert rsqrt.canonical == "/model/layers.0/input_layernorm/node_rsqrt"
    assert rsqrt.module == "model.layers.0.input_layernorm"
    assert rsqrt.module_class == "transformers.models.llama.modeling_llama.LlamaRMSNorm"
    assert rsqrt.short_class == "LlamaRMSNorm" and rsqrt.scope == "/model/layers.0/input_layernorm/"
    assert rsqrt.describe() == "/model/layers.0/input_layernorm/node_rsqrt (LlamaRMSNorm)"
    # Sqrt and Reciprocal come from one fx node (rsqrt): same module, names told apart by the ONNX name
    assert names["node_Sqrt_75"].canonical == "/model/layers.0/input_layernorm/node_Sqrt_75"
    # a node of the model module itself (mask construction), and of a Linear inside attention
    assert names["node_arange"].canonical == "/model/node_arange"
    assert names["node_linear"].canonical == "/model/layers.0/self_attn/q_proj/node_linear"
    assert names["node_linear"].module_classes[-2:] == ("transformers.models.llama.modeling_llama.LlamaAttention",
                                                        "torch.nn.modules.linear.Linear")


def test_wav2vec2_shape_nodes_ending_in_builtin_functions_have_no_class(models):
    names = models(export("wav2vec2", "dynamo")).names
    floordiv = [n for n in models(export("wav2vec2", "dynamo")).graph.node
                if "<built-in function" in _meta(n)["pkg.torch.onnx.class_hierarchy"]]
    assert floordiv, "the export has fx nodes of operator.floordiv/add on symbolic sizes"
    for node in floordiv:
        assert not any("built-in" in c for c in names[node.name].module_classes)


@pytest.mark.parametrize("path", ALL_TORCHSCRIPT, ids=lambda p: p.stem)
def test_torchscript_names_already_are_canonical(models, path):
    model = models(path)
    names = model.names
    assert not names.has_classes and names.has_scopes
    for entry in names.values():
        assert entry.canonical == entry.raw
        if entry.raw.startswith("/"):
            assert entry.source == "torchscript"
            assert entry.module == ".".join(entry.raw.split("/")[1:-1])
        else:  # the unscoped Constant_N nodes
            assert (entry.source, entry.module) == ("none", None)


def test_canonical_collisions_are_suffixed(models):
    """A raw name that spells another node's canonical name (possible only by renaming) gets ``__2``."""
    proto = onnx.load(str(export("llama", "dynamo")))
    shape = next(n for n in proto.graph.node if n.name == "node_Shape_0")  # a node without module
    shape.name = "/model/layers.0/input_layernorm/node_rsqrt"
    names = NodeNames.of(proto)
    assert names["node_rsqrt"].canonical == "/model/layers.0/input_layernorm/node_rsqrt__2"
    assert names["/model/layers.0/input_layernorm/node_rsqrt"].module is None
    assert len({e.canonical for e in names.values()}) == len(names)


def test_names_never_read_weights(models):
    """Derived from node names and metadata only: the same with every initializer emptied."""
    proto = onnx.load(str(export("qwen3", "dynamo")))
    before = NodeNames.of(proto)
    for init in proto.graph.initializer:
        init.ClearField("raw_data")
    assert list(NodeNames.of(proto).values()) == list(before.values())


# --------------------------------------------------------------------------------------
# local functions
# --------------------------------------------------------------------------------------
def test_local_functions_are_inlined_with_the_call_scope(models):
    model = models(FUNCTIONS)
    proto = model.proto
    assert not proto.functions and {o.domain for o in proto.opset_import} == {""}
    assert len(proto.graph.node) == 540 - 7 + 72  # 7 calls replaced by 5 x 12 + 2 x 6 nodes
    names = model.names
    pow0 = names["/model/layers.0/input_layernorm/Pow_214"]
    assert pow0.source == "function" and pow0.module == "model.layers.0.input_layernorm"
    assert pow0.module_classes == ("transformers.models.llama.modeling_llama.LlamaRMSNorm",)
    # the final norm calls the variant LlamaRMSNorm.1: same class
    final = [e for e in names.values() if e.module == "model.norm"]
    assert len(final) == 12 and {e.short_class for e in final} == {"LlamaRMSNorm"}
    # TorchScript scopes the MLP call by the last submodule called inside it (down_proj): kept as exported
    mlp = [e for e in names.values() if e.short_class == "LlamaMLP"]
    assert len(mlp) == 12 and {e.module for e in mlp} == {"model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj"}
    assert len({e.canonical for e in names.values()}) == len(names)


def test_inlined_model_computes_what_the_file_does(models):
    model = models(FUNCTIONS)
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 256, (2, 7)).astype(np.int64), "attention_mask": np.ones((2, 7), np.int64)}
    original = ort.InferenceSession(str(FUNCTIONS), providers=["CPUExecutionProvider"]).run(None, feeds)
    inlined = ort.InferenceSession(model.serialized(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_array_equal(original[0], inlined[0])
    assert model.sha256 == load_model(FUNCTIONS).sha256  # the key is the file's, not the inlined graph's


def _call_model(*, function_opset: int = 17, nested: bool = False):
    """A hand-made model calling local functions: attribute references, unnamed and nested calls."""
    h = onnx.helper
    scale = h.make_node("Mul", ["x", "s"], ["y"], name="mul")
    leaky = h.make_node("LeakyRelu", ["y"], ["z"], name="act")
    leaky.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="slope", type=onnx.AttributeProto.FLOAT))
    inner = h.make_function("my.lib", "Scale", ["x", "s"], ["z"], [scale, leaky],
                            [h.make_opsetid("", function_opset)], attributes=["slope"])
    functions = [inner]
    body_op = "Scale"
    if nested:
        call = h.make_node("Scale", ["x", "s"], ["z"], domain="my.lib", name="/inner/Scale", slope=0.5)
        outer = h.make_function("my.lib", "Block", ["x", "s"], ["z"], [call], [h.make_opsetid("", 17),
                                                                                h.make_opsetid("my.lib", 1)])
        functions.append(outer)
        body_op = "Block"
    calls = [h.make_node(body_op, ["a", "w"], ["b"], domain="my.lib", name="/enc/norm/" + body_op, slope=0.1),
             h.make_node(body_op, ["b", "w"], ["c"], domain="my.lib", **({} if nested else {"slope": 0.2}))]
    graph = h.make_graph(calls, "g", [h.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2, 3])],
                         [h.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [2, 3])],
                         [onnx.numpy_helper.from_array(np.full((3,), -2.0, np.float32), "w")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("my.lib", 1)],
                        functions=functions, ir_version=9)


def test_inlining_resolves_attribute_references_and_unnamed_calls():
    proto = _call_model()
    a = np.array([[1.0, -1.0, 2.0], [0.5, 3.0, -4.0]], np.float32)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    model = load_model(proto)
    names = [n.name for n in model.graph.node]
    # the first call's scope is its name's; the second call had no name (load_model named it Scale_1)
    assert names == ["/enc/norm/mul", "/enc/norm/act", "Scale_1/mul", "Scale_1/act"]
    assert [a.f for a in model.graph.node[1].attribute] == [pytest.approx(0.1)]
    assert [a.f for a in model.graph.node[3].attribute] == [pytest.approx(0.2)]
    assert model.names["/enc/norm/act"].module_classes == ("my.lib.Scale",)
    assert model.names["/enc/norm/act"].module == "enc.norm"
    got = ort.InferenceSession(model.serialized(), providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    np.testing.assert_allclose(got, want)


def test_nested_calls_are_inlined_with_every_class():
    model = load_model(_call_model(nested=True))
    assert not model.proto.functions
    # the inner call '/inner/Scale' continues the outer call's scope '/enc/norm/'
    assert list(model.names)[:2] == ["/enc/norm/inner/mul", "/enc/norm/inner/act"]
    entry = model.names["/enc/norm/inner/act"]
    assert entry.module == "enc.norm.inner" and entry.module_classes == ("my.lib.Block", "my.lib.Scale")


def test_functions_of_another_opset_stay_calls_and_say_why():
    model = load_model(_call_model(function_opset=16))
    assert len(model.proto.functions) == 1 and [n.op_type for n in model.graph.node] == ["Scale", "Scale"]
    reason = {p.key: p.value for p in model.proto.metadata_props}["pytest_trt.functions_not_inlined"]
    assert "imports opset ai.onnx 16, the model 17" in reason


# --------------------------------------------------------------------------------------
# patterns
# --------------------------------------------------------------------------------------
def _arithmetic(plan, selected) -> Counter:
    """Op types of the selected compute nodes, modulo the exporters' known differences: TorchScript's
    ``Div(1, Sqrt)`` is dynamo's ``Reciprocal(Sqrt)``; TorchScript's Casts (no-op ``.to(float32)``)
    and Constants are not arithmetic."""
    ops = Counter(plan.nodes[n].op_type for n in selected if plan.nodes[n].kind == "compute")
    ops.pop("Cast", None)
    if "Div" in ops:
        ops["Reciprocal"] += ops.pop("Div")
    return ops


@pytest.mark.parametrize("arch", DECODERS)
def test_one_scope_rule_selects_the_input_rmsnorms_in_both_exports(models, arch):
    selected = {}
    for exporter in ("torchscript", "dynamo"):
        model = models(export(arch, exporter))
        plan = PrecisionPolicy("fp16", keep_fp32=["*/input_layernorm/*"]).resolve(model)
        names = plan.match("*/input_layernorm/*")
        modules = {model.names[n].module for n in names}
        assert modules == {"model.layers.0.input_layernorm", "model.layers.1.input_layernorm"}, exporter
        selected[exporter] = _arithmetic(plan, names)
        # everything selected stays FP32, and nothing outside the input norms
        fp32 = {n for n, d in plan.nodes.items() if d.precision == "fp32"}
        assert fp32 == {n for n in names if plan.nodes[n].kind == "compute"}
    assert selected["torchscript"] == selected["dynamo"] == Counter({op: 2 * k for op, k in Counter(RMSNORM_OPS).items()})


def test_the_scope_rule_selects_the_same_in_the_local_functions_export(models):
    plan = PrecisionPolicy("fp16", keep_fp32=["*/input_layernorm/*"]).resolve(models(FUNCTIONS))
    assert _arithmetic(plan, plan.match("*/input_layernorm/*")) == Counter(
        {op: 2 * k for op, k in Counter(RMSNORM_OPS).items()})


@pytest.mark.parametrize("arch", DECODERS)
def test_class_rule_selects_every_rmsnorm_and_nothing_else(models, arch):
    model = models(export(arch, "dynamo"))
    plan = PrecisionPolicy("fp16", keep_fp32=["class:*RMSNorm"]).resolve(model)
    selected = plan.match("class:*RMSNorm")
    norm_modules = {e.module for e in model.names.values() if e.short_class and e.short_class.endswith("RMSNorm")}
    assert len(norm_modules) == NORMS[arch]
    # every node of every norm module, and only those
    assert set(selected) == {n for n, e in model.names.items() if e.module in norm_modules}
    assert _arithmetic(plan, selected) == Counter({op: NORMS[arch] * k for op, k in Counter(RMSNORM_OPS).items()})
    assert len(selected) == 7 * NORMS[arch]  # no Cast or Constant inside a dynamo RMSNorm
    assert {plan.nodes[n].precision for n in selected} == {"fp32"}
    assert {d.precision for n, d in plan.nodes.items() if n not in selected and d.kind == "compute"} == {"fp16"}


def test_class_patterns_match_qualified_and_short_names_of_any_enclosing_class(models):
    model = models(export("qwen3", "dynamo"))
    plan = PrecisionPolicy("fp32").resolve(model)
    short = plan.match("class:Qwen3RMSNorm")
    assert short == plan.match("class:transformers.models.qwen3.modeling_qwen3.Qwen3RMSNorm")
    assert short == plan.match("class:*.Qwen3RMSNorm")
    # q_norm and k_norm sit inside attention: the class selects 4 norms per layer, the scope one
    per_layer = {model.names[n].module.split(".")[-1] for n in short if ".layers.0." in model.names[n].module}
    assert per_layer == {"input_layernorm", "post_attention_layernorm", "q_norm", "k_norm"}
    # an enclosing class selects everything inside it
    in_layers = plan.match("class:Qwen3DecoderLayer")
    assert set(in_layers) == {n for n, e in model.names.items() if (e.module or "").startswith("model.layers.")}
    # the trailing op entry of class_hierarchy is not a class
    with pytest.raises(PatternError, match="Closest module classes"):
        plan.match("class:aten.pow*")


def test_patterns_still_match_raw_names(models):
    plan = PrecisionPolicy("fp16", keep_fp32=["node_pow_1"]).resolve(models(export("llama", "dynamo")))
    assert plan.match("node_pow_1") == ["node_pow_1"] and plan.precision_of("node_pow_1") == "fp32"
    assert plan.match("node_Shape_0") == ["node_Shape_0"]  # no module: the raw name is the canonical one
    assert plan.precision_of("/model/layers.0/input_layernorm/node_pow_1") == "fp32"  # a name from a report


# --------------------------------------------------------------------------------------
# what a pattern matching nothing says
# --------------------------------------------------------------------------------------
def test_class_pattern_on_a_torchscript_export_says_there_is_no_class_information(models):
    with pytest.raises(PatternError) as info:
        PrecisionPolicy("fp16", keep_fp32=["class:*RMSNorm"]).resolve(models(export("llama", "torchscript")))
    message = str(info.value)
    assert "'class:*RMSNorm' (from keep_fp32) matches no node of llama_torchscript_opset17.onnx" in message
    assert "This export has no class information" in message and "TorchScript exporter" in message
    assert "Use a scope pattern like '*/input_layernorm/*'" in message


def test_class_pattern_on_a_model_without_scopes_says_what_is_left(tmp_path):
    from pytest_trt.model.testing_models import attention_block

    proto = attention_block()
    for node in proto.graph.node:  # hand-made names without scope (as graph optimizers leave them)
        node.name = node.name.rpartition("/")[2]
    model = load_model(proto)
    assert not model.names.has_scopes
    with pytest.raises(PatternError, match="no class information and no module scopes.*'op:TYPE' or exact node names"):
        PrecisionPolicy("fp16", keep_fp32=["class:*Norm"]).resolve(model)
    with pytest.raises(PatternError, match="carry no module scopes"):
        PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"]).resolve(model)


def test_unmatched_glob_offers_module_scopes_and_classes(models):
    model = models(export("llama", "dynamo"))
    with pytest.raises(PatternError) as info:
        PrecisionPolicy("fp16", keep_fp32=["model.layers.0.input_layernorm"]).resolve(model)
    message = str(info.value)
    assert "Closest node names: '/model/layers.0/input_layernorm/" in message
    assert "Closest module scopes: '/model/layers.0/input_layernorm/*'" in message
    assert "module 'model.layers.0.input_layernorm' is '/model/layers.0/input_layernorm/*'" in message
    with pytest.raises(PatternError, match="'LlamaRMSNorm' is a module class: select it with 'class:LlamaRMSNorm'"):
        PrecisionPolicy("fp16", keep_fp32=["LlamaRMSNorm"]).resolve(model)
    with pytest.raises(PatternError, match=r"Closest module classes: 'LlamaDecoderLayer' \(transformers"):
        PrecisionPolicy("fp16", keep_fp32=["class:LlamaDecoderLayr"]).resolve(model)


def test_class_pattern_on_the_functions_export_counts_what_knows_a_class(models):
    with pytest.raises(PatternError) as info:
        PrecisionPolicy("fp16", keep_fp32=["class:LlamaDecoderLayer"]).resolve(models(FUNCTIONS))
    assert "72 of 605 nodes know their module class (the nodes inlined from ONNX local functions)" in str(info.value)


def test_exports_folder_is_what_the_notes_describe():
    assert len(list(EXPORTS.glob("*.onnx"))) == 14


def test_the_last_matching_rule_decides_whatever_the_pattern_kinds(models):
    """README "Precedence": keep_fp32 first, then rules; the last rule matching a node decides."""
    model = models(export("llama", "dynamo"))
    plan = PrecisionPolicy("fp16", keep_fp32=["class:*RMSNorm"], rules=[("/model/norm/*", "fp16")]).resolve(model)
    assert {plan.nodes[n].precision for n in plan.match("/model/norm/*")} == {"fp16"}
    assert plan.nodes["node_pow_5"].rule == "/model/norm/*=fp16"
    assert {plan.nodes[n].precision for n in plan.match("*/input_layernorm/*")} == {"fp32"}
    assert plan.nodes["node_pow_1"].rule == "class:*RMSNorm=fp32"


def test_inlining_renames_outer_references_inside_subgraphs():
    """A function body's If reads the function's formal input from its branches: after inlining the
    branches read the call's actual input."""
    h = onnx.helper
    then = h.make_graph([h.make_node("Identity", ["x"], ["t"], name="id")], "then", [],
                        [h.make_tensor_value_info("t", onnx.TensorProto.FLOAT, None)])
    other = h.make_graph([h.make_node("Neg", ["x"], ["e"], name="neg")], "else", [],
                         [h.make_tensor_value_info("e", onnx.TensorProto.FLOAT, None)])
    body = [h.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)]
    function = h.make_function("my.lib", "Pick", ["x", "c"], ["y"], body, [h.make_opsetid("", 17)])
    graph = h.make_graph([h.make_node("Pick", ["a", "flag"], ["b"], domain="my.lib", name="/blk/Pick")], "g",
                         [h.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [3]),
                          h.make_tensor_value_info("flag", onnx.TensorProto.BOOL, [])],
                         [h.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [3])])
    proto = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("my.lib", 1)],
                         functions=[function], ir_version=9)
    model = load_model(proto)
    (node,) = model.graph.node
    assert node.name == "/blk/branch" and node.op_type == "If"
    assert [n.input[0] for a in node.attribute for n in a.g.node] == ["a", "a"]
    a = np.array([1.0, -2.0, 3.0], np.float32)
    session = ort.InferenceSession(model.serialized(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"a": a, "flag": np.array(False)})[0], -a)


def test_report_rows_match_class_patterns_on_layer_report_records(models):
    """A precision record whose report is a whole LayerReport (no matched list): the pattern is applied
    as the policy does, class: patterns over each entry's module_class."""
    from pytest_trt.backends.base import BuildConfig, get_backend
    from pytest_trt.core.records import PrecisionRecord
    from pytest_trt.report.rows import precision_nodes

    model = models(export("llama", "dynamo"))
    engine = get_backend("emulate").build(PrecisionPolicy("fp16").resolve(model), BuildConfig(), None)
    record = PrecisionRecord(pattern="class:LlamaRMSNorm", precision="fp32", report=engine.layers().to_json(),
                             network=[])
    constrained, everything = precision_nodes(record)
    assert len(everything) == len(model.names) and len(constrained) == 35
    assert {n["module_class"].rpartition(".")[2] for n in constrained} == {"LlamaRMSNorm"}
    assert constrained[0]["canonical"] == "/model/layers.0/input_layernorm/node_pow_1"
