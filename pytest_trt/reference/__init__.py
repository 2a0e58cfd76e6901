"""The reference stage: what the engine's outputs are compared against.

:mod:`~pytest_trt.reference.upcast` widens a model written in FP16/BF16 (or quantized) to an
FP32 reference model; :mod:`~pytest_trt.reference.baseline` runs the reference on ONNX
Runtime (the FP32 baseline, its sessions, node placement and CPU fallbacks).
"""
