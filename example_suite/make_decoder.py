"""Write ``example_suite/models/decoder_dynamo.onnx``: a tiny Llama decoder as today's exporter writes it.

The model is ``tests/data/exports/llama_dynamo_opset18.onnx`` (transformers ``LlamaModel``, 2
layers, hidden 32, exported by ``torch.onnx.export(..., dynamo=True)`` with torch 2.13.0: nodes
named ``node_pow_1``, module paths and classes in node metadata; see tests/data/README.md and
``tests/data/make_export_models.py``) with one change to its weights and none to its graph or
metadata: the embedding rows of the last :data:`OUTLIER_TOKENS` token ids carry outlier channels
(:data:`OUTLIER_CHANNELS` set to :data:`OUTLIER_VALUES`).

Why: on a tiny randomly initialised model, lowering every RMSNorm to FP16 still passes (its
hidden states are O(0.1)). Large trained LLMs have hidden states with a few outlier channels of
a few hundred for some tokens; an RMSNorm's ``Pow`` then overflows FP16 (x**2 > 65504 once
|x| > 255.9), and the norm returns 0 for those tokens. Feeding the outlier token ids reproduces
exactly that, so "every RMSNorm stays FP32" can be tested with a negative control that really
fails. In BF16 the ``Pow`` does not overflow (BF16 has FP32's exponent range): the control pins
FP16 (``test_decoder_rmsnorm.py``).

Needs only onnx and numpy (no torch)::

    python example_suite/make_decoder.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "data" / "exports" / "llama_dynamo_opset18.onnx"
TARGET = Path(__file__).parent / "models" / "decoder_dynamo.onnx"
EMBEDDING = "model.embed_tokens.weight"
#: token ids whose embedding rows carry the outlier channels (the vocabulary has 256 ids)
OUTLIER_TOKENS = (248, 255)
OUTLIER_CHANNELS = (5, 21)
OUTLIER_VALUES = (400.0, -300.0)


def with_outlier_tokens(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with outlier channels in the embedding rows of :data:`OUTLIER_TOKENS` (inclusive)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for index, init in enumerate(out.graph.initializer):
        if init.name == EMBEDDING:
            weight = numpy_helper.to_array(init).copy()
            lo, hi = OUTLIER_TOKENS
            for channel, value in zip(OUTLIER_CHANNELS, OUTLIER_VALUES, strict=True):
                weight[lo:hi + 1, channel] = np.float32(value)
            out.graph.initializer[index].CopyFrom(numpy_helper.from_array(weight, EMBEDDING))
            return out
    raise SystemExit(f"{EMBEDDING} not found in the model")


def main() -> int:
    model = with_outlier_tokens(onnx.load(str(SOURCE)))
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(TARGET))
    print(f"wrote {TARGET} ({TARGET.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
