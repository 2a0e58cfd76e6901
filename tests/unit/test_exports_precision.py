"""Today's exports through the pipeline (issue 30), on the ``emulate`` backend (ONNX Runtime CPU):
``assert_precision`` with scope and class patterns, FP16/BF16 comparisons, and the negative control
that really fails (outlier hidden states overflow an FP16 RMSNorm's Pow), with locate and suggest
answering in module paths and classes."""

from __future__ import annotations

import pytest
from exports import DECODERS, OTHERS, decoder_feeds, export, with_outlier_tokens

from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.compare import compare_outputs
from pytest_trt.errors import PrecisionError
from pytest_trt.inputs import make_feeds
from pytest_trt.locate.divergence import locate_divergence
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.reference.baseline import fp32_baseline
from pytest_trt.suggest import suggest_fp32_islands
from pytest_trt.verify.precision import assert_precision

#: the norms each export family keeps FP32, per exporter (TorchScript has no classes)
KEEP = {"dynamo": "class:*RMSNorm", "torchscript": "*norm*/*"}
LAYERNORM = {"dynamo": "class:*LayerNorm", "torchscript": "op:LayerNormalization"}
INPUTS = {"bert": {"dims": {"batch": 2, "sequence": 8}, "val_range": {"input_ids": (0, 255), "attention_mask": (1, 1)}},
          "vit": {"dims": {"batch": 2}},
          "wav2vec2": {"dims": {"batch": 2, "samples": 640}}}


def _build(model, policy):
    return get_backend("emulate").build(policy.resolve(model), BuildConfig(), None)


def _compare(engine, model, feeds):
    return compare_outputs(engine.run(feeds), fp32_baseline(model, feeds), precision=engine.plan.low_precision,
                           details=True)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
@pytest.mark.parametrize("arch", DECODERS)
def test_decoders_with_fp32_norms_pass_and_say_so(arch, exporter, precision):
    model = load_model(export(arch, exporter))
    engine = _build(model, PrecisionPolicy(precision, keep_fp32=[KEEP[exporter]]))
    check = assert_precision(engine, KEEP[exporter], "fp32")
    assert {v.status for v in check.nodes if v.planned} == {"pass"} and check.evidence_counts()["emulated"] > 0
    if exporter == "dynamo":  # the verdicts name nodes by module and class
        assert all(v.module_class.endswith("RMSNorm") and v.label.startswith("/model/") for v in check.nodes)
    result = _compare(engine, model, decoder_feeds(outliers=False))
    assert result.passed, result.message()


@pytest.mark.parametrize("arch", OTHERS)
def test_encoders_vision_and_speech_with_fp32_layernorm_pass(arch):
    for exporter in ("dynamo", "torchscript"):
        model = load_model(export(arch, exporter))
        engine = _build(model, PrecisionPolicy("fp16", keep_fp32=[LAYERNORM[exporter]]))
        check = assert_precision(engine, LAYERNORM[exporter], "fp32")
        assert check.passed and check.nodes
        feeds = make_feeds(model, **INPUTS[arch])
        result = _compare(engine, model, feeds)
        assert result.passed, (model.label, result.message())


def test_assert_precision_fails_naming_the_module():
    model = load_model(export("llama", "dynamo"))
    engine = _build(model, PrecisionPolicy("fp16", keep_fp32=["*/input_layernorm/*"]))
    with pytest.raises(PrecisionError) as info:
        assert_precision(engine, "class:LlamaRMSNorm", "fp32")
    message = str(info.value)
    assert "21 of 35 matched compute node(s) not shown in fp32" in message  # 3 of the 5 norms were lowered
    assert "  /model/layers.0/post_attention_layernorm/node_pow_2 (Pow): emulated fp16, planned fp16" in message
    assert "/input_layernorm/node_" not in message  # the two kept norms passed
    failed = info.value.findings.by_status("fail")
    assert {v.module for v in failed} == {"model.layers.0.post_attention_layernorm",
                                          "model.layers.1.post_attention_layernorm", "model.norm"}


@pytest.mark.parametrize("arch", DECODERS)
def test_negative_control_outlier_tokens_break_an_fp16_rmsnorm(tmp_path, arch):
    """On tiny random decoders an FP16 RMSNorm passes; with outlier channels of a few hundred (the
    hidden states of large trained LLMs) its Pow overflows FP16: the check fails, and keeping the
    RMSNorms FP32 fixes it. BF16 keeps FP32's exponent range: no overflow, so no control there."""
    outliers = decoder_feeds(outliers=True)
    for exporter in ("dynamo", "torchscript"):
        model = load_model(with_outlier_tokens(export(arch, exporter), tmp_path / f"{arch}_{exporter}.onnx"))
        lowered = _compare(_build(model, PrecisionPolicy("fp16")), model, outliers)
        assert not lowered.passed, f"{arch} {exporter}: the control must fail"
        kept = _compare(_build(model, PrecisionPolicy("fp16", keep_fp32=[KEEP[exporter]])), model, outliers)
        assert kept.passed, kept.message()
        bf16 = _compare(_build(model, PrecisionPolicy("bf16")), model, outliers)
        assert bf16.passed, "BF16 does not overflow: a BF16 control needs another mechanism"


def test_locate_and_suggest_answer_with_modules_and_classes(tmp_path):
    model = load_model(with_outlier_tokens(export("llama", "dynamo"), tmp_path / "llama.onnx"))
    feeds = decoder_feeds(outliers=True)
    found = locate_divergence(_build(model, PrecisionPolicy("fp16")), feeds)
    first = found.first
    assert first is not None and first.op_type == "Pow" and first.new_nonfinite
    assert (first.node, first.label) == ("node_pow_1", "/model/layers.0/input_layernorm/node_pow_1")
    assert first.module == "model.layers.0.input_layernorm" and first.module_class.endswith(".LlamaRMSNorm")
    message = found.message()
    assert "first divergent node: /model/layers.0/input_layernorm/node_pow_1 (Pow, fp16; LlamaRMSNorm)" in message
    assert "--trt-keep-fp32 '/model/layers.0/input_layernorm/*'" in message
    assert "every module of its class: class:LlamaRMSNorm" in message
    assert found.to_json()["first"]["canonical"] == first.label

    suggestion = suggest_fp32_islands(model, PrecisionPolicy("fp16"), feeds, backend="emulate")
    assert suggestion.passed, suggestion.message()
    # the islands are every RMSNorm, exactly: named by their class rather than by three scopes
    assert suggestion.patterns == ["class:LlamaRMSNorm"], suggestion.message()
    assert suggestion.first_divergence == "/model/layers.0/input_layernorm/node_pow_1"
    assert "class:LlamaRMSNorm  class, 35 nodes" in suggestion.message()


def test_suggest_keeps_scopes_when_the_class_is_more_than_needed(tmp_path):
    """Qwen3's q_norm/k_norm are RMSNorms too, but the outliers never reach them: the answer names
    the three norm scopes, and offers the class as the broader, unbuilt alternative."""
    model = load_model(with_outlier_tokens(export("qwen3", "dynamo"), tmp_path / "qwen3.onnx"))
    suggestion = suggest_fp32_islands(model, PrecisionPolicy("fp16"), decoder_feeds(outliers=True), backend="emulate")
    assert suggestion.passed
    assert suggestion.patterns == ["*/input_layernorm/*", "*/post_attention_layernorm/*", "/model/norm/*"]
    assert {"pattern": "class:Qwen3RMSNorm", "scopes": 9, "nodes": 63, "built": False} in suggestion.alternatives
