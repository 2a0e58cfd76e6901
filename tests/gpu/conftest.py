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
