"""The ledger's TensorRT path against the FAKE tensorrt module, fed detailed inspector JSON from cited sources.

The engine inspector's JSON comes from ``tests/data/inspector/bert_tiny_kgen_trt10.json`` /
``_trt11.json`` (a Myelin region of kgen/gemm kernels, each fixture's ``.SOURCES.md`` quotes
NVIDIA/TensorRT #4397 and the other sources it follows) and ``bert_tiny_foreignnode_names.json``
(the same engine collapsed into one ``{ForeignNode[...]}`` layer). The layer times are
SYNTHETIC, declared in each test (``LAYER_MS``): the fake reports them through the real API's
shape (``IProfiler.report_layer_time(layer_name, ms)`` after ``report_to_profiler()``), so what
is tested is our glue and joins, never TensorRT's timing. Every TensorRT member used here is
checked against the real bindings of each version by the trt_api tier (this file is part of its
recorded inventory); running on a GPU is ``tests/gpu``'s job (docs/VERIFIED.md).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from pytest_trt.backends.base import BuildConfig
from pytest_trt.backends.tensorrt import backend as trt_backend
from pytest_trt.backends.tensorrt.backend import TensorRTBackend, TensorRTRTXBackend
from pytest_trt.errors import BackendUnavailable
from pytest_trt.inputs import make_feeds
from pytest_trt.ledger import ledger_of, trtexec_profile
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy

_spec = importlib.util.spec_from_file_location("_pytest_trt_fake_tensorrt", Path(__file__).with_name("fake_tensorrt.py"))
fake_tensorrt = sys.modules.setdefault("_pytest_trt_fake_tensorrt", importlib.util.module_from_spec(_spec))
if not hasattr(fake_tensorrt, "make_fake_tensorrt"):
    _spec.loader.exec_module(fake_tensorrt)

DATA = Path(__file__).resolve().parents[1] / "data"
INSPECTOR = DATA / "inspector"
MATRIX = fake_tensorrt.matrix_params()
MATRIX_IDS = [fake_tensorrt.matrix_id(v, r) for v, r in MATRIX]
SHAPE = (1, 8)
GPU = {"gpu": "NVIDIA Fake 4090", "compute_capability": "8.9", "driver": "580.00", "cuda": "13.0"}
MHA = "_gemm_mha_v2_myl0_7"
DENSE = "/encoder/layer_0/attention/output/dense/MatMul_myl0_9"
LN_KERNEL = "__myl_AddCastMeanSubPowMeanAddSqrtDivCastMulCastAddCast_myl0_10"
#: SYNTHETIC layer times (ms), declared here: the attention kernel varies per iteration (its median is 0.30)
LAYER_MS = {MHA: [0.2, 0.3, 0.4], DENSE: 0.1, LN_KERNEL: 0.05}
OTHER_MS = 0.01  # every other layer (the fake's default)


@pytest.fixture(scope="module")
def plan():
    model = load_model(DATA / "bert_tiny_opset14.onnx")
    return PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(model)


@pytest.fixture(scope="module")
def feeds(plan):
    return make_feeds(plan.model, shapes={"input_ids": SHAPE, "attention_mask": SHAPE},
                      val_range={"input_ids": (0, 255), "attention_mask": (1, 1)})


def inspector_for(version: str, rtx: bool) -> dict:
    name = "bert_tiny_kgen_trt11.json" if rtx or version.startswith("11.") else "bert_tiny_kgen_trt10.json"
    return json.loads((INSPECTOR / name).read_text())


@pytest.fixture
def tensorrt_engine(monkeypatch, plan):
    """An engine of the fake TensorRT configured as ``version``, whose inspector JSON is ``inspector``."""

    def make(version="10.13.3.9", *, rtx=False, inspector=None, layer_times=LAYER_MS):
        fake = fake_tensorrt.make_fake_tensorrt(version, rtx=rtx, inspector_json=inspector or inspector_for(version, rtx),
                                               layer_times=dict(layer_times))
        monkeypatch.setitem(sys.modules, fake.__name__, fake)
        monkeypatch.setattr(trt_backend, "tensorrt_unavailable_reason", lambda module="tensorrt": None)
        monkeypatch.setattr(trt_backend, "device_info", lambda: dict(GPU))
        monkeypatch.setattr(trt_backend, "installed_version", lambda backend: version)
        backend = TensorRTRTXBackend() if rtx else TensorRTBackend()
        profile = {"input_ids": (SHAPE,) * 3, "attention_mask": (SHAPE,) * 3}
        engine = backend._build_engine(plan, BuildConfig(profiles=(profile,)), None, memory=fake_tensorrt.HostMemory())
        return fake, backend, engine

    return make


@pytest.mark.parametrize("release", MATRIX, ids=MATRIX_IDS)
def test_layer_times_join_the_kgen_layers_and_their_onnx_nodes(tensorrt_engine, feeds, release):
    version, rtx = release
    fake, backend, engine = tensorrt_engine(version, rtx=rtx)
    assert backend.layer_timing_reason() is None and engine.layer_timing_reason() is None
    ledger = ledger_of(engine, feeds, timing="engine", warmup=2, iterations=3)
    data = ledger.to_json()
    # the real API's sequence: one report_to_profiler() after each of the 3 timed runs, on a context of its
    # own with enqueue_emits_profile = False (the test's context never gets a profiler)
    assert fake.state.profiler_reports == 3
    assert engine._context is None or engine._context.profiler is None
    assert data["time_source"] == "tensorrt" and data["unit"] == "engine layer"
    assert data["timing"]["iterations"] == 3 and data["timing"]["warmup"] == 2
    layers = [layer["Name"] for layer in inspector_for(version, rtx)["Layers"]]
    units = {u["name"]: u for u in data["units"]}
    assert list(units) == layers  # every inspector layer, kgen included, in engine order
    assert units[MHA]["time_ms"] == pytest.approx(0.3) and units[MHA]["stats"]["min_ms"] == pytest.approx(0.2)
    assert units[DENSE]["time_ms"] == pytest.approx(0.1)
    total = 0.3 + 0.1 + 0.05 + OTHER_MS * (len(layers) - 3)
    assert data["total_ms"] == pytest.approx(total)
    # the attention kernel's 5 ONNX nodes share its one time, flagged as shared (not divided)
    mha_rows = [r for r in data["rows"] if MHA in r["units"]]
    assert len(mha_rows) == 5 and {r["op_type"] for r in mha_rows} >= {"MatMul", "Softmax"}
    assert all(r["shared"] and r["unit_nodes"] == 5 and r["time_ms"] == pytest.approx(0.3) for r in mha_rows)
    assert all(r["share"] == pytest.approx(0.3 / total) for r in mha_rows)
    # the LayerNorm kernel fuses FP32 nodes, the residual Add (fp16) and the realization's Casts
    ln_rows = [r for r in data["rows"] if LN_KERNEL in r["units"]]
    assert {r["declared"] for r in ln_rows} == {"fp32", "fp16"} and units[LN_KERNEL]["bucket"] == "mixed"
    assert any("Cast_to_" in n for n in units[LN_KERNEL]["other_nodes"])
    # the output reformat carries no ONNX node: a row of its own, so no measured time is lost
    reformat = [r for r in data["rows"] if r["origin"] == "engine"]
    assert [r["path"] for r in reformat] == [layers[-1]] and reformat[0]["time_ms"] == pytest.approx(OTHER_MS)
    # a node in no layer's Metadata (shape math, folded by the builder) has no time, and says which
    shape_rows = [r for r in data["rows"] if r["op_type"] == "Shape"]
    assert shape_rows and all(r["units"] == [] and r["time_ms"] is None for r in shape_rows)
    # each unit once in the roll-ups: the buckets add up to the total
    assert sum(b["time_ms"] for b in data["precisions"].values()) == pytest.approx(total)
    assert data["collapse"] == [f"Myelin region myl0: 118 ONNX nodes in {len(layers) - 1} engine layers (kgen/gemm "
                                f"kernels of the detailed build), {(total - OTHER_MS) / total:.0%} of the time"]
    assert any(n.startswith(f"sum of {len(layers)} engine layer medians") for n in data["notes"])


def test_a_collapsed_network_is_one_line_that_says_so(tensorrt_engine, feeds):
    inspector = json.loads((INSPECTOR / "bert_tiny_foreignnode_names.json").read_text())
    foreign, reformat = inspector["Layers"]
    _, _, engine = tensorrt_engine(inspector=inspector, layer_times={foreign: 0.98, reformat: 0.02})
    ledger = ledger_of(engine, feeds, timing="engine", warmup=1, iterations=2)
    data = ledger.to_json()
    compute = sum(1 for d in engine.plan.nodes.values() if d.kind == "compute")
    carried = [r for r in data["rows"] if foreign in r["units"]]
    assert data["collapse"] == [f"{len(carried):,} ONNX nodes in 1 engine layer ({foreign}), 98% of the time"]
    assert len(carried) >= compute * 0.5 and all(r["evidence"] == "unverifiable" for r in carried if r["declared"])
    assert all(r["shared"] and r["unit_nodes"] == len(carried) for r in carried)
    text = ledger.table(top=5)
    assert f"COLLAPSED: {len(carried):,} ONNX nodes in 1 engine layer" in text
    scopes = {s["scope"]: s for s in data["scopes"]}
    assert scopes["/"]["time_ms"] == pytest.approx(1.0) and scopes["/"]["precision"] == "mixed"


def test_a_profile_row_no_inspector_layer_has_is_kept(tensorrt_engine, feeds):
    _, _, engine = tensorrt_engine(layer_times={**LAYER_MS, "__myl_NotInTheInspector_myl9_0": 0.5})
    data = ledger_of(engine, feeds, timing="engine", warmup=0, iterations=2).to_json()
    odd = next(u for u in data["units"] if u["name"] == "__myl_NotInTheInspector_myl9_0")
    assert odd["unmatched"] and odd["time_ms"] == pytest.approx(0.5) and odd["nodes"] == []
    assert any("match no layer of the engine inspector" in n for n in data["notes"])


def test_trtexec_export_of_a_tensorrt_ledger(tensorrt_engine, feeds):
    _, _, engine = tensorrt_engine()
    data = ledger_of(engine, feeds, timing="engine", warmup=0, iterations=3).to_json()
    profile = trtexec_profile(data)
    mha = next(e for e in profile[1:] if e["name"] == MHA)
    assert profile[0] == {"count": 3}
    assert mha["timeMs"] == pytest.approx(0.9) and mha["averageMs"] == pytest.approx(0.3)
    assert mha["medianMs"] == pytest.approx(0.3)


def test_time_layers_end_to_end_only(tensorrt_engine, feeds):
    fake, _, engine = tensorrt_engine()
    profile = engine.time_layers(feeds, warmup=1, iterations=4, per_layer=False)
    assert profile.samples == {} and len(profile.end_to_end_ms) == 4 and fake.state.profiler_reports == 0


def test_an_engine_that_cannot_load_cannot_be_timed(tensorrt_engine, feeds):
    _, _, engine = tensorrt_engine("1.7.1.116", rtx=True)
    engine._backend.compat().trt.state.gpu_cc = "9.0"  # TensorRT-RTX 1.7.1 refuses compute capability 9.0
    with pytest.raises(BackendUnavailable, match="compute capability 9.0"):
        ledger_of(engine, feeds, timing="engine", iterations=1)
