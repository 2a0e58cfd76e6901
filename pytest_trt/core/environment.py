"""What this machine has: libraries, GPU, versions. Nothing heavy is imported here.

Detection uses ``importlib.util.find_spec`` and package metadata, and ``nvidia-smi``
for the GPU, so the report header can be written without importing TensorRT or
ONNX Runtime. What was found is remembered for the run (:mod:`pytest_trt.core.runstate` tables
``environment.dist_versions``, ``environment.library_versions``, ``environment.gpus``), so a
new pytest session (or :func:`pytest_trt.core.runstate.reset`) looks again.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from . import runstate


def module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def dist_version(*names: str) -> str | None:
    """Installed version of the first distribution found among ``names`` (remembered for the run)."""
    table: dict[tuple[str, ...], str | None] = runstate.current().table("environment.dist_versions")
    if names not in table:
        table[names] = _find_dist_version(names)
    return table[names]


def _find_dist_version(names: tuple[str, ...]) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that matter for reproducing a result (no imports; remembered for the run)."""
    table: dict[str, dict[str, str | None]] = runstate.current().table("environment.library_versions")
    if "versions" not in table:
        table["versions"] = _find_library_versions()
    return table["versions"]


def _find_library_versions() -> dict[str, str | None]:
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
    #: the GPU's UUID ("GPU-8932f937-..."): identifies the instance, so it is never part of a cache key
    uuid: str = ""

    def describe(self) -> str:
        return f"{self.name} (compute capability {self.compute_capability}, driver {self.driver})"


def _smi(exe: str, *args: str) -> str:
    try:
        return subprocess.run([exe, *args], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def resolve_visible(found: list[tuple[str, GpuInfo]], visible: str | None,
                    mig_parents: dict[str, str] | None = None) -> tuple[GpuInfo, ...]:
    """The GPUs CUDA exposes under ``CUDA_VISIBLE_DEVICES=visible``, in CUDA's order.

    ``found``: ``(nvidia-smi index, GpuInfo)`` rows. Entries are resolved like CUDA does:
    a decimal index, a GPU UUID (``GPU-8932f937-...``) or a unique prefix of one, a MIG
    instance (``MIG-...``: its parent GPU, from ``mig_parents``). Enumeration stops at the
    first entry that names no device (``-1`` hides everything after it). Unset: every GPU.

    >>> a = GpuInfo("A", "8.0", "580", uuid="GPU-aaaa-1"); b = GpuInfo("B", "9.0", "580", uuid="GPU-bbbb-2")
    >>> [g.name for g in resolve_visible([("0", a), ("1", b)], "GPU-bbbb,0")]
    ['B', 'A']
    """
    if visible is None:
        return tuple(info for _, info in found)
    by_index = dict(found)
    out: list[GpuInfo] = []
    for token in (t.strip() for t in visible.split(",")):
        if not token:
            break
        info = None
        if token.isdigit():
            info = by_index.get(str(int(token)))
        elif token.upper().startswith("MIG-"):
            parent = (mig_parents or {}).get(token)
            info = next((g for _, g in found if g.uuid and g.uuid == parent), None)
        else:
            uuid = token if token.upper().startswith("GPU-") else f"GPU-{token}"
            matches = [g for _, g in found if g.uuid and g.uuid.lower().startswith(uuid.lower())]
            info = matches[0] if len(matches) == 1 else None
        if info is None:
            break  # CUDA ignores this entry and every one after it
        out.append(info)
    return tuple(out)


def _mig_parents(exe: str) -> dict[str, str]:
    """MIG UUID -> parent GPU UUID, from ``nvidia-smi -L``."""
    out, parent = {}, None
    for line in _smi(exe, "-L").splitlines():
        m = re.search(r"\(UUID:\s*(\S+?)\)", line)
        if not m:
            continue
        if line.lstrip().startswith("GPU "):
            parent = m.group(1)
        elif m.group(1).upper().startswith("MIG-") and parent:
            out[m.group(1)] = parent
    return out


def gpus() -> tuple[GpuInfo, ...]:
    """The CUDA GPUs visible to this process, from ``nvidia-smi`` (empty when none).

    Honors ``CUDA_VISIBLE_DEVICES`` written as indices, GPU UUIDs (or unique prefixes) or MIG
    ids, resolved through each GPU's UUID (:func:`resolve_visible`), so the GPU model in a
    cache key is the one CUDA will use. Caveat: with ``CUDA_VISIBLE_DEVICES`` unset, CUDA
    numbers devices fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, while nvidia-smi
    uses PCI order; on a machine mixing GPU models set one of the two.

    Asked once per run (``nvidia-smi`` takes a while); :func:`forget_gpus` asks again.
    """
    table: dict[str, tuple[GpuInfo, ...]] = runstate.current().table("environment.gpus")
    if "gpus" not in table:
        table["gpus"] = _detect_gpus()
    return table["gpus"]


def forget_gpus() -> None:
    """Forget what :func:`gpus` found, so the next call asks ``nvidia-smi`` again (e.g. after
    ``CUDA_VISIBLE_DEVICES`` changed)."""
    runstate.current().table("environment.gpus").clear()


def _detect_gpus() -> tuple[GpuInfo, ...]:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return ()
    exe = shutil.which("nvidia-smi")
    if not exe:
        return ()
    out = _smi(exe, "--query-gpu=index,uuid,name,compute_cap,driver_version,memory.total", "--format=csv,noheader")
    found = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        found.append((parts[0], GpuInfo(parts[2], parts[3], parts[4], parts[5] if len(parts) > 5 else "",
                                        uuid=parts[1])))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    mig = _mig_parents(exe) if visible and "MIG-" in visible.upper() else None
    return resolve_visible(found, visible, mig)


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
