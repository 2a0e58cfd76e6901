"""Tier ``onnx_corpus``: the FP16/BF16 type-constraint gaps of every ONNX schema, recomputed
and compared with the recorded table, and the plan's answer to the ones that matter."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from schema_gaps import PLAN_DOES, RECORD, scan

from pytest_trt import PrecisionPolicy
from pytest_trt.errors import ModelError
from pytest_trt.realize import realize_strong

pytestmark = pytest.mark.onnx_corpus


def test_scan_matches_the_recorded_table():
    assert RECORD.exists(), (f"no recorded schema gaps for this onnx ({RECORD.name}); the tier pins onnx. "
                             f"Run `python tests/onnx_corpus/schema_gaps.py`, review the new rows, commit")
    recorded = json.loads(RECORD.read_text())
    assert recorded["gaps"] == scan()
    assert recorded["plan_does"] == PLAN_DOES
    assert {r["kind"] for r in recorded["gaps"]} <= set(PLAN_DOES)


def _pow_model(opset: int):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph([helper.make_node("Pow", ["x", "two"], ["p"], name="/ln/Pow"),
                               helper.make_node("Relu", ["p"], ["y"], name="/act")], "g", [x], [y], [two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset, planned", [(14, "fp32"), (15, "bf16")])
def test_bf16_pow_exponent(opset, planned):
    """Opset 13-14 Pow has no bfloat16 exponent: planned fp32 with the reason (TensorRT would
    run it in FP32 anyway); from opset 15 the exponent is cast to bf16 with the base."""
    plan = PrecisionPolicy(default="bf16").resolve(_pow_model(opset))
    assert plan.nodes["/ln/Pow"].precision == planned
    if planned == "fp32":
        assert "'Y' (T1) has no bf16 type at opset 14" in plan.nodes["/ln/Pow"].rule
    strong = realize_strong(plan)
    exponent = next(i for i in strong.graph.initializer if i.name.startswith("two"))
    assert exponent.data_type == (TensorProto.FLOAT if planned == "fp32" else TensorProto.BFLOAT16)


def test_explicit_rule_on_a_gap_is_refused():
    with pytest.raises(ModelError, match="Pow"):
        PrecisionPolicy(rules=["/ln/Pow=bf16"]).resolve(_pow_model(14))
