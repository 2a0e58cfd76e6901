"""The verification stage: checks that the engine ran the precisions that were asked.

:mod:`~pytest_trt.verify.precision` (``assert_precision``, ``probe_precision``,
``PrecisionCheck``: the planned-vs-ran check of every constrained node),
:mod:`~pytest_trt.verify.collapse` (``assert_no_collapse``: an FP32 island fused away),
:mod:`~pytest_trt.verify.probes` (probe builds that expose a node's output to observe its
precision) and :mod:`~pytest_trt.verify.layernorm_graph` (decomposed LayerNorm subgraphs).
"""
