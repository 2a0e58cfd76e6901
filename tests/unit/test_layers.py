"""LayerReport: inspector JSON (TensorRT 10.x and 11.x schemas), Myelin, metadata, emulation.

The fixtures in tests/data/inspector/ are hand-written from the shapes NVIDIA documents
(each file's ``_source`` says where from); none was captured from a real engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_trt.layers.inspector import dtype_from_text, inspector_schema, split_tensor_entry
from pytest_trt.layers.report import (
    STRONG_TYPING_CONSISTENT,
    LayerReport,
    metadata_nodes,
    parse_layers,
    parse_metadata,
)
from pytest_trt.model import testing_models as tm
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy

DATA = Path(__file__).resolve().parents[1] / "data" / "inspector"
LN = "/encoder/layer.0/attention/output/LayerNorm"
DENSE = "/encoder/layer.0/attention/output/dense"
FINAL = "/encoder/layer.0/intermediate/dense/MatMul"


@pytest.fixture(scope="module")
def plan():
    model = load_model(tm.decomposed_layernorm_block(hidden=64))
    return PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(model)


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def statuses(report, names):
    return {n: report.nodes[n].status for n in names}


# -- metadata -------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("[ONNX Layer: a]\x1e[ONNX Layer: b]", ["a", "b"]),
    ("[ONNX Layer: a]\x1f[ONNX Layer: b]", ["a", "b"]),
    ("[ONNX Layer: a][ONNX Layer: b]", ["a", "b"]),
    ("[ONNX Layer: /x/LayerNorm/Pow]", ["/x/LayerNorm/Pow"]),
    ("", []),
    (None, []),
    ("not metadata", []),
    ("[ONNX Layer: a]\x1e[ONNX Layer: a]", ["a"]),
])
def test_metadata_separators(text, expected):
    assert metadata_nodes(text) == expected


def test_metadata_local_function_stack_maps_to_main_graph_node():
    # onnx-tensorrt processMetadata: "[ONNX Layer: <node> | <caller> (<function>) ...]", innermost first
    entries = parse_metadata("[ONNX Layer: inner_mul | /block/ln_call (MyLayerNorm)]")
    assert entries[0].node == "inner_mul"
    assert entries[0].callers == ("/block/ln_call",)
    assert metadata_nodes("[ONNX Layer: inner_mul | /block/ln_call (MyLayerNorm)]") == ["/block/ln_call"]
    assert metadata_nodes("[ONNX Layer: inner_mul | /block/ln_call (F)]", known={"inner_mul"}) == ["inner_mul"]


@pytest.mark.parametrize("text, dtype", [
    ("Row major linear FP32", "fp32"),
    ("Row major linear FP16 format", "fp16"),
    ("Channel major FP16 format where channel % 8 == 0", "fp16"),
    ("Row major linear BFloat16 format", "bf16"),
    ("Row major Int8 format", "int8"),
    ("Row major linear Int32", "int32"),
    ("Row major linear Int64 format", "int64"),
    ("Row major linear BOOL", "bool"),
    ("Row major linear UInt8 format", "uint8"),
    ("Half", "fp16"), ("Float", "fp32"), ("BFloat16", "bf16"), ("FP8", "fp8"),
    ("DataType.HALF", "fp16"), ("FLOAT", "fp32"),
    ("Unknown format", None), ("None", None), ("N/A", None), ("FloatComplex", None), ("", None),
])
def test_inspector_dtype_strings(text, dtype):
    assert dtype_from_text(text) == dtype


def test_tensor_entry_both_schemas():
    assert split_tensor_entry({"Name": "x", "Format/Datatype": "Row major linear FP16 format"})[0] == "fp16"
    assert split_tensor_entry({"Name": "x", "Format": "Row major linear", "DataType": "Half"}) == ("fp16", "Row major linear")
    assert split_tensor_entry({"Name": "x", "Format": "Row major linear", "Datatype": "Float"})[0] == "fp32"
    assert split_tensor_entry({"Name": "x"}) == (None, None)


# -- TensorRT 10.x ----------------------------------------------------------------------
def test_trt10_detailed_strong_all_ok(plan):
    data = load("trt10_detailed_strong.json")
    report = LayerReport.from_inspector_json(data, plan, typing="strong")
    assert report.schema == "10.x"
    assert [t["name"] for t in report.io_tensors] == ["hidden_states", "output"]
    s = report.summary()
    assert s == {"ok": 12, "mismatch": 0, "unverifiable": 0, "fixed": 2, "nodes": 14, "layers": 10,
                 "myelin_layers": 0}
    pow_ = report.nodes[f"{LN}/Pow"]
    assert pow_.observed == "fp32" and pow_.layer == f"PWN({LN}/Sub, {LN}/Pow)"  # \x1f-joined metadata
    assert report.nodes[f"{DENSE}/MatMul"].observed == "fp16"
    assert report.nodes[f"{LN}/Constant"].status == "fixed"
    # the realization's Cast nodes are not plan nodes: said, not counted
    assert any("not nodes of the plan" in n for n in report.notes)
    assert not report.emulated and report.source == "inspector"


def test_trt10_layers_fields(plan):
    report = LayerReport.from_inspector_json(json.dumps(load("trt10_detailed_strong.json")), plan)
    gemm = report.layer(f"{DENSE}/MatMul + {DENSE}/Add")
    assert gemm.layer_type == "CaskGemmMatrixMultiply"
    assert gemm.onnx_nodes == [f"{DENSE}/MatMul", f"{DENSE}/Add"]
    assert gemm.tactic.startswith("sm80_xmma_gemm")
    assert gemm.inputs[0].dtype == "fp16" and gemm.outputs[0].name == f"{DENSE}/Add_output_0"
    assert not gemm.myelin


def test_trt11_schema_same_verdicts(plan):
    r10 = LayerReport.from_inspector_json(load("trt10_detailed_strong.json"), plan)
    r11 = LayerReport.from_inspector_json(load("trt11_detailed_strong.json"), plan)
    assert inspector_schema(load("trt11_detailed_strong.json")) == "11.x"
    assert r11.schema == "11.x"
    assert {n: (o.status, o.observed) for n, o in r11.nodes.items()} == \
           {n: (o.status, o.observed) for n, o in r10.nodes.items()}
    assert r11.io_tensors[0] == {"name": "hidden_states", "mode": "Input", "dtype": "fp32"}


# -- Myelin -----------------------------------------------------------------------------
def test_myelin_kgen_kernel_with_half_layernorm_is_mismatch(plan):
    report = LayerReport.from_inspector_json(load("trt10_myelin_layernorm_fp16.json"), plan, typing="weak")
    assert {layer.name for layer in report.myelin_layers()} == {
        "__myl_Cast_myl0_0", f"{DENSE}/MatMul_myl0_1", "__myl_ReduSubPowReduAddSqrtDivMulAdd_myl0_2",
        f"{FINAL}_myl0_3"}
    ln = report.nodes_matching(plan.match("*/LayerNorm/*"))
    compute = [o for o in ln if o.status != "fixed"]
    assert len(compute) == 9
    assert all(o.status == "mismatch" and o.observed == "fp16" and o.myelin for o in compute)
    assert "Myelin" in compute[0].detail and "planned fp32" in compute[0].detail
    assert report.nodes[f"{DENSE}/Add"].status == "ok"
    # graph output stored fp32 by plan (fp16 node): ok, with the reason
    final = report.nodes[FINAL]
    assert final.status == "ok" and final.observed == "fp32" and "graph output" in final.detail
    assert report.summary()["mismatch"] == 9
    assert "mismatch" in report.table()


def test_foreignnode_without_metadata_half_boundary_is_a_mismatch(plan):
    # The region spans ReduceMean...Add_1 (all planned fp32) and outputs Half: an inconsistent
    # kernel boundary fails whatever the typing; the members are taken by graph order.
    for typing in ("weak", "strong"):
        report = LayerReport.from_inspector_json(load("trt10_foreignnode.json"), plan, typing=typing)
        region = report.myelin_layers()
        assert len(region) == 1 and region[0].foreign_range == (f"{LN}/ReduceMean", f"{LN}/Add_1")
        for name in plan.match("*/LayerNorm/*"):
            obs = report.nodes[name]
            if obs.status == "fixed":
                continue
            assert obs.status == "mismatch" and obs.observed == "fp16" and obs.myelin, name
            assert obs.layer == region[0].name
        # Add_1 writes the region's output: observed; the others only from the region's boundary
        assert report.nodes[f"{LN}/Add_1"].evidence == "observed"
        assert report.nodes[f"{LN}/Pow"].evidence == "inferred"
        assert "inferred from the kernel boundary" in report.nodes[f"{LN}/Pow"].detail
        assert report.nodes[f"{DENSE}/Add"].status == "ok"
        assert any("without per-node metadata" in n for n in report.notes)


def _foreign_fp32(plan, *, metadata: bool) -> dict:
    """The ForeignNode fixture with the region's output set to FP32 (what the plan asks)."""
    data = load("trt10_foreignnode.json")
    region = data["Layers"][1]
    if metadata:
        region["Metadata"] = "\x1e".join(f"[ONNX Layer: {n}]" for n in plan.match("*/LayerNorm/*"))
    region["Outputs"][0]["Format/Datatype"] = "Row major linear FP32"
    return data


@pytest.mark.parametrize("metadata", [True, False])
def test_foreignnode_fp32_boundary_is_inferred_unverifiable_under_weak_typing(plan, metadata):
    # The false green of issue 15: the region's boundary is FP32, nothing shows the Pow inside.
    report = LayerReport.from_inspector_json(_foreign_fp32(plan, metadata=metadata), plan, typing="weak")
    pow_ = report.nodes[f"{LN}/Pow"]
    assert pow_.status == "unverifiable" and pow_.evidence == "inferred" and pow_.myelin
    assert "inferred from the kernel boundary" in pow_.detail and "not visible" in pow_.detail
    assert report.nodes[f"{LN}/Add_1"].status == "ok" and report.nodes[f"{LN}/Add_1"].evidence == "observed"
    assert report.evidence_counts(plan.match("*/LayerNorm/*")) == {
        "observed": 1, "inferred": 8, "unverifiable": 0, "emulated": 0}
    # an unknown typing is not strong typing
    unknown = LayerReport.from_inspector_json(_foreign_fp32(plan, metadata=metadata), plan)
    assert unknown.nodes[f"{LN}/Pow"].status == "unverifiable"


def test_foreignnode_fp32_boundary_under_strong_typing_is_typed_in_the_network(plan):
    report = LayerReport.from_inspector_json(_foreign_fp32(plan, metadata=True), plan, typing="strong")
    pow_ = report.nodes[f"{LN}/Pow"]
    assert pow_.status == "ok" and pow_.evidence == "inferred"
    assert pow_.detail.startswith(STRONG_TYPING_CONSISTENT)
    assert report.to_json()["evidence"]["inferred"] == 8 + 1  # + the dense MatMul fused with its Add
    assert "inferred from a kernel boundary" in report.headline()


def test_node_in_no_metadata_is_unverifiable_never_passed(plan):
    report = LayerReport.from_inspector_json(load("trt10_unverifiable.json"), plan, typing="strong")
    pow_ = report.nodes[f"{LN}/Pow"]
    assert pow_.status == "unverifiable" and pow_.evidence == "unverifiable"
    assert "in no layer's Metadata" in pow_.detail
    assert report.nodes[f"{LN}/Sub"].status == "ok" and report.nodes[f"{LN}/Sub"].evidence == "observed"
    assert report.summary()["unverifiable"] == 1
    # weak typing: the nodes fused inside PWN(Add, Sqrt, Div, Mul, Add_1) and the MatMul fused with
    # its bias Add are known only from their kernels' boundaries, so unverifiable too
    weak = LayerReport.from_inspector_json(load("trt10_unverifiable.json"), plan, typing="weak")
    assert {n for n, o in weak.nodes.items() if o.status == "unverifiable"} == {
        f"{LN}/Pow", f"{LN}/Add", f"{LN}/Sqrt", f"{LN}/Div", f"{LN}/Mul", f"{DENSE}/MatMul"}
    assert weak.evidence_counts() == {"observed": 6, "inferred": 5, "unverifiable": 1, "emulated": 0}


def test_fused_kernel_of_mixed_precisions_is_not_a_verdict(plan):
    data = load("trt10_myelin_layernorm_fp16.json")
    layers = data["Layers"]
    # Myelin fused the fp16 residual Add into the LayerNorm kernel: boundaries say nothing definite
    layers[2]["Metadata"] = f"[ONNX Layer: {DENSE}/Add]\x1e" + layers[2]["Metadata"]
    layers[1]["Metadata"] = f"[ONNX Layer: {DENSE}/MatMul]"
    for typing in ("weak", "strong"):
        report = LayerReport.from_inspector_json(data, plan, typing=typing)
        sub = report.nodes[f"{LN}/Sub"]
        assert sub.status == "unverifiable" and "other precisions" in sub.detail and sub.evidence == "inferred"
        # the fp16 Add fused with the fp32 LayerNorm: the kernel's (Half) boundary says nothing about it
        assert report.nodes[f"{DENSE}/Add"].status == "unverifiable"


def test_names_only_layers(plan):
    data = {"Layers": [f"{DENSE}/MatMul + {DENSE}/Add", f"{{ForeignNode[{LN}/ReduceMean...{LN}/Add_1]}}", FINAL],
            "Bindings": ["hidden_states", "output"]}
    report = LayerReport.from_inspector_json(data, plan)
    assert any("without ProfilingVerbosity.DETAILED" in n for n in report.notes)
    assert report.summary()["ok"] == 0
    assert report.summary()["unverifiable"] == 12


def test_parse_layers_accepts_a_bare_list():
    layers, notes = parse_layers([{"Name": "a", "LayerType": "kgen", "Metadata": "[ONNX Layer: n]",
                                   "Outputs": [{"Name": "t", "Format/Datatype": "Half"}]}])
    assert layers[0].myelin and layers[0].onnx_nodes == ["n"] and layers[0].output_dtypes() == ["fp16"]
    assert notes == []


# -- emulation and output ---------------------------------------------------------------
def test_from_emulation_says_it_is_emulated(plan):
    report = LayerReport.from_emulation(plan)
    assert report.source == "emulation" and report.emulated and report.typing == "emulated"
    assert report.backend == "emulate"
    for name, d in plan.nodes.items():
        obs = report.nodes[name]
        if d.kind == "compute":
            assert obs.status == "ok" and obs.observed == obs.planned == d.precision
            assert obs.evidence == "emulated"  # never "observed"
        else:
            assert obs.status == "fixed"
    assert "EMULATION" in report.table()
    assert any("EMULATED" in n for n in report.notes)
    assert report.to_json()["emulated"] is True


def test_to_json_and_table(plan):
    report = LayerReport.from_inspector_json(load("trt10_myelin_layernorm_fp16.json"), plan)
    data = json.loads(json.dumps(report.to_json()))
    assert data["source"] == "inspector" and data["summary"]["mismatch"] == 9
    assert {n["node"] for n in data["nodes"]} == set(plan.nodes)
    assert data["layers"][2]["myelin"] is True
    text = report.table(statuses=("mismatch",))
    assert text.splitlines()[0].startswith("TensorRT engine inspector")
    assert "node" in text and f"{DENSE}/Add " not in text
    assert str(report) == report.table()


def test_nodes_matching_unknown(plan):
    report = LayerReport.from_emulation(plan)
    with pytest.raises(KeyError):
        report.nodes_matching(["nope"])
    assert report.nodes_matching(f"{LN}/Pow")[0].node == f"{LN}/Pow"


def test_metadata_local_function_older_format():
    """onnx-tensorrt 9.3 / 10.0-GA / 10.1-GA: ``| Local Function: <function op type>`` (no caller node)."""
    from pytest_trt.layers.report import KnownNodes

    text = "[ONNX Layer: inner_mul | Local Function: MyLayerNorm]"
    (entry,) = parse_metadata(text)
    assert entry.node == "inner_mul" and entry.function == "MyLayerNorm" and entry.callers == ()
    known = KnownNodes({"/block/ln_call", "/block/other"})
    known.function_callers = {"MyLayerNorm": ["/block/ln_call"]}
    assert metadata_nodes(text, known) == ["/block/ln_call"]
    # two callers of the function: the node cannot be placed; it stays the inner name (unverifiable)
    known.function_callers = {"MyLayerNorm": ["/block/ln_call", "/block/other"]}
    assert metadata_nodes(text, known) == ["inner_mul"]
    assert metadata_nodes(text) == ["inner_mul"]
