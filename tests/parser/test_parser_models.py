"""Tier ``trt_parser``: every plan of the example suite's models and of the real torch.onnx
exports, FP16 and BF16, with and without LayerNorm kept FP32, parsed AND built by
TensorRT-RTX with 0 failures of the planned-vs-parsed rule (pytest_trt.layers.network_rule).

Promotions (planned FP16/BF16, parsed FP32) are allowed and printed; run with ``-s`` to see them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.trt_parser

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "example_suite" / "models"
DATA = REPO / "tests" / "data"

#: source models: the example suite's FP32 models and the real exports (tests/data/README.md)
SOURCES = [EXAMPLE / "encoder_opset14.onnx", EXAMPLE / "encoder_opset17.onnx", EXAMPLE / "convnet.onnx",
           *sorted(DATA.glob("*.onnx"))]
#: the example suite's models with their own precision (tested as-is)
AS_IS = [EXAMPLE / "mixed_autocast.onnx", EXAMPLE / "qdq_linear.onnx"]
#: LayerNorm scopes of these exports (decomposed at opset 14) and the fused op (opset 17)
LAYERNORM = ("*/LayerNorm/*", "*/ln_*/*", "*/layernorm*/*", "op:LayerNormalization")


def _keep(model) -> tuple[str, ...]:
    from pytest_trt.plan.policy import Rule

    nodes = list(model.graph.node)
    return tuple(p for p in LAYERNORM if any(Rule(p, "fp32").matches(n) for n in nodes))


CASES = [pytest.param(src, prec, keep, id=f"{src.stem}-{prec}-{'ln_fp32' if keep else 'all_low'}")
         for src in SOURCES for prec in ("fp16", "bf16") for keep in (False, True)
         if not (keep and src.stem == "convnet")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    from pytest_trt.cache import ArtifactCache

    return ArtifactCache(tmp_path_factory.mktemp("rtx-cache"))


@pytest.mark.parametrize("source, precision, keep_ln", CASES)
def test_every_realization_parses_and_builds(rtx, cache, source, precision, keep_ln):
    from pytest_trt.backends.tensorrt.parser_check import check_parser
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    model = load_model(source)
    keep = _keep(model) if keep_ln else ()
    assert not keep_ln or keep, f"{source.name}: no LayerNorm pattern matched"
    plan = PrecisionPolicy(default=precision, keep_fp32=keep).resolve(model)
    check = check_parser(plan, cache=cache)
    print("\n" + check.message())
    assert check.status == "passed", check.message()
    counts = check.counts()
    assert counts["lower"] == 0 and counts["ok"] > 0, counts
    # the LayerNorm nodes kept FP32 are parsed FP32 (the rule would have failed them otherwise)
    if keep:
        kept = [n for n, d in plan.nodes.items() if d.kind == "compute" and d.precision == "fp32"]
        assert kept and all(check.nodes[n]["parsed"] in ("fp32", None) for n in kept)


@pytest.mark.parametrize("source", AS_IS, ids=lambda p: p.stem)
def test_as_is_models_parse_and_build(rtx, cache, source):
    from pytest_trt.backends.tensorrt.parser_check import check_parser
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    plan = PrecisionPolicy(default="fp32", as_is=True).resolve(load_model(source))
    check = check_parser(plan, cache=cache)
    assert check.passed and check.counts()["higher"] == 0, check.message()


def test_the_result_is_cached_with_the_engine(rtx, tmp_path):
    """Key: model, plan, TensorRT-RTX version, config; the second check is a cache hit."""
    from pytest_trt.backends.tensorrt.parser_check import check_parser
    from pytest_trt.cache import ArtifactCache
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    cache = ArtifactCache(tmp_path / "c")
    plan = PrecisionPolicy(default="bf16").resolve(load_model(EXAMPLE / "encoder_opset14.onnx"))
    first, second = check_parser(plan, cache=cache), check_parser(plan, cache=cache)
    assert not first.cache_hit and second.cache_hit
    assert first.to_json()["promotions"] == second.to_json()["promotions"]
    assert first.nodes == second.nodes
    entries = cache.entries("engine")
    assert len(entries) == 1


def test_gpt2_bf16_opset14_every_pow_as_planned(rtx):
    """Issue 16: every Pow of a GPT-2 BF16 export at opset 14 (the LayerNorms' and the GELU's)
    was planned BF16 and parsed FP32 until the realization typed Pow's exponent (branch i18)."""
    from pytest_trt.backends.tensorrt.parser_check import check_parser
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    plan = PrecisionPolicy(default="bf16").resolve(load_model(DATA / "gpt2_tiny_opset14.onnx"))
    check = check_parser(plan, build=False)
    pows = {n: v for n, v in check.nodes.items() if v["op_type"] == "Pow"}
    assert len(pows) == 7
    assert all(v["verdict"] == "ok" for v in pows.values()), {n: v["parsed"] for n, v in pows.items()}


# --------------------------------------------------------------------------------------
# today's exports (issue 30): both torch exporters, norms kept FP32 by scope or class
# --------------------------------------------------------------------------------------
EXPORTS = DATA / "exports"
#: the norms of each export, as a user keeps them FP32: classes on the dynamo exports (they
#: have them), scopes or the fused op on the TorchScript ones (no class information)
NORMS = {"dynamo": {"llama": "class:*RMSNorm", "qwen3": "class:*RMSNorm", "mistral": "class:*RMSNorm",
                    "gemma": "class:*RMSNorm", "bert": "class:*LayerNorm", "vit": "class:*LayerNorm",
                    "wav2vec2": "class:*LayerNorm"},
         "torchscript": {"llama": "*norm/*", "qwen3": "*norm/*", "mistral": "*norm/*", "gemma": "*norm/*",
                         "bert": "op:LayerNormalization", "vit": "op:LayerNormalization",
                         "wav2vec2": "op:LayerNormalization"}}
EXPORT_CASES = [pytest.param(EXPORTS / f"{arch}_{exporter}_opset{17 if exporter == 'torchscript' else 18}.onnx",
                             NORMS[exporter][arch], precision, id=f"{arch}-{exporter}-{precision}")
                for exporter in NORMS for arch in NORMS[exporter] for precision in ("fp16", "bf16")]
#: wav2vec2's conv feature encoder needs at least 400 samples (the default profile's 1 is too short)
PROFILES = {"wav2vec2": ({"input_values": ((1, 400), (2, 640), (2, 1600))},)}
EXPORT_CASES += [pytest.param(EXPORTS / "functions" / "llama_torchscript_opset17_functions.onnx", "class:*RMSNorm",
                              precision, id=f"llama-functions-{precision}") for precision in ("fp16", "bf16")]


@pytest.mark.parametrize("source, keep, precision", EXPORT_CASES)
def test_todays_exports_parse_and_build_with_norms_fp32(rtx, cache, source, keep, precision):
    """Every export of tests/data/exports (and the local-functions one, inlined at load), lowered to
    FP16/BF16 with its norms kept FP32, parses and builds with TensorRT-RTX with no node parsed lower
    than planned; the kept norms are parsed FP32, and the check names them by module path."""
    from pytest_trt.backends.base import BuildConfig
    from pytest_trt.backends.tensorrt.parser_check import check_parser
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    model = load_model(source)
    plan = PrecisionPolicy(default=precision, keep_fp32=[keep]).resolve(model)
    check = check_parser(plan, BuildConfig(profiles=PROFILES.get(source.name.split("_")[0], ())), cache=cache)
    assert check.status == "passed", check.message()
    assert check.counts()["lower"] == 0 and check.counts()["ok"] > 0, check.counts()
    kept = [n for n in plan.match(keep) if plan.nodes[n].kind == "compute"]
    assert kept and all(check.nodes[n]["parsed"] in ("fp32", None) for n in kept)
    assert all(check.nodes[n]["canonical"] == model.names.canonical(n) for n in kept)
