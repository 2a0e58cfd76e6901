"""``suggest --json`` names nodes one way: canonical scoped names (review1 defect 6h; CONVENTIONS "Names").

Before: ``inputs[].nonfinite_nodes`` held canonical names (``/model/layers.0/...``) but
``inputs[].masking_nodes`` the raw ONNX names (``node_Where_225``) of the same dynamo export, and the
text said "... the largest finite value at node_Where_225".
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_trt.cli import main as cli_main

DECODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "decoder_dynamo.onnx"


def test_masking_nodes_are_canonical_names(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "cache"))
    rc = cli_main(["suggest", str(DECODER), "--fp16", "--keep-fp32", "*/input_layernorm/*", "--backend", "emulate",
                   "--input-shapes", "input_ids:[2,16]", "attention_mask:[2,16]",
                   "--val-range", "input_ids:[248,255]", "attention_mask:[1,1]", "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    masking = {n for entry in data["inputs"] for n in entry.get("masking_nodes", ())}
    assert "/model/layers.0/self_attn/node_Where_225" in masking, masking
    assert all(n.startswith("/model/layers.") and "/self_attn/" in n for n in masking), masking
