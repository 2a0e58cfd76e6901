"""Layerwise comparison: per-tensor errors, the divergence criterion, the first divergent node."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import pytest_trt
from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.inputs import make_feeds
from pytest_trt.locate.divergence import Divergence, compare_tensors, locate_divergence
from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import graph_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.reference.baseline import float_tensor_names, fp32_intermediates

ROOT = Path(__file__).resolve().parents[2]
ENCODER14 = ROOT / "example_suite" / "models" / "encoder_opset14.onnx"
LN0 = "/encoder/layer.0/attention/output/LayerNorm"
DIMS = {"batch": 2, "sequence": 16}
OUTLIERS = {"hidden_states": {"count": 2, "magnitude": 400.0}}
F = TensorProto.FLOAT


@pytest.fixture(scope="module")
def encoder():
    return load_model(ENCODER14)


@pytest.fixture(scope="module")
def outlier_feeds(encoder):
    return make_feeds(encoder, dims=DIMS, val_range={"hidden_states": (-1, 1)}, outliers=OUTLIERS)


def _engine(model, **policy):
    return get_backend("emulate").build(PrecisionPolicy(**policy).resolve(model), BuildConfig(), None)


@pytest.fixture(scope="module")
def fp16_divergence(encoder, outlier_feeds):
    return locate_divergence(_engine(encoder, default="fp16"), outlier_feeds)


# --------------------------------------------------------------------------------------
# the real case: FP16 everywhere breaks the encoder's decomposed LayerNorm on outliers
# --------------------------------------------------------------------------------------
def test_first_divergence_is_the_layernorm_pow_that_overflows(fp16_divergence):
    first = fp16_divergence.first
    assert first is not None
    assert first.node == f"{LN0}/Pow" and first.op_type == "Pow" and first.precision == "fp16"
    assert first.inf > 0 and first.nonfinite == first.inf and math.isinf(first.max_abs)
    assert first.new_nonfinite and math.isinf(first.jump)
    # upstream of the Pow (Sub, the residual Add, ...) is within FP16 rounding
    assert first.upstream < 1e-3 and first.worst_input == f"{LN0}/Sub_output_0"
    assert fp16_divergence.top[0].node == first.node


def test_message_names_node_error_and_upstream_state(fp16_divergence):
    text = fp16_divergence.message()
    assert f"first divergent node: {LN0}/Pow (Pow, fp16)" in text
    assert "max abs error inf (2 Inf where the FP32 reference is finite)" in text
    assert "upstream nodes within tolerance" in text
    assert "top contributors" in text and "emulate: rounded tensors" in text
    assert f"--trt-keep-fp32 '{LN0}/*'" in text
    assert str(fp16_divergence) == text


def test_rows_cover_every_float_tensor_in_topological_order(encoder, fp16_divergence):
    names = float_tensor_names(encoder)
    rows = fp16_divergence.tensors
    assert [r.tensor for r in rows] == names
    assert [r.index for r in rows] == sorted(r.index for r in rows)
    assert all(r.available for r in rows)
    # downstream of the overflow, errors are carried, not created: no other node is blamed for NaN/Inf
    assert [r.node for r in rows if r.new_nonfinite] == [f"{LN0}/Pow"]
    assert fp16_divergence.outputs[0].tensor == "last_hidden_state"
    assert fp16_divergence.outputs[0].max_abs > 1.0


def test_fixed_nodes_are_reported_but_never_blamed(fp16_divergence):
    # LayerNorm's epsilon 1e-12 becomes 0 in FP16: all of it is lost, but a Constant is not a cause
    # (and the REL_FLOOR keeps a value that small from counting as a large relative error).
    eps = fp16_divergence.row(f"{LN0}/Constant_1_output_0")
    assert not eps.compute and eps.precision is None and not eps.divergent
    assert eps.max_abs == pytest.approx(1e-12) and eps.rel == pytest.approx(1e-6)


def test_to_json_is_strict_json(fp16_divergence):
    data = json.loads(json.dumps(fp16_divergence.to_json(), allow_nan=False))
    assert data["found"] is True
    assert data["first"]["node"] == f"{LN0}/Pow" and data["first"]["max_abs"] == "inf"
    assert data["first"]["jump"] == "inf"
    assert len(data["tensors"]) == len(fp16_divergence.tensors)
    assert data["backend"] == "emulate" and data["policy"] == "fp16"


def test_no_divergence_once_layernorm_stays_fp32(encoder, outlier_feeds):
    found = locate_divergence(_engine(encoder, default="fp16", keep_fp32=["*/LayerNorm/*"]), outlier_feeds)
    assert found.first is None and not found.found
    assert "no divergent node" in found.message()
    assert found.outputs[0].max_abs < 1e-2


def test_public_api_and_options(encoder, outlier_feeds):
    engine = _engine(encoder, default="fp16")
    reference = fp32_intermediates(encoder, outlier_feeds)
    found = pytest_trt.locate_divergence(engine, outlier_feeds, threshold=0.5, top=2, reference=reference)
    assert found.threshold == 0.5 and len(found.top) <= 2
    assert found.first.node == f"{LN0}/Pow"  # an overflow counts whatever the threshold


def test_fp32_engine_matches_exactly(encoder, outlier_feeds):
    found = locate_divergence(_engine(encoder, default="fp32"), outlier_feeds)
    assert found.threshold == 1e-4 and found.first is None
    assert max(r.max_abs for r in found.tensors) == 0.0


# --------------------------------------------------------------------------------------
# the criterion on hand-made values
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain():
    """x -> a/Relu -> b/Mul(w) -> b/Add(c) -> c/Mul(k) -> y   (all fp16 compute nodes)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="/a/Relu"),
        helper.make_node("Mul", ["r", "w"], ["m"], name="/b/Mul"),
        helper.make_node("Add", ["m", "c"], ["s"], name="/b/Add"),
        helper.make_node("Mul", ["s", "k"], ["y"], name="/c/Mul"),
    ]
    inits = [("w", np.full(4, 2.0, np.float32)), ("c", np.full(4, 1.0, np.float32)),
             ("k", np.full(4, 1.0, np.float32))]
    model = load_model(graph_model(nodes, [("x", F, [4])], [("y", F, [4])], inits))
    return model, PrecisionPolicy("fp16").resolve(model)


REF = {name: np.array([1.0, 2.0, 3.0, 4.0], np.float32) for name in ("r", "m", "s", "y")}


def _rows(chain, errors: dict, *, drop=(), threshold=1e-2):
    model, plan = chain
    values = {n: REF[n] + np.float32(errors.get(n, 0.0)) for n in REF if n not in drop}
    return {r.tensor: r for r in compare_tensors(model, plan, values, REF, threshold=threshold)}


def test_error_is_blamed_where_it_jumps_not_where_it_is_carried(chain):
    rows = _rows(chain, {"r": 1e-4, "m": 0.5, "s": 0.5, "y": 0.5})
    assert rows["r"].rel == pytest.approx(2.5e-5, rel=1e-2) and not rows["r"].divergent
    assert rows["m"].divergent and rows["m"].jump == pytest.approx(0.125 / 4.88e-4, rel=1e-2)
    assert rows["m"].upstream == pytest.approx(2.5e-5, rel=1e-2) and rows["m"].worst_input == "r"
    assert not rows["s"].divergent and not rows["y"].divergent  # carried: jump ~1
    assert rows["s"].jump == pytest.approx(1.0)


def test_small_relative_errors_never_diverge_whatever_the_jump(chain):
    rows = _rows(chain, {"m": 0.02})  # rel 5e-3 < threshold 1e-2, though 10x over its input
    assert not any(r.divergent for r in rows.values())


def test_a_jump_that_does_not_persist_downstream_is_not_blamed(chain):
    rows = _rows(chain, {"m": 0.5})  # consumers are exact again
    assert not rows["m"].divergent and rows["m"].problem == "error jump does not persist downstream"


def test_nan_introduced_always_counts_and_is_not_blamed_downstream(chain):
    model, plan = chain
    values = {n: REF[n].copy() for n in REF}
    for name in ("m", "s", "y"):
        values[name][1] = np.nan
    rows = {r.tensor: r for r in compare_tensors(model, plan, values, REF, threshold=10.0)}
    assert rows["m"].divergent and rows["m"].nan == 1 and rows["m"].new_nonfinite
    assert rows["s"].nonfinite == 1 and not rows["s"].new_nonfinite and not rows["s"].divergent


def test_hidden_tensors_are_skipped_and_consumers_judged_against_the_last_visible_error(chain):
    rows = _rows(chain, {"s": 0.5, "y": 0.5}, drop=("m",))
    assert not rows["m"].available and rows["m"].problem == "not exposed by the engine"
    assert rows["s"].divergent and rows["s"].worst_input is None  # m carries r's error (0)


def test_zero_reference_uses_the_floor_not_infinity(chain):
    model, plan = chain
    zeros = {n: np.zeros(4, np.float32) for n in REF}
    values = {n: np.full(4, 1e-9, np.float32) for n in REF}
    rows = compare_tensors(model, plan, values, zeros, threshold=1e-2)
    assert all(r.rel == pytest.approx(1e-3) for r in rows)
    assert not any(r.divergent for r in rows)


def test_reference_inf_matched_by_engine_inf_is_no_error(chain):
    model, plan = chain
    ref = {n: np.array([1.0, np.inf, -np.inf, 4.0], np.float32) for n in REF}
    rows = compare_tensors(model, plan, {n: v.copy() for n, v in ref.items()}, ref, threshold=1e-2)
    assert all(r.nonfinite == 0 and r.max_abs == 0.0 for r in rows)


class _FakeEngine:
    backend_name = "fake"

    def __init__(self, plan, values, note):
        self.plan, self._values, self._note = plan, values, note

    def run_layerwise(self, feeds):
        return self._values, self._note


def test_locate_uses_the_engines_note_and_partial_values(chain):
    model, plan = chain
    values = {"s": REF["s"] + 0.5, "y": REF["y"] + 0.5}  # a probe that saw only two tensors
    found = locate_divergence(_FakeEngine(plan, values, "layerwise build: a different engine"), {}, reference=REF)
    assert isinstance(found, Divergence) and found.note == "layerwise build: a different engine"
    assert found.first.tensor == "s" and found.first.node == "/b/Add"
    text = found.message()
    assert "2 of 4 float tensors compared" in text and "layerwise build: a different engine" in text
