"""Fixtures for tests that need real TensorRT (or TensorRT-RTX) and a CUDA GPU.

Elsewhere they skip with the backend's exact reason: "TensorRT not installed",
"TensorRT-RTX not installed", "no CUDA device", or "TensorRT cannot be imported: ..."
(``Backend.unavailable_reason``, the same text ``--trt-backend auto`` reports).
"""

from __future__ import annotations

import pytest

from pytest_trt.backends.base import get_backend
from pytest_trt.model import testing_models as tm
from pytest_trt.model.load import load_model


def backend_or_skip(name: str):
    """The backend ``name``, or skip the test with the precise reason it cannot run here."""
    backend = get_backend(name)
    reason = backend.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return backend


def cuda_ort_or_skip():
    """onnxruntime with its CUDA provider (tier ``cuda``: no TensorRT needed), or skip with the reason;
    under ``PYTEST_TRT_CI_NO_SKIP=1 PYTEST_TRT_CI_GPU=1`` that skip fails (tests/conftest.py)."""
    try:
        import onnxruntime as ort
    except ImportError:
        pytest.skip("onnxruntime not installed: pip install onnxruntime-gpu")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        pytest.skip(f"ONNX Runtime has no CUDAExecutionProvider here (onnxruntime {ort.__version__}, providers: "
                    f"{', '.join(ort.get_available_providers())}): needs onnxruntime-gpu and a CUDA GPU")
    return ort


@pytest.fixture(scope="module")
def ort():
    """:func:`cuda_ort_or_skip` for the ``cuda`` tier's tests."""
    return cuda_ort_or_skip()


@pytest.fixture
def tensorrt_backend():
    return backend_or_skip("tensorrt")


@pytest.fixture
def tensorrt_rtx_backend():
    return backend_or_skip("tensorrt-rtx")


@pytest.fixture
def engine_cache(tmp_path):
    from pytest_trt.cache import ArtifactCache

    return ArtifactCache(tmp_path / "cache")


@pytest.fixture(scope="module")
def ln_model():
    """BERT's attention-output block with a decomposed LayerNorm (``*/LayerNorm/*``), hidden 64."""
    return load_model(tm.decomposed_layernorm_block(hidden=64, seq=8))


@pytest.fixture(scope="module")
def ln_feeds(ln_model):
    return tm.sample_feeds(ln_model.proto)
