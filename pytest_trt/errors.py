"""Errors pytest-trt raises.

Every error a user can meet names the thing at fault (file, node, pattern, tensor)
and says what to do next. Two families:

* :class:`PytestTrtError` and subclasses: the input or the environment is wrong
  (usage error; the CLI exits 2, a test errors).
* :class:`AccuracyError` and :class:`PrecisionError` (and its :class:`ParserCheckError`): the
  engine is wrong (an assertion; the CLI exits 1, a test fails). They subclass ``AssertionError`` so
  pytest reports them as failures, not errors.
"""

from __future__ import annotations

import unittest


class PytestTrtError(Exception):
    """Base class of pytest-trt's usage and input errors."""


class UsageError(PytestTrtError):
    """An option, marker argument or API argument is invalid."""


class MissingDependency(UsageError, ImportError):
    """A library pytest-trt needs for what was asked is not installed (or fails to import).

    Raised by :func:`pytest_trt.core.lazy.lazy_import` stand-ins on first use; names the package
    and the pytest-trt extra that installs it.
    """

    def __init__(self, module: str, extra: str | None, cause: BaseException | None = None):
        self.module = module
        self.extra = extra
        how = (f'pip install "pytest-trt[{extra}]"' if extra
               else f"install the package that provides the {module!r} module")
        why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        super().__init__(f"pytest-trt needs the Python module {module!r}, which cannot be imported{why}; {how}")
        ImportError.__init__(self, str(self), name=module)


class ModelError(PytestTrtError):
    """An ONNX model cannot be read, checked or realized."""


class PatternError(PytestTrtError):
    """A precision pattern is malformed or matches no node."""


class InputError(PytestTrtError):
    """Input feeds or input specs do not fit the model."""


class BackendUnavailable(PytestTrtError):
    """The chosen backend (or the baseline's runtime) cannot run here. ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class UnsupportedGpu(BackendUnavailable, unittest.SkipTest):
    """A built engine cannot be loaded on this GPU (TensorRT-RTX on a compute capability it
    does not support). The one backend failure that is a documented skip in a test; every
    other :class:`BackendUnavailable` is an error.

    Also a ``unittest.SkipTest``: test runners and Hypothesis treat it as "skip this test" where
    it is raised. Without that, a Hypothesis ``@given`` test re-ran the example, met the error
    again from another line and reported a ``FlakyFailure`` instead of the skip (seen on an
    H200 with ``--trt-backend tensorrt-rtx``, docs/VERIFIED.md).
    """


class BackendContractError(PytestTrtError):
    """A backend answered outside its contract (:mod:`pytest_trt.backends.base`), e.g. an evidence value
    that is not one of :data:`pytest_trt.core.evidence.EVIDENCE`. Names the backend."""


class BuildError(PytestTrtError):
    """An engine build failed. Never cached."""


class CacheError(PytestTrtError):
    """The artifact cache directory cannot be used."""


class AccuracyError(AssertionError):
    """Engine outputs are outside tolerance of the reference. ``result`` holds the figures."""

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


class PrecisionError(AssertionError):
    """A node did not run in the precision a test asserted."""

    def __init__(self, message: str, findings=None):
        super().__init__(message)
        self.findings = findings


class ParserCheckError(PrecisionError):
    """TensorRT-RTX's parser check failed: a node planned FP32 was parsed in lower precision, or
    the parser or builder rejected the realization (:mod:`pytest_trt.parser_check`).

    Raised by ``trt.check_parser()`` (``findings``: the
    :class:`~pytest_trt.parser_check.ParserCheck`) and, under ``--trt-parser-check``, in the
    test's call phase after its body passed (``findings``: the failed checks' records), where a
    negative control's ``@pytest.mark.xfail(strict=True, raises=ParserCheckError)`` (or
    ``raises=PrecisionError``) sees it.
    """


class CacheWarning(UserWarning):
    """A cache entry was unusable (corrupt, truncated, foreign) and is being rebuilt."""


class ProviderFallbackWarning(UserWarning):
    """Float nodes of a CUDA baseline ran on ONNX Runtime's CPU provider (read from its profile)."""
