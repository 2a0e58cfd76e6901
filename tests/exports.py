"""The real exports of ``tests/data/exports/`` (made by ``tests/data/make_export_models.py``) as
tests use them: file paths per architecture and exporter, the decoders' norms, and the outlier
variant of a decoder that makes an FP16 RMSNorm overflow (a copy with changed weights, written
to the test's own folder; the graph and its metadata are the exporter's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

EXPORTS = Path(__file__).resolve().parent / "data" / "exports"
FUNCTIONS = EXPORTS / "functions" / "llama_torchscript_opset17_functions.onnx"
DECODERS = ("llama", "qwen3", "mistral", "gemma")
OTHERS = ("bert", "vit", "wav2vec2")
EXPORTERS = {"torchscript": "torchscript_opset17", "dynamo": "dynamo_opset18"}
#: RMSNorm modules per decoder (2 per layer + the final norm; Qwen3 adds q_norm, k_norm per layer)
NORMS = {"llama": 5, "mistral": 5, "gemma": 5, "qwen3": 9}
#: the arithmetic of one decomposed RMSNorm, as the dynamo exporter writes it
RMSNORM_OPS = ("Add", "Mul", "Mul", "Pow", "Reciprocal", "ReduceMean", "Sqrt")
#: token ids whose embedding rows get outlier channels in :func:`with_outlier_tokens`
OUTLIER_TOKENS = (248, 255)


def export(arch: str, exporter: str) -> Path:
    """``tests/data/exports/<arch>_<exporter>_opset<N>.onnx``."""
    return EXPORTS / f"{arch}_{EXPORTERS[exporter]}.onnx"


def with_outlier_tokens(source: Path, target: Path, *, channels=(5, 21), values=(400.0, -300.0)) -> Path:
    """``source`` with outlier channels (a few hundred) in the embedding rows of :data:`OUTLIER_TOKENS`:
    large LLMs' hidden states have such channels, and an FP16 RMSNorm's Pow overflows on them."""
    model = onnx.load(str(source))
    for index, init in enumerate(model.graph.initializer):
        if init.name == "model.embed_tokens.weight":
            weight = numpy_helper.to_array(init).copy()
            lo, hi = OUTLIER_TOKENS
            for channel, value in zip(channels, values, strict=True):
                weight[lo:hi + 1, channel] = np.float32(value)
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(weight, init.name))
            onnx.save(model, str(target))
            return target
    raise AssertionError(f"{source.name} has no model.embed_tokens.weight")


def decoder_feeds(*, outliers: bool, seed: int = 0, batch: int = 2, sequence: int = 16) -> dict:
    """``input_ids`` (ordinary ids 0..247, or only outlier ids 248..255) and an all-ones mask."""
    rng = np.random.default_rng(seed)
    lo, hi = OUTLIER_TOKENS if outliers else (0, OUTLIER_TOKENS[0] - 1)
    ids = rng.integers(lo, hi + 1, (batch, sequence)).astype(np.int64)
    return {"input_ids": ids, "attention_mask": np.ones((batch, sequence), np.int64)}
