"""The example suite's encoder, as the pytester projects of tests/plugin and tests/parser use it.

``ENCODER_PREAMBLE`` is the block of constants every inner test file of those projects starts
from (model path, symbolic dims, a normal input range, the LayerNorm-breaking outliers).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"

ENCODER_PREAMBLE = f"""ENCODER = {str(ENCODER)!r}
DIMS = {{"batch": 2, "sequence": 8}}
NORMAL = {{"hidden_states": (-1.0, 1.0)}}
OUTLIERS = {{"hidden_states": {{"count": 2, "magnitude": 400.0}}}}
"""
