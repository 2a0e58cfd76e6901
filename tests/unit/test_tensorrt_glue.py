"""pytest-trt's TensorRT glue against a FAKE tensorrt module (tests/unit/fake_tensorrt.py).

These tests check our own code: typing selection per version, which flags and hints we
set, error mapping, caching, the runner's buffer handling. They cannot show that the
TensorRT facts the glue relies on are right; tests/gpu/test_tensorrt_gpu.py does that
on a real GPU.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.backends.tensorrt import backend as trt_backend
from pytest_trt.backends.tensorrt import build as trt_build
from pytest_trt.backends.tensorrt import compat as trt_compat
from pytest_trt.backends.tensorrt import versions as trt_versions
from pytest_trt.backends.tensorrt.backend import (
    TensorRTBackend,
    TensorRTRTXBackend,
    apply_weak_hints,
    check_network_dtypes,
    node_from_log,
)
from pytest_trt.backends.tensorrt.compat import TrtCompat
from pytest_trt.cache import ArtifactCache
from pytest_trt.errors import BackendUnavailable, BuildError, InputError
from pytest_trt.layers.report import LayerReport
from pytest_trt.model import testing_models as tm
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy

# Loaded by path (not "import fake_tensorrt") so the import mode and any tests/__init__.py do not matter.
_spec = importlib.util.spec_from_file_location("_pytest_trt_fake_tensorrt", Path(__file__).with_name("fake_tensorrt.py"))
fake_tensorrt = sys.modules.setdefault("_pytest_trt_fake_tensorrt", importlib.util.module_from_spec(_spec))
if not hasattr(fake_tensorrt, "make_fake_tensorrt"):
    _spec.loader.exec_module(fake_tensorrt)
make_fake_tensorrt, HostMemory = fake_tensorrt.make_fake_tensorrt, fake_tensorrt.HostMemory

LN = "/encoder/layer.0/attention/output/LayerNorm"
DENSE = "/encoder/layer.0/attention/output/dense"
FINAL = "/encoder/layer.0/intermediate/dense/MatMul"
GPU = {"gpu": "NVIDIA Fake 4090", "compute_capability": "8.9", "driver": "580.00", "cuda": "13.0"}


@pytest.fixture(scope="module")
def model():
    return load_model(tm.decomposed_layernorm_block(hidden=16, seq=4))


@pytest.fixture(scope="module")
def plan(model):
    return PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(model)


@pytest.fixture
def cache(tmp_path):
    return ArtifactCache(tmp_path / "cache")


MATRIX = fake_tensorrt.matrix_params()
MATRIX_IDS = [fake_tensorrt.matrix_id(v, r) for v, r in MATRIX]
WEAK_MATRIX = [v for v, r in MATRIX if not r and v.split(".")[0] == "10"]


@pytest.fixture(params=MATRIX, ids=MATRIX_IDS)
def release(request):
    """``(version, rtx)``: the fake configured as each real version of the matrix (tests/trt_api)."""
    return request.param


@pytest.fixture(params=WEAK_MATRIX, ids=[f"trt-{v}" for v in WEAK_MATRIX])
def weak_release(request):
    """The 10.x versions of the matrix: the ones with weak typing."""
    return request.param


@pytest.fixture
def use_fake(monkeypatch):
    """Install a fake tensorrt / tensorrt_rtx module and pretend a GPU is there."""

    def install(version="10.13.0.35", *, rtx=False, **knobs):
        fake = make_fake_tensorrt(version, rtx=rtx, **knobs)
        monkeypatch.setitem(sys.modules, fake.__name__, fake)
        monkeypatch.setattr(trt_backend, "tensorrt_unavailable_reason", lambda module="tensorrt": None)
        monkeypatch.setattr(trt_backend, "device_info", lambda: dict(GPU, compute_capability=knobs.get("gpu_cc", "8.9")))
        monkeypatch.setattr(trt_backend, "installed_version", lambda backend: version)
        backend = TensorRTRTXBackend() if rtx else TensorRTBackend()
        return fake, backend

    return install


def build(backend, plan, cache, typing="auto", **kw):
    return backend._build_engine(plan, BuildConfig(typing=typing, **kw), cache, memory=HostMemory())


# -- availability ------------------------------------------------------------------------
def test_registered_backends():
    assert isinstance(get_backend("tensorrt"), TensorRTBackend)
    assert isinstance(get_backend("tensorrt-rtx"), TensorRTRTXBackend)


@pytest.mark.parametrize("backend, module, reason", [
    (TensorRTBackend, "tensorrt", "TensorRT not installed"),
    (TensorRTRTXBackend, "tensorrt_rtx", "TensorRT-RTX not installed"),
])
def test_unavailable_reasons_without_the_library(backend, module, reason):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    assert backend().unavailable_reason() == reason
    with pytest.raises(BackendUnavailable) as info:
        backend().build(None, BuildConfig(), None)
    assert info.value.reason == reason


def test_no_cuda_device(monkeypatch):
    from pytest_trt.core import environment

    monkeypatch.setattr(environment, "module_available", lambda name: True)
    monkeypatch.setattr(environment, "gpus", lambda: ())
    assert TensorRTBackend().unavailable_reason() == "no CUDA device"


def test_import_errors_become_backend_unavailable(monkeypatch):
    def missing(name):
        raise ModuleNotFoundError(f"No module named '{name}'", name=name)

    def broken(name):
        raise ImportError("libnvinfer.so.10: cannot open shared object file")

    monkeypatch.setattr(trt_versions, "importlib", types.SimpleNamespace(import_module=missing))
    with pytest.raises(BackendUnavailable) as info:
        trt_compat.import_module("tensorrt-rtx")
    assert info.value.reason == "TensorRT-RTX not installed"
    monkeypatch.setattr(trt_versions, "importlib", types.SimpleNamespace(import_module=broken))
    with pytest.raises(BackendUnavailable) as info:
        trt_compat.import_module("tensorrt")
    assert info.value.reason.startswith("TensorRT cannot be imported: libnvinfer.so.10")


def test_import_does_not_import_tensorrt():
    code = ("import sys, pytest_trt.backends.tensorrt.backend, pytest_trt.layers.report; "
            "print(any(m in sys.modules for m in ('tensorrt', 'tensorrt_rtx', 'onnxruntime', 'polygraphy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- typing per version ------------------------------------------------------------------
@pytest.mark.parametrize("version, rtx, auto, weak_reason", [
    ("8.6.1", False, "weak", None),
    ("10.8.0", False, "strong", None),
    ("10.13.0", False, "strong", None),
    ("11.1.0", False, "strong", "TensorRT 11 has no weak typing"),
    ("1.7.1", True, "strong", "TensorRT-RTX is strongly typed only"),
])
def test_typing_selection(version, rtx, auto, weak_reason):
    compat = TrtCompat(make_fake_tensorrt(version, rtx=rtx))
    assert compat.resolve_typing("auto") == auto
    reason = compat.typing_reason("weak")
    if weak_reason is None:
        assert reason is None and compat.has_weak_typing()
    else:
        assert reason.startswith(weak_reason) and not compat.has_weak_typing()
    assert compat.has_unfused_debug_tensors() == (rtx or compat.version >= (10, 12))


def test_supports_from_version_alone(use_fake, plan):
    _, backend = use_fake("11.1.0")
    assert backend.supports(plan, BuildConfig(typing="weak")).startswith("TensorRT 11 has no weak typing")
    assert backend.supports(plan, BuildConfig(typing="auto")) is None
    _, rtx = use_fake("1.7.1", rtx=True)
    assert rtx.supports(plan, BuildConfig(typing="weak")) == "TensorRT-RTX is strongly typed only"
    _, old = use_fake("10.8.0")
    assert old.supports(plan, BuildConfig(typing="weak")) is None


def test_weak_on_11_refuses_to_build(use_fake, plan, cache):
    _, backend = use_fake("11.1.0")
    with pytest.raises(BackendUnavailable, match="TensorRT 11 has no weak typing"):
        build(backend, plan, cache, typing="weak")


# -- strong typing -----------------------------------------------------------------------
def test_strong_build_flags_and_network(use_fake, plan, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    compat = TrtCompat(fake)
    engine = build(backend, plan, cache)
    assert engine.typing == "strong" and engine.backend_name == ("tensorrt-rtx" if release[1] else "tensorrt")
    net, cfg = fake.state.last_network, fake.state.last_config
    strongly_typed = 1 << int(fake.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    # 11.x: STRONGLY_TYPED is "Deprecated: always enabled", so no flag
    assert net.strongly_typed and net.flags == (0 if compat.major == 11 else strongly_typed)
    assert getattr(fake.BuilderFlag, "FP16", None) not in cfg.flags and fake.BuilderFlag.TF32 not in cfg.flags
    assert cfg.profiling_verbosity == fake.ProfilingVerbosity.DETAILED
    # mark_unfused_tensors_as_debug_tensors: 10.12 and later, 11.x, RTX (absent in the real 10.0.1/10.8.0.43)
    assert net.unfused_debug == engine.debug_tensors == (release[1] or compat.version >= (10, 12))
    assert engine.record["parsed"] == "strongly typed realization of the plan"
    assert engine.network_mismatches == []
    # the parsed model is the realization: Casts around the FP32 island
    assert any(layer.name.endswith("/Cast_to_fp32") for layer in net.layers)


def test_strong_options(use_fake, plan, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    build(backend, plan, cache, tf32=True, workspace_bytes=1 << 20, builder_optimization_level=5,
          profiles=({"hidden_states": ((1, 4, 16), (1, 4, 16), (1, 4, 16))},))
    cfg = fake.state.last_config
    assert fake.BuilderFlag.TF32 in cfg.flags
    assert cfg.pool_limits == {fake.MemoryPoolType.WORKSPACE: 1 << 20}
    assert cfg.builder_optimization_level == 5
    assert cfg.profiles[0].shapes == {"hidden_states": ((1, 4, 16),) * 3}


def test_trt11_network_flags(use_fake, plan, cache):
    fake, backend = use_fake("11.1.0")
    engine = build(backend, plan, cache)
    assert fake.state.last_network.flags == 0  # STRONGLY_TYPED: "Deprecated: always enabled" in 11.x
    report = engine.layers()
    assert report.schema == "11.x" and report.summary()["mismatch"] == 0


def test_check_network_dtypes(use_fake, plan):
    fake, _ = use_fake("1.7.1", rtx=True)
    compat = TrtCompat(fake)
    builder = fake.Builder(trt_compat.get_logger(fake))
    network = builder.create_network(compat.network_flags(True))
    from pytest_trt.realize import realize_strong

    assert fake.OnnxParser(network, None).parse(realize_strong(plan).SerializeToString())
    assert check_network_dtypes(network, plan) == []
    sub = next(layer for layer in network.layers if layer.name == f"{LN}/Sub")
    sub.get_output(0).dtype = fake.DataType.HALF
    found = check_network_dtypes(network, plan)
    assert [(m.node, m.tensor, m.planned, m.actual) for m in found] == [
        (f"{LN}/Sub", f"{LN}/Sub_output_0", "fp32", "fp16")]
    assert "planned fp32" in found[0].describe()
    report = LayerReport.from_network((compat, network), plan)
    assert report.source == "network" and report.backend == "tensorrt-rtx"
    assert report.nodes[f"{LN}/Sub"].status == "mismatch"


# -- weak typing -------------------------------------------------------------------------
def test_weak_hints_by_name_and_metadata(use_fake, plan, cache, weak_release):
    fake, backend = use_fake(weak_release, split_nodes=(f"{LN}/Pow",))
    engine = build(backend, plan, cache, typing="weak")
    assert engine.typing == "weak" and engine.record["parsed"] == "original model"
    net, cfg = fake.state.last_network, fake.state.last_config
    assert not net.strongly_typed and net.flags == 0
    assert {fake.BuilderFlag.FP16, fake.BuilderFlag.OBEY_PRECISION_CONSTRAINTS} <= cfg.flags
    assert fake.BuilderFlag.TF32 not in cfg.flags
    layers = {layer.name: layer for layer in net.layers}
    aux, pow_ = layers[f"{LN}/Pow_aux"], layers[f"{LN}/Pow"]  # aux carries Pow only via its metadata
    assert aux._precision == fake.DataType.FLOAT and aux._output_types == {0: fake.DataType.FLOAT}
    assert pow_._precision == fake.DataType.FLOAT and pow_._output_types == {0: fake.DataType.FLOAT}
    mm = layers[f"{DENSE}/MatMul"]
    assert mm._precision == fake.DataType.HALF and mm._output_types == {0: fake.DataType.HALF}
    final = layers[FINAL]  # fp16 node producing a graph output: output stays fp32
    assert final._precision == fake.DataType.HALF and final._output_types == {0: fake.DataType.FLOAT}
    constant = next(layer for layer in net.layers if layer.type == fake.LayerType.CONSTANT)
    assert constant._precision is None
    assert engine.weak_hints["applied"][f"{LN}/Pow"] == [f"{LN}/Pow_aux", f"{LN}/Pow"]
    assert engine.weak_hints["unmatched"] == []
    assert engine.debug_tensors == (TrtCompat(fake).version >= (10, 12))  # mark_unfused_...: 10.12+
    report = engine.layers()
    assert report.typing == "weak" and report.summary()["mismatch"] == 0


def test_weak_bf16_sets_the_bf16_flag(use_fake, model, cache, weak_release):
    fake, backend = use_fake(weak_release)
    bf16 = PrecisionPolicy(default="bf16", keep_fp32=("*/LayerNorm/*",)).resolve(model)
    assert backend.supports(bf16, BuildConfig(typing="weak")) is None
    engine = build(backend, bf16, cache, typing="weak")
    cfg = fake.state.last_config
    assert {fake.BuilderFlag.BF16, fake.BuilderFlag.OBEY_PRECISION_CONSTRAINTS} <= cfg.flags
    assert fake.BuilderFlag.FP16 not in cfg.flags and engine.typing == "weak"


def test_weak_hints_unmatched_nodes_are_reported(use_fake, plan, weak_release):
    fake, _ = use_fake(weak_release)
    compat = TrtCompat(fake)
    network = fake.Builder(None).create_network(0)
    hints = types.SimpleNamespace(layer_precision={"ghost": "fp32"}, output_types={})
    result = apply_weak_hints(compat, network, hints, plan)
    assert result.unmatched == ["ghost"] and result.applied == {}


def test_weak_myelin_ignoring_constraints_is_caught(use_fake, plan, cache, weak_release):
    fake, backend = use_fake(weak_release, myelin_prefix=f"{LN}/")
    report = build(backend, plan, cache, typing="weak").layers()
    compute = [o for o in report.nodes_matching(plan.match("*/LayerNorm/*")) if o.status != "fixed"]
    assert compute and all(o.status == "mismatch" and o.myelin and o.observed == "fp16" for o in compute)
    assert report.myelin_layers()[0].name.startswith("__myl_")


def test_foreign_node_engine_with_half_boundary_is_a_mismatch(use_fake, plan, cache, weak_release):
    fake, backend = use_fake(weak_release, myelin_prefix=f"{LN}/", foreign_node=True)
    report = build(backend, plan, cache, typing="weak").layers()
    compute = [o for o in report.nodes_matching(plan.match("*/LayerNorm/*")) if o.status != "fixed"]
    assert compute and all(o.status == "mismatch" and o.observed == "fp16" and o.myelin for o in compute)


@pytest.mark.parametrize("foreign", [False, True])
def test_weak_myelin_kernel_with_fp32_boundary_is_unverifiable_not_ok(use_fake, plan, cache, foreign):
    # Myelin honoured the hints at the kernel's boundary (FP32): nothing shows the Pow inside.
    fake, backend = use_fake("10.8.0", myelin_prefix=f"{LN}/", myelin_ignores_hints=False, foreign_node=foreign)
    report = build(backend, plan, cache, typing="weak").layers()
    pow_ = report.nodes[f"{LN}/Pow"]
    assert pow_.status == "unverifiable" and pow_.evidence == "inferred" and pow_.observed == "fp32"
    assert report.evidence_counts(plan.match("*/LayerNorm/*"))["inferred"] >= 8


def test_strong_myelin_kernel_with_consistent_boundary_is_typed_in_the_network(use_fake, plan, cache):
    fake, backend = use_fake("10.13.0.35", myelin_prefix=f"{LN}/")
    report = build(backend, plan, cache, typing="strong").layers()
    pow_ = report.nodes[f"{LN}/Pow"]
    assert pow_.status == "ok" and pow_.evidence == "inferred"
    assert pow_.detail.startswith("strong typing: typed in the network, boundary consistent")


# -- failures ----------------------------------------------------------------------------
def test_build_error_names_node_and_config_and_is_not_cached(use_fake, plan, cache, release):
    msg = (f"[ONNX Layer: {LN}/Pow]: Error Code 10: Internal Error (Could not find any implementation for node "
           f"{LN}/Pow.)")
    fake, backend = use_fake(release[0], rtx=release[1], fail_build=msg)
    with pytest.raises(BuildError) as info:
        build(backend, plan, cache, tf32=True)
    text = str(info.value)
    assert text.startswith(f"TensorRT build failed for {plan.model.label} [{plan.policy.describe()}]")
    assert f"at node '{LN}/Pow'" in text
    assert f"build config: {TrtCompat(fake).label}, strong typing, low precision fp16, tf32 on" in text
    assert "TensorRT said:" in text and "Could not find any implementation" in text
    assert "Nothing was cached" in text
    assert cache.entries("engine") == []
    fake.state.fail_build = None
    assert build(backend, plan, cache).build_info.cache_hit is False


def test_parser_error_names_node(use_fake, plan, cache, release):
    _, backend = use_fake(release[0], rtx=release[1], unsupported_ops=("Sqrt",))
    with pytest.raises(BuildError) as info:
        build(backend, plan, cache)
    text = str(info.value)
    assert "while parsing the ONNX model" in text and f"at node '{LN}/Sqrt'" in text
    assert "No importer registered for op: Sqrt" in text


def test_node_from_log():
    nodes = {"/a/Pow", "/a/Pow_1", "/b/MatMul"}
    assert node_from_log(["[ONNX Layer: /a/Pow_1] failed"], nodes) == "/a/Pow_1"
    assert node_from_log(["no tactic for /b/MatMul (shape 1x4)"], nodes) == "/b/MatMul"
    assert node_from_log(["layer /a/Pow_12 failed"], nodes) is None
    assert node_from_log([], nodes) is None


def test_rtx_on_cc90_builds_caches_and_maps_deserialization(use_fake, plan, cache):
    fake, backend = use_fake("1.7.1", rtx=True, gpu_cc="9.0")
    engine = build(backend, plan, cache)
    assert engine.backend_name == "tensorrt-rtx" and engine.typing == "strong"
    assert len(cache.entries("engine")) == 1 and engine.network_mismatches == []
    assert fake.BuilderFlag.TF32 not in fake.state.last_config.flags
    assert fake.state.timing_loaded == []  # timing cache calls are deprecated in TensorRT-RTX
    with pytest.raises(BackendUnavailable) as info:
        engine.run(tm.sample_feeds(plan.model.proto))
    reason = info.value.reason
    assert reason.startswith("TensorRT-RTX does not support compute capability 9.0")
    assert "(NVIDIA Fake 4090); it supports 8.0 8.6 8.9 12.0 12.1 >12.0." in reason
    with pytest.raises(BackendUnavailable):
        engine.layers()
    assert fake.state.deserializations == 1  # the verdict is remembered
    assert build(backend, plan, cache).build_info.cache_hit


def test_corrupt_engine_bytes_is_build_error(use_fake, plan, cache, release):
    _, backend = use_fake(release[0], rtx=release[1])
    engine = build(backend, plan, cache)
    engine._data = b"garbage"
    with pytest.raises(BuildError, match="could not deserialize.*Magic tag does not match.*--trt-rebuild"):
        engine.load()


# -- cache and timing cache --------------------------------------------------------------
def test_cache_hit_and_shared_timing_cache(use_fake, plan, model, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    first = build(backend, plan, cache)
    assert not first.build_info.cache_hit and first.build_info.key
    again = build(backend, plan, cache)
    assert again.build_info.cache_hit and again.build_info.key == first.build_info.key
    assert fake.state.builds == 1
    files = list((cache.root / "timing-cache").glob("*.cache"))
    if release[1]:  # TensorRT-RTX deprecates the timing-cache calls: none is kept
        assert files == [] and fake.state.timing_loaded == []
        return
    assert len(files) == 1 and "NVIDIA_Fake_4090" in files[0].name
    # a different plan reuses (loads) the shared timing cache
    other = PrecisionPolicy(default="fp16").resolve(model)
    build(backend, other, cache)
    assert fake.state.timing_loaded[0] == [] and fake.state.timing_loaded[1] != []
    assert len(json.loads(files[0].read_text())) == 2
    parts = backend.cache_parts(plan, BuildConfig())
    assert parts["typing"] == "strong" and parts["device"]["gpu"] == "NVIDIA Fake 4090"
    assert parts["backend_versions"] == {backend.name: release[0]}


def test_corrupt_timing_cache_is_ignored(use_fake, plan, cache, release):
    _, backend = use_fake(release[0], rtx=release[1])
    path = backend._timing_cache_path(backend.compat(), cache)
    if release[1]:
        assert path is None  # no timing cache for TensorRT-RTX
        return
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a timing cache")
    engine = build(backend, plan, cache)
    assert any("timing cache not loaded" in n for n in engine.record["notes"])


def test_build_without_cache(use_fake, plan, release):
    _, backend = use_fake(release[0], rtx=release[1])
    engine = backend._build_engine(plan, BuildConfig(), None, memory=HostMemory())
    assert not engine.build_info.cache_hit and engine.engine_bytes.startswith(fake_tensorrt.MAGIC)


# -- running -----------------------------------------------------------------------------
def test_run_returns_model_outputs_and_frees_memory(use_fake, plan, cache, release):
    _, backend = use_fake(release[0], rtx=release[1])
    memory = HostMemory()
    engine = backend._build_engine(plan, BuildConfig(), cache, memory=memory)
    feeds = tm.sample_feeds(plan.model.proto)
    out = engine.run(feeds)
    assert list(out) == ["output"] and out["output"].dtype == np.float32
    from pytest_trt.reference.baseline import make_session, run_session

    expected = run_session(make_session(plan.model.serialized()), feeds)["output"]
    np.testing.assert_allclose(out["output"], expected, rtol=2e-2, atol=2e-2)
    assert memory.buffers == {} and memory.freed == 2


def test_run_feed_errors(use_fake, plan, cache, release):
    _, backend = use_fake(release[0], rtx=release[1])
    engine = build(backend, plan, cache)
    with pytest.raises(InputError, match="no feed for engine input"):
        engine.run({})
    with pytest.raises(InputError, match="no optimization profile of the engine covers the feeds"):
        engine.run({"hidden_states": np.zeros((1, 5, 16), np.float32)})


def test_run_layerwise_with_debug_tensors(use_fake, plan, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    engine = build(backend, plan, cache)
    values, note = engine.run_layerwise(tm.sample_feeds(plan.model.proto))
    if not TrtCompat(fake).has_unfused_debug_tensors():  # before 10.12: the layerwise build
        assert "SEPARATE layerwise build" in note and len(cache.entries("engine-probe")) == 1
        return
    assert "debug tensors of the engine under test" in note
    assert f"{LN}/Pow_output_0" in values and values[f"{LN}/Pow_output_0"].dtype == np.float32
    assert set(values) <= set(plan.tensor_precision)
    assert cache.entries("engine-probe") == []


@pytest.mark.parametrize("version", ["10.0.1", "10.8.0.43"])
def test_run_layerwise_uses_a_layerwise_build_before_10_12(use_fake, plan, cache, version):
    fake, backend = use_fake(version)
    engine = build(backend, plan, cache)
    values, note = engine.run_layerwise(tm.sample_feeds(plan.model.proto))
    assert "SEPARATE layerwise build" in note and "DIFFERENT engine" in note
    assert len(cache.entries("engine-probe")) == 1
    assert f"{LN}/Pow_output_0" in values and "output" in values
    assert engine.layerwise_engine.record["probe_outputs"] > 0


def test_dtype_names():
    fake = make_fake_tensorrt()
    assert [trt_compat.dtype_name(d) for d in (fake.DataType.FLOAT, fake.DataType.HALF, fake.DataType.BF16,
                                               fake.DataType.INT64, fake.DataType.BOOL)] == \
           ["fp32", "fp16", "bf16", "int64", "bool"]
    assert trt_compat.trt_dtype(fake, "bf16") == fake.DataType.BF16


def test_logger_is_shared_and_captures(use_fake, release):
    fake, _ = use_fake(release[0], rtx=release[1])
    logger = trt_compat.get_logger(fake)
    assert trt_compat.get_logger(fake) is logger
    with logger.capture() as records:
        logger.log(fake.ILogger.Severity.WARNING, "Detected layernorm nodes in FP16")
        logger.log(fake.ILogger.Severity.VERBOSE, "noise")
    assert [(r.severity, r.message) for r in records] == [("warning", "Detected layernorm nodes in FP16")]


def test_rtx_unsupported_gpu_message_as_seen_on_h200():
    # logged by TensorRT-RTX 1.7.1.116 on an H200 (compute capability 9.0), 2026-11-22
    seen = ("IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine cannot run on this GPU, which "
            "has compute capability 9.0. Supported compute capabilities: 8.0 8.6 8.9 12.0 12.1 >12.0. TensorRT-RTX "
            "does not support this compute capability, so the engine cannot be rebuilt for it. In "
            "throwUnlessComputeCapSupported at /_src/runtime/dispatch/runtime.cpp:84)")
    compat = TrtCompat(make_fake_tensorrt("1.7.1.116", rtx=True))
    reason = compat.unsupported_gpu_reason(["unrelated", seen], "NVIDIA H200")
    assert reason.startswith("TensorRT-RTX does not support compute capability 9.0 (NVIDIA H200); "
                             "it supports 8.0 8.6 8.9 12.0 12.1 >12.0. The engine was built and cached")
    assert compat.unsupported_gpu_reason(["Serialization assertion failed"]) is None


@pytest.mark.parametrize("typing", ["weak", "strong"])
def test_probe_is_evidence_never_a_pass_under_weak_typing(use_fake, plan, cache, typing, monkeypatch):
    from pytest_trt.errors import PrecisionError
    from pytest_trt.verify.precision import assert_precision

    fake, backend = use_fake("10.8.0", myelin_prefix=f"{LN}/", myelin_ignores_hints=False)
    # the probe builds the LayerNorm alone through backend.build: run it on host memory too
    monkeypatch.setattr(backend, "build", lambda p, c, k, *, rebuild=False: build(backend, p, k, typing=c.typing,
                                                                                   profiles=c.profiles))
    engine = build(backend, plan, cache, typing=typing)
    if typing == "strong":
        check = assert_precision(engine, "*/LayerNorm/*", "fp32", method="probe")
        pow_ = next(v for v in check.nodes if v.node == f"{LN}/Pow")
        assert pow_.status == "pass" and pow_.evidence == "inferred"
        assert "strong typing: typed in the network as fp32" in pow_.detail and "fused differently" in pow_.detail
        return
    for method in ("probe", "both"):
        with pytest.raises(PrecisionError) as exc:
            assert_precision(engine, "*/LayerNorm/*", "fp32", method=method)
        check = exc.value.findings
        assert check.probes and check.probes[0].verdict == "fp32"  # the probe agrees ...
        pow_ = next(v for v in check.nodes if v.node == f"{LN}/Pow")
        assert pow_.status == "unverifiable" and pow_.probe.endswith("behaves like fp32")  # ... as evidence only
        assert check.counts()["pass"] == (0 if method == "probe" else 1)

# -- the planned-vs-parsed rule on every strongly typed build (pytest_trt.layers.network_rule) ----
def _realize_all_fp16(monkeypatch):
    """Alter the strongly typed realization on purpose: nodes planned FP32 reach the parser in FP16."""
    import pytest_trt.realize as realize

    real = realize.realize_strong
    monkeypatch.setattr(realize, "realize_strong",
                        lambda plan, *a, **k: real(PrecisionPolicy(default="fp16").resolve(plan.model), *a, **k))


@pytest.mark.parametrize("version, rtx", [("11.1.0", False), ("1.7.1", True)])
def test_strong_build_fails_when_a_planned_fp32_node_is_parsed_lower(use_fake, plan, cache, monkeypatch, version, rtx):
    fake, backend = use_fake(version, rtx=rtx)
    _realize_all_fp16(monkeypatch)
    with pytest.raises(trt_backend.LoweredPrecisionError) as info:
        build(backend, plan, cache)
    assert isinstance(info.value, BuildError)
    assert f"{LN}/Pow (Pow): planned fp32, parsed fp16" in str(info.value)
    assert {m.verdict for m in info.value.mismatches} == {"lower"}
    assert info.value.nodes[f"{LN}/Pow"] == "fp16" and cache.entries("engine") == []  # never cached


def test_strong_build_records_promotions_without_failing(use_fake, model, cache, monkeypatch):
    """Planned FP16, parsed FP32: "TensorRT computes this in higher precision than planned"."""
    fake, backend = use_fake("1.7.1", rtx=True)
    import pytest_trt.realize as realize

    real = realize.realize_strong
    keep = PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*", f"{DENSE}/*"))
    monkeypatch.setattr(realize, "realize_strong", lambda plan, *a, **k: real(keep.resolve(plan.model), *a, **k))
    plan16 = PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(model)
    engine = build(backend, plan16, cache)
    promoted = engine.network_mismatches
    assert promoted and {m.verdict for m in promoted} == {"higher"}
    assert all(m.node.startswith(DENSE) and (m.planned, m.actual) == ("fp16", "fp32") for m in promoted)
    assert "higher precision than planned" in promoted[0].describe()
    assert engine.network_nodes[promoted[0].node] == "fp32"


def test_weak_typing_rule_on_the_engine_layers(use_fake, plan, tmp_path):
    """Weak typing: a node planned FP32 that the engine ran in FP16 (Myelin ignoring the hints)
    is a failure of the same rule, found on the engine's layer report."""
    fake, backend = use_fake("10.8.0", myelin_prefix=f"{LN}/")
    lowered = build(backend, plan, ArtifactCache(tmp_path / "a"), typing="weak").typing_rule_failures()
    assert lowered and all("planned fp32, the engine ran it in fp16" in line for line in lowered)
    assert any(line.startswith(f"{LN}/Pow (Pow)") for line in lowered)
    fake, backend = use_fake("10.8.0")  # hints honoured
    assert build(backend, plan, ArtifactCache(tmp_path / "b"), typing="weak").typing_rule_failures() == []
    fake, backend = use_fake("10.8.0", myelin_prefix=f"{LN}/")
    strong = build(backend, plan, ArtifactCache(tmp_path / "c"), typing="strong")
    assert strong.typing_rule_failures() == []  # strong typing was judged on the parsed network at build time


def test_weak_typing_rule_fails_trt_check_after_the_accuracy_verdict(use_fake, plan, model, tmp_path):
    """trt.check() on a weakly typed engine whose Myelin region ran planned-FP32 nodes in FP16:
    outputs within (generous) tolerance, then PrecisionError naming the nodes."""
    from pytest_trt.errors import PrecisionError
    from pytest_trt.glue.case import TrtCase
    from pytest_trt.run.session import TrtSession
    from pytest_trt.run.settings import Settings

    class Node:  # what TrtCase reads from a pytest item
        nodeid, path = "test_weak.py::test_weak", None

        def iter_markers(self, name):
            return iter(())

    fake, backend = use_fake("10.8.0", myelin_prefix=f"{LN}/")
    engine = build(backend, plan, ArtifactCache(tmp_path / "a"), typing="weak")
    session = TrtSession.create(Settings(cache_dir=tmp_path / "c"))
    case = TrtCase(session, Node(), model=model, precision="fp16", keep_fp32=["*/LayerNorm/*"])
    case.__dict__["plan"] = plan
    case._engine = engine
    with pytest.raises(PrecisionError) as info:
        case.check(atol=1e3, rtol=1e3)
    assert "weak typing" in str(info.value) and f"{LN}/Pow (Pow): planned fp32, the engine ran it in fp16" in str(
        info.value)
    assert [r.result["passed"] for r in case.records if r.kind == "accuracy"] == [True]


# -- debug tensors: both switches, internal names, partial capture ------------------------
def test_both_debug_switches(use_fake, release):
    fake, _ = use_fake(release[0], rtx=release[1])
    compat = TrtCompat(fake)
    engine_desc = {"inputs": [], "outputs": []}
    context = fake.IExecutionContext(fake.ICudaEngine(engine_desc))
    switches = compat.set_debug_state(context, True)
    if compat.has_unfused_debug_tensors():
        assert switches == ["set_all_tensors_debug_state", "unfused_tensors_debug_state"]
        assert context.debug_state and context.unfused_tensors_debug_state
        compat.set_debug_state(context, False)
        assert not context.unfused_tensors_debug_state
    else:  # 10.0 ... 10.11: neither the marking call nor the property exists
        assert switches == ["set_all_tensors_debug_state"] and not hasattr(context, "unfused_tensors_debug_state")


def test_debug_tensors_with_internal_names_are_named_through_the_layer_report(use_fake, plan, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1], internal_tensor_names=True, split_nodes=(f"{LN}/Pow",))
    engine = build(backend, plan, cache)
    values, note = engine.run_layerwise(tm.sample_feeds(plan.model.proto))
    assert f"{LN}/Sub_output_0" in values and f"{LN}/Pow_output_0" in values
    assert set(values) <= set(plan.tensor_precision)
    if not TrtCompat(fake).has_unfused_debug_tensors():
        assert "SEPARATE layerwise build" in note
        return
    assert "named through the engine's layer report" in note and "PARTIAL" not in note
    assert cache.entries("engine-probe") == []
    # the Pow node's first layer (the split's aux layer) is an intermediate: kept, named as such, not compared
    unmapped = engine.unmapped_debug_tensors
    intermediate = {n: why for n, (why, _) in unmapped.items() if "intermediate" in why}
    (name, why), = intermediate.items()
    assert name.startswith("(Unnamed Layer*") and f"intermediate of ONNX node '{LN}/Pow'" in why
    casts = [why for n, (why, _) in unmapped.items() if n != name]
    assert casts and all("a Cast the strongly typed realization added" in w for w in casts)
    assert f"{len(unmapped)} engine tensor(s) not mapped to ONNX tensors" in note
    # mapped values are the ONNX tensors' values (the fake computes them with ONNX Runtime)
    _, plain = use_fake(release[0], rtx=release[1])
    reference, _ = build(plain, plan, cache).run_layerwise(tm.sample_feeds(plan.model.proto))
    np.testing.assert_array_equal(values[f"{LN}/Sub_output_0"], reference[f"{LN}/Sub_output_0"])


def test_partial_capture_falls_back_to_the_layerwise_build(use_fake, plan, cache, release):
    missing = f"{LN}/Sqrt_output_0"
    fake, backend = use_fake(release[0], rtx=release[1], internal_tensor_names=True, unemitted_debug=(missing,))
    engine = build(backend, plan, cache)
    values, note = engine.run_layerwise(tm.sample_feeds(plan.model.proto))
    assert missing in values
    if TrtCompat(fake).has_unfused_debug_tensors():
        assert "PARTIAL capture: 1 ONNX tensor(s)" in note and missing in note and "DIFFERENT engine" in note
    else:
        assert "SEPARATE layerwise build" in note
    assert len(cache.entries("engine-probe")) == 1


# -- data-dependent output shapes ----------------------------------------------------------
def _nonzero_model():
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("NonZero", ["r"], ["idx"], name="nz")],
        "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [1, "n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return load_model(model)


def test_data_dependent_output_shape_through_an_output_allocator(use_fake, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    plan = PrecisionPolicy(default="fp32").resolve(_nonzero_model())
    memory = HostMemory()
    engine = backend._build_engine(plan, BuildConfig(), cache, memory=memory)
    x = np.array([1.0, -2.0, 0.0, 3.0, 4.0, -1.0], np.float32)
    out = engine.run({"x": x})
    assert out["idx"].shape == (1, 3) and out["idx"].tolist() == [[0, 3, 4]]
    assert memory.buffers == {}  # the allocator's buffer is freed too


# -- optimization profiles -------------------------------------------------------------------
def _dynamic_model():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Neg", ["r"], ["y"], name="neg")],
        "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 4])])
    return load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_the_profile_covering_the_feeds_is_selected(use_fake, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    plan = PrecisionPolicy(default="fp32").resolve(_dynamic_model())
    profiles = ({"x": ((1, 4), (2, 4), (2, 4))}, {"x": ((3, 4), (4, 4), (8, 4))})
    engine = backend._build_engine(plan, BuildConfig(profiles=profiles), cache, memory=HostMemory())
    for batch, profile in ((5, 1), (2, 0), (8, 1)):
        x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4) - 3
        out = engine.run({"x": x})
        np.testing.assert_array_equal(out["y"], -np.maximum(x, 0))
        assert engine._context._profile == profile
    with pytest.raises(InputError) as info:
        engine.run({"x": np.zeros((9, 4), np.float32)})
    text = str(info.value)
    assert "no optimization profile of the engine covers the feeds (x (9, 4))" in text
    assert "profile 0 (x: min (1, 4) max (2, 4)); profile 1 (x: min (3, 4) max (8, 4))" in text


# -- engines released when the session no longer needs them ----------------------------------
def test_session_releases_least_recently_used_engines(use_fake, model, tmp_path, release):
    from pytest_trt.run.session import TrtSession
    from pytest_trt.run.settings import Settings

    fake, backend = use_fake(release[0], rtx=release[1])
    # each loaded engine holds its plan bytes + 1 MiB of context memory (the fake's device_memory_size*)
    session = TrtSession(settings=Settings(cache_dir=tmp_path / "c", engine_memory_bytes=(1 << 20) * 3 // 2),
                         backend=backend, backend_reason="test")
    plans = [PrecisionPolicy(default=p, keep_fp32=k).resolve(model)
             for p, k in (("fp16", ("*/LayerNorm/*",)), ("fp16", ()), ("fp32", ()))]
    engines = []
    feeds = tm.sample_feeds(model.proto)
    for plan in plans:
        engine, _ = session.engine(plan, session.build_config())
        engine._memory = HostMemory()
        engine.run(feeds)
        assert engine.loaded_bytes > 1 << 20
        engines.append(engine)
    # asking for the third engine released the least recently used one: the other loaded engines must
    # fit in the limit (1.5 MiB: one engine)
    assert [e.loaded_bytes > 0 for e in engines] == [False, True, True]
    assert [label for label, _ in session.released_engines] == [engines[0].describe()]
    again, event = session.engine(plans[0], session.build_config())
    assert again is engines[0] and event.cache_hit
    assert [e.loaded_bytes > 0 for e in engines] == [False, False, True]  # engines[1] was least recently used
    deserialized = fake.state.deserializations
    again.run(feeds)  # loads again from the plan bytes: no rebuild
    assert fake.state.deserializations == deserialized + 1 and fake.state.builds == 3
    assert engines[2].loaded_bytes > 0  # released only when the next engine is asked for
    session.engine(plans[1], session.build_config())
    assert engines[2].loaded_bytes == 0 and engines[0].loaded_bytes > 0


def test_engine_memory_option_and_default(monkeypatch, tmp_path):
    from pytest_trt.core import environment
    from pytest_trt.run.session import TrtSession
    from pytest_trt.run.settings import Settings, parse_size

    session = TrtSession(settings=Settings(cache_dir=tmp_path), backend=None, backend_reason="")
    monkeypatch.setattr(environment, "gpus", lambda: (environment.GpuInfo("G", "9.0", "580", "81559 MiB"),))
    assert session.engine_memory_limit == 81559 * 1024 * 1024 // 2
    monkeypatch.setattr(environment, "gpus", lambda: ())
    assert session.engine_memory_limit is None
    session.settings.engine_memory_bytes = parse_size("8G")
    assert session.engine_memory_limit == 8 << 30


# -- models over the protobuf limit -----------------------------------------------------------
@pytest.mark.parametrize("typing", ["strong", "weak"])
def test_models_over_the_protobuf_limit_are_parsed_from_a_file_with_external_data(
        use_fake, plan, cache, release, monkeypatch, typing):
    fake, backend = use_fake(release[0], rtx=release[1])
    if typing == "weak" and not TrtCompat(fake).has_weak_typing():
        typing = "strong"
    monkeypatch.setattr(trt_build, "EXTERNAL_DATA_THRESHOLD", 1024)  # this model is ~5 KB: "too large"
    before = plan.model.proto.SerializeToString()
    seen = []
    real_load = __import__("onnx").load

    def spy(path, *a, **k):
        data = Path(str(path) + ".data")
        seen.append(data.exists() and data.stat().st_size > 0)
        return real_load(path, *a, **k)

    monkeypatch.setattr(fake_tensorrt.onnx, "load", spy)
    engine = build(backend, plan, cache, typing=typing)
    assert len(fake.state.parsed_files) == 1 and seen == [True]  # weights were in the external data file
    assert not Path(fake.state.parsed_files[0]).exists()  # the temporary copy is gone
    assert engine.record["parsed_from_file"].startswith("external data")
    assert plan.model.proto.SerializeToString() == before  # the user's model was not modified
    feeds = tm.sample_feeds(plan.model.proto)
    from pytest_trt.reference.baseline import make_session, run_session

    expected = run_session(make_session(plan.model.serialized()), feeds)["output"]
    np.testing.assert_allclose(engine.run(feeds)["output"], expected, rtol=2e-2, atol=2e-2)


# -- shape-tensor inputs -----------------------------------------------------------------------
def _reshape_model():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
         helper.make_node("Neg", ["r"], ["y"], name="neg")],
        "reshape", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                    helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    return load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_shape_tensor_inputs_are_given_by_value(use_fake, cache, release):
    fake, backend = use_fake(release[0], rtx=release[1])
    plan = PrecisionPolicy(default="fp32").resolve(_reshape_model())
    with pytest.raises(BuildError, match="input 'shape' is a shape tensor .* declare a profile with its min/opt/max"):
        backend._build_engine(plan, BuildConfig(), cache, memory=HostMemory())
    profiles = ({"shape": ((1, 1), (3, 4), (12, 12))},)
    engine = backend._build_engine(plan, BuildConfig(profiles=profiles), cache, memory=HostMemory())
    assert fake.state.last_config.profiles[0].values == {"shape": ((1, 1), (3, 4), (12, 12))}
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ((3, 4), (12, 1), (4, 3)):
        out = engine.run({"x": x, "shape": np.array(shape, np.int64)})
        np.testing.assert_array_equal(out["y"], -x.reshape(shape))
    with pytest.raises(InputError, match=r"shape values: min \(1, 1\) max \(12, 12\)"):
        engine.run({"x": x, "shape": np.array((1, 13), np.int64)})


# -- models with external weights (issue 29) ---------------------------------------------------
@pytest.mark.parametrize("typing", ["strong", "weak"])
def test_external_weights_reach_the_parser_by_pointer_or_from_the_models_own_file(use_fake, cache, release,
                                                                                 tmp_path, typing):
    from pytest_trt.inputs import make_feeds
    from pytest_trt.model.big_models import write_decoder

    fake, backend = use_fake(release[0], rtx=release[1])
    if typing == "weak" and not TrtCompat(fake).has_weak_typing():
        pytest.skip(f"{release} has no weak typing")
    info = write_decoder(tmp_path / "m" / "decoder.onnx", layers=1, hidden=128, intermediate=256, seq=4)
    model = load_model(info.path)
    assert model.has_external_weights
    big_plan = PrecisionPolicy(default="fp16", keep_fp32=("*/input_layernorm/*",)).resolve(model)
    engine = build(backend, big_plan, cache, typing=typing)
    if typing == "weak":  # the original model: parsed from its own file, external data beside it
        assert fake.state.parsed_files == [str(info.path)] and not fake.state.user_initializers
        assert engine.record["parsed_from_file"].startswith("the model's own file")
    elif TrtCompat(fake).has_user_initializers():  # 10.13+, 11.x, RTX: the realization's weights by pointer
        assert not fake.state.parsed_files
        assert len(fake.state.user_initializers) == 3  # gate, up, down: from the shared FP16 weight set
        assert engine.record["parsed_from_file"].startswith("user initializers")
        assert [e.kind for e in cache.entries()].count("weights") == 1
    else:  # older parsers: a temporary folder with the graph and a data file, removed afterwards
        (parsed,) = fake.state.parsed_files
        assert not Path(parsed).exists() and "temporary copy" in engine.record["parsed_from_file"]
    feeds = make_feeds(model)
    from pytest_trt.reference.baseline import fp32_baseline

    expected = fp32_baseline(model, feeds)["last_hidden_state"]
    np.testing.assert_allclose(engine.run(feeds)["last_hidden_state"], expected, rtol=2e-2, atol=2e-2)
