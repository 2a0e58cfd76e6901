"""Shared settings of the example suite: a model repository's accuracy tests.

The suite runs as-is on a CPU-only machine (`pytest example_suite --trt-fp16`, backend
`emulate`, announced in the header) and on a GPU runner
(`pytest example_suite --trt-fp16 --trt-backend tensorrt`).
"""

from pathlib import Path

MODELS = Path(__file__).parent / "models"

# Activation regimes of the encoder's input `hidden_states` [batch, sequence, 64].
#  * NORMAL: what most tokens look like after embedding + LayerNorm.
#  * OUTLIERS: the same plus a few outlier features of magnitude 400, as seen in real
#    transformers. |x - mean| > 255.9 overflows FP16 in a decomposed LayerNorm's Pow
#    (255.9^2 > 65504), so this regime breaks a LayerNorm that did not stay FP32.
ENCODER_DIMS = {"batch": 2, "sequence": 16}
NORMAL = {"hidden_states": (-1.0, 1.0)}
OUTLIERS = {"hidden_states": {"count": 2, "magnitude": 400.0}}
