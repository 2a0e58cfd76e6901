"""The one place that knows how TensorRT 10.x, TensorRT 11.x and TensorRT-RTX differ.

Everything version-dependent that pytest-trt's TensorRT glue relies on lives here (the
:class:`TrtCompat` adapter over one imported module) and in the two modules split off it,
:mod:`~pytest_trt.backends.tensorrt.versions` (versions and data types without TensorRT's API)
and :mod:`~pytest_trt.backends.tensorrt.logger` (the capturing logger), each fact with the
source it was read from; every name of those is re-exported here. The rest of the glue
(``backend.py`` and the other modules of ``backends/tensorrt/``) asks these modules and never tests versions
itself. The inspector's JSON is parsed by :mod:`pytest_trt.layers.inspector`, which needs no
TensorRT at all.

What is verified where (keep this list honest):

* **Full TensorRT (10.x, 11.x): nothing has RUN against it yet** (it cannot be installed
  on the development machines). Its facts below were read from NVIDIA's sources and
  documents; the unit tests exercise the glue against ``tests/unit/fake_tensorrt.py`` (a
  fake), and ``tests/gpu/`` is where a GPU runner with TensorRT has to confirm them.
* **The API surface of every supported version IS checked** against the real Python
  bindings (10.0.1, 10.8.0.43, 10.12.0.36, 10.13.3.9, 10.16.1.11, 11.0.0.114, 11.4.0.106,
  TensorRT-RTX 1.7.1.116), imported on CPU against stub libraries by the ``trt_api`` tier
  (``tests/trt_api``): every member this module, ``backend.py`` and ``layers/report.py`` use
  exists with a compatible call, or the capability check in :data:`CAPABILITIES` that
  guards it says False on that version.
* **TensorRT-RTX 1.7.1.116, H200 (compute capability 9.0), driver 580, 2026-11-22: this
  glue ran** (wheels carried to a GPU machine; ``tests/gpu`` plus a probe script). Seen
  working: import and version detection, capability detection (``BuilderFlag`` has TF32
  but no FP16/BF16; ``NetworkDefinitionCreationFlag`` only STRONGLY_TYPED; no
  ``ILayer.precision``; ``ILayer.metadata``, ``IDebugListener`` and
  ``mark_unfused_tensors_as_debug_tensors`` present), the ``ILogger`` subclass, parsing
  the strongly typed realization, :meth:`TrtCompat.configure`, ``build_serialized_network``
  to bytes, :func:`~pytest_trt.backends.tensorrt.backend.check_network_dtypes` (no mismatch on
  decomposed and ``LayerNormalization`` LayerNorm models; every node layer carries
  ``[ONNX Layer: <node>]``; ONNX ``Constant`` nodes become CONSTANT layers named after
  their output, with empty metadata, like ``ONNXTRT_Broadcast*`` helpers), caching, the
  parser-error -> BuildError path, and the compute-capability-9.0 deserialization
  failure -> BackendUnavailable. Not exercisable there: anything after deserialization
  (inspector JSON, running, debug tensors). Earlier RTX measurements:
  ``shared/TENSORRT_RTX.md``.

Sources (NVIDIA/TensorRT repository, read at the release branches named):

* ``python/src/infer/pyCore.cpp`` / ``pyGraph.cpp`` / ``pyFoundationalTypes.cpp`` /
  ``python/src/parsers/pyOnnx.cpp`` on ``release/10.0``, ``release/10.12`` and ``main``
  (= TensorRT 11.1): which Python members exist in which version.
* TensorRT 11.0 migration guide, docs.nvidia.com/deeplearning/tensorrt/11.0.0/api/
  migration/tensorrt-10x-to-11x.html ("TensorRT 11.x removes all weak typing APIs") and
  .../tensorrt-10x-to-11x-IEngineInspector.html (``Bindings`` -> ``I/O Tensors``; the
  ``Format/Datatype`` field is split).
* ``tools/experimental/trt-engine-explorer/trex/parser.py`` and ``activations.py``
  (``release/10.16``): Metadata separators and the data-type strings of the inspector.
* onnx/onnx-tensorrt ``onnx2trt_utils.cpp`` ``processMetadata``: the
  ``[ONNX Layer: <node> | <caller> (<function>) ...]`` format of ``ILayer.metadata``.

Import of this module never imports TensorRT: functions take the imported module.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from ...layers.inspector import (
    FLOAT_PRECISIONS,
    METADATA_SEPARATORS,
    ONNX_LAYER_PREFIX,
    dtype_from_text,
    inspector_io_tensors,
    inspector_schema,
    split_tensor_entry,
)
from .logger import SEVERITIES, LogRecord, get_logger, log
from .versions import (
    LIBRARY_NAMES,
    MODULES,
    STRONG_TYPING_MIN,
    TRT_DTYPE_NAMES,
    UNFUSED_DEBUG_MIN,
    dtype_name,
    enum_member,
    import_module,
    installed_version,
    is_rtx_module,
    parse_version,
    trt_dtype,
    version_resolve_typing,
    version_typing_reason,
)

#: This module's own names and, re-exported, the facts of the modules it was split into
#: (``versions``, ``logger``, ``pytest_trt.layers.inspector``): every name callers imported
#: from here before still imports.
__all__ = [
    "CAPABILITIES", "FLOAT_PRECISIONS", "LIBRARY_NAMES", "METADATA_SEPARATORS", "MODULES", "ONNX_LAYER_PREFIX",
    "SEVERITIES", "STRONG_TYPING_MIN", "TRT_DTYPE_NAMES", "UNFUSED_DEBUG_MIN", "LogRecord", "ParserErrorInfo",
    "TrtCompat", "default_profile", "dtype_from_text", "dtype_name", "enum_member", "get_logger", "has_debug_tensors",
    "has_weak_typing", "import_module", "inspector_io_tensors", "inspector_schema", "installed_version",
    "is_rtx_module", "log", "parse_version", "split_tensor_entry", "trt_dtype", "version_resolve_typing",
    "version_typing_reason",
]


# --------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------
@dataclass
class ParserErrorInfo:
    desc: str
    node_name: str | None = None
    node_operator: str | None = None
    code: str | None = None

    def line(self) -> str:
        where = f" at node {self.node_name!r}" if self.node_name else ""
        op = f" ({self.node_operator})" if self.node_operator else ""
        return f"ONNX parser{where}{op}: {self.desc}"


@dataclass
class TrtCompat:
    """One imported TensorRT (or TensorRT-RTX) module and what it can do.

    ``TrtCompat(trt_module)``; ``TrtCompat.load("tensorrt")`` imports it.
    """

    trt: Any
    rtx: bool = field(init=False)
    version: tuple[int, ...] = field(init=False)

    def __post_init__(self):
        self.rtx = is_rtx_module(self.trt)
        self.version = parse_version(getattr(self.trt, "__version__", ""))

    @classmethod
    def load(cls, backend: str) -> TrtCompat:
        return cls(import_module(backend))

    # -- identity ---------------------------------------------------------------------
    @property
    def backend_name(self) -> str:
        return "tensorrt-rtx" if self.rtx else "tensorrt"

    @property
    def version_string(self) -> str:
        return str(getattr(self.trt, "__version__", "unknown"))

    @property
    def label(self) -> str:
        return f"{'TensorRT-RTX' if self.rtx else 'TensorRT'} {self.version_string}"

    @property
    def major(self) -> int:
        return self.version[0] if self.version else 0

    # -- capabilities -----------------------------------------------------------------
    def has_strong_typing(self) -> bool:
        """STRONGLY_TYPED exists (10.0+), or strong typing is the only mode (11.x, RTX)."""
        if self.rtx or self.major >= 11:
            return True
        return enum_member(self.trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED") is not None

    def has_weak_typing(self) -> bool:
        """Per-layer precision hints: TensorRT <= 10.x only.

        11.x removed them (migration guide: "removes all weak typing APIs"; main
        pyGraph.cpp binds no ``ILayer.precision``), TensorRT-RTX never had them
        (TENSORRT_RTX.md: no ``ILayer.precision``, no ``BuilderFlag.FP16``). The version
        is checked, not only attributes: Polygraphy 0.53 ``CreateConfig`` notes that "some
        TRT 11 builds still provide" deprecated flags.
        """
        if self.rtx or self.major >= 11:
            return False
        flags = self.trt.BuilderFlag
        return enum_member(flags, "OBEY_PRECISION_CONSTRAINTS") is not None and enum_member(flags, "FP16") is not None

    def weak_typing_reason(self) -> str | None:
        """Why weak typing cannot be used here (None when it can)."""
        if self.rtx:
            return "TensorRT-RTX is strongly typed only"
        if self.major >= 11:
            return f"TensorRT {self.major} has no weak typing (removed in 11.0; use strong typing)"
        if not self.has_weak_typing():
            return f"{self.label} lacks the weak-typing builder flags"
        return None

    def has_unfused_debug_tensors(self) -> bool:
        """``mark_unfused_tensors_as_debug_tensors`` (10.12+, 11.x, RTX 1.7.1)."""
        network_cls = getattr(self.trt, "INetworkDefinition", None)
        if network_cls is not None and hasattr(network_cls, "mark_unfused_tensors_as_debug_tensors"):
            return True
        if network_cls is None:
            return self.rtx or self.version >= UNFUSED_DEBUG_MIN
        return False

    def has_user_initializers(self) -> bool:
        """``OnnxParser.load_model_proto`` / ``load_initializer`` / ``parse_model_proto``: weights handed to the
        parser by pointer instead of read from a file (TensorRT 10.13+ release notes, TensorRT-RTX 1.7.1)."""
        parser_cls = getattr(self.trt, "OnnxParser", None)
        return parser_cls is not None and all(
            hasattr(parser_cls, m) for m in ("load_model_proto", "load_initializer", "parse_model_proto"))

    def has_debug_listener(self) -> bool:
        """``IDebugListener`` + ``IExecutionContext.set_debug_listener`` (10.0+, pyCore.cpp)."""
        return hasattr(self.trt, "IDebugListener")

    def has_unfused_debug_state(self) -> bool:
        """``IExecutionContext.unfused_tensors_debug_state``: the run-time switch for tensors
        marked by ``mark_unfused_tensors_as_debug_tensors`` (off by default), separate from
        ``set_all_tensors_debug_state``. Real bindings (trt_api tier): absent in 10.0.1 and
        10.8.0.43, present in 10.12.0.36 ... 11.4.0.106 and TensorRT-RTX 1.7.1.116."""
        ctx = getattr(self.trt, "IExecutionContext", None)
        return ctx is not None and hasattr(ctx, "unfused_tensors_debug_state")

    def has_output_allocator(self) -> bool:
        """``IOutputAllocator`` + ``IExecutionContext.set_output_allocator`` (every version of the
        trt_api matrix): data-dependent output shapes."""
        ctx = getattr(self.trt, "IExecutionContext", None)
        return hasattr(self.trt, "IOutputAllocator") and ctx is not None and hasattr(ctx, "set_output_allocator")

    def set_debug_state(self, context, on: bool) -> list[str]:
        """Turn debug-tensor emission on or off; returns the switches set.

        Both switches: ``set_all_tensors_debug_state`` covers tensors marked with
        ``mark_debug``; tensors marked by ``mark_unfused_tensors_as_debug_tensors`` are only
        emitted with ``unfused_tensors_debug_state`` on ("default is off"; trtexec
        ``--dumpDebugTensors``-style runs set it). Where the property is absent (10.0 ... 10.11)
        so is the marking call, and only the first switch exists.
        """
        done = []
        context.set_all_tensors_debug_state(bool(on))
        done.append("set_all_tensors_debug_state")
        if self.has_unfused_debug_state():
            context.unfused_tensors_debug_state = bool(on)
            done.append("unfused_tensors_debug_state")
        return done

    def resolve_typing(self, requested: str) -> str:
        """``auto`` -> ``strong`` where the library has it, else ``weak``."""
        if requested == "auto":
            if self.has_strong_typing() and (self.rtx or self.major >= 11 or self.version >= STRONG_TYPING_MIN):
                return "strong"
            return "weak"
        return requested

    def typing_reason(self, typing: str) -> str | None:
        """None when ``typing`` (resolved) can be built here, else why not."""
        if typing == "weak":
            return self.weak_typing_reason()
        if typing == "strong" and not self.has_strong_typing():
            return f"{self.label} has no strong typing (needs TensorRT >= 10.0)"
        return None

    # -- network ----------------------------------------------------------------------
    def network_flags(self, strong: bool) -> int:
        """Creation flags. 10.x: ``1 << STRONGLY_TYPED`` when strong (EXPLICIT_BATCH is
        ignored since 10.0: release/10.0 pyCoreDoc.h). 11.x: 0 (main pyCore.cpp marks
        STRONGLY_TYPED "Deprecated: always enabled"). RTX: the flag when present
        (Polygraphy printed ``Flags [STRONGLY_TYPED]``, TENSORRT_RTX.md)."""
        if not strong:
            return 0
        if not self.rtx and self.major >= 11:
            return 0
        flag = enum_member(self.trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED")
        return 0 if flag is None else 1 << int(flag)

    def mark_unfused_debug(self, network) -> bool:
        """Mark unfused tensors as debug tensors; per the 10.12 docstring (pyGraphDoc.h)
        this does not prevent fusion, unlike ``mark_debug``. False when unavailable."""
        fn = getattr(network, "mark_unfused_tensors_as_debug_tensors", None)
        if fn is None:
            return False
        try:
            return bool(fn())
        except Exception as exc:  # pragma: no cover - defensive: never fail a build for this
            log.warning("mark_unfused_tensors_as_debug_tensors failed: %s", exc)
            return False

    def parser_errors(self, parser) -> list[ParserErrorInfo]:
        """``OnnxParser.get_error(i)``: ``desc()``, ``node_name()`` (9.3+/10.0),
        ``node_operator()`` (pyOnnx.cpp)."""
        out = []
        for i in range(int(getattr(parser, "num_errors", 0))):
            err = parser.get_error(i)

            def call(name, err=err):
                fn = getattr(err, name, None)
                try:
                    value = fn() if fn is not None else None
                except Exception:  # pragma: no cover - defensive
                    value = None
                return str(value) if value not in (None, "") else None

            out.append(ParserErrorInfo(desc=call("desc") or str(err), node_name=call("node_name"),
                                       node_operator=call("node_operator"), code=call("code")))
        return out

    def layer_output_dtypes(self, layer) -> list[tuple[str, str | None]]:
        out = []
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is None:
                continue
            out.append((str(t.name), dtype_name(t.dtype)))
        return out

    def network_as_inspector(self, network) -> dict:
        """A TensorRT *network* (before building) in the inspector's JSON shape.

        ``ILayer.metadata`` is set by the ONNX parser to ``[ONNX Layer: <node>]``
        (TENSORRT_RTX.md, measured on RTX 1.7.1; onnx-tensorrt ``processMetadata``); layer
        output dtypes of a strongly typed network follow the graph exactly (ditto).
        """
        layers = []
        for i in range(int(network.num_layers)):
            layer = network.get_layer(i)
            layers.append({
                "Name": str(layer.name),
                "LayerType": str(getattr(getattr(layer, "type", None), "name", getattr(layer, "type", ""))),
                "Metadata": str(getattr(layer, "metadata", "") or ""),
                "Inputs": [
                    {"Name": str(t.name), "DataType": dtype_name(t.dtype)}
                    for t in (layer.get_input(k) for k in range(int(layer.num_inputs))) if t is not None
                ],
                "Outputs": [{"Name": n, "DataType": d} for n, d in self.layer_output_dtypes(layer)],
            })
        return {"Layers": layers, "_pytest_trt_source": "network"}

    # -- builder config -----------------------------------------------------------------
    def set_flag(self, config, name: str, on: bool = True) -> bool:
        flag = enum_member(self.trt.BuilderFlag, name)
        if flag is None:
            return False
        if on:
            config.set_flag(flag)
        else:
            config.clear_flag(flag)
        return True

    def configure(self, builder, network, *, typing: str, low_precision: str | None, tf32: bool,
                  profiles: tuple = (), workspace_bytes: int | None = None,
                  builder_optimization_level: int | None = None, timing_cache: bytes | None = None):
        """Create the ``IBuilderConfig``; returns ``(config, notes)``.

        * ``profiling_verbosity = DETAILED`` always (layer info needs it; Polygraphy 0.53
          ``_CreateConfigCommon`` sets the same default).
        * TF32 cleared unless asked for (Polygraphy ``CreateConfig``: "TF32 is on by
          default"; TENSORRT_RTX.md: Polygraphy's RTX config printed ``Flags [TF32, ...]``).
        * weak typing: ``FP16``/``BF16`` per the plan's low precision plus
          ``OBEY_PRECISION_CONSTRAINTS`` (TensorRT <= 10.x; Polygraphy
          ``precision_constraints="obey"`` sets the same flag).
        * optimization profiles: ``builder.create_optimization_profile()``,
          ``profile.set_shape(name, min, opt, max)``, ``config.add_optimization_profile``
          (pyCore.cpp 10.0 and main). Dynamic inputs without a profile get 1 for every
          dynamic dim, like Polygraphy's ``Profile.fill_defaults`` (DEFAULT_SHAPE_VALUE).
        * timing cache: ``create_timing_cache(bytes)`` + ``set_timing_cache(cache,
          ignore_mismatch=False)`` (pyCore.cpp). TensorRT-RTX deprecates the timing-cache
          calls (main pyCore.cpp ``deprecateMemberInTrtRtxOnly``), so RTX builds skip it.
        """
        trt = self.trt
        notes: list[str] = []
        config = builder.create_builder_config()
        if config is None:
            raise RuntimeError("builder.create_builder_config() returned None")
        verbosity = enum_member(trt.ProfilingVerbosity, "DETAILED") if hasattr(trt, "ProfilingVerbosity") else None
        if verbosity is not None:
            config.profiling_verbosity = verbosity
        if tf32:
            self.set_flag(config, "TF32", True)
        else:
            with contextlib.suppress(Exception):
                self.set_flag(config, "TF32", False)
        if typing == "weak":
            if low_precision == "fp16":
                if not self.set_flag(config, "FP16"):
                    raise RuntimeError(f"{self.label} has no BuilderFlag.FP16")
            elif low_precision == "bf16":
                if not self.set_flag(config, "BF16"):
                    raise RuntimeError(f"{self.label} has no BuilderFlag.BF16")
            if not self.set_flag(config, "OBEY_PRECISION_CONSTRAINTS"):
                raise RuntimeError(f"{self.label} has no BuilderFlag.OBEY_PRECISION_CONSTRAINTS")
        if workspace_bytes is not None:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_bytes))
        if builder_optimization_level is not None:
            config.builder_optimization_level = int(builder_optimization_level)
        notes.extend(self._add_profiles(builder, network, config, profiles))
        if not self.rtx and hasattr(config, "create_timing_cache"):
            cache = None
            if timing_cache:
                try:
                    cache = config.create_timing_cache(timing_cache)
                except Exception as exc:  # a corrupt or foreign cache file: start empty
                    notes.append(f"timing cache not loaded ({exc}); starting an empty one")
                    cache = None
            if cache is None:
                cache = config.create_timing_cache(b"")
            config.set_timing_cache(cache, False)
        return config, notes

    def _add_profiles(self, builder, network, config, profiles) -> list[str]:
        """Add the optimization profiles (``profiles``, else one fixing every dynamic dim to 1); returns notes."""
        notes: list[str] = []
        inputs = [network.get_input(i) for i in range(int(network.num_inputs))]
        dynamic = {t.name: tuple(int(d) for d in t.shape) for t in inputs if any(int(d) < 0 for d in t.shape)}
        given = list(profiles or ())
        if not given and not dynamic and not any(getattr(t, "is_shape_tensor", False) for t in inputs):
            return notes
        if not given:
            spec, note = default_profile(dynamic)
            given = [spec]
            notes.append(note)
        for spec in given:
            profile = builder.create_optimization_profile()
            notes.extend(self._fill_profile(profile, inputs, spec, dynamic))
            config.add_optimization_profile(profile)
        return notes

    @staticmethod
    def _fill_profile(profile, inputs, spec: dict, dynamic: dict[str, tuple[int, ...]]) -> list[str]:
        """Set one profile's shapes (and shape-tensor values) from ``spec``; returns notes."""
        notes = []
        for t in inputs:
            if getattr(t, "is_shape_tensor", False):
                # a shape tensor: its VALUES set shapes; a profile gives min/opt/max values
                # (IOptimizationProfile.set_shape_input(input, min, opt, max), every version)
                if t.name not in spec:
                    raise ValueError(f"input {t.name!r} is a shape tensor (its values set shapes): declare "
                                     f"a profile with its min/opt/max values")
                mn, opt, mx = spec[t.name]
                profile.set_shape_input(t.name, list(mn), list(opt), list(mx))
                continue
            if t.name in spec:
                mn, opt, mx = spec[t.name]
                profile.set_shape(t.name, tuple(mn), tuple(opt), tuple(mx))
            elif t.name in dynamic:
                s = tuple(1 if d < 0 else d for d in dynamic[t.name])
                profile.set_shape(t.name, s, s, s)
                notes.append(f"input {t.name}: not in the profile, dynamic dims set to 1 ({list(s)})")
        return notes

    # -- weak-typing hints ----------------------------------------------------------------
    def set_layer_precision(self, layer, precision: str) -> None:
        """``ILayer.precision = dt`` (10.x only; deprecated in 10.12, whose DeprecationWarning is silenced)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            layer.precision = trt_dtype(self.trt, precision)

    def set_output_type(self, layer, index: int, precision: str) -> None:
        """``ILayer.set_output_type(index, dt)`` (10.x only; deprecated in 10.12)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            layer.set_output_type(index, trt_dtype(self.trt, precision))

    def skip_for_hints(self, layer) -> bool:
        """Layers whose precision is not a float compute choice (shape math, constants, casts)."""
        ltype = getattr(getattr(layer, "type", None), "name", str(getattr(layer, "type", "")))
        return str(ltype).upper().rsplit(".", 1)[-1] in {"SHAPE", "CONSTANT", "CAST", "ASSERTION", "CONDITION"}

    # -- serialized bytes ---------------------------------------------------------------
    @staticmethod
    def host_memory_bytes(mem) -> bytes:
        """``IHostMemory`` -> bytes. It exposes the buffer protocol (pyFoundationalTypes.cpp
        ``def_buffer``) and has ``nbytes`` but no ``len()`` (TENSORRT_RTX.md)."""
        if isinstance(mem, (bytes, bytearray, memoryview)):
            return bytes(mem)
        return bytes(mem)

    # -- runtime ------------------------------------------------------------------------
    def create_runtime(self):
        runtime = self.trt.Runtime(get_logger(self.trt))
        with contextlib.suppress(AttributeError):
            # Polygraphy 0.53 EngineFromBytes sets this for version-compatible engines.
            runtime.engine_host_code_allowed = True
        return runtime

    def unsupported_gpu_reason(self, messages: list[str], gpu: str = "") -> str | None:
        """The exact skip reason for TensorRT-RTX on an unsupported compute capability.

        Seen with TensorRT-RTX 1.7.1.116 on an H200 (this module's GPU probe, 2026-11-22;
        also TENSORRT_RTX.md): ``deserialize_cuda_engine`` returns None and logs "IRuntime::
        deserializeCudaEngine: Error Code 6: API Usage Error (The engine cannot run on this
        GPU, which has compute capability 9.0. Supported compute capabilities: 8.0 8.6 8.9
        12.0 12.1 >12.0. TensorRT-RTX does not support this compute capability, ...)".
        """
        for msg in messages:
            m = re.search(r"cannot run on this GPU, which has compute capability\s+(\d+(?:\.\d+)?)"
                          r"(?:\.\s*Supported compute capabilities:\s*((?:>?\d+(?:\.\d+)?\s*)+))?", msg)
            if m:
                cc = m.group(1)
                supported = " ".join((m.group(2) or "").split())
                lib = "TensorRT-RTX" if self.rtx else "TensorRT"
                on = f" ({gpu})" if gpu else ""
                tail = f"; it supports {supported}" if supported else ""
                return (f"{lib} does not support compute capability {cc}{on}{tail}. The engine was built and "
                        f"cached, but cannot be loaded on this GPU: use --trt-backend tensorrt here, or run on a "
                        f"supported GPU")
        return None

    # -- debug tensors ------------------------------------------------------------------
    def make_debug_listener(self, on_tensor):
        """An ``IDebugListener`` calling ``on_tensor(addr, location, dtype, shape, name, stream)``.

        Signature of ``process_debug_tensor`` per pyCoreDoc.h (10.0 ... main): addr,
        location (TensorLocation), type (DataType), shape (Dims), name, stream.
        """
        trt = self.trt
        # (the base is a class of the imported TensorRT module, unknown to mypy; the trt_api
        # tier reads `class X(trt.IDebugListener)` to check the overridden virtuals' names)
        class _Listener(trt.IDebugListener):  # type: ignore[name-defined]
            def __init__(self):
                trt.IDebugListener.__init__(self)

            def process_debug_tensor(self, addr, location, type, shape, name, stream):  # noqa: A002
                try:
                    on_tensor(addr, location, type, shape, name, stream)
                except Exception as exc:  # never let an exception cross into TensorRT
                    log.warning("debug tensor %s not captured: %s", name, exc)
                return True

        return _Listener()

    def make_profiler(self, on_layer):
        """An ``IProfiler`` calling ``on_layer(layer_name, ms)`` for each ``report_layer_time``.

        ``IProfiler`` is a trampoline class with one pure virtual, ``report_layer_time(layer_name,
        ms)`` (pyCore.cpp ``PyProfiler``, 10.0 ... main; the trt_api tier checks the names in every
        version). TensorRT calls it once per engine layer, named like the engine inspector's layers,
        after ``IExecutionContext.report_to_profiler()`` (or during the enqueue while
        ``enqueue_emits_profile`` is on).
        """
        trt = self.trt

        class _Profiler(trt.IProfiler):  # type: ignore[name-defined]  # as _Listener above
            def __init__(self):
                trt.IProfiler.__init__(self)

            def report_layer_time(self, layer_name, ms):
                try:
                    on_layer(str(layer_name), float(ms))
                except Exception as exc:  # never let an exception cross into TensorRT
                    log.warning("layer time of %s not recorded: %s", layer_name, exc)

        return _Profiler()

    def has_device_memory_size_v2(self) -> bool:
        """``ICudaEngine.device_memory_size_v2``: 10.8.0.43 ... 11.4 and RTX; absent in 10.0.1 (trt_api tier)."""
        return hasattr(getattr(self.trt, "ICudaEngine", None), "device_memory_size_v2")

    def has_device_memory_size(self) -> bool:
        """``ICudaEngine.device_memory_size``: 10.x only; removed in 11.0 and absent in RTX (trt_api tier)."""
        return hasattr(getattr(self.trt, "ICudaEngine", None), "device_memory_size")

    def engine_device_memory(self, engine) -> int:
        """Device memory an execution context of ``engine`` needs (activations), in bytes."""
        if self.has_device_memory_size_v2():
            return int(engine.device_memory_size_v2)
        if self.has_device_memory_size():
            return int(engine.device_memory_size)
        return 0

    def make_output_allocator(self, memory):
        """An ``IOutputAllocator`` for outputs whose shape is known only after execution.

        Methods per the real bindings' class docstring (10.0.1 ... 11.4, RTX 1.7.1; checked by
        the trt_api tier): ``reallocate_output(tensor_name, memory, size, alignment)``,
        ``reallocate_output_async(tensor_name, memory, size, alignment, stream)`` return the
        device address to write to; ``notify_shape(tensor_name, shape)`` gives the final
        shape. ``memory`` here is the runner's device-memory helper (``CudaMemory``).
        """
        trt = self.trt
        device = memory

        class _OutputAllocator(trt.IOutputAllocator):  # type: ignore[name-defined]  # as _Listener above
            def __init__(self):
                trt.IOutputAllocator.__init__(self)
                self.buffers: dict[str, tuple[int, int]] = {}
                self.shapes: dict[str, tuple[int, ...]] = {}

            def reallocate_output(self, tensor_name, memory, size, alignment):
                old = self.buffers.get(tensor_name)
                if old is not None and old[1] >= size:
                    return old[0]
                if old is not None:
                    device.free(old[0])
                ptr = device.malloc(max(int(size), 1))
                self.buffers[tensor_name] = (ptr, int(size))
                return ptr

            def reallocate_output_async(self, tensor_name, memory, size, alignment, stream):
                return self.reallocate_output(tensor_name, memory, size, alignment)

            def notify_shape(self, tensor_name, shape):
                self.shapes[tensor_name] = tuple(int(d) for d in shape)

            def release(self):
                for ptr, _ in self.buffers.values():
                    with contextlib.suppress(Exception):
                        device.free(ptr)
                self.buffers.clear()

        return _OutputAllocator()

    def is_host_location(self, location) -> bool:
        host = enum_member(self.trt.TensorLocation, "HOST") if hasattr(self.trt, "TensorLocation") else None
        return host is not None and location == host


def default_profile(dynamic: dict[str, tuple[int, ...]]) -> tuple[dict[str, tuple], str]:
    """The profile used when none is given: every dynamic dim set to 1 (like Polygraphy's
    ``Profile.fill_defaults``), and the note that says so."""
    filled = {name: tuple(1 if d < 0 else d for d in shape) for name, shape in dynamic.items()}
    note = ("no optimization profile given: dynamic dims set to 1 ("
            + ", ".join(f"{n}: {list(s)}" for n, s in filled.items())
            + "); declare shapes or a profile to test other sizes")
    return {name: (s, s, s) for name, s in filled.items()}, note


#: The capability checks the trt_api tier evaluates on every real version (tests/trt_api): a
#: TensorRT member the adapter uses that a version lacks must be guarded by one of these
#: returning False there.
CAPABILITIES = ("has_strong_typing", "has_weak_typing", "has_unfused_debug_tensors", "has_debug_listener",
                "has_unfused_debug_state", "has_output_allocator", "has_device_memory_size_v2",
                "has_device_memory_size")


def has_weak_typing(trt) -> bool:
    """Shorthand for ``TrtCompat(trt).has_weak_typing()``."""
    return TrtCompat(trt).has_weak_typing()


def has_debug_tensors(trt) -> bool:
    """Shorthand for ``TrtCompat(trt).has_unfused_debug_tensors()`` (debug tensors that keep fusion)."""
    return TrtCompat(trt).has_unfused_debug_tensors()
