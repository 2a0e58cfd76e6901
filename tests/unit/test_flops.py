"""The rough FLOPs estimate behind a suggestion's FP32 share (pytest_trt.suggest.flops)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_trt.model.load import load_model
from pytest_trt.model.testing_models import export_feeds
from pytest_trt.reference.baseline import fp32_intermediates
from pytest_trt.suggest.flops import node_flops

GPT2 = Path(__file__).resolve().parents[1] / "data" / "gpt2_tiny_opset14.onnx"


def test_matmul_counts_two_per_multiply_add_and_elementwise_one_per_element():
    model = load_model(GPT2)
    feeds = export_feeds(model)  # input_ids [2, 8]
    shapes = {k: tuple(np.shape(v)) for k, v in feeds.items()}
    shapes.update({i.name: tuple(i.dims) for i in model.proto.graph.initializer})
    shapes.update({k: tuple(np.shape(v)) for k, v in fp32_intermediates(model, feeds).items()})
    flops = node_flops(model, shapes)
    # lm_head: [2, 8, 32] x [32, 256] -> 2 * (2*8*256) * 32
    assert flops["/lm_head/MatMul"] == 2 * 2 * 8 * 256 * 32
    # a LayerNorm Pow over [2, 8, 32]: one per element
    assert flops["/transformer/h.0/ln_1/Pow"] == 2 * 8 * 32
    assert set(flops) == set(model.node_names()) and all(v >= 0 for v in flops.values())
    # unknown shapes count 0, never raise
    assert node_flops(model, {})["/lm_head/MatMul"] == 0
