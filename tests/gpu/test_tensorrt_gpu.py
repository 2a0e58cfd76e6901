"""Real TensorRT on a real GPU: the facts the glue in pytest_trt/backends/ relies on.

Collected everywhere; skipped with the exact reason ("TensorRT not installed", "no CUDA
device", ...) where TensorRT or a GPU is missing. On a GPU runner::

    pytest tests/gpu -v -rs

Until these pass on a real TensorRT 10.x / 11.x and TensorRT-RTX, the TensorRT backend
is verified only against the fake in tests/unit/fake_tensorrt.py. A failure here with
a message about the inspector schema, debug tensors or layer metadata most likely
means a fact in ``pytest_trt/backends/tensorrt/compat.py`` is wrong: fix it there.
"""

from __future__ import annotations

import pytest

from pytest_trt.backends.base import BuildConfig
from pytest_trt.compare import assert_close
from pytest_trt.errors import BackendUnavailable
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.reference.baseline import fp32_baseline, fp32_intermediates

pytestmark = pytest.mark.gpu

LN = "*/LayerNorm/*"


def keep_ln_fp32(model):
    return PrecisionPolicy(default="fp16", keep_fp32=(LN,)).resolve(model)


def test_strong_fp16_keep_layernorm_fp32_matches_ort(tensorrt_backend, engine_cache, ln_model, ln_feeds):
    plan = keep_ln_fp32(ln_model)
    engine = tensorrt_backend.build(plan, BuildConfig(typing="strong"), engine_cache)
    assert engine.typing == "strong"
    assert engine.network_mismatches == [], [m.describe() for m in engine.network_mismatches]
    actual = engine.run(ln_feeds)
    assert_close(actual, fp32_baseline(ln_model, ln_feeds), precision="fp16")


def test_layer_report_finds_layernorm_nodes_in_fp32(tensorrt_backend, engine_cache, ln_model):
    plan = keep_ln_fp32(ln_model)
    report = tensorrt_backend.build(plan, BuildConfig(typing="strong"), engine_cache).layers()
    print(report.table())
    assert report.source == "inspector" and report.layers
    assert report.schema in ("10.x", "11.x")
    ln = [o for o in report.nodes_matching(plan.match(LN)) if o.status != "fixed"]
    assert not [o for o in ln if o.status == "mismatch"], report.table()
    verified = [o for o in ln if o.status == "ok"]
    assert verified, "no LayerNorm node could be verified (metadata missing?):\n" + report.table()
    assert all(o.observed == "fp32" for o in verified), report.table()


def test_weak_typing_on_10x(tensorrt_backend, engine_cache, ln_model, ln_feeds):
    compat = tensorrt_backend.compat()
    if not compat.has_weak_typing():
        pytest.skip(compat.weak_typing_reason())
    plan = keep_ln_fp32(ln_model)
    engine = tensorrt_backend.build(plan, BuildConfig(typing="weak"), engine_cache)
    assert engine.typing == "weak"
    assert engine.weak_hints["unmatched"] == [], engine.weak_hints
    assert_close(engine.run(ln_feeds), fp32_baseline(ln_model, ln_feeds), precision="fp16")
    report = engine.layers()
    print(report.table())  # shows whether Myelin honoured the hints: the point of verifying weak typing
    assert set(report.nodes) == set(plan.nodes)
    assert report.typing == "weak"


def test_cache_hit_on_second_build(tensorrt_backend, engine_cache, ln_model):
    plan = keep_ln_fp32(ln_model)
    first = tensorrt_backend.build(plan, BuildConfig(), engine_cache)
    second = tensorrt_backend.build(plan, BuildConfig(), engine_cache)
    assert not first.build_info.cache_hit and second.build_info.cache_hit
    assert first.build_info.key == second.build_info.key
    assert list((engine_cache.root / "timing-cache").glob("*.cache")), "the timing cache was not saved"


def test_run_layerwise(tensorrt_backend, engine_cache, ln_model, ln_feeds):
    plan = keep_ln_fp32(ln_model)
    engine = tensorrt_backend.build(plan, BuildConfig(), engine_cache)
    values, note = engine.run_layerwise(ln_feeds)
    print(note)
    if tensorrt_backend.compat().has_unfused_debug_tensors():
        assert "engine under test" in note
    else:
        assert "SEPARATE layerwise build" in note
    assert values, note
    reference = fp32_intermediates(ln_model, ln_feeds, names=list(values))
    name = next((n for n in values if "/LayerNorm/" in n), next(iter(values)))
    assert values[name].shape == reference[name].shape
    assert_close({name: values[name]}, {name: reference[name]}, precision="fp16")


def test_debug_tensors_both_switches_and_names(tensorrt_backend, engine_cache, ln_model, ln_feeds):
    """Issue 17: with both debug switches the unfused tensors arrive (under internal names) and are
    named through the layer report; a partial capture says so. Prints what TensorRT emitted."""
    compat = tensorrt_backend.compat()
    if not compat.has_unfused_debug_tensors():
        pytest.skip(f"{compat.label} has no mark_unfused_tensors_as_debug_tensors (before 10.12)")
    plan = keep_ln_fp32(ln_model)
    engine = tensorrt_backend.build(plan, BuildConfig(), engine_cache)
    values, note = engine.run_layerwise(ln_feeds)
    print(note)
    print({n: why for n, (why, _) in engine.unmapped_debug_tensors.items()})
    assert "named through the engine's layer report" in note
    assert values and set(values) <= set(plan.tensor_precision)
    reference = fp32_intermediates(ln_model, ln_feeds, names=list(values))
    for name, value in values.items():
        assert value.shape == reference[name].shape, name


def test_data_dependent_output_shape(tensorrt_backend, engine_cache):
    """Issue 17: NonZero's output shape is known only after execution (IOutputAllocator)."""
    import numpy as np
    from onnx import TensorProto, helper

    from pytest_trt.model.load import load_model

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("NonZero", ["r"], ["idx"], name="nz")],
        "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [1, "n"])])
    model = load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    engine = tensorrt_backend.build(PrecisionPolicy(default="fp32").resolve(model), BuildConfig(), engine_cache)
    out = engine.run({"x": np.array([1.0, -2.0, 0.0, 3.0, 4.0, -1.0], np.float32)})
    assert out["idx"].tolist() == [[0, 3, 4]]


def test_bf16_feed_conversion_matches_the_realization(tensorrt_backend, engine_cache, ln_model, ln_feeds):
    """Issue 17: a BF16 engine runs on feeds converted by the one BF16 conversion (NaN stays NaN)."""
    plan = PrecisionPolicy(default="bf16", keep_fp32=(LN,)).resolve(ln_model)
    engine = tensorrt_backend.build(plan, BuildConfig(typing="strong"), engine_cache)
    assert_close(engine.run(ln_feeds), fp32_baseline(ln_model, ln_feeds), precision="bf16")


def test_rtx_builds_strongly_typed_and_checks_the_network(tensorrt_rtx_backend, engine_cache, ln_model, ln_feeds):
    plan = keep_ln_fp32(ln_model)
    engine = tensorrt_rtx_backend.build(plan, BuildConfig(), engine_cache)
    assert engine.typing == "strong"
    assert engine.network_mismatches == [], [m.describe() for m in engine.network_mismatches]
    try:
        actual = engine.run(ln_feeds)
    except BackendUnavailable as exc:  # e.g. compute capability 9.0 (TENSORRT_RTX.md)
        assert engine_cache.entries("engine"), "the build should be cached even when it cannot run here"
        pytest.skip(exc.reason)
    assert_close(actual, fp32_baseline(ln_model, ln_feeds), precision="fp16")
