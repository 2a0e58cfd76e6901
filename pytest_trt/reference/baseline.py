"""The FP32 reference: ONNX Runtime on the model as written, cached on disk.

ONNX Runtime's CPU provider is the default: it is deterministic and present on every
machine. Graph optimizations are disabled so the baseline is the model as written
(fusions change rounding). The CUDA provider can be asked for (``--trt-baseline-provider
cuda``): TF32 off, checked on the created session (``get_provider_options``), and a session
that ONNX Runtime silently created without CUDA is an error. Where each node ran is read
from ONNX Runtime's profile when the baseline is computed: shape/index nodes (no float
output) on the CPU provider are expected; a float node there is reported as a
:class:`~pytest_trt.errors.ProviderFallbackWarning` (its FP32 result is still exact, but
the reference is then not all-GPU) and, in a pytest run, as a ``baseline_fallback`` record
of the test (JSON report ``tests[].baseline_fallbacks``, terminal summary).

Baseline outputs are cached by model hash + inputs hash + ONNX Runtime version +
provider, so a suite re-run does not recompute references.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import tempfile
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..core import runstate
from ..core.environment import dist_version, gpus
from ..core.lazy import lazy_import
from ..core.records import BaselineFallbackRecord
from ..errors import InputError, MissingDependency, ModelError, ProviderFallbackWarning, UsageError
from ..model.load import Model, load_model
from ..model.onnx_typing import infer_types
from ..plan import check_as_written
from ..realize.weight_sets import BoundWeights, bind
from .upcast import fp32_reference_model, needs_upcast

if TYPE_CHECKING:  # pragma: no cover
    import onnxruntime as ort

    from ..cache import ArtifactCache
else:
    ort = lazy_import("onnxruntime", extra="cpu")

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}

# Run-wide memo tables (pytest_trt.core.runstate): one per pytest session, reset() outside pytest.
_SESSIONS_TABLE = "baseline.sessions"  # (key, provider) -> InferenceSession, LRU
_MAX_SESSIONS = 16
_PLACEMENTS_TABLE = "baseline.placements"  # (model sha256, feeds digest) -> node placement
_CHECKED_TABLE = "baseline.checked"  # sha256 of models check_as_written passed
_HEAVY_SHARED_TABLE = "baseline.heavy_shared"  # weights shared by an engine's sessions (weight_sets.bind reuse=)
#: a session fed at least this many weight bytes is *heavy*: at most one is kept (the others are
#: released before it is created), so a big model's baseline and engine sessions never hold
#: their weights at the same time
HEAVY_BYTES = 256 << 20


def onnxruntime_version() -> str:
    """The version of the ``onnxruntime`` module that runs (cache keys, build info).

    The imported module's own version, not a distribution's metadata: with both
    ``onnxruntime`` and ``onnxruntime-gpu`` installed (the GPU image of issue 20 had the CPU
    build 1.30.0 installed and the CUDA build 1.31.1 first on ``PYTHONPATH``) the metadata
    names the wrong one.
    """
    try:
        return _import_ort().__version__
    except UsageError:
        return dist_version("onnxruntime", "onnxruntime-gpu") or "missing"


def install_hint(gpu: bool | None = None) -> str:
    """Which extra brings ONNX Runtime: ``[gpu]`` on a machine with a CUDA GPU (or when asked), else ``[cpu]``."""
    if gpu is None:
        gpu = bool(gpus())
    if gpu:
        return ('pip install "pytest-trt[gpu]" (onnxruntime-gpu with TensorRT; never together with the [cpu] '
                'extra: onnxruntime and onnxruntime-gpu overwrite each other)')
    return 'pip install "pytest-trt[cpu]"'


def _import_ort(gpu: bool | None = None) -> Any:
    """ONNX Runtime, imported; a missing or broken install is a :class:`UsageError` naming the extra to install."""
    try:
        # FATAL only: ONNX Runtime's own (coloured) log lines would reach stderr before, and apart from,
        # our message; every error it logs is also raised, and we re-raise it as ours (ModelError, ...)
        ort.set_default_logger_severity(4)  # the first attribute access imports it
    except MissingDependency as missing:
        cause = missing.__cause__ if missing.__cause__ is not None else missing
        raise _ort_import_error(cause, gpu) from cause
    except Exception as exc:  # a broken install: OSError from a missing shared library, ...
        raise _ort_import_error(exc, gpu) from exc
    return ort


def _ort_import_error(exc: BaseException, gpu: bool | None) -> UsageError:
    """The message for an ONNX Runtime that does not import: not installed, or broken."""
    if isinstance(exc, ModuleNotFoundError):
        if exc.name and exc.name.split(".")[0] != "onnxruntime":
            return UsageError(f"ONNX Runtime cannot be imported ({exc}): reinstall it: {install_hint(gpu)}")
        return UsageError(f"ONNX Runtime is not installed: pytest-trt needs it for the FP32 baseline: "
                          f"{install_hint(gpu)}")
    return UsageError(f"ONNX Runtime cannot be imported ({type(exc).__name__}: {exc}): reinstall it: "
                      f"{install_hint(gpu)}")


def check_runtime(provider: str = "cpu", *, gpu: bool | None = None, source: str = "--trt-baseline-provider") -> None:
    """Fail now, with the fix, when the baseline cannot be computed as asked.

    ONNX Runtime must import, and ``provider`` must really run: ONNX Runtime silently falls
    back to its CPU provider when the CUDA provider cannot be created (measured with
    onnxruntime 1.32: a UserWarning, then ``get_providers() == ['CPUExecutionProvider']``),
    so ``cuda`` is checked on a one-node model.
    """
    runtime = _import_ort(gpu=gpu or (provider == "cuda" or None))
    if provider == "cpu":
        return
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "provider_check",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 8)
    try:
        make_session(model.SerializeToString(), provider=provider, label=f"{source} {provider} check", ort=runtime,
                     source=source)
    except ModelError as exc:
        raise UsageError(f"{source} {provider}: ONNX Runtime's {PROVIDERS[provider]} cannot run here: {exc}") from exc


def make_session(model_bytes: bytes | str | BoundWeights, *, provider: str = "cpu", label: str = "model",
                 ort: Any = None, profile_dir: Path | None = None, source: str | None = None) -> Any:
    """An ONNX Runtime session over serialized ONNX (or the path of a model file, whose external data
    lies beside it), graph optimizations disabled.

    ``model_bytes`` may be a :class:`~pytest_trt.realize.weight_sets.BoundWeights` (a graph whose large
    weights are fed on every run from memory-mapped files, see :mod:`pytest_trt.realize.weight_sets`):
    the session then feeds them itself (:class:`WeightFedSession`).

    The session runs on ``provider`` or this raises :class:`UsageError`: ONNX Runtime's own
    fallback to the CPU provider would compute a "cuda" baseline on the CPU without a word.
    This is the one check that the provider really runs; a ``cuda`` session is then checked
    to run with TF32 off (:func:`check_cuda_session`). ``profile_dir``: ONNX Runtime profiles
    the session there. ``source``: how the user chose the provider, as they spelled it
    (``--trt-baseline-provider`` in pytest, from :func:`check_runtime`); the messages name it,
    or "baseline provider" (the ``provider`` keyword of the API) when None.
    """
    ort = ort or _import_ort(gpu=provider == "cuda" or None)
    what = f"{source} {provider}" if source else f"baseline provider {provider!r}"
    if provider not in PROVIDERS:
        raise UsageError(f"unknown {what}: use one of {', '.join(PROVIDERS)}")
    name = PROVIDERS[provider]
    if name not in ort.get_available_providers():
        raise UsageError(
            f"{what}: ONNX Runtime's {name} is not available here (this ONNX Runtime "
            f"has: {', '.join(ort.get_available_providers())}). On a CUDA machine: {install_hint(True)}; "
            f"elsewhere use the default provider cpu"
        )
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # see _import_ort
    # ONNX Runtime's intra-op threads spin-wait after each run by default; with many cached
    # sessions in one test process (one per engine and baseline) the spinning starves the
    # CPU (measured: the test suite went from ~2 to ~5 minutes on 2 cores). Sleep instead.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile_dir is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(profile_dir / "ort_profile")
    provider_entry = (name, {"use_tf32": "0"}) if provider == "cuda" else name
    bound = model_bytes if isinstance(model_bytes, BoundWeights) else None
    data = bound.proto.SerializeToString() if bound is not None else model_bytes
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Specified provider ... is not in available provider names"
            session = ort.InferenceSession(data, sess_options=options, providers=[provider_entry])
    except Exception as exc:  # onnxruntime raises its own exception types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise ModelError(f"ONNX Runtime cannot load {label}: {first}") from exc
    ran = session.get_providers()
    if not ran or ran[0] != name:
        raise UsageError(
            f"{what}: ONNX Runtime could not create its {name} (it fell back to "
            f"{', '.join(ran) or 'nothing'}): check the CUDA and cuDNN libraries ONNX Runtime needs, and that a GPU "
            f"is visible; or use the default provider cpu"
        )
    if provider == "cuda":
        check_cuda_session(session, label)
    if bound is not None and bound.arrays:
        return WeightFedSession(session, bound, ort)
    return session


class WeightFedSession:
    """An ONNX Runtime session whose weights are graph inputs fed from memory-mapped arrays on every run.

    Behaves as the session (attributes are forwarded) except that ``get_inputs()`` lists the
    model's own inputs only and ``run()`` adds the weights to the feeds. Drop it to release the
    mappings (its pages stop counting in this process's memory).
    """

    def __init__(self, session: Any, bound: BoundWeights, ort: Any) -> None:
        self.session = session
        self.bound = bound
        self.weight_feeds = bound.ort_feeds(ort)
        self.nbytes = bound.nbytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)

    def get_inputs(self):
        return [i for i in self.session.get_inputs() if i.name not in self.weight_feeds]

    def run(self, output_names, input_feed, run_options=None):
        return self.session.run(output_names, {**input_feed, **self.weight_feeds}, run_options)


def check_cuda_session(session, label: str = "model") -> dict:
    """Raise unless the CUDA provider of ``session`` runs with TF32 off; return its CUDA options.

    ``session`` comes from :func:`make_session` with ``provider="cuda"``, which has already
    refused a session that ONNX Runtime created without CUDA (its silent CPU fallback);
    this checks what that cannot: the options the CUDA provider reports it runs with.
    """
    options = session.get_provider_options().get("CUDAExecutionProvider", {})
    if str(options.get("use_tf32", "")) != "0":
        raise UsageError(
            f"ONNX Runtime's CUDA provider reports use_tf32={options.get('use_tf32')!r} for {label} (providers in "
            f"use: {', '.join(session.get_providers())}); the FP32 baseline needs TF32 off (this onnxruntime-gpu "
            f"ignores the option?): use the baseline provider cpu"
        )
    return dict(options)


def node_placement(session, model_proto, feeds: dict) -> dict:
    """Where each node of one profiled run ran, from ONNX Runtime's profile.

    Returns ``{"providers": {provider: node count}, "cpu_float_nodes": [[name, op_type], ...]}``:
    nodes on the CPU provider with a float output (shape/index nodes, whose outputs are
    integers or bools, are expected there and not listed).
    """
    run_session(session, feeds)
    path = session.end_profiling()
    events = json.loads(open(path).read())
    inferred = onnx.shape_inference.infer_shapes(model_proto)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(inferred.graph.value_info) + list(inferred.graph.output) if vi.type.HasField("tensor_type")}
    floats = {n.name: n.op_type for n in model_proto.graph.node
              if any(types.get(o) in (1, 10, 11, 16) for o in n.output if o)}
    seen: dict[str, str] = {}
    for ev in events:
        args = ev.get("args") or {}
        if ev.get("cat") == "Node" and "provider" in args and ev.get("name", "").endswith("_kernel_time"):
            seen[ev["name"][: -len("_kernel_time")]] = args["provider"]
    counts: dict[str, int] = {}
    for provider_name in seen.values():
        counts[provider_name] = counts.get(provider_name, 0) + 1
    cpu_float = [[n, floats[n]] for n, p in seen.items() if p == "CPUExecutionProvider" and n in floats]
    try:
        os.remove(path)
    except OSError:
        pass
    return {"providers": counts, "cpu_float_nodes": sorted(cpu_float)}


#: where a CUDA baseline's CPU fallback is reported besides the warning: ``sink(record)`` with a
#: :class:`~pytest_trt.core.records.BaselineFallbackRecord` (model, provider "cuda", nodes).
#: The pytest plugin sets it around each test phase (the record reaches the JSON report and the
#: terminal summary); unset elsewhere (the CLI: the warning alone).
FALLBACK_SINK: contextvars.ContextVar = contextvars.ContextVar("pytest_trt_fallback_sink", default=None)


def warn_placement(placement: dict, label: str, *, model: str | None = None) -> None:
    """A ProviderFallbackWarning when float nodes of a CUDA baseline ran on the CPU provider, and a
    ``baseline_fallback`` record to :data:`FALLBACK_SINK` when one is set (``model``: the record's
    model label, default ``label``)."""
    nodes = placement.get("cpu_float_nodes") or []
    if not nodes:
        return
    sink = FALLBACK_SINK.get()
    if sink is not None:
        sink(BaselineFallbackRecord(model=model or label, provider="cuda",
                                    nodes=[[str(n), str(op)] for n, op in nodes]))
    shown = ", ".join(f"{n} ({op})" for n, op in nodes[:8]) + (f", ... ({len(nodes)} in all)" if len(nodes) > 8 else "")
    warnings.warn(ProviderFallbackWarning(
        f"CUDA baseline of {label}: {len(nodes)} float node(s) ran on ONNX Runtime's CPU provider, not CUDA "
        f"(ONNX Runtime has no CUDA kernel for them): {shown}"
    ), stacklevel=3)


def cached_session(key: str, make_bytes, *, provider: str = "cpu", label: str = "model") -> Any:
    """Reuse ONNX Runtime sessions within a run (creating one costs more than a small run).

    The sessions live in the run state (:mod:`pytest_trt.core.runstate`): one pytest session's
    ONNX Runtime sessions are not seen by the next, and at most 16 are kept (least recently
    used go first).
    """
    state = runstate.current()
    sessions: OrderedDict = state.table(_SESSIONS_TABLE, OrderedDict)
    full = (key, provider)
    with state.lock():
        if full in sessions:
            sessions.move_to_end(full)
            return sessions[full]
    # A big model's sessions hold its weights (mapped, or converted for emulation): release those before
    # the new one binds its own, so a baseline and an engine never hold them at the same time.
    release_heavy_sessions()
    made = make_bytes()
    session = make_session(made, provider=provider, label=label)
    if isinstance(made, BoundWeights) and made.shared is not None and made.nbytes >= HEAVY_BYTES:
        with state.lock():  # an engine's weights, shared by its sessions: released with them
            holders: list[dict] = state.table(_HEAVY_SHARED_TABLE, list)
            holders.append(made.shared)
    with state.lock():
        sessions[full] = session
        while len(sessions) > _MAX_SESSIONS:
            sessions.popitem(last=False)
    return session


def release_heavy_sessions() -> int:
    """Drop the cached sessions fed with :data:`HEAVY_BYTES` of weights or more (their mappings go with
    them); returns how many. Called before a heavy session is made, and by stages that hand memory
    to another runtime (a TensorRT build)."""
    state = runstate.current()
    sessions: OrderedDict = state.table(_SESSIONS_TABLE, OrderedDict)
    with state.lock():
        heavy = [k for k, s in sessions.items() if getattr(s, "nbytes", 0) >= HEAVY_BYTES]
        for k in heavy:
            del sessions[k]
        shared: list = state.table(_HEAVY_SHARED_TABLE, list)
        for table in shared:  # the engines bind their weights again when they run next
            table.clear()
        heavy += [None] * len(shared)
        shared.clear()
    if heavy:
        import gc

        gc.collect()  # the arrays of a dropped session may sit in reference cycles of ONNX Runtime's wrappers
    return len(heavy)


def run_session(session, feeds: dict, *, output_names=None, label: str = "model") -> dict[str, np.ndarray]:
    names = list(output_names) if output_names else [o.name for o in session.get_outputs()]
    expected = {i.name for i in session.get_inputs()}
    missing = sorted(expected - set(feeds))
    if missing:
        raise InputError(f"{label}: missing input(s) {', '.join(missing)}; the model's inputs are {', '.join(sorted(expected))}")
    feeds = {k: v for k, v in feeds.items() if k in expected}
    try:
        values = session.run(names, feeds)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise InputError(f"ONNX Runtime failed to run {label}: {first}") from exc
    return dict(zip(names, values, strict=True))


def feeds_digest(feeds: dict) -> str:
    """A content hash of input feeds (names, dtypes, shapes and bytes)."""
    h = hashlib.sha256()
    for name in sorted(feeds):
        arr = np.ascontiguousarray(feeds[name])
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(repr(arr.shape).encode())
        h.update(arr.data.cast("B"))  # the contiguous array's bytes, as memoryview(arr)
    return h.hexdigest()


def cuda_device_part() -> dict[str, str] | None:
    """The GPU model a CUDA baseline runs on, as in engine keys (``device`` part, docs/DESIGN.md):
    name, compute capability and driver of the first GPU this process sees; never the instance."""
    found = gpus()
    if not found:
        return None
    first = found[0]
    return {"gpu": first.name, "compute_capability": first.compute_capability, "driver": first.driver}


def session_source(model: Model, proto=None) -> bytes | BoundWeights:
    """What :func:`make_session` is given for ``proto`` (default: the model itself): its bytes when
    every weight is inline, else the graph with its referenced weights bound as fed inputs."""
    proto = model.proto if proto is None else proto
    if not model.has_external_weights:
        return proto.SerializeToString()
    return bind(proto, model)


def with_outputs(proto, names):
    """A copy of ``proto`` whose graph outputs are ``names`` (types left to ONNX Runtime)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    existing = {o.name for o in copy.graph.output}
    for name in names:
        if name not in existing:
            vi = copy.graph.output.add()
            vi.name = name
    return copy


def fp32_baseline(
    model: Model,
    feeds: dict,
    *,
    provider: str = "cpu",
    cache: ArtifactCache | None = None,
    rebuild: bool = False,
) -> dict[str, np.ndarray]:
    """FP32 ONNX Runtime outputs of ``model`` for ``feeds`` (cached when ``cache`` is given).

    >>> ref = fp32_baseline(load_model("encoder.onnx"), feeds)   # doctest: +SKIP
    """
    model = load_model(model)

    def compute() -> dict[str, np.ndarray]:
        session = cached_session(f"baseline:{model.sha256}", lambda: session_source(model), provider=provider,
                                 label=str(model.path or model.label))
        return run_session(session, feeds, output_names=model.output_names(), label=str(model.path or model.label))

    if cache is None:
        values = compute()
        if provider == "cuda":
            placements: dict = runstate.current().table(_PLACEMENTS_TABLE)
            key = (model.sha256, feeds_digest(feeds))
            if key not in placements:
                placements[key] = cuda_placement(model, feeds)
            warn_placement(placements[key], str(model.path or model.label), model=model.label)
        return values

    parts: dict[str, Any] = {
        "what": "fp32-baseline",
        "model": model.sha256,
        "inputs": feeds_digest(feeds),
        "onnxruntime": onnxruntime_version(),
        "provider": provider,
    }
    if provider == "cuda":  # CUDA kernels differ by GPU model: keyed like engines (docs/DESIGN.md)
        parts["device"] = cuda_device_part()

    def build(tmp_dir):
        values = compute()
        np.savez(tmp_dir / "outputs.npz", **values)  # type: ignore[arg-type]  # numpy's stub: a **dict might name allow_pickle
        if provider == "cuda":
            (tmp_dir / "placement.json").write_text(json.dumps(cuda_placement(model, feeds)))

    result = cache.get_or_build("baseline", parts, build, rebuild=rebuild, label=f"baseline {model.label}")
    with np.load(result.path / "outputs.npz", allow_pickle=False) as data:
        loaded = {name: data[name] for name in data.files}
    placement_file = result.path / "placement.json"
    if provider == "cuda" and placement_file.is_file():
        warn_placement(json.loads(placement_file.read_text()), str(model.path or model.label), model=model.label)
    # keep the model's output order
    return {name: loaded[name] for name in model.output_names() if name in loaded}


def cuda_placement(model: Model, feeds: dict) -> dict:
    """:func:`node_placement` of ``model``'s CUDA baseline session for ``feeds`` (one profiled run).

    The profiled session binds the weights again, so the cached baseline session (its weights
    mapped and touched) is released first: with both, a big model's mapped pages counted twice in
    this process's memory (measured on an H100: a cold run's peak 2.4x the weight bytes, 1.2x
    without)."""
    release_heavy_sessions()
    with tempfile.TemporaryDirectory(prefix="pytest-trt-profile-") as tmp:
        session = make_session(session_source(model), provider="cuda", label=str(model.path or model.label),
                               profile_dir=Path(tmp))
        return node_placement(session, model.proto, feeds)


def float_tensor_names(model: Model) -> list[str]:
    """Every float tensor produced by a main-graph node, in topological order (for layerwise runs)."""
    inferred = onnx.shape_inference.infer_shapes(model.proto)
    types = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type.tensor_type.elem_type
    names = []
    for node in model.graph.node:
        for out in node.output:
            if out and types.get(out) in (1, 10, 16):
                names.append(out)
    return names


def fp32_intermediates(model: Model, feeds: dict, *, names=None, provider: str = "cpu") -> dict[str, np.ndarray]:
    """FP32 values of intermediate float tensors (every one by default) for layerwise comparison."""
    model = load_model(model)
    names = list(names) if names is not None else float_tensor_names(model)
    key = f"layerwise:{model.sha256}:{hashlib.sha256(repr(names).encode()).hexdigest()}"
    session = cached_session(
        key, lambda: session_source(model, with_outputs(model.proto, names)), provider=provider, label=model.label
    )
    return run_session(session, feeds, output_names=names, label=model.label)


# --------------------------------------------------------------------------------------
# Two references for models that arrive with their own precision (issue 12)
# --------------------------------------------------------------------------------------
#: Reference names, selectable per test (``@pytest.mark.trt(baseline=...)``) and in
#: ``pytest-trt compare --baseline``. What each means and when to use which: see
#: :mod:`pytest_trt.reference.upcast`.
BASELINES = ("fp32", "as-written")
_BASELINE_ALIASES = {"fp32": "fp32", "float32": "fp32", "upcast": "fp32",
                     "as-written": "as-written", "as_written": "as-written", "aswritten": "as-written"}


def normalize_baseline(value) -> str:
    """``"fp32"`` or ``"as-written"`` (``as_written`` accepted); UsageError otherwise."""
    key = str(value).strip().lower() if value is not None else "fp32"
    if key not in _BASELINE_ALIASES:
        raise UsageError(
            f"unknown baseline {value!r}: use 'fp32' (ONNX Runtime on the model upcast to FP32, Q/DQ removed; "
            f"the default) or 'as-written' (ONNX Runtime on the model as written, fake-quant for Q/DQ models)"
        )
    return _BASELINE_ALIASES[key]


def reference_model(model, baseline: str = "fp32") -> Model:
    """The model a reference runs: the upcast FP32 model (``fp32``; the model itself when it
    has no FP16/BF16 tensor and no Q/DQ) or the model as written (``as-written``).

    Both are checked first (:func:`pytest_trt.plan.check_as_written`): a node binding one
    type to FP16 and FP32, or a Q/DQ scale of the wrong shape, is a ModelError naming the
    node rather than an ONNX Runtime message at load or run time.
    """
    model = load_model(model)
    baseline = normalize_baseline(baseline)
    _checked(model)
    if baseline == "as-written":
        return model
    return fp32_reference_model(model)


def _checked(model: Model) -> None:
    checked: set[str] = runstate.current().table(_CHECKED_TABLE, set)
    if model.sha256 in checked:
        return
    check_as_written(model)
    checked.add(model.sha256)


def reference_label(model, baseline: str = "fp32", provider: str = "cpu") -> str:
    """How messages name a reference: ``FP32 ONNX Runtime baseline`` for a plain FP32 model."""
    model = load_model(model)
    baseline = normalize_baseline(baseline)
    if not needs_upcast(model):
        return "FP32 ONNX Runtime baseline"
    if baseline == "fp32":
        return "FP32 ONNX Runtime reference (the model upcast to FP32, Q/DQ removed)"
    quant = any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in model.graph.node)
    low = fp32_reference_model(model) is not model and _has_low_types(model)
    notes = ["the model as written"] + (["fake-quant"] if quant else [])
    if low and provider == "cpu":
        notes.append("ONNX Runtime CPU runs most FP16 nodes in FP32")
    return f"as-written ONNX Runtime reference ({', '.join(notes)})"


def _has_low_types(model: Model) -> bool:
    return any(e in (10, 16) for e in infer_types(model)[1].values())


def reference_outputs(
    model,
    feeds: dict,
    *,
    baseline: str = "fp32",
    provider: str = "cpu",
    cache: ArtifactCache | None = None,
    rebuild: bool = False,
) -> dict[str, np.ndarray]:
    """Outputs of the ``baseline`` reference for ``feeds`` (cached like :func:`fp32_baseline`).

    ``fp32`` of a plain FP32 model is exactly :func:`fp32_baseline` (same cache entry).
    """
    return fp32_baseline(reference_model(model, baseline), feeds, provider=provider, cache=cache, rebuild=rebuild)
