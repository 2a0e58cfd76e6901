"""Reports end to end through pytester: terminal summary, JUnit properties, --trt-report JSON,
--trt-html (with and without matplotlib), the same under ``-n 2``, and ``--trt-gpus``.

The suite under test is three small checks of the example encoder on the emulate
backend: an all-FP16 one that fails (LayerNorm fed outliers), a LayerNorm-in-FP32 one
that passes, and an FP32 one that matches exactly. xdist runs are expensive (two fresh
interpreters), so one ``-n 2`` run checks every report and the GPU mapping together.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from encoder_suite import ENCODER_PREAMBLE
from report_schema import assert_valid_report

from pytest_trt.report.json_report import SCHEMA_VERSION

try:  # imported before any inner run, so pytester's sys.modules snapshot keeps it (see tests/conftest.py)
    import matplotlib  # noqa: F401
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    from matplotlib.figure import Figure  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:  # pragma: no cover
    HAVE_MATPLOTLIB = False

try:  # hypothesis's pytest plugin imports hypothesis in every run's terminal summary (~2 s); importing it
    import hypothesis  # noqa: F401  # here keeps it in the snapshot, so inner runs do not pay that each time
except ImportError:  # pragma: no cover
    pass

SUITE = f"""
import pytest
{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_all_fp16(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_layernorm_fp32(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.trt(model=ENCODER, precision="fp32", dims=DIMS, val_range=NORMAL)
def test_fp32(trt):
    trt.check()

def test_not_trt():
    pass
"""

#: conftest of the inner runs: a fake GPU list (environment.gpus) and a log of report writes,
#: both undone at unconfigure (inner runs share this process). Workers log what
#: CUDA_VISIBLE_DEVICES they saw when the conftest was imported and once configured.
CONFTEST = """
import os
import importlib
import pytest
from pytest_trt.core import environment
# the modules the plugin will call, as sys.modules has them: after an earlier in-process pytester
# run, the package attribute (`from pytest_trt.report import html_report`) can be a stale copy
files = importlib.import_module("pytest_trt.report.files")

FAKE = int(os.environ.get("FAKE_GPUS", "-1"))
_saved = {}
_undo = []

if FAKE >= 0:
    _saved["gpus"] = environment.gpus
    environment.gpus = lambda: (environment.GpuInfo("Fake GPU", "9.0", "1.0"),) * FAKE

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "controller")
if WORKER != "controller":
    with open(f"gpu-{WORKER}-at-import.txt", "w") as f:
        f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))

def _logged(fn):
    def wrapper(path, text, flag, kind):
        with open("report-writes.log", "a") as f:
            f.write(f"{kind} {WORKER}\\n")
        return fn(path, text, flag, kind)
    return wrapper

_saved["write"] = files.write_report_file
files.write_report_file = _logged(files.write_report_file)

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if hasattr(config, "workerinput"):
        with open(f"gpu-{WORKER}-configured.txt", "w") as f:
            f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset") + " " + str(config.workerinput.get("trt_gpu")))

def pytest_unconfigure(config):
    if "gpus" in _saved:
        environment.gpus = _saved["gpus"]
    files.write_report_file = _saved["write"]
    for undo in _undo:
        undo()
"""

#: appended to CONFTEST: hide matplotlib (`import matplotlib` raises ImportError) for one run
NO_MATPLOTLIB = """
import sys
_mpl = sys.modules.get("matplotlib", "absent")
sys.modules["matplotlib"] = None

def _restore_matplotlib():
    if _mpl == "absent":
        sys.modules.pop("matplotlib", None)
    else:
        sys.modules["matplotlib"] = _mpl

_undo.append(_restore_matplotlib)
"""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """Inner runs must not inherit this run's GPU settings, nor (when this file itself runs under
    -n) the outer worker's PYTEST_XDIST_* variables, which would make an inner controller look
    like a worker."""
    for name in ("CUDA_VISIBLE_DEVICES", "FAKE_GPUS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                 "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(test_encoder=SUITE)
    pytester.makeconftest(CONFTEST)
    return pytester


def run(pytester, *args):
    cache = pytester.path / "engine-cache"
    return pytester.runpytest("--trt-cache-dir=" + str(cache), "--trt-report=out/report.json",
                              "--trt-html=out/report.html", "--junitxml", "out/junit.xml", *args)


# --------------------------------------------------------------------------------------
# what each report must say
# --------------------------------------------------------------------------------------
def check_summary(result, *, built: int, reused: int):
    result.stdout.fnmatch_lines([
        "*= pytest-trt =*",
        "backend emulate (CPU precision emulation on ONNX Runtime, not TensorRT)",
        f"engines: {built} built (*s), {reused} reused from the cache; 3 use(s) by tests",
        "accuracy: 3 output(s) in 3 test(s), 1 outside tolerance; worst first (x tol > 1 fails)",
        "*x tol*bound*max abs*atol*max rel*rtol*engine*test*output*model [[]policy[]]",
        # worst first: the failing all-FP16 row, then the passing ones
        "FAIL *e+00   0.01  *   0.02  *test_all_fp16*last_hidden_state*encoder_opset14.onnx [[]fp16[]]",
        "ok *test_layernorm_fp32*last_hidden_state*encoder_opset14.onnx [[]fp16; fp32: [*]/LayerNorm/[*][]]",
        "ok *0.00e+00*1e-05*0.00e+00*1e-05*test_fp32*last_hidden_state*encoder_opset14.onnx [[]fp32[]]",
        "reports: */out/report.json, */out/report.html",  # resolved against the invocation directory
    ])
    engine = "cache hit" if built == 0 else "built *s"
    result.stdout.fnmatch_lines([f"FAIL *{engine}*test_all_fp16*"])


def check_junit(path: Path, *, cache_hit: bool):
    cases = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(path).getroot().iter("testcase")}
    assert set(cases) == {"test_all_fp16", "test_layernorm_fp32", "test_fp32", "test_not_trt"}
    fp16, kept, fp32 = cases["test_all_fp16"], cases["test_layernorm_fp32"], cases["test_fp32"]
    assert cases["test_not_trt"] == {}
    for props in (fp16, kept, fp32):
        assert "pytest_trt" not in props, "the records blob must stay out of the XML"
        assert props["trt_backend"] == "emulate"
        assert props["trt_cache_hit"] == str(cache_hit).lower()
        float(props["trt_build_seconds"])
    assert fp16["trt_passed"] == "false" and fp16["trt_precision"] == "fp16"
    assert fp16["trt_failed_outputs"] == "last_hidden_state"
    assert float(fp16["trt_max_abs_error"]) > 1.0 and float(fp16["trt_tolerance_ratio"]) > 1
    assert (fp16["trt_atol"], fp16["trt_rtol"]) == ("0.01", "0.02")
    assert kept["trt_passed"] == "true" and kept["trt_precision"] == "fp16; fp32: */LayerNorm/*"
    assert float(kept["trt_max_abs_error"]) <= 1e-2
    assert (fp32["trt_max_abs_error"], fp32["trt_atol"], fp32["trt_rtol"]) == ("0", "1e-05", "1e-05")


def check_json(path: Path, *, cache_hit: bool, gpu_assignment=None) -> dict:
    data = assert_valid_report(json.loads(path.read_text()))
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["exitstatus"] == 1
    meta = data["session"]
    assert meta["backend"] == "emulate" and meta["backend_reason"].startswith("auto:")
    assert meta["pytest_trt"] and meta["libraries"]["onnxruntime"] and "tensorrt" in meta["libraries"]
    assert meta["gpu"] and meta["seed"] == 0 and meta["precision"] == "fp32"
    assert meta["gpu_assignment"] == gpu_assignment
    summary = data["summary"]
    assert summary["tests"] == 3 and summary["outcomes"] == {"failed": 1, "passed": 2}
    assert (summary["outputs"], summary["outputs_failed"]) == (3, 1)
    assert summary["engines_built" if not cache_hit else "engines_reused"] == 3
    # cache figures of every kind (engines, baselines), summed over xdist workers; no remote tier here
    if cache_hit:
        assert summary["cache_builds"] == 0 and summary["local_hits"] >= 3
    else:
        assert summary["cache_builds"] >= 3
    assert (summary["remote_hits"], summary["remote_uploads"], summary["remote_bytes"]) == (0, 0, 0)
    assert meta["remote_cache"] is None
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    assert set(tests) == {"test_all_fp16", "test_layernorm_fp32", "test_fp32"}
    for test in tests.values():
        assert len(test["engines"]) == 1
        engine = test["engines"][0]
        assert engine["cache_hit"] is cache_hit and isinstance(engine["build_seconds"], float)
        assert engine["backend"] == "emulate" and engine["model"] == "encoder_opset14.onnx"
    fp16 = tests["test_all_fp16"]
    assert fp16["outcome"] == "failed"
    (check,) = fp16["accuracy"]
    assert check["passed"] is False and check["policy"] == "fp16" and check["seed"] == 0 and check["baseline"] == "fp32"
    (out,) = check["outputs"]
    assert out["name"] == "last_hidden_state" and out["passed"] is False and out["mismatched"] > 0
    assert out["max_abs"] > 1.0 and out["atol"] == 0.01 and out["tolerance_ratio"] > 1
    assert "figures" in out, "TrtCase.check must put failing_output_figures(...) on its accuracy record"
    grid = out["figures"]["grid"]
    assert (grid["rows"], grid["cols"]) == (16, 32)  # batch*sequence x hidden
    assert sum(map(sum, grid["mismatched"])) == out["mismatched"]
    assert sum(out["figures"]["histogram"]["counts"]) > 0
    kept = tests["test_layernorm_fp32"]["accuracy"][0]["outputs"][0]
    assert kept["passed"] is True and "figures" not in kept and 0 < kept["tolerance_ratio"] <= 1
    return data


def check_layerwise(data: dict):
    """--trt-locate-on-failure: the failing test's layerwise comparison rides along."""
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    assert tests["test_all_fp16"]["layerwise"], "TrtCase must record layerwise_record(found) when it locates"
    (lw,) = tests["test_all_fp16"]["layerwise"]
    assert lw["model"] == "encoder_opset14.onnx" and lw["policy"] == "fp16" and lw["seed"] == 0
    assert lw["found"] is True and "/LayerNorm/" in lw["first"]["node"]
    rows = lw["tensors"]
    assert [r["index"] for r in rows] == sorted(r["index"] for r in rows)  # topological order
    assert {"tensor", "node", "op_type", "precision", "max_abs", "rel", "divergent"} <= set(rows[0])
    assert tests["test_layernorm_fp32"]["layerwise"] == []  # passing checks do not locate


def check_html(path: Path, *, png: bool, layerwise: bool = False):
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<style>" in text
    for external in ('src="http', 'href="http', "<script", "<link"):
        assert external not in text
    assert text.index("test_all_fp16") < text.index("test_layernorm_fp32")  # worst first
    assert 'id="out-0"' in text and "Failing outputs" in text and "last_hidden_state" in text
    assert ("Layerwise error" in text) == layerwise
    if png:
        # error histogram and heatmap of the failing output (+ the layerwise curve)
        assert text.count('src="data:image/png;base64,') == 2 + layerwise
        assert 'alt="error histogram"' in text and 'alt="error heatmap"' in text
        assert ('alt="layerwise error"' in text) == layerwise
        assert "css-hist" not in text
    else:
        assert "data:image/png" not in text
        assert 'class="hist css-hist"' in text and 'class="heat css-heat"' in text
        assert ('class="svg-curve"' in text) == layerwise
        assert "install pytest-trt[plots]" in text


# --------------------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------------------
@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib (the plots extra) is not installed")
def test_reports_in_one_process_then_cache_hits_then_without_matplotlib(suite):
    first = run(suite, "--trt-locate-on-failure")
    first.assert_outcomes(passed=3, failed=1)
    check_summary(first, built=3, reused=0)
    out = suite.path / "out"
    check_junit(out / "junit.xml", cache_hit=False)
    check_layerwise(check_json(out / "report.json", cache_hit=False))
    check_html(out / "report.html", png=True, layerwise=True)
    assert (suite.path / "report-writes.log").read_text().split("\n") == ["html controller", "json controller", ""]

    # second run: every engine from the cache, and the reports say so
    second = run(suite)
    second.assert_outcomes(passed=3, failed=1)
    check_summary(second, built=0, reused=3)
    check_junit(out / "junit.xml", cache_hit=True)
    check_json(out / "report.json", cache_hit=True)

    # without matplotlib the HTML report draws the same data with CSS
    suite.makeconftest(CONFTEST + NO_MATPLOTLIB)
    third = run(suite, "--trt-locate-on-failure")
    third.assert_outcomes(passed=3, failed=1)
    check_html(out / "report.html", png=False, layerwise=True)


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib (the plots extra) is not installed")
def test_xdist_reports_written_once_by_the_controller_one_gpu_per_worker(suite, monkeypatch):
    pytest.importorskip("xdist")
    # three fake GPUs of which the runner exposes 5, 7 and 9: workers get 5 and 7, one each
    monkeypatch.setenv("FAKE_GPUS", "3")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7,9")
    result = run(suite, "-n", "2", "--trt-gpus", "2")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["pytest-trt: GPU per xdist worker (CUDA_VISIBLE_DEVICES): gw0 -> 5, gw1 -> 7"])
    check_summary(result, built=3, reused=0)
    out = suite.path / "out"
    check_junit(out / "junit.xml", cache_hit=False)
    check_json(out / "report.json", cache_hit=False, gpu_assignment={"gw0": "5", "gw1": "7"})
    check_html(out / "report.html", png=True)
    assert (suite.path / "report-writes.log").read_text().split("\n") == ["html controller", "json controller", ""]
    for worker, device in (("gw0", "5"), ("gw1", "7")):
        # set before the worker imported anything (conftest import) and kept through configure
        assert (suite.path / f"gpu-{worker}-at-import.txt").read_text() == device
        assert (suite.path / f"gpu-{worker}-configured.txt").read_text() == f"{device} {device}"


@pytest.mark.parametrize("args, gpus, message", [
    (["-n", "2", "--trt-gpus", "3"], 3, "*--trt-gpus 3 with 2 pytest-xdist worker(s): one worker per GPU needs -n 3*"),
    (["-n", "4", "--trt-gpus", "4"], 3, "*--trt-gpus 4 but only 3 visible GPU(s): use --trt-gpus auto or at most 3*"),
    (["-n", "2", "--trt-gpus", "2"], 0, "*--trt-gpus 2 but no GPU is visible*"),
    (["--trt-gpus", "two"], 1, "*--trt-gpus 'two': expected a positive number of GPUs or 'auto'*"),
])
def test_trt_gpus_usage_errors(pytester, monkeypatch, args, gpus, message):
    monkeypatch.setenv("FAKE_GPUS", str(gpus))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


@pytest.mark.parametrize("args, env, workers, header", [
    (["-n", "auto", "--trt-gpus", "auto"], {}, 2, "gw0 -> 0, gw1 -> 1"),   # one worker per GPU
    (["-n", "auto", "--trt-gpus", "1"], {}, 1, "gw0 -> 0"),
    (["-n", "auto", "--trt-gpus", "auto"], {"CUDA_VISIBLE_DEVICES": "1"}, 1, "gw0 -> 1"),
    # the user's PYTEST_XDIST_AUTO_NUM_WORKERS wins; the 3 workers then share the 2 GPUs
    (["-n", "auto", "--trt-gpus", "auto"], {"PYTEST_XDIST_AUTO_NUM_WORKERS": "3"}, 3, "gw0 -> 0, gw1 -> 1, gw2 -> 0"),
])
def test_n_auto_starts_one_worker_per_gpu(pytester, monkeypatch, args, env, workers, header):
    """pytest-xdist's public pytest_xdist_auto_num_workers hook, two fake GPUs."""
    pytest.importorskip("xdist")
    monkeypatch.setenv("FAKE_GPUS", "2")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"pytest-trt: GPU per xdist worker (CUDA_VISIBLE_DEVICES): {header}",
                                 f"{workers} worker{'s' if workers > 1 else ''} [[]1 item[]]"])


@pytest.mark.parametrize("args, gpus, message", [
    (["--trt-gpus", "auto"], 0, "*--trt-gpus auto: no GPU visible; workers keep the default device*"),
    (["--trt-gpus", "2"], 2, "*--trt-gpus 2: the run is not distributed (no -n)*"),
])
def test_trt_gpus_warns_and_does_nothing(pytester, monkeypatch, args, gpus, message):
    monkeypatch.setenv("FAKE_GPUS", str(gpus))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == 0
    result.stdout.fnmatch_lines([message])
    assert "GPU per xdist worker" not in result.stdout.str()


def test_precision_checks_reach_every_report(pytester):
    pytester.makepyfile(SUITE.split("@pytest.mark.trt")[0] + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_layernorm_stays_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
    trt.assert_precision("op:MatMul", "fp16")

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_layernorm_lowered(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
""")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "precision checks: 2 passed, 1 failed; constrained nodes: *fail*pass* (emulated: *)",
        "  FAIL *test_layernorm_lowered: */LayerNorm/* -> fp32: /encoder/layer.0/*LayerNorm/* (fp16)*",
    ])
    out = pytester.path / "out"
    data = assert_valid_report(json.loads((out / "report.json").read_text()))
    assert data["summary"]["precision_checks"] == 3 and data["summary"]["precision_checks_failed"] == 1
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    ln, mm = tests["test_layernorm_stays_fp32"]["precision"]
    assert (ln["pattern"], ln["precision"], ln["passed"], ln["emulated"]) == ("*/LayerNorm/*", "fp32", True, True)
    assert ln["nodes"] and all("/LayerNorm/" in n["node"] for n in ln["nodes"])
    assert all(n["planned"] == n["observed"] == "fp32" for n in ln["nodes"] if n["status"] == "pass")
    assert mm["nodes"] and all(n["op_type"] == "MatMul" for n in mm["nodes"])
    (lowered,) = tests["test_layernorm_lowered"]["precision"]
    assert lowered["passed"] is False, "TrtCase.assert_precision must record a failed check before raising"
    failed = [n for n in lowered["nodes"] if n["status"] == "fail"]
    assert failed and all(n["planned"] == "fp16" and n["cause"] == "plan" for n in failed)
    props = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert props["test_layernorm_stays_fp32"]["trt_precision_checks"] == "2 passed, 0 failed"
    assert props["test_layernorm_lowered"]["trt_precision_checks"] == "0 passed, 1 failed"
    text = (out / "report.html").read_text()
    assert "Precision: planned vs observed, per node" in text
    assert "*/LayerNorm/*</span> &rarr; fp32 FAILED" in text and 'class="tag mm">fail (plan)' in text


def test_x_tol_names_its_binding_bound_in_terminal_json_and_html(pytester):
    """Issue 28: x tol is the largest of the element ratio and the floors' ratios, and every report
    says which bound sets it (here: the element rule of a passing BF16 check, the cosine floor of
    an FP16 check within the element rule, and NaN/Inf-free structure)."""
    pytester.makepyfile(f"""
import numpy as np
import pytest
{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="bf16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_bf16(trt):
    trt.check()

@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_tight_floor(trt):
    trt.check(min_cosine=0.9999999)
""")
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "--trt-report=r.json",
                                "--trt-html=r.html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*x tol  bound *max abs*", "FAIL * cosine *test_tight_floor*",
                                 "ok * element *test_bf16*"])
    data = assert_valid_report(json.loads((pytester.path / "r.json").read_text()))
    outs = {t["nodeid"].split("::")[1]: t["accuracy"][0]["outputs"][0] for t in data["tests"]}
    bf16, tight = outs["test_bf16"], outs["test_tight_floor"]
    assert bf16["binding"] == "element" and bf16["tolerance_ratio"] == pytest.approx(bf16["element_ratio"], rel=1e-5)
    assert bf16["element_ratio"] < 1
    assert tight["binding"] == "cosine" and tight["tolerance_ratio"] > 1 >= tight["element_ratio"]
    html = (pytester.path / "r.html").read_text()
    assert '<span class="note">element</span>' in html and '<span class="note">cosine</span>' in html
