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
:mod:`pytest_trt.backends.tensorrt.compat`.

This module holds the backends and the engine object; the steps live beside it:
:mod:`~pytest_trt.backends.tensorrt.build` (one build: realize, parse, configure, build),
:mod:`~pytest_trt.backends.tensorrt.network` (the parsed network against the plan),
:mod:`~pytest_trt.backends.tensorrt.runner` (running an engine) and
:mod:`pytest_trt.layers.inspector` (the engine inspector's JSON). Names callers imported from here
before the split are re-exported.

Verified where: with full TensorRT (10.x/11.x) NOT yet run (it cannot be installed on
the development machines): unit tests cover this glue against a fake module
(``tests/unit/fake_tensorrt.py``), and ``tests/gpu/test_tensorrt_gpu.py`` is what a GPU
runner with TensorRT must pass. With TensorRT-RTX 1.7.1.116 on an H200 (2026-11-22) the
build path ran for real: strongly typed build, network dtype check, cache write and hit,
parser error -> BuildError, and deserialization on compute capability 9.0 ->
BackendUnavailable (details in :mod:`~pytest_trt.backends.tensorrt.compat`). Running,
the inspector and debug tensors have not run on any real TensorRT.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.files import tree_size
from ...core import runstate
from ...core.environment import gpus, tensorrt_unavailable_reason
from ...errors import BackendUnavailable, BuildError, UnsupportedGpu
from ...layers.network_rule import weak_typing_failures
from ...layers.report import LayerReport
from ...layers.timing import SOURCE_LABELS, LayerProfile
from ...realize.weight_sets import WeightSets
from ...reference.baseline import release_heavy_sessions
from ..base import Backend, BuildConfig, BuildInfo, Engine
from .build import ENGINE_FILE, EXTERNAL_DATA_THRESHOLD, RECORD_FILE, build_into
from .compat import (
    LIBRARY_NAMES,
    MODULES,
    TrtCompat,
    get_logger,
    installed_version,
    version_resolve_typing,
    version_typing_reason,
)
from .debug_tensors import expected_tensors, map_debug_names
from .network import (
    DtypeMismatch,
    LoweredPrecisionError,
    WeakHintResult,
    apply_weak_hints,
    check_network_dtypes,
    computed_float_tensors,
    lowered_message,
    network_node_dtypes,
    node_from_log,
)
from .runner import CudaMemory, DebugCollector, execute, time_runs, to_float32

if TYPE_CHECKING:  # pragma: no cover
    from ...cache import ArtifactCache
    from ...plan import PrecisionPlan

TIMING_CACHE_DIR = "timing-cache"
#: the cache kind and key part of layerwise builds: spelled "probe" on disk since 0.1.0 (renaming them
#: would orphan every cached layerwise build); in code and docs they are "layerwise builds", and
#: "probe" means the numeric LayerNorm probes of :mod:`pytest_trt.verify.probes`
LAYERWISE_KIND = "engine-probe"
LAYERWISE_PART = "probe"
#: Bump when the way engines are built changes, so old cache entries are not reused.
#: 2: build.json records the parsed dtype of every planned node (``network_nodes``) and
#: the verdict of the planned-vs-parsed rule per mismatch; a lowered node fails the build.
GLUE_VERSION = 2


# --------------------------------------------------------------------------------------
# Device
# --------------------------------------------------------------------------------------
def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports, from the ``nvidia-smi`` header ("CUDA Version: 13.0").

    Asked once per run (:mod:`pytest_trt.core.runstate`, table ``tensorrt.cuda_driver_version``).
    """
    table: dict[str, str | None] = runstate.current().table("tensorrt.cuda_driver_version")
    if "version" not in table:
        table["version"] = _query_cuda_driver_version()
    return table["version"]


def _query_cuda_driver_version() -> str | None:
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
        self.layer_evidence = "observed"  # layers() reads the built engine's inspector
        self._backend = backend
        self.backend = backend
        self._data = data
        self.record = record
        self._cache = cache
        self.artifact_cache = cache
        self._memory = memory
        self._compat: TrtCompat | None = None
        self._runtime = None
        self._engine = None
        self._context = None
        self._unavailable: str | None = None
        self._layerwise: TensorRTEngine | None = None
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
        """Weak typing: :func:`pytest_trt.layers.network_rule.weak_typing_failures` on this engine's
        layer report (strong typing was judged on the parsed network at build time: [])."""
        if self.typing != "weak":
            return []
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
        if self._layerwise is not None:
            self._layerwise.release()

    def _loaded_compat(self) -> TrtCompat:
        """The library the engine was deserialized with (deserializing it first when needed)."""
        self.load()
        assert self._compat is not None  # set by load()
        return self._compat

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
        values = execute(self._loaded_compat(), self._engine, context, feeds, self._mem(), label=self._label(),
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
        return inspector.get_engine_information(self._loaded_compat().trt.LayerInformationFormat.JSON)

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

    def layer_timing_reason(self) -> str | None:
        """None: TensorRT times its engine layers (``IProfiler``); loading the engine may still fail
        (no GPU, an unsupported one), which :meth:`time_layers` raises."""
        return None

    @property
    def timing_label(self) -> str | None:
        """TensorRT's own per-layer timing: ``IProfiler.report_layer_time``."""
        return SOURCE_LABELS["tensorrt"]

    def time_layers(self, feeds: dict, *, warmup: int = 10, iterations: int = 50,
                    per_layer: bool = True) -> LayerProfile:
        """Per engine layer, TensorRT's own times (:func:`~pytest_trt.backends.tensorrt.runner.time_runs`),
        on an execution context created for the timing and dropped after it (the profiler leaves with it)."""
        engine = self.load()
        compat = self._loaded_compat()
        context = engine.create_execution_context()
        if context is None:
            raise BuildError(f"{self._label()}: create_execution_context() failed for the timing (out of GPU memory?)")
        end_to_end, samples = time_runs(compat, engine, context, feeds, self._mem(), label=self._label(),
                                        warmup=warmup, iterations=iterations, per_layer=per_layer)
        return LayerProfile(
            source="tensorrt", unit="engine layer", warmup=warmup, iterations=iterations, samples=samples,
            end_to_end_ms=end_to_end, device=str(device_info().get("gpu") or ""),
            notes=[f"{compat.label}: IProfiler.report_layer_time per engine layer, enqueue_emits_profile = False "
                   f"and report_to_profiler() after each of {iterations} runs, on an execution context of its own; "
                   f"end-to-end = execute_async_v3 + stream synchronize, measured before the profiler was attached"])

    def run_layerwise(self, feeds: dict):
        """Intermediate float tensors by ONNX name.

        With debug tensors (10.12+, 11.x, RTX): the engine under test runs once with both debug
        switches on; the tensors arrive under TensorRT's internal names and are named through
        the layer report (:mod:`pytest_trt.backends.tensorrt.debug_tensors`); those that cannot be mapped are kept
        in :attr:`unmapped_debug_tensors`, never compared. ONNX tensors at a layer boundary of
        the engine that were not emitted make the capture partial: they come from the layerwise
        build (:attr:`layerwise_engine`), and the note says so. Without debug tensors: the
        layerwise build for everything.
        """
        float_names = computed_float_tensors(self.plan)
        if self.debug_tensors and self._backend.compat().has_debug_listener():
            return self._run_with_debug_tensors(feeds, float_names)
        raw = self._layerwise_build()._run_all(feeds)
        values = {n: to_float32(a, None) for n, a in raw.items() if n in float_names}
        note = (f"{self.backend_name}: SEPARATE layerwise build with every float tensor marked as an output; it is a "
                f"DIFFERENT engine from the one under test (extra outputs change fusion and tactics). "
                f"{len(values)} of {len(float_names)} float tensors captured")
        return values, note

    def _run_with_debug_tensors(self, feeds: dict, float_names: set[str]) -> tuple[dict[str, Any], str]:
        """:meth:`run_layerwise` on the engine under test, through its debug tensors."""
        context = self._ctx()
        compat = self._loaded_compat()
        collector = DebugCollector(compat, self._mem())
        self._listener = collector.listener  # the context keeps a raw pointer to it: keep it alive
        outputs = execute(compat, self._engine, context, feeds, self._mem(), label=self._label(),
                          listener=collector.listener, state=self._run_state)
        report = self.layers()
        mapping = map_debug_names(list(collector.values), report, self.plan, float_names)
        values = {onnx: collector.values[name] for name, onnx in mapping.mapped.items()}
        self.unmapped_debug_tensors = {name: (why, collector.values[name]) for name, why in mapping.unmapped.items()}
        for name, arr in outputs.items():
            if name in float_names:
                values.setdefault(name, to_float32(arr, None))
        missing = sorted(expected_tensors(report, self.plan, float_names) - set(values))
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
        if not missing:
            return values, note + f"; {len([n for n in float_names if n not in values])} fused away"
        raw = self._layerwise_build()._run_all(feeds)
        filled = [n for n in missing if n in raw]
        for n in filled:
            values[n] = to_float32(raw[n], None)
        note += (f"; PARTIAL capture: {len(missing)} ONNX tensor(s) at a layer boundary of the engine were "
                 f"not emitted ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): "
                 f"{len(filled)} of them taken from a SEPARATE layerwise build with every float tensor marked "
                 f"as an output, a DIFFERENT engine from the one under test")
        return values, note

    def _run_all(self, feeds: dict) -> dict:
        return execute(self._compat or self._backend.compat(), self.load(), self._ctx(), feeds, self._mem(),
                        label=self._label(), state=self._run_state)

    @property
    def layerwise_engine(self) -> TensorRTEngine | None:
        """The layerwise build (:meth:`run_layerwise` without debug tensors, or to fill a partial
        capture), None until one was needed."""
        return self._layerwise

    def _layerwise_build(self) -> TensorRTEngine:
        if self._layerwise is None:
            self._layerwise = self._backend._build_engine(self.plan, self.config, self._cache, layerwise=True,
                                                          memory=self._memory)
        return self._layerwise


# --------------------------------------------------------------------------------------
# The backends
# --------------------------------------------------------------------------------------
class TensorRTBackend(Backend):
    """TensorRT (10.x weak or strong typing, 11.x strong) on the first visible CUDA GPU."""

    name = "tensorrt"
    disclaimer = None  # TensorRT itself
    uses_gpu = True
    shape_specific = True
    build_is_a_check = True  # the builder parses the network, selects kernels and can reject the plan

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

    def typing_reason(self, typing: str) -> str | None:
        """Why the installed version cannot honour ``typing`` (``auto`` always can: it resolves to what
        the version has)."""
        if typing == "auto":
            return None
        return version_typing_reason(self.name, installed_version(self.name), typing)

    def layer_timing_reason(self) -> str | None:
        """None: TensorRT engines time their layers (``IProfiler``), on a GPU that can load them."""
        return None

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

    def _build_engine(self, plan, config: BuildConfig, cache, *, rebuild: bool = False, layerwise: bool = False,
                      memory=None) -> TensorRTEngine:
        compat = self.compat()
        typing = compat.resolve_typing(config.typing)
        reason = compat.typing_reason(typing)
        if reason:
            raise BackendUnavailable(reason)
        label = f"{plan.model.label} [{plan.policy.describe()}] on {compat.label}, {typing} typing"
        if layerwise:
            label += " (layerwise build)"
        timing_path = self._timing_cache_path(compat, cache)

        # a model with external weights: the realization refers to its weight sets (shared with emulate)
        sets = WeightSets(plan.model, cache, rebuild=rebuild) if plan.model.has_external_weights else None

        def build_fn(tmp_dir: Path) -> None:
            release_heavy_sessions()  # the builder needs the memory a big model's ONNX Runtime sessions hold
            build_into(compat, self.name, plan, config, typing, Path(tmp_dir), layerwise=layerwise,
                       timing_path=timing_path, sets=sets)

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
            if layerwise:  # the on-disk names ("engine-probe", "probe") predate the name "layerwise build"
                parts[LAYERWISE_PART] = "all float tensors marked as outputs"
            result = cache.get_or_build(LAYERWISE_KIND if layerwise else "engine", parts, build_fn, rebuild=rebuild,
                                        label=label)
            data = (result.path / ENGINE_FILE).read_bytes()
            record = json.loads((result.path / RECORD_FILE).read_text())
            written = 0 if result.cache_hit else tree_size(result.path)
            info = BuildInfo(cache_hit=result.cache_hit, build_seconds=result.build_seconds, key=result.key,
                             path=str(result.path), waited_seconds=result.waited_seconds,
                             bytes_written=written + (sets.written if sets is not None else 0))
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


class TensorRTRTXBackend(TensorRTBackend):
    """TensorRT-RTX (strongly typed only). Engines are JIT-compiled for the GPU they run on.

    Measured on an H200 (TENSORRT_RTX.md): builds succeed, deserialization fails on compute
    capability 9.0; that failure is :class:`BackendUnavailable`, the build stays cached.
    """

    name = "tensorrt-rtx"


#: the backends and engine of this module, and (re-exported) the names callers imported from here
#: before the build, network and runner steps moved to their own modules
__all__ = [
    "ENGINE_FILE",
    "EXTERNAL_DATA_THRESHOLD",
    "GLUE_VERSION",
    "LIBRARY_NAMES",
    "RECORD_FILE",
    "TIMING_CACHE_DIR",
    "CudaMemory",
    "DtypeMismatch",
    "LoweredPrecisionError",
    "TensorRTBackend",
    "TensorRTEngine",
    "TensorRTRTXBackend",
    "WeakHintResult",
    "apply_weak_hints",
    "check_network_dtypes",
    "cuda_driver_version",
    "device_info",
    "lowered_message",
    "network_node_dtypes",
    "node_from_log",
]
