"""Backends ``tensorrt`` and ``tensorrt-rtx``: build, cache, run and inspect TensorRT engines.

How a plan becomes an engine:

* **strong typing** (default where available: TensorRT >= 10.0, 11.x, TensorRT-RTX): the
  plan's strongly typed realization (:func:`pytest_trt.realize.realize_strong`, Casts
  around the FP32 islands) is parsed into a ``STRONGLY_TYPED`` network. TensorRT then
  runs every tensor in the type the graph gives it.
* **weak typing** (TensorRT <= 10.x only): the *original* model is parsed, the builder
  gets ``FP16``/``BF16`` per the plan plus ``OBEY_PRECISION_CONSTRAINTS``, and the plan's
  hints (:func:`pytest_trt.realize.weak_hints`) set ``ILayer.precision`` and output types
  on the layers carrying each node (matched by layer name == node name, or by the
  ``[ONNX Layer: <node>]`` entry the ONNX parser writes into ``ILayer.metadata``). Such
  hints are known to be ignored inside Myelin regions, so check ``engine.layers()``.

Always: ``ProfilingVerbosity.DETAILED`` (for :meth:`TensorRTEngine.layers`), TF32 off
unless ``BuildConfig.tf32``, optimization profiles from ``BuildConfig.profiles``, and a
timing cache kept in ``<cache>/timing-cache/`` shared by every build on the same
TensorRT version and GPU. Engines go through the :class:`~pytest_trt.cache.ArtifactCache`
(``engine.plan`` plus ``build.json``); a failed build raises :class:`BuildError` with
TensorRT's own messages and is never cached.

The TensorRT API is driven directly (builder, parser, config, runtime) rather than
through Polygraphy's loaders, for three reasons: Polygraphy picks ``tensorrt`` or
``tensorrt_rtx`` once, at import (``POLYGRAPHY_USE_TENSORRT_RTX``), so both backends
could not live in one process; its TensorRT logger is global and prints rather than
returning the messages a :class:`BuildError` must quote; and its ``CreateConfig(fp16=True)``
raises on TensorRT 11 / RTX. Polygraphy's CUDA wrapper (``polygraphy.cuda``, plain ctypes
over ``libcudart``) provides device memory for running. Every version difference is in
:mod:`pytest_trt.backends.trt_compat`.

Verified where: with full TensorRT (10.x/11.x) NOT yet run (it cannot be installed on
the development machines): unit tests cover this glue against a fake module
(``tests/unit/fake_tensorrt.py``), and ``tests/gpu/test_tensorrt_gpu.py`` is what a GPU
runner with TensorRT must pass. With TensorRT-RTX 1.7.1.116 on an H200 (2026-11-22) the
build path ran for real: strongly typed build, network dtype check, cache write and hit,
parser error -> BuildError, and deserialization on compute capability 9.0 ->
BackendUnavailable (details in :mod:`~pytest_trt.backends.trt_compat`). Running,
the inspector and debug tensors have not run on any real TensorRT.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..environment import gpus, tensorrt_unavailable_reason
from ..errors import BackendUnavailable, BuildError, InputError, UnsupportedGpu
from ..layers import LayerReport, metadata_nodes
from .base import Backend, BuildConfig, BuildInfo, Engine
from .trt_compat import (
    FLOAT_PRECISIONS,
    LIBRARY_NAMES,
    MODULES,
    TrtCompat,
    dtype_name,
    get_logger,
    installed_version,
    version_resolve_typing,
    version_typing_reason,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..cache import ArtifactCache
    from ..plan import PrecisionPlan

ENGINE_FILE = "engine.plan"
RECORD_FILE = "build.json"
TIMING_CACHE_DIR = "timing-cache"
#: Bump when the way engines are built changes, so old cache entries are not reused.
#: 2: build.json records the parsed dtype of every planned node (``network_nodes``) and
#: the verdict of the planned-vs-parsed rule per mismatch; a lowered node fails the build.
GLUE_VERSION = 2


# --------------------------------------------------------------------------------------
# Device
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports, from the ``nvidia-smi`` header ("CUDA Version: 13.0")."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"CUDA Version:\s*([\d.]+)", out)
    return m.group(1) if m else None


def device_info() -> dict[str, Any]:
    """The first visible GPU: name, compute capability, driver, CUDA (part of cache keys)."""
    found = gpus()
    if not found:
        return {}
    g = found[0]
    return {"gpu": g.name, "compute_capability": g.compute_capability, "driver": g.driver,
            "cuda": cuda_driver_version()}


# --------------------------------------------------------------------------------------
# Network-level helpers (usable on any parsed network, no engine needed)
# --------------------------------------------------------------------------------------
def _layer_node(layer, known) -> str | None:
    """The plan node a network layer carries: its name, else its ``[ONNX Layer: ...]`` metadata."""
    name = str(getattr(layer, "name", ""))
    if name in known:
        return name
    nodes = metadata_nodes(getattr(layer, "metadata", "") or "", known)
    for n in nodes:
        if n in known:
            return n
    return None


@dataclass(frozen=True)
class DtypeMismatch:
    """A network layer output whose dtype differs from the plan.

    ``verdict`` is :func:`pytest_trt.network_rule.judge` of planned vs actual: ``lower``
    (a failure) or ``higher`` (TensorRT computes it in higher precision than planned).
    """

    node: str
    layer: str
    tensor: str
    planned: str
    actual: str
    op_type: str = ""

    @property
    def verdict(self) -> str:
        from ..network_rule import judge

        return judge(self.planned, self.actual)

    def describe(self) -> str:
        from ..network_rule import HIGHER

        text = (f"{self.node}{f' ({self.op_type})' if self.op_type else ''}: planned {self.planned}, parsed "
                f"{self.actual} (layer {self.layer!r}, output {self.tensor!r})")
        if self.verdict == HIGHER:
            text += ": TensorRT computes this in higher precision than planned"
        return text

    def to_json(self) -> dict[str, str]:
        return {"node": self.node, "op_type": self.op_type, "layer": self.layer, "tensor": self.tensor,
                "planned": self.planned, "actual": self.actual, "verdict": self.verdict}


def check_network_dtypes(network, plan: PrecisionPlan, compat: TrtCompat | None = None) -> list[DtypeMismatch]:
    """Compare a parsed (strongly typed) network with the plan, before building.

    For each layer carrying a planned compute node (layer name == node name, or its
    ``ILayer.metadata``), each float output tensor must have the planned dtype: the
    tensor's own entry in ``plan.tensor_precision`` when it is an ONNX tensor, else the
    node's precision (helper layers of the node). Layers of the realization's Cast nodes
    and helper layers without metadata are skipped. On a weakly typed network dtypes are
    not decided before the build, so use this with strong typing (TENSORRT_RTX.md: on
    TensorRT-RTX 1.7.1 layer output dtypes "follow the graph exactly").
    """
    known = plan.nodes
    tensor_precision = getattr(plan, "tensor_precision", {}) or {}
    out = []
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        node = _layer_node(layer, known)
        if node is None:
            continue
        decision = known[node]
        if decision.kind != "compute" or decision.precision is None:
            continue
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is None:
                continue
            actual = dtype_name(t.dtype)
            if actual not in FLOAT_PRECISIONS:
                continue
            planned = tensor_precision.get(str(t.name), decision.precision)
            if planned != actual:
                out.append(DtypeMismatch(node, str(layer.name), str(t.name), planned, actual, decision.op_type))
    return out


def network_node_dtypes(network, plan: PrecisionPlan) -> dict[str, str]:
    """Planned compute node -> the float dtype its layers output in the parsed network.

    ``mixed`` when its layers output several float types (e.g. a helper layer in FP32);
    nodes carried by no layer are absent (the parser folded them, e.g. into a constant).
    """
    known = plan.nodes
    seen: dict[str, set[str]] = {}
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        node = _layer_node(layer, known)
        if node is None or known[node].kind != "compute" or known[node].precision is None:
            continue
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            actual = dtype_name(t.dtype) if t is not None else None
            if actual in FLOAT_PRECISIONS:
                seen.setdefault(node, set()).add(actual)
    return {n: (next(iter(d)) if len(d) == 1 else "mixed") for n, d in seen.items()}


class LoweredPrecisionError(BuildError):
    """Strong typing: a node planned FP32 was parsed in lower precision (the one rule,
    :mod:`pytest_trt.network_rule`). ``mismatches`` are the offending layer outputs."""

    def __init__(self, message: str, mismatches: list[DtypeMismatch], nodes: dict[str, str] | None = None):
        super().__init__(message)
        self.mismatches = mismatches
        #: planned compute node -> parsed dtype (:func:`network_node_dtypes`)
        self.nodes = dict(nodes or {})


def lowered_message(label: str, lowered: list[DtypeMismatch]) -> str:
    nodes = sorted({m.node for m in lowered})
    lines = [f"{label}: {len(nodes)} node(s) parsed in a different or lower precision than planned "
             f"(a precision request TensorRT would not honour):"]
    lines += [f"  {m.describe()}" for m in lowered[:20]]
    if len(lowered) > 20:
        lines.append(f"  ... {len(lowered) - 20} more")
    lines.append("The realization (pytest_trt.realize.realize_strong) should have typed these nodes as planned: "
                 "please report it with `pytest-trt plan MODEL ... --export-onnx OUT.onnx` attached.")
    return "\n".join(lines)


@dataclass
class WeakHintResult:
    """What :func:`apply_weak_hints` did: node -> layers hinted, and hints that found no layer."""

    applied: dict[str, list[str]] = field(default_factory=dict)
    output_types_set: int = 0
    unmatched: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"applied": self.applied, "output_types_set": self.output_types_set, "unmatched": self.unmatched}


def _node_outputs(plan: PrecisionPlan) -> dict[str, list[str]]:
    return {n.name: list(n.output) for n in plan.model.proto.graph.node}


def apply_weak_hints(compat: TrtCompat, network, hints, plan: PrecisionPlan) -> WeakHintResult:
    """Apply :class:`~pytest_trt.realize.WeakHints` to a weakly typed network (TensorRT <= 10.x).

    A layer carries node N when ``layer.name == N`` or its metadata names N (the ONNX
    parser may emit several layers for one node; Polygraphy's ``SetLayerPrecisions``
    matches exact names only). For each such layer with a float output:
    ``layer.precision = hints.layer_precision[N]``; an output that *is* N's ONNX output
    ``k`` gets ``hints.output_types[N][k]``, any other float output (a helper layer's
    intermediate) gets the node's precision. Shape, constant and cast layers are left
    alone. Hinted nodes that match no layer are reported (Polygraphy only warns).
    """
    layer_precision = dict(getattr(hints, "layer_precision", {}) or {})
    output_types = {k: dict(v) for k, v in (getattr(hints, "output_types", {}) or {}).items()}
    hinted = set(layer_precision) | set(output_types)
    outputs_of = _node_outputs(plan)
    result = WeakHintResult()
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        node = _layer_node(layer, hinted)
        if node is None or compat.skip_for_hints(layer):
            continue
        floats = []
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is not None and dtype_name(t.dtype) in FLOAT_PRECISIONS:
                floats.append((j, str(t.name)))
        if not floats:
            continue
        prec = layer_precision.get(node)
        if prec is not None:
            compat.set_layer_precision(layer, prec)
        onnx_outs = outputs_of.get(node, [])
        for j, tname in floats:
            want = None
            if tname in onnx_outs:
                want = output_types.get(node, {}).get(onnx_outs.index(tname), prec)
            else:
                want = prec
            if want is not None:
                compat.set_output_type(layer, j, want)
                result.output_types_set += 1
        result.applied.setdefault(node, []).append(str(layer.name))
    result.unmatched = sorted(n for n in hinted if n not in result.applied)
    return result


def _mark_float_outputs(network, names: set[str]) -> int:
    """Probe builds: mark every layer output whose name is in ``names`` (float tensors that
    ONNX nodes produce) as a network output (Polygraphy's ``ModifyNetworkOutputs`` with
    ``MARK_ALL`` does the same for every tensor; marking changes fusion)."""
    marked = 0
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        ltype = getattr(getattr(layer, "type", None), "name", str(getattr(layer, "type", "")))
        if str(ltype).upper().endswith("CONSTANT"):
            continue  # constants carry no computation worth comparing
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is None or str(t.name) not in names or getattr(t, "is_network_output", False):
                continue
            if dtype_name(t.dtype) not in FLOAT_PRECISIONS:
                continue
            network.mark_output(t)
            marked += 1
    return marked


def node_from_log(lines: list[str], nodes) -> str | None:
    """The first plan node a TensorRT message names (``[ONNX Layer: X]`` first, then plain names)."""
    known = set(nodes)
    for line in lines:
        for n in metadata_nodes(line, known):
            if n in known:
                return n
    by_length = sorted(known, key=len, reverse=True)
    for line in lines:
        for n in by_length:
            if len(n) < 3 or n not in line:
                continue
            i = line.index(n)
            before = line[i - 1] if i > 0 else " "
            after = line[i + len(n)] if i + len(n) < len(line) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                return n
    return None


# --------------------------------------------------------------------------------------
# Device memory and execution
# --------------------------------------------------------------------------------------
class CudaMemory:
    """Device memory through Polygraphy's ctypes CUDA wrapper (``polygraphy.cuda``)."""

    def __init__(self):
        from polygraphy import cuda

        self._cuda = cuda
        self._w = cuda.wrapper()

    def stream(self) -> int:
        return self._w.create_stream()

    def sync(self, stream: int) -> None:
        self._w.stream_synchronize(stream)

    def destroy(self, stream: int) -> None:
        self._w.destroy_stream(stream)

    def malloc(self, nbytes: int) -> int:
        return self._w.malloc(max(int(nbytes), 1))

    def free(self, ptr: int) -> None:
        self._w.free(ptr)

    def to_device(self, ptr: int, host, stream: int) -> None:
        if host.nbytes:
            self._w.memcpy(ptr, host.ctypes.data, host.nbytes, self._cuda.MemcpyKind.HostToDevice, stream)

    def to_host(self, host, ptr: int, stream: int | None) -> None:
        if host.nbytes:
            self._w.memcpy(host.ctypes.data, ptr, host.nbytes, self._cuda.MemcpyKind.DeviceToHost, stream)


_NUMPY = {"fp32": "float32", "fp16": "float16", "bf16": "uint16", "int32": "int32", "int64": "int64",
          "int8": "int8", "uint8": "uint8", "bool": "bool", "fp64": "float64"}


def _np_dtype(name: str | None):
    import numpy as np

    if name not in _NUMPY:
        raise InputError(f"engine tensors of type {name} are not supported by pytest-trt's runner")
    return np.dtype(_NUMPY[name])


def _bf16_to_f32(u16):
    """BF16 bits -> FP32: the one conversion (:func:`pytest_trt.realize.strong.bf16_bits_to_fp32`)."""
    from ..realize.strong import bf16_bits_to_fp32

    return bf16_bits_to_fp32(u16)


def _f32_to_bf16(f32):
    """FP32 feeds -> BF16 bits for a BF16 engine input: the realization's conversion (round to nearest
    even, NaN stays NaN, finite values beyond the BF16 range saturate; :func:`~pytest_trt.realize.strong.
    to_bf16_bits`), so a feed is rounded exactly as the realization rounds initializers."""
    from ..realize.strong import to_bf16_bits

    return to_bf16_bits(f32)[0]


def _to_float32(arr, dtype: str | None):
    import numpy as np

    if dtype == "bf16":
        return _bf16_to_f32(arr)
    return np.asarray(arr, dtype=np.float32)


def _fits(shape, mn, mx) -> bool:
    return len(shape) == len(mn) == len(mx) and all(lo <= d <= hi for d, lo, hi in zip(shape, mn, mx, strict=True))


def _select_profile(engine, context, inputs, feeds, stream, label: str, state: dict) -> int:
    """Make active the first optimization profile whose [min, max] covers every feed's shape.

    Polygraphy 0.53 ``TrtRunner.set_profile`` uses ``set_optimization_profile_async(index,
    stream)`` too; a context starts on profile 0. ``state["profile"]`` remembers the active one.
    Feeds no profile covers are the user's declared shapes/profiles: an InputError listing them.
    """
    import numpy as np

    count = int(getattr(engine, "num_optimization_profiles", 1) or 1)
    shapes = {n: tuple(int(d) for d in np.shape(feeds[n])) for n in inputs}
    ranges = []
    for index in range(count):
        fits = True
        text = []
        for n in inputs:
            mn, _, mx = (tuple(int(d) for d in s) for s in engine.get_tensor_profile_shape(n, index))
            text.append(f"{n}: min {mn} max {mx}")
            fits = fits and _fits(shapes[n], mn, mx)
            if engine.is_shape_inference_io(n):
                # a shape tensor: its values must lie in the profile's value range. The real bindings
                # label get_tensor_profile_values' parameters (name: int, profile_index: str) in 10.0.1
                # ... 11.4: the first argument is the profile index, the second the name (trt_api tier).
                ranges_ = engine.get_tensor_profile_values(index, n)
                if ranges_:
                    vmn, _, vmx = (tuple(int(v) for v in r) for r in ranges_)
                    values = tuple(int(v) for v in np.asarray(feeds[n]).ravel())
                    text.append(f"{n} values: min {vmn} max {vmx}")
                    fits = fits and _fits(values, vmn, vmx)
        ranges.append(f"profile {index} ({', '.join(text)})")
        if fits:
            if count > 1 and state.get("profile", 0) != index:
                if not context.set_optimization_profile_async(index, stream):
                    raise BuildError(f"{label}: set_optimization_profile_async({index}) failed")
                state["profile"] = index
            return index
    given = ", ".join(f"{n} {s}" for n, s in shapes.items())
    raise InputError(f"{label}: no optimization profile of the engine covers the feeds ({given}); the engine has "
                     f"{'; '.join(ranges)}: declare shapes or a profile that covers them")


def _execute(compat: TrtCompat, engine, context, feeds: dict, memory, *, label: str, listener=None,
             state: dict | None = None) -> dict:
    """Run one inference with ``execute_async_v3``; returns every engine output by name.

    Same sequence as Polygraphy 0.53 ``TrtRunner._infer_impl``: ``set_input_shape`` and
    ``set_tensor_address`` per input, shapes of outputs from ``context.get_tensor_shape``
    once inputs are set, ``execute_async_v3(stream)``, copy back, synchronize.
    """
    import numpy as np

    trt = compat.trt
    names = [engine.get_tensor_name(i) for i in range(int(engine.num_io_tensors))]
    inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    outputs = [n for n in names if n not in inputs]
    missing = [n for n in inputs if n not in feeds]
    if missing:
        raise InputError(f"{label}: no feed for engine input(s) {', '.join(missing)} "
                         f"(given: {', '.join(sorted(feeds)) or 'none'})")
    allocated: list[int] = []
    keep: list[Any] = []
    allocator = None
    stream = memory.stream()
    try:
        _select_profile(engine, context, inputs, feeds, stream, label, state if state is not None else {})
        for n in inputs:
            dt = dtype_name(engine.get_tensor_dtype(n))
            value = np.asarray(feeds[n])
            if dt == "bf16":
                host = _f32_to_bf16(value)
            else:
                want = _np_dtype(dt)
                if value.dtype != want and value.dtype.kind != want.kind and not (
                        value.dtype.kind in "iub" and want.kind in "iub"):
                    raise InputError(f"{label}: input {n!r} is {value.dtype}, the engine expects {want}")
                host = np.ascontiguousarray(value, dtype=want)
            if not context.set_input_shape(n, tuple(int(d) for d in host.shape)):
                raise InputError(f"{label}: input {n!r} has shape {tuple(host.shape)}, outside the engine's "
                                 f"optimization profile{_profile_text(engine, n)}; declare shapes or a profile "
                                 f"that covers it")
            if getattr(engine, "is_shape_inference_io", lambda _n: False)(n):
                keep.append(host)
                context.set_tensor_address(n, host.ctypes.data)
                continue
            ptr = memory.malloc(host.nbytes)
            allocated.append(ptr)
            keep.append(host)
            memory.to_device(ptr, host, stream)
            context.set_tensor_address(n, ptr)
        plans = {}
        dynamic = {}
        for n in outputs:
            shape = tuple(int(d) for d in context.get_tensor_shape(n))
            dt = dtype_name(engine.get_tensor_dtype(n))
            if any(d < 0 for d in shape):
                # a data-dependent shape (NonZero, ...): known only after execution
                if not compat.has_output_allocator():
                    raise BackendUnavailable(f"{label}: output {n!r} has a data-dependent shape {shape} and "
                                             f"{compat.label} has no IOutputAllocator")
                if allocator is None:
                    allocator = compat.make_output_allocator(memory)
                context.set_output_allocator(n, allocator)
                dynamic[n] = dt
                continue
            host = np.empty(shape, dtype=_np_dtype(dt))
            ptr = memory.malloc(host.nbytes)
            allocated.append(ptr)
            context.set_tensor_address(n, ptr)
            plans[n] = (host, ptr, dt)
        if listener is not None:
            context.set_debug_listener(listener)
            compat.set_debug_state(context, True)
        logger = get_logger(trt)
        with logger.capture() as messages:
            ok = context.execute_async_v3(stream)
            memory.sync(stream)
        if not ok:
            said = "; ".join(m.message for m in messages if m.severity in ("error", "internal_error"))
            raise BuildError(f"{label}: execute_async_v3 failed" + (f": TensorRT said: {said}" if said else ""))
        for host, ptr, _ in plans.values():
            memory.to_host(host, ptr, stream)
        for n, dt in dynamic.items():
            if n not in allocator.shapes or n not in allocator.buffers:
                raise BuildError(f"{label}: TensorRT gave no shape or buffer for the data-dependent output {n!r}")
            host = np.empty(allocator.shapes[n], dtype=_np_dtype(dt))
            memory.to_host(host, allocator.buffers[n][0], stream)
            plans[n] = (host, None, dt)
        memory.sync(stream)
        return {n: (_bf16_to_f32(host) if dt == "bf16" else host) for n, (host, _, dt) in plans.items()}
    finally:
        if allocator is not None:
            allocator.release()
        if listener is not None:
            with contextlib.suppress(Exception):
                compat.set_debug_state(context, False)
        for ptr in allocated:
            with contextlib.suppress(Exception):
                memory.free(ptr)
        with contextlib.suppress(Exception):
            memory.destroy(stream)


def _profile_text(engine, name: str) -> str:
    try:
        mn, opt, mx = engine.get_tensor_profile_shape(name, 0)
        return f" (min {tuple(mn)}, opt {tuple(opt)}, max {tuple(mx)})"
    except Exception:
        return ""


class DebugCollector:
    """Collects debug tensors (``IDebugListener.process_debug_tensor``) as float32 arrays."""

    def __init__(self, compat: TrtCompat, memory):
        self.compat = compat
        self.memory = memory
        self.values: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}
        self.listener = compat.make_debug_listener(self._on_tensor)

    def _on_tensor(self, addr, location, dtype, shape, name, stream):
        import numpy as np

        dt = dtype_name(dtype)
        if dt not in _NUMPY:
            self.skipped[str(name)] = f"type {dt}"
            return
        host = np.empty(tuple(int(d) for d in shape), dtype=_np_dtype(dt))
        if host.nbytes:
            if self.compat.is_host_location(location):
                ctypes.memmove(host.ctypes.data, int(addr), host.nbytes)
            else:
                self.memory.sync(stream)
                self.memory.to_host(host, int(addr), None)
        self.values[str(name)] = _to_float32(host, dt) if dt in FLOAT_PRECISIONS else host


# --------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------
class TensorRTEngine(Engine):
    """A serialized TensorRT engine (from the cache), deserialized on first use.

    Deserialization is lazy so that a build that cannot run here (TensorRT-RTX on an
    unsupported GPU) still yields an engine object whose build record and network check
    can be read; ``run``/``layers``/``run_layerwise`` then raise
    :class:`BackendUnavailable` with the exact reason.
    """

    def __init__(self, plan: PrecisionPlan, config: BuildConfig, build_info: BuildInfo, *, backend: TensorRTBackend,
                 typing: str, data: bytes, record: dict, cache: ArtifactCache | None = None, memory=None):
        super().__init__(plan, config, build_info)
        self.backend_name = backend.name
        self.typing = typing
        self._backend = backend
        self._data = data
        self.record = record
        self._cache = cache
        self._memory = memory
        self._compat: TrtCompat | None = None
        self._runtime = None
        self._engine = None
        self._context = None
        self._unavailable: str | None = None
        self._probe: TensorRTEngine | None = None
        self._listener = None
        #: engine tensor name -> (why it could not be named as an ONNX tensor, value) of the last
        #: debug-tensor capture (run_layerwise)
        self.unmapped_debug_tensors: dict[str, tuple[str, Any]] = {}
        self._run_state: dict[str, Any] = {}  # the execution context's active optimization profile
        self._device_memory = 0

    # -- build record -----------------------------------------------------------------
    @property
    def engine_bytes(self) -> bytes:
        return self._data

    @property
    def network_mismatches(self) -> list[DtypeMismatch]:
        """Network-level dtype check recorded at build time (strong typing; empty for weak).

        Only ``higher`` ones can be here: a ``lower`` one fails the build
        (:class:`LoweredPrecisionError`)."""
        fields = ("node", "layer", "tensor", "planned", "actual", "op_type")
        return [DtypeMismatch(**{k: m[k] for k in fields if k in m}) for m in self.record.get("network_mismatches", [])]

    def typing_rule_failures(self) -> list[str]:
        """Weak typing: :func:`pytest_trt.network_rule.weak_typing_failures` on this engine's
        layer report (strong typing was judged on the parsed network at build time: [])."""
        if self.typing != "weak":
            return []
        from ..network_rule import weak_typing_failures

        return weak_typing_failures(self.layers())

    @property
    def network_nodes(self) -> dict[str, str]:
        """Planned compute node -> its parsed float dtype (strong typing; empty for weak)."""
        return dict(self.record.get("network_nodes", {}))

    @property
    def weak_hints(self) -> dict | None:
        return self.record.get("weak_hints")

    @property
    def debug_tensors(self) -> bool:
        """True when built with ``mark_unfused_tensors_as_debug_tensors`` (TensorRT >= 10.12, RTX)."""
        return bool(self.record.get("unfused_debug_tensors"))

    # -- loading ----------------------------------------------------------------------
    def _label(self) -> str:
        return f"{self.backend_name} engine for {self.plan.model.label}"

    def load(self):
        """Deserialize (once). Raises BackendUnavailable / BuildError."""
        if self._engine is not None:
            return self._engine
        if self._unavailable:
            raise UnsupportedGpu(self._unavailable)
        compat = self._backend.compat()
        logger = get_logger(compat.trt)
        runtime = compat.create_runtime()
        engine = None
        error = None
        with logger.capture() as messages:
            try:
                engine = runtime.deserialize_cuda_engine(self._data)
            except Exception as exc:  # some bindings raise instead of returning None
                error = exc
        if engine is None:
            texts = [m.message for m in messages] + ([str(error)] if error is not None else [])
            reason = compat.unsupported_gpu_reason(texts, device_info().get("gpu", ""))
            if reason:
                self._unavailable = reason
                raise UnsupportedGpu(reason)
            said = "; ".join(m.line() for m in messages if m.severity in ("error", "internal_error", "warning"))
            raise BuildError(
                f"{self._label()}: {compat.label} could not deserialize the engine "
                f"({self.build_info.path or 'built in memory'})"
                + (f": {error}" if error is not None else "")
                + (f". TensorRT said: {said}" if said else "")
                + ". Rebuild it with --trt-rebuild; if that fails too, the cache entry was written by another "
                  "TensorRT or driver"
            )
        self._compat, self._runtime, self._engine = compat, runtime, engine
        try:
            self._device_memory = compat.engine_device_memory(engine)
        except Exception:  # an estimate for releasing engines: never fail a load for it
            self._device_memory = 0
        return engine

    @property
    def loaded_bytes(self) -> int:
        """Plan bytes (weights) plus the context's device memory while deserialized; 0 when released."""
        if self._engine is None:
            return 0
        return len(self._data) + self._device_memory

    def release(self) -> None:
        """Drop the deserialized engine, its context and runtime (GPU memory); the plan bytes stay,
        so the next run deserializes again (no rebuild)."""
        self._context = self._engine = self._runtime = None
        self._listener = None
        self._run_state = {}
        self._device_memory = 0
        if self._probe is not None:
            self._probe.release()

    def _ctx(self):
        engine = self.load()
        if self._context is None:
            self._context = engine.create_execution_context()
            if self._context is None:
                raise BuildError(f"{self._label()}: create_execution_context() failed (out of GPU memory?)")
        return self._context

    def _mem(self):
        if self._memory is None:
            self._memory = CudaMemory()
        return self._memory

    # -- Engine API -------------------------------------------------------------------
    def run(self, feeds: dict) -> dict:
        context = self._ctx()
        values = _execute(self._compat, self._engine, context, feeds, self._mem(), label=self._label(),
                          state=self._run_state)
        missing = [n for n in self.output_names if n not in values]
        if missing:
            raise BuildError(f"{self._label()}: the engine has no output(s) {', '.join(missing)} "
                             f"(engine outputs: {', '.join(values)})")
        return {n: values[n] for n in self.output_names}

    def inspector_json(self) -> str:
        """``IEngineInspector.get_engine_information(LayerInformationFormat.JSON)`` (10.x and 11.x)."""
        engine = self.load()
        inspector = engine.create_engine_inspector()
        with contextlib.suppress(Exception):
            inspector.execution_context = self._ctx()
        return inspector.get_engine_information(self._compat.trt.LayerInformationFormat.JSON)

    def layers(self) -> LayerReport:
        report = LayerReport.from_inspector_json(self.inspector_json(), self.plan, typing=self.typing,
                                                 backend=self.backend_name)
        hints = self.weak_hints or {}
        if hints.get("unmatched"):
            report.notes.append(f"weak-typing hints matched no layer for {len(hints['unmatched'])} node(s): "
                                f"{', '.join(hints['unmatched'][:3])}")
        for note in self.record.get("notes", []):
            report.notes.append(note)
        return report

    def run_layerwise(self, feeds: dict):
        """Intermediate float tensors by ONNX name.

        With debug tensors (10.12+, 11.x, RTX): the engine under test runs once with both debug
        switches on; the tensors arrive under TensorRT's internal names and are named through
        the layer report (:mod:`pytest_trt.debug_tensors`); those that cannot be mapped are kept
        in :attr:`unmapped_debug_tensors`, never compared. ONNX tensors at a layer boundary of
        the engine that were not emitted make the capture partial: they come from the probe
        build, and the note says so. Without debug tensors: the probe build for everything.
        """
        from ..debug_tensors import expected_tensors, map_debug_names

        float_names = _float_tensor_names(self.plan)
        if self.debug_tensors and self._backend.compat().has_debug_listener():
            context = self._ctx()
            collector = DebugCollector(self._compat, self._mem())
            self._listener = collector.listener  # the context keeps a raw pointer to it: keep it alive
            outputs = _execute(self._compat, self._engine, context, feeds, self._mem(), label=self._label(),
                               listener=collector.listener, state=self._run_state)
            report = self.layers()
            mapping = map_debug_names(list(collector.values), report, self.plan, float_names)
            values = {onnx: collector.values[name] for name, onnx in mapping.mapped.items()}
            self.unmapped_debug_tensors = {name: (why, collector.values[name]) for name, why in mapping.unmapped.items()}
            for name, arr in outputs.items():
                if name in float_names:
                    values.setdefault(name, _to_float32(arr, None))
            expected = expected_tensors(report, self.plan, float_names)
            missing = sorted(expected - set(values))
            note = (f"{self.backend_name}: debug tensors of the engine under test "
                    f"(mark_unfused_tensors_as_debug_tensors + unfused_tensors_debug_state; fusion unchanged), "
                    f"named through the engine's layer report: {len(values)} of {len(float_names)} float tensors "
                    f"computed by nodes captured")
            if mapping.unmapped:
                note += (f"; {len(mapping.unmapped)} engine tensor(s) not mapped to ONNX tensors, kept under their "
                         f"engine names and not compared: "
                         + ", ".join(f"{n} ({why})" for n, why in list(mapping.unmapped.items())[:3]))
            if collector.skipped:
                note += f"; {len(collector.skipped)} debug tensor(s) of types the runner cannot read skipped"
            if missing:
                probe = self._probe_engine()
                raw = probe._run_all(feeds)
                filled = [n for n in missing if n in raw]
                for n in filled:
                    values[n] = _to_float32(raw[n], None)
                note += (f"; PARTIAL capture: {len(missing)} ONNX tensor(s) at a layer boundary of the engine were "
                         f"not emitted ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): "
                         f"{len(filled)} of them taken from a SEPARATE probe build with every float tensor marked "
                         f"as an output, a DIFFERENT engine from the one under test")
            else:
                note += f"; {len([n for n in float_names if n not in values])} fused away"
            return values, note
        probe = self._probe_engine()
        raw = probe._run_all(feeds)
        values = {n: _to_float32(a, None) for n, a in raw.items() if n in float_names}
        note = (f"{self.backend_name}: SEPARATE probe build with every float tensor marked as an output; it is a "
                f"DIFFERENT engine from the one under test (extra outputs change fusion and tactics). "
                f"{len(values)} of {len(float_names)} float tensors captured")
        return values, note

    def _run_all(self, feeds: dict) -> dict:
        return _execute(self._compat or self._backend.compat(), self.load(), self._ctx(), feeds, self._mem(),
                        label=self._label(), state=self._run_state)

    def _probe_engine(self) -> TensorRTEngine:
        if self._probe is None:
            self._probe = self._backend._build_engine(self.plan, self.config, self._cache, probe=True,
                                                      memory=self._memory)
        return self._probe


def _float_tensor_names(plan: PrecisionPlan) -> set[str]:
    """Float tensors that ONNX nodes produce (graph inputs and initializers excluded)."""
    names = set(getattr(plan, "tensor_precision", {}) or {})
    if not names:
        from ..baseline import float_tensor_names

        names = set(float_tensor_names(plan.model))
    produced = {o for n in plan.model.proto.graph.node for o in n.output if o}
    return names & produced


# --------------------------------------------------------------------------------------
# The backends
# --------------------------------------------------------------------------------------
class TensorRTBackend(Backend):
    """TensorRT (10.x weak or strong typing, 11.x strong) on the first visible CUDA GPU."""

    name = "tensorrt"

    def __init__(self):
        self._compat: TrtCompat | None = None
        self._import_error: str | None = None

    # -- availability and identity ----------------------------------------------------
    def unavailable_reason(self) -> str | None:
        reason = tensorrt_unavailable_reason(MODULES[self.name])
        if reason:
            return reason
        try:
            self.compat()
        except BackendUnavailable as exc:
            return exc.reason
        return None

    def compat(self) -> TrtCompat:
        """The imported library (BackendUnavailable with the exact reason when it cannot be)."""
        if self._compat is None:
            if self._import_error:
                raise BackendUnavailable(self._import_error)
            try:
                self._compat = TrtCompat.load(self.name)
            except BackendUnavailable as exc:
                self._import_error = exc.reason
                raise
        return self._compat

    def versions(self) -> dict[str, str]:
        return {self.name: installed_version(self.name) or "missing"}

    def device(self) -> dict[str, Any]:
        return device_info()

    def resolved_typing(self, config: BuildConfig) -> str:
        return version_resolve_typing(self.name, installed_version(self.name), config.typing)

    def supports(self, plan, config: BuildConfig) -> str | None:
        version = installed_version(self.name)
        typing = version_resolve_typing(self.name, version, config.typing)
        reason = version_typing_reason(self.name, version, typing)
        if reason:
            return reason
        if typing == "weak" and getattr(plan, "as_is", False):
            return "weak typing reinterprets the model's own types; as-is models need strong typing"
        if typing == "weak" and getattr(plan, "low_precision", None) == "bf16":
            try:
                compat = self.compat()
            except BackendUnavailable:
                return None
            if getattr(compat.trt.BuilderFlag, "BF16", None) is None:
                return f"{compat.label} has no BuilderFlag.BF16 for weak typing"
        return None

    def cache_parts(self, plan, config: BuildConfig) -> dict[str, Any]:
        parts = super().cache_parts(plan, config)
        parts["typing"] = self.resolved_typing(config)
        parts["glue"] = GLUE_VERSION
        return parts

    # -- building ---------------------------------------------------------------------
    def build(self, plan, config: BuildConfig, cache: ArtifactCache | None, *, rebuild: bool = False) -> Engine:
        self.require()
        return self._build_engine(plan, config, cache, rebuild=rebuild)

    def _build_engine(self, plan, config: BuildConfig, cache, *, rebuild: bool = False, probe: bool = False,
                      memory=None) -> TensorRTEngine:
        compat = self.compat()
        typing = compat.resolve_typing(config.typing)
        reason = compat.typing_reason(typing)
        if reason:
            raise BackendUnavailable(reason)
        label = f"{plan.model.label} [{plan.policy.describe()}] on {compat.label}, {typing} typing"
        if probe:
            label += " (layerwise probe)"
        timing_path = self._timing_cache_path(compat, cache)

        def build_fn(tmp_dir: Path) -> None:
            self._build_into(compat, plan, config, typing, Path(tmp_dir), probe=probe, timing_path=timing_path)

        if cache is None:
            with tempfile.TemporaryDirectory(prefix="pytest-trt-engine-") as tmp:
                start = time.perf_counter()
                build_fn(Path(tmp))
                data = (Path(tmp) / ENGINE_FILE).read_bytes()
                record = json.loads((Path(tmp) / RECORD_FILE).read_text())
            info = BuildInfo(cache_hit=False, build_seconds=time.perf_counter() - start, key="")
        else:
            parts = self.cache_parts(plan, config)
            parts["typing"] = typing
            if probe:
                parts["probe"] = "all float tensors marked as outputs"
            result = cache.get_or_build("engine-probe" if probe else "engine", parts, build_fn, rebuild=rebuild,
                                        label=label)
            data = (result.path / ENGINE_FILE).read_bytes()
            record = json.loads((result.path / RECORD_FILE).read_text())
            info = BuildInfo(cache_hit=result.cache_hit, build_seconds=result.build_seconds, key=result.key,
                             path=str(result.path), waited_seconds=result.waited_seconds)
        return TensorRTEngine(plan, config, info, backend=self, typing=typing, data=data, record=record,
                              cache=cache, memory=memory)

    def _timing_cache_path(self, compat: TrtCompat, cache) -> Path | None:
        if cache is None or compat.rtx or getattr(cache, "read_only", False):
            return None
        root = getattr(cache, "root", None)
        if root is None:
            return None
        dev = device_info()
        ident = "-".join(str(x) for x in (self.name, compat.version_string, dev.get("gpu", "nogpu"),
                                          dev.get("compute_capability", "")))
        ident = re.sub(r"[^A-Za-z0-9_.-]+", "_", ident)
        return Path(root) / TIMING_CACHE_DIR / f"{ident}.cache"

    def _build_into(self, compat: TrtCompat, plan, config: BuildConfig, typing: str, tmp_dir: Path, *,
                    probe: bool, timing_path: Path | None) -> None:
        """Build one engine into ``tmp_dir`` (``engine.plan`` + ``build.json``) or raise BuildError."""
        trt = compat.trt
        logger = get_logger(trt)
        strong = typing == "strong"
        record: dict[str, Any] = {
            "library": compat.label, "backend": self.name, "typing": typing, "probe": probe,
            "config": config.to_json(), "low_precision": getattr(plan, "low_precision", None), "notes": [],
        }
        stage = "setup"
        parser_errors = []
        start = time.perf_counter()
        with logger.capture() as messages:
            try:
                stage = "realize"
                if strong:
                    from ..realize import realize_strong

                    proto = realize_strong(plan)
                    record["parsed"] = "strongly typed realization of the plan"
                else:
                    proto = plan.model.proto
                    record["parsed"] = "original model"
                stage = "parse"
                builder = trt.Builder(logger)
                network = builder.create_network(compat.network_flags(strong))
                parser = trt.OnnxParser(network, logger)
                path = getattr(plan.model, "path", None)
                with _parse_source(proto, path, copy=not strong) as (model_bytes, model_file):
                    if model_file is not None:
                        record["parsed_from_file"] = "external data (model over the 2 GiB protobuf limit)"
                        ok = parser.parse_from_file(str(model_file))
                    elif path is not None:
                        ok = parser.parse(model_bytes, str(path))
                    else:
                        ok = parser.parse(model_bytes)
                if not ok:
                    parser_errors = compat.parser_errors(parser)
                    raise _Failure("the ONNX parser rejected the model")
                stage = "network"
                if strong:
                    from ..network_rule import LOWER

                    mismatches = check_network_dtypes(network, plan, compat)
                    record["network_mismatches"] = [m.to_json() for m in mismatches]
                    record["network_nodes"] = network_node_dtypes(network, plan)
                    lowered = [m for m in mismatches if m.verdict == LOWER]
                    if lowered:
                        raise LoweredPrecisionError(lowered_message(
                            f"{compat.label} build of {plan.model.label} [{plan.policy.describe()}]", lowered),
                            lowered, record["network_nodes"])
                else:
                    from ..realize import weak_hints

                    applied = apply_weak_hints(compat, network, weak_hints(plan), plan)
                    record["weak_hints"] = applied.to_json()
                if probe:
                    record["probe_outputs"] = _mark_float_outputs(network, _float_tensor_names(plan))
                    record["unfused_debug_tensors"] = False
                else:
                    record["unfused_debug_tensors"] = (compat.has_unfused_debug_tensors()
                                                       and compat.mark_unfused_debug(network))
                stage = "config"
                timing = _read_timing_cache(timing_path)
                cfg, notes = compat.configure(
                    builder, network, typing=typing, low_precision=getattr(plan, "low_precision", None),
                    tf32=config.tf32, profiles=config.profiles, workspace_bytes=config.workspace_bytes,
                    builder_optimization_level=config.builder_optimization_level, timing_cache=timing,
                )
                record["notes"].extend(notes)
                stage = "build"
                mem = builder.build_serialized_network(network, cfg)
                if mem is None:
                    raise _Failure("build_serialized_network returned None")
                with open(tmp_dir / ENGINE_FILE, "wb") as f:
                    f.write(compat.host_memory_bytes(mem))
                if timing_path is not None:
                    _save_timing_cache(cfg, timing_path)
            except (BackendUnavailable, BuildError):
                raise
            except Exception as exc:  # _Failure, TensorRT's own exceptions, realize errors
                from ..errors import PytestTrtError

                if isinstance(exc, PytestTrtError) and stage == "realize":
                    raise
                raise BuildError(_build_error_message(
                    compat, plan, config, typing, stage, messages, parser_errors, exc, probe=probe)) from exc
        record["build_seconds"] = round(time.perf_counter() - start, 3)
        record["warnings"] = [m.message for m in messages if m.severity == "warning"][:50]
        (tmp_dir / RECORD_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))


#: Serialized protobuf messages cannot exceed 2 GiB; above this size a model is written with its
#: weights as external data and parsed with ``OnnxParser.parse_from_file`` (in every version of
#: the trt_api matrix), which reads the data file next to the model.
EXTERNAL_DATA_THRESHOLD = (1 << 31) - (64 << 20)


@contextlib.contextmanager
def _parse_source(proto, path, *, copy: bool):
    """``(bytes, None)`` for a model under the protobuf limit, else ``(None, model file)`` with the
    weights written as external data into a temporary directory (removed afterwards).

    ``copy``: the proto is the user's model (weak typing parses the original), which
    ``onnx.save_model(save_as_external_data=True)`` would modify: write a copy.
    """
    size = proto.ByteSize()
    if size <= EXTERNAL_DATA_THRESHOLD:
        yield proto.SerializeToString(), None
        return
    import onnx

    with tempfile.TemporaryDirectory(prefix="pytest-trt-parse-") as tmp:
        target = proto
        if copy:
            target = onnx.ModelProto()
            target.CopyFrom(proto)
        model_file = Path(tmp) / "model.onnx"
        onnx.save_model(target, str(model_file), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=1024)
        yield None, model_file


class TensorRTRTXBackend(TensorRTBackend):
    """TensorRT-RTX (strongly typed only). Engines are JIT-compiled for the GPU they run on.

    Measured on an H200 (TENSORRT_RTX.md): builds succeed, deserialization fails on compute
    capability 9.0; that failure is :class:`BackendUnavailable`, the build stays cached.
    """

    name = "tensorrt-rtx"


class _Failure(Exception):
    """A TensorRT call reported failure without raising."""


def _read_timing_cache(path: Path | None) -> bytes | None:
    if path is None or not path.exists():
        return None
    from filelock import FileLock

    with FileLock(str(path) + ".lock"):
        try:
            return path.read_bytes()
        except OSError:
            return None


def _save_timing_cache(cfg, path: Path) -> None:
    """Merge this build's timing cache into the shared file (Polygraphy 0.53
    ``EngineBytesFromNetwork``: combine with the file's cache, ``ignore_mismatch=True``)."""
    from filelock import FileLock

    try:
        cache = cfg.get_timing_cache()
        if cache is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if path.exists():
                with contextlib.suppress(Exception):
                    previous = cfg.create_timing_cache(path.read_bytes())
                    cache.combine(previous, True)
            data = TrtCompat.host_memory_bytes(cache.serialize())
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
    except Exception as exc:  # a timing cache is an optimization: never fail a build for it
        from .trt_compat import log

        log.warning("timing cache not saved to %s: %s", path, exc)


def _build_error_message(compat: TrtCompat, plan, config: BuildConfig, typing: str, stage: str, messages,
                         parser_errors, exc: Exception, *, probe: bool) -> str:
    errors = [m for m in messages if m.severity in ("error", "internal_error")]
    lines = [(pe.line() for pe in parser_errors), (m.line() for m in errors)]
    lines = [line.replace("\n", "\n    ") for group in lines for line in group]
    node = next((pe.node_name for pe in parser_errors if pe.node_name), None)
    if node is None:
        node = node_from_log([pe.desc for pe in parser_errors] + [m.message for m in errors], plan.nodes)
    what = {"parse": "parsing the ONNX model", "network": "preparing the network", "config": "configuring the builder",
            "build": "building the engine", "realize": "realizing the plan"}.get(stage, stage)
    head = (f"TensorRT build failed for {plan.model.label} [{plan.policy.describe()}] while {what}"
            + (f", at node {node!r}" if node else "") + (" (layerwise probe build)" if probe else ""))
    cfg = (f"build config: {compat.label}, {typing} typing"
           + (f", low precision {plan.low_precision}" if getattr(plan, "low_precision", None) else "")
           + f", tf32 {'on' if config.tf32 else 'off'}"
           + (f", {len(config.profiles)} profile(s)" if config.profiles else "")
           + (f", workspace {config.workspace_bytes} bytes" if config.workspace_bytes else "")
           + (f", optimization level {config.builder_optimization_level}"
              if config.builder_optimization_level is not None else ""))
    body = [head, cfg]
    if not isinstance(exc, _Failure):
        body.append(f"{type(exc).__name__}: {exc}")
    else:
        body.append(str(exc))
    if lines:
        body.append("TensorRT said:")
        body.extend(f"  {line}" for line in lines[:20])
        if len(lines) > 20:
            body.append(f"  ... {len(lines) - 20} more")
    else:
        body.append("TensorRT logged no error (run with -o log_cli=true --log-cli-level=INFO to see its log)")
    body.append("Nothing was cached for this build.")
    return "\n".join(body)



__all__ = [
    "DtypeMismatch",
    "LoweredPrecisionError",
    "TensorRTBackend",
    "TensorRTEngine",
    "TensorRTRTXBackend",
    "WeakHintResult",
    "apply_weak_hints",
    "check_network_dtypes",
    "device_info",
    "network_node_dtypes",
    "LIBRARY_NAMES",
]
