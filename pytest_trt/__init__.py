"""pytest-trt: TensorRT engine accuracy testing as pytest tests.

Public API (imported lazily: importing ``pytest_trt`` never imports TensorRT or
ONNX Runtime).

PYTEST_DONT_REWRITE: the plugin reports failures through its own exceptions, not bare
asserts, so pytest's assertion rewriting has nothing to do here; the marker also keeps
pytest from warning when the package was imported before a (nested, e.g. pytester) run
configures its plugins.
"""

from __future__ import annotations

from ._version import __version__
from .core.lazy import lazy_attributes

_LAZY = {
    "PrecisionPolicy": "pytest_trt.plan.policy",
    "PrecisionPlan": "pytest_trt.plan",
    "load_model": "pytest_trt.model.load",
    "Model": "pytest_trt.model.load",
    "assert_close": "pytest_trt.compare",
    "compare_outputs": "pytest_trt.compare",
    "default_tolerances": "pytest_trt.compare",
    "BuildConfig": "pytest_trt.backends.base",
    "get_backend": "pytest_trt.backends.base",
    "select_backend": "pytest_trt.backends.base",
    "fp32_baseline": "pytest_trt.reference.baseline",
    "make_feeds": "pytest_trt.inputs",
    "load_feeds": "pytest_trt.inputs",
    "input_specs": "pytest_trt.inputs",
    "LayerReport": "pytest_trt.layers.report",
    "assert_precision": "pytest_trt.verify.precision",
    "assert_no_collapse": "pytest_trt.verify.precision",
    "probe_precision": "pytest_trt.verify.precision",
    "PrecisionCheck": "pytest_trt.verify.precision",
    "CollapseCheck": "pytest_trt.verify.precision",
    "NotObservableWarning": "pytest_trt.verify.precision",
    "CompareResult": "pytest_trt.compare",
    "CacheWarning": "pytest_trt.errors",
    "locate_divergence": "pytest_trt.locate.divergence",
    "suggest_fp32_islands": "pytest_trt.suggest",
    "check_parser": "pytest_trt.backends.tensorrt.parser_check",
    "ParserCheck": "pytest_trt.backends.tensorrt.parser_check",
    "AccuracyError": "pytest_trt.errors",
    "PrecisionError": "pytest_trt.errors",
    "ParserCheckError": "pytest_trt.errors",
    "PytestTrtError": "pytest_trt.errors",
    "UsageError": "pytest_trt.errors",
    "ModelError": "pytest_trt.errors",
    "PatternError": "pytest_trt.errors",
    "InputError": "pytest_trt.errors",
}

__all__ = ["__version__", *_LAZY]


__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__():
    return sorted(__all__)
