"""A saved run's fingerprint names a GPU only where the run computes on one (review1 defect 6i).

Before: an ``emulate`` run (``Backend.uses_gpu`` False) on a machine with a GPU recorded that GPU,
so the same run on another machine read as "GPU A -> B" in a drift's cause line although no figure
came from either GPU.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_trt.backends.base import get_backend
from pytest_trt.core import environment
from pytest_trt.core.environment import GpuInfo
from pytest_trt.history.fingerprint import session_fingerprint
from pytest_trt.run.settings import Settings

H100 = GpuInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", driver="580.65")


@pytest.fixture
def a_gpu(monkeypatch):
    monkeypatch.setattr(environment, "gpus", lambda: (H100,))


class _GpuBackend:
    """A backend whose engines run on the GPU (only what session_fingerprint asks of it)."""

    name = "gpu-stand-in"
    uses_gpu = True

    def device(self):
        return {}

    def versions(self):
        return {}


def _fingerprint(backend, tmp_path, **settings):
    return session_fingerprint(SimpleNamespace(settings=Settings(rootdir=tmp_path, **settings), backend=backend))


def test_an_emulate_run_records_no_gpu(a_gpu, tmp_path):
    found = _fingerprint(get_backend("emulate"), tmp_path)
    assert (found["gpu"], found["compute_capability"], found["driver"], found["cuda"]) == (None, None, None, None)


def test_a_gpu_backend_records_its_gpu(a_gpu, tmp_path):
    found = _fingerprint(_GpuBackend(), tmp_path)
    assert (found["gpu"], found["compute_capability"], found["driver"]) == ("NVIDIA H100 80GB HBM3", "9.0", "580.65")


def test_a_cuda_baseline_records_the_gpu_even_on_emulate(a_gpu, tmp_path):
    """The reference itself then ran on the GPU (ONNX Runtime CUDA's FP32 can differ by GPU model)."""
    found = _fingerprint(get_backend("emulate"), tmp_path, baseline_provider="cuda")
    assert found["gpu"] == "NVIDIA H100 80GB HBM3"
