"""The ledger on this CPU machine: ONNX Runtime's real profile format, the joins, no fake time, exports.

ONNX Runtime's profile is produced by a REAL ONNX Runtime CPU run of the strongly typed
realization (the CPU provider writes the same event format as the CUDA one); its times are used
to test the parsing and the joins only and are labelled as such (``source`` below), never as a
latency: pytest-trt itself never times on a CPU (the emulate ledger's time column is empty with
its reason, tested here). Timings of the TensorRT path are in test_ledger_tensorrt.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exports import export as exported_model

from pytest_trt import cli
from pytest_trt.backends.base import get_backend
from pytest_trt.errors import UsageError
from pytest_trt.layers.ort_profile import read_ort_profile
from pytest_trt.layers.report import LayerReport
from pytest_trt.layers.timing import LayerProfile, sample_stats
from pytest_trt.ledger import build_ledger, chrome_trace, ledger_of, ort_cuda, trtexec_profile
from pytest_trt.ledger.labels import common_scope, node_label
from pytest_trt.ledger.timing import check_available
from pytest_trt.model import testing_models as tm
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.realize import realize_strong

#: the source name of profiles taken on the CPU provider here: format tests only, not a GPU time
CPU_FORMAT = "test: ONNX Runtime CPU profile (format only)"
NO_GPU_TIME = "CPU emulation computes everything in FP32: no GPU time"
LN = "/encoder/layer.0/attention/output/LayerNorm"


@pytest.fixture(scope="module")
def plan():
    model = load_model(tm.decomposed_layernorm_block(hidden=32, seq=4))
    return PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(model)


@pytest.fixture(scope="module")
def feeds(plan):
    return tm.sample_feeds(plan.model.proto)


@pytest.fixture(scope="module")
def cpu_runs(plan, feeds, tmp_path_factory):
    """Two REAL worker runs on ONNX Runtime's CPU provider (end to end, then profiled): 3 warm-ups, 5 runs."""
    directory = tmp_path_factory.mktemp("ort-profile")
    proto = realize_strong(plan)
    e2e = ort_cuda.run_worker(directory, proto, feeds, provider="cpu", warmup=3, iterations=5, profile=False)
    nodes = ort_cuda.run_worker(directory, None, feeds, provider="cpu", warmup=3, iterations=5, profile=True)
    return proto, e2e, nodes, directory


@pytest.fixture(scope="module")
def cpu_profile(cpu_runs):
    proto, e2e, nodes, _ = cpu_runs
    return ort_cuda.profile_from_runs(proto, e2e, nodes, warmup=3, iterations=5, source=CPU_FORMAT)


# -- ONNX Runtime's profile ------------------------------------------------------------------
def test_the_profile_is_written_in_the_temporary_directory_never_the_cwd(cpu_runs, tmp_path, monkeypatch):
    _, _, nodes, directory = cpu_runs
    path = Path(nodes["profile"])
    assert path.parent == directory and path.name.startswith("ort_profile")
    monkeypatch.chdir(tmp_path)
    ort_cuda.run_worker(directory, None, {}, provider="cpu", warmup=0, iterations=1, profile=True)
    assert list(tmp_path.iterdir()) == []  # nothing written where the caller stands


def test_profile_runs_are_counted_and_warmups_left_out(cpu_runs, plan):
    proto, _, nodes, _ = cpu_runs
    events = nodes["events"]
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    assert len(runs) == 3 + 5
    times = read_ort_profile(events, warmup=3)
    assert times.runs == 5 and times.skipped == 3 and len(times.run_ms) == 5
    model_nodes = {n for n, d in plan.nodes.items() if d.op_type != "Constant"}
    assert model_nodes <= set(times.samples)  # every node of the model ran, Constants folded away
    # (the CPU provider drops some Casts of the realization itself: it computes FP16 in FP32)
    assert {n.name for n in proto.graph.node if "/Cast_to_" in n.name} & set(times.samples)
    assert all(len(v) == 5 and all(x >= 0 for x in v) for v in times.samples.values())
    assert set(times.providers.values()) == {"CPUExecutionProvider"}
    assert times.op_types[f"{LN}/Pow"] == "Pow" and times.dtypes[f"{LN}/Pow"] == ["float"]
    # each sample is the node's dur in that run (us -> ms): the largest is at most the run's length
    assert max(max(v) for v in times.samples.values()) <= max(times.run_ms)


def test_read_ort_profile_refuses_a_profile_without_the_runs_asked_for(cpu_runs):
    _, _, nodes, _ = cpu_runs
    with pytest.raises(ValueError, match="8 run.*9 warm-up"):
        read_ort_profile(nodes["events"], warmup=9)
    with pytest.raises(ValueError, match="JSON list"):
        read_ort_profile({"traceEvents": []})


def test_ort_rows_join_nodes_realization_casts_and_runtime_nodes(plan, cpu_profile):
    ledger = build_ledger(plan, LayerReport.from_emulation(plan), cpu_profile)
    data = ledger.to_json()
    assert data["unit"] == "ONNX node" and data["time_source"] == CPU_FORMAT
    model_rows = {r["node"]: r for r in data["rows"] if r["origin"] == "model"}
    # one row per ONNX node of the model except Constant nodes, which are counted
    assert set(model_rows) == {n for n, d in plan.nodes.items() if d.op_type != "Constant"}
    assert data["constants"] == sum(1 for d in plan.nodes.values() if d.op_type == "Constant") == 2
    pow_row = model_rows[f"{LN}/Pow"]
    assert (pow_row["declared"], pow_row["rule"], pow_row["realized"], pow_row["evidence"]) == (
        "fp32", "*/LayerNorm/*=fp32", "fp32", "emulated")
    assert pow_row["time_ms"] == pytest.approx(sample_stats(cpu_profile.samples[f"{LN}/Pow"]).median, rel=1e-4)
    assert pow_row["provider"] == "CPUExecutionProvider" and not pow_row["shared"] and pow_row["unit_nodes"] == 1
    origins = {r["origin"] for r in data["rows"]}
    assert "realization" in origins  # the Casts at the island boundaries have rows of their own
    casts = [r for r in data["rows"] if r["origin"] == "realization"]
    assert all(r["op_type"] == "Cast" and "/Cast_to_" in r["path"] for r in casts)
    # ONNX Runtime's own CPU casts (no FP16 MatMul on the CPU provider) are told apart
    assert all(r["path"].startswith("InsertedPrecisionFreeCast") for r in data["rows"] if r["origin"] == "runtime")
    # the rows' time adds up to the profile's, each unit once (JSON numbers keep 6 significant digits)
    assert sum(r["time_ms"] for r in data["rows"]) == pytest.approx(cpu_profile.total_ms(), rel=1e-4)
    assert sum(r["share"] for r in data["rows"]) == pytest.approx(1.0, rel=1e-4)
    buckets = data["precisions"]
    assert buckets["fp32"]["nodes"] == 9 and buckets["fp16"]["nodes"] == 3
    assert sum(b["time_ms"] for b in buckets.values()) == pytest.approx(cpu_profile.total_ms(), rel=1e-4)
    assert ledger.fp32_island_share() == pytest.approx(buckets["fp32"]["share"])


def test_scope_rollup_counts_each_unit_once_at_the_scope_holding_all_its_nodes(plan, cpu_profile):
    data = build_ledger(plan, LayerReport.from_emulation(plan), cpu_profile).to_json()
    scopes = {s["scope"]: s for s in data["scopes"]}
    assert scopes[LN]["nodes"] == 9 and scopes[LN]["precision"] == "fp32"
    ln_units = [u for u in data["units"] if u["scope"] == LN]
    assert scopes[LN]["time_ms"] == pytest.approx(sum(u["time_ms"] for u in ln_units), rel=1e-4)
    assert scopes[LN]["inclusive_ms"] == pytest.approx(scopes[LN]["time_ms"], rel=1e-4)  # no sub-scopes
    assert common_scope(["/a/b/c", "/a/b/d", "/a/e"]) == "/a" and common_scope(["/x", "/y"]) == "/"


def test_labels_are_the_models_canonical_names(plan):
    label = node_label(plan.model, f"{LN}/Pow")  # a TorchScript-style name: already canonical, no class
    assert (label.path, label.scope, label.module_class) == (f"{LN}/Pow", LN, None)
    assert node_label(plan.model, "node_pow_1").scope == "/"  # not a node of this model: raw, no scope


def test_labels_of_a_dynamo_export_come_from_its_name_scopes():
    """Issue 30: the dynamo exporter's node_pow_1 is labelled by its module path and class."""
    model = load_model(exported_model("llama", "dynamo"))
    label = node_label(model, "node_pow_1")
    assert label.path == "/model/layers.0/input_layernorm/node_pow_1"
    assert label.scope == "/model/layers.0/input_layernorm"
    assert label.module_class == "transformers.models.llama.modeling_llama.LlamaRMSNorm"
    assert node_label(model, "node_Shape_0").scope == "/"  # torch.export's size nodes have no module


# -- no fake time ----------------------------------------------------------------------------
def test_emulate_ledger_has_no_time_and_says_why(plan, feeds):
    engine = get_backend("emulate").build(plan, plan_config(), None)
    ledger = ledger_of(engine, feeds)
    data = ledger.to_json()
    assert not ledger.timed and data["time_source"] is None and data["timing"] is None
    assert data["time_reason"].startswith(NO_GPU_TIME)
    assert all(r["time_ms"] is None and r["share"] is None for r in data["rows"])
    assert {r["evidence"] for r in data["rows"] if r["declared"]} == {"emulated"}
    text = ledger.table()
    assert f"time: none ({NO_GPU_TIME}" in text and "FP32 islands" in text
    for export in (trtexec_profile, chrome_trace):
        with pytest.raises(UsageError, match=NO_GPU_TIME):
            export(data)


def plan_config():
    from pytest_trt.backends.base import BuildConfig

    return BuildConfig()


def test_explicit_timing_that_cannot_run_here_is_an_error(plan, feeds):
    emulate = get_backend("emulate")
    with pytest.raises(UsageError, match=f"--trt-ledger-timing engine: {NO_GPU_TIME}"):
        check_available("engine", emulate, "--trt-ledger-timing")
    if ort_cuda.ort_cuda_reason() is not None:  # this machine: no CUDA provider
        with pytest.raises(UsageError, match="onnxruntime-cuda: this ONNX Runtime has no CUDAExecutionProvider"):
            check_available("onnxruntime-cuda", emulate, "--trt-ledger-timing")
    with pytest.raises(UsageError, match="unknown timing source 'gpu'"):
        check_available("gpu", emulate)
    engine = emulate.build(plan, plan_config(), None)
    off = ledger_of(engine, feeds, timing="off")
    assert off.time_reason == "timing off"


# -- exports ---------------------------------------------------------------------------------
def test_trtexec_profile_and_chrome_trace(plan, cpu_profile):
    data = build_ledger(plan, LayerReport.from_emulation(plan), cpu_profile).to_json()
    profile = trtexec_profile(data)
    assert profile[0] == {"count": 5}
    entries = profile[1:]
    assert [set(e) for e in entries] == [{"name", "timeMs", "averageMs", "medianMs", "percentage"}] * len(entries)
    assert [e["name"] for e in entries] == list(cpu_profile.samples)  # execution order
    first = entries[0]
    samples = cpu_profile.samples[first["name"]]
    assert first["timeMs"] == pytest.approx(sum(samples), rel=1e-4)
    assert first["averageMs"] == pytest.approx(sum(samples) / 5, rel=1e-4)
    assert sum(e["percentage"] for e in entries) == pytest.approx(100.0, rel=1e-4)
    trace = chrome_trace(data)
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(entries) and trace["displayTimeUnit"] == "ms"
    assert all(set(e) >= {"name", "ph", "ts", "dur", "pid", "tid", "args"} for e in events)
    assert all(b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=1e-3) for a, b in zip(events, events[1:], strict=False))
    pow_event = next(e for e in events if e["name"] == f"{LN}/Pow")
    assert pow_event["args"]["declared"] == "fp32" and pow_event["args"]["onnx_nodes"] == [f"{LN}/Pow"]
    json.dumps(trace, allow_nan=False)  # strict JSON: chrome://tracing and Perfetto read it


def test_layer_profile_statistics():
    profile = LayerProfile(source="tensorrt", unit="engine layer", warmup=0, iterations=4,
                           samples={"a": [1.0, 2.0, 3.0, 10.0], "b": [1.0, 1.0, 1.0, 1.0]},
                           end_to_end_ms=[2.0, 2.0, 2.0, 2.0])
    a = profile.stats("a")
    assert (a.median, a.min, a.max, a.count) == (2.5, 1.0, 10.0, 4) and a.q1 <= a.median <= a.q3
    assert profile.total_ms() == 3.5 and profile.overhead() == pytest.approx(0.75)
    assert "(+75%: profiling overhead)" in profile.summary()
    assert profile.stats("missing") is None and sample_stats([]) is None


# -- the console script ----------------------------------------------------------------------
def test_cli_layers_ledger_json_on_cpu(tmp_path, capsys):
    model = tmp_path / "ln.onnx"
    model.write_bytes(tm.decomposed_layernorm_block(hidden=32, seq=4).SerializeToString())
    code = cli.main(["layers", str(model), "--fp16", "--keep-fp32", "*/LayerNorm/*", "--ledger", "--json",
                     "--backend", "emulate", "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    data = json.loads(capsys.readouterr().out)["ledger"]
    assert len([r for r in data["rows"] if r["origin"] == "model"]) == 12
    assert all(r["declared"] and r["evidence"] == "emulated" for r in data["rows"])
    assert data["time_reason"].startswith(NO_GPU_TIME)
    code = cli.main(["layers", str(model), "--fp16", "--export-profile", str(tmp_path / "p.json"),
                     "--backend", "emulate", "--cache-dir", str(tmp_path / "cache")])
    assert code == 2 and not (tmp_path / "p.json").exists()
    assert f"--export-profile: the ledger of ln.onnx has no time ({NO_GPU_TIME}" in capsys.readouterr().err
