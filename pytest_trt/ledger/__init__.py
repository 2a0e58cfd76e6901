"""The ledger stage: per ONNX node, declared precision, realized precision and time.

* :mod:`~pytest_trt.ledger.model`: :class:`Ledger`, its rows, units and roll-ups;
* :mod:`~pytest_trt.ledger.join`: :func:`build_ledger` (plan x layer report x timing profile);
* :mod:`~pytest_trt.ledger.timing`: the timing sources and :func:`ledger_of` (an engine's ledger);
* :mod:`~pytest_trt.ledger.ort_cuda` (+ ``ort_worker``): timing on ONNX Runtime's CUDA provider;
* :mod:`~pytest_trt.ledger.labels`: the one place a node's label comes from;
* :mod:`~pytest_trt.ledger.render`, :mod:`~pytest_trt.ledger.export`: text, trtexec profile JSON,
  Chrome/Perfetto trace;
* :mod:`~pytest_trt.ledger.islands`: what an FP32 island costs (``suggest``).

TensorRT's own timing (``IProfiler``) lives with the rest of TensorRT's API in
:mod:`pytest_trt.backends.tensorrt`; the timing data in :mod:`pytest_trt.layers.timing`.
"""

from __future__ import annotations

from .export import chrome_trace, trtexec_profile
from .join import build_ledger
from .model import Ledger, LedgerRow, LedgerUnit
from .timing import TIMING_CHOICES, ledger_of, measure

__all__ = ["TIMING_CHOICES", "Ledger", "LedgerRow", "LedgerUnit", "build_ledger", "chrome_trace", "ledger_of",
           "measure", "trtexec_profile"]
