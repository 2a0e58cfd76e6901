"""The ``trt_parser`` tier: TensorRT-RTX's real ONNX parser and builder (CPU or GPU).

Every test here carries the ``trt_parser`` marker and skips, with the exact reason, where
TensorRT-RTX is not installed; in CI (``PYTEST_TRT_CI_NO_SKIP=1``) that skip is a failure.
"""

from __future__ import annotations

import pytest

SKIP_REASON = 'TensorRT-RTX not installed: pip install -e ".[rtx]"'


@pytest.fixture(scope="session")
def rtx():
    """TensorRT-RTX's backend compat object; skips with the exact reason where it is missing."""
    from pytest_trt.backends.tensorrt.parser_check import unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(SKIP_REASON if reason == "TensorRT-RTX not installed" else f"TensorRT-RTX unusable: {reason}")
    from pytest_trt.backends.base import get_backend

    return get_backend("tensorrt-rtx").compat()
