"""The Backend / Engine interface every backend implements.

A backend builds an :class:`Engine` from a :class:`~pytest_trt.plan.PrecisionPlan`
and a :class:`BuildConfig`, through the artifact cache, so a build happens once per
content key. Engines run feeds, report their layers, and give per-tensor values for
layerwise comparison.

Backends answer what callers need to know about them; no module outside ``backends/``
compares a backend's name:

=============================  ==========================================================
``Backend.disclaimer``         the line every report shows beside the backend's name when
                               its results are not TensorRT's (``emulate``: "CPU precision
                               emulation on ONNX Runtime, not TensorRT"); None only for a
                               backend that runs TensorRT itself. A plugin backend that does
                               not set it gets :data:`PLUGIN_DISCLAIMER`: a backend has to
                               claim to be TensorRT, it is never assumed
``Backend.uses_gpu``           whether its engines run on a CUDA GPU (the GPU recorded beside
                               every engine and accuracy record; the ONNX Runtime package the
                               baseline needs)
``Backend.shape_specific``     whether an engine is built for the input shapes (TensorRT's
                               optimization profiles); False: one build serves every shape
``Backend.build_is_a_check``   whether building an engine can fail for a real reason (a real
                               TensorRT / TensorRT-RTX builder parses the network, picks kernels
                               and may reject the plan), so a test that only built its engine
                               checked something; False (the default, so a plugin backend must
                               claim it): a build that only writes a graph (``emulate``), and a
                               test that only built or ran is "passed without checking anything"
``Backend.typing_reason(t)``   why ``--trt-typing t`` cannot be honoured here (None: it can)
``Engine.layer_evidence``      how :meth:`Engine.layers` knows what ran: ``"observed"`` (read
                               from the built engine) or ``"emulated"`` (derived from the plan)
``Engine.layerwise_engine``    the separate engine a layerwise comparison built (every float
                               tensor an output), or None when it used the engine under test
``Engine.backend``             the :class:`Backend` that built it (probes build sub-engines with it)
``Engine.artifact_cache``      the artifact cache it came from, or None (built without one)
``Engine.timing_label``        what :meth:`Engine.time_layers` measures with, as every report labels
                               it (TensorRT: "TensorRT IProfiler (report_layer_time)"); None for an
                               engine that cannot time its layers
=============================  ==========================================================
"""

from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import runstate
from ..core.choices import BACKEND_CHOICES as BACKEND_CHOICES  # re-exported: the old home of the name
from ..core.choices import TYPING_CHOICES
from ..core.evidence import DEFAULT_LAYER_EVIDENCE
from ..errors import BackendUnavailable, UsageError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..cache import ArtifactCache
    from ..layers.report import LayerReport
    from ..layers.timing import LayerProfile
    from ..plan import PrecisionPlan

#: the disclaimer of a backend that states none (see the module docstring): the reports never present
#: a plugin's results as TensorRT's unless the plugin says they are (``disclaimer = None``)
PLUGIN_DISCLAIMER = "{name} is a plugin backend that does not state that it runs TensorRT"

# the built-in choices of ``--trt-backend`` (plugins add more: :func:`backend_names`) and of
# ``--trt-typing`` are in pytest_trt.core.choices (read by --help without importing this module)


@dataclass(frozen=True)
class BuildConfig:
    """Everything besides model and plan that changes what gets built.

    Attributes:
        typing: ``auto`` (strong where the library has it), ``strong`` or ``weak``
            (TensorRT <= 10.x per-layer precision hints with OBEY_PRECISION_CONSTRAINTS).
        tf32: allow TF32 for FP32 math (off by default: it changes FP32 results).
        profiles: TensorRT optimization profiles, each ``{input: (min, opt, max)}``;
            empty means "the static shapes of the model / the feeds".
        workspace_bytes: builder memory-pool limit, None for TensorRT's default.
        builder_optimization_level: TensorRT builder optimization level, None for default.
    """

    typing: str = "auto"
    tf32: bool = False
    profiles: tuple = ()
    workspace_bytes: int | None = None
    builder_optimization_level: int | None = None

    def __post_init__(self):
        if self.typing not in TYPING_CHOICES:
            raise UsageError(f"unknown typing {self.typing!r}: use one of {', '.join(TYPING_CHOICES)}")

    def to_json(self) -> dict[str, Any]:
        profiles = [
            {name: [list(s) for s in shapes] for name, shapes in sorted(p.items())} for p in self.profiles
        ]
        return {
            "typing": self.typing,
            "tf32": self.tf32,
            "profiles": profiles,
            "workspace_bytes": self.workspace_bytes,
            "builder_optimization_level": self.builder_optimization_level,
        }

    def fingerprint(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


@dataclass
class BuildInfo:
    """How an engine came to be: cache hit or build, and how long it took."""

    cache_hit: bool
    build_seconds: float
    key: str = ""
    path: str = ""
    waited_seconds: float = 0.0
    #: bytes this build added to the cache: the entry, plus any weight set it was the first to need
    #: (a big model's second policy adds only its graph; not in :meth:`to_json`)
    bytes_written: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "cache_hit": self.cache_hit,
            "build_seconds": round(self.build_seconds, 4),
            "key": self.key,
            "path": self.path,
            "waited_seconds": round(self.waited_seconds, 4),
        }


class Engine(ABC):
    """A built engine for one (model, plan, config) on one backend."""

    backend_name: str = "?"
    #: "strong", "weak" or "emulated": how the plan was realized.
    typing: str = "?"
    #: how :meth:`layers` knows what ran: ``"observed"`` (read from the built engine, e.g.
    #: TensorRT's engine inspector) or ``"emulated"`` (derived from the plan's realization), one of
    #: :data:`pytest_trt.core.evidence.EVIDENCE`. An engine that does not say is taken as
    #: ``"emulated"`` (:data:`~pytest_trt.core.evidence.DEFAULT_LAYER_EVIDENCE`): nothing is called observed
    #: unless it is. A backend whose layers() reads a real engine sets ``"observed"``.
    layer_evidence: str = DEFAULT_LAYER_EVIDENCE
    #: what :attr:`backend` and :attr:`artifact_cache` return, set by the backend that built the engine
    _built_by: Backend | None = None
    _artifact_cache: ArtifactCache | None = None

    @property
    def backend(self) -> Backend:
        """The backend that built this engine: the one that set it (``engine.backend = self`` in
        :meth:`Backend.build`, e.g. a backend wrapping another's engines), else the registered backend of
        :attr:`backend_name`. Builds made on the engine's behalf (a probe's sub-engine) use it."""
        return self._built_by if self._built_by is not None else get_backend(self.backend_name)

    @backend.setter
    def backend(self, value: Backend) -> None:
        self._built_by = value

    @property
    def artifact_cache(self) -> ArtifactCache | None:
        """The artifact cache this engine was built through (set by the backend that built it), None when it
        was built without one: builds made on its behalf (a probe's sub-engine) go there by default."""
        return self._artifact_cache

    @artifact_cache.setter
    def artifact_cache(self, value: ArtifactCache | None) -> None:
        self._artifact_cache = value

    @property
    def layerwise_engine(self) -> Engine | None:
        """The separate engine :meth:`run_layerwise` built or loaded (every float tensor marked as an
        output: a different engine from the one under test), None while it used none. Callers count
        it as an engine of the run (it has its own ``build_info``)."""
        return None

    def __init__(self, plan: PrecisionPlan, config: BuildConfig, build_info: BuildInfo):
        self.plan = plan
        self.config = config
        self.build_info = build_info

    @property
    def model(self):
        return self.plan.model

    @property
    def input_names(self) -> list[str]:
        return self.plan.model.input_names()

    @property
    def output_names(self) -> list[str]:
        return self.plan.model.output_names()

    @abstractmethod
    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the engine; returns every model output by name (as numpy arrays)."""

    @property
    def loaded_bytes(self) -> int:
        """GPU memory this engine holds while loaded (0 when nothing is loaded)."""
        return 0

    def release(self) -> None:  # noqa: B027 - engines holding nothing on a GPU have nothing to free
        """Free what the engine holds on the GPU; it loads again on next use."""

    @abstractmethod
    def layers(self) -> LayerReport:
        """What the engine actually runs, per layer and per ONNX node."""

    def typing_rule_failures(self) -> list[str]:
        """Nodes planned FP32 that the engine ran lower where no build-time check could catch it
        (TensorRT's weak typing), one line each; an accuracy failure lists them. Engines whose
        typing is checked when they are built, or emulated, have none."""
        return []

    def layer_timing_reason(self) -> str | None:
        """None when :meth:`time_layers` measures this engine's own kernels on a GPU, per engine layer;
        else why it cannot (the ledger's time column says it). Backends that can override both."""
        return f"the {self.backend_name} backend has no per-layer timing of its engines"

    @property
    def timing_label(self) -> str | None:
        """How every report labels the times :meth:`time_layers` measures (TensorRT: "TensorRT IProfiler
        (report_layer_time)"); None when this engine cannot time its layers. An engine that times its layers
        without stating a label is labelled as not TensorRT: a backend has to claim TensorRT's timing."""
        if self.layer_timing_reason() is not None:
            return None
        return f"{self.backend_name} engine's own per-layer timing, not TensorRT"

    def time_layers(self, feeds: dict[str, np.ndarray], *, warmup: int = 10, iterations: int = 50,
                    per_layer: bool = True) -> LayerProfile:
        """Time ``iterations`` runs on ``feeds`` after ``warmup`` ones: the end-to-end latency of each
        and, with ``per_layer``, each engine layer's time in each
        (:class:`~pytest_trt.layers.timing.LayerProfile`). Raises :class:`BackendUnavailable` with
        :meth:`layer_timing_reason` where the engine cannot be timed."""
        raise BackendUnavailable(self.layer_timing_reason() or f"{self.backend_name}: no per-layer timing")

    @abstractmethod
    def run_layerwise(self, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str]:
        """Values of intermediate float tensors, keyed by ONNX tensor name, as float32.

        Returns ``(values, note)``; ``note`` says how they were obtained, e.g. that a
        separate layerwise build was used and so the engine differs from the one under test.
        """

    def run_layerwise_subset(self, feeds: dict[str, np.ndarray], names) -> tuple[dict[str, np.ndarray], str]:
        """:meth:`run_layerwise` restricted to ``names`` (``locate`` asks for a big model's tensors segment
        by segment, so that it never holds every activation at once). This default runs everything
        and keeps ``names``; a backend that can compute a subset overrides it."""
        values, note = self.run_layerwise(feeds)
        wanted = set(names)
        return {k: v for k, v in values.items() if k in wanted}, note

    def describe(self) -> str:
        hit = "cache hit" if self.build_info.cache_hit else f"built in {self.build_info.build_seconds:.2f}s"
        return f"{self.backend_name} engine for {self.plan.model.label} [{self.plan.policy.describe()}] ({hit})"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class Backend(ABC):
    """A way to build engines, selected by ``name`` (:func:`register_backend`, the
    ``pytest_trt_backends`` hook). Besides building, a backend answers the questions callers
    would otherwise answer by testing its name (the module docstring lists them)."""

    name: str = "?"
    #: whether its engines run on a CUDA GPU
    uses_gpu: bool = False
    #: whether an engine is built for the input shapes (optimization profiles); False: one build
    #: serves every shape, so a command that only builds needs no input shapes
    shape_specific: bool = True
    #: whether a build can fail for a real reason (a real TensorRT builder: parsing, kernel selection, the
    #: plan's constraints), so that building an engine is a check of it. False by default: never assumed
    #: (``emulate`` writes an ONNX graph; a plugin backend claims it by setting True)
    build_is_a_check: bool = False

    @property
    def disclaimer(self) -> str | None:
        """The line the reports show beside this backend's name when its results are not TensorRT's
        (terminal header and failure messages, ``session.backend_disclaimer`` of the JSON report,
        the HTML header), None for a backend that runs TensorRT itself. Subclasses set a class
        attribute; one that does not is a plugin backend: :data:`PLUGIN_DISCLAIMER`."""
        return PLUGIN_DISCLAIMER.format(name=self.name)

    def typing_reason(self, typing: str) -> str | None:
        """Why ``typing`` (``--trt-typing``: auto, strong, weak) cannot be honoured by this backend
        here, None when it can: a usage error at session start."""
        return None

    @abstractmethod
    def unavailable_reason(self) -> str | None:
        """None when this backend can run here, else the exact reason (used as skip reason)."""

    @abstractmethod
    def versions(self) -> dict[str, str]:
        """Library versions that change what gets built (part of cache keys and the report header)."""

    def device(self) -> dict[str, Any]:
        """The device engines are built for (part of cache keys)."""
        return {}

    def layer_timing_reason(self) -> str | None:
        """None when this backend's engines time their own layers on a GPU (:meth:`Engine.time_layers`);
        else why not. Asked before any engine exists (an explicit ``--trt-ledger-timing engine``)."""
        return f"the {self.name} backend has no per-layer timing of its engines"

    def supports(self, plan: PrecisionPlan, config: BuildConfig) -> str | None:
        """None when this backend can build ``plan`` under ``config``, else why not (skip reason)."""
        return None

    @abstractmethod
    def build(
        self, plan: PrecisionPlan, config: BuildConfig, cache: ArtifactCache | None, *, rebuild: bool = False
    ) -> Engine:
        """Build (or load from ``cache``) an engine for ``plan``."""

    def cache_parts(self, plan: PrecisionPlan, config: BuildConfig) -> dict[str, Any]:
        """The content key of an engine: everything that changes the built artifact."""
        return {
            "model": plan.model.sha256,
            "plan": plan.fingerprint(),
            "backend": self.name,
            "backend_versions": self.versions(),
            "device": self.device(),
            "config": config.to_json(),
        }

    def require(self) -> None:
        reason = self.unavailable_reason()
        if reason:
            raise BackendUnavailable(reason)


#: the built-in backends, ``name -> (module, class)``: imported on first lookup (through
#: importlib, so this module never imports the concrete backends, which import it), and
#: naming one (or registering another backend) imports nothing heavy
BUILTIN_BACKENDS: dict[str, tuple[str, str]] = {
    "tensorrt": ("pytest_trt.backends.tensorrt.backend", "TensorRTBackend"),
    "tensorrt-rtx": ("pytest_trt.backends.tensorrt.backend", "TensorRTRTXBackend"),
    "emulate": ("pytest_trt.backends.emulate", "EmulateBackend"),
}
#: The backend registry: process configuration, like pytest's own plugin registrations. A
#: pytest run registers its plugins' backends (the ``pytest_trt_backends`` hook, in
#: ``glue.activation.activate``) and unregisters them at ``pytest_unconfigure``, so a registration made
#: for a session ends with it; outside pytest, :func:`register_backend` is the API and lasts
#: until :func:`unregister_backend`. A registered name replaces a built-in one of the same
#: name. Backend *instances* are memos of the run (:func:`get_backend`, in
#: :mod:`pytest_trt.core.runstate`), not kept here.
_FACTORIES: dict[str, Any] = {}
#: the runstate table of backend instances: name -> Backend
INSTANCES_TABLE = "backends.instances"


def _instances() -> dict[str, Backend]:
    return runstate.current().table(INSTANCES_TABLE)


def register_backend(name: str, factory) -> None:
    """Make a backend selectable by ``name``: ``--trt-backend NAME``, ``requires=NAME``, :func:`get_backend`.

    ``factory`` is a :class:`Backend` subclass, a no-argument callable returning a Backend, or a
    Backend instance. The built-in backends stay available (they are looked up lazily, whatever
    was registered first); registering a built-in name replaces that backend. In a pytest plugin
    or conftest, prefer the ``pytest_trt_backends`` hook (:mod:`pytest_trt.glue.hookspec`).
    """
    if not isinstance(name, str) or not name.strip() or name == "auto" or name != name.strip():
        raise UsageError(f"register_backend: invalid backend name {name!r}: a non-empty name without spaces "
                         f"around it, other than 'auto'")
    if not (isinstance(factory, Backend) or callable(factory)):
        raise UsageError(f"register_backend({name!r}, ...): expected a Backend subclass, instance or factory, "
                         f"got {factory!r}")
    _FACTORIES[name] = factory
    _instances().pop(name, None)


def unregister_backend(name: str) -> None:
    """Forget a backend registered with :func:`register_backend` (a built-in one comes back)."""
    _FACTORIES.pop(name, None)
    _instances().pop(name, None)


def backend_names() -> tuple[str, ...]:
    """Every backend a run may name: the built-in ones, then the registered ones (not ``auto``)."""
    return tuple(BUILTIN_BACKENDS) + tuple(n for n in _FACTORIES if n not in BUILTIN_BACKENDS)


#: the disclaimer shown for a backend named in saved results that this process does not know (a plugin
#: backend of the run that saved them): whether its results were TensorRT's cannot be told here
UNKNOWN_BACKEND_DISCLAIMER = "backend {name} is unknown here: whether its results are TensorRT's cannot be told"


def disclaimer_of(name: str) -> str | None:
    """The :attr:`Backend.disclaimer` of the backend a run may name ``name`` (the registry's), for results
    that recorded only the backend's name (saved runs); :data:`UNKNOWN_BACKEND_DISCLAIMER` for a name not
    known here. Builds nothing (the backend's availability is not asked)."""
    if name not in backend_names():
        return UNKNOWN_BACKEND_DISCLAIMER.format(name=name)
    return get_backend(name).disclaimer


def _choices() -> str:
    return ", ".join(("auto",) + backend_names())


def get_backend(name: str) -> Backend:
    """The backend instance for a concrete name (``emulate``, ``tensorrt``, ``tensorrt-rtx`` or a
    registered one); one instance per name and run (:mod:`pytest_trt.core.runstate`)."""
    instances = _instances()
    if name not in instances:
        factory = _FACTORIES.get(name)
        if factory is None and name in BUILTIN_BACKENDS:
            module, cls = BUILTIN_BACKENDS[name]
            factory = getattr(importlib.import_module(module), cls)
        if factory is None:
            raise UsageError(f"unknown backend {name!r}: choose one of {_choices()}")
        backend = factory if isinstance(factory, Backend) else factory()
        if not isinstance(backend, Backend):
            raise UsageError(f"backend {name!r}: its factory returned {backend!r}, not a pytest_trt Backend")
        instances[name] = backend
    return instances[name]


def select_backend(requested: str, source: str = "--trt-backend") -> tuple[Backend, str]:
    """Resolve ``--trt-backend``: returns the backend and why it was chosen.

    ``auto`` is TensorRT when importable with a usable GPU, else ``emulate`` (the two backends
    ``auto`` knows by name: choosing between them is this module's job). An
    explicit backend that cannot run here raises :class:`BackendUnavailable` (a usage
    error: a runner that asks for TensorRT must not silently test something else).
    """
    if requested != "auto" and requested not in backend_names():
        raise UsageError(f"unknown {source} {requested!r}: choose one of {_choices()} (other names come from "
                         f"plugins: the pytest_trt_backends hook)")
    if requested == "auto":
        trt = get_backend("tensorrt")
        reason = trt.unavailable_reason()
        if reason is None:
            return trt, "auto: TensorRT and a CUDA GPU are available"
        return get_backend("emulate"), f"auto: {reason}, using CPU precision emulation (not TensorRT)"
    backend = get_backend(requested)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"{source} {requested} cannot run here: {reason}")
    return backend, f"requested with {source} {requested}"
