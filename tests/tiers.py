"""Test tiers that need something from outside the Python environment, and the one
mechanism that keeps them honest in CI.

A tier (marker) below may skip where what it needs is missing (no C compiler, no
package index, no TensorRT-RTX wheel, no Chromium, no nginx), always with the exact
reason. In CI, ``.ci/run`` installs what every tier needs and sets
``PYTEST_TRT_CI_NO_SKIP=1``: there, a skip of a test carrying one of these markers is
turned into a failure by ``tests/conftest.py`` (``pytest_runtest_makereport``). One
mechanism for every tier, so no tier can go quietly green by not running.

Heavy tiers are deselected from a plain ``pytest`` run (the Quickstart's test command
stays fast) and run with ``pytest -m <tier>`` (``.ci/run`` and ``tox -e <tier>``).
"""

from __future__ import annotations

import os

NO_SKIP_ENV = "PYTEST_TRT_CI_NO_SKIP"
#: set by the GPU workflow beside NO_SKIP_ENV: the GPU tiers' skips fail too (a GPU runner has what they need)
GPU_NO_SKIP_ENV = "PYTEST_TRT_CI_GPU"

#: PYTEST_TRT_* variables of the test harness itself (tier switches, regeneration of golden
#: files, tier caches): they configure how the suite runs, not what the plugin does, and stay.
HARNESS_ENV = frozenset({
    "PYTEST_TRT_CI_NO_SKIP", "PYTEST_TRT_CI_GPU", "PYTEST_TRT_ONNX_CORPUS", "PYTEST_TRT_REGEN_GOLDEN", "PYTEST_TRT_REGEN_SURFACE",
    "PYTEST_TRT_API_CACHE", "PYTEST_TRT_FAKE_RECORD", "PYTEST_TRT_FAKE_SURFACES",
})

#: marker -> what it needs (shown by ``pytest --markers``)
NO_SKIP_TIERS = {
    "trt_api": "real TensorRT bindings of every supported version, imported on CPU against stub libraries "
    "(needs a C compiler and the package index)",
    "trt_parser": "TensorRT-RTX's real ONNX parser and builder, on CPU or GPU (needs the `rtx` extra)",
    "onnx_corpus": "ONNX's own backend conformance corpus, generated from the installed onnx package",
    "browser": "the HTML report rendered in headless Chromium (needs the system `chromium` package)",
    "remote_cache": "the remote engine cache against a real nginx WebDAV server on loopback (needs nginx)",
    "big_model": "a model over the 2 GiB protobuf limit through every path, generated on the fly "
    "(needs about 6 GB of free disk under pytest's base temporary directory)",
}

#: tiers that a plain `pytest` run leaves out unless `-m` selects them
HEAVY_TIERS = ("trt_api", "trt_parser", "onnx_corpus", "big_model")

#: GPU tiers (markers of tests/gpu; .github/workflows/gpu.yml): they skip with the reason on a machine
#: without a GPU (CPU CI included); on the GPU runner (GPU_NO_SKIP_ENV and NO_SKIP_ENV set) a skip fails,
#: except the documented one (DOCUMENTED_GPU_SKIP).
GPU_TIERS = {
    "gpu": "needs TensorRT and a CUDA GPU",
    "cuda": "needs a CUDA GPU and onnxruntime-gpu (not TensorRT)",
}
#: the one documented skip on a GPU runner: TensorRT-RTX cannot load engines on this GPU's compute
#: capability (pytest_trt/backends/tensorrt/compat.py, unsupported_gpu_reason)
DOCUMENTED_GPU_SKIP = "cannot be loaded on this GPU"


def _on(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def no_skip() -> bool:
    """True in CI, where a skip of a tier test is a failure."""
    return _on(NO_SKIP_ENV)


def no_skip_tiers() -> tuple[str, ...]:
    """The markers whose skips fail in this run: none outside CI; the CPU tiers in CI; the GPU
    tiers too on the GPU runner."""
    if not no_skip():
        return ()
    return (*NO_SKIP_TIERS, *(GPU_TIERS if _on(GPU_NO_SKIP_ENV) else ()))
