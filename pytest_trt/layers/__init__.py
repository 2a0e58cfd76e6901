"""The layer stage: which precision each node of an engine really ran in.

:mod:`~pytest_trt.layers.inspector` parses TensorRT's engine inspector JSON,
:mod:`~pytest_trt.layers.network_rule` is the one rule that judges planned against parsed or
observed dtypes, and :mod:`~pytest_trt.layers.report` builds the
:class:`~pytest_trt.layers.report.LayerReport` (one row per node, with its evidence).

Kept light (no re-exports): the plugin's load path imports ``network_rule``.
"""
