"""The capturing TensorRT logger: what a build, load or run said, for the error messages.

TensorRT reports failures through its ``ILogger``, not through exceptions; a
:class:`~pytest_trt.errors.BuildError` must quote those messages. :func:`get_logger` gives the
one capturing logger per imported TensorRT module for the life of the process, and
``logger.capture()`` collects what TensorRT says inside a block.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["LogRecord", "SEVERITIES", "get_logger", "log"]

log = logging.getLogger("pytest_trt.tensorrt")

SEVERITIES = {0: "internal_error", 1: "error", 2: "warning", 3: "info", 4: "verbose"}
_PY_LEVELS = {0: logging.CRITICAL, 1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG}


@dataclass
class LogRecord:
    """One message TensorRT logged: severity name (``error``, ``warning``, ...) and text."""

    severity: str
    message: str

    def line(self) -> str:
        return f"[{self.severity[0].upper()}] {self.message}"


#: id(module) -> (module, its capturing logger): process-wide on purpose (see get_logger)
_LOGGERS: dict[int, tuple[Any, Any]] = {}
_LOGGERS_LOCK = threading.Lock()


def get_logger(trt: Any) -> Any:
    """The capturing ``trt.ILogger`` of this run for module ``trt``.

    One logger per module on purpose: TensorRT keeps the first logger it is given as its
    global logger (it warns when a later builder brings a different one), and the
    ILogger docstring (NvInferRuntime.h, main) requires the implementation to be
    thread-safe because TensorRT may call it from several threads. Messages go to the
    ``pytest_trt.tensorrt`` Python logger and to every active :func:`capture` list.
    VERBOSE messages are dropped before reaching Python objects (a build emits thousands).

    The logger belongs to the process, not to a run: it is the one piece of TensorRT state
    pytest-trt keeps across pytest sessions (``_LOGGERS``, allowed by the structure rules).
    A logger per run would hand TensorRT a second logger in the second session of a process
    (in-process pytester runs); TensorRT keeps the first as ``nvinfer1::getLogger()`` and
    messages logged through it would go uncaptured. Nothing a session captured crosses into
    another: each :meth:`capture` collects into its own list, removed when it ends. The table
    keeps the module with its logger, so a module object that was garbage-collected (a test's
    fake) never lends its logger to a new one at the same ``id``.
    """
    with _LOGGERS_LOCK:
        existing = _LOGGERS.get(id(trt))
        if existing is not None and existing[0] is trt:
            return existing[1]

        class CapturingLogger(trt.ILogger):
            def __init__(self):
                trt.ILogger.__init__(self)
                self.sinks: list[list[LogRecord]] = []
                self.lock = threading.Lock()

            def log(self, severity, msg):  # called by TensorRT, any thread
                try:
                    level = int(severity)
                except (TypeError, ValueError):
                    level = 3
                if level >= 4:
                    return
                record = LogRecord(SEVERITIES.get(level, "info"), str(msg))
                with self.lock:
                    for sink in self.sinks:
                        sink.append(record)
                log.log(_PY_LEVELS.get(level, logging.INFO), "TensorRT: %s", msg)

            @contextlib.contextmanager
            def capture(self):
                sink: list[LogRecord] = []
                with self.lock:
                    self.sinks.append(sink)
                try:
                    yield sink
                finally:
                    with self.lock:
                        self.sinks.remove(sink)

        logger = CapturingLogger()
        _LOGGERS[id(trt)] = (trt, logger)
        return logger
