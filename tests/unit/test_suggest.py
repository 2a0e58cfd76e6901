"""FP32-fallback search: candidate groups, the guided greedy search, pruning, reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pytest_trt
from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.cache import ArtifactCache
from pytest_trt.compare import compare_outputs
from pytest_trt.inputs import make_feeds
from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import export_feeds
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.reference.baseline import fp32_baseline
from pytest_trt.suggest import candidate_groups, compress_groups, escape_glob, scope_of, suggest_fp32_islands

ROOT = Path(__file__).resolve().parents[2]
ENCODER14 = ROOT / "example_suite" / "models" / "encoder_opset14.onnx"
VIT14 = ROOT / "tests" / "data" / "vit_tiny_opset14.onnx"
LN0 = "/encoder/layer.0/attention/output/LayerNorm"
DIMS = {"batch": 2, "sequence": 16}


@pytest.fixture(scope="module")
def encoder():
    return load_model(ENCODER14)


@pytest.fixture(scope="module")
def outlier_feeds(encoder):
    return make_feeds(encoder, dims=DIMS, val_range={"hidden_states": (-1, 1)},
                      outliers={"hidden_states": {"count": 2, "magnitude": 400.0}})


@pytest.fixture(scope="module")
def fp16_plan(encoder):
    return PrecisionPolicy("fp16").resolve(encoder)


@pytest.fixture(scope="module")
def found(encoder, outlier_feeds):
    return suggest_fp32_islands(encoder, PrecisionPolicy("fp16"), outlier_feeds, backend=get_backend("emulate"),
                                atol=1e-2)


# --------------------------------------------------------------------------------------
# candidates
# --------------------------------------------------------------------------------------
def test_helpers():
    assert escape_glob("/a[0]/b*?/c") == "/a[[]0]/b[*][?]/c"
    assert scope_of("/encoder/layer.0/LayerNorm/Pow") == "/encoder/layer.0/LayerNorm/"
    assert scope_of("/Add") is None and scope_of("Add_3") is None


def test_candidate_groups_are_scopes_generalised_scopes_blocks_nodes_and_op_types(fp16_plan):
    groups = {g.pattern: g for g in candidate_groups(fp16_plan)}
    ln0 = groups[f"{LN0}/*"]
    assert ln0.kind == "scope" and len(ln0.nodes) == 9  # the Constants are fixed, not candidates
    general = groups["*/LayerNorm/*"]
    assert general.kind == "general" and len(general.nodes) == 36 and len(general.scopes) == 4
    assert groups["/encoder/layer.0/attention/self/*"].kind == "block"  # has query/, key/, value/ below
    assert groups["/encoder/layer.0/attention/self/Softmax"].kind == "node"
    assert groups["op:Pow"].kind == "op" and len(groups["op:Pow"].nodes) == 4
    # groups selecting the same nodes are merged: op:Softmax == the two Softmax node groups? no: 2 vs 1 each
    node_sets = [g.nodes for g in groups.values()]
    assert len(node_sets) == len(set(node_sets))
    low = {d.name for d in fp16_plan.nodes.values() if d.precision == "fp16"}
    assert set().union(*node_sets) == low and len(low) == 98


# --------------------------------------------------------------------------------------
# the encoder: FP16 everywhere fails on outliers; one LayerNorm scope fixes it
# --------------------------------------------------------------------------------------
def test_suggests_the_layernorm_scope_that_overflows(found):
    assert found.passed and found.reason == "found"
    assert found.patterns == [f"{LN0}/*"]
    assert found.first_divergence == f"{LN0}/Pow"
    assert [g.kind for g in found.groups] == ["scope"]


def test_build_count_is_far_below_the_node_count(found):
    assert found.compute_nodes == 98
    assert found.builds <= 10 and found.builds == len(found.attempts) == 2
    assert [a.phase for a in found.attempts] == ["initial", "greedy"]
    # one to locate the divergence, then the answer's intermediates on each of the 4 input sets
    assert found.layerwise_runs == 1 + 4
    assert found.recheck_seeds == [1, 2, 3] and [i["label"] for i in found.inputs] == [
        "your inputs", "seed 1", "seed 2", "seed 3"]
    assert all(i["outputs_passed"] and not i["nonfinite_nodes"] for i in found.inputs)


def test_reports_accuracy_share_and_ready_to_paste_forms(found):
    acc = found.accuracy["last_hidden_state"]
    assert acc["passed"] and acc["max_abs"] < 1e-2
    assert found.initial_accuracy["last_hidden_state"]["max_abs"] > 1.0
    assert found.low_nodes == 89 and found.low_precision_share == pytest.approx(89 / 98)
    assert found.pytest_args == ["--trt-keep-fp32", f"{LN0}/*"]
    assert found.cli_args == ["--keep-fp32", f"{LN0}/*"]
    assert found.marker == f'@pytest.mark.trt(keep_fp32=["{LN0}/*"])'
    text = found.message()
    for needle in ("found (2 builds", f"--trt-keep-fp32 '{LN0}/*'", f"--keep-fp32 '{LN0}/*'", found.marker,
                   "89 of 98 compute nodes (91%) stay fp16", "*/LayerNorm/* (4 scopes)", "not TensorRT"):
        assert needle in text, needle
    data = json.loads(json.dumps(found.to_json(), allow_nan=False))
    assert data["patterns"] == [f"{LN0}/*"] and data["builds"] == 2 and data["passed"] is True
    assert data["alternatives"] == [{"pattern": "*/LayerNorm/*", "scopes": 4, "nodes": 36, "built": False}]


def test_the_suggested_policy_passes_when_rebuilt(encoder, outlier_feeds, found):
    engine = get_backend("emulate").build(found.policy.resolve(encoder), BuildConfig(), None)
    result = compare_outputs(engine.run(outlier_feeds), fp32_baseline(encoder, outlier_feeds), rtol=1e-2, atol=1e-2)
    assert result.passed


def test_nothing_to_change_when_it_already_passes(encoder):
    feeds = make_feeds(encoder, dims=DIMS)
    s = pytest_trt.suggest_fp32_islands(encoder, "fp16", feeds, backend="emulate", atol=1e-2)
    assert s.passed and s.reason == "already-passes" and s.patterns == [] and s.builds == 1
    assert "nothing needs to change" in s.message()
    assert s.marker == "@pytest.mark.trt(keep_fp32=[])"


def test_existing_keep_fp32_is_kept_and_extended(encoder, outlier_feeds):
    s = suggest_fp32_islands(encoder, PrecisionPolicy("fp16", keep_fp32=["op:Softmax"]), outlier_feeds,
                             backend="emulate", atol=1e-2)
    assert s.patterns == [f"{LN0}/*"]
    assert s.keep_fp32 == ["op:Softmax", f"{LN0}/*"]
    assert s.marker == f'@pytest.mark.trt(keep_fp32=["op:Softmax", "{LN0}/*"])'
    assert s.policy.keep_fp32 == ("op:Softmax", f"{LN0}/*")


def test_cache_is_used_and_results_are_the_same(encoder, outlier_feeds, tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    first = suggest_fp32_islands(encoder, "fp16", outlier_feeds, backend="emulate", cache=cache, atol=1e-2)
    again = suggest_fp32_islands(encoder, "fp16", outlier_feeds, backend="emulate", cache=cache, atol=1e-2)
    assert first.patterns == again.patterns and first.builds == again.builds
    assert first.cache_hits == 0 and again.cache_hits == again.builds


# --------------------------------------------------------------------------------------
# harder cases
# --------------------------------------------------------------------------------------
def test_two_causes_one_after_the_other(encoder):
    # A common offset of 1000 overflows the attention scores (Q.K^T) first, then the LayerNorm:
    # each is only visible once the earlier one is fixed.
    feeds = make_feeds(encoder, dims=DIMS, val_range={"hidden_states": (-0.05, 0.05)},
                       offset={"hidden_states": 1000.0})
    s = suggest_fp32_islands(encoder, "fp16", feeds, backend="emulate", atol=1e-2)
    assert s.passed and s.builds <= 10
    assert s.first_divergence == "/encoder/layer.0/attention/self/MatMul"
    assert f"{LN0}/*" in s.patterns
    assert any(p.startswith("/encoder/layer.0/attention/self/") for p in s.patterns)
    # 1-minimal: without any one of the patterns it fails
    expected = fp32_baseline(encoder, feeds)
    for p in s.patterns:
        rest = [q for q in s.patterns if q != p]
        engine = get_backend("emulate").build(PrecisionPolicy("fp16", keep_fp32=rest).resolve(encoder),
                                              BuildConfig(), None)
        assert not compare_outputs(engine.run(feeds), expected, rtol=1e-2, atol=1e-2).passed, p


def _vit_feeds(vit, seed):
    return make_feeds(vit, dims={"batch": 1}, outliers={"pixel_values": {"count": 4, "magnitude": 3e4}}, seed=seed)


def test_module_that_breaks_in_every_layer_is_generalised_and_holds_on_other_seeds():
    # Issue 15: the answer found for seed 0 alone was ['*/layernorm_before/*', '/layernorm/*'], which
    # fails at seed 1 (2 elements of last_hidden_state off by 2.6e-3). Now every answer is re-checked
    # on seeds 1, 2, 3 generated like the user's feeds before it is called found.
    vit = load_model(VIT14)
    # the tolerance the case was found at (the FP16 defaults before their calibration): the
    # calibrated defaults (rtol 2e-2, atol 1e-2) pass the seed-0 answer at seed 1 too
    rtol, atol = 1e-2, 1e-3

    def passes(patterns, seed):
        engine = get_backend("emulate").build(PrecisionPolicy("fp16", keep_fp32=patterns).resolve(vit),
                                              BuildConfig(), None)
        feeds = _vit_feeds(vit, seed)
        return compare_outputs(engine.run(feeds), fp32_baseline(vit, feeds), rtol=rtol, atol=atol).passed

    old_answer = ["*/layernorm_before/*", "/layernorm/*"]
    assert passes(old_answer, 0) and not passes(old_answer, 1)

    s = suggest_fp32_islands(vit, "fp16", _vit_feeds(vit, 0), backend="emulate", rtol=rtol, atol=atol,
                             make_feeds=lambda seed: _vit_feeds(vit, seed))
    assert s.passed and s.reason == "found" and s.builds <= 12
    assert "*/layernorm_before/*" in s.patterns  # promoted after the second layernorm_before broke
    assert all("layernorm" in p for p in s.patterns) and s.patterns != old_answer
    assert any(a.phase == "greedy" and "*/layernorm_before/*" in a.patterns for a in s.attempts)
    assert s.low_nodes < s.compute_nodes == 141
    assert [i["seed"] for i in s.inputs] == [None, 1, 2, 3] and all(i["outputs_passed"] for i in s.inputs)
    assert s.recheck_source == "generated like your inputs"
    for seed in (0, 1, 2, 3):  # independently: the answer passes on every seed it was checked on
        assert passes(s.keep_fp32, seed), seed


def test_compression_names_a_complete_set_of_scopes_by_its_general_pattern(encoder):
    candidates = candidate_groups(PrecisionPolicy("fp16").resolve(encoder))
    by = {g.pattern: g for g in candidates}
    scopes = [by[p] for p in by["*/LayerNorm/*"].scopes]
    assert [g.pattern for g in compress_groups(scopes + [by["op:Softmax"]], candidates)] == ["op:Softmax", "*/LayerNorm/*"]
    assert compress_groups(scopes[:3], candidates) == scopes[:3]


class _NoisyBackend:
    """Emulation whose outputs are off by 1e-3 even in FP32 (a backend whose FP32 differs)."""

    name = "noisy"
    disclaimer = "noisy emulation"

    def build(self, plan, config, cache, *, rebuild=False):
        engine = get_backend("emulate").build(plan, config, None)
        run = engine.run
        engine.run = lambda feeds: {k: v + np.float32(1e-3) for k, v in run(feeds).items()}
        return engine


def test_fails_in_fp32_too_is_said_clearly(encoder):
    feeds = make_feeds(encoder, dims=DIMS)
    s = suggest_fp32_islands(encoder, "fp16", feeds, backend=_NoisyBackend(), atol=1e-5, rtol=1e-5)
    assert not s.passed and s.reason == "fails-in-fp32" and s.fp32_passes is False
    # no node diverges on normal inputs, so the FP32 check comes right after the first build
    assert s.builds == 2 and [a.phase for a in s.attempts] == ["initial", "fp32-check"]
    assert "fails even fully in FP32" in s.message()
    assert s.patterns == [] and s.policy is None


def test_budget_exhausted_reports_the_fp32_diagnosis(encoder):
    feeds = make_feeds(encoder, dims=DIMS, val_range={"hidden_states": (-0.05, 0.05)},
                       offset={"hidden_states": 1000.0})
    s = suggest_fp32_islands(encoder, "fp16", feeds, backend="emulate", atol=1e-2, max_builds=3)
    assert not s.passed and s.reason == "budget" and s.builds <= 3
    assert s.fp32_passes is True  # one build was kept for the diagnosis
    assert "no passing set within 3 builds" in s.message() and "fully-FP32 plan passes" in s.message()


def test_a_rule_of_the_policy_that_forces_the_broken_node_low_is_named(encoder, outlier_feeds):
    policy = PrecisionPolicy("fp16", rules=[f"{LN0}/Pow=fp16"])  # keep_fp32 patterns cannot override it
    s = suggest_fp32_islands(encoder, policy, outlier_feeds, backend="emulate", atol=1e-2)
    assert not s.passed and s.reason == "exhausted" and s.fp32_passes is True
    assert s.blocked == [f"{LN0}/Pow ({LN0}/Pow=fp16)"]
    assert "the policy's own rules keep some nodes in fp16" in s.message() and s.blocked[0] in s.message()


def test_usage_errors(encoder, outlier_feeds):
    with pytest.raises(pytest_trt.UsageError, match="max_builds"):
        suggest_fp32_islands(encoder, "fp16", outlier_feeds, backend="emulate", max_builds=0)
    with pytest.raises(pytest_trt.UsageError, match="policy"):
        suggest_fp32_islands(encoder, 16, outlier_feeds, backend="emulate")


# --------------------------------------------------------------------------------------
# issue 15: answers are clean (no NaN/Inf inside), robust (re-check seeds), and not FP32 in effect
# --------------------------------------------------------------------------------------
GPT2 = ROOT / "tests" / "data" / "gpt2_tiny_opset14.onnx"


@pytest.fixture(scope="module")
def gpt2_outlier():
    """The real GPT-2 export with one embedding feature at 400 for every token: its first LayerNorm
    sees |x| ~ 400, so a decomposed LayerNorm's Pow overflows FP16 (400^2 > 65504) in every layer."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(GPT2))
    init = next(i for i in proto.graph.initializer if i.name == "transformer.wte.weight")
    w = numpy_helper.to_array(init).copy()
    w[:, 3] = 400.0
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    return load_model(proto)


def test_gpt2_answer_leaves_no_inf_inside(gpt2_outlier):
    # Before: the search proposed only ['/transformer/ln_f/*'] (outputs pass: the blocks' contributions
    # are small), while `locate` with that policy found Inf in four LayerNorm Pow nodes.
    from pytest_trt.locate.divergence import locate_divergence

    feeds = export_feeds(gpt2_outlier, seed=0)
    old = get_backend("emulate").build(PrecisionPolicy("fp16", keep_fp32=["/transformer/ln_f/*"]).resolve(gpt2_outlier),
                                       BuildConfig(), None)
    assert compare_outputs(old.run(feeds), fp32_baseline(gpt2_outlier, feeds), rtol=1e-2, atol=1e-3).passed
    inf_nodes = [t.node for t in locate_divergence(old, feeds).tensors if t.new_nonfinite]
    assert inf_nodes == [f"/transformer/h.{i}/ln_{j}/Pow" for i in (0, 1) for j in (1, 2)]

    s = suggest_fp32_islands(gpt2_outlier, "fp16", feeds, backend="emulate")
    assert s.passed and s.reason == "found" and not s.passes_output_only and s.nonfinite_nodes == []
    assert s.patterns == ["*/ln_1/*", "*/ln_2/*", "/transformer/ln_f/*"]
    engine = get_backend("emulate").build(s.policy.resolve(gpt2_outlier), BuildConfig(), None)
    assert not any(t.nonfinite for t in locate_divergence(engine, feeds).tensors)
    # pruning tried dropping */ln_1/* and */ln_2/*: outputs passed, Inf inside: rejected
    pruned = [a for a in s.attempts if a.phase == "prune"]
    assert pruned and all(a.outputs_passed and not a.passed and a.nonfinite_nodes for a in pruned)
    text = s.message()
    assert "checked on: your inputs, seed 1, seed 2, seed 3" in text and "no NaN/Inf inside" in text


def test_outputs_passing_with_inf_inside_is_reported_as_passes_output_only(gpt2_outlier):
    # The policy's own rule forces one LayerNorm Pow to FP16: no FP32 island can clean it.
    feeds = export_feeds(gpt2_outlier, seed=0)
    policy = PrecisionPolicy("fp16", rules=["/transformer/h.1/ln_2/Pow=fp16"])
    s = suggest_fp32_islands(gpt2_outlier, policy, feeds, backend="emulate", max_builds=8)
    assert not s.passed and s.reason == "passes-output-only" and s.passes_output_only
    assert s.nonfinite_nodes == ["/transformer/h.1/ln_2/Pow"]
    assert s.patterns and s.policy is not None  # what was tried, for inspection
    data = json.loads(json.dumps(s.to_json(), allow_nan=False))
    assert data["passes_output_only"] is True and data["nonfinite_nodes"] == ["/transformer/h.1/ln_2/Pow"]
    assert data["passed"] is False and data["reason"] == "passes-output-only"
    assert "passes the output check only" in s.message() and "/transformer/h.1/ln_2/Pow" in s.message()
    assert s.builds == 8


def test_bf16_answer_keeping_most_of_the_model_fp32_is_fp32_in_effect():
    # Before: with FP16-sized tolerances a BF16 search called ['/transformer/*', '/lm_head/*'] found,
    # keeping 126 of 140 compute nodes (90%) in FP32.
    gpt2 = load_model(GPT2)
    s = suggest_fp32_islands(gpt2, "bf16", export_feeds(gpt2, seed=0), backend="emulate", rtol=1e-2, atol=1e-3)
    assert not s.passed and s.reason == "fp32-in-effect" and s.fp32_in_effect
    assert s.fp32_nodes * 2 > s.compute_nodes and s.fp32_share > 0.5
    assert s.flops > 0 and 0.5 < s.fp32_flops_share <= 1.0
    data = s.to_json()
    assert data["fp32_in_effect"] is True and data["fp32_nodes"] == s.fp32_nodes
    assert data["flops"]["total"] == s.flops and data["flops"]["fp32_share"] == round(s.fp32_flops_share, 4)
    assert "FP32 in effect" in s.message() and "not a bf16 engine" in s.message()


def test_builds_count_every_engine_built(encoder, outlier_feeds):
    calls = []

    class Counting:
        name = "emulate"
        disclaimer = "counted emulation"

        def build(self, plan, config, cache, *, rebuild=False):
            calls.append(plan.fingerprint())
            return get_backend("emulate").build(plan, config, cache)

    s = suggest_fp32_islands(encoder, "fp16", outlier_feeds, backend=Counting(), atol=1e-2)
    assert s.builds == len(calls) >= len(s.attempts)


def test_recheck_seeds_must_be_at_least_three(encoder, outlier_feeds):
    with pytest.raises(pytest_trt.UsageError, match="at least 3"):
        suggest_fp32_islands(encoder, "fp16", outlier_feeds, backend="emulate", recheck_seeds=[1, 2])
    with pytest.raises(pytest_trt.UsageError, match="shape of your feeds"):
        suggest_fp32_islands(encoder, "fp16", outlier_feeds, backend="emulate",
                             make_feeds=lambda seed: make_feeds(encoder, dims={"batch": 1, "sequence": 4}, seed=seed))


def test_permuted_feeds_keep_values_and_shapes():
    from pytest_trt.suggest import permuted_feeds

    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "ids": np.arange(6).reshape(2, 3)}
    a, b = permuted_feeds(feeds, 1), permuted_feeds(feeds, 2)
    for name, arr in feeds.items():
        assert a[name].shape == arr.shape and a[name].dtype == arr.dtype
        assert sorted(a[name].ravel()) == sorted(arr.ravel())
    assert not np.array_equal(a["x"], b["x"]) and np.array_equal(permuted_feeds(feeds, 1)["x"], a["x"])


# --------------------------------------------------------------------------------------
# what an island costs (issue 32)
# --------------------------------------------------------------------------------------
def test_island_cost_cannot_be_measured_on_emulate_and_says_why(found):
    assert found.passed and found.patterns
    costs = found.island_costs
    assert not costs.measured and costs.source is None and costs.islands == []
    assert costs.reason.startswith("CPU emulation computes everything in FP32: no GPU time")
    assert "  cost of the FP32 islands: cannot be measured on this backend (CPU emulation computes" in found.message()
    assert found.to_json()["island_costs"]["reason"] == costs.reason


def test_island_cost_is_the_time_with_minus_without_each_island(encoder, outlier_feeds, monkeypatch):
    """ONNX Runtime CUDA stood in for by SYNTHETIC latencies (declared here): 1 ms plus 0.01 ms per FP32
    compute node of the plan timed. Each island then costs 0.01 ms per node it keeps FP32."""
    from pytest_trt.layers.timing import LayerProfile
    from pytest_trt.ledger import islands

    timed = []

    def synthetic(plan, feeds, *, warmup, iterations, per_node):
        fp32 = sum(1 for d in plan.nodes.values() if d.kind == "compute" and d.precision == "fp32")
        timed.append((plan.policy.describe(), iterations, per_node, feeds is outlier_feeds))
        return LayerProfile(source="onnxruntime-cuda", unit="ONNX node", warmup=warmup, iterations=iterations,
                            samples={}, end_to_end_ms=[1.0 + 0.01 * fp32] * iterations)

    monkeypatch.setattr(islands, "ort_cuda_reason", lambda: None)
    monkeypatch.setattr(islands, "time_plan", synthetic)
    s = suggest_fp32_islands(encoder, PrecisionPolicy("fp16"), outlier_feeds, backend="emulate", atol=1e-2,
                             timing_iterations=7)
    costs = s.island_costs
    assert costs.measured and costs.source == "onnxruntime-cuda" and costs.iterations == 7
    assert len(timed) == 1 + len(s.patterns)  # with every island, then without each one
    assert all(it == 7 and not per_node and same for _, it, per_node, same in timed)  # same inputs, same runs
    by_pattern = {i["pattern"]: i for i in costs.islands}
    assert list(by_pattern) == s.patterns
    for g in s.groups:
        assert by_pattern[g.pattern]["nodes"] == len(g.nodes)
        assert by_pattern[g.pattern]["delta_ms"] == pytest.approx(0.01 * len(g.nodes))
    text = s.message()
    assert "what each FP32 island costs (ONNX Runtime CUDA, not TensorRT; end-to-end median of 7 runs" in text
    first = s.groups[0]
    assert f"{first.pattern}" in text and f"{0.01 * len(first.nodes):+.4g} ms" in text
    assert s.to_json()["island_costs"]["islands"][0]["without"]["count"] == 7


def test_island_cost_timing_off_and_explicit_sources(encoder, outlier_feeds):
    s = suggest_fp32_islands(encoder, PrecisionPolicy("fp16"), outlier_feeds, backend="emulate", atol=1e-2,
                             timing="off")
    assert s.island_costs.reason == "not timed (timing off)"
    with pytest.raises(pytest_trt.UsageError, match="unknown timing source 'fast'"):
        suggest_fp32_islands(encoder, PrecisionPolicy("fp16"), outlier_feeds, backend="emulate", timing="fast")
