"""Accuracy and precision of every model under FP32, FP16 and BF16 (LayerNorm kept FP32)."""

import pytest

from conftest import MODELS

#: the decomposed LayerNorm's scope in each opset-14 export (opset 17 exports use the op)
LAYERNORM = {"bert": "*/LayerNorm/*", "gpt2": "*/ln_*/*", "vit": "*/layernorm*/*"}


def _keep(model):
    if model.endswith("17.onnx"):
        return ["op:LayerNormalization", "op:Softmax"]
    family = next(k for k in LAYERNORM if k in model.rsplit("/", 1)[-1])
    return [LAYERNORM[family], "op:Softmax"]


def _cases(precision, **extra):
    out = []
    for name, spec in sorted(MODELS.items()):
        keep = {} if precision == "fp32" else {"keep_fp32": _keep(spec["model"])}
        out.append(pytest.param(spec, id=name, marks=pytest.mark.trt(**spec, precision=precision, **keep, **extra)))
    return out


@pytest.mark.parametrize("spec", _cases("fp32"))
def test_fp32_matches_onnx_runtime(trt, spec):
    trt.check()


@pytest.mark.parametrize("spec", _cases("fp16"))
def test_fp16_with_fp32_layernorm(trt, spec):
    trt.check(atol=5e-2, rtol=5e-2)
    trt.assert_precision(_keep(spec["model"])[0], "fp32")


@pytest.mark.parametrize("spec", _cases("bf16"))
def test_bf16_with_fp32_layernorm(trt, spec):
    trt.check(atol=1e-1, rtol=1e-1)
    trt.assert_precision(_keep(spec["model"])[0], "fp32")


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_bert_fp16_across_seeds(trt_session, trt_build, seed, request):
    spec = MODELS["bert14"]
    request.applymarker(pytest.mark.trt(**spec, precision="fp16", keep_fp32=_keep(spec["model"]), seed=seed))
    trt = request.getfixturevalue("trt")
    trt.check(atol=5e-2, rtol=5e-2)
