"""The locate stage: where in the model a failing engine goes wrong, and why.

:mod:`~pytest_trt.locate.divergence` (``locate_divergence``: the engine's intermediate
tensors against the FP32 reference, layer by layer), :mod:`~pytest_trt.locate.ranges`
(FP32 activations a plan stores in FP16/BF16 that do not fit there) and
:mod:`~pytest_trt.locate.scopes` (node-name scopes written as ``keep_fp32`` patterns, shared
with the FP32-fallback search).
"""
