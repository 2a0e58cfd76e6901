"""What this machine has: libraries, GPU, versions. Nothing heavy is imported here.

Detection uses ``importlib.util.find_spec`` and package metadata, and ``nvidia-smi``
for the GPU, so the report header can be written without importing TensorRT or
ONNX Runtime.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass


def module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def dist_version(*names: str) -> str | None:
    """Installed version of the first distribution found among ``names``."""
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@functools.lru_cache(maxsize=1)
def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that matter for reproducing a result (no imports)."""
    return {
        "tensorrt": dist_version("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-libs"),
        "tensorrt-rtx": dist_version("tensorrt-rtx-cu13", "tensorrt-rtx-cu12", "tensorrt-rtx", "tensorrt-rtx-cu13-bindings"),
        "onnxruntime": dist_version("onnxruntime", "onnxruntime-gpu"),
        "polygraphy": dist_version("polygraphy"),
        "onnx": dist_version("onnx"),
        "numpy": dist_version("numpy"),
    }


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: str
    driver: str
    memory_mib: str = ""

    def describe(self) -> str:
        return f"{self.name} (compute capability {self.compute_capability}, driver {self.driver})"


@functools.lru_cache(maxsize=1)
def gpus() -> tuple[GpuInfo, ...]:
    """The CUDA GPUs visible to this process, from ``nvidia-smi`` (empty when none).

    Honors ``CUDA_VISIBLE_DEVICES`` when it lists plain indices.
    """
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return ()
    exe = shutil.which("nvidia-smi")
    if not exe:
        return ()
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,compute_cap,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    found = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        found.append((parts[0], GpuInfo(parts[1], parts[2], parts[3], parts[4] if len(parts) > 4 else "")))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        wanted = [v.strip() for v in visible.split(",")]
        if all(w.isdigit() for w in wanted):
            by_index = dict(found)
            return tuple(by_index[w] for w in wanted if w in by_index)
    return tuple(info for _, info in found)


def gpu_summary() -> str:
    found = gpus()
    if not found:
        return "no GPU"
    first = found[0].describe()
    return first if len(found) == 1 else f"{first} (+{len(found) - 1} more)"


def tensorrt_unavailable_reason(module: str = "tensorrt") -> str | None:
    """None when TensorRT (or TensorRT-RTX) is importable and a GPU is visible."""
    if not module_available(module):
        return "TensorRT not installed" if module == "tensorrt" else "TensorRT-RTX not installed"
    if not gpus():
        return "no CUDA device"
    return None
