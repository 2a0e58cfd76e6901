"""TensorRT versions and data types, known without calling TensorRT's API.

The facts of :mod:`pytest_trt.backends.tensorrt.compat` that need no imported TensorRT module
(or only its enums): which Python module a backend imports, the version thresholds of strong
typing and unfused debug tensors, the version installed (from package metadata), the typing
checks that skip reasons and the report header need, and the ``trt.DataType`` <-> precision
tables. Sources are cited next to each fact; ``compat`` re-exports every name here.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from ...core.environment import dist_version, library_versions, module_available
from ...errors import BackendUnavailable

__all__ = [
    "LIBRARY_NAMES",
    "MODULES",
    "STRONG_TYPING_MIN",
    "TRT_DTYPE_NAMES",
    "UNFUSED_DEBUG_MIN",
    "dtype_name",
    "enum_member",
    "import_module",
    "installed_version",
    "is_rtx_module",
    "parse_version",
    "trt_dtype",
    "version_resolve_typing",
    "version_typing_reason",
]

#: backend name -> Python module name. TensorRT-RTX's module is ``tensorrt_rtx``
#: (shared/TENSORRT_RTX.md; Polygraphy 0.53 ``mod/trt_importer.py`` imports the same name).
MODULES = {"tensorrt": "tensorrt", "tensorrt-rtx": "tensorrt_rtx"}
LIBRARY_NAMES = {"tensorrt": "TensorRT", "tensorrt-rtx": "TensorRT-RTX"}

#: Versions from which ``typing="auto"`` picks strong typing. ``NetworkDefinitionCreationFlag.
#: STRONGLY_TYPED`` is bound in Python from TensorRT 10.0 (release/10.0 pyCore.cpp line ~1456;
#: the C++ flag exists since 9.0, release/9.0 NvInfer.h). Weak typing was deprecated in 10.12
#: (release/10.12 pyGraph.cpp: "Deprecated in TensorRT 10.12. Superseded by strong typing.")
#: and removed in 11.0 (migration guide).
STRONG_TYPING_MIN = (10, 0)
#: ``INetworkDefinition.mark_unfused_tensors_as_debug_tensors`` first appears in
#: release/10.12 pyGraph.cpp (absent in 10.0 ... 10.11); present in 11.1 (main) and
#: in TensorRT-RTX 1.7.1 (TENSORRT_RTX.md).
UNFUSED_DEBUG_MIN = (10, 12)


# --------------------------------------------------------------------------------------
# Importing and versions
# --------------------------------------------------------------------------------------
def import_module(backend: str) -> Any:
    """Import ``tensorrt`` or ``tensorrt_rtx``; every failure is :class:`BackendUnavailable`.

    Not :func:`pytest_trt.core.lazy.lazy_import`: the module to import depends on the backend
    (``MODULES``), and a failure must become the exact skip/usage reason below, not
    ``MissingDependency``.

    A module that is not installed at all gives the exact reason used everywhere else
    (``environment.tensorrt_unavailable_reason``): "TensorRT not installed" or
    "TensorRT-RTX not installed". A module that is present but fails to import (a
    missing ``libnvinfer``, a CUDA mismatch) says so with the import error.
    """
    name = MODULES[backend]
    lib = LIBRARY_NAMES[backend]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name or (exc.name or "").startswith(name + "."):
            raise BackendUnavailable(f"{lib} not installed") from exc
        raise BackendUnavailable(f"{lib} cannot be imported: {exc}") from exc
    except (ImportError, OSError) as exc:
        raise BackendUnavailable(f"{lib} cannot be imported: {exc}") from exc


def parse_version(text: str | None) -> tuple[int, ...]:
    """``"10.13.3.9"`` -> ``(10, 13, 3, 9)``; anything unparsable -> ``()``."""
    if not text:
        return ()
    out = []
    for part in str(text).split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
    return tuple(out)


def is_rtx_module(trt: Any) -> bool:
    """Whether ``trt`` is the TensorRT-RTX module (``tensorrt_rtx``)."""
    return getattr(trt, "__name__", "").split(".")[0] == "tensorrt_rtx"


def enum_member(enum, name: str) -> Any:
    """``enum.name`` or None; pybind enums raise AttributeError for absent members."""
    try:
        return getattr(enum, name)
    except AttributeError:
        return None


# --------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------
#: trt.DataType member name -> pytest-trt dtype name. Members per
#: pyFoundationalTypes.cpp (main = 11.1): FLOAT HALF BF16 INT8 INT32 INT64 BOOL UINT8 FP8
#: INT4 FP4 E8M0. BF16/INT64 exist since 9.x/10.0; FP4/E8M0 are late 10.x.
TRT_DTYPE_NAMES = {
    "FLOAT": "fp32", "HALF": "fp16", "BF16": "bf16", "INT8": "int8", "INT32": "int32",
    "INT64": "int64", "BOOL": "bool", "UINT8": "uint8", "FP8": "fp8", "INT4": "int4",
    "FP4": "fp4", "E8M0": "e8m0", "DOUBLE": "fp64",
}
_PRECISION_TO_TRT = {"fp32": "FLOAT", "fp16": "HALF", "bf16": "BF16"}


def dtype_name(dt) -> str | None:
    """A ``trt.DataType`` (or its name) as ``fp32``/``fp16``/``bf16``/``int32``/...; None if unknown."""
    if dt is None:
        return None
    name = getattr(dt, "name", None) or str(dt).rsplit(".", 1)[-1]
    return TRT_DTYPE_NAMES.get(str(name).upper())


def trt_dtype(trt, precision: str):
    """``fp32``/``fp16``/``bf16`` -> ``trt.DataType`` member."""
    member = enum_member(trt.DataType, _PRECISION_TO_TRT[precision])
    if member is None:
        raise BackendUnavailable(f"this TensorRT has no DataType for {precision}")
    return member


# --------------------------------------------------------------------------------------
# Versions without importing TensorRT
# --------------------------------------------------------------------------------------
def installed_version(backend: str) -> str | None:
    """The library version from package metadata (no import), else from the module."""
    key = "tensorrt" if backend == "tensorrt" else "tensorrt-rtx"
    version = library_versions().get(key)
    if version:
        return version
    if backend == "tensorrt":
        version = dist_version("tensorrt-cu13-libs", "tensorrt-cu12-libs", "tensorrt_cu13", "tensorrt_cu12")
    else:
        version = dist_version("tensorrt-rtx-cu13-libs", "tensorrt-rtx-cu12-libs", "tensorrt_rtx")
    if version:
        return version
    if module_available(MODULES[backend]):
        try:
            return str(import_module(backend).__version__)
        except (BackendUnavailable, AttributeError):
            return None
    return None


def version_typing_reason(backend: str, version: str | None, typing: str) -> str | None:
    """The typing checks of :meth:`TrtCompat.typing_reason` from a version string alone.

    Used by ``Backend.supports`` so that skip reasons need no TensorRT import.
    """
    v = parse_version(version)
    if backend == "tensorrt-rtx":
        return "TensorRT-RTX is strongly typed only" if typing == "weak" else None
    if not v:
        return None
    if typing == "weak" and v[0] >= 11:
        return f"TensorRT {v[0]} has no weak typing (removed in 11.0; use strong typing)"
    if typing == "strong" and v < STRONG_TYPING_MIN:
        return f"TensorRT {version} has no strong typing (needs TensorRT >= 10.0)"
    return None


def version_resolve_typing(backend: str, version: str | None, requested: str) -> str:
    """``auto`` -> ``strong`` or ``weak`` from a version string alone (no TensorRT import)."""
    if requested != "auto":
        return requested
    v = parse_version(version)
    if backend == "tensorrt-rtx" or not v or v >= STRONG_TYPING_MIN:
        return "strong"
    return "weak"
