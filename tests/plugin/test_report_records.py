"""What the reports count and name, as a user meets them (issues 19, 20, 23):

* engines built or loaded by ``trt.suggest(...)`` count in the terminal summary and the JSON report;
* ``-v`` engine lines reach the terminal under pytest's default output capture (no ``-s``);
* a CUDA baseline's CPU fallback (a FAKED placement result: the real one needs a GPU) reaches the
  JSON report and the terminal summary besides pytest's warnings summary;
* every engine and accuracy record names its GPU (null on the emulate backend).

Real ONNX model, real ONNX Runtime, the emulate backend, inner pytest runs (pytester); the
per-worker GPU under ``-n 2 --trt-gpus 2`` over the FAKE tensorrt module (glue only) and a FAKE
``nvidia-smi``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"
LN0 = "/encoder/layer.0/attention/output/LayerNorm"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("CUDA_VISIBLE_DEVICES", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                 "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def _run(pytester, *args, subprocess: bool = False):
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return run("-p", "no:hypothesispytest", "--trt-backend", "emulate",
                              "--trt-cache-dir=" + str(pytester.path / "cache"), "--trt-report=report.json", *args)


def _report(pytester) -> dict:
    return json.loads((pytester.path / "report.json").read_text())


SUGGEST = f'''
import pytest

@pytest.mark.trt(model={str(ENCODER)!r}, precision="fp16", dims={{"batch": 2, "sequence": 16}},
                 val_range={{"hidden_states": (-1.0, 1.0)}})
def test_islands(trt):
    s = trt.suggest(trt.feeds(outliers={{"hidden_states": {{"count": 2, "magnitude": 400.0}}}}), atol=1e-2)
    assert s.passed and s.patterns == ["{LN0}/*"], s.message()
    assert s.builds == 2, s.builds
'''


def test_suggest_builds_count_in_the_summary_and_the_json(pytester):
    pytester.makepyfile(test_fp32_islands_search=SUGGEST)
    result = _run(pytester)  # a fresh cache: the search's two engines are built here
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["engines: 2 built (*s), 0 reused from the cache; 2 use(s) by tests"])
    data = _report(pytester)
    assert (data["summary"]["engines_built"], data["summary"]["engines_reused"]) == (2, 0)
    (test,) = data["tests"]
    assert [e["via"] for e in test["engines"]] == ["suggest", "suggest"]
    assert [e["cache_hit"] for e in test["engines"]] == [False, False]
    assert len({e["key"] for e in test["engines"]}) == 2  # two plans, two cache keys
    assert test["engines"][1]["policy"] == f"fp16; fp32: {LN0}/*"

    result = _run(pytester)  # the same cache again: both loaded, none built
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["engines: 0 built (0.00s), 2 reused from the cache; 2 use(s) by tests"])
    data = _report(pytester)
    assert (data["summary"]["engines_built"], data["summary"]["engines_reused"]) == (0, 2)


SAME_ENGINE_TWICE = f'''
import pytest

@pytest.mark.trt(model={str(ENCODER)!r}, precision="fp16", dims={{"batch": 1, "sequence": 4}}, atol=1.0, rtol=1.0)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_engine(trt, seed):
    trt.check(trt.feeds(seed=seed))
'''


def test_engines_line_counts_reuse_within_the_session_as_the_rows_do(pytester):
    """review2 row 12e: a first run said "0 reused from the cache" while rows said "cache hit"."""
    pytester.makepyfile(test_same=SAME_ENGINE_TWICE)
    result = _run(pytester)  # a fresh cache: built by the first test, reused by the other two
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["engines: 1 built (*s), 0 reused from the cache; 3 use(s) by tests, "
                                 "2 of them reusing an engine built in this session"])
    assert len([line for line in result.outlines if " cache hit " in line and "test_same_engine" in line]) == 2
    summary = _report(pytester)["summary"]
    assert (summary["engines_built"], summary["engines_reused"], summary["engine_uses"],
            summary["engine_session_reuses"]) == (1, 0, 3, 2)

    result = _run(pytester)  # the same cache again: loaded from disk, nothing built in this session
    result.stdout.fnmatch_lines(["engines: 0 built (0.00s), 1 reused from the cache; 3 use(s) by tests"])
    assert "reusing an engine built in this session" not in result.stdout.str()
    assert _report(pytester)["summary"]["engine_session_reuses"] == 0


CHECK = f'''
import pytest

@pytest.mark.trt(model={str(ENCODER)!r}, precision="fp32", dims={{"batch": 1, "sequence": 4}})
def test_fp32(trt):
    print("output of the test itself")
    trt.check()
'''


def test_verbose_engine_lines_reach_the_terminal_under_default_capture(pytester):
    pytester.makepyfile(test_check=CHECK)
    # no -s: pytest captures the test's output (fd capture). A subprocess, as a user runs it: in
    # process, the inner terminal writes to pytester's own capture and nothing would be swallowed.
    result = _run(pytester, "-v", subprocess=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "pytest-trt: engine encoder_opset14.onnx [[]fp32[]] on emulate ...",
        "pytest-trt: engine encoder_opset14.onnx [[]fp32[]] on emulate: built in *s (*s)",
    ])
    # capture itself still works: the test's own print stays captured (a passing test shows none)
    assert "output of the test itself" not in result.stdout.str()
    data = _report(pytester)
    (test,) = data["tests"]
    # the emulate backend runs on the CPU: every record says so with gpu null
    assert test["engines"][0]["gpu"] is None and test["engines"][0]["via"] is None
    assert test["accuracy"][0]["gpu"] is None
    assert test["baseline_fallbacks"] == [] and data["summary"]["baseline_fallbacks"] == 0


FALLBACK = f'''
import pytest
from pytest_trt.reference import baseline

# FAKED placement result (what ONNX Runtime's profile says of a CUDA baseline, baseline.node_placement):
# the real one needs a GPU. warn_placement is what fp32_baseline calls with it.
FAKE = {{"providers": {{"CUDAExecutionProvider": 40, "CPUExecutionProvider": 3}},
         "cpu_float_nodes": [["/h.0/attn/Where", "Where"], ["/h.0/attn/Range", "Range"]]}}

@pytest.mark.trt(model={str(ENCODER)!r}, precision="fp32", dims={{"batch": 1, "sequence": 4}})
def test_a(trt):
    trt.check()
    for _ in range(2):  # a baseline computed twice (e.g. two checks) is one record
        baseline.warn_placement(FAKE, "models/gpt2.onnx", model="gpt2.onnx")

@pytest.mark.trt(model={str(ENCODER)!r}, precision="fp32", dims={{"batch": 1, "sequence": 4}})
def test_b(trt):
    trt.check()
    baseline.warn_placement(FAKE, "models/gpt2.onnx", model="gpt2.onnx")

def test_not_trt():
    baseline.warn_placement(FAKE, "models/gpt2.onnx", model="gpt2.onnx")  # warning only: not a trt test
'''


def test_baseline_fallback_reaches_the_json_and_the_summary(pytester):
    pytester.makepyfile(test_fallback=FALLBACK)
    result = _run(pytester)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "*ProviderFallbackWarning: CUDA baseline of models/gpt2.onnx: 2 float node(s) ran on ONNX Runtime's CPU "
        "provider*",
        "*= pytest-trt =*",
        "WARNING baseline: 2 float node(s) of 1 CUDA baseline(s) ran on ONNX Runtime's CPU provider, not CUDA*",
        "  gpt2.onnx (2 test(s)): /h.0/attn/Where (Where), /h.0/attn/Range (Range)",
    ])
    data = _report(pytester)
    assert (data["summary"]["baseline_fallbacks"], data["summary"]["baseline_fallback_nodes"]) == (1, 2)
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    assert set(tests) == {"test_a", "test_b"}
    for name in ("test_a", "test_b"):
        assert tests[name]["baseline_fallbacks"] == [
            {"model": "gpt2.onnx", "provider": "cuda",
             "nodes": [["/h.0/attn/Where", "Where"], ["/h.0/attn/Range", "Range"]]}]


# --------------------------------------------------------------------------------------
# the GPU of every record under pytest-xdist --trt-gpus: FAKE tensorrt module (glue only,
# tests/unit/fake_tensorrt.py) and FAKE nvidia-smi (two GPU models); no GPU is touched
# --------------------------------------------------------------------------------------
FAKE_TRT = REPO / "tests" / "unit" / "fake_tensorrt.py"
H100 = "GPU-1f0e2c44-5b6a-4c1d-9e8f-0a1b2c3d4e5f"
A100 = "GPU-9a8b7c6d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"
SMI = f"""#!/bin/sh
case "$1" in
  --query-gpu=*)
    echo "0, {H100}, NVIDIA H100 80GB HBM3, 9.0, 580.65.06, 81559 MiB"
    echo "1, {A100}, NVIDIA A100-SXM4-40GB, 8.0, 580.65.06, 40960 MiB" ;;
  *) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: {H100})" ;;
esac
"""

FAKE_TRT_CONFTEST = f'''
import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("_pytest_trt_fake_tensorrt", {str(FAKE_TRT)!r})
_fake = sys.modules.setdefault("_pytest_trt_fake_tensorrt", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_fake)
sys.modules["tensorrt"] = _fake.make_fake_tensorrt("10.13.3.9")

from pytest_trt.backends.tensorrt import backend as trt_backend
from pytest_trt.backends.tensorrt import compat as trt_compat

trt_backend.tensorrt_unavailable_reason = lambda module="tensorrt": None
trt_backend.CudaMemory = _fake.HostMemory  # the fake's host memory stands in for CUDA
trt_backend.device_info = lambda: {{"gpu": "fake", "compute_capability": "9.0", "driver": "580", "cuda": "13.0"}}
trt_backend.installed_version = lambda backend: "10.13.3.9"
trt_compat.installed_version = lambda backend: "10.13.3.9"
'''

GPU_TESTS = """
import pytest

@pytest.mark.parametrize("seed", range(4))
@pytest.mark.trt(model="block.onnx", precision="fp32")
def test_block(trt, seed):
    trt.check(trt.feeds(seed=seed))
"""


def test_each_record_names_the_gpu_of_its_xdist_worker(pytester, monkeypatch):
    pytest.importorskip("xdist")
    import stat

    import onnx

    from pytest_trt.model import testing_models as tm

    smi = pytester.path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{smi.parent}:{__import__('os').environ['PATH']}")
    onnx.save(tm.decomposed_layernorm_block(hidden=16, seq=4), str(pytester.path / "block.onnx"))
    pytester.makeconftest(FAKE_TRT_CONFTEST)
    pytester.makepyfile(test_gpus=GPU_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-n", "2",
                                           "--trt-gpus", "2", "--trt-backend", "tensorrt",
                                           f"--trt-cache-dir={pytester.path / 'cache'}", "--trt-report=report.json")
    result.assert_outcomes(passed=4)
    data = _report(pytester)
    assert data["session"]["gpu_assignment"] == {"gw0": "0", "gw1": "1"}
    assert {g["uuid"] for g in data["session"]["gpus"]} == {H100, A100}  # the controller sees both
    expected = {"gw0": ("NVIDIA H100 80GB HBM3", H100, "0"), "gw1": ("NVIDIA A100-SXM4-40GB", A100, "1")}
    seen = set()
    for test in data["tests"]:
        records = test["engines"] + test["accuracy"]
        assert len(test["engines"]) == 1 and len(test["accuracy"]) == 1
        for rec in records:
            gpu = rec["gpu"]
            assert (gpu["name"], gpu["uuid"], gpu["cuda_visible_devices"]) == expected[gpu["worker"]], rec
            seen.add(gpu["worker"])
    assert seen == {"gw0", "gw1"}  # both workers ran tests, each on its own GPU
