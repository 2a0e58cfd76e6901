"""assert_precision / assert_no_collapse against inspector JSON fixtures and the emulate backend.

The inspector fixtures (tests/data/inspector/, hand-written from NVIDIA's documented
schemas; see each file's ``_source``) describe engines of
``testing_models.decomposed_layernorm_block(hidden=64)`` under ``fp16; fp32: */LayerNorm/*``,
so the plans here are resolved against that model: its node names are the fixtures'.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.errors import PatternError, PrecisionError, UsageError
from pytest_trt.layers.report import LayerReport
from pytest_trt.model import testing_models as tm
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.verify.precision import (
    EMULATED_NOTE,
    MAX_LISTED,
    WEAK_TYPING_REMEDY,
    CollapseCheck,
    NotObservableWarning,
    PrecisionCheck,
    assert_no_collapse,
    assert_precision,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "inspector"
ROOT = Path(__file__).resolve().parents[2]
ENCODER14 = ROOT / "example_suite" / "models" / "encoder_opset14.onnx"
LN = "/encoder/layer.0/attention/output/LayerNorm"
DENSE = "/encoder/layer.0/attention/output/dense"
LN_COMPUTE = ["ReduceMean", "Sub", "Pow", "ReduceMean_1", "Add", "Sqrt", "Div", "Mul", "Add_1"]


@pytest.fixture(scope="module")
def model():
    return load_model(tm.decomposed_layernorm_block(hidden=64))


@pytest.fixture(scope="module")
def plan(model):
    return PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(model)


@pytest.fixture(scope="module")
def lowered_plan(model):
    return PrecisionPolicy(default="fp16").resolve(model)


def report(name: str, plan, typing: str = "strong") -> LayerReport:
    return LayerReport.from_inspector_json((DATA / f"{name}.json").read_text(), plan, typing=typing)


# -- constraint honoured, both schemas ----------------------------------------------------
@pytest.mark.parametrize("fixture", ["trt10_detailed_strong", "trt11_detailed_strong"])
def test_constraint_honoured_passes_on_both_schemas(plan, fixture):
    check = assert_precision(report(fixture, plan), "*/LayerNorm/*", "fp32", plan=plan)
    assert isinstance(check, PrecisionCheck) and check.passed
    assert check.counts() == {"pass": 9, "fail": 0, "unverifiable": 0, "not_applicable": 2, "matched": 11,
                              "compute": 9}
    # Constants of the LayerNorm scope are listed as not applicable, never as failures
    assert check.statuses[f"{LN}/Constant"] == "not_applicable"
    assert check.statuses[f"{LN}/Constant_1"] == "not_applicable"
    assert all(check.statuses[f"{LN}/{n}"] == "pass" for n in LN_COMPUTE)
    # the fp16 part is shown too
    dense = assert_precision(report(fixture, plan), f"{DENSE}/*", "fp16", plan=plan)
    assert dense.counts()["pass"] == 2
    assert check.source == "inspector" and not check.emulated


def test_to_json_gives_per_node_planned_observed_status_layer_myelin(plan):
    data = assert_precision(report("trt11_detailed_strong", plan), "*/LayerNorm/*", "fp32", plan=plan).to_json()
    json.dumps(data)  # serializable as is
    assert data["passed"] is True and data["pattern"] == "*/LayerNorm/*" and data["precision"] == "fp32"
    assert data["method"] == "inspect" and data["typing"] == "strong" and data["emulated"] is False
    pow_ = next(n for n in data["nodes"] if n["node"] == f"{LN}/Pow")
    assert pow_["planned"] == "fp32" and pow_["observed"] == "fp32" and pow_["status"] == "pass"
    assert pow_["layer"].startswith("PWN(") and pow_["myelin"] is False and pow_["inspector_status"] == "ok"
    assert pow_["rule"] == "*/LayerNorm/*=fp32"
    const = next(n for n in data["nodes"] if n["node"] == f"{LN}/Constant")
    assert const["status"] == "not_applicable" and const["planned"] is None
    assert set(data["counts"]) >= {"pass", "fail", "unverifiable", "not_applicable"}


def test_asserting_a_precision_the_plan_does_not_give_fails_with_cause_plan(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_precision(report("trt10_detailed_strong", plan), "*/LayerNorm/*", "fp16", plan=plan)
    check = exc.value.findings
    assert check.counts()["fail"] == 9 and {v.cause for v in check.failures} == {"plan"}
    assert "change the policy or the assertion" in str(exc.value)


# -- constraint violated inside a Myelin region -------------------------------------------
def test_violation_inside_myelin_names_node_region_and_dtype(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_precision(report("trt10_myelin_layernorm_fp16", plan, typing="weak"), "*/LayerNorm/*", "fp32",
                         plan=plan)
    assert isinstance(exc.value, AssertionError)
    msg = str(exc.value)
    assert "9 of 9 matched compute node(s) not shown in fp32 (9 failed, 0 unverifiable)" in msg
    assert "2 fixed node(s) not applicable" in msg
    for n in LN_COMPUTE:
        assert f"{LN}/{n} (" in msg
    # Pow is inside the kernel: its fp16 is inferred from the kernel boundary; Add_1 writes the boundary
    assert (f"{LN}/Pow (Pow): fp16 inferred from the kernel boundary, planned fp32 [*/LayerNorm/*=fp32] in Myelin "
            f"region myl0 (kernel __myl_ReduSubPowReduAddSqrtDivMulAdd_myl0_2)") in msg
    assert f"{LN}/Add_1 (Add): observed fp16, planned fp32 [*/LayerNorm/*=fp32] in Myelin region myl0" in msg
    assert "evidence: 1 observed, 8 inferred from a kernel boundary, 0 unverifiable" in msg
    assert "inside a Myelin region" in msg  # the why, once
    check = exc.value.findings
    assert {v.cause for v in check.failures} == {"engine"}
    assert all(v.myelin and v.observed == "fp16" for v in check.failures)
    row = next(n for n in check.to_json()["nodes"] if n["node"] == f"{LN}/Pow")
    assert row["myelin"] is True and row["myelin_region"] == "myl0" and row["inspector_status"] == "mismatch"


def test_weak_typing_message_gives_the_strong_typing_remedy(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_precision(report("trt10_myelin_layernorm_fp16", plan, typing="weak"), "*/LayerNorm/*", "fp32",
                         plan=plan)
    msg = str(exc.value)
    assert "typing weak" in msg
    assert WEAK_TYPING_REMEDY in msg
    assert "switch to strong typing with graph-level Casts" in msg and "--trt-typing auto" in msg
    assert "split the model at the island" in msg and "mark the island's output as a network output" in msg


def test_strong_typing_message_does_not_suggest_switching_to_strong(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_precision(report("trt10_myelin_layernorm_fp16", plan, typing="strong"), "*/LayerNorm/*", "fp32",
                         plan=plan)
    msg = str(exc.value)
    assert "typing strong" in msg
    assert WEAK_TYPING_REMEDY not in msg
    assert "with strong typing TensorRT should run the types of the graph" in msg


# -- unverifiable ---------------------------------------------------------------------------
def test_unverifiable_node_fails_by_default(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_precision(report("trt10_unverifiable", plan), "*/LayerNorm/*", "fp32", plan=plan)
    msg = str(exc.value)
    assert "(0 failed, 1 unverifiable)" in msg
    assert f"{LN}/Pow (Pow): planned fp32, observed -" in msg
    assert "in no layer's Metadata" in msg
    assert "allow_unverifiable=True" in msg and "method='probe'" in msg
    assert exc.value.findings.statuses[f"{LN}/Pow"] == "unverifiable"


def test_unverifiable_allowed_is_a_warning_in_the_result(plan):
    check = assert_precision(report("trt10_unverifiable", plan), "*/LayerNorm/*", "fp32", plan=plan,
                             allow_unverifiable=True)
    assert check.passed and check.statuses[f"{LN}/Pow"] == "unverifiable"
    assert len(check.warnings) == 1 and check.warnings[0].startswith(f"{LN}/Pow (Pow): unverifiable")
    assert check.to_json()["warnings"] == check.warnings
    assert "1 unverifiable (allowed)" in check.headline()


def test_foreignnode_region_with_half_boundary_fails_never_passed(plan):
    r = report("trt10_foreignnode", plan, typing="weak")
    with pytest.raises(PrecisionError) as exc:
        assert_precision(r, "*/LayerNorm/*", "fp32", plan=plan)
    check = exc.value.findings
    assert check.counts()["fail"] == 9 and check.counts()["pass"] == 0
    assert check.evidence_counts() == {"observed": 1, "inferred": 8, "unverifiable": 0, "emulated": 0}
    msg = str(exc.value)
    assert "in Myelin region {ForeignNode[" in msg
    assert WEAK_TYPING_REMEDY in msg


# -- issue 15: a node known only from a fused kernel's boundary ----------------------------
def _fp32_boundary(name: str) -> dict:
    """An inspector fixture with every Myelin kernel output set to FP32 (the plan's LayerNorm storage)."""
    data = json.loads((DATA / f"{name}.json").read_text())
    for layer in data["Layers"]:
        if layer["Name"].startswith(("__myl_Redu", "{ForeignNode[")):
            for t in layer["Outputs"]:
                t["Format/Datatype"] = "Float" if name.endswith("fp16") else "Row major linear FP32"
    return data


@pytest.mark.parametrize("fixture", ["trt10_myelin_layernorm_fp16", "trt10_foreignnode"])
def test_fused_kernel_with_fp32_boundary_is_not_a_pass_under_weak_typing(plan, fixture):
    # The false green of issue 15: the inner Pow was reported ok and the assertion passed.
    r = LayerReport.from_inspector_json(_fp32_boundary(fixture), plan, typing="weak")
    with pytest.raises(PrecisionError) as exc:
        assert_precision(r, "*/LayerNorm/*", "fp32", plan=plan)
    check = exc.value.findings
    assert check.statuses[f"{LN}/Pow"] == "unverifiable"
    assert check.statuses[f"{LN}/Add_1"] == "pass"  # writes the kernel's boundary: observed
    assert check.counts()["unverifiable"] == 8 and check.counts()["fail"] == 0
    assert check.evidence_counts() == {"observed": 1, "inferred": 8, "unverifiable": 0, "emulated": 0}
    msg = str(exc.value)
    assert "evidence: 1 observed, 8 inferred from a kernel boundary, 0 unverifiable (not a pass without strong " \
           "typing)" in msg
    assert f"{LN}/Pow (Pow): planned fp32, fp32 inferred from the kernel boundary in Myelin region" in msg
    assert "inferred from the kernel boundary" in msg and "not visible" in msg
    assert "8 node(s) are known only from a fused kernel's boundary" in msg and "--trt-typing strong" in msg
    data = check.to_json()
    assert data["evidence"] == check.evidence_counts()
    pow_ = next(n for n in data["nodes"] if n["node"] == f"{LN}/Pow")
    assert pow_["evidence"] == "inferred" and pow_["status"] == "unverifiable"
    # accepted explicitly: passes, with the nodes listed as warnings
    allowed = assert_precision(r, "*/LayerNorm/*", "fp32", plan=plan, allow_unverifiable=True)
    assert allowed.passed and len(allowed.warnings) == 8


@pytest.mark.parametrize("fixture", ["trt10_myelin_layernorm_fp16", "trt10_foreignnode"])
def test_fused_kernel_with_fp32_boundary_under_strong_typing_is_typed_in_the_network(plan, fixture):
    r = LayerReport.from_inspector_json(_fp32_boundary(fixture), plan, typing="strong")
    check = assert_precision(r, "*/LayerNorm/*", "fp32", plan=plan)
    assert check.passed and check.counts()["pass"] == 9
    pow_ = next(v for v in check.nodes if v.node == f"{LN}/Pow")
    assert pow_.evidence == "inferred"
    assert pow_.detail.startswith("strong typing: typed in the network, boundary consistent")
    assert "evidence: 1 observed, 8 inferred from a kernel boundary, 0 unverifiable (strong typing: typed in the " \
           "network, boundary consistent)" in check.message()
    assert check.to_json()["evidence"]["inferred"] == 8


def test_strong_typing_with_an_inconsistent_boundary_still_fails(plan):
    # planned FP32, kernel boundary FP16: strong typing is no excuse
    with pytest.raises(PrecisionError) as exc:
        assert_precision(report("trt10_myelin_layernorm_fp16", plan, typing="strong"), "*/LayerNorm/*", "fp32",
                         plan=plan)
    assert exc.value.findings.counts()["fail"] == 9


def test_strong_fixture_counts_observed_and_inferred(plan):
    check = assert_precision(report("trt10_detailed_strong", plan), "*/LayerNorm/*", "fp32", plan=plan)
    # PWN(Add, Sqrt, Div, Mul, Add_1) shows only Add_1's output: the four inside are inferred
    assert check.evidence_counts() == {"observed": 5, "inferred": 4, "unverifiable": 0, "emulated": 0}
    weak = report("trt10_detailed_strong", plan, typing="weak")
    with pytest.raises(PrecisionError) as exc:
        assert_precision(weak, "*/LayerNorm/*", "fp32", plan=plan)
    assert {v.node for v in exc.value.findings.unverifiable} == {f"{LN}/{n}" for n in ("Add", "Sqrt", "Div", "Mul")}


def test_mismatch_that_shows_the_asserted_precision_passes(lowered_plan):
    # plan: everything fp16; the engine (fixture) ran the LayerNorm in fp32 -> mismatch vs plan,
    # but the node IS shown running in fp32.
    r = report("trt10_detailed_strong", lowered_plan)
    assert r.nodes[f"{LN}/ReduceMean"].status == "mismatch"
    check = assert_precision(r, f"{LN}/ReduceMean", "fp32", plan=lowered_plan)
    assert check.statuses == {f"{LN}/ReduceMean": "pass"}
    assert "although planned fp16" in check.nodes[0].detail


# -- patterns ---------------------------------------------------------------------------------
def test_pattern_matching_nothing_is_a_pattern_error(plan):
    with pytest.raises(PatternError, match="(?i)closest node names"):
        assert_precision(report("trt10_detailed_strong", plan), "*/LayerNrom/*", "fp32", plan=plan)


def test_pattern_matching_only_fixed_nodes_is_a_pattern_error(plan):
    with pytest.raises(PatternError, match="only fixed nodes"):
        assert_precision(report("trt10_detailed_strong", plan), "*/LayerNorm/Constant*", "fp32", plan=plan)


def test_report_without_plan_matches_over_its_nodes(plan):
    r = report("trt10_detailed_strong", plan)
    check = assert_precision(r, "op:ReduceMean", "fp32")
    assert check.statuses == {f"{LN}/ReduceMean": "pass", f"{LN}/ReduceMean_1": "pass"}
    with pytest.raises(PatternError):
        assert_precision(r, "op:Softmax", "fp32")


def test_bad_arguments(plan):
    r = report("trt10_detailed_strong", plan)
    with pytest.raises(UsageError, match="unknown method"):
        assert_precision(r, "*/LayerNorm/*", "fp32", plan=plan, method="guess")
    with pytest.raises(UsageError, match="pass the engine"):
        assert_precision(r, "*/LayerNorm/*", "fp32", plan=plan, method="probe")
    with pytest.raises(UsageError):
        assert_precision(r, "*/LayerNorm/*", "fp8", plan=plan)
    with pytest.raises(UsageError):
        assert_precision(object(), "*/LayerNorm/*", "fp32")


# -- emulate ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def emulate():
    return get_backend("emulate")


def test_emulate_passes_for_kept_nodes_and_says_it_is_emulated(emulate, plan):
    engine = emulate.build(plan, BuildConfig(), None)
    check = assert_precision(engine, "*/LayerNorm/*", "fp32")
    assert check.passed and check.emulated and check.source == "emulation"
    assert EMULATED_NOTE in check.message()
    assert check.to_json()["emulated_note"] == EMULATED_NOTE
    assert assert_precision(engine, f"{DENSE}/*", "fp16").passed


def test_emulate_fails_for_a_node_the_policy_lowered(emulate, model):
    plan = PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",), rules=(f"{LN}/Pow=fp16",)).resolve(model)
    engine = emulate.build(plan, BuildConfig(), None)
    with pytest.raises(PrecisionError) as exc:
        assert_precision(engine, "*/LayerNorm/*", "fp32")
    msg = str(exc.value)
    assert "1 of 9 matched compute node(s) not shown in fp32 (1 failed, 0 unverifiable)" in msg
    assert f"{LN}/Pow (Pow): emulated fp16, planned fp16 [{LN}/Pow=fp16]" in msg  # emulated, never observed
    assert "evidence: 0 observed, 0 inferred from a kernel boundary, 0 unverifiable, 9 emulated" in msg
    assert EMULATED_NOTE in msg
    assert "keep_fp32=['*/LayerNorm/*']" in msg and "--trt-keep-fp32 '*/LayerNorm/*'" in msg
    assert WEAK_TYPING_REMEDY not in msg  # nothing about the engine: the plan did it
    check = exc.value.findings
    assert [v.node for v in check.failures] == [f"{LN}/Pow"] and check.failures[0].cause == "plan"
    assert check.to_json()["passed"] is False


def test_many_offenders_are_capped_with_counts(emulate):
    plan = PrecisionPolicy(default="fp16").resolve(load_model(ENCODER14))
    engine = emulate.build(plan, BuildConfig(), None)
    with pytest.raises(PrecisionError) as exc:
        assert_precision(engine, "*/LayerNorm/*", "fp32")
    msg = str(exc.value)
    assert "36 of 36 matched compute node(s) not shown in fp32" in msg and "8 fixed node(s) not applicable" in msg
    assert "failed (36):" in msg
    assert f"... and {36 - MAX_LISTED} more" in msg
    assert sum(1 for line in msg.splitlines() if "emulated fp16, planned fp16" in line) == MAX_LISTED
    assert len(exc.value.findings.failures) == 36  # all of them in the findings


# -- assert_no_collapse -----------------------------------------------------------------------
def test_no_collapse_passes_on_an_ordinary_engine(plan):
    check = assert_no_collapse(report("trt10_detailed_strong", plan))
    assert isinstance(check, CollapseCheck) and check.checked and check.passed
    assert (check.compute_nodes, check.engine_layers, check.myelin_layers, check.myelin_nodes) == (12, 10, 0, 0)
    assert check.min_layers == 1 and check.max_myelin_share == 0.5 and check.largest is None


def test_collapse_flags_a_foreignnode_region_with_numbers(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_no_collapse(report("trt10_foreignnode", plan))
    check = exc.value.findings
    assert check.largest["nodes"] == 9 and check.largest["share"] == 0.75 and check.largest["approximate"]
    msg = str(exc.value)
    assert "12 ONNX compute nodes in 3 engine layer(s)" in msg
    assert "one Myelin layer carries 9 of 12 compute nodes (75% > max_myelin_share=50%)" in msg
    # loosened for a small model: passes
    assert assert_no_collapse(report("trt10_foreignnode", plan), max_myelin_share=1.0).passed


def test_collapse_groups_myelin_kernels_into_regions(plan):
    with pytest.raises(PrecisionError) as exc:
        assert_no_collapse(report("trt10_myelin_layernorm_fp16", plan))
    check = exc.value.findings
    assert check.regions == [{"region": "myl0", "layers": 4, "nodes": 12}]
    assert check.myelin_layers == 4 and check.myelin_nodes == 12
    assert check.largest["layer"] == "__myl_ReduSubPowReduAddSqrtDivMulAdd_myl0_2" and check.largest["nodes"] == 9


def _one_layer_engine(plan) -> dict:
    compute = [n for n, d in plan.nodes.items() if d.kind == "compute"]
    name = f"{{ForeignNode[{compute[0]}...{compute[-1]}]}}"
    return {"Layers": [{"Name": name, "LayerType": "Myelin", "Inputs": [], "Metadata": "",
                        "Outputs": [{"Name": "last_hidden_state", "Format/Datatype": "Half"}]}],
            "Bindings": ["hidden_states", "last_hidden_state"]}


def test_the_whole_network_in_one_myelin_layer_fails_both_defaults():
    # NVIDIA/TensorRT #4157: 11,329 ONNX layers became one Myelin layer. Same shape, smaller model.
    plan = PrecisionPolicy(default="fp16").resolve(load_model(ENCODER14))
    r = LayerReport.from_inspector_json(_one_layer_engine(plan), plan, typing="strong")
    with pytest.raises(PrecisionError) as exc:
        assert_no_collapse(r)
    check = exc.value.findings
    n = check.compute_nodes
    assert n == 98 and check.engine_layers == 1
    assert check.min_layers == math.ceil(n / 50) == 2
    assert check.largest["share"] == 1.0
    assert len(check.reasons) == 2
    assert "1 engine layer(s) for 98 ONNX compute nodes, fewer than min_layers=2" in str(exc.value)
    assert check.to_json()["passed"] is False


def test_collapse_thresholds_are_arguments(plan):
    r = report("trt10_detailed_strong", plan)
    with pytest.raises(PrecisionError, match="fewer than min_layers=11"):
        assert_no_collapse(r, min_layers=11)
    with pytest.raises(UsageError):
        assert_no_collapse(r, max_myelin_share=0)


def test_no_collapse_on_emulate_is_not_checked_and_warns(emulate, plan):
    engine = emulate.build(plan, BuildConfig(), None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check = assert_no_collapse(engine)
    assert check.checked is False and check.passed
    assert "cannot observe fusion" in check.message() and "not checked" in check.message()
    assert [w.category for w in caught] == [NotObservableWarning]
    assert check.to_json()["checked"] is False
