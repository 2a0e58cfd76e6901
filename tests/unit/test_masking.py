"""Masking values (an attention mask's -FLT_MAX) are never named as the overflow to fix, nor as NaN/Inf inside.

Issue 28, "hints that point the right way": ``compare``'s range diagnosis named the causal
mask ``/Where_1`` of the calibration GPT-2 as the overflow to keep FP32 (doing so changes
nothing) while the real cause, ``/h.0/ln_1/Pow``, came second; and ``suggest`` said "as given:
fails" for a BF16 GPT-2 whose outputs pass, because -FLT_MAX rounds to -inf in BF16.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto

from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.cli import main as cli_main
from pytest_trt.compare import compare_outputs
from pytest_trt.inputs import make_feeds
from pytest_trt.locate.divergence import locate_divergence
from pytest_trt.locate.ranges import range_message, range_overflows
from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import graph_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.reference.baseline import fp32_baseline

DATA = Path(__file__).resolve().parents[1] / "data"
GPT2_CALIBRATION = DATA / "calibration" / "gpt2_opset14.onnx"
GPT2_TINY = DATA / "gpt2_tiny_opset14.onnx"
FLT_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(scope="module")
def gpt2():
    return load_model(GPT2_CALIBRATION)


@pytest.fixture(scope="module")
def outlier_feeds():
    """The newcomer's inputs: uniform in [-1, 1] with two elements at +400 and -400."""
    x = np.random.default_rng(0).uniform(-1, 1, (2, 16, 64)).astype(np.float32)
    x[0, 3, 5], x[1, 9, 17] = 400.0, -400.0
    return {"inputs_embeds": x}


def _emulated(model, policy):
    return get_backend("emulate").build(policy.resolve(model), BuildConfig(), None)


def test_range_diagnosis_names_the_layernorm_pow_and_sets_the_mask_aside(gpt2, outlier_feeds):
    found = range_overflows(PrecisionPolicy("fp16").resolve(gpt2), outlier_feeds)
    real = [f.node for f in found if not f.masking]
    masks = [f.node for f in found if f.masking]
    assert real[0] == "/h.0/ln_1/Pow" and found[0].node == "/h.0/ln_1/Pow"
    assert masks == ["/Where_1", "/h.0/attn/Add", "/h.1/attn/Add"]
    text = range_message(found)
    assert "fix: keep the first one's scope FP32 (--keep-fp32 '/h.0/ln_1/*'; " in text
    assert "not the cause: 3 tensor(s) exceed it only at masking values" in text
    assert "'/Where_1'" in text.split("not the cause")[1] and "'/Where_1'" not in text.split("not the cause")[0]


def test_keeping_the_mask_fp32_changes_nothing_so_it_is_rightly_not_the_fix(gpt2, outlier_feeds):
    # the premise of the rule, on the newcomer's case: max abs error 7.94 either way
    expected = fp32_baseline(gpt2, outlier_feeds)
    errors = []
    for keep in ((), ("/Where_1",)):
        result = compare_outputs(_emulated(gpt2, PrecisionPolicy("fp16", keep_fp32=keep)).run(outlier_feeds),
                                 expected, precision="fp16")
        errors.append(result.outputs["last_hidden_state"].max_abs)
    assert errors[0] == errors[1] and errors[0] > 1


def test_compare_cli_names_the_first_overflow_that_matters(outlier_feeds, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "cache"))
    np.savez(tmp_path / "gpt2_outliers.npz", **outlier_feeds)
    rc = cli_main(["compare", str(GPT2_CALIBRATION), "--fp16", "--backend", "emulate",
                   "--load-inputs", str(tmp_path / "gpt2_outliers.npz")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "--keep-fp32 '/h.0/ln_1/*'" in out and "--keep-fp32 '/Where_1'" not in out


def test_bf16_mask_becoming_minus_inf_is_not_nan_inf_inside():
    gpt2 = load_model(GPT2_TINY)
    feeds = make_feeds(gpt2, shapes={"input_ids": (2, 16)}, val_range={"input_ids": (0, 255)})
    div = locate_divergence(_emulated(gpt2, PrecisionPolicy("bf16")), feeds)
    adds = [div.row(f"/transformer/h.{i}/attn/Add_output_0") for i in (0, 1)]
    assert div.first is None
    assert all(t.saturated == 480 and t.inf == 0 and t.nonfinite == 0 and not t.divergent for t in adds)
    assert "masking values: 960 element(s)" in div.message()
    assert div.to_json()["tensors"][[t["node"] for t in div.to_json()["tensors"]].index(adds[0].node)]["saturated"]


def test_suggest_says_a_bf16_gpt2_with_a_mask_inside_passes_as_given(tmp_path, capsys, monkeypatch):
    # the newcomer's command; it printed "as given: fails" and proposed keeping the mask Adds FP32
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "cache"))
    rc = cli_main(["suggest", str(GPT2_TINY), "--bf16", "--backend", "emulate", "--input-shapes", "input_ids:[2,16]",
                   "--val-range", "input_ids:[0,255]"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "as given: passes" in out and "nothing needs to change" in out
    assert "masking values such as an attention mask's -FLT_MAX become +-inf or the largest finite value at /transformer/h.0/attn/Add" in out


# ----------------------------------------------------------------------------- the rule on small graphs
F = TensorProto.FLOAT


def _masked_model(fill: float, scale: float = 1.0):
    """y = Where(x > 0, x * scale, fill) * 0.5: a mask with a constant fill, and a computed tensor x * scale
    (the last Mul keeps the mask an inner tensor: graph outputs stay FP32)."""
    from onnx import helper

    nodes = [helper.make_node("Mul", ["x", "s"], ["xs"], name="scale"),
             helper.make_node("Greater", ["x", "zero"], ["keep"], name="cmp"),
             helper.make_node("Where", ["keep", "xs", "fill"], ["m"], name="mask"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="out")]
    inits = [("s", np.array(scale, np.float32)), ("zero", np.array(0.0, np.float32)),
             ("fill", np.array(fill, np.float32)), ("half", np.array(0.5, np.float32))]
    return load_model(graph_model(nodes, [("x", F, [2, 4])], [("y", F, [2, 4])], inits))


@pytest.mark.parametrize("fill", [-FLT_MAX, -1e9])
def test_a_constant_fill_beyond_the_range_is_a_masking_value(fill):
    model = _masked_model(fill)
    feeds = {"x": np.array([[1, -1, 2, -2], [0.5, -0.5, 3, -3]], np.float32)}
    found = range_overflows(PrecisionPolicy("fp16").resolve(model), feeds)
    assert [(f.node, f.masking) for f in found] == [("mask", True)]
    assert "fix:" not in range_message(found) and "not what fails here" in range_message(found)


def test_a_computed_overflow_is_not_a_masking_value_even_beside_a_mask():
    model = _masked_model(-1e9, scale=1e5)  # x * 1e5 reaches 3e5: computed, and matches no sentinel
    feeds = {"x": np.array([[1, -1, 2, -2], [0.5, -0.5, 3, -3]], np.float32)}
    found = range_overflows(PrecisionPolicy("fp16").resolve(model), feeds)
    assert [(f.node, f.masking) for f in found] == [("scale", False), ("mask", False)]
    assert "fix: keep the first one's node FP32 (--keep-fp32 scale)" in range_message(found)  # no scope


def test_sentinels_are_flt_max_and_the_constants_beyond_the_range():
    from pytest_trt.locate.masking import is_masking, sentinels

    model = _masked_model(-1e9, scale=1e5)
    assert list(sentinels(model, 65504.0)) == [1e5, 1e9, FLT_MAX]
    assert list(sentinels(model, 3.3895313892515355e38)) == [FLT_MAX]
    assert list(is_masking(np.array([1e9 + 10, 1e9 * 1.01, FLT_MAX, 2e5]), np.array([1e9, FLT_MAX]))) == [
        True, False, True, False]


# ----------------------------------------------------------------------------- clamped, not only -inf
# A realization clamps a stored -FLT_MAX to the low precision's largest finite value (FP16 -65504):
# `locate` named a dynamo-exported Llama's mask `node_Where_225` the first divergent node (rel 1.0).
DECODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "decoder_dynamo.onnx"
FP16_MAX, BF16_MAX = 65504.0, 3.3895313892515355e38


@pytest.mark.parametrize("limit", [FP16_MAX, BF16_MAX])
def test_saturation_is_infinity_or_the_largest_finite_value_of_the_same_sign_at_a_masking_value(limit):
    from pytest_trt.locate.masking import saturation

    marks = np.array([1e9, FLT_MAX]) if limit == FP16_MAX else np.array([FLT_MAX])
    #                    mask clamped   mask -> -inf   wrong sign   below R          NaN         not beyond R
    reference = np.array([-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX, -1.0])
    engine = np.array([-limit, -np.inf, limit, -limit / 2, np.nan, -limit])
    assert list(saturation(engine, reference, limit, marks)) == [True, True, False, False, False, False]
    if limit == FP16_MAX:  # a model constant beyond the range (-1e9) is a sentinel too, plus what a mask path adds
        assert list(saturation(np.array([-limit, -limit]), np.array([-1e9 - 3, -1e9]), limit, marks)) == [True, True]
    # a real overflow (a Pow of an outlier: FP32 1.5e5, or 3e38 computed) matches no sentinel: clamped or inf, an error
    overflow = np.array([1.5e5, 1.5e5, 3e38])
    assert not saturation(np.array([limit, np.inf, limit]), overflow, limit, marks).any()


def test_a_clamped_mask_is_saturated_and_a_clamped_real_overflow_is_still_the_first_divergent_node():
    from pytest_trt.locate.divergence import DEFAULT_THRESHOLDS, compare_tensors
    from pytest_trt.reference.baseline import fp32_intermediates

    model = _masked_model(-FLT_MAX, scale=1e5)  # x * 1e5 reaches 3e5 (computed), the fill is -FLT_MAX
    plan = PrecisionPolicy("fp16").resolve(model)
    # no x of +-1: x * 1e5 would equal the model's constant 1e5, a sentinel by the rule
    feeds = {"x": np.array([[1.5, -1.25, 2, -2], [0.5, -0.5, 3, -3]], np.float32)}
    reference = fp32_intermediates(model, feeds)
    values = {k: np.clip(v, -FP16_MAX, FP16_MAX) for k, v in reference.items()}  # both clamped to +-65504
    rows = {t.node: t for t in compare_tensors(model, plan, values, reference, threshold=DEFAULT_THRESHOLDS["fp16"])}
    assert rows["mask"].saturated == 4 and rows["scale"].saturated == 0
    assert rows["scale"].divergent and rows["scale"].rel > 0.5  # 3e5 held as 65504: reported
    assert not rows["mask"].divergent  # carries the scale's error at the kept positions, introduces none
    assert [t.node for t in rows.values() if t.divergent] == ["scale"]


def _locate_decoder(tokens: str, tmp_path, capsys, monkeypatch) -> str:
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "cache"))
    rc = cli_main(["locate", str(DECODER), "--fp16", "--keep-fp32", "*/input_layernorm/*", "--backend", "emulate",
                   "--input-shapes", "input_ids:[2,16]", "attention_mask:[2,16]",
                   "--val-range", f"input_ids:{tokens}", "attention_mask:[1,1]"])
    out = capsys.readouterr().out
    return f"rc={rc}\n{out}"


def test_locate_on_the_dynamo_decoder_does_not_name_its_clamped_mask(tmp_path, capsys, monkeypatch):
    out = _locate_decoder("[0,247]", tmp_path, capsys, monkeypatch)
    assert out.startswith("rc=0"), out
    assert "first divergent node" not in out and "node_Where_225" not in out.split("masking values:")[0], out
    assert ("masking values: 2160 element(s) where FP32 holds a masking constant beyond the fp16 range (such as an "
            "attention mask's -FLT_MAX) are +-inf or +-65504 (the largest finite fp16 value) in the engine at "
            "/model/layers.0/self_attn/node_Where_225") in out


def test_locate_on_the_dynamo_decoder_still_names_the_real_overflow_first(tmp_path, capsys, monkeypatch):
    # outlier tokens: the post-attention RMSNorm's Pow (FP16) squares |x| > 255.9 past 65504
    out = _locate_decoder("[248,255]", tmp_path, capsys, monkeypatch)
    assert out.startswith("rc=1"), out
    assert ("first divergent node: /model/layers.0/post_attention_layernorm/node_pow_2 (Pow, fp16; LlamaRMSNorm), "
            "tensor 'pow_2': max abs error inf (64 Inf where the FP32 reference is finite)") in out
    assert "node_Where_225" not in out.split("masking values:")[0], out


def test_suggest_on_the_dynamo_decoder_starts_from_the_real_overflow_not_the_mask(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "cache"))
    rc = cli_main(["suggest", str(DECODER), "--fp16", "--keep-fp32", "*/input_layernorm/*", "--backend", "emulate",
                   "--input-shapes", "input_ids:[2,16]", "attention_mask:[2,16]",
                   "--val-range", "input_ids:[248,255]", "attention_mask:[1,1]"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "; first divergent node: /model/layers.0/post_attention_layernorm/node_pow_2\n" in out, out
    assert "become +-inf or the largest finite value at /model/layers.0/self_attn/node_Where_225" in out, out
