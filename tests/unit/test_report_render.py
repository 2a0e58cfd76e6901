"""Reports rendered from hand-made records: figures, rows, JUnit properties, JSON, HTML, GPU mapping.

Records are built with the real ``compare_outputs(...).to_json()`` so their shape is the
one TrtCase produces; sessions are stand-ins with the attributes the reports read.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_trt.backends import get_backend
from pytest_trt.compare import compare_outputs
from pytest_trt.core.records import EngineRecord
from pytest_trt.report import html_report, json_report, plots, summary
from pytest_trt.run.session import TrtSession
from pytest_trt.run.settings import Settings

# --------------------------------------------------------------------------------------
# hand-made records
# --------------------------------------------------------------------------------------


def fake_session(tmp_path=None, **settings):
    s = Settings(precision="fp16", precision_source="--trt-fp16", seed=3, **settings)
    return TrtSession(settings=s, backend=get_backend("emulate"), backend_reason="auto: TensorRT not installed")


def engine_record(model="enc.onnx", policy="fp16; fp32: */LayerNorm/*", hit=False, seconds=0.5, key="k1"):
    return {"kind": "engine", "model": model, "policy": policy, "backend": "emulate", "cache_hit": hit,
            "build_seconds": seconds, "key": key, "gpu": None}


def accuracy_record(actual, expected, *, model="enc.onnx", policy="fp16; fp32: */LayerNorm/*", rtol=1e-2,
                    atol=1e-3, figures=True):
    result = compare_outputs(actual, expected, rtol=rtol, atol=atol, precision="fp16", details=True)
    rec = {"kind": "accuracy", "model": model, "backend": "emulate", "policy": policy, "seed": 3,
           "baseline": "fp32", "gpu": None, "result": result.to_json()}
    if figures:
        rec["figures"] = plots.failing_output_figures(actual, expected, result)
    return rec


def layer_report(nodes):
    """The shape of LayerReport.to_json(): nodes in plan order."""
    return {"source": "inspector", "emulated": False, "typing": "strong", "backend": "tensorrt",
            "notes": ["a note"], "nodes": [
                {"node": name, "op_type": op, "planned": planned, "observed": observed, "status": status,
                 "myelin": myelin, "layer": f"layer_{i}", "detail": "" if status == "ok" else "stayed fp16"}
                for i, (name, op, planned, observed, status, myelin) in enumerate(nodes)]}


NODES = [
    ("/l0/dense/MatMul", "MatMul", "fp16", "fp16", "ok", False),
    ("/l0/LayerNorm/ReduceMean", "ReduceMean", "fp32", "fp32", "ok", True),
    ("/l0/LayerNorm/Pow", "Pow", "fp32", "fp16", "mismatch", True),
    ("/l0/LayerNorm/Sqrt", "Sqrt", "fp32", None, "unverifiable", True),
    ("/l0/Softmax", "Softmax", "fp32", "fp32", "ok", False),
    ("/l0/Shape", "Shape", None, None, "fixed", False),
]


def layerwise_record():
    """A real Divergence (locate/divergence.py's classes) turned into the compact record."""
    from pytest_trt.locate.divergence import Divergence, TensorError

    rows = [TensorError(f"{n}_output_0", n, op, i, precision=p, max_abs=v, rel=v / 10, available=avail,
                        divergent=(n == "/c/Pow"), jump=100.0 if n == "/c/Pow" else 1.0)
            for i, (n, op, p, v, avail) in enumerate([
                ("/c/Conv", "Conv", "fp16", 1e-4, True), ("/c/Mul", "Mul", "fp16", 2e-4, False),
                ("/c/Pow", "Pow", "fp16", 3.0, True), ("/c/Add", "Add", "fp32", math.inf, True),
                ("/c/Out", "Relu", "fp32", 2.0, True)])]
    div = Divergence(first=rows[2], top=[rows[2]], tensors=rows, note="emulate: same graph", threshold=1e-2,
                     jump=10.0, model="conv.onnx", backend="emulate", policy="fp16", output_names=["/c/Out_output_0"])
    return plots.layerwise_record(div, seed=0)


@pytest.fixture
def results():
    rng = np.random.default_rng(0)
    expected = rng.standard_normal((2, 8, 16)).astype(np.float32)
    bad = expected.copy()
    bad[1, 3, :] += 0.5  # one bad token: a horizontal stripe in the grid
    bad[0, 0, 5] = np.nan
    close = expected + np.float32(1e-4)
    return [
        {"nodeid": "test_m.py::test_bad", "outcome": "failed", "records": [
            engine_record(hit=False, seconds=0.5, key="k1"),
            accuracy_record({"hidden": bad, "pooled": expected[:, 0]}, {"hidden": expected, "pooled": expected[:, 0]}),
        ]},
        # failed: its LayerNorm precision check failed (a passing test with it would have caught the failure)
        {"nodeid": "test_m.py::test_close", "outcome": "failed", "records": [
            engine_record(hit=True, seconds=0.0, key="k1"),
            accuracy_record({"hidden": close}, {"hidden": expected}),
            {"kind": "precision", "pattern": "*/LayerNorm/*", "precision": "fp32", "passed": False,
             "report": layer_report(NODES), "network": []},
            {"kind": "precision", "pattern": "op:Softmax", "precision": "fp32", "report": layer_report(NODES),
             "network": []},
        ]},
        {"nodeid": "test_m.py::test_other", "outcome": "passed", "records": [
            engine_record(model="conv.onnx", policy="fp16", hit=True, seconds=0.0, key="k2"),
            layerwise_record(),
        ]},
    ]


# --------------------------------------------------------------------------------------
# error figures
# --------------------------------------------------------------------------------------
def test_error_figures_pool_the_max_error_per_block_and_count_mismatches():
    expected = np.zeros((4, 6), np.float32)
    actual = expected.copy()
    actual[0, 0] = 0.5
    actual[3, 5] = 2.0
    actual[2, 1] = 1e-5  # within atol
    f = plots.error_figures(actual, expected, atol=1e-3, rtol=0.0, grid=(2, 3))
    g = f["grid"]
    assert (g["rows"], g["cols"], g["row_block"], g["col_block"]) == (2, 3, 2, 2)
    assert g["max_abs"] == [[0.5, 0.0, 0.0], [1e-5, 0.0, 2.0]]
    assert g["mismatched"] == [[1, 0, 0], [0, 0, 1]]
    assert g["worst_cell"] == [1, 2]
    h = f["histogram"]
    assert sum(h["counts"]) == 3 and h["zero"] == 21 and h["nonfinite"] == 0
    assert h["log10_edges"][0] <= -5 and h["log10_edges"][-1] >= math.log10(2.0)
    assert h["atol_log10"] == -3.0
    json.dumps(f, allow_nan=False)


def test_error_figures_mark_nan_cells_and_follow_compare_semantics_for_inf():
    expected = np.array([1.0, np.inf, 3.0, -np.inf], np.float32)
    actual = np.array([np.nan, np.inf, 3.0, np.inf], np.float32)
    f = plots.error_figures(actual, expected, atol=1e-3, rtol=1e-2)
    assert f["grid"]["rows"] == 1 and f["grid"]["max_abs"][0][0] == "inf"
    assert f["grid"]["mismatched"] == [[1, 0, 0, 1]]
    assert f["histogram"]["nonfinite"] == 2  # NaN vs 1.0 and +inf vs -inf; inf == inf is no error
    json.dumps(f, allow_nan=False)


@pytest.mark.parametrize("shape, grid_shape", [((), (1, 1)), ((7,), (1, 7)), ((2, 3, 5), (6, 5)),
                                               ((1, 3, 40, 40), (24, 40))])
def test_error_figures_layout_rows_are_leading_dims_columns_the_last(shape, grid_shape):
    rng = np.random.default_rng(1)
    e = rng.standard_normal(shape).astype(np.float32)
    f = plots.error_figures(e + 1, e)
    assert (f["grid"]["rows"], f["grid"]["cols"]) == grid_shape
    assert f["grid"]["mismatched"] is None  # no tolerances given
    assert f["shape"] == list(shape)


def test_error_figures_stay_small_for_large_outputs():
    e = np.zeros((1, 512, 3000), np.float32)
    a = e + np.float32(1e-2)
    text = json.dumps(plots.error_figures(a, e, atol=1e-3, rtol=1e-2), allow_nan=False)
    assert len(text) < 40_000


def test_error_figures_reject_shape_mismatch():
    with pytest.raises(ValueError, match="differ in shape"):
        plots.error_figures(np.zeros(3), np.zeros(4))


def test_failing_output_figures_only_for_failing_float_outputs():
    e = {"a": np.zeros(4, np.float32), "b": np.zeros(4, np.float32), "ids": np.arange(4)}
    a = {"a": np.ones(4, np.float32), "b": np.zeros(4, np.float32), "ids": np.arange(4) + 1}
    result = compare_outputs(a, e, rtol=1e-2, atol=1e-3)
    figs = plots.failing_output_figures(a, e, result)
    assert set(figs) == {"a"}
    assert plots.failing_output_figures(a, e, result.to_json()).keys() == figs.keys()


# --------------------------------------------------------------------------------------
# rows and counts
# --------------------------------------------------------------------------------------
def test_tolerance_ratio_is_above_one_exactly_when_failing(results):
    rows = summary.accuracy_rows(results)
    for r in rows:
        assert (r["ratio"] > 1) == (not r["passed"]), r
    assert summary.tolerance_ratio({"problem": "missing"}) == math.inf
    assert summary.tolerance_ratio({"passed": True, "atol": 1e-3, "rtol": 1e-2}) is None  # not detailed
    assert summary.tolerance_ratio({"passed": False, "atol": 1e-3, "rtol": 1e-2, "needed_atol": 0.03,
                                    "needed_rtol": 0.5}) == pytest.approx(30)


@pytest.mark.parametrize("details", [True, False])
def test_tolerance_ratio_counts_the_cosine_floor(details):
    """An output within the element rule that fails only the FP16 default cosine floor
    (0.9999): x tol is (1 - cos) / (1 - 0.9999) > 1, not the element rule's 0.5 (before: 1)."""
    rng = np.random.default_rng(0)
    e = (rng.standard_normal(4096) * 0.1).astype(np.float32)
    a = e + rng.choice([-1, 1], 4096).astype(np.float32) * 0.005  # |error| 5e-3 < atol 1e-2 everywhere
    out = compare_outputs({"y": a}, {"y": e}, precision="fp16", details=details).to_json()["outputs"]["y"]
    assert out["passed"] is False and out["mismatched"] == 0 and out["min_cosine"] == 0.9999
    assert out["metric_failures"] and "default floor" in out["metric_failures"][0]
    ratio = summary.tolerance_ratio(out)
    assert ratio == pytest.approx((1 - out["cosine"]) / (1 - 0.9999)) and ratio > 1
    # the same errors on 1 element in 100: cosine above the floor, passes, x tol <= 1
    a_few = e.copy()
    a_few[::100] = a[::100]
    ok = compare_outputs({"y": a_few}, {"y": e}, precision="fp16", details=details).to_json()["outputs"]["y"]
    assert ok["passed"] is True and ok["cosine"] is not None
    # without details a passing output's element figures are unknown, and so is the largest bound
    assert summary.tolerance_ratio(ok) <= 1 if details else summary.tolerance_bound(ok) == (None, None)
    # the floor turned off (min_cosine=-1): the element rule alone judges, and passes
    off = compare_outputs({"y": a}, {"y": e}, precision="fp16", min_cosine=-1, details=True)
    assert off.passed and summary.tolerance_bound(off.to_json()["outputs"]["y"]) == (pytest.approx(0.5, rel=1e-4), "element")


def test_tolerance_ratio_of_a_floor_failure_in_the_reports(results):
    """Rows from recorded results keep "x tol > 1 iff failed" with a floor-only failure."""
    rng = np.random.default_rng(1)
    e = (rng.standard_normal(1024) * 0.1).astype(np.float32)
    a = e + rng.choice([-1, 1], 1024).astype(np.float32) * 0.005
    result = compare_outputs({"y": a}, {"y": e}, precision="fp16", details=True)
    res = {"nodeid": "t.py::test_floor", "outcome": "failed",
           "records": [{"kind": "accuracy", "model": "m.onnx", "backend": "emulate", "policy": "fp16",
                        "seed": 0, "baseline": "fp32", "gpu": None, "result": result.to_json()}]}
    (row,) = summary.accuracy_rows([res])
    assert row["passed"] is False and row["ratio"] > 1
    (entry,) = json_report.entry_of_test(res)["accuracy"]
    assert entry["outputs"][0]["tolerance_ratio"] > 1


def test_accuracy_rows_put_the_worst_offenders_first(results):
    rows = summary.accuracy_rows(results)
    assert [(r["test"], r["output"], r["passed"]) for r in rows] == [
        ("test_m.py::test_bad", "hidden", False),
        ("test_m.py::test_close", "hidden", True),
        ("test_m.py::test_bad", "pooled", True),
    ]
    assert rows[0]["engine"] == "built 0.50s" and rows[1]["engine"] == "cache hit"
    assert rows[0]["figures"]["grid"]["rows"] == 16
    assert rows[1]["ratio"] >= rows[2]["ratio"]


def test_engine_counts_are_by_content_key(results):
    assert summary.engine_counts(results) == {"built": 1, "reused": 1, "uses": 3, "session_reuses": 1,
                                              "build_seconds": 0.5}


def test_precision_nodes_select_the_constrained_nodes(results):
    prec = summary.precision_rows(results)
    ln, sm = prec
    assert [n["node"] for n in ln["constrained"]] == ["/l0/LayerNorm/ReduceMean", "/l0/LayerNorm/Pow",
                                                       "/l0/LayerNorm/Sqrt"]
    assert ln["counts"] == {"ok": 1, "mismatch": 1, "unverifiable": 1} and ln["passed"] is False
    assert [n["node"] for n in sm["constrained"]] == ["/l0/Softmax"] and sm["passed"] is True
    assert len(ln["nodes"]) == len(NODES)
    matched = {"kind": "precision", "pattern": "*", "precision": "fp32", "network": [],
               "report": {**layer_report(NODES), "matched": ["/l0/Softmax"]}}
    assert [n["node"] for n in summary.precision_nodes(matched)[0]] == ["/l0/Softmax"]


def test_junit_properties_aggregate_one_value_per_name(results):
    props = summary.junit_properties(results[0]["records"])
    names = [n for n, _ in props]
    assert len(names) == len(set(names))
    d = dict(props)
    assert d["trt_backend"] == "emulate" and d["trt_precision"] == "fp16; fp32: */LayerNorm/*"
    assert d["trt_passed"] == "false" and d["trt_failed_outputs"] == "hidden" and d["trt_worst_output"] == "hidden"
    assert float(d["trt_max_abs_error"]) == pytest.approx(0.5, rel=1e-3)
    assert (d["trt_atol"], d["trt_rtol"]) == ("0.001", "0.01")
    assert (d["trt_cache_hit"], d["trt_build_seconds"], d["trt_engines"]) == ("false", "0.500", "1")
    d2 = dict(summary.junit_properties(results[1]["records"]))
    assert d2["trt_cache_hit"] == "true" and d2["trt_passed"] == "true"
    assert d2["trt_precision_checks"] == "1 passed, 1 failed"


class FakeTerminal:
    def __init__(self, verbose=0, width=160):
        self.lines = []
        self.config = SimpleNamespace(option=SimpleNamespace(verbose=verbose))
        self._tw = SimpleNamespace(fullwidth=width)

    def section(self, title, sep="="):
        self.lines.append(f"== {title} ==")

    def write_line(self, line, **markup):
        self.lines.append(line)


def test_terminal_summary_rows_counts_and_precision(results):
    tr = FakeTerminal()
    summary.write_terminal_summary(tr, fake_session(), results)
    text = "\n".join(tr.lines)
    assert "backend emulate (CPU precision emulation on ONNX Runtime, not TensorRT)" in text
    assert ("engines: 1 built (0.50s), 1 reused from the cache; 3 use(s) by tests, 1 of them reusing an engine "
            "built in this session") in text
    assert "accuracy: 3 output(s) in 2 test(s), 1 outside tolerance; worst first (x tol > 1 fails)" in text
    header = next(i for i, line in enumerate(tr.lines) if line.lstrip().startswith("x tol"))
    assert tr.lines[header].split() == ["x", "tol", "bound", "max", "abs", "atol", "max", "rel", "rtol", "engine", "test",
                                        "output", "model", "[policy]"]
    first, second = tr.lines[header + 1], tr.lines[header + 2]
    assert first.split()[:3] == ["FAIL", "inf", "NaN/Inf"]  # the NaN: no tolerance passes it
    assert "test_m.py::test_bad" in first and "hidden" in first and "enc.onnx [fp16; fp32: */LayerNorm/*]" in first
    assert "built 0.50s" in first and "5.00e-01" in first and "0.001" in first
    assert second.startswith("ok") and "test_close" in second and "cache hit" in second
    assert "precision checks: 1 passed, 1 failed" in text
    assert "FAIL test_m.py::test_close: */LayerNorm/* -> fp32: /l0/LayerNorm/Pow (fp16)" in text
    assert max(len(line) for line in tr.lines[header:header + 4]) <= 160


def test_terminal_summary_caps_rows_unless_verbose(results, monkeypatch):
    monkeypatch.setattr(summary, "TERMINAL_ROWS", 1)
    tr = FakeTerminal()
    summary.write_terminal_summary(tr, fake_session(), results)
    assert any("2 more row(s)" in line for line in tr.lines)
    tr = FakeTerminal(verbose=1)
    summary.write_terminal_summary(tr, fake_session(), results)
    assert not any("more row(s)" in line for line in tr.lines)


def test_terminal_summary_is_silent_without_results():
    tr = FakeTerminal()
    summary.write_terminal_summary(tr, fake_session(), [])
    assert tr.lines == []


# --------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------
def test_json_report_schema(results, tmp_path):
    path = json_report.write_json_report(tmp_path / "sub" / "r.json", fake_session(), results, 1)
    data = json.loads(path.read_text())  # strict JSON: no NaN literals
    assert data["schema_version"] == json_report.SCHEMA_VERSION == 11
    assert data["exitstatus"] == 1
    meta = data["session"]
    for key in ("pytest_trt", "libraries", "gpu", "gpus", "backend", "backend_reason", "seed", "precision"):
        assert key in meta
    assert meta["backend"] == "emulate" and meta["precision"] == "fp16" and meta["seed"] == 3
    assert meta["libraries"]["onnxruntime"]
    assert data["summary"]["outputs_failed"] == 1 and data["summary"]["engines_built"] == 1
    bad, close, other = data["tests"]
    assert (bad["nodeid"], bad["outcome"]) == ("test_m.py::test_bad", "failed")
    assert (data["summary"]["baseline_fallbacks"], data["summary"]["baseline_fallback_nodes"]) == (0, 0)
    for test in data["tests"]:
        assert test["baseline_fallbacks"] == []
        for eng in test["engines"]:
            assert isinstance(eng["cache_hit"], bool) and isinstance(eng["build_seconds"], float)
            assert eng["gpu"] is None and eng["via"] is None  # records without them (emulate, the test's own engine)
    out = {o["name"]: o for o in bad["accuracy"][0]["outputs"]}
    assert out["hidden"]["passed"] is False and out["hidden"]["tolerance_ratio"] == "inf"  # the NaN
    assert out["hidden"]["figures"]["grid"]["max_abs"][0][5] == "inf"
    assert "figures" not in out["pooled"]
    ln = close["precision"][0]
    assert ln["passed"] is False and [n["planned"] for n in ln["nodes"]] == ["fp32"] * 3
    assert [n["observed"] for n in ln["nodes"]] == ["fp32", "fp16", None]
    lw = other["layerwise"][0]
    assert lw["first"]["node"] == "/c/Pow" and lw["seed"] == 0 and len(lw["tensors"]) == 5
    assert lw["tensors"][3]["max_abs"] == "inf" and lw["tensors"][1]["available"] is False
    assert not list(tmp_path.glob("sub/.*.tmp"))


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------
def _no_external_references(text):
    for bad in ('src="http', "src='http", 'href="http', "<script", "<link", "@import", "url(http"):
        assert bad not in text, bad


def test_html_with_matplotlib_has_png_plots(results, tmp_path):
    pytest.importorskip("matplotlib")
    path = html_report.write_html_report(tmp_path / "r.html", fake_session(), results, 1)
    text = path.read_text()
    assert text.count('src="data:image/png;base64,') == 3  # histogram + heatmap of 'hidden', one layerwise curve
    assert 'alt="error histogram"' in text and 'alt="error heatmap"' in text and 'alt="layerwise error"' in text
    assert "css-hist" not in text
    assert "plots: matplotlib" in text
    _no_external_references(text)


def test_html_without_matplotlib_draws_with_css(results, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert not plots.matplotlib_available()
    text = html_report.render_html(fake_session(), results, 1)
    assert "data:image/png" not in text
    assert 'class="hist css-hist"' in text and 'class="heat css-heat"' in text and 'class="svg-curve"' in text
    assert "install pytest-trt[plots]" in text
    _no_external_references(text)


def test_html_tables_and_precision_view(results, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # tables only: skip the plotting time
    text = html_report.render_html(fake_session(), results, 1)
    assert text.index("test_m.py::test_bad") < text.index("test_m.py::test_close")  # worst first
    assert 'id="out-0"' in text and 'href="#out-0"' in text
    assert "Precision: planned vs observed" in text
    assert text.count('class="tag my"') == 3 + 0  # Myelin nodes among the LayerNorm's constrained nodes
    assert "/l0/LayerNorm/Pow" in text and 'class="tag mm"' in text
    assert "first divergent node" in text and "/c/Pow (Pow, fp16), tensor /c/Pow_output_0" in text
    assert "CPU precision emulation on ONNX Runtime, not TensorRT" in text  # the backend's disclaimer
    # k1 is built by one test and a cache hit in another; k2 only loaded from the cache
    assert "engines reused from the cache" in text and "uses of engines built in this session" in text


def test_html_escapes_names():
    res = [{"nodeid": "t.py::test[<b>]", "outcome": "passed", "records": [
        accuracy_record({"o<x>": np.zeros(2, np.float32)}, {"o<x>": np.zeros(2, np.float32)})]}]
    text = html_report.render_html(fake_session(), res)
    assert "t.py::test[&lt;b&gt;]" in text and "o&lt;x&gt;" in text and "<b>]" not in text


def test_html_of_an_empty_session():
    text = html_report.render_html(fake_session(), [])
    assert "No test used pytest-trt" in text


# --------------------------------------------------------------------------------------
# --trt-gpus mapping
# --------------------------------------------------------------------------------------
def test_assign_devices():
    from pytest_trt.glue.xdist_gpus import assign_devices

    assert assign_devices(["gw0", "gw1"], ["0", "1", "2"], None) == {"gw0": "0", "gw1": "1"}
    assert assign_devices(["gw0", "gw1", "gw2", "gw3"], ["5", "7"], None) == {
        "gw0": "5", "gw1": "7", "gw2": "5", "gw3": "7"}
    assert assign_devices(["gw0", "gw1", "gw2"], ["0", "1", "2"], 2) == {"gw0": "0", "gw1": "1", "gw2": "0"}
    assert assign_devices(["gw0"], [], None) == {}
    with pytest.raises(pytest.UsageError, match="only 2 visible GPU"):
        assign_devices(["gw0", "gw1", "gw2"], ["0", "1"], 3)
    with pytest.raises(pytest.UsageError, match="needs -n 3"):
        assign_devices(["gw0", "gw1"], ["0", "1", "2"], 3)


def test_parse_gpus():
    from pytest_trt.glue.xdist_gpus import parse_gpus

    assert parse_gpus("auto") is None and parse_gpus(" 2 ") == 2
    for bad in ("0", "-1", "two"):
        with pytest.raises(pytest.UsageError, match="positive number"):
            parse_gpus(bad)


def test_visible_devices_honour_cuda_visible_devices(monkeypatch):
    from pytest_trt.core import environment
    from pytest_trt.glue import xdist_gpus

    three = (environment.GpuInfo("G", "9.0", "1"),) * 3
    monkeypatch.setattr(environment, "gpus", lambda: three)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert xdist_gpus.visible_devices() == ["0", "1", "2"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, GPU-1234,MIG-5,-1,0")
    assert xdist_gpus.visible_devices() == ["2", "GPU-1234", "MIG-5"]
    monkeypatch.setattr(environment, "gpus", lambda: ())
    assert xdist_gpus.visible_devices() == []


def test_module_docstring_documents_the_schema():
    doc = json_report.__doc__
    for key in ('"schema_version"', '"cache_hit"', '"build_seconds"', '"tests"', '"nodeid"', '"planned"',
                '"observed"', '"layerwise"', '"gpu"', '"libraries"', '"remote_hits"', '"remote_uploads"',
                '"remote_bytes"', '"local_hits"', '"remote_cache"', '"baseline_fallbacks"', '"baseline_fallback_nodes"',
                '"via"', '"uuid"', '"cuda_visible_devices"'):
        assert key in doc, key
    assert Path(json_report.__file__).name == "json_report.py"


def test_html_draws_figures_for_the_worst_outputs_only(results, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(html_report, "FIGURE_CARDS", 0)
    text = html_report.render_html(fake_session(), results, 1)
    assert "css-hist" not in text and "no error figures recorded" in text
    assert "figures shown for the 0 worst outputs" in text


def test_svg_curve_leaves_gaps_for_tensors_the_engine_did_not_expose():
    svg = html_report.svg_curve(layerwise_record())
    assert svg.count("<polyline") == 2  # Conv | (Mul not exposed) | Pow, Add, Out
    assert svg.count("<title>NaN/Inf</title>") == 1


def test_precision_check_records_of_verify_are_read_as_they_are():
    """verify.PrecisionCheck.to_json(): its nodes are the matched ones, statuses pass/fail/..."""
    from pytest_trt.verify.precision import NodeVerdict, PrecisionCheck

    check = PrecisionCheck(
        pattern="*/LayerNorm/*", precision="fp32", method="inspect", model="enc.onnx", policy="fp16",
        backend="tensorrt", typing="weak", source="inspector", emulated=False, allow_unverifiable=False,
        nodes=[NodeVerdict("/l0/LayerNorm/Pow", "Pow", "fp32", "fp16", "fail", layer="__myl_Pow_myl0_1",
                           myelin=True, cause="engine", detail="ran fp16 in a Myelin region"),
               NodeVerdict("/l0/LayerNorm/Div", "Div", "fp32", "fp32", "pass", layer="l1"),
               NodeVerdict("/l0/LayerNorm/Constant", "Constant", None, None, "not_applicable")])
    rec = {"kind": "precision", "pattern": "*/LayerNorm/*", "precision": "fp32", "passed": False,
           "report": check.to_json(), "network": []}
    res = [{"nodeid": "t.py::test_ln", "outcome": "failed", "records": [rec]}]
    (row,) = summary.precision_rows(res)
    assert [n["node"] for n in row["constrained"]] == ["/l0/LayerNorm/Pow", "/l0/LayerNorm/Div",
                                                        "/l0/LayerNorm/Constant"]
    assert row["counts"] == {"fail": 1, "pass": 1, "not_applicable": 1} and row["passed"] is False
    assert row["constrained"][0]["cause"] == "engine" and row["typing"] == "weak"
    tr = FakeTerminal()
    summary.write_terminal_summary(tr, fake_session(), res)
    assert "  FAIL t.py::test_ln: */LayerNorm/* -> fp32: /l0/LayerNorm/Pow (fp16)" in tr.lines
    text = html_report.render_html(fake_session(), res)
    assert 'class="tag mm">fail (engine)' in text and 'class="tag my">Myelin' in text
    entry = json_report.entry_of_test(res[0])
    assert entry["precision"][0]["nodes"][0]["status"] == "fail"


def test_x_tol_is_the_share_of_its_own_tolerance_the_worst_element_uses():
    """Issue 28: ``x tol`` bounded the element rule by ``min(max_abs / atol, max_rel / rtol)``, capped at 1
    for a pass: at BF16 defaults a large element far beyond atol (within rtol) and a small one far
    beyond rtol (within atol) showed ``x tol 1`` while the worst element used 0.35 of its tolerance.
    Now x tol is the largest of the element ratio and the floor ratios, and says which is binding."""
    e = np.array([100.0, 0.001, 1.0, -1.0], np.float32)
    a = np.array([101.5, 0.0185, 1.0, -1.0], np.float32)  # 1.5 of rtol*100 = 10; 0.0175 of atol 0.05
    out = compare_outputs(a, e, precision="bf16", details=True).to_json()["outputs"]["output"]
    assert out["passed"] is True and out["element_ratio"] == pytest.approx(0.35, rel=1e-4)
    ratio, binding = summary.tolerance_bound(out)
    assert ratio == pytest.approx(0.35, rel=1e-4) and binding == "element"
    # a failing element: the factor by which both tolerances would have to grow
    bad = compare_outputs(a * np.float32(1.5), e, precision="bf16", details=True).to_json()["outputs"]["output"]
    ratio, binding = summary.tolerance_bound(bad)
    assert bad["passed"] is False and binding == "element"
    assert ratio == pytest.approx(max(abs(x - y) / max(0.05, 0.1 * abs(y)) for x, y in zip(a * 1.5, e, strict=True)),
                                  rel=1e-5)


def test_the_binding_bound_is_named_also_when_a_floor_sits_exactly_at_its_limit():
    base = {"kind": "float", "passed": True, "mismatched": 0, "atol": 0.05, "rtol": 0.1, "element_ratio": 0.2}
    assert summary.tolerance_bound({**base, "cosine": 0.999, "min_cosine": 0.999}) == (1.0, "cosine")
    assert summary.tolerance_bound({**base, "cosine": 0.9999, "min_cosine": 0.999}) == (pytest.approx(0.2), "element")
    assert summary.tolerance_bound({**base, "snr_db": 40.0, "min_snr_db": 40.0}) == (1.0, "snr")
    assert summary.tolerance_bound({**base, "passed": False, "unfixable": 3}) == (math.inf, "nan_inf")
    assert summary.tolerance_bound({**base, "passed": False, "problem": "missing"}) == (math.inf, "structure")
    # a tie names the element rule
    assert summary.tolerance_bound({**base, "element_ratio": 0.5, "cosine": 0.9995,
                                    "min_cosine": 0.999})[1] == "element"


def _engine(key: str, hit: bool, examples: int | None = None) -> EngineRecord:
    return EngineRecord(model="m.onnx", policy="fp16", backend="emulate", cache_hit=hit, build_seconds=0.0 if hit else 1.0,
                        key=key, gpu=None, examples=examples)


@pytest.mark.parametrize(("tests", "expected"), [
    # first run: built by one test, cache hits in two others (the rows' "cache hit")
    ([[_engine("a", False)], [_engine("a", True)], [_engine("a", True)]], (1, 0, 3, 2)),
    # a condensed record: built once and used twice more inside the same test
    ([[_engine("a", False, examples=3)]], (1, 0, 3, 2)),
    # loaded from an earlier run's cache: no reuse within the session counted
    ([[_engine("b", True)], [_engine("b", True, examples=2)]], (0, 1, 3, 0)),
    ([[_engine("a", False)], [_engine("b", True), _engine("a", True)]], (1, 1, 3, 1)),
])
def test_engine_counts_tell_reuse_in_the_session_from_reuse_of_the_cache(tests, expected):
    counts = summary.engine_counts([{"nodeid": f"t{i}", "records": recs} for i, recs in enumerate(tests)])
    assert (counts["built"], counts["reused"], counts["uses"], counts["session_reuses"]) == expected
    line = summary.engines_line(counts)
    assert line.endswith(f", {expected[3]} of them reusing an engine built in this session") == (expected[3] > 0)
