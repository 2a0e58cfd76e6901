"""A model owner's accuracy suite, for bench/report_overhead.py (not part of the test run).

Shaped like the repository the issue-19 review used: tests over several real exports
(tests/data: BERT, GPT-2, ViT from torch.onnx.export), FP32 / FP16 / BF16 policies with
LayerNorm kept FP32, precision assertions, seeds, strict negative controls written as
``xfail(strict=True, raises=AccuracyError)``, and one Hypothesis property that fails.
"""

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"

TEXT = {"input_ids": (0, 255), "attention_mask": (1, 1)}
DIMS = {"batch": 2, "sequence": 16}
MODELS = {
    "bert14": dict(model=str(DATA / "bert_tiny_opset14.onnx"), dims=DIMS, val_range=TEXT),
    "bert17": dict(model=str(DATA / "bert_tiny_opset17.onnx"), dims=DIMS, val_range=TEXT),
    "gpt2_14": dict(model=str(DATA / "gpt2_tiny_opset14.onnx"), dims=DIMS, val_range={"input_ids": (0, 255)}),
    "gpt2_17": dict(model=str(DATA / "gpt2_tiny_opset17.onnx"), dims=DIMS, val_range={"input_ids": (0, 255)}),
    "vit14": dict(model=str(DATA / "vit_tiny_opset14.onnx"), dims={"batch": 2},
                  val_range={"pixel_values": (-1.0, 1.0)}),
    "vit17": dict(model=str(DATA / "vit_tiny_opset17.onnx"), dims={"batch": 2},
                  val_range={"pixel_values": (-1.0, 1.0)}),
}
