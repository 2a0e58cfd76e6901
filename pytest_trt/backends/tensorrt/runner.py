"""Running a deserialized TensorRT engine: device memory, profiles, ``execute_async_v3``.

The last step of the ``tensorrt`` backends' pipeline: feeds are converted to the engine's
input types (BF16 through the realization's own rounding), the optimization profile that
covers them is made active, outputs (data-dependent shapes through an ``IOutputAllocator``)
are copied back and returned as numpy arrays, BF16 as float32. Device memory comes from
Polygraphy's ctypes CUDA wrapper (``polygraphy.cuda``), imported on first use. Debug tensors
(:class:`DebugCollector`) are captured in the same run when a listener is given.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.lazy import lazy_import
from ...errors import BackendUnavailable, BuildError, InputError
from ...layers.inspector import FLOAT_PRECISIONS
from ...model.weights import bf16_bits_to_fp32, to_bf16_bits
from .compat import TrtCompat, dtype_name, get_logger

if TYPE_CHECKING:  # pragma: no cover
    from polygraphy import cuda
else:
    cuda = lazy_import("polygraphy.cuda")

__all__ = ["NUMPY_DTYPES", "CudaMemory", "DebugCollector", "bf16_to_f32", "execute", "f32_to_bf16",
           "np_dtype", "select_profile", "time_runs", "to_float32"]


class CudaMemory:
    """Device memory through Polygraphy's ctypes CUDA wrapper (``polygraphy.cuda``)."""

    def __init__(self) -> None:
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


#: engine tensor type -> the numpy dtype the runner reads it as (BF16 as its 16-bit pattern)
NUMPY_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "uint16", "int32": "int32", "int64": "int64",
                "int8": "int8", "uint8": "uint8", "bool": "bool", "fp64": "float64"}


def np_dtype(name: str | None) -> np.dtype:
    """The numpy dtype of an engine tensor type; InputError for types the runner cannot read."""
    if name not in NUMPY_DTYPES:
        raise InputError(f"engine tensors of type {name} are not supported by pytest-trt's runner")
    return np.dtype(NUMPY_DTYPES[name])


def bf16_to_f32(u16: np.ndarray) -> np.ndarray:
    """BF16 bits -> FP32: the one conversion (:func:`pytest_trt.realize.strong.bf16_bits_to_fp32`)."""
    return bf16_bits_to_fp32(u16)


def f32_to_bf16(f32: np.ndarray) -> np.ndarray:
    """FP32 feeds -> BF16 bits for a BF16 engine input: the realization's conversion (round to nearest
    even, NaN stays NaN, finite values beyond the BF16 range saturate; :func:`~pytest_trt.realize.strong.
    to_bf16_bits`), so a feed is rounded exactly as the realization rounds initializers."""
    return to_bf16_bits(f32)[0]


def to_float32(arr: Any, dtype: str | None) -> np.ndarray:
    """An engine value as float32 (``dtype`` ``bf16``: from its bit pattern)."""
    if dtype == "bf16":
        return bf16_to_f32(arr)
    return np.asarray(arr, dtype=np.float32)


def _fits(shape, mn, mx) -> bool:
    return len(shape) == len(mn) == len(mx) and all(lo <= d <= hi for d, lo, hi in zip(shape, mn, mx, strict=True))


def _profile_fits(engine, index: int, inputs, feeds, shapes) -> tuple[bool, str]:
    """Whether profile ``index`` covers every feed (shapes, and shape tensors' values); its ranges as text."""
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
    return fits, ", ".join(text)


def select_profile(engine, context, inputs, feeds, stream, label: str, state: dict) -> int:
    """Make active the first optimization profile whose [min, max] covers every feed's shape.

    Polygraphy 0.53 ``TrtRunner.set_profile`` uses ``set_optimization_profile_async(index,
    stream)`` too; a context starts on profile 0. ``state["profile"]`` remembers the active one.
    Feeds no profile covers are the user's declared shapes/profiles: an InputError listing them.
    """
    count = int(getattr(engine, "num_optimization_profiles", 1) or 1)
    shapes = {n: tuple(int(d) for d in np.shape(feeds[n])) for n in inputs}
    ranges = []
    for index in range(count):
        fits, text = _profile_fits(engine, index, inputs, feeds, shapes)
        ranges.append(f"profile {index} ({text})")
        if fits:
            if count > 1 and state.get("profile", 0) != index:
                if not context.set_optimization_profile_async(index, stream):
                    raise BuildError(f"{label}: set_optimization_profile_async({index}) failed")
                state["profile"] = index
            return index
    given = ", ".join(f"{n} {s}" for n, s in shapes.items())
    raise InputError(f"{label}: no optimization profile of the engine covers the feeds ({given}); the engine has "
                     f"{'; '.join(ranges)}: declare shapes or a profile that covers them")


def _profile_text(engine, name: str) -> str:
    try:
        mn, opt, mx = engine.get_tensor_profile_shape(name, 0)
        return f" (min {tuple(mn)}, opt {tuple(opt)}, max {tuple(mx)})"
    except Exception:
        return ""


class _Execution:
    """One ``execute_async_v3`` call: the buffers it allocated, freed whatever happens (:meth:`close`)."""

    def __init__(self, compat: TrtCompat, engine, context, memory, label: str) -> None:
        self.compat, self.engine, self.context, self.memory, self.label = compat, engine, context, memory, label
        self.allocated: list[int] = []
        self.keep: list[Any] = []  # host arrays whose addresses TensorRT holds until the run ends
        self.allocator: Any = None
        self.stream = memory.stream()
        #: output name -> (host array, device pointer or None, engine dtype)
        self.plans: dict[str, tuple[Any, int | None, str | None]] = {}
        #: data-dependent outputs: name -> engine dtype
        self.dynamic: dict[str, str | None] = {}

    def host_input(self, n: str, value: np.ndarray) -> np.ndarray:
        """A feed as the engine's input type (BF16 through the realization's rounding)."""
        dt = dtype_name(self.engine.get_tensor_dtype(n))
        if dt == "bf16":
            return f32_to_bf16(value)
        want = np_dtype(dt)
        if value.dtype != want and value.dtype.kind != want.kind and not (
                value.dtype.kind in "iub" and want.kind in "iub"):
            raise InputError(f"{self.label}: input {n!r} is {value.dtype}, the engine expects {want}")
        return np.ascontiguousarray(value, dtype=want)

    def bind_input(self, n: str, value: np.ndarray) -> None:
        host = self.host_input(n, value)
        engine, context = self.engine, self.context
        if not context.set_input_shape(n, tuple(int(d) for d in host.shape)):
            raise InputError(f"{self.label}: input {n!r} has shape {tuple(host.shape)}, outside the engine's "
                             f"optimization profile{_profile_text(engine, n)}; declare shapes or a profile "
                             f"that covers it")
        self.keep.append(host)
        if getattr(engine, "is_shape_inference_io", lambda _n: False)(n):
            context.set_tensor_address(n, host.ctypes.data)
            return
        ptr = self.memory.malloc(host.nbytes)
        self.allocated.append(ptr)
        self.memory.to_device(ptr, host, self.stream)
        context.set_tensor_address(n, ptr)

    def bind_output(self, n: str) -> None:
        shape = tuple(int(d) for d in self.context.get_tensor_shape(n))
        dt = dtype_name(self.engine.get_tensor_dtype(n))
        if any(d < 0 for d in shape):
            # a data-dependent shape (NonZero, ...): known only after execution
            if not self.compat.has_output_allocator():
                raise BackendUnavailable(f"{self.label}: output {n!r} has a data-dependent shape {shape} and "
                                         f"{self.compat.label} has no IOutputAllocator")
            if self.allocator is None:
                self.allocator = self.compat.make_output_allocator(self.memory)
            self.context.set_output_allocator(n, self.allocator)
            self.dynamic[n] = dt
            return
        host = np.empty(shape, dtype=np_dtype(dt))
        ptr = self.memory.malloc(host.nbytes)
        self.allocated.append(ptr)
        self.context.set_tensor_address(n, ptr)
        self.plans[n] = (host, ptr, dt)

    def run(self) -> None:
        logger = get_logger(self.compat.trt)
        with logger.capture() as messages:
            ok = self.context.execute_async_v3(self.stream)
            self.memory.sync(self.stream)
        if not ok:
            said = "; ".join(m.message for m in messages if m.severity in ("error", "internal_error"))
            raise BuildError(f"{self.label}: execute_async_v3 failed" + (f": TensorRT said: {said}" if said else ""))

    def collect(self) -> dict[str, np.ndarray]:
        memory, stream = self.memory, self.stream
        for host, ptr, _ in self.plans.values():
            assert ptr is not None  # every planned output has its buffer
            memory.to_host(host, ptr, stream)
        for n, dt in self.dynamic.items():
            allocator = self.allocator
            if n not in allocator.shapes or n not in allocator.buffers:
                raise BuildError(f"{self.label}: TensorRT gave no shape or buffer for the data-dependent output {n!r}")
            host = np.empty(allocator.shapes[n], dtype=np_dtype(dt))
            memory.to_host(host, allocator.buffers[n][0], stream)
            self.plans[n] = (host, None, dt)
        memory.sync(stream)
        return {n: (bf16_to_f32(host) if dt == "bf16" else host) for n, (host, _, dt) in self.plans.items()}

    def close(self, *, debug_was_on: bool) -> None:
        if self.allocator is not None:
            self.allocator.release()
        if debug_was_on:
            with contextlib.suppress(Exception):
                self.compat.set_debug_state(self.context, False)
        for ptr in self.allocated:
            with contextlib.suppress(Exception):
                self.memory.free(ptr)
        with contextlib.suppress(Exception):
            self.memory.destroy(self.stream)


def execute(compat: TrtCompat, engine, context, feeds: dict, memory, *, label: str, listener=None,
            state: dict | None = None) -> dict:
    """Run one inference with ``execute_async_v3``; returns every engine output by name.

    Same sequence as Polygraphy 0.53 ``TrtRunner._infer_impl``: ``set_input_shape`` and
    ``set_tensor_address`` per input, shapes of outputs from ``context.get_tensor_shape``
    once inputs are set, ``execute_async_v3(stream)``, copy back, synchronize.
    """
    trt = compat.trt
    names = [engine.get_tensor_name(i) for i in range(int(engine.num_io_tensors))]
    inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    outputs = [n for n in names if n not in inputs]
    missing = [n for n in inputs if n not in feeds]
    if missing:
        raise InputError(f"{label}: no feed for engine input(s) {', '.join(missing)} "
                         f"(given: {', '.join(sorted(feeds)) or 'none'})")
    run = _Execution(compat, engine, context, memory, label)
    try:
        select_profile(engine, context, inputs, feeds, run.stream, label, state if state is not None else {})
        for n in inputs:
            run.bind_input(n, np.asarray(feeds[n]))
        for n in outputs:
            run.bind_output(n)
        if listener is not None:
            context.set_debug_listener(listener)
            compat.set_debug_state(context, True)
        run.run()
        return run.collect()
    finally:
        run.close(debug_was_on=listener is not None)


def time_runs(compat: TrtCompat, engine, context, feeds: dict, memory, *, label: str, warmup: int, iterations: int,
              per_layer: bool = True) -> tuple[list[float], dict[str, list[float]]]:
    """Time ``iterations`` runs after ``warmup`` ones: ``(end-to-end ms per run, {layer: ms per run})``.

    Inputs are bound and copied once; each run is ``execute_async_v3`` plus a stream synchronize.
    The end-to-end runs come first, without a profiler. Then, with ``per_layer``, an ``IProfiler``
    (:meth:`TrtCompat.make_profiler`) is attached, ``enqueue_emits_profile`` is set to False (the
    enqueue stays asynchronous and only records its CUDA events) and ``report_to_profiler()`` is
    called after each run, which computes the layer times of that run and reports them
    (pyCoreDoc.h ``report_to_profiler``: "needs to be called explicitly to calculate layer timing
    for the previous inference launch"). ``context`` should be one of its own: the profiler stays
    attached to it.
    """
    names = [engine.get_tensor_name(i) for i in range(int(engine.num_io_tensors))]
    inputs = [n for n in names if engine.get_tensor_mode(n) == compat.trt.TensorIOMode.INPUT]
    missing = [n for n in inputs if n not in feeds]
    if missing:
        raise InputError(f"{label}: no feed for engine input(s) {', '.join(missing)}")
    run = _Execution(compat, engine, context, memory, label)
    per_run: list[dict[str, float]] = []
    try:
        select_profile(engine, context, inputs, feeds, run.stream, label, {})
        for n in inputs:
            run.bind_input(n, np.asarray(feeds[n]))
        for n in names:
            if n not in inputs:
                run.bind_output(n)
        for _ in range(warmup):
            run.run()
        end_to_end = []
        for _ in range(iterations):
            start = time.perf_counter()
            run.run()
            end_to_end.append((time.perf_counter() - start) * 1000.0)
        if per_layer:
            current: dict[str, float] = {}

            def on_layer(name: str, ms: float) -> None:
                current[name] = current.get(name, 0.0) + ms

            profiler = compat.make_profiler(on_layer)
            context.profiler = profiler
            context.enqueue_emits_profile = False
            for _ in range(iterations):
                current.clear()
                run.run()
                if context.report_to_profiler() is False:
                    raise BuildError(f"{label}: report_to_profiler() failed")
                per_run.append(dict(current))
    finally:
        run.close(debug_was_on=False)
    samples: dict[str, list[float]] = {}
    for times in per_run:
        for name in times:
            samples.setdefault(name, [])
    for name in samples:  # a layer not reported in a run (a branch not taken) took no time in it
        samples[name] = [times.get(name, 0.0) for times in per_run]
    return end_to_end, samples


class DebugCollector:
    """Collects debug tensors (``IDebugListener.process_debug_tensor``) as float32 arrays."""

    def __init__(self, compat: TrtCompat, memory) -> None:
        self.compat = compat
        self.memory = memory
        self.values: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}
        self.listener = compat.make_debug_listener(self._on_tensor)

    def _on_tensor(self, addr, location, dtype, shape, name, stream) -> None:
        dt = dtype_name(dtype)
        if dt not in NUMPY_DTYPES:
            self.skipped[str(name)] = f"type {dt}"
            return
        host = np.empty(tuple(int(d) for d in shape), dtype=np_dtype(dt))
        if host.nbytes:
            if self.compat.is_host_location(location):
                ctypes.memmove(host.ctypes.data, int(addr), host.nbytes)
            else:
                self.memory.sync(stream)
                self.memory.to_host(host, int(addr), None)
        self.values[str(name)] = to_float32(host, dt) if dt in FLOAT_PRECISIONS else host
