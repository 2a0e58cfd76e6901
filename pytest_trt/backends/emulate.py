"""Backend ``emulate``: precision emulation on ONNX Runtime's CPU provider. Not TensorRT.

The plan's emulation realization (:func:`pytest_trt.realize.realize_emulation`) is an
FP32 graph in which every tensor the plan stores in FP16/BF16 is rounded through that
type (Cast -> Cast). It models what reduced-precision *storage* does to accuracy;
TensorRT's FP16 kernels mostly accumulate in FP32, which this resembles.

What it does not model: kernel-internal math in low precision, tactic choice, layer
fusion, and TensorRT ignoring a precision request (e.g. inside a Myelin region). So a
passing emulated test says "the plan is numerically sound", not "TensorRT honoured it";
run the same test with ``--trt-backend tensorrt`` on a GPU runner for that.

ONNX Runtime's CPU provider silently computes FP16 graphs in FP32 (measured: error
exactly 0.0), which is why rounding is explicit here rather than running the strongly
typed model directly.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

import onnx

from .. import realize  # module references: looked up when called, as before the split
from ..cache.files import tree_size
from ..core import environment
from ..core.environment import dist_version
from ..layers.report import LayerReport
from ..realize.weight_sets import MODEL_SET, WEIGHTS_KIND, WeightSets, bind, read_refs, set_parts
from ..reference.baseline import (
    cached_session,
    float_tensor_names,
    onnxruntime_version,
    release_heavy_sessions,
    run_session,
    with_outputs,
)
from .base import Backend, BuildConfig, BuildInfo, Engine

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..cache import ArtifactCache
    from ..plan import PrecisionPlan

EMULATION_FILE = "emulation.onnx"
#: what the reports say beside the backend's name (:attr:`Backend.disclaimer <pytest_trt.backends.base.Backend.disclaimer>`)
DISCLAIMER = "CPU precision emulation on ONNX Runtime, not TensorRT"
#: why an emulated engine has no time (every ledger on emulate says it)
NO_GPU_TIME = "CPU emulation computes everything in FP32: no GPU time"


class EmulatedEngine(Engine):
    """An emulation graph run by ONNX Runtime CPU with graph optimizations off."""

    backend_name = "emulate"
    typing = "emulated"
    layer_evidence = "emulated"

    def __init__(self, plan: PrecisionPlan, config: BuildConfig, build_info: BuildInfo, model_bytes: bytes,
                 sets: WeightSets | None = None):
        super().__init__(plan, config, build_info)
        self._bytes = model_bytes
        self._key = build_info.key or plan.fingerprint()
        #: the model's weight sets (a model with external weights): the graph's references are bound to them
        self.sets = sets
        #: the bound weights, shared by this engine's sessions (the full graph, and layerwise subsets)
        self._arrays: dict = {}

    def _source(self, proto=None):
        """The session's input: the graph's bytes, or the graph with its weights bound (fed per run)."""
        if self.sets is None:
            return self._bytes if proto is None else proto.SerializeToString()
        if proto is None:
            proto = onnx.ModelProto()
            proto.ParseFromString(self._bytes)
        return bind(proto, self.model, self.sets, reuse=self._arrays)

    def _session(self, outputs=None):
        if outputs is None:
            return cached_session(f"emulate:{self._key}", self._source, label=f"emulation of {self.model.label}")
        def make():
            proto = onnx.ModelProto()
            proto.ParseFromString(self._bytes)
            return self._source(with_outputs(proto, outputs))

        tag = hashlib.sha256(repr(list(outputs)).encode()).hexdigest()[:16]
        return cached_session(f"emulate:{self._key}:{tag}", make, label=f"emulation of {self.model.label}")

    def release(self) -> None:
        """Give back the bound weights (a big model's converted weights: its size in memory) and this
        run's heavy ONNX Runtime sessions; they are bound again on next use."""
        if self._arrays:
            self._arrays = {}
            release_heavy_sessions()

    def run(self, feeds: dict) -> dict[str, np.ndarray]:
        return run_session(self._session(), feeds, output_names=self.output_names, label=f"emulation of {self.model.label}")

    def layers(self) -> LayerReport:
        return LayerReport.from_emulation(self.plan, backend=self.backend_name)

    def layer_timing_reason(self) -> str | None:
        return NO_GPU_TIME

    def run_layerwise(self, feeds: dict):
        return self.run_layerwise_subset(feeds, float_tensor_names(self.model))

    def run_layerwise_subset(self, feeds: dict, names) -> tuple[dict, str]:
        names = list(names)
        values = run_session(self._session(names), feeds, output_names=names, label=f"emulation of {self.model.label}")
        return values, "emulate: rounded tensors of the same emulation graph (no separate build)"

    @property
    def onnx_bytes(self) -> bytes:
        """The emulation graph, serialized (for inspection and debugging)."""
        return self._bytes


def _with_sets(engine: EmulatedEngine, sets: WeightSets | None, cache: ArtifactCache | None = None) -> EmulatedEngine:
    """The engine with its model's weight sets and its artifact cache attached (set after construction:
    the constructor keeps the signature subclasses and wrappers know)."""
    engine.sets = sets
    engine.artifact_cache = cache
    return engine


class EmulateBackend(Backend):
    """CPU precision emulation over ONNX Runtime. Always reported as ``emulate``, never as TensorRT."""

    name = "emulate"
    disclaimer = DISCLAIMER
    uses_gpu = False
    #: one emulation graph serves every shape (no optimization profiles)
    shape_specific = False
    # building writes an ONNX graph with the plan's casts: it cannot fail for a reason TensorRT's builder
    # would, so a test that only built or ran its engine compared nothing
    build_is_a_check = False

    def unavailable_reason(self) -> str | None:
        if not environment.module_available("onnxruntime"):
            return 'ONNX Runtime not installed: pip install "pytest-trt[cpu]"'
        return None

    def versions(self) -> dict[str, str]:
        return {"onnxruntime": onnxruntime_version(), "onnx": dist_version("onnx") or "missing"}

    def device(self) -> dict:
        return {"device": "cpu"}

    def layer_timing_reason(self) -> str | None:
        return NO_GPU_TIME

    #: Why ``typing="weak"`` cannot be honoured here (a usage error: the run would not be what was asked).
    WEAK_TYPING_REASON = ("emulation has no weak typing: it runs the plan's types exactly, as strong typing "
                          "does, while weak typing hands TensorRT per-layer hints it may override; use "
                          "strong or auto, or run weak typing on TensorRT <= 10.x")

    def typing_reason(self, typing: str) -> str | None:
        """None, except for weak typing, which emulation cannot honour (see :data:`WEAK_TYPING_REASON`)."""
        return self.WEAK_TYPING_REASON if typing == "weak" else None

    def supports(self, plan, config: BuildConfig) -> str | None:
        """None, except for weak typing (:meth:`typing_reason`)."""
        return self.typing_reason(config.typing)

    def cache_parts(self, plan, config):
        parts = super().cache_parts(plan, config)
        # Emulation ignores builder settings (typing, TF32, profiles, workspace): keep
        # them out of the key so one emulation graph serves every config.
        parts["config"] = {}
        return parts

    def build(self, plan, config: BuildConfig, cache: ArtifactCache | None, *, rebuild: bool = False) -> Engine:
        self.require()
        # A model with external weights: the emulation graph refers to its weight sets (converted once
        # per model and precision, shared by every policy) instead of holding rounded copies.
        # (Measured on the 2.77 GB decoder, warm: 4.8-6.4 s with the stored FP16 set, 9-11 s converting
        # the FP32 weights on the fly in every process; docs/DESIGN.md "Weights".)
        sets = WeightSets(plan.model, cache, rebuild=rebuild) if plan.model.has_external_weights else None

        if cache is None:
            start = time.perf_counter()
            data = realize.realize_emulation(plan).SerializeToString()
            info = BuildInfo(cache_hit=False, build_seconds=time.perf_counter() - start, key=plan.fingerprint())
            return _with_sets(EmulatedEngine(plan, config, info, data), sets)

        def build_fn(tmp_dir):
            proto = realize.realize_emulation(plan)
            (tmp_dir / EMULATION_FILE).write_bytes(proto.SerializeToString())
            if sets is None:
                return None
            needed = sorted({s for _, s in read_refs(proto).values() if s != MODEL_SET})
            for precision in needed:  # build them now: the entry is usable once stored
                sets.file(precision)
            return {"uses": [{"kind": WEIGHTS_KIND, "key": cache.key(set_parts(plan.model, p))} for p in needed]}

        result = cache.get_or_build(
            "emulate", self.cache_parts(plan, config), build_fn, rebuild=rebuild,
            label=f"{plan.model.label} [{plan.policy.describe()}]",
        )
        written = 0 if result.cache_hit else tree_size(result.path)
        info = BuildInfo(
            cache_hit=result.cache_hit, build_seconds=result.build_seconds, key=result.key,
            path=str(result.path), waited_seconds=result.waited_seconds,
            bytes_written=written + (sets.written if sets is not None else 0),
        )
        return _with_sets(EmulatedEngine(plan, config, info, (result.path / EMULATION_FILE).read_bytes()), sets,
                          cache)
