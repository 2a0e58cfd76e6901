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
from ..core import environment
from ..core.environment import dist_version
from ..layers.report import LayerReport
from ..reference.baseline import (
    cached_session,
    float_tensor_names,
    onnxruntime_version,
    run_session,
    with_outputs,
)
from .base import Backend, BuildConfig, BuildInfo, Engine

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..cache import ArtifactCache
    from ..plan import PrecisionPlan

EMULATION_FILE = "emulation.onnx"
#: why an emulated engine has no time (every ledger on emulate says it)
NO_GPU_TIME = "CPU emulation computes everything in FP32: no GPU time"


class EmulatedEngine(Engine):
    """An emulation graph run by ONNX Runtime CPU with graph optimizations off."""

    backend_name = "emulate"
    typing = "emulated"

    def __init__(self, plan: PrecisionPlan, config: BuildConfig, build_info: BuildInfo, model_bytes: bytes):
        super().__init__(plan, config, build_info)
        self._bytes = model_bytes
        self._key = build_info.key or plan.fingerprint()

    def _session(self, outputs=None):
        if outputs is None:
            return cached_session(f"emulate:{self._key}", lambda: self._bytes, label=f"emulation of {self.model.label}")
        def make():
            proto = onnx.ModelProto()
            proto.ParseFromString(self._bytes)
            return with_outputs(proto, outputs).SerializeToString()

        tag = hashlib.sha256(repr(list(outputs)).encode()).hexdigest()[:16]
        return cached_session(f"emulate:{self._key}:{tag}", make, label=f"emulation of {self.model.label}")

    def run(self, feeds: dict) -> dict[str, np.ndarray]:
        return run_session(self._session(), feeds, output_names=self.output_names, label=f"emulation of {self.model.label}")

    def layers(self) -> LayerReport:
        return LayerReport.from_emulation(self.plan)

    def layer_timing_reason(self) -> str | None:
        return NO_GPU_TIME

    def run_layerwise(self, feeds: dict):
        names = float_tensor_names(self.model)
        values = run_session(self._session(names), feeds, output_names=names, label=f"emulation of {self.model.label}")
        return values, "emulate: rounded tensors of the same emulation graph (no separate build)"

    @property
    def onnx_bytes(self) -> bytes:
        """The emulation graph, serialized (for inspection and debugging)."""
        return self._bytes


class EmulateBackend(Backend):
    """CPU precision emulation over ONNX Runtime. Always reported as ``emulate``, never as TensorRT."""

    name = "emulate"

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

    def supports(self, plan, config: BuildConfig) -> str | None:
        """None, except for weak typing, which emulation cannot honour (see :data:`WEAK_TYPING_REASON`)."""
        if config.typing == "weak":
            return self.WEAK_TYPING_REASON
        return None

    def cache_parts(self, plan, config):
        parts = super().cache_parts(plan, config)
        # Emulation ignores builder settings (typing, TF32, profiles, workspace): keep
        # them out of the key so one emulation graph serves every config.
        parts["config"] = {}
        return parts

    def build(self, plan, config: BuildConfig, cache: ArtifactCache | None, *, rebuild: bool = False) -> Engine:
        self.require()

        def realized() -> bytes:
            return realize.realize_emulation(plan).SerializeToString()

        if cache is None:
            start = time.perf_counter()
            data = realized()
            info = BuildInfo(cache_hit=False, build_seconds=time.perf_counter() - start, key=plan.fingerprint())
            return EmulatedEngine(plan, config, info, data)

        def build_fn(tmp_dir):
            (tmp_dir / EMULATION_FILE).write_bytes(realized())

        result = cache.get_or_build(
            "emulate", self.cache_parts(plan, config), build_fn, rebuild=rebuild,
            label=f"{plan.model.label} [{plan.policy.describe()}]",
        )
        info = BuildInfo(
            cache_hit=result.cache_hit, build_seconds=result.build_seconds, key=result.key,
            path=str(result.path), waited_seconds=result.waited_seconds,
        )
        return EmulatedEngine(plan, config, info, (result.path / EMULATION_FILE).read_bytes())
