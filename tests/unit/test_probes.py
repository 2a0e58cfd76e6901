"""Numeric LayerNorm probes: an FP16 LayerNorm is told from an FP32 one on the emulate backend,
for both forms (decomposed at opset 14, LayerNormalization at opset 17), on the example-suite
encoders (real torch.onnx exports) and on the testing_models builders."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.cache import ArtifactCache
from pytest_trt.errors import PrecisionError, UsageError
from pytest_trt.model import testing_models as tm
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.verify.precision import assert_precision
from pytest_trt.verify.probes import (
    DEFAULT_TOLERANCE,
    FP16_MAX,
    extract_layernorm,
    find_layernorms,
    make_probes,
    probe_precision,
    probe_shape,
    sub_plan,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "example_suite" / "models"
DATA = ROOT / "tests" / "data"
LN0 = "/encoder/layer.0/attention/output/LayerNorm"
FORMS = {  # model -> (pattern selecting ONE LayerNorm, form)
    "encoder_opset14.onnx": (f"{LN0}/*", "decomposed"),
    "encoder_opset17.onnx": (f"{LN0}/*", "LayerNormalization"),
}


@pytest.fixture(scope="module")
def emulate():
    return get_backend("emulate")


@pytest.fixture(scope="module")
def models():
    return {name: load_model(MODELS / name) for name in FORMS}


def _engine(emulate, model, policy):
    return emulate.build(policy.resolve(model), BuildConfig(), None)


# -- finding LayerNorms ---------------------------------------------------------------------
def test_finds_both_forms_in_the_encoders(models):
    plan14 = PrecisionPolicy().resolve(models["encoder_opset14.onnx"])
    found = find_layernorms(plan14)
    assert [i.label for i in found] == [f"/encoder/layer.{k}/{s}/LayerNorm" for k in (0, 1)
                                        for s in ("attention/output", "output")]
    first = found[0]
    assert first.form == "decomposed"
    assert first.nodes == tuple(f"{LN0}/{n}" for n in ("ReduceMean", "Sub", "Constant", "Pow", "ReduceMean_1",
                                                      "Constant_1", "Add", "Sqrt", "Div", "Mul", "Add_1"))
    assert first.output == f"{LN0}/Add_1_output_0"
    plan17 = PrecisionPolicy().resolve(models["encoder_opset17.onnx"])
    found17 = find_layernorms(plan17)
    assert len(found17) == 4 and {i.form for i in found17} == {"LayerNormalization"}
    assert found17[0].nodes == (f"{LN0}/LayerNormalization",)


@pytest.mark.parametrize("name, scope", [("gpt2_tiny_opset14.onnx", "/transformer/h.0/ln_1"),
                                         ("vit_tiny_opset14.onnx", "/layers.0/layernorm_before")])
def test_finds_decomposed_layernorms_by_structure_not_by_name(name, scope):
    found = find_layernorms(PrecisionPolicy().resolve(load_model(DATA / name)))
    assert found and found[0].label == scope and found[0].form == "decomposed"


def test_extraction_keeps_the_full_plans_precisions(models):
    model = models["encoder_opset14.onnx"]
    # a mixed LayerNorm: kept FP32 except its Pow
    plan = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"], rules=[f"{LN0}/Pow=fp16"]).resolve(model)
    inst = find_layernorms(plan)[0]
    shape = probe_shape(plan, inst, 12)
    assert shape == (1, 12, 64)
    proto = extract_layernorm(plan, inst, shape)
    assert [i.name for i in proto.graph.input] == [inst.input]
    assert [o.name for o in proto.graph.output] == [inst.output]
    sub = sub_plan(plan, inst, proto)
    assert {n: sub.nodes[n].precision for n in inst.nodes} == {n: plan.nodes[n].precision for n in inst.nodes}
    assert sub.nodes[f"{LN0}/Pow"].precision == "fp16" and sub.nodes[f"{LN0}/Sub"].precision == "fp32"


def test_probe_inputs_do_what_they_claim():
    h = 64
    p = make_probes((1, 4, h), seed=3)
    assert {k: v.dtype for k, v in p.items()} == {k: np.float32 for k in ("offset", "outlier", "sum")}
    off = p["offset"].astype(np.float64)
    assert abs(off.mean() - 1000) < 0.1 and 0.03 < off.std(axis=-1).mean() < 0.07
    out = p["outlier"].astype(np.float64)
    dev = np.abs(out - out.mean(axis=-1, keepdims=True)).max(axis=-1)
    assert (out.max(axis=-1) >= 300).all() and (dev > math.sqrt(FP16_MAX)).all()
    s = p["sum"].astype(np.float64)
    assert (np.sum(s ** 2, axis=-1) > FP16_MAX).all()              # an FP16 sum of squares overflows
    assert ((s - s.mean(axis=-1, keepdims=True)) ** 2).max() < FP16_MAX  # no single square does
    assert (np.asarray(make_probes((1, 4, h), seed=3)["sum"]) == p["sum"]).all()  # seeded


# -- the verdicts -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(FORMS))
def test_tells_fp16_from_fp32_layernorm_on_emulate(emulate, models, name):
    pattern, form = FORMS[name]
    model = models[name]
    kept = probe_precision(_engine(emulate, model, PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"])), pattern)
    lowered = probe_precision(_engine(emulate, model, PrecisionPolicy("fp16")), pattern)
    assert len(kept) == len(lowered) == 1
    k, low = kept[0], lowered[0]
    assert (k.form, low.form) == (form, form)
    assert (k.planned, low.planned) == ("fp32", "fp16")
    assert k.text == "behaves like fp32" and low.text == "behaves like fp16/bf16"
    assert k.emulated and k.backend == "emulate" and k.hidden == 64
    # FP32: every probe within tolerance (the emulation computes the same FP32 graph: error 0)
    assert all(not m.flagged and m.nonfinite == 0 and m.rel_err <= 1e-6 for m in k.measurements)
    by = {m.probe: m for m in low.measurements}
    # the offset probe discriminates for BOTH forms: FP16 storage wipes out the 0.05 spread
    assert by["offset"].flagged and (by["offset"].nonfinite or by["offset"].rel_err > 0.5)
    if form == "decomposed":
        assert by["outlier"].flagged  # the Pow overflows
    else:
        # the fused op computes in FP32 between FP16-rounded input and output (emulation):
        # only the offset probe can see it
        assert not by["outlier"].flagged and by["offset"].rel_err > 0.5
    assert not by["sum"].flagged  # the emulation does not model FP16 accumulation inside kernels
    json_ = low.to_json()
    assert json_["verdict"] == "low" and json_["text"] == "behaves like fp16/bf16"
    assert {m["probe"] for m in json_["measurements"]} == {"offset", "outlier", "sum"}


@pytest.mark.parametrize("builder", [tm.decomposed_layernorm_block, tm.layernorm17_block])
def test_bf16_layernorm_is_caught_too(emulate, builder):
    results = probe_precision(_engine(emulate, load_model(builder()), PrecisionPolicy("bf16")), "*/LayerNorm/*")
    assert [r.text for r in results] == ["behaves like fp16/bf16"]
    assert {m.probe for m in results[0].measurements if m.flagged} == {"offset"}  # bf16 does not overflow


def test_a_single_lowered_node_makes_the_layernorm_behave_low(emulate, models):
    model = models["encoder_opset14.onnx"]
    engine = _engine(emulate, model, PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"], rules=[f"{LN0}/Pow=fp16"]))
    [r] = probe_precision(engine, f"{LN0}/Pow")  # any node of the LayerNorm selects it
    assert r.planned == "mixed" and r.verdict == "low"


def test_probe_builds_go_through_the_cache(emulate, models, tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    model = models["encoder_opset17.onnx"]
    engine = emulate.build(PrecisionPolicy("fp16").resolve(model), BuildConfig(), cache)
    probe_precision(engine, "op:LayerNormalization")  # cache found from the engine's entry
    builds = [e for e in cache.events() if e.get("kind") == "emulate" and e.get("event") == "build"]
    assert len(builds) == 1 + 4  # the engine + one probe build per LayerNorm
    probe_precision(engine, "op:LayerNormalization")
    hits = [e for e in cache.events() if e.get("kind") == "emulate" and e.get("event") == "hit"]
    assert len(hits) == 4


def test_pattern_without_layernorm_is_a_usage_error(emulate, models):
    engine = _engine(emulate, models["encoder_opset14.onnx"], PrecisionPolicy("fp16"))
    with pytest.raises(UsageError, match="LayerNorm only"):
        probe_precision(engine, "op:Softmax")


# -- through assert_precision ---------------------------------------------------------------
def test_assert_precision_method_probe_and_both(emulate, models):
    model = models["encoder_opset14.onnx"]
    kept = _engine(emulate, model, PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"]))
    check = assert_precision(kept, f"{LN0}/*", "fp32", method="probe")
    assert check.passed and len(check.probes) == 1 and check.counts()["pass"] == 9
    assert check.nodes[0].probe == f"{LN0}: behaves like fp32"
    both = assert_precision(kept, f"{LN0}/*", "fp32", method="both")
    assert both.passed and both.to_json()["probes"][0]["verdict"] == "fp32"

    lowered = _engine(emulate, model, PrecisionPolicy("fp16"))
    with pytest.raises(PrecisionError) as exc:
        assert_precision(lowered, f"{LN0}/*", "fp32", method="probe")
    msg = str(exc.value)
    assert "9 failed" in msg and "behaves like fp16/bf16" in msg and "offset:" in msg
    assert {v.cause for v in exc.value.findings.failures} == {"probe"}
    # asserting fp16 on the lowered LayerNorm agrees with the probes
    assert assert_precision(lowered, f"{LN0}/*", "fp16", method="probe").passed


def test_probe_method_marks_non_layernorm_nodes_unverifiable(emulate, models):
    engine = _engine(emulate, models["encoder_opset14.onnx"], PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"]))
    check = assert_precision(engine, "/encoder/layer.0/attention/output/*", "fp32", method="probe",
                             allow_unverifiable=True)
    unv = [v for v in check.nodes if v.status == "unverifiable"]
    assert unv and all("probes exist for LayerNorm only" in v.detail for v in unv)
    assert DEFAULT_TOLERANCE == 0.02
