"""The TensorRT and TensorRT-RTX backends, through Polygraphy, and everything that speaks
to TensorRT's Python API.

:mod:`~pytest_trt.backends.tensorrt.backend` (``TensorRTBackend``, ``TensorRTRTXBackend``:
the :class:`~pytest_trt.backends.base.Backend` contract), :mod:`~.build` (builder config,
timing cache, engine serialization), :mod:`~.network` (the parsed network and its per-layer
precisions), :mod:`~.runner` (running an engine), :mod:`~.debug_tensors` (mapping TensorRT's
debug tensors back to ONNX nodes), :mod:`~.parser_check` (the ONNX parser check,
``--trt-parser-check``), and the version glue: :mod:`~.compat` (one spelling over TensorRT 8.6
to 10.x and TensorRT-RTX), :mod:`~.versions` (which bindings, which version), :mod:`~.logger`.

Kept light (no imports here): the plugin's load path imports ``parser_check``, and
:data:`~pytest_trt.backends.base.BUILTIN_BACKENDS` names ``backends.tensorrt.backend``, which
is imported only when a TensorRT backend is asked for.
"""
